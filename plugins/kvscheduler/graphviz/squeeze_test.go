package graphviz

import "testing"

// TestSqueeze: the random extra spaces of prototext are removed, the spaces
// inside string literals kept.
func TestSqueeze(t *testing.T) {
	for in, want := range map[string]string{
		`a:1  b:"x  y"  c:2`:        `a:1 b:"x  y" c:2`,
		`s:"q\"  "  t:'a  b'  u:{}`: `s:"q\"  " t:'a  b' u:{}`,
		` x:1 `:                     `x:1`,
	} {
		if got := squeeze(in); got != want {
			t.Errorf("squeeze(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVisible: control characters and bytes that are not UTF-8 are shown
// as escapes.
func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain key/é":   "plain key/é",
		"a\nb\tc\x01":   `a\nb\tc\x01`,
		"bad \xff byte": `bad \xff byte`,
		"zero\u200bw":   `zero\u200bw`,
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
}
