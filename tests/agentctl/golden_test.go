package agentctl_test

// Golden files: testdata/<name>.golden, rewritten with -update, and the
// normalisation of the volatile parts of an output.

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden with the outputs")

// golden compares got with testdata/<name>.golden (name may hold slashes:
// subdirectories), or writes the file with -update. A difference fails the
// test with a line diff; normalize got first.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name)+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v: run go test ./tests/agentctl -run '^%s$' -update to create it", err, t.Name())
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (-want +got; go test ./tests/agentctl -run '^%s$' -update rewrites it):\n%s",
			path, t.Name(), lineDiff(string(want), got))
	}
}

// volatile are the generic rules of normalize, in order.
var volatile = []struct {
	re   *regexp.Regexp
	repl string
}{
	// RFC 3339 and Go's time.Time.String, with their zones and monotonic
	// readings: 2025-01-02T15:04:05.123Z, 2025-01-02 15:04:05 +0000 UTC m=+0.5
	{regexp.MustCompile(`\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}| [+-]\d{4}(?: [A-Z][A-Za-z]{1,5})?)?(?: m=[+-]\d+\.\d+)?`), "<TIME>"},
	// Go durations: 12ms, 1.5s, 2m3s, 750µs.
	{regexp.MustCompile(`\b\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h)(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))*\b`), "<DURATION>"},
	// Ports of IPv4, IPv6 and localhost addresses: 127.0.0.1:9191, [::1]:9111.
	{regexp.MustCompile(`((?:\d{1,3}\.){3}\d{1,3}|\[[0-9A-Fa-f:.]+\]|localhost):\d{1,5}\b`), "${1}:<PORT>"},
	// IPv6 link-local addresses, made by the kernel from random MACs:
	// fe80::586a:14ff:fe27:17a1 (the prefix length stays).
	{regexp.MustCompile(`\bfe80::[0-9a-f]{1,4}(?::[0-9a-f]{1,4}){0,3}\b`), "fe80::<IID>"},
	// Process ids: pid 42, pid=42, "pid": 42, vpe_pid: 42, PID 42.
	{regexp.MustCompile(`(?i)(\b(?:[a-z]+_)?pid"?[=:]?\s*)\d+`), "${1}<PID>"},
}

// normalize returns s, for golden files, with the literal values of
// oldnew (pairs: old, new, ...; e.g. agent.placeholders() and
// netNames.placeholders()) replaced first, then the volatile parts:
// timestamps by <TIME>, durations by <DURATION>, the ports of host:port by
// <PORT>, the interface ids of IPv6 link-local addresses by <IID> and
// process ids by <PID>. MAC addresses stay: replace random ones through
// oldnew.
func normalize(s string, oldnew ...string) string {
	if len(oldnew)%2 != 0 {
		panic(fmt.Sprintf("normalize: odd number of old, new strings: %q", oldnew))
	}
	if len(oldnew) > 0 {
		s = strings.NewReplacer(oldnew...).Replace(s)
	}
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.repl)
	}
	return s
}

// columnGaps are the runs of spaces between a table's columns.
var columnGaps = regexp.MustCompile(`(\S) {2,}`)

// squeezeColumns returns a table with every run of two or more spaces after
// a non-space replaced by two spaces: the columns of a table whose widths
// depend on volatile values (names with a pid, ports) no longer move, the
// indentation at the start of lines stays. Apply it after normalize.
func squeezeColumns(table string) string {
	return columnGaps.ReplaceAllString(table, "$1  ")
}

// placeholders returns the agent's values, for normalize: its etcd
// endpoint, REST, gRPC and etcd peer addresses, etcd directory and label
// become <ETCD_ENDPOINT>, <REST_ADDRESS>, <GRPC_ADDRESS>,
// <ETCD_PEER_ADDRESS>, <ETCD_DIR> and <LABEL>.
func (a *agent) placeholders() []string {
	addr := func(port int) string { return net.JoinHostPort(a.Host, strconv.Itoa(port)) }
	ph := []string{
		a.EtcdEndpoint, "<ETCD_ENDPOINT>", // before the addresses it holds
		addr(a.RESTPort), "<REST_ADDRESS>",
		addr(a.GRPCPort), "<GRPC_ADDRESS>",
	}
	if a.EtcdDir != "" { // an embedded etcd of its own (not agentOptions.EtcdEndpoint)
		ph = append(ph, addr(a.EtcdPeerPort), "<ETCD_PEER_ADDRESS>", a.EtcdDir, "<ETCD_DIR>")
	}
	return append(ph, a.Label, "<LABEL>")
}

// lineDiff returns the lines of want and got with the lines only in want
// marked -, those only in got +, the common ones indented (a longest
// common subsequence of lines; for very long texts, both in full).
func lineDiff(want, got string) string {
	a, b := lines(want), lines(got)
	if len(a)*len(b) > 4_000_000 {
		return "--- want:\n" + want + "\n--- got:\n" + got
	}
	// lcs[i][j] is the length of a longest common subsequence of a[i:], b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out strings.Builder
	line := func(mark, l string) {
		out.WriteString(mark + strings.TrimSuffix(l, "\n"))
		if !strings.HasSuffix(l, "\n") {
			out.WriteString(" (no newline at end)")
		}
		out.WriteString("\n")
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			line("  ", a[i])
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			line("- ", a[i])
			i++
		default:
			line("+ ", b[j])
			j++
		}
	}
	return out.String()
}

// lines splits s after each newline; the last line has none when s does
// not end in one.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}
