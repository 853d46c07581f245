package yamljson_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/netagent-io/netagent/internal/yamljson"
)

// decode reads a JSON document with its numbers as written.
func decode(t testing.TB, js []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(js))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %q: %v", js, err)
	}
	return v
}

// same checks the property: a document Convert converts is one the
// library reads, to JSON of the same meaning. It reports whether Convert
// converted it.
func same(t testing.TB, doc string) bool {
	t.Helper()
	js, ok := yamljson.Convert([]byte(doc))
	if !ok {
		return false
	}
	lib, err := yaml.YAMLToJSONStrict([]byte(doc))
	if err != nil {
		t.Errorf("converted a document the library refuses (%v):\n%s\n-> %s", err, doc, js)
		return true
	}
	if got, want := decode(t, js), decode(t, lib); !reflect.DeepEqual(got, want) {
		t.Errorf("document:\n%s\nConvert: %s\nlibrary: %s", doc, js, lib)
	}
	return true
}

// converted are documents of the subset: each is converted, to what the
// library makes of it.
var converted = []string{
	// agentctl's documents, block and flow style.
	"linux_config:\n  routes:\n    - {outgoing_interface: eth0, dst_network: 10.100.0.1/32, gw_addr: 172.30.75.1}\n    - {outgoing_interface: eth0, dst_network: 10.100.0.2/32, gw_addr: 172.30.75.1}\n",
	"vpp_config:\n  interfaces:\n  - name: loop1\n    type: SOFTWARE_LOOPBACK\n    enabled: true\n    ip_addresses:\n    - 10.0.0.1/24\n    - 2001:db8::1/64\n    phys_address: 02:00:00:00:00:01\n  - name: memif1\n    mtu: 9000\n",
	"---\n# a comment\nlinux_config:   # after a key\n  interfaces:\n    - name: veth1   # after a value\n      type: VETH\n      veth: {peer_if_name: veth2}\n      namespace:\n        type: FD\n        reference: /var/run/netns/app\n",
	// Scalars as go-yaml v2 resolves them.
	"a: yes\nb: No\nc: on\nd: OFF\ne: y\nf: n\ng: true\nh: False\n",
	"a: ~\nb: null\nc:\nd: NULL\n",
	"a: 10\nb: -5\nc: +7\nd: 0x1f\ne: 0755\nf: 1_000\ng: 0\nh: 18446744073709551615\ni: -9223372036854775808\n",
	"a: 10.0.0.1\nb: 10.0.0.0/8\nc: fd00::1\nd: ::1\ne: 02:00:00:00:00:01\nf: 1:2\ng: 2001:db8::/32\nh: 123abc\ni: -x\n",
	"a: hello world\nb: 'single ''quoted'' text'\nc: \"double \\\"quoted\\\" \\\\ \\n \\t \\u00e9\"\nd: a#b\ne: http://example.com/x?y=1\nf: a,b[c]{d}\n",
	"a: ''\nb: \"\"\nc: ' # not a comment'\nd: \"x\" # comment\n",
	"\"quoted key\": 1\n'single key': 2\nkey with spaces: 3\nk-e_y.1: 4\n",
	"émoji: \"✓ ü\"\nü: ✓\n",
	// Structure.
	"a:\n- 1\n- 2\nb:\n  - x\n  -\n  -\n    - y\n",
	"- a\n- b: 1\n  c: 2\n-\n  - nested\n",
	"a: 0b101\nb: -0x10\n",
	"-   a: 1\n    b: [1, 2, {c: d}]\n-\n  e: f\n",
	"a: {}\nb: []\nc: {x: [], z: {}}\nd: [[], [[]]]\ne: [a, 'b', \"c\", 1, yes, ~]\n",
	"a:\n  b:\n    c:\n      d: deep\n  e: 1\nf: 2\n",
	"  a: 1\n  b: 2\n",
	"[1, 2, 3]\n",
	"{a: 1, b: [x, y]}\n",
	"plain scalar\n",
	"a: {x: fd00::1, z: 02:00:00:00:00:01}\n",
	"a:    spaced    \nb:    'q'   \n",
	"a: 1\n\n\n# trailing comment\n",
}

