package filesource_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/filesource"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sink records the Resync calls.
type sink struct {
	ids  []orchestrator.SourceID
	kvs  [][]orchestrator.KV
	opts []api.TxnOptions
}

func (s *sink) Resync(_ context.Context, id orchestrator.SourceID, kvs []orchestrator.KV, opts api.TxnOptions) (uint64, error) {
	s.ids, s.kvs, s.opts = append(s.ids, id), append(s.kvs, kvs), append(s.opts, opts)
	return 1, nil
}

// TestFormats: a configuration document and a list of {key, value} (model
// keys and etcd keys of the agent's label) give the values sorted by key;
// Run hands them to the sink once, as the init-file source's state.
func TestFormats(t *testing.T) {
	doc := writeFile(t, "doc.yaml", "vpp_config:\n  interfaces:\n    - {name: loop1, type: SOFTWARE_LOOPBACK}\n")
	list := writeFile(t, "list.yaml", `- key: config/vpp/v2/interfaces/loop1
  value: {name: loop1, type: SOFTWARE_LOOPBACK}
- key: /vnf-agent/vpp1/config/linux/interfaces/v2/interface/lo1
  value: {name: lo1, type: LOOPBACK, host_if_name: lo}
`)
	for f, want := range map[string][]string{
		doc:  {"config/vpp/v2/interfaces/loop1"},
		list: {"config/linux/interfaces/v2/interface/lo1", "config/vpp/v2/interfaces/loop1"},
	} {
		var s sink
		src, err := filesource.New(f, "vpp1", nil, &s)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if err := src.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(s.ids) != 1 || s.ids[0] != orchestrator.SourceInitFile || s.opts[0] != (api.TxnOptions{}) {
			t.Fatalf("%s: Resync calls %v %v, want one of the init-file source with the default options", f, s.ids, s.opts)
		}
		var keys []string
		for _, kv := range s.kvs[0] {
			if kv.Value == nil || kv.Err != nil {
				t.Errorf("%s: %s without a value: %v", f, kv.Key, kv.Err)
			}
			keys = append(keys, kv.Key)
		}
		if strings.Join(keys, " ") != strings.Join(want, " ") {
			t.Errorf("%s: keys %v, want %v", f, keys, want)
		}
	}
}

// TestBadFiles: each problem is an error of New naming the file, its
// format, the line and the item, without a decoder's prefix.
func TestBadFiles(t *testing.T) {
	for name, c := range map[string]struct{ content, want string }{
		"bad value":     {"- key: config/vpp/v2/interfaces/loop1\n  value: {name: loop2}\n", "f.yaml (YAML): line 1: item 0: "},
		"bad syntax":    {"- key: a\n  value: [\n", "f.yaml (YAML): "},
		"other label":   {"- key: /vnf-agent/vpp2/config/vpp/v2/interfaces/loop1\n  value: {name: loop1}\n", `label "vpp2"`},
		"unknown field": {"- key: config/vpp/v2/interfaces/loop1\n  valu: {}\n", "line 2: valu: unknown field"},
		"bad document":  {"vpp_config: {interfacez: []}\n", "interfacez"},
		"bad item":      {"vpp_config:\n  interfaces:\n    - {name: loop1, type: NOPE}\n", `f.yaml (YAML): line 3: vpp_config.interfaces[0]: invalid value for enum field type: "NOPE"`},
	} {
		_, err := filesource.New(writeFile(t, "f.yaml", c.content), "vpp1", nil, &sink{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "configuration document:") || strings.Contains(err.Error(), " yaml: ") || strings.Contains(err.Error(), " json: ")) {
			t.Errorf("%s: %v carries a decoder's prefix", name, err)
		}
	}
	if _, err := filesource.New(filepath.Join(t.TempDir(), "missing.yaml"), "vpp1", nil, &sink{}); err == nil || !strings.Contains(err.Error(), "init file") || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}
