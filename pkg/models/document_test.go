package models_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/netagent-io/netagent/pkg/models"
)

// A configuration file's errors name the file, its format and the line of
// what they are about, without the decoders' prefixes.
func TestParseConfigFileErrors(t *testing.T) {
	for _, c := range []struct{ name, doc, want string }{
		{"f.yaml", "vpp_config:\n  interfaces:\n    - {name: loop1, type: NOPE}\n", `f.yaml (YAML): line 3: vpp_config.interfaces[0]: invalid value for enum field type: "NOPE"`},
		{"f.yaml", "vpp_config: {interfacez: []}\n", "f.yaml (YAML): line 1: vpp_config.interfacez: unknown field (known: "},
		{"f.yaml", "vpp_config:\n  interfaces:\n    - name: loop1\n      mtu: -3\n", "f.yaml (YAML): line 4: vpp_config.interfaces[0]: invalid value for uint32 field mtu: -3"},
		{"f.json", "{\"vpp_config\": {\"interfaces\": [}\n", "f.json (JSON): line 1, column 32: invalid character '}'"},
		{"f.yaml", "a: b: c\n", "f.yaml (YAML): mapping values are not allowed"},
		{"standard input", "vpp_config:\n  interfaces:\n    - {name: a, type: SOFTWARE_LOOPBACK}\n    - {name: a, type: SOFTWARE_LOOPBACK}\n", "standard input (YAML): line 4: vpp_config.interfaces[1]: key"},
	} {
		_, err := models.Default.ParseConfigFile(c.name, []byte(c.doc))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error starting %q", c.doc, err, c.want)
		}
		for _, noise := range []string{"configuration document:", "yaml:", "proto:"} {
			if err != nil && strings.Contains(err.Error(), noise) {
				t.Errorf("%q: %v carries %q", c.doc, err, noise)
			}
		}
	}
	kvs, err := models.Default.ParseConfigFile("ok.yaml", []byte("vpp_config:\n  interfaces:\n    - {name: loop1, type: SOFTWARE_LOOPBACK}\n"))
	if err != nil || len(kvs) != 1 {
		t.Errorf("a valid document: %v %v", kvs, err)
	}
}

func TestDocumentLine(t *testing.T) {
	// Names match in either spelling; list items by index.
	doc := "vpp_config:\n  interfaces:\n    - name: a\n    - name: b\n      ipAddresses: [10.0.0.1/24]\n"
	for _, c := range []struct {
		path []string
		want int
	}{
		{[]string{"vpp_config"}, 1},
		{[]string{"vppConfig", "interfaces", "1"}, 4},
		{[]string{"vpp_config", "interfaces", "1", "ip_addresses"}, 5},
		{[]string{"vpp_config", "interfaces", "7"}, 2},
		{[]string{"linux_config"}, 0},
	} {
		if got := models.DocumentLine(yamlRoot(t, doc), c.path); got != c.want {
			t.Errorf("DocumentLine(%v) = %d, want %d", c.path, got, c.want)
		}
	}
}

func yamlRoot(t *testing.T, doc string) *yamlv3.Node {
	t.Helper()
	var n yamlv3.Node
	if err := yamlv3.Unmarshal([]byte(doc), &n); err != nil || len(n.Content) != 1 {
		t.Fatalf("parse %q: %v", doc, err)
	}
	return n.Content[0]
}

// configDocSeeds are configuration documents, good and bad, in both
// formats, for ParseConfigDocument against ParseConfigFile.
var configDocSeeds = []struct{ name, doc string }{
	{"a.json", `{"vpp_config":{"interfaces":[{"name":"l1","type":"SOFTWARE_LOOPBACK","enabled":true,"ip_addresses":["10.0.0.1/24"]}],"routes":[{"dst_network":"20.0.0.0/24","next_hop_addr":"10.0.0.2","outgoing_interface":"l1"}]}}`},
	{"a.json", `{"vppConfig":{"routes":[{"dstNetwork":"20.0.0.0/24","nextHopAddr":"10.0.0.2"}]},"linux_config":{"interfaces":[{"name":"v1","type":"VETH","veth":{"peer_if_name":"v2"}},{"name":"v2","type":"VETH","veth":{"peer_if_name":"v1"}}]}}`},
	{"a.yaml", "vpp_config:\n  interfaces:\n    - {name: l1, type: SOFTWARE_LOOPBACK}\n  arps:\n    - {interface: l1, ip_address: 10.0.0.9, phys_address: \"02:00:00:00:00:09\"}\n"},
	{"a.yaml", "{vpp_config: {interfaces: [{name: l1, type: SOFTWARE_LOOPBACK}]}}\n"},
	{"a.json", "null"},
	{"a.yaml", ""},
	{"a.json", `{"vpp_config":null}`},
	{"a.json", `{"vpp_config":{"interfaces":null}}`},
	{"a.json", `{"vpp_config":{"interfaces":[null]}}`},
	{"a.json", `{"vpp_config":{"interfaces":[{"name":"l1","type":"SOFTWARE_LOOPBACK"},{"name":"l1","type":"SOFTWARE_LOOPBACK"}]}}`},
	{"a.json", `{"vpp_config":{},"vppConfig":{}}`},
	{"a.json", `{"vpp_config":{"interfaces":[],"interfaces":[]}}`},
	{"a.json", `{"vpp_config":{"interfaces":[{"name":"l1","name":"l2"}]}}`},
	{"a.json", `{"vpp_config":{"interfaces":[{"name":"l1","type":"NOPE"}]}}`},
	{"a.json", `{"vpp_config":{"interfaces":{"name":"l1"}}}`},
	{"a.json", `{"vpp_config":{"routes":[{"dst_network":"20.0.0.1/24"}]}}`},
	{"a.json", `{"bogus_config":{}}`},
	{"a.json", `{"vpp_config":{"interfaces":[}`},
	{"a.yaml", "vpp_config:\n  interfaces:\n    - name: l1\n      mtu: -3\n"},
	{"a.yaml", "vpp_config: {}\nvpp_config: {}\n"},
	{"a.yaml", "- 1\n- 2\n"},
	{"a.json", `[1,2]`},
	{"a.json", `{"vpp_config":{"interfaces":[{"name":"l1","type":"SOFTWARE_LOOPBACK","mtu":"1500"}]}}`},
}