// outside are documents outside the subset (or broken): not converted.
var outside = []string{
	"",
	"# only a comment\n",
	"a: &x 1\nb: *x\n",
	"a: !!str 1\n",
	"a: |\n  text\n",
	"a: >\n  text\n",
	"a: 1.5\n",
	"a: 1e3\n",
	"a: .5\n",
	"a: .inf\n",
	"a: 2001-12-14\n",
	"a: ::\n",
	"a: \"\\/\"\n",
	"a: {y: 1}\n",
	"y: 1\n",
	"a: 1\na: 2\n",
	"a: {x: 1, x: 2}\n",
	"a: multi\n  line\n",
	"a:\tb\n",
	"a: 1\r\nb: 2\r\n",
	"a: [1,\n  2]\n",
	"? complex\n: key\n",
	"a: 1\n---\nb: 2\n",
	"a: 1\n...\n",
	"%YAML 1.1\n---\na: 1\n",
	"a: b: c\n",
	"a: - b\n",
	"1: one\n",
	"yes: true\n",
	"null: x\n",
	"~: x\n",
	"<<: {a: 1}\n",
	"a: [1, 2,]\n",
	"a: {b}\n",
	"a: {b:c}\n",
	"a: {b: }\n",
	"a: \"\\x41\"\n",
	"a: \"unterminated\n",
	"a: 'unterminated\n",
	"a: [a: b]\n",
	"a: 1\n  b: 2\n",
	"a:\n    b: 1\n  c: 2\n",
	"- a\n  b\n",
	"a: x #comment\n  more\n",
	"a: [x] y\n",
	"a: \"x\"y\n",
	"\ufeffa: 1\n",
	"a: \u0085\n",
	"0\u0087",
	"a: \u009f\n",
	"a: x\ufeffy\n",
	"a: \uffff\n",
	"a:\n- b\n c\n",
	"a: {b: c} #c\n  d: e\n",
	"a: @x\n",
	"a: `x`\n",
	"a: {b: 1.5}\n",
	"- - a\n",
}

func TestConverted(t *testing.T) {
	for _, doc := range converted {
		if !same(t, doc) {
			lib, err := yaml.YAMLToJSONStrict([]byte(doc))
			t.Errorf("not converted:\n%s\n(the library: %s, %v)", doc, lib, err)
		}
	}
}

func TestOutside(t *testing.T) {
	long := strings.Repeat("k", 1100)
	for _, doc := range append(outside, long+": 1\n", "'"+long+"': 1\n", "\""+long+"\": 1\n", "{"+long+": 1}\n") {
		if js, ok := yamljson.Convert([]byte(doc)); ok {
			t.Errorf("converted, but outside the subset:\n%q\n-> %s", doc, js)
		}
	}
}

// TestGenerated: random documents from the subset's grammar, with random
// breakage, keep the property; most of the intact ones are converted.
func TestGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 42))
	n, conv := 3000, 0
	if testing.Short() {
		n = 500
	}
	for range n {
		doc := genDoc(r)
		if r.IntN(4) == 0 {
			doc = mutate(r, doc)
		} else if !same(t, doc) {
			continue
		}
		if same(t, doc) {
			conv++
		}
	}
	if conv < n/2 {
		t.Errorf("only %d of %d generated documents converted: the generator misses the subset", conv, n)
	}
	t.Logf("%d of %d converted", conv, n)
}

var scalars = []string{
	"a", "abc", "hello world", "10.0.0.1", "10.0.0.0/24", "fd00::1", "02:00:00:00:00:01", "1", "-3", "0x10",
	"007", "yes", "no", "on", "Off", "true", "~", "null", "'q'", "'it''s'", "\"d\\\"q\"", "\"\\u00e9\"", "x#y",
	"1_2", "+1", "a-b", "eth0", "/path/to", "a/b:c",
}

func genScalar(r *rand.Rand) string { return scalars[r.IntN(len(scalars))] }

func genKey(r *rand.Rand, i int) string {
	switch r.IntN(6) {
	case 0:
		return fmt.Sprintf("'k%d'", i)
	case 1:
		return fmt.Sprintf("\"k %d\"", i)
	}
	return fmt.Sprintf("k%d", i)
}

