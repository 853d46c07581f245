package ifplugin_test

import (
	"context"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/binapi/ip_types"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
	"github.com/netagent-io/netagent/tests/vppsim"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is a VPP (a vppsim of the test's own, or the real VPP that
// VPP_API_SOCKET names: see vpptest), a vppconn.Manager connected to it, and
// a scheduler with the interface plugin's descriptors.
type env struct {
	t        *testing.T
	vpp      *vpptest.VPP
	sim      *vppsim.Sim // nil on a real VPP
	m        *vppconn.Manager
	s        *kvscheduler.Scheduler
	p        *ifplugin.Plugin
	connects chan bool // one per connect: VPP restarted
}

// newEnv starts the VPP of the test: a vppsim with opts, or the real VPP
// (opts are vppsim's, and not used there).
func newEnv(t *testing.T, opts vppsim.Options) *env {
	t.Helper()
	e := &env{t: t, connects: make(chan bool, 16)}
	e.vpp = vpptest.Start(t, vpptest.Options{
		Sim:         opts,
		CallTimeout: 5 * time.Second,
		Areas:       append(vppcalls.Areas(), l3plugin.New(nil, nil, nil).Area()),
		OnConnect: func(restarted, _ bool) {
			select {
			case e.connects <- restarted:
			default:
			}
		},
	})
	e.sim, e.m = e.vpp.Sim, e.vpp.M
	e.waitConnect(false)
	if st := e.m.Status(); len(st.Disabled) > 0 {
		t.Fatalf("areas disabled at connect: %v", st.Disabled)
	}
	e.p = ifplugin.New(e.m, quiet)
	e.s = e.newScheduler(e.p)
	return e
}

// newScheduler returns a scheduler with p's descriptors and l3plugin's VRF
// table descriptor (the VRF of an interface waits for its tables), closed
// at the end.
func (e *env) newScheduler(p *ifplugin.Plugin) *kvscheduler.Scheduler {
	s := kvscheduler.New(kvscheduler.Options{Logger: quiet})
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		e.t.Fatal(err)
	}
	for _, d := range l3plugin.New(e.m, ifplugin.SchedulerInterfaces(s), quiet).Descriptors() {
		if d.Name != l3plugin.VrfTableDescriptorName {
			continue
		}
		if err := s.RegisterKVDescriptor(d); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Cleanup(s.Close)
	return s
}

// setWithTables puts vs into txn, with the IPv4 and IPv6 VRF tables of
// their VRFs.
func setWithTables(txn api.Txn, vs []*vppif.Interface) {
	tables := map[uint32]bool{}
	for _, v := range vs {
		txn.SetValue(ifplugin.InterfaceKey(v.GetName()), v)
		if vrf := v.GetVrf(); vrf != 0 && !tables[vrf] {
			tables[vrf] = true
			txn.SetValue(models.VrfTableKey(vrf, false), &vppl3.VrfTable{Id: vrf})
			txn.SetValue(models.VrfTableKey(vrf, true), &vppl3.VrfTable{Id: vrf, Protocol: vppl3.VrfTable_IPV6})
		}
	}
}

func (e *env) waitConnect(wantRestarted bool) {
	e.t.Helper()
	deadline := time.After(15 * time.Second)
	for {
		select {
		case restarted := <-e.connects:
			if restarted == wantRestarted {
				return
			}
		case <-deadline:
			e.t.Fatalf("VPP not connected (restarted=%v) within 15 s: %+v", wantRestarted, e.m.Status())
		}
	}
}

func (e *env) commitWith(opts api.TxnOptions, vs ...*vppif.Interface) (uint64, error) {
	txn := e.s.StartNBTransaction()
	setWithTables(txn, vs)
	return txn.Commit(context.Background(), opts)
}

func (e *env) commit(vs ...*vppif.Interface) uint64 {
	e.t.Helper()
	seq, err := e.commitWith(api.TxnOptions{}, vs...)
	if err != nil {
		e.t.Fatalf("commit: %v", err)
	}
	return seq
}

func (e *env) del(names ...string) uint64 {
	e.t.Helper()
	txn := e.s.StartNBTransaction()
	for _, n := range names {
		txn.SetValue(ifplugin.InterfaceKey(n), nil)
	}
	seq, err := txn.Commit(context.Background(), api.TxnOptions{})
	if err != nil {
		e.t.Fatalf("delete: %v", err)
	}
	return seq
}

// state of a base or derived key.
func stateOf(s api.KVScheduler, key string) (api.ValueState, *api.ValueStatus) {
	st := s.GetValueStatus(key)
	if st.GetValue().GetKey() == key {
		return st.GetValue().GetState(), st.GetValue()
	}
	for _, d := range st.GetDerivedValues() {
		if d.GetKey() == key {
			return d.GetState(), d
		}
	}
	return api.ValueStateNonexistent, nil
}

func (e *env) wantState(key string, want api.ValueState) {
	e.t.Helper()
	if got, st := stateOf(e.s, key); got != want {
		e.t.Fatalf("%s is %v, want %v (%v)", key, got, want, st)
	}
}

// waitState polls until key is in the state (10 s at most).
func (e *env) waitState(key string, want api.ValueState) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, st := stateOf(e.s, key)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("%s is %v, want %v within 10 s (%v)", key, got, want, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// tagged returns the interface VPP has tagged with the logical name, read
// back with dumps.
func (e *env) tagged(name string) (vpptest.Interface, bool) {
	e.t.Helper()
	return e.vpp.InterfaceTagged(name)
}

func (e *env) mustVPP(name string) vpptest.Interface {
	e.t.Helper()
	i, ok := e.tagged(name)
	if !ok {
		e.t.Fatalf("VPP has no interface tagged %s: %+v", name, e.vpp.NewInterfaces())
	}
	return i
}

// untagged lists the VPP names of the interfaces without a tag that VPP did
// not have when the test started.
func (e *env) untagged() []string {
	e.t.Helper()
	var out []string
	for _, i := range e.vpp.NewInterfaces() {
		if i.Tag == "" {
			out = append(out, i.Name)
		}
	}
	return out
}

// newInterfaces lists the interfaces VPP did not have when the test
// started, "<VPP name> tag=<tag>".
func (e *env) newInterfaces() []string {
	e.t.Helper()
	var out []string
	for _, i := range e.vpp.NewInterfaces() {
		out = append(out, i.Name+" tag="+i.Tag)
	}
	return out
}

func addrs(i vpptest.Interface) string { return strings.Join(i.Addresses, ",") }

// executed lists the operations of a transaction that called a descriptor.
func executed(s api.KVScheduler, seq uint64) []string {
	rec := s.GetRecordedTransaction(seq)
	if rec == nil {
		return []string{"no record"}
	}
	var out []string
	for _, op := range rec.Executed {
		if !op.NOOP && !op.Property {
			out = append(out, op.Operation.String()+" "+op.Key)
		}
	}
	return out
}

func clone(v *vppif.Interface) *vppif.Interface { return proto.Clone(v).(*vppif.Interface) }

func loop(name string, ips ...string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: ips}
}

// mustAddr is the address of cidr in the binary API.
func mustAddr(cidr string) ip_types.AddressWithPrefix {
	p := netip.MustParsePrefix(cidr)
	return ip_types.AddressWithPrefix{Address: ip_types.NewAddress(p.Addr().AsSlice()), Len: uint8(p.Bits())}
}
