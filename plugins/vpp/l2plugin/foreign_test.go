package l2plugin_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/l2"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// newIfpluginEnv is an env with ifplugin's descriptors in place of the
// interface stand-in: foreign interfaces are OBTAINED values.
func newIfpluginEnv(t *testing.T) *env {
	t.Helper()
	dir, err := os.MkdirTemp("", "l2p")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "api.sock")
	sim, err := vppsim.Start(vppsim.Options{SocketPath: sock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	m := vppconn.New(vppconn.Options{Socket: sock, Log: logger(t, slog.LevelWarn)})
	m.AddArea(l2plugin.New(m, nil, nil).Area())
	m.AddArea(ifplugin.New(m, nil).Area())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e := &env{t: t, sim: sim, m: m}
	e.waitConnected()
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
	p := l2plugin.New(e.m, l2plugin.SchedulerInterfaces(s), logger(t, slog.LevelInfo))
	p.SetInterfaceLister(l2plugin.SchedulerInterfaceNames(s))
	if err := s.RegisterKVDescriptor(ifplugin.New(e.m, logger(t, slog.LevelInfo)).Descriptors()...); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	e.s, e.p = s, p
}

// members lists the VPP names of a domain's members.
func (e *env) members(b vppsim.BridgeDomain) []string {
	var out []string
	for _, m := range b.Members {
		for _, i := range e.sim.Interfaces() {
			if i.SwIfIndex == m.SwIfIndex {
				out = append(out, i.Name)
			}
		}
	}
	slices.Sort(out)
	return out
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
	for range 2 {
		r, err := ic.CreateLoopback(context.Background(), &interfaces.CreateLoopback{})
		if err != nil {
			t.Fatal(err)
		}
		foreign = append(foreign, r.SwIfIndex)
	}
	bd := func(members ...string) kv {
		b := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Forward: true, Learn: true}
		for _, m := range members {
			b.Interfaces = append(b.Interfaces, &vppl2.BridgeDomain_Interface{Name: m})
		}
		return bdKV(b)
	}
	cfg := []kv{iface("mine"), bd("mine", "loop0")}
	if _, err := e.resync(api.FullResync, cfg...); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{l2plugin.BDInterfaceKey("bd1", "mine"), l2plugin.BDInterfaceKey("bd1", "loop0")} {
		if st := e.state(k); st != api.ValueStateConfigured {
			t.Errorf("%s: %v, want CONFIGURED", k, st)
		}
	}
	b := e.mustBD("bd1")
	if got := e.members(b); !slices.Equal(got, []string{"loop0", "loop2"}) {
		t.Errorf("members of bd1: %v, want the foreign loop0 and mine (loop2)", got)
	}

	// Someone else puts the foreign loop1 into bd1.
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
	if got := e.members(e.mustBD("bd1")); !slices.Equal(got, []string{"loop0", "loop1", "loop2"}) {
		t.Errorf("members of bd1: %v, want loop1 left there", got)
	}

	// A new agent whose bd1 no longer names loop0 cannot tell who put loop0
	// there: it is left alone too.
	e.startWithIfplugin()
	seq, err = e.resync(api.FullResync, iface("mine"), bd("mine"))
	if err != nil {
		t.Fatal(err)
	}
	if ops := e.executed(seq); len(ops) != 0 {
		t.Errorf("resync executed %v", ops)
	}
	if got := e.members(e.mustBD("bd1")); !slices.Equal(got, []string{"loop0", "loop1", "loop2"}) {
		t.Errorf("members of bd1: %v, want all three", got)
	}
	// The binding the configuration asks for is the agent's: taken out
	// when the configuration drops it.
	e.mustCommit(bd("mine", "loop0"))
	if st := e.state(l2plugin.BDInterfaceKey("bd1", "loop0")); st != api.ValueStateConfigured {
		t.Errorf("loop0's binding: %v, want CONFIGURED", st)
	}
	seq = e.mustCommit(bd("mine"))
	if ops := e.executed(seq); !slices.ContainsFunc(ops, func(op string) bool {
		return strings.HasPrefix(op, "DELETE "+l2plugin.BDInterfaceKey("bd1", "loop0")+" ")
	}) {
		t.Errorf("executed %v, want loop0's binding deleted", ops)
	}
	if got := e.members(e.mustBD("bd1")); !slices.Equal(got, []string{"loop1", "loop2"}) {
		t.Errorf("members of bd1: %v, want loop1 and mine", got)
	}
	for _, name := range []string{"loop0", "loop1"} {
		if _, ok := e.sim.Interface(name); !ok {
			t.Errorf("foreign %s deleted", name)
		}
		if st := e.state(ifplugin.InterfaceKey(name)); st != api.ValueStateObtained {
			t.Errorf("foreign %s: %v, want OBTAINED", name, st)
		}
	}
}
