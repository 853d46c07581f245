package ifplugin_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/rest"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// foreign are the interfaces foreignSetup made behind the agent's back, by
// VPP's names.
type foreign struct {
	loop string // untagged, up, with an address
	tap  string // untagged; "" when VPP cannot create TAP interfaces
	hand string // tagged "made by hand", which is no logical name
	// all are the foreign interfaces the test checks: local0 and the above.
	all []string
}

// foreignSetup creates, through VPP's API and not through the agent, an
// untagged loopback (up, with an address), an untagged TAP (when VPP can
// create one) and a loopback whose tag is no logical name ("made by hand").
func foreignSetup(t *testing.T, e *env) foreign {
	t.Helper()
	ctx := context.Background()
	h := vppcalls.NewHandler(e.m)
	loop, err := h.CreateLoopback(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetAdminUp(ctx, loop, true); err != nil {
		t.Fatal(err)
	}
	if err := h.AddAddress(ctx, loop, netip.MustParsePrefix("10.10.0.1/24")); err != nil {
		t.Fatal(err)
	}
	var tap uint32 = vppcalls.NoIndex
	if ok, why := e.vpp.CanCreateTap(); ok {
		if tap, err = h.CreateTap(ctx, vppcalls.TapParams{}); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Logf("no foreign TAP interface: %s", why)
	}
	hand, err := h.CreateLoopback(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetTag(ctx, hand, "made by hand"); err != nil {
		t.Fatal(err)
	}
	f := foreign{all: []string{"local0"}}
	for _, i := range e.vpp.NewInterfaces() {
		switch i.SwIfIndex {
		case loop:
			f.loop = i.Name
		case tap:
			f.tap = i.Name
		case hand:
			f.hand = i.Name
		default:
			t.Fatalf("setup: VPP has the interface %s (%d) too", i.Name, i.SwIfIndex)
		}
		f.all = append(f.all, i.Name)
	}
	if f.loop == "" || f.hand == "" || (tap != vppcalls.NoIndex && f.tap == "") {
		t.Fatalf("setup: the foreign interfaces in VPP: %+v", f)
	}
	return f
}

// foreignConfig uses the foreign loopback: a sub-interface of it, an
// unnumbered interface borrowing its address, and an interface of our own.
func foreignConfig(f foreign) []*vppif.Interface {
	un := loop("un1")
	un.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: f.loop}
	return []*vppif.Interface{
		loop("mine", "10.20.0.1/24"),
		un,
		{Name: "sub7", Type: vppif.Interface_SUB_INTERFACE, Enabled: true,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: f.loop, SubId: 7}}},
	}
}

