package l3plugin_test

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// loopback is the NB value of a loopback of ifplugin's, admin up or down.
func loopback(name string, up bool) kv {
	return kv{ifplugin.InterfaceKey(name), &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: up}}
}

// TestDynamicARPEntryAfterAdminDown: VPP flushes the dynamic neighbours of
// an interface that goes admin down and keeps the static ones. The agent
// does not follow (see Limits in doc.go): its dynamic entries stay
// CONFIGURED, missing from VPP until a resync adds them again.
func TestDynamicARPEntryAfterAdminDown(t *testing.T) {
	e := newEnvWith(t, envOptions{ifplugin: true})
	static := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01", Static: true})
	dynamic := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"})
	dynamic6 := arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: "2001:db8::2", PhysAddress: "02:00:00:00:00:03"})
	all := []string{
		"if1 10.0.0.1 02:00:00:00:00:01 static=true",
		"if1 10.0.0.2 02:00:00:00:00:02 static=false",
		"if1 2001:db8::2 02:00:00:00:00:03 static=false",
	}
	check := func(when string, want []string) {
		t.Helper()
		if got := e.neighbors(); !slices.Equal(got, want) {
			t.Errorf("%s: neighbours in VPP %v, want %v", when, got, want)
		}
		for _, x := range []kv{static, dynamic, dynamic6} {
			if st := e.state(x.key); st != api.ValueStateConfigured {
				t.Errorf("%s: %s is %v, want CONFIGURED", when, x.key, st)
			}
		}
	}
	e.mustCommit(loopback("if1", true), static, dynamic, dynamic6)
	check("if1 up", all)
	e.mustCommit(loopback("if1", false))
	check("if1 down", all[:1])
	e.mustCommit(loopback("if1", true))
	check("if1 up again", all[:1])

	seq, err := e.resync(api.DownstreamResync)
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, op := range e.executed(seq) {
		ops = append(ops, strings.Join(strings.Fields(op)[:2], " "))
	}
	sort.Strings(ops)
	if want := []string{"CREATE " + dynamic.key, "CREATE " + dynamic6.key}; !slices.Equal(ops, want) {
		t.Errorf("resync executed %v, want %v", e.executed(seq), want)
	}
	check("after the resync", all)
}
