package graphviz_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/graphviz"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

const (
	tap0     = "config/vpp/v2/interfaces/tap0"
	tap1     = "config/vpp/v2/interfaces/tap1"
	memif1   = "config/vpp/v2/interfaces/memif1"
	local0   = "config/vpp/v2/interfaces/local0"
	tap0Host = "config/linux/interfaces/v2/interface/tap0-host"
	tap1Host = "config/linux/interfaces/v2/interface/tap1-host"
	addr4    = "vpp/interface/address/tap0/10.0.0.1/24"
	addr6    = "vpp/interface/address/tap0/fd00::1/64"
	route1   = "config/vpp/v2/route/vrf/0/dst/192.168.1.0/24/gw/10.0.0.254"
	route2   = "config/vpp/v2/route/vrf/0/dst/192.168.2.0/24/gw/10.0.2.254"
	nat      = "config/vpp/nat/v2/nat44-global"
)

// smallSnapshot is a fixed graph: 11 values over 3 descriptors plus values
// without a descriptor (two address properties derived from tap0, one
// UNIMPLEMENTED value), with satisfied, unsatisfied and AnyOf dependencies,
// a FAILED value whose error has quotes and a newline, and one changed key.
func smallSnapshot() *api.GraphSnapshot {
	return &api.GraphSnapshot{
		TxnSeq:  12,
		Time:    time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC),
		Changed: []string{tap0},
		Nodes: []api.GraphNode{
			// Not sorted on purpose: the output must sort.
			{Key: tap0, Descriptor: "vpp-interface", State: api.ValueStateConfigured, LastOp: api.OpCreate,
				Value: &vppif.Interface{Name: "tap0", Type: vppif.Interface_TAP, Enabled: true,
					IpAddresses: []string{"10.0.0.1/24", "fd00::1/64"}},
				Dependencies: []api.DependencyInfo{
					{Label: "host-side", Key: tap0Host, Targets: []string{tap0Host}, Satisfied: true},
				}},
			{Key: memif1, Descriptor: "vpp-interface", State: api.ValueStateFailed, LastOp: api.OpCreate,
				Error: "create \"memif1\": socket \"/run/vpp/memif.sock\" refused\nwill retry in 1s",
				Value: &vppif.Interface{Name: "memif1", Type: vppif.Interface_MEMIF, Enabled: true,
					Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 1,
						SocketFilename: "/run/vpp/memif.sock", RingSize: 1024}}}},
			{Key: tap1, Descriptor: "vpp-interface", State: api.ValueStatePending, LastOp: api.OpCreate,
				Value: &vppif.Interface{Name: "tap1", Type: vppif.Interface_TAP},
				Dependencies: []api.DependencyInfo{
					{Label: "host-side", Key: tap1Host},
				}},
			{Key: local0, Descriptor: "vpp-interface", State: api.ValueStateObtained, Obtained: true,
				Value: &vppif.Interface{Name: "local0"}},
			{Key: tap0Host, Descriptor: "linux-interface", State: api.ValueStateConfigured, LastOp: api.OpCreate},
			{Key: addr4, Base: tap0, Derived: true, State: api.ValueStateConfigured, LastOp: api.OpCreate},
			{Key: addr6, Base: tap0, Derived: true, State: api.ValueStateConfigured, LastOp: api.OpCreate},
			{Key: route1, Descriptor: "vpp-route", State: api.ValueStateConfigured, LastOp: api.OpCreate,
				Value: &vppl3.Route{DstNetwork: "192.168.1.0/24", NextHopAddr: "10.0.0.254", OutgoingInterface: "tap0"},
				Dependencies: []api.DependencyInfo{
					{Label: "outgoing-interface", Key: tap0, Targets: []string{tap0}, Satisfied: true},
					{Label: "gw-network", AnyOfPrefixes: []string{"vpp/interface/address/"},
						Targets: []string{addr4, addr6}, Satisfied: true},
				}},
			{Key: route2, Descriptor: "vpp-route", State: api.ValueStateRetrying, LastOp: api.OpCreate,
				Error: "outgoing interface memif1 is down",
				Value: &vppl3.Route{DstNetwork: "192.168.2.0/24", NextHopAddr: "10.0.2.254", OutgoingInterface: "memif1"},
				Dependencies: []api.DependencyInfo{
					{Label: "outgoing-interface", Key: memif1, Targets: []string{memif1}},
					{Label: "gw-network", AnyOfPrefixes: []string{"vpp/interface/address/memif1/"}},
				}},
			{Key: nat, State: api.ValueStateUnimplemented},
		},
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run with -update to rewrite it)\n--- got:\n%s", path, got)
	}
}

