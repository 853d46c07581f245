package l2plugin_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// newIfpluginEnv is an env with ifplugin's descriptors in place of the
// interface stand-in: foreign interfaces are OBTAINED values.
func newIfpluginEnv(t *testing.T) *env {
	t.Helper()
	v := vpptest.Start(t, vpptest.Options{Areas: append(vppcalls.Areas(), l2plugin.New(nil, nil, nil).Area())})
	e := &env{t: t, vpp: v, sim: v.Sim, m: v.M}
	e.startWithIfplugin()
	return e
}

// startWithIfplugin starts a new agent: scheduler, ifplugin and l2plugin.
func (e *env) startWithIfplugin() {
	t := e.t
	if e.s != nil {
		e.s.Close()
	}
	s := kvscheduler.New(kvscheduler.Options{Logger: logger(t, slog.LevelWarn)})
	t.Cleanup(s.Close)
	p := l2plugin.New(e.m, ifplugin.SchedulerInterfaces(s), logger(t, slog.LevelInfo))
	p.SetInterfaceLister(ifplugin.SchedulerInterfaceNames(s))
	if err := s.RegisterKVDescriptor(ifplugin.New(e.m, logger(t, slog.LevelInfo)).Descriptors()...); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	e.s, e.p = s, p
}

// members lists the VPP names of a domain's members, sorted.
func (e *env) members(b vpptest.BridgeDomain) []string {
	e.t.Helper()
	var out []string
	for _, i := range e.vpp.DumpInterfaces() {
		if slices.Contains(b.MemberIndexes(), i.SwIfIndex) {
			out = append(out, i.Name)
		}
	}
	slices.Sort(out)
	return out
}

// sorted returns the strings sorted.
func sorted(s ...string) []string {
	slices.Sort(s)
	return s
}

// find returns the interface of an index.
func find(all []vpptest.Interface, swIfIndex uint32) (vpptest.Interface, bool) {
	k := slices.IndexFunc(all, func(i vpptest.Interface) bool { return i.SwIfIndex == swIfIndex })
	if k < 0 {
		return vpptest.Interface{}, false
	}
	return all[k], true
}

// TestForeignBridgeDomainMembers: a configured domain may name a foreign
// interface (OBTAINED under its VPP name); a foreign interface someone else
// put into a domain of ours stays there across the resyncs of new agents.
func TestForeignBridgeDomainMembers(t *testing.T) {
	e := newIfpluginEnv(t)
	conn, err := e.m.Conn(l2plugin.AreaName)
	if err != nil {
		t.Fatal(err)
	}
	ic := interfaces.NewServiceClient(conn)
	var foreign []interface_types.InterfaceIndex
	var names []string // VPP's names of the foreign loopbacks
	for range 2 {
		r, err := ic.CreateLoopback(context.Background(), &interfaces.CreateLoopback{})
		if err != nil {
			t.Fatal(err)
		}
		foreign = append(foreign, r.SwIfIndex)
		i, ok := find(e.vpp.DumpInterfaces(), uint32(r.SwIfIndex))
		if !ok {
			t.Fatalf("setup: VPP does not list the loopback %d it made", r.SwIfIndex)
		}
		names = append(names, i.Name)
	}
	bd := func(members ...string) kv {
		b := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Forward: true, Learn: true}
		for _, m := range members {
			b.Interfaces = append(b.Interfaces, &vppl2.BridgeDomain_Interface{Name: m})
		}
		return bdKV(b)
	}
	cfg := []kv{iface("mine"), bd("mine", names[0])}
	if _, err := e.resync(api.FullResync, cfg...); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{l2plugin.BDInterfaceKey("bd1", "mine"), l2plugin.BDInterfaceKey("bd1", names[0])} {
		if st := e.state(k); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", k, st)
		}
	}
	mine, ok := e.vpp.InterfaceTagged("mine")
	if !ok {
		t.Fatal("VPP has no interface tagged mine")
	}
	b := e.mustBD("bd1")
	if got, want := e.members(b), sorted(names[0], mine.Name); !slices.Equal(got, want) {
		t.Errorf("members of bd1: %v, want the foreign %s and mine (%s)", got, names[0], mine.Name)
	}

	// Someone else puts the foreign names[1] into bd1.
	if _, err := l2.NewServiceClient(conn).SwInterfaceSetL2Bridge(context.Background(), &l2.SwInterfaceSetL2Bridge{
		RxSwIfIndex: foreign[1], BdID: b.BdID, Enable: true,
	}); err != nil {
		t.Fatal(err)
	}
	e.startWithIfplugin()
	seq, err := e.resync(api.FullResync, cfg...)
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("resync executed %v", ops)
	}
	all := sorted(names[0], names[1], mine.Name)
	if got := e.members(e.mustBD("bd1")); !slices.Equal(got, all) {
		t.Errorf("members of bd1: %v, want %s left there", got, names[1])
	}

	// A new agent whose bd1 no longer names names[0] cannot tell who put it
	// there: it is left alone too.
	e.startWithIfplugin()
	seq, err = e.resync(api.FullResync, iface("mine"), bd("mine"))
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("resync executed %v", ops)
	}
	if got := e.members(e.mustBD("bd1")); !slices.Equal(got, all) {
		t.Errorf("members of bd1: %v, want all three", got)
	}
	// The binding the configuration asks for is the agent's: taken out
	// when the configuration drops it.
	e.mustCommit(bd("mine", names[0]))
	if st := e.state(l2plugin.BDInterfaceKey("bd1", names[0])); st != api.ValueStateConfigured {
		t.Errorf("%s's binding: %v, want CONFIGURED", names[0], st)
	}
	seq = e.mustCommit(bd("mine"))
	if ops := e.executed(seq); !slices.ContainsFunc(ops, func(op string) bool {
		return strings.HasPrefix(op, "DELETE "+l2plugin.BDInterfaceKey("bd1", names[0])+" ")
	}) {
		t.Errorf("executed %v, want %s's binding deleted", ops, names[0])
	}
	if got, want := e.members(e.mustBD("bd1")), sorted(names[1], mine.Name); !slices.Equal(got, want) {
		t.Errorf("members of bd1: %v, want %s and mine", got, names[1])
	}
	for _, name := range names {
		if _, ok := e.vpp.InterfaceNamed(name); !ok {
			t.Errorf("foreign %s deleted", name)
		}
		if st := e.state(ifplugin.InterfaceKey(name)); st != api.ValueStateObtained {
			t.Errorf("foreign %s: %v, want OBTAINED", name, st)
		}
	}
}
