package models

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// Every model's name, the original agent's (module.type), is what Lookup
// finds it by, in any case; so are its aliases, each of which names this
// model only.
func TestLookupRoundTripsEveryModel(t *testing.T) {
	for _, m := range Default.Models() {
		t.Run(m.Name, func(t *testing.T) {
			for _, name := range append([]string{m.Name, strings.ToUpper(m.Name)}, Default.Aliases(m)...) {
				got, err := Default.Lookup(name)
				if err != nil || got != m {
					t.Errorf("Lookup(%q) = %v, %v; want model %s", name, modelName(got), err, m.Name)
				}
			}
			if got := Default.ModelByName(m.Name); got != m {
				t.Errorf("ModelByName(%q) = %v", m.Name, modelName(got))
			}
		})
	}
}

// The names a user of the original agent or of netagent's CLI types for a
// model: the canonical names, and the spellings its inconsistent names
// invite (vpp.interfaces beside linux.interfaces.interface).
func TestLookupAliases(t *testing.T) {
	for name, want := range map[string]*Model{
		"vpp.interfaces":             VPPInterface,
		"vpp.interfaces.interface":   VPPInterface, // its message, vpp.interfaces.Interface
		"VPP.Interfaces.Interface":   VPPInterface,
		"linux.interfaces.interface": LinuxInterface,
		"linux.interfaces":           LinuxInterface, // its module: one model
		"linux.interface":            LinuxInterface, // area and type
		"linux.route":                LinuxRoute,
		"vpp.route":                  VPPRoute,
		"vpp.l3.route":               VPPRoute, // message package and type, as linux.l3.route
		"vpp.l3.arp":                 VPPARP,
		"vpp.l3.arpentry":            VPPARP,
		"vpp.bridge-domain":          VPPBridgeDomain,
		"vpp.l2.bridgedomain":        VPPBridgeDomain,
		"vpp.acls":                   VPPACL,
		"vpp.acl":                    VPPACL,
		"vpp.nat44-global":           VPPNat44Global,
	} {
		got, err := Default.Lookup(name)
		if err != nil || got != want {
			t.Errorf("Lookup(%q) = %v, %v; want %s", name, modelName(got), err, want.Name)
		}
	}
}

// A name that fits several models is an error listing them; a name that
// fits none lists every model.
func TestLookupAmbiguousAndUnknown(t *testing.T) {
	for name, want := range map[string][]string{
		"vpp.l2":   {"vpp.l2.bridge-domain", "vpp.l2.fib", "vpp.l2.xconnect"},
		"linux.l3": {"linux.l3.arp", "linux.l3.route"},
		"vpp.nat":  {"vpp.nat.dnat44", "vpp.nat.nat44-global", "vpp.nat.nat44-interface", "vpp.nat.nat44-pool"},
		"vpp":      {"vpp.arp", "vpp.interfaces", "vpp.route", "vpp.vrf-table"},
	} {
		m, err := Default.Lookup(name)
		var ne *ModelNameError
		if m != nil || !errors.As(err, &ne) || !ne.Ambiguous || !slices.Equal(ne.Candidates, want) {
			t.Errorf("Lookup(%q) = %v, %v; want ambiguous between %v", name, modelName(m), err, want)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `"`+name+`" is ambiguous`) || !strings.Contains(msg, strings.Join(want, ", ")) {
			t.Errorf("Lookup(%q): %q does not say it is ambiguous between %v", name, msg, want)
		}
	}
	for _, name := range []string{"", "bogus.model", "vpp.interfaces.bogus", "interfaces"} {
		m, err := Default.Lookup(name)
		var ne *ModelNameError
		if m != nil || !errors.As(err, &ne) || ne.Ambiguous || len(ne.Candidates) != len(Default.Models()) {
			t.Errorf("Lookup(%q) = %v, %v; want unknown, listing every model", name, modelName(m), err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `unknown model "`+name+`"`) || !strings.Contains(msg, "linux.interfaces.interface") || !strings.Contains(msg, "vpp.interfaces") {
			t.Errorf("Lookup(%q): %q", name, msg)
		}
	}
}

func modelName(m *Model) string {
	if m == nil {
		return "<nil>"
	}
	return m.Name
}