func TestDOTGolden(t *testing.T) {
	var b bytes.Buffer
	if err := graphviz.DOT(&b, smallSnapshot()); err != nil {
		t.Fatal(err)
	}
	golden(t, "small.dot", b.Bytes())
}

func TestMermaidGolden(t *testing.T) {
	var b bytes.Buffer
	if err := graphviz.Mermaid(&b, smallSnapshot()); err != nil {
		t.Fatal(err)
	}
	golden(t, "small.mmd", b.Bytes())
}

// TestDeterministic: the output does not depend on the order of the nodes
// and is stable over calls.
func TestDeterministic(t *testing.T) {
	render := func(s *api.GraphSnapshot) (string, string) {
		var d, m bytes.Buffer
		if err := graphviz.DOT(&d, s); err != nil {
			t.Fatal(err)
		}
		if err := graphviz.Mermaid(&m, s); err != nil {
			t.Fatal(err)
		}
		return d.String(), m.String()
	}
	wantDOT, wantMMD := render(smallSnapshot())
	for i := 0; i < 5; i++ {
		s := smallSnapshot()
		// Reverse the nodes and their dependencies' targets.
		for a, b := 0, len(s.Nodes)-1; a < b; a, b = a+1, b-1 {
			s.Nodes[a], s.Nodes[b] = s.Nodes[b], s.Nodes[a]
		}
		gotDOT, gotMMD := render(s)
		if gotDOT != wantDOT || gotMMD != wantMMD {
			t.Fatalf("output depends on the order of the nodes")
		}
	}
}

func TestEmptyAndNil(t *testing.T) {
	var b bytes.Buffer
	if err := graphviz.DOT(&b, &api.GraphSnapshot{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "digraph kvscheduler {") {
		t.Errorf("empty graph: %s", b.String())
	}
	if err := graphviz.DOT(io.Discard, nil); err == nil {
		t.Error("DOT(nil snapshot): no error")
	}
	if err := graphviz.Mermaid(io.Discard, nil); err == nil {
		t.Error("Mermaid(nil snapshot): no error")
	}
	if _, err := graphviz.SVG(context.Background(), nil); err == nil {
		t.Error("SVG(nil snapshot): no error")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestWriteError(t *testing.T) {
	if err := graphviz.DOT(failingWriter{}, smallSnapshot()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("DOT: err = %v, want the writer's error", err)
	}
	if err := graphviz.Mermaid(failingWriter{}, smallSnapshot()); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Mermaid: err = %v, want the writer's error", err)
	}
}

// TestLongValueTruncated: a long value is cut with an ellipsis.
func TestLongValueTruncated(t *testing.T) {
	long := strings.Repeat("x", 200)
	s := &api.GraphSnapshot{Nodes: []api.GraphNode{{Key: "k", Descriptor: "d", State: api.ValueStateConfigured,
		Value: &vppif.Interface{Name: long}, Error: strings.Repeat("e", 200)}}}
	var b bytes.Buffer
	if err := graphviz.DOT(&b, s); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, strings.Repeat("x", 61)) || strings.Contains(out, strings.Repeat("e", 61)) {
		t.Errorf("long value or error not cut:\n%s", out)
	}
	if !strings.Contains(out, `name:\"xxxx`) || !strings.Contains(out, "x…") || !strings.Contains(out, "e…") {
		t.Errorf("no cut value with an ellipsis:\n%s", out)
	}
}

// hostileKeys are keys that would break a naive DOT or Mermaid writer.
var hostileKeys = []string{
	`quote"inside`,
	`back\slash\`,
	"new\nline\r\ttab",
	`html<b>bold</b>&amp;`,
	`record{a|b}<port>`,
	`escapes\N\G\l\n`,
	"\"; digraph x { evil -> injected } //",
	"not utf-8 \xff\xfe end",
	"`md` #quot; end",
}

func hostileSnapshot() *api.GraphSnapshot {
	s := &api.GraphSnapshot{Changed: []string{hostileKeys[0]}, Note: "note with \"quotes\"\nand a newline"}
	for i, k := range hostileKeys {
		n := api.GraphNode{Key: k, Descriptor: `desc "` + k + `"`, State: api.ValueStateConfigured,
			Error: "err: " + k, Value: &vppif.Interface{Name: k}}
		if i > 0 {
			n.Dependencies = []api.DependencyInfo{
				{Label: "dep " + k, Key: hostileKeys[i-1], Targets: []string{hostileKeys[i-1]}, Satisfied: true},
				{Label: "missing " + k, Key: k + "/missing"},
			}
			n.Base = hostileKeys[0]
			n.Derived = true
		}
		s.Nodes = append(s.Nodes, n)
	}
	return s
}

// visibleKey is how a key is shown: control characters as Go escapes, bytes
// that are not UTF-8 as \xNN.
func visibleKey(k string) string {
	r := strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`, "\xff", `\xff`, "\xfe", `\xfe`)
	return r.Replace(k)
}