func genFlow(r *rand.Rand, depth int) string {
	if depth > 2 || r.IntN(3) == 0 {
		return genScalar(r)
	}
	n := r.IntN(4)
	parts := make([]string, n)
	if r.IntN(2) == 0 {
		for i := range parts {
			parts[i] = genFlow(r, depth+1)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	for i := range parts {
		parts[i] = genKey(r, i) + ": " + genFlow(r, depth+1)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func genBlock(r *rand.Rand, b *strings.Builder, indent, depth int) {
	pad := strings.Repeat(" ", indent)
	if depth > 3 {
		b.WriteString(pad + genScalar(r) + "\n")
		return
	}
	if r.IntN(2) == 0 {
		for i := range 1 + r.IntN(3) {
			b.WriteString(pad + genKey(r, i) + ":")
			switch r.IntN(4) {
			case 0:
				b.WriteString("\n")
				genBlock(r, b, indent+2, depth+1)
			case 1:
				b.WriteString(" " + genFlow(r, 0) + "\n")
			case 2:
				b.WriteString("\n")
				if r.IntN(2) == 0 { // a sequence at its key's indentation
					for range 1 + r.IntN(2) {
						b.WriteString(pad + "- " + genScalar(r) + "\n")
					}
				} else {
					b.WriteString(pad + "  # a comment\n")
					genBlock(r, b, indent+r.IntN(3)+1, depth+1)
				}
			default:
				b.WriteString(" " + genScalar(r))
				if r.IntN(4) == 0 {
					b.WriteString("  # c")
				}
				b.WriteString("\n")
			}
		}
		return
	}
	for range 1 + r.IntN(3) {
		switch r.IntN(3) {
		case 0:
			b.WriteString(pad + "- " + genFlow(r, 0) + "\n")
		case 1: // a compact mapping
			sub := &strings.Builder{}
			genBlock(r, sub, indent+2, depth+1)
			s := sub.String()
			if strings.HasPrefix(strings.TrimLeft(s, " "), "- ") || !strings.Contains(s, ":") {
				b.WriteString(pad + "-\n" + s)
			} else {
				b.WriteString(pad + "- " + s[indent+2:])
			}
		default:
			b.WriteString(pad + "-\n")
			genBlock(r, b, indent+2, depth+1)
		}
	}
}

func genDoc(r *rand.Rand) string {
	b := &strings.Builder{}
	if r.IntN(5) == 0 {
		b.WriteString("---\n")
	}
	genBlock(r, b, 0, 0)
	return b.String()
}

// mutate breaks a document a little: a character inserted, dropped or
// replaced with one that YAML gives a meaning.
func mutate(r *rand.Rand, doc string) string {
	const specials = " :-#,[]{}'\"\n&*!|>?%@`\t.0e"
	if doc == "" {
		return doc
	}
	i := r.IntN(len(doc))
	c := string(specials[r.IntN(len(specials))])
	switch r.IntN(3) {
	case 0:
		return doc[:i] + c + doc[i:]
	case 1:
		return doc[:i] + doc[i+1:]
	}
	return doc[:i] + c + doc[i+1:]
}

func FuzzConvert(f *testing.F) {
	for _, doc := range append(append([]string{}, converted...), outside...) {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		same(t, doc)
	})
}

// BenchmarkConvert: agentctl's 10,000-route document (one flow mapping a
// route) through Convert and through the library.
func BenchmarkConvert(b *testing.B) {
	var doc strings.Builder
	doc.WriteString("linux_config:\n  routes:\n")
	for i := range 10000 {
		fmt.Fprintf(&doc, "    - {outgoing_interface: eth0, dst_network: 10.%d.%d.%d/32, gw_addr: 172.30.75.1}\n", 100+i>>16, (i>>8)&255, i&255)
	}
	data := []byte(doc.String())
	b.Run("Convert", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			if _, ok := yamljson.Convert(data); !ok {
				b.Fatal("not converted")
			}
		}
	})
	b.Run("Library", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for range b.N {
			if _, err := yaml.YAMLToJSONStrict(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}
