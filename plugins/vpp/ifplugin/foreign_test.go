package ifplugin_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// foreignSetup creates, through VPP's API and not through the agent, an
// untagged loopback (loop0, up, with an address), an untagged TAP (tap0) and
// a loopback whose tag is no logical name ("made by hand"). It returns the
// VPP names of the foreign interfaces, local0 included.
func foreignSetup(t *testing.T, e *env) []string {
	t.Helper()
	ctx := context.Background()
	h := vppcalls.NewHandler(e.m)
	loop0, err := h.CreateLoopback(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetAdminUp(ctx, loop0, true); err != nil {
		t.Fatal(err)
	}
	if err := h.AddAddress(ctx, loop0, netip.MustParsePrefix("10.10.0.1/24")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreateTap(ctx, vppcalls.TapParams{}); err != nil {
		t.Fatal(err)
	}
	hand, err := h.CreateLoopback(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.SetTag(ctx, hand, "made by hand"); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, i := range e.sim.Interfaces() {
		names = append(names, i.Name)
	}
	if !slices.Equal(names, []string{"local0", "loop0", "tap0", "loop1"}) {
		t.Fatalf("setup: VPP has %v", names)
	}
	return names
}

// foreignConfig uses the foreign loop0: a sub-interface of it, an
// unnumbered interface borrowing its address, and an interface of our own.
func foreignConfig() []*vppif.Interface {
	un := loop("un1")
	un.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: "loop0"}
	return []*vppif.Interface{
		loop("mine", "10.20.0.1/24"),
		un,
		{Name: "sub7", Type: vppif.Interface_SUB_INTERFACE, Enabled: true,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "loop0", SubId: 7}}},
	}
}