// foreignSnapshot renders what the foreign interfaces are in VPP, read
// back with dumps.
func foreignSnapshot(e *env, f foreign) []string {
	all := e.vpp.DumpInterfaces()
	bridged := map[uint32]bool{}
	for _, b := range e.vpp.DumpBridgeDomains() {
		for _, m := range b.Members {
			bridged[m.SwIfIndex] = true
		}
	}
	var out []string
	for _, n := range f.all {
		k := slices.IndexFunc(all, func(i vpptest.Interface) bool { return i.Name == n })
		if k < 0 {
			out = append(out, n+" missing")
			continue
		}
		i := all[k]
		out = append(out, strings.Join([]string{
			i.Name, "tag=" + i.Tag, "up=" + boolString(i.AdminUp), "addrs=" + addrs(i), "mac=" + i.MAC,
			"vrf=" + boolString(i.IP4Table != 0), "bridge=" + boolString(bridged[i.SwIfIndex]),
		}, " "))
	}
	return out
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// TestForeignInterfacesObtained: interfaces the agent did not create are
// OBTAINED under their VPP names, satisfy the dependencies of configured
// values, and are never changed or deleted by a resync, also by a new agent
// whose configuration dropped values that used them.
func TestForeignInterfacesObtained(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	f := foreignSetup(t, e)
	before := foreignSnapshot(e, f)

	seq := fullResync(t, e.s, foreignConfig(f))
	for _, op := range executed(e.s, seq) {
		if strings.HasPrefix(op, "DELETE") {
			t.Errorf("the first resync deleted something: %v", executed(e.s, seq))
			break
		}
	}
	for _, v := range foreignConfig(f) {
		if got, st := stateOf(e.s, ifplugin.InterfaceKey(v.GetName())); got != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED (%v)", v.GetName(), got, st)
		}
	}
	loop0, _ := e.vpp.InterfaceNamed(f.loop)
	if i := e.mustVPP("sub7"); !i.IsSub() || i.SupSwIfIndex != loop0.SwIfIndex || !i.AdminUp {
		t.Errorf("sub7 on the foreign %s: %+v", f.loop, i)
	}
	if i := e.mustVPP("un1"); i.UnnumberedFrom != loop0.SwIfIndex {
		t.Errorf("un1 borrowing from the foreign %s: %+v", f.loop, i)
	}

	// A new agent on the same VPP: nothing to do, everything as it was.
	e.s.Close()
	e.s = e.newScheduler(ifplugin.New(e.m, quiet))
	seq = fullResync(t, e.s, foreignConfig(f))
	if ops := executed(e.s, seq); len(ops) != 0 {
		t.Errorf("resync of an in-sync VPP executed %v", ops)
	}
	for _, name := range f.all {
		if got, st := stateOf(e.s, ifplugin.InterfaceKey(name)); got != api.ValueStateObtained {
			t.Errorf("foreign %s: %v, want OBTAINED (%v)", name, got, st)
		}
	}
	for _, k := range []string{ifplugin.AdminStateKey(f.loop, true), ifplugin.AddressKey(f.loop, "10.10.0.1/24"), ifplugin.HasIPAddressKey(f.loop)} {
		if got, st := stateOf(e.s, k); got != api.ValueStateObtained {
			t.Errorf("%s: %v, want OBTAINED (%v)", k, got, st)
		}
	}
	if got, st := stateOf(e.s, ifplugin.UnnumberedKey("un1")); got != api.ValueStateConfigured {
		t.Errorf("un1 unnumbered: %v, want CONFIGURED (%v)", got, st)
	}

	// The values as VPP has them, with the metadata other plugins read.
	kvs, err := e.s.DumpValuesByDescriptor(ifplugin.InterfaceDescriptorName, api.CachedView)
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]api.KVWithMetadata{}
	for _, kv := range kvs {
		byKey[kv.Key] = kv
	}
	if f.tap != "" {
		tap := byKey[ifplugin.InterfaceKey(f.tap)]
		if v, _ := tap.Value.(*vppif.Interface); tap.Origin != api.FromSB || v.GetType() != vppif.Interface_TAP || v.GetTap().GetRxRingSize() != 256 {
			t.Errorf("%s: %v", f.tap, tap)
		}
	}
	l0 := byKey[ifplugin.InterfaceKey(f.loop)]
	if v, _ := l0.Value.(*vppif.Interface); v.GetPhysAddress() == "" || !v.GetEnabled() || !slices.Equal(v.GetIpAddresses(), []string{"10.10.0.1/24"}) {
		t.Errorf("%s: %v", f.loop, l0)
	}
	if md, _ := l0.Metadata.(*ifplugin.Metadata); md == nil || !md.Foreign || md.SwIfIndex != loop0.SwIfIndex || md.InternalName != f.loop {
		t.Errorf("%s metadata: %+v", f.loop, l0.Metadata)
	}
	if md, _ := byKey[ifplugin.InterfaceKey("mine")].Metadata.(*ifplugin.Metadata); md == nil || md.Foreign {
		t.Errorf("mine metadata: %+v", md)
	}
	if name, ok := ifplugin.LookupBySwIfIndex(e.s.GetMetadataMap(ifplugin.InterfaceDescriptorName), loop0.SwIfIndex); !ok || name != f.loop {
		t.Errorf("LookupBySwIfIndex(%d) = %q, %v", loop0.SwIfIndex, name, ok)
	}

	// Another new agent whose configuration no longer has the values using
	// the foreign loopback: they are deleted, the foreign interfaces are not
	// touched.
	e.s.Close()
	e.s = e.newScheduler(ifplugin.New(e.m, quiet))
	seq = fullResync(t, e.s, foreignConfig(f)[:1])
	var deleted []string
	for _, op := range executed(e.s, seq) {
		name, isDelete := strings.CutPrefix(op, "DELETE ")
		if !isDelete {
			t.Errorf("resync executed %s", op)
			continue
		}
		deleted = append(deleted, name)
		for _, fn := range f.all {
			if strings.Contains(name, "/"+fn) {
				t.Errorf("resync deleted %s of a foreign interface", name)
			}
		}
	}
	for _, k := range []string{ifplugin.InterfaceKey("un1"), ifplugin.InterfaceKey("sub7")} {
		if !slices.Contains(deleted, k) {
			t.Errorf("%s not deleted: %v", k, deleted)
		}
	}
	if got := foreignSnapshot(e, f); !slices.Equal(got, before) {
		t.Errorf("foreign interfaces changed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	for _, name := range f.all {
		if got, _ := stateOf(e.s, ifplugin.InterfaceKey(name)); got != api.ValueStateObtained {
			t.Errorf("foreign %s: %v after the resync, want OBTAINED", name, got)
		}
	}
	// The foreign ones the test made (local0 aside) and mine.
	if got := e.newInterfaces(); len(got) != len(f.all) {
		t.Errorf("VPP has the new interfaces %v, want the %d foreign ones and mine", got, len(f.all)-1)
	}
}

