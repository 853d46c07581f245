package ifplugin_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// batchDescriptor returns the plugin's descriptor of that name.
func (e *env) batchDescriptor(name string) *api.KVDescriptor {
	e.t.Helper()
	for _, d := range e.p.Descriptors() {
		if d.Name == name {
			if d.Batch == nil {
				e.t.Fatalf("descriptor %s has no Batch", name)
			}
			return d
		}
	}
	e.t.Fatalf("no descriptor %s", name)
	return nil
}

// results returns the error of each op ("" for success), failing on an op
// without a result.
func results(t *testing.T, ops []api.BatchOp) []string {
	t.Helper()
	out := make([]string, len(ops))
	for i := range ops {
		_, err, finished := ops[i].Result()
		if !finished {
			t.Fatalf("op %d (%s) has no result", i, ops[i].Key)
		}
		if err != nil {
			out[i] = err.Error()
		}
	}
	return out
}

// TestInterfaceBatch: a batch of loopback creates (one with a MAC VPP
// cannot take, one with an MTU) creates them step by step, pipelined: each
// op gets its own result, the metadata of each names the loopback VPP made
// (index and VPP's name, read back with dumps), the bad one fails alone.
func TestInterfaceBatch(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	d := e.batchDescriptor(ifplugin.InterfaceDescriptorName)
	names := []string{"x1", "x2", "bad", "x3", "x4"}
	ops := make([]api.BatchOp, len(names))
	for i, n := range names {
		v := loop(n)
		if n == "bad" {
			v.PhysAddress = "not-a-mac"
		}
		if n == "x3" {
			v.Mtu = 1400
		}
		ops[i] = api.BatchOp{Op: api.OpCreate, Key: ifplugin.InterfaceKey(n), To: v}
	}
	d.Batch(context.Background(), ops)
	errs := results(t, ops)
	for i, n := range names {
		if n == "bad" {
			if !strings.Contains(errs[i], "phys_address") {
				t.Errorf("op %s: %q, want the bad MAC's error", n, errs[i])
			}
			if _, ok := e.tagged(n); ok {
				t.Errorf("VPP has an interface tagged %s", n)
			}
			continue
		}
		if errs[i] != "" {
			t.Fatalf("op %s: %s", n, errs[i])
		}
		md, _, _ := ops[i].Result()
		m := md.(*ifplugin.Metadata)
		got := e.mustVPP(n)
		if m.SwIfIndex != got.SwIfIndex || m.InternalName != got.Name || m.DevType != "Loopback" || !strings.HasPrefix(got.Name, "loop") {
			t.Errorf("op %s: metadata %+v, VPP has %s at %d", n, m, got.Name, got.SwIfIndex)
		}
		if n == "x3" && got.MTU[0] != 1400 {
			t.Errorf("x3: MTU %v, want 1400", got.MTU)
		}
	}
}

