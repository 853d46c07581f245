package etcdsource_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

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
