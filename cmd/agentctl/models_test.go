package main

import (
	"strings"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
)

// Every model name agentctl shows (completion, help, the error of an
// unknown name) is one it takes back for the same model, and so is each
// alias of the model; a name of several models or of none is an error
// naming the candidates.
func TestModelNamesRoundTrip(t *testing.T) {
	shown, _ := modelArg(nil, nil, "")
	if len(shown) != len(models.Default.Models()) {
		t.Fatalf("completion offers %d models, the registry has %d", len(shown), len(models.Default.Models()))
	}
	for _, name := range shown {
		m, err := findModel(name)
		if err != nil || m.Name != name {
			t.Errorf("findModel(%q) = %v, %v; want the model it names", name, m, err)
			continue
		}
		if !strings.Contains(modelsHelp(), name) {
			t.Errorf("the help does not list %s", name)
		}
		for _, alias := range models.Default.Aliases(m) {
			if got, err := findModel(alias); err != nil || got != m {
				t.Errorf("findModel(%q) = %v, %v; want %s", alias, got, err, name)
			}
		}
	}
	for name, wants := range map[string][]string{
		"vpp.interfaces.interface": nil,
		"linux.interfaces":         nil,
		"vpp.l2":                   {`"vpp.l2" is ambiguous`, "vpp.l2.bridge-domain, vpp.l2.fib, vpp.l2.xconnect"},
		"linux.l3":                 {`"linux.l3" is ambiguous`, "linux.l3.arp, linux.l3.route"},
		"bogus.model":              {`unknown model "bogus.model"`, strings.Join(shown, ", ")},
	} {
		_, err := findModel(name)
		if (err == nil) != (wants == nil) {
			t.Errorf("findModel(%q): %v", name, err)
			continue
		}
		for _, want := range wants {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("findModel(%q): %q does not contain %q", name, err, want)
			}
		}
	}
}