// sameParse checks that ParseConfigDocument reads doc as ParseConfigFile
// and BuildConfig do: the same error, or the same values and document.
func sameParse(t *testing.T, name, doc string) {
	t.Helper()
	cfg, kvs, err := models.Default.ParseConfigDocument(name, []byte(doc))
	wantKVs, wantErr := models.Default.ParseConfigFile(name, []byte(doc))
	if wantErr != nil {
		if err == nil || err.Error() != wantErr.Error() {
			t.Fatalf("%s %q: error %v, want %v", name, doc, err, wantErr)
		}
		return
	}
	wantCfg, buildErr := models.Default.BuildConfig(wantKVs)
	if buildErr != nil {
		if err == nil || !strings.Contains(err.Error(), buildErr.Error()) {
			t.Fatalf("%s %q: error %v, want BuildConfig's %v", name, doc, err, buildErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s %q: %v, want %d values", name, doc, err, len(wantKVs))
	}
	if len(kvs) != len(wantKVs) {
		t.Fatalf("%s %q: %d values, want %d", name, doc, len(kvs), len(wantKVs))
	}
	for i := range kvs {
		if kvs[i].Key != wantKVs[i].Key || !proto.Equal(kvs[i].Value, wantKVs[i].Value) {
			t.Fatalf("%s %q: value %d is %s %v, want %s %v", name, doc, i, kvs[i].Key, kvs[i].Value, wantKVs[i].Key, wantKVs[i].Value)
		}
	}
	// The document carries the values (an empty section it gives is no
	// value; their order in a list is the document's, or the keys' when
	// the document was read item by item and built again).
	fromCfg, err := models.Default.ConfigKVs(cfg)
	if err != nil || len(fromCfg) != len(wantKVs) {
		t.Fatalf("%s %q: the document has %d values (%v), want %d", name, doc, len(fromCfg), err, len(wantKVs))
	}
	inCfg := make(map[string]proto.Message, len(fromCfg))
	for _, kv := range fromCfg {
		inCfg[kv.Key] = kv.Value
	}
	for _, kv := range wantKVs {
		if v, ok := inCfg[kv.Key]; !ok || !proto.Equal(v, kv.Value) {
			t.Fatalf("%s %q: the document's value of %s is %v, want %v", name, doc, kv.Key, v, kv.Value)
		}
	}
	if rebuilt, err := models.Default.BuildConfig(kvs); err != nil || !proto.Equal(rebuilt, wantCfg) {
		t.Fatalf("%s %q: document %v (%v), want %v", name, doc, rebuilt, err, wantCfg)
	}
}

// TestParseConfigDocument: the document read at once gives what reading
// it item by item gives, values, document and errors alike.
func TestParseConfigDocument(t *testing.T) {
	for _, c := range configDocSeeds {
		sameParse(t, c.name, c.doc)
	}
	if _, kvs, err := models.Default.ParseConfigDocument("a.json", []byte(configDocSeeds[0].doc)); err != nil || len(kvs) != 2 {
		t.Errorf("a valid document: %d values, %v; want 2", len(kvs), err)
	}
}

// FuzzParseConfigDocument: ParseConfigDocument agrees with ParseConfigFile
// and BuildConfig on any document, as JSON and as YAML.
func FuzzParseConfigDocument(f *testing.F) {
	for _, c := range configDocSeeds {
		f.Add(strings.HasSuffix(c.name, ".json"), c.doc)
	}
	f.Fuzz(func(t *testing.T, isJSON bool, doc string) {
		name := "f.yaml"
		if isJSON {
			name = "f.json"
		}
		sameParse(t, name, doc)
	})
}

// TestDecodeConfigDocument: the quick reading of a document decodes what
// protojson takes (items not checked: an invalid address passes) and
// refuses the rest; CountConfigItems counts the entries of every list,
// invalid ones included.
func TestDecodeConfigDocument(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		ok        bool
		items     int
	}{
		{"a.yaml", "vpp_config:\n  routes:\n    - {dst_network: 10.0.0.0/24}\n    - {dst_network: 10.1.0.0/24}\nlinux_config:\n  interfaces:\n    - {name: a, type: LOOPBACK}\n", true, 3},
		{"b.json", `{"vpp_config":{"routes":[{"dst_network":"300.0.0.0/24"}]}}`, true, 1},
		{"c.yaml", "# nothing\n", false, 0}, // null: for the item by item reading
		{"d.yaml", "{}\n", true, 0},
		{"e.yaml", "vpp_config: [\n", false, 0},
		{"f.yaml", "bogus_config: {}\n", false, 0},
		{"g.json", `{"vpp_config":{"routes":[{"bogus":1}]}}`, false, 0},
	} {
		cfg, ok := models.Default.DecodeConfigDocument(tc.name, []byte(tc.doc))
		if ok != tc.ok {
			t.Errorf("%s: decoded %v, want %v", tc.name, ok, tc.ok)
			continue
		}
		if ok {
			if n := models.CountConfigItems(cfg); n != tc.items {
				t.Errorf("%s: %d items, want %d", tc.name, n, tc.items)
			}
		}
	}
}
