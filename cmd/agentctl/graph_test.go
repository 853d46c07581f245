package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// graphAgent serves GET /scheduler/graph as the agent does, each format
// with a body that names it, and returns the REST port.
func graphAgent(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/scheduler/graph" {
			http.NotFound(w, r)
			return
		}
		format := r.URL.Query().Get("format")
		if format == "" {
			format = "svg"
		}
		w.Write([]byte("graph as " + format + "\n"))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

// runCtl runs agentctl in the test process.
func runCtl(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestGraphOutputIsTheFormat: in graph, as everywhere, -o is the output
// format; --file (-f) writes to a file, in the format of its extension
// unless -o says otherwise. A path given to -o, as before -o was the
// format, is an error that says to use --file; an unknown format names the
// known ones. Nothing is written on an error.
func TestGraphOutputIsTheFormat(t *testing.T) {
	port := graphAgent(t)
	dir := t.TempDir()
	t.Chdir(dir)
	ctl := func(args ...string) (string, string, int) {
		return runCtl(append([]string{"graph", "--rest-port", port}, args...)...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "graph as dot\n"},
		{[]string{"-o", "json"}, "graph as json\n"},
		{[]string{"--output", "svg"}, "graph as svg\n"},
		{[]string{"-o", "mermaid", "--file", "-"}, "graph as mermaid\n"},
		{[]string{"--format", "json"}, "graph as json\n"}, // the flag of before, kept
	} {
		stdout, stderr, code := ctl(c.args...)
		if code != exitOK || stdout != c.want || stderr != "" {
			t.Errorf("graph %s: exit %d, stdout %q, stderr %q; want %q", strings.Join(c.args, " "), code, stdout, stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "json")); err == nil {
		t.Errorf("graph -o json wrote a file named json")
	}

	for _, c := range []struct {
		args         []string
		file, format string
	}{
		{[]string{"--file", "g.svg"}, "g.svg", "svg"},
		{[]string{"-f", "g.json"}, "g.json", "json"},
		{[]string{"-f", "g.mmd"}, "g.mmd", "mermaid"},
		{[]string{"-f", "g"}, "g", "dot"},
		{[]string{"-o", "json", "-f", "sub-g"}, "sub-g", "json"},
		{[]string{"-o", "svg", "-f", "g2.svg"}, "g2.svg", "svg"},
	} {
		stdout, stderr, code := ctl(c.args...)
		b, err := os.ReadFile(filepath.Join(dir, c.file))
		if code != exitOK || stdout != "" || err != nil || string(b) != "graph as "+c.format+"\n" ||
			!strings.HasPrefix(stderr, "graph written to "+c.file+" ("+c.format+", ") {
			t.Errorf("graph %s: exit %d, stdout %q, stderr %q, file %q %v; want %s in %s",
				strings.Join(c.args, " "), code, stdout, stderr, b, err, c.format, c.file)
		}
	}

	for _, c := range []struct {
		args  []string
		wants []string
	}{
		{[]string{"-o", "graph.svg"}, []string{`-o "graph.svg"`, "-o is the format of the graph", "--file graph.svg"}},
		{[]string{"-o", "/tmp/graph"}, []string{"-o is the format of the graph", "--file /tmp/graph"}},
		{[]string{"-o", "out/graph.dot"}, []string{"--file out/graph.dot"}},
		{[]string{"-o", "png"}, []string{`-o "png"`, "dot, svg, mermaid or json", "--file FILE"}},
		{[]string{"-o", "yaml"}, []string{`-o "yaml"`, "dot, svg, mermaid or json"}},
		{[]string{"--format", "png"}, []string{`--format "png"`, "dot, svg, mermaid or json"}},
		{[]string{"-o", "dot", "--format", "svg"}, []string{"-o dot", "--format svg", "give one"}},
		{[]string{"-o", "dot", "-f", "x.svg"}, []string{"-o dot contradicts --file x.svg (a svg file name)"}},
		{[]string{"-f", "x.png"}, []string{"--file x.png: the agent renders the graph as dot, svg, mermaid, json, not png", "agentctl graph | dot -Tpng > x.png"}},
		{[]string{"-f", "x.txt"}, []string{"--file x.txt: no graph format is known for .txt", "-o"}},
	} {
		stdout, stderr, code := ctl(c.args...)
		if code != exitError || stdout != "" || strings.Count(stderr, "\n") != 1 {
			t.Errorf("graph %s: exit %d, stdout %q, stderr %q; want one error line", strings.Join(c.args, " "), code, stdout, stderr)
		}
		for _, want := range c.wants {
			if !strings.Contains(stderr, want) {
				t.Errorf("graph %s: %q does not say %q", strings.Join(c.args, " "), stderr, want)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if name := e.Name(); strings.HasPrefix(name, "x.") || name == "graph.svg" || name == "png" {
			t.Errorf("a failed graph command wrote %s", name)
		}
	}
}
