package models_test

import (
	"strings"
	"testing"

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
