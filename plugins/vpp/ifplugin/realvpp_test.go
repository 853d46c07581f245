package ifplugin_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// TestRealVPP runs against a real VPP when VPP_API_SOCKET names its API
// socket (e.g. VPP_API_SOCKET=/run/vpp/api.sock go test -run TestRealVPP
// ./plugins/vpp/ifplugin/): a loopback with an address, MTU and admin state
// is created, read back with a dump, resynced without operations, and
// deleted. Without the variable it is skipped.
func TestRealVPP(t *testing.T) {
	socket := os.Getenv("VPP_API_SOCKET")
	if socket == "" {
		t.Skip("set VPP_API_SOCKET to the API socket of a real VPP to run this test")
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	connected := make(chan struct{}, 1)
	m := vppconn.New(vppconn.Options{Socket: socket, Log: log, OnConnect: func(bool, bool) {
		select {
		case connected <- struct{}{}:
		default:
		}
	}})
	p := ifplugin.New(m, log)
	m.AddArea(p.Area())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case <-connected:
	case <-time.After(30 * time.Second):
		t.Fatalf("no connection to the VPP at %s within 30 s: %+v", socket, m.Status())
	}
	s := kvscheduler.New(kvscheduler.Options{Logger: log})
	defer s.Close()
	if err := s.RegisterKVDescriptor(p.Descriptors()...); err != nil {
		t.Fatal(err)
	}
	name := "netagent-test-loop"
	v := &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, Mtu: 1400, IpAddresses: []string{"10.251.0.1/24"}}
	key := ifplugin.InterfaceKey(name)
	if _, err := s.StartNBTransaction().SetValue(key, v).Commit(context.Background()); err != nil {
		t.Fatalf("create: %v", err)
	}
	defer func() {
		if _, err := s.StartNBTransaction().SetValue(key, nil).Commit(context.Background()); err != nil {
			t.Errorf("delete: %v", err)
		}
		if found(t, m, name) {
			t.Error("the loopback is still in VPP after delete")
		}
	}()
	if !found(t, m, name) {
		t.Fatal("the loopback is not in VPP's interface dump")
	}
	seq, err := s.StartNBTransaction().SetValue(key, v).Commit(api.WithResync(context.Background(), api.FullResync, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range s.GetRecordedTransaction(seq).Executed {
		if !op.NOOP {
			t.Errorf("resync of an in-sync VPP executed %s %s", op.Operation, op.Key)
		}
	}
}

// found tells whether VPP has an interface tagged with name.
func found(t *testing.T, m *vppconn.Manager, name string) bool {
	t.Helper()
	conn, err := m.Conn("interfaces")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := m.CallContext(context.Background())
	defer cancel()
	stream, err := interfaces.NewServiceClient(conn).SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
	if err != nil {
		t.Fatal(err)
	}
	for {
		d, err := stream.Recv()
		if err != nil {
			return false
		}
		if d.Tag == name {
			return true
		}
	}
}
