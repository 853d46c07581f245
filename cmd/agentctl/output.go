package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"sigs.k8s.io/yaml"
)

// printData writes v as JSON or YAML (the -o format). v must encode to JSON;
// YAML is made from that JSON, so both carry the same fields.
func (a *app) printData(v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the output: %v", err)
	}
	if a.output == "yaml" {
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			return fmt.Errorf("encoding the output as YAML: %v", err)
		}
		_, err = a.stdout.Write(y)
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", data)
	return err
}

// table writes rows under a header, columns aligned.
type table struct {
	w *tabwriter.Writer
}

// newTable starts a table; a header of empty cells is not printed.
func newTable(out io.Writer, header ...string) *table {
	t := &table{w: tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)}
	if strings.Join(header, "") != "" {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		// Tabs and newlines would break the columns.
		c = strings.NewReplacer("\t", " ", "\n", " ", "\r", "").Replace(c)
		if c == "" {
			c = "-"
		}
		cells[i] = c
	}
	fmt.Fprintln(t.w, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.w.Flush() }

// count returns n with the noun that fits it: count(1, "value", "values")
// is "1 value", count(2, ...) "2 values".
func count(n int, singular, plural string) string {
	if n == 1 {
		return "1 " + singular
	}
	return fmt.Sprintf("%d %s", n, plural)
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-3]) + "..."
}

// compactJSON is raw JSON on one line.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
