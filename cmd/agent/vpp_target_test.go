package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.fd.io/govpp/adapter/socketclient"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/core"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	"github.com/netagent-io/netagent/tests/vpprun"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// e2eVPP is the VPP of an end-to-end test: a vppsim of the test's own, or
// the real VPP that the environment gives the tests (vpprun.ForTests: the
// test process's own, started from NETAGENT_VPP_DIR, or the user's at
// VPP_API_SOCKET). make test runs this package twice, once each way.
type e2eVPP struct {
	t      *testing.T
	socket string
	sim    *vppsim.Sim // nil on a real VPP
	real   *vpprun.VPP // nil on vppsim
}

// startE2EVPP gives the test its VPP. A real VPP of the tests' own is
// restarted first, so that the test finds it empty (agents of earlier
// tests leave their configuration in VPP when they stop, as they should);
// on the user's VPP the test takes its turn (vpprun.Lock) and the agent's
// first full resync removes what earlier agents left.
func startE2EVPP(t *testing.T) *e2eVPP {
	t.Helper()
	if !strings.Contains(t.Name(), "VPP") {
		t.Fatalf("%s uses a VPP: its name must contain VPP (scripts/test-real-vpp.sh runs only those of this package against the real VPP)", t.Name())
	}
	real, err := vpprun.ForTests()
	if err != nil {
		t.Fatalf("the tests' real VPP: %v", err)
	}
	if real == nil {
		socket := filepath.Join(t.TempDir(), "api.sock")
		return &e2eVPP{t: t, socket: socket, sim: startSim(t, socket)}
	}
	unlock, err := vpprun.Lock(real.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(unlock)
	if !real.User {
		if err := real.Restart(); err != nil {
			t.Fatalf("restarting the tests' VPP: %v", err)
		}
	}
	return &e2eVPP{t: t, socket: real.Socket, real: real}
}

// needSim skips the test on a real VPP: it needs what only vppsim does.
func (v *e2eVPP) needSim(why string) {
	v.t.Helper()
	if v.sim == nil {
		v.t.Skipf("needs vppsim (%s); skipped on the real VPP at %s", why, v.socket)
	}
}

// needOwnReal skips the test unless it runs on a real VPP of the tests'
// own (NETAGENT_VPP_DIR): it stops, starts or reads it with vppctl.
func (v *e2eVPP) needOwnReal(why string) {
	v.t.Helper()
	switch {
	case v.real == nil:
		v.t.Skipf("needs a real VPP (%s); skipped on vppsim (make test runs it again on ../shared/vpp; or set %s)", why, vpprun.DirEnv)
	case v.real.User:
		v.t.Skipf("needs a real VPP of the tests' own (%s); skipped on the user's VPP at %s", why, v.socket)
	}
}

// down takes VPP away (vppsim closed, the real VPP stopped).
func (v *e2eVPP) down() {
	v.t.Helper()
	var err error
	if v.sim != nil {
		err = v.sim.Close()
	} else {
		err = v.real.Down()
	}
	if err != nil {
		v.t.Fatal(err)
	}
}

// up brings a VPP back on the socket after down, empty.
func (v *e2eVPP) up() {
	v.t.Helper()
	if v.sim != nil {
		v.sim = startSim(v.t, v.socket)
		return
	}
	if err := v.real.Up(); err != nil {
		v.t.Fatal(err)
	}
}

// pid is the PID of the VPP process.
func (v *e2eVPP) pid() uint32 {
	if v.sim != nil {
		return v.sim.PID()
	}
	if v.real.User {
		return 0
	}
	return uint32(v.real.PID())
}

// vppInterface is an interface as VPP's sw_interface_dump reports it.
type vppInterface struct {
	SwIfIndex uint32
	Name, Tag string
}

// interfaces reads VPP's interfaces through the binary API on a
// connection of the test's own (vppsim or real alike).
func (v *e2eVPP) interfaces() []vppInterface {
	v.t.Helper()
	conn, err := core.Connect(socketclient.NewVppClient(v.socket))
	if err != nil {
		v.t.Fatalf("connecting to VPP at %s: %v", v.socket, err)
	}
	defer conn.Disconnect()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	details, err := vppconn.Dump[*interfaces.SwInterfaceDetails](ctx, conn, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		v.t.Fatalf("sw_interface_dump: %v", err)
	}
	out := make([]vppInterface, 0, len(details))
	for _, d := range details {
		out = append(out, vppInterface{SwIfIndex: uint32(d.SwIfIndex), Name: strings.TrimRight(d.InterfaceName, "\x00"), Tag: strings.TrimRight(d.Tag, "\x00")})
	}
	return out
}

// tagged is VPP's interface with the tag (the agent tags its interfaces
// with their names).
func (v *e2eVPP) tagged(tag string) (vppInterface, bool) {
	v.t.Helper()
	all := v.interfaces()
	i := slices.IndexFunc(all, func(i vppInterface) bool { return i.Tag == tag })
	if i < 0 {
		return vppInterface{}, false
	}
	return all[i], true
}

// cli runs a vppctl command on the real VPP and returns its output; the
// test skips when there is no console to reach (the user's VPP without
// vppctl).
func (v *e2eVPP) cli(args ...string) string {
	v.t.Helper()
	if ok, why := v.real.HasCLI(); !ok {
		v.t.Skipf("reads VPP with vppctl: %s", why)
	}
	out, err := v.real.CLI(args...)
	if err != nil {
		v.t.Fatal(err)
	}
	return out
}

// startVPPAgent starts the test's VPP (vppsim or real) and an agent using
// it, without the Linux side.
func startVPPAgent(t *testing.T) (*agent, *e2eVPP) {
	t.Helper()
	v := startE2EVPP(t)
	return startVPPAgentOn(t, v), v
}

// startVPPAgentOn starts an agent using the test's VPP v, without the
// Linux side.
func startVPPAgentOn(t *testing.T, v *e2eVPP) *agent {
	t.Helper()
	cfg := testConfig(t)
	cfg.VPP.Disabled, cfg.VPP.Socket = false, v.socket
	cfg.Linux.Disabled = true
	return startAgent(t, cfg, true)
}

func (i vppInterface) String() string {
	return fmt.Sprintf("%s (%d, tag %q)", i.Name, i.SwIfIndex, i.Tag)
}
