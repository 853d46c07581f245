package etcdsource_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
)

// A port already taken: StartEmbedded fails at once, naming the URL.
func TestStartEmbeddedPortTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, which := range []string{"client", "peer"} {
		taken := fmt.Sprintf("http://%s", l.Addr())
		ports := freePorts(t, 2)
		cfg := etcdsource.EmbeddedConfig{
			Dir:       t.TempDir(),
			ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]),
			PeerURL:   fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
			Log:       testLog(),
		}
		if which == "client" {
			cfg.ClientURL = taken
		} else {
			cfg.PeerURL = taken
		}
		e, err := etcdsource.StartEmbedded(cfg)
		if err == nil {
			e.Close()
			t.Fatalf("%s port taken: StartEmbedded did not fail", which)
		}
		if !strings.Contains(err.Error(), taken) || !strings.Contains(err.Error(), "address already in use") {
			t.Errorf("%s port taken: error %q, want it to name %s and the problem", which, err, taken)
		}
		t.Logf("%s port taken: %v", which, err)
	}
}

// The embedded server serves clients; Close can be called twice.
func TestEmbeddedServes(t *testing.T) {
	s := startEtcd(t)
	if !strings.HasPrefix(s.e.ClientURL(), "http://127.0.0.1:") {
		t.Errorf("ClientURL %q", s.e.ClientURL())
	}
	c := newClient(t, s.e.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("Get: %v %v", resp, err)
	}
	c.Close()
	e := s.e
	s.stop()
	e.Close()
}

// TestBuiltBeforeEtcdRuns: the embedded server and a source made with
// NewDialing are built before the server runs (nothing listens yet); after
// Start, Connect makes the client and Run delivers the state; Close closes
// the client. A dial error is the error of Connect and of Run.
func TestBuiltBeforeEtcdRuns(t *testing.T) {
	ports := freePorts(t, 2)
	e, err := etcdsource.NewEmbedded(etcdsource.EmbeddedConfig{Dir: t.TempDir(),
		ClientURL: fmt.Sprintf("http://127.0.0.1:%d", ports[0]), PeerURL: fmt.Sprintf("http://127.0.0.1:%d", ports[1]), Log: testLog()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0])); err == nil {
		c.Close()
		t.Fatal("NewEmbedded started the server")
	}
	sink := newSink()
	var client *clientv3.Client
	src := etcdsource.NewDialing(func(context.Context) (*clientv3.Client, error) {
		var err error
		client, err = clientv3.New(clientv3.Config{Endpoints: []string{e.ClientURL()}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		return client, err
	}, sink, etcdsource.Options{Label: label, Log: testLog()})
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := src.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Put(ctx, prefix+vppIfKey+"loop1", vppIf("loop1", 0)); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- src.Run(runCtx) }()
	sink.waitFor(t, "the first Resync", func() bool { return len(sink.calls) > 0 && sink.calls[0].resync })
	stop()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
	src.Close()
	if _, err := client.Get(ctx, "k"); err == nil {
		t.Error("the client Connect made still works after Close")
	}

	failing := etcdsource.NewDialing(func(context.Context) (*clientv3.Client, error) {
		return nil, errors.New("no endpoints")
	}, newSink(), etcdsource.Options{Log: testLog()})
	if err := failing.Connect(ctx); err == nil || !strings.Contains(err.Error(), "etcd client: no endpoints") {
		t.Errorf("Connect with a failing dial: %v", err)
	}
	if err := failing.Run(ctx); err == nil || !strings.Contains(err.Error(), "no endpoints") {
		t.Errorf("Run with a failing dial: %v", err)
	}
	failing.Close()
}

// TestEmbeddedAuth: with a root password, a client without credentials
// can neither write nor read and one with a wrong password is refused,
// while root with the password can; a restart with another password
// changes it (the data stays); a restart without one turns authentication
// off.
func TestEmbeddedAuth(t *testing.T) {
	s := startEtcd(t)
	s.stop()
	s.cfg.RootPassword = "pw&<1>"
	s.start()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	dial := func(user, password string) (*clientv3.Client, error) {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.e.ClientURL()}, DialTimeout: 10 * time.Second,
			Logger: zap.NewNop(), Username: user, Password: password})
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return c, err
	}
	anonymous := newClient(t, s.e.ClientURL())
	if _, err := anonymous.Put(ctx, prefix+"k", "v"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("Put without credentials: %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	if _, err := anonymous.Get(ctx, prefix, clientv3.WithPrefix()); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("Get without credentials: %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	if _, err := dial(etcdsource.RootUser, "wrong"); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("a wrong password: %v, want %v", err, rpctypes.ErrAuthFailed)
	}
	root, err := dial(etcdsource.RootUser, "pw&<1>")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Put(ctx, prefix+"k", "v"); err != nil {
		t.Fatalf("Put as root: %v", err)
	}

	s.stop()
	s.cfg.RootPassword = "pw2"
	s.start()
	if _, err := dial(etcdsource.RootUser, "pw&<1>"); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("the password of the earlier start: %v, want %v", err, rpctypes.ErrAuthFailed)
	}
	root, err = dial(etcdsource.RootUser, "pw2")
	if err != nil {
		t.Fatalf("the new password: %v", err)
	}
	if resp, err := root.Get(ctx, prefix+"k"); err != nil || len(resp.Kvs) != 1 {
		t.Errorf("Get as root after the password changed: %v %v", resp, err)
	}
	if _, err := newClient(t, s.e.ClientURL()).Put(ctx, prefix+"k", "v2"); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("Put without credentials after the restart: %v, want %v", err, rpctypes.ErrUserEmpty)
	}

	s.stop()
	s.cfg.RootPassword = ""
	s.start()
	if _, err := newClient(t, s.e.ClientURL()).Put(ctx, prefix+"k", "v3"); err != nil {
		t.Errorf("Put without credentials, authentication off: %v", err)
	}
}
