package natplugin_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"testing"
	"time"

	govppapi "go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip_types"
	nat "go.fd.io/govpp/binapi/nat44_ed"
	"go.fd.io/govpp/binapi/nat_types"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/natplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	"github.com/netagent-io/netagent/tests/vppsim"
)

func TestMain(m *testing.M) {
	vpptest.QuickHealthChecks(50 * time.Millisecond)
	vpptest.Main(m)
}

// env is one test: a VPP (a vppsim of the test's own, or the real VPP), a
// vppconn.Manager connected to it, and a scheduler with the interface
// stand-in (loopbacks tagged with their names) and the plugin's
// descriptors.
type env struct {
	t   *testing.T
	vpp *vpptest.VPP
	sim *vppsim.Sim // nil on a real VPP
	m   *vppconn.Manager
	s   *kvscheduler.Scheduler
	p   *natplugin.Plugin
}

// readArea is the area of the tests' own reads and writes of VPP's NAT
// (never disabled: registered with no Manager).
const readArea = "nattest"

func newEnv(t *testing.T) *env {
	t.Helper()
	v := vpptest.Start(t, vpptest.Options{Areas: []vppconn.Area{natplugin.New(nil, nil, nil).Area()}})
	e := &env{t: t, vpp: v, sim: v.Sim, m: v.M}
	// NAT44 is global: the test leaves it as it found it, disabled (which
	// removes every NAT setting), before vpptest removes its interfaces.
	if e.natEnabled() {
		if v.Real() {
			t.Skipf("NAT44 is enabled in the VPP at %s: the NAT tests need it disabled (they disable it at their end)", v.Socket)
		}
		t.Fatal("vppsim starts with NAT44 enabled")
	}
	t.Cleanup(func() {
		err := e.tryCall(func(ctx context.Context, c nat.RPCService) error {
			_, err := c.Nat44EdPluginEnableDisable(ctx, &nat.Nat44EdPluginEnableDisable{Enable: false})
			if vppconn.IsVPPError(err, govppapi.FEATURE_ALREADY_DISABLED) {
				return nil
			}
			return err
		})
		if err != nil {
			t.Errorf("disabling NAT44 at the end of the test: %v", err)
		}
	})
	e.startScheduler()
	return e
}

// startScheduler starts a new scheduler and plugin (the agent starting, or
// restarting against the same VPP).
func (e *env) startScheduler() {
	if e.s != nil {
		e.s.Close()
	}
	e.s, e.p = vpptest.StartAgent(e.t, e.m, natplugin.New, vpptest.InterfaceStandInValues(e.m))
}

// kv is a value of a transaction (value nil: deleted).
type kv struct {
	key   string
	value proto.Message
}

func (x kv) KeyValue() (string, proto.Message) { return x.key, x.value }

func iface(name string) kv { return kv{ifplugin.InterfaceKey(name), vpptest.Loopback(name)} }
func del(key string) kv    { return kv{key, nil} }

func logger(t *testing.T, level slog.Level) *slog.Logger { return vpptest.Logger(t, level) }

func (e *env) mustCommit(kvs ...kv) uint64        { e.t.Helper(); return vpptest.MustCommit(e.t, e.s, kvs...) }
func (e *env) executed(seq uint64) []string       { e.t.Helper(); return vpptest.Executed(e.t, e.s, seq) }
func (e *env) state(key string) api.ValueState    { return vpptest.State(e.s, key) }
func (e *env) status(key string) *api.ValueStatus { return vpptest.Status(e.s, key) }
func (e *env) swIfIndex(name string) uint32       { e.t.Helper(); return e.vpp.SwIfIndex(name) }

func (e *env) commit(kvs ...kv) (uint64, error) {
	return vpptest.Commit(context.Background(), e.s, api.TxnOptions{}, kvs...)
}

func (e *env) resync(typ api.ResyncType, kvs ...kv) (uint64, error) {
	return vpptest.Resync(e.s, typ, kvs...)
}

// mustResync commits a full resync of kvs and fails the test on an error.
func (e *env) mustResync(kvs ...kv) uint64 {
	e.t.Helper()
	seq, err := e.resync(api.FullResync, kvs...)
	if err != nil {
		e.t.Fatalf("full resync: %v", err)
	}
	return seq
}

// wantState fails the test unless key is in state st.
func (e *env) wantState(key string, st api.ValueState) {
	e.t.Helper()
	if got := e.state(key); got != st {
		e.t.Errorf("%s: %v (%v), want %v", key, got, e.status(key).GetError(), st)
	}
}

