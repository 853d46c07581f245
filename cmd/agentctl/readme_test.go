package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestREADMEExamples: every agentctl command line in the README's code
// blocks names a command of agentctl with flags and arguments it takes
// (nothing is run), and the examples show each kvdb command.
func TestREADMEExamples(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var examples [][]string
	inBlock := false
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "```") {
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		line, _, _ = strings.Cut(line, " #") // a comment
		for _, part := range strings.Split(line, ";") {
			i := strings.Index(part, "agentctl ")
			if i < 0 || strings.TrimLeft(part[:i], " $<(source") != "" {
				continue
			}
			cmdLine := part[i:]
			if j := strings.IndexAny(cmdLine, ">|)"); j >= 0 { // a redirection, a pipe, the end of <(...)
				cmdLine = cmdLine[:j]
			}
			examples = append(examples, shellWords(cmdLine))
		}
	}
	if len(examples) < 10 {
		t.Fatalf("%d agentctl examples found in README.md: the test does not find them", len(examples))
	}
	shown := map[string]bool{}
	for _, args := range examples {
		a := &app{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
		root := a.rootCommand()
		cmd, rest, err := root.Find(args[1:])
		if err == nil {
			err = cmd.ParseFlags(rest)
		}
		if err == nil && cmd.Args != nil {
			err = cmd.Args(cmd, cmd.Flags().Args())
		}
		if err != nil || !cmd.Runnable() {
			t.Errorf("README.md: %s: %v (runnable: %v)", strings.Join(args, " "), err, cmd != nil && cmd.Runnable())
			continue
		}
		shown[strings.TrimPrefix(cmd.CommandPath(), "agentctl ")] = true
	}
	for _, want := range []string{"kvdb list", "kvdb get", "kvdb put", "kvdb del"} {
		if !shown[want] {
			t.Errorf("README.md has no example of agentctl %s", want)
		}
	}
}

// shellWords splits a command line as a shell would, for the README's
// examples: words, and single-quoted strings.
func shellWords(line string) []string {
	var words []string
	var word strings.Builder
	inWord, quoted := false, false
	for _, c := range line {
		switch {
		case c == '\'':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}