// TestForeignNameTakenByConfiguration: a configured interface named like a
// foreign one gets an interface of its own; the foreign one is left alone,
// whether the name is configured before the first resync or while the
// foreign interface is OBTAINED.
func TestForeignNameTakenByConfiguration(t *testing.T) {
	for _, c := range []struct {
		name   string
		resync bool
	}{{"at resync", true}, {"after resync", false}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, vppsim.Options{})
			f := foreignSetup(t, e)
			before := foreignSnapshot(e, f)
			mine := loop(f.loop, "10.30.0.1/24")
			if c.resync {
				fullResync(t, e.s, []*vppif.Interface{mine})
			} else {
				fullResync(t, e.s, nil)
				if got, _ := stateOf(e.s, ifplugin.InterfaceKey(f.loop)); got != api.ValueStateObtained {
					t.Fatalf("foreign %s: %v, want OBTAINED", f.loop, got)
				}
				seq := e.commit(mine)
				if ops := executed(e.s, seq); !slices.Contains(ops, "CREATE "+ifplugin.InterfaceKey(f.loop)) {
					t.Errorf("taking the name over executed %v, want a CREATE", ops)
				}
			}
			if got, st := stateOf(e.s, ifplugin.InterfaceKey(f.loop)); got != api.ValueStateConfigured {
				t.Errorf("%s: %v, want CONFIGURED (%v)", f.loop, got, st)
			}
			i := e.mustVPP(f.loop)
			if i.Name == f.loop || addrs(i) != "10.30.0.1/24" || !i.AdminUp {
				t.Errorf("the configured %s in VPP: %+v", f.loop, i)
			}
			if got := foreignSnapshot(e, f); !slices.Equal(got, before) {
				t.Errorf("foreign interfaces changed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
			}
			// And a resync finds everything in place.
			seq := fullResync(t, e.s, []*vppif.Interface{mine})
			if ops := executed(e.s, seq); len(ops) != 0 {
				t.Errorf("second resync executed %v", ops)
			}
			// Deleting the configured one deletes ours only.
			e.del(f.loop)
			if _, ok := e.tagged(f.loop); ok {
				t.Errorf("the configured %s is still in VPP", f.loop)
			}
			if got := foreignSnapshot(e, f); !slices.Equal(got, before) {
				t.Errorf("foreign interfaces changed by the delete:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}

// TestLocal0InDumps: local0, VPP's own interface, is OBTAINED. The model has
// no interface type for it, so its value says UNDEFINED_TYPE (which JSON
// leaves out) and its metadata says what VPP calls it (DevType "local"),
// in the scheduler's SB dump as in the REST dump.
func TestLocal0InDumps(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	fullResync(t, e.s, nil)
	key := ifplugin.InterfaceKey("local0")
	if got, st := stateOf(e.s, key); got != api.ValueStateObtained {
		t.Fatalf("local0: %v, want OBTAINED (%v)", got, st)
	}
	kvs, err := e.s.DumpValuesByDescriptor(ifplugin.InterfaceDescriptorName, api.SBView)
	if err != nil {
		t.Fatal(err)
	}
	k := slices.IndexFunc(kvs, func(kv api.KVWithMetadata) bool { return kv.Key == key })
	if k < 0 {
		t.Fatalf("SB dump has no %s: %v", key, kvs)
	}
	v, _ := kvs[k].Value.(*vppif.Interface)
	md, _ := kvs[k].Metadata.(*ifplugin.Metadata)
	if v.GetName() != "local0" || v.GetType() != vppif.Interface_UNDEFINED_TYPE || kvs[k].Origin != api.FromSB {
		t.Errorf("local0 in the SB dump: %v (origin %v), want name local0, UNDEFINED_TYPE, from-SB", v, kvs[k].Origin)
	}
	if md == nil || md.DevType != "local" || !md.Foreign || md.SwIfIndex != 0 || md.InternalName != "local0" {
		t.Errorf("local0's metadata %+v, want DevType local, foreign, sw_if_index 0", md)
	}

	rec := httptest.NewRecorder()
	rest.NewHandler(e.s, rest.Options{}).ServeHTTP(rec, httptest.NewRequest("GET", "/scheduler/dump?descriptor="+ifplugin.InterfaceDescriptorName+"&view=SB", nil))
	type dumped struct {
		Key      string          `json:"key"`
		Origin   string          `json:"origin"`
		Metadata json.RawMessage `json:"metadata"`
	}
	var ans struct {
		Values []dumped `json:"values"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ans); err != nil || rec.Code != 200 {
		t.Fatalf("REST dump: %d %v: %s", rec.Code, err, rec.Body)
	}
	k = slices.IndexFunc(ans.Values, func(x dumped) bool { return x.Key == key })
	if k < 0 {
		t.Fatalf("REST dump has no %s: %s", key, rec.Body)
	}
	var restMD map[string]any
	if err := json.Unmarshal(ans.Values[k].Metadata, &restMD); err != nil {
		t.Fatal(err)
	}
	if restMD["dev_type"] != "local" || ans.Values[k].Origin != "from-SB" {
		t.Errorf("local0 in the REST dump: origin %s, metadata %s; want from-SB and dev_type local", ans.Values[k].Origin, ans.Values[k].Metadata)
	}
	if _, ok := restMD["Value"]; ok {
		t.Errorf("local0's REST metadata repeats the value: %s", ans.Values[k].Metadata)
	}
}