// wantNoOps fails the test when transaction seq executed anything.
func (e *env) wantNoOps(what string, seq uint64) {
	e.t.Helper()
	if ops := e.executed(seq); len(ops) > 0 {
		e.t.Errorf("%s executed %v, want nothing", what, ops)
	}
}

// writes lists the requests that changed VPP since resetCalls, from
// vppsim's log; ok is false on a real VPP, which keeps no such log.
func (e *env) writes() (w []string, ok bool) {
	if e.sim == nil {
		return nil, false
	}
	return vpptest.Writes(e.sim), true
}

func (e *env) resetCalls() {
	if e.sim != nil {
		e.sim.ResetCalls()
	}
}

// --- VPP's NAT44, read and changed with the binary API directly (not with
// the plugin's handler, so that the tests do not check its reading of VPP
// with itself) ------------------------------------------------------------

func (e *env) tryCall(f func(ctx context.Context, c nat.RPCService) error) error {
	conn, err := e.m.Conn(readArea)
	if err != nil {
		return err
	}
	ctx, cancel := e.m.CallContext(context.Background())
	defer cancel()
	return f(ctx, nat.NewServiceClient(conn))
}

func (e *env) call(what string, f func(ctx context.Context, c nat.RPCService) error) {
	e.t.Helper()
	if err := e.tryCall(f); err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

func natDump[T govppapi.Message](e *env, req govppapi.Message) []T {
	e.t.Helper()
	conn, err := e.m.Conn(readArea)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := e.m.CallContext(context.Background())
	defer cancel()
	out, err := vppconn.Dump[T](ctx, conn, req)
	if err != nil {
		e.t.Fatalf("%s: %v", req.GetMessageName(), err)
	}
	return out
}

func (e *env) natEnabled() bool {
	e.t.Helper()
	var on bool
	e.call("nat44_show_running_config", func(ctx context.Context, c nat.RPCService) error {
		r, err := c.Nat44ShowRunningConfig(ctx, &nat.Nat44ShowRunningConfig{})
		on = err == nil && r.Sessions != 0
		return err
	})
	return on
}

func (e *env) forwarding() bool {
	e.t.Helper()
	var on bool
	e.call("nat44_show_running_config", func(ctx context.Context, c nat.RPCService) error {
		r, err := c.Nat44ShowRunningConfig(ctx, &nat.Nat44ShowRunningConfig{})
		on = err == nil && r.ForwardingEnabled
		return err
	})
	return on
}

// natInterfaces lists VPP's NAT interfaces, "<sw_if_index>:in", ":out",
// ":in+out" or ":output", sorted.
func (e *env) natInterfaces() []string {
	e.t.Helper()
	var out []string
	for _, d := range natDump[*nat.Nat44InterfaceDetails](e, &nat.Nat44InterfaceDump{}) {
		var sides []string
		if d.Flags&nat_types.NAT_IS_INSIDE != 0 {
			sides = append(sides, "in")
		}
		if d.Flags&nat_types.NAT_IS_OUTSIDE != 0 {
			sides = append(sides, "out")
		}
		s := fmt.Sprintf("%d:", d.SwIfIndex)
		for i, side := range sides {
			if i > 0 {
				s += "+"
			}
			s += side
		}
		out = append(out, s)
	}
	conn, err := e.m.Conn(readArea)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := e.m.CallContext(context.Background())
	defer cancel()
	stream, err := conn.NewStream(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	defer func() { _ = stream.Close() }()
	if err := stream.SendMsg(&nat.Nat44EdOutputInterfaceGet{}); err != nil {
		e.t.Fatal(err)
	}
	for {
		m, err := stream.RecvMsg()
		if err != nil {
			e.t.Fatalf("nat44_ed_output_interface_get: %v", err)
		}
		if d, ok := m.(*nat.Nat44EdOutputInterfaceDetails); ok {
			out = append(out, fmt.Sprintf("%d:output", d.SwIfIndex))
			continue
		}
		if r, ok := m.(*nat.Nat44EdOutputInterfaceGetReply); !ok || r.Retval != 0 {
			e.t.Fatalf("nat44_ed_output_interface_get: %#v", m)
		}
		break
	}
	sort.Strings(out)
	return out
}

// natAddresses lists VPP's NAT addresses, "<ip> vrf <vrf>[ twice]", sorted.
func (e *env) natAddresses() []string {
	e.t.Helper()
	var out []string
	for _, d := range natDump[*nat.Nat44AddressDetails](e, &nat.Nat44AddressDump{}) {
		s := fmt.Sprintf("%s vrf %d", d.IPAddress, int32(d.VrfID))
		if d.Flags&nat_types.NAT_IS_TWICE_NAT != 0 {
			s += " twice"
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// staticMappings lists VPP's static mappings (load-balanced ones too),
// "<tag>: <proto> <ext>:<port> -> <local>:<port>[ vrf N][ flags]", sorted.
func (e *env) staticMappings() []string {
	e.t.Helper()
	var out []string
	for _, d := range natDump[*nat.Nat44StaticMappingDetails](e, &nat.Nat44StaticMappingDump{}) {
		ext := d.ExternalIPAddress.String()
		if d.ExternalSwIfIndex != interface_types.InterfaceIndex(vpptest.NoIndex) {
			ext = fmt.Sprintf("if%d", d.ExternalSwIfIndex)
		}
		s := fmt.Sprintf("%s: %d %s:%d -> %s:%d", d.Tag, d.Protocol, ext, d.ExternalPort, d.LocalIPAddress, d.LocalPort)
		if d.VrfID != 0 {
			s += fmt.Sprintf(" vrf %d", d.VrfID)
		}
		if d.Flags != 0 {
			s += " " + d.Flags.String()
		}
		out = append(out, s)
	}
	for _, d := range natDump[*nat.Nat44LbStaticMappingDetails](e, &nat.Nat44LbStaticMappingDump{}) {
		s := fmt.Sprintf("%s: %d %s:%d -> lb", d.Tag, d.Protocol, d.ExternalAddr, d.ExternalPort)
		var locals []string
		for _, l := range d.Locals {
			locals = append(locals, fmt.Sprintf(" %s:%d/%d", l.Addr, l.Port, l.Probability))
		}
		sort.Strings(locals)
		for _, l := range locals {
			s += l
		}
		if d.Flags != 0 {
			s += " " + d.Flags.String()
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// identityMappings lists VPP's identity mappings,
// "<tag>: <proto> <ip or ifN>:<port> vrf <vrf>[ flags]", sorted.
func (e *env) identityMappings() []string {
	e.t.Helper()
	var out []string
	for _, d := range natDump[*nat.Nat44IdentityMappingDetails](e, &nat.Nat44IdentityMappingDump{}) {
		at := d.IPAddress.String()
		if d.SwIfIndex != interface_types.InterfaceIndex(vpptest.NoIndex) {
			at = fmt.Sprintf("if%d", d.SwIfIndex)
		}
		s := fmt.Sprintf("%s: %d %s:%d vrf %d", d.Tag, d.Protocol, at, d.Port, d.VrfID)
		if d.Flags != 0 {
			s += " " + d.Flags.String()
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// addAddress gives interface sw an IPv4 address (10.x.y.z/24).
func (e *env) addAddress(sw uint32, addr string) {
	e.t.Helper()
	a, err := ip_types.ParseAddressWithPrefix(addr)
	if err != nil {
		e.t.Fatal(err)
	}
	conn, err := e.m.Conn(readArea)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := e.m.CallContext(context.Background())
	defer cancel()
	if _, err := interfaces.NewServiceClient(conn).SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{
		SwIfIndex: interface_types.InterfaceIndex(sw), IsAdd: true, Prefix: a,
	}); err != nil {
		e.t.Fatalf("sw_interface_add_del_address %s on %d: %v", addr, sw, err)
	}
}

// wantList fails the test unless got holds what want holds.
func wantList(t *testing.T, what string, got, want []string) {
	t.Helper()
	// VPP dumps in index order, and a VPP that ran other tests before
	// (VPP_API_SOCKET) reuses freed indexes in another order than
	// creation: the lists are compared as sets.
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Errorf("%s:\n  got  %q\n  want %q", what, got, want)
	}
}

// foreignLoopback creates an untagged loopback (an interface the agent
// does not own) and returns its index.
func (e *env) foreignLoopback(ctx context.Context) uint32 {
	e.t.Helper()
	conn, err := e.m.Conn(readArea)
	if err != nil {
		e.t.Fatal(err)
	}
	r, err := interfaces.NewServiceClient(conn).CreateLoopback(ctx, &interfaces.CreateLoopback{})
	if err != nil {
		e.t.Fatalf("create_loopback: %v", err)
	}
	return uint32(r.SwIfIndex)
}

func (e *env) deleteForeignLoopback(sw uint32) {
	e.t.Helper()
	conn, err := e.m.Conn(readArea)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := e.m.CallContext(context.Background())
	defer cancel()
	if _, err := interfaces.NewServiceClient(conn).DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(sw)}); err != nil {
		e.t.Fatalf("delete_loopback %d: %v", sw, err)
	}
}