// TestAddressAndAdminStateBatch: a batch of address creates where VPP
// refuses one (its subnet overlaps another interface's): that one fails
// with its own error naming the other interface, the others are applied
// (read back with dumps). A batch of admin state creates where one
// interface is unknown: that one fails, the others are up.
func TestAddressAndAdminStateBatch(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	a, b := loop("a", "10.1.0.1/24"), loop("b")
	a.Enabled, b.Enabled = false, false
	e.commit(a, b)

	addr := func(name, cidr string) api.BatchOp {
		return api.BatchOp{Op: api.OpCreate, Key: ifplugin.AddressKey(name, cidr), To: &vppif.Interface{Name: name, IpAddresses: []string{cidr}}}
	}
	ops := []api.BatchOp{addr("b", "10.2.0.1/24"), addr("b", "10.1.0.5/24"), addr("b", "10.3.0.1/24"), addr("a", "10.4.0.1/24")}
	e.batchDescriptor(ifplugin.AddressDescriptorName).Batch(context.Background(), ops)
	errs := results(t, ops)
	if errs[0] != "" || errs[2] != "" || errs[3] != "" {
		t.Errorf("address ops: %q, want the 1st, 3rd and 4th to succeed", errs)
	}
	if !strings.Contains(errs[1], "overlaps 10.1.0.1/24 of interface a") {
		t.Errorf("address 10.1.0.5/24 of b: %q, want VPP's refusal naming a's address", errs[1])
	}
	if got := addrs(e.mustVPP("b")); got != "10.2.0.1/24,10.3.0.1/24" {
		t.Errorf("b has %s, want 10.2.0.1/24,10.3.0.1/24", got)
	}
	if got := addrs(e.mustVPP("a")); got != "10.1.0.1/24,10.4.0.1/24" {
		t.Errorf("a has %s, want 10.1.0.1/24,10.4.0.1/24", got)
	}

	up := func(name string) api.BatchOp {
		return api.BatchOp{Op: api.OpCreate, Key: ifplugin.AdminStateKey(name, true), To: &vppif.Interface{Name: name, Enabled: true}}
	}
	ops = []api.BatchOp{up("a"), up("nowhere"), up("b")}
	e.batchDescriptor(ifplugin.AdminStateDescriptorName).Batch(context.Background(), ops)
	errs = results(t, ops)
	if errs[0] != "" || errs[2] != "" || !strings.Contains(errs[1], "nowhere is not known") {
		t.Errorf("admin state ops: %q, want a and b up, nowhere not known", errs)
	}
	for _, n := range []string{"a", "b"} {
		if !e.mustVPP(n).AdminUp {
			t.Errorf("%s is down in VPP", n)
		}
	}
	if slices.Contains(e.untagged(), "") {
		t.Errorf("untagged interfaces: %v", e.untagged())
	}
}

// TestDeleteBatch: loopbacks deleted in one transaction with their
// addresses and admin states go pipelined, each batch checking its
// interfaces against one sw_interface_dump: an interface whose index now
// carries another tag (someone else's) is left alone with its settings,
// one already gone is deleted with success, the others are gone from VPP.
func TestDeleteBatch(t *testing.T) {
	e := newEnv(t, vppsim.Options{})
	e.commit(loop("da", "10.61.0.1/24"), loop("db", "10.62.0.1/24"), loop("dc", "10.63.0.1/24"), loop("dd", "10.64.0.1/24"))
	ic := e.interfacesClient()
	ctx := context.Background()
	dc, dd := e.mustVPP("dc"), e.mustVPP("dd")
	if _, err := ic.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: interface_types.InterfaceIndex(dc.SwIfIndex), Tag: "someone"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(dd.SwIfIndex)}); err != nil {
		t.Fatal(err)
	}
	if e.sim != nil {
		e.sim.ResetCalls()
	}
	seq := e.del("da", "db", "dc", "dd")
	var calls []string
	if e.sim != nil {
		calls = e.sim.Calls()
	}
	for _, n := range []string{"da", "db", "dc", "dd"} {
		e.wantState(ifplugin.InterfaceKey(n), api.ValueStateNonexistent)
		if _, ok := e.tagged(n); ok {
			t.Errorf("VPP still has %s", n)
		}
	}
	if got := len(executed(e.s, seq)); got != 12 {
		t.Errorf("executed %d operations, want 12 (4 interfaces, their addresses and admin states): %v", got, executed(e.s, seq))
	}
	other, ok := e.tagged("someone")
	if !ok || !other.AdminUp || addrs(other) != "10.63.0.1/24" || other.SwIfIndex != dc.SwIfIndex {
		t.Errorf("the interface now tagged someone: %+v (found %v), want it left up with 10.63.0.1/24 at %d", other, ok, dc.SwIfIndex)
	}
	if e.sim != nil {
		// One list of the interfaces per batch (admin states, addresses,
		// loopbacks), instead of one dump per Delete.
		if n := countCalls(calls, "sw_interface_dump"); n != 3 {
			t.Errorf("%d sw_interface_dump, want 3: %v", n, calls)
		}
	}
}