// foreignSnapshot renders what the foreign interfaces are in VPP.
func foreignSnapshot(e *env, names []string) []string {
	var out []string
	for _, n := range names {
		i, ok := e.sim.Interface(n)
		if !ok {
			out = append(out, n+" missing")
			continue
		}
		out = append(out, strings.Join([]string{
			i.Name, "tag=" + i.Tag, "up=" + boolString(i.AdminUp), "addrs=" + addrs(i), "mac=" + i.MAC.String(),
			"vrf=" + boolString(i.IP4Table != 0), "bridge=" + boolString(i.Bridge != nil),
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
	foreign := foreignSetup(t, e)
	before := foreignSnapshot(e, foreign)

	seq := fullResync(t, e.s, foreignConfig())
	for _, op := range executed(e.s, seq) {
		if strings.HasPrefix(op, "DELETE") {
			t.Errorf("the first resync deleted something: %v", executed(e.s, seq))
			break
		}
	}
	for _, v := range foreignConfig() {
		if got, st := stateOf(e.s, ifplugin.InterfaceKey(v.GetName())); got != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED (%v)", v.GetName(), got, st)
		}
	}
	loop0, _ := e.sim.Interface("loop0")
	if i := e.mustVPP("sub7"); i.Sub == nil || i.Sub.Parent != loop0.SwIfIndex || !i.AdminUp {
		t.Errorf("sub7 on the foreign loop0: %+v", i)
	}
	if i := e.mustVPP("un1"); !i.Unnumbered || i.UnnumberedFrom != loop0.SwIfIndex {
		t.Errorf("un1 borrowing from the foreign loop0: %+v", i)
	}

	// A new agent on the same VPP: nothing to do, everything as it was.
	e.s.Close()
	e.s = e.newScheduler(ifplugin.New(e.m, quiet))
	seq = fullResync(t, e.s, foreignConfig())
	if ops := executed(e.s, seq); len(ops) != 0 {
		t.Errorf("resync of an in-sync VPP executed %v", ops)
	}
	for _, name := range foreign {
		if got, st := stateOf(e.s, ifplugin.InterfaceKey(name)); got != api.ValueStateObtained {
			t.Errorf("foreign %s: %v, want OBTAINED (%v)", name, got, st)
		}
	}
	for _, k := range []string{ifplugin.AdminStateKey("loop0", true), ifplugin.AddressKey("loop0", "10.10.0.1/24"), ifplugin.HasIPAddressKey("loop0")} {
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
	tap := byKey[ifplugin.InterfaceKey("tap0")]
	if v, _ := tap.Value.(*vppif.Interface); tap.Origin != api.FromSB || v.GetType() != vppif.Interface_TAP || v.GetTap().GetRxRingSize() != 256 {
		t.Errorf("tap0: %v", tap)
	}
	l0 := byKey[ifplugin.InterfaceKey("loop0")]
	if v, _ := l0.Value.(*vppif.Interface); v.GetPhysAddress() == "" || !v.GetEnabled() || !slices.Equal(v.GetIpAddresses(), []string{"10.10.0.1/24"}) {
		t.Errorf("loop0: %v", l0)
	}
	if md, _ := l0.Metadata.(*ifplugin.Metadata); md == nil || !md.Foreign || md.SwIfIndex != loop0.SwIfIndex || md.InternalName != "loop0" {
		t.Errorf("loop0 metadata: %+v", l0.Metadata)
	}
	if md, _ := byKey[ifplugin.InterfaceKey("mine")].Metadata.(*ifplugin.Metadata); md == nil || md.Foreign {
		t.Errorf("mine metadata: %+v", md)
	}
	if name, ok := ifplugin.LookupBySwIfIndex(e.s.GetMetadataMap(ifplugin.InterfaceDescriptorName), loop0.SwIfIndex); !ok || name != "loop0" {
		t.Errorf("LookupBySwIfIndex(%d) = %q, %v", loop0.SwIfIndex, name, ok)
	}

	// Another new agent whose configuration no longer has the values using
	// loop0: they are deleted, the foreign interfaces are not touched.
	e.s.Close()
	e.s = e.newScheduler(ifplugin.New(e.m, quiet))
	seq = fullResync(t, e.s, foreignConfig()[:1])
	var deleted []string
	for _, op := range executed(e.s, seq) {
		name, isDelete := strings.CutPrefix(op, "DELETE ")
		if !isDelete {
			t.Errorf("resync executed %s", op)
			continue
		}
		deleted = append(deleted, name)
		for _, f := range foreign {
			if strings.Contains(name, "/"+f) {
				t.Errorf("resync deleted %s of a foreign interface", name)
			}
		}
	}
	for _, k := range []string{ifplugin.InterfaceKey("un1"), ifplugin.InterfaceKey("sub7")} {
		if !slices.Contains(deleted, k) {
			t.Errorf("%s not deleted: %v", k, deleted)
		}
	}
	if got := foreignSnapshot(e, foreign); !slices.Equal(got, before) {
		t.Errorf("foreign interfaces changed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
	}
	for _, name := range foreign {
		if got, _ := stateOf(e.s, ifplugin.InterfaceKey(name)); got != api.ValueStateObtained {
			t.Errorf("foreign %s: %v after the resync, want OBTAINED", name, got)
		}
	}
	if n := len(e.sim.Interfaces()); n != len(foreign)+1 {
		t.Errorf("VPP has %d interfaces, want the %d foreign ones and mine: %+v", n, len(foreign), e.sim.Interfaces())
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
			foreign := foreignSetup(t, e)
			before := foreignSnapshot(e, foreign)
			mine := loop("loop0", "10.30.0.1/24")
			if c.resync {
				fullResync(t, e.s, []*vppif.Interface{mine})
			} else {
				fullResync(t, e.s, nil)
				if got, _ := stateOf(e.s, ifplugin.InterfaceKey("loop0")); got != api.ValueStateObtained {
					t.Fatalf("foreign loop0: %v, want OBTAINED", got)
				}
				seq := e.commit(mine)
				if ops := executed(e.s, seq); !slices.Contains(ops, "CREATE "+ifplugin.InterfaceKey("loop0")) {
					t.Errorf("taking the name over executed %v, want a CREATE", ops)
				}
			}
			if got, st := stateOf(e.s, ifplugin.InterfaceKey("loop0")); got != api.ValueStateConfigured {
				t.Errorf("loop0: %v, want CONFIGURED (%v)", got, st)
			}
			i := e.mustVPP("loop0")
			if i.Name == "loop0" || addrs(i) != "10.30.0.1/24" || !i.AdminUp {
				t.Errorf("the configured loop0 in VPP: %+v", i)
			}
			if got := foreignSnapshot(e, foreign); !slices.Equal(got, before) {
				t.Errorf("foreign interfaces changed:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(before, "\n"))
			}
			// And a resync finds everything in place.
			seq := fullResync(t, e.s, []*vppif.Interface{mine})
			if ops := executed(e.s, seq); len(ops) != 0 {
				t.Errorf("second resync executed %v", ops)
			}
			// Deleting the configured one deletes ours only.
			e.del("loop0")
			if _, ok := e.vpp("loop0"); ok {
				t.Error("the configured loop0 is still in VPP")
			}
			if got := foreignSnapshot(e, foreign); !slices.Equal(got, before) {
				t.Errorf("foreign interfaces changed by the delete:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}