func TestDOTHostileKeys(t *testing.T) {
	var b bytes.Buffer
	if err := graphviz.DOT(&b, hostileSnapshot()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "evil") && !strings.Contains(line, `\"; digraph x { evil -> injected } //`) {
			t.Errorf("a key escaped its DOT string: %q", line)
		}
	}
	if strings.ContainsAny(out, "\r\v\f") {
		t.Errorf("raw control characters in the output:\n%s", out)
	}
	if _, err := exec.LookPath("dot"); err != nil {
		t.Log("dot is not installed: the output is not checked with it")
		return
	}
	svg, err := graphviz.SVG(context.Background(), hostileSnapshot())
	if err != nil {
		t.Fatalf("dot rejects the DOT of hostile keys: %v\n%s", err, out)
	}
	texts := svgTexts(t, svg)
	for _, k := range hostileKeys {
		if !texts[visibleKey(k)] {
			t.Errorf("the SVG has no text %q; texts: %v", visibleKey(k), texts)
		}
	}
}

func TestMermaidHostileKeys(t *testing.T) {
	var b bytes.Buffer
	if err := graphviz.Mermaid(&b, hostileSnapshot()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "title:") {
			continue
		}
		// Inside labels, none of these may appear unescaped.
		for _, c := range []string{"<b>", "`", "|b}", "&amp;", "\r", "\t"} {
			if strings.Contains(line, c) {
				t.Errorf("unescaped %q in %q", c, line)
			}
		}
		// Quotes only delimit labels: an even count per line.
		if strings.Count(line, `"`)%2 != 0 {
			t.Errorf("odd number of quotes in %q", line)
		}
	}
	if !strings.Contains(out, "quote#quot;inside") || !strings.Contains(out, `back\slash\`) {
		t.Errorf("hostile keys not escaped as expected:\n%s", out)
	}
}

// svgTexts returns the character data of the <text> elements of an SVG.
func svgTexts(t *testing.T, svg []byte) map[string]bool {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	d.Strict = false
	d.Entity = xml.HTMLEntity
	texts := map[string]bool{}
	inText := false
	var cur strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("bad SVG: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "text" {
				inText = true
				cur.Reset()
			}
		case xml.CharData:
			if inText {
				cur.Write(tok)
			}
		case xml.EndElement:
			if tok.Name.Local == "text" {
				inText = false
				texts[cur.String()] = true
			}
		}
	}
	return texts
}

func TestSVG(t *testing.T) {
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("Graphviz dot is not installed")
	}
	svg, err := graphviz.SVG(context.Background(), smallSnapshot())
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	if !strings.HasPrefix(s, "<?xml") && !strings.Contains(s, "<svg") {
		t.Fatalf("not an SVG:\n%.300s", s)
	}
	texts := svgTexts(t, svg)
	for _, want := range []string{tap0, route1, "FAILED (last op: CREATE)", "missing: " + tap1Host, "derived", "vpp-interface", "(no descriptor)"} {
		if !texts[want] {
			t.Errorf("the SVG has no text %q", want)
		}
	}
}

func TestSVGNoDot(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := graphviz.SVG(context.Background(), smallSnapshot())
	if !errors.Is(err, graphviz.ErrNoDot) {
		t.Fatalf("err = %v, want ErrNoDot", err)
	}
	if !strings.Contains(err.Error(), "apt-get install graphviz") || !strings.Contains(err.Error(), "format=dot") {
		t.Errorf("the error does not tell how to get dot: %v", err)
	}
}

// TestSVGDotFails: when dot fails, the error carries its standard error.
func TestSVGDotFails(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs a shell script")
	}
	dir := t.TempDir()
	script := "#!/bin/sh\ncat >/dev/null\necho 'Error: <stdin>: syntax error in line 3' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "dot"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+"/bin"+string(os.PathListSeparator)+"/usr/bin")
	_, err := graphviz.SVG(context.Background(), smallSnapshot())
	if err == nil {
		t.Fatal("no error")
	}
	if errors.Is(err, graphviz.ErrNoDot) {
		t.Errorf("err is ErrNoDot: %v", err)
	}
	if !strings.Contains(err.Error(), "syntax error in line 3") {
		t.Errorf("err = %v, want dot's stderr in it", err)
	}
}

// TestSVGCanceled: a cancelled context stops dot.
func TestSVGCanceled(t *testing.T) {
	if _, err := exec.LookPath("dot"); err != nil {
		t.Skip("Graphviz dot is not installed")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := graphviz.SVG(ctx, smallSnapshot()); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// Focus keeps the values under a prefix and the values they touch: bases,
// derived values, dependency targets and dependents.
func TestFocus(t *testing.T) {
	keys := func(s *api.GraphSnapshot) []string {
		var out []string
		for _, n := range s.Nodes {
			out = append(out, n.Key)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		prefix string
		want   []string
	}{
		// tap0: its derived addresses, the linux side it depends on, the
		// route that depends on it.
		{tap0, []string{tap0Host, addr4, addr6, tap0, route1}},
		// route2: memif1, its target; the unsatisfied AnyOf has none.
		{route2, []string{memif1, route2}},
		// An address: its base, and route1 (its AnyOf dependency's target).
		{addr4, []string{addr4, tap0, route1}},
		{"nothing/", nil},
	} {
		s := smallSnapshot()
		f := graphviz.Focus(s, c.prefix)
		want := slices.Clone(c.want)
		slices.Sort(want)
		if got := keys(f); !slices.Equal(got, want) {
			t.Errorf("Focus(%q) = %v, want %v", c.prefix, got, want)
		}
		if !strings.Contains(f.Note, c.prefix) || len(s.Nodes) != len(smallSnapshot().Nodes) {
			t.Errorf("Focus(%q): note %q, original %d nodes", c.prefix, f.Note, len(s.Nodes))
		}
		for _, k := range f.Changed {
			if !slices.ContainsFunc(f.Nodes, func(n api.GraphNode) bool { return n.Key == k }) {
				t.Errorf("Focus(%q): changed key %s is not in the graph", c.prefix, k)
			}
		}
	}
	if s := smallSnapshot(); graphviz.Focus(s, "") != s || graphviz.Focus(s, "") == nil {
		t.Error("an empty prefix must return the snapshot itself")
	}
	// The focused graph renders.
	var b bytes.Buffer
	if err := graphviz.DOT(&b, graphviz.Focus(smallSnapshot(), route2)); err != nil || !strings.Contains(b.String(), "memif1") {
		t.Errorf("DOT of a focused graph: %v", err)
	}
}
