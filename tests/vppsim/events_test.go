package vppsim_test

import (
	"os"
	"testing"

	"go.fd.io/govpp"
	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/tests/vpprun"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// TestInterfaceEventsAsVPP: the sw_interface_event messages the simulator
// sends for what a client does are VPP 25.10's. The same body runs against
// a real VPP when the environment gives one (NETAGENT_VPP_DIR or
// VPP_API_SOCKET; see package vpprun). Each step waits for its event
// before the next, so a step VPP sends no event for (a tag, an address,
// an admin up of an up interface) shows as the next step's event coming
// first.
func TestInterfaceEventsAsVPP(t *testing.T) {
	t.Run("vppsim", func(t *testing.T) {
		s := startSim(t, vppsim.Options{})
		interfaceEventsAsVPP(t, s.SocketPath())
	})
	t.Run("VPP", func(t *testing.T) {
		if os.Geteuid() != 0 && vpprun.Dir() != "" {
			t.Skipf("a VPP of the tests' own (%s) needs root", vpprun.DirEnv)
		}
		v, err := vpprun.ForTests()
		if err != nil {
			t.Fatal(err)
		}
		if v == nil {
			t.Skipf("no real VPP: set %s or %s", vpprun.DirEnv, vpprun.SocketEnv)
		}
		unlock, err := vpprun.Lock(v.Socket)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		interfaceEventsAsVPP(t, v.Socket)
	})
}

func interfaceEventsAsVPP(t *testing.T, socket string) {
	dial := func() api.Connection {
		conn, err := govpp.Connect(socket)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(conn.Disconnect)
		return conn
	}
	sub, actor := dial(), dial()
	w, err := sub.WatchEvent(ctx, &interfaces.SwInterfaceEvent{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	subc := interfaces.NewServiceClient(sub)
	must(subc.WantInterfaceEvents(ctx, &interfaces.WantInterfaceEvents{EnableDisable: 1, PID: 78}))(t)
	defer func() {
		_, _ = subc.WantInterfaceEvents(ctx, &interfaces.WantInterfaceEvents{EnableDisable: 0, PID: 78})
	}()

	const (
		up   = interface_types.IF_STATUS_API_FLAG_ADMIN_UP
		link = interface_types.IF_STATUS_API_FLAG_LINK_UP
	)
	ic := interfaces.NewServiceClient(actor)
	want := func(step string, idx interface_types.InterfaceIndex, flags interface_types.IfStatusFlags, deleted bool) {
		t.Helper()
		e := nextEvent(t, w)
		if e.SwIfIndex != idx || e.Flags != flags || e.Deleted != deleted || e.PID != 78 {
			t.Errorf("%s: event %+v, want sw_if_index %d flags %v deleted %v", step, e, idx, flags, deleted)
		}
	}
	setFlags := func(idx interface_types.InterfaceIndex, flags interface_types.IfStatusFlags) {
		t.Helper()
		must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: idx, Flags: flags}))(t)
	}

	loop := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	want("create_loopback", loop, 0, false)
	must(ic.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: loop, Tag: "events"}))(t)
	addr := must(ip_types.ParseAddressWithPrefix("10.251.0.1/24"))(t)
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: loop, IsAdd: true, Prefix: addr}))(t)
	setFlags(loop, up)
	want("admin up (after a tag and an address, which send none)", loop, up|link, false)
	setFlags(loop, up)
	setFlags(loop, 0)
	want("admin down (after an admin up of an up interface, which sends none)", loop, 0, false)

	sub1 := must(ic.CreateSubif(ctx, &interfaces.CreateSubif{SwIfIndex: loop, SubID: 10, OuterVlanID: 10,
		SubIfFlags: interface_types.SUB_IF_API_FLAG_ONE_TAG | interface_types.SUB_IF_API_FLAG_EXACT_MATCH}))(t).SwIfIndex
	want("create_subif", sub1, 0, false)
	setFlags(loop, up)
	want("parent admin up (none for its sub-interface)", loop, up|link, false)
	setFlags(sub1, up)
	want("sub-interface admin up", sub1, up, false)
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: loop}))(t)
	want("delete_loopback of the parent", loop, 0, true)
	want("delete_loopback of the parent, its sub-interface", sub1, 0, true)

	loop = must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	want("create_loopback", loop, 0, false)
	must(ic.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: loop}))(t)
	want("delete_loopback of a down interface", loop, 0, true)
}
