package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
)

// TestE2EEmbeddedEtcdNeedsTheToken: with a token, the embedded etcd takes
// no write (nor read) from a client without credentials, nor from one with
// a wrong password; root with the token writes, and the agent applies it.
// Restarted with another token, the agent's etcd takes the new one and
// refuses the old one.
func TestE2EEmbeddedEtcdNeedsTheToken(t *testing.T) {
	cfg := testConfig(t)
	cfg.Linux.Disabled = true
	cfg.Token = NewSecret("etcd-t0ken&<>")
	a := startAgent(t, cfg, true)
	url := cfg.Etcd.EmbeddedClientURL
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	dial := func(user, password string) (*clientv3.Client, error) {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second,
			Logger: zap.NewNop(), Username: user, Password: password})
		if err == nil {
			t.Cleanup(func() { _ = c.Close() })
		}
		return c, err
	}
	const loop = `{"name":"auth1","type":"SOFTWARE_LOOPBACK"}`
	key := "config/vpp/v2/interfaces/auth1"
	anonymous, err := dial("", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anonymous.Put(ctx, models.EtcdKey(cfg.Label, key), loop); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("Put without credentials: %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	if _, err := anonymous.Get(ctx, models.EtcdKeyPrefix(cfg.Label), clientv3.WithPrefix()); !errors.Is(err, rpctypes.ErrUserEmpty) {
		t.Errorf("Get without credentials: %v, want %v", err, rpctypes.ErrUserEmpty)
	}
	if _, err := dial(etcdsource.RootUser, "wrong"); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("a wrong password: %v, want %v", err, rpctypes.ErrAuthFailed)
	}
	if st := a.status(key); st.Value.State != "" {
		t.Fatalf("the refused put reached the agent: %+v", st)
	}
	root, err := dial(etcdsource.RootUser, cfg.Token.Reveal())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := root.Put(ctx, models.EtcdKey(cfg.Label, key), loop); err != nil {
		t.Fatalf("Put as root with the token: %v", err)
	}
	a.waitState(key, "UNIMPLEMENTED") // VPP is off: the value is the agent's, not applied
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}

	old := cfg.Token.Reveal()
	cfg.Token = NewSecret("another-t0ken")
	a = startAgent(t, cfg, true)
	if _, err := dial(etcdsource.RootUser, old); !errors.Is(err, rpctypes.ErrAuthFailed) {
		t.Errorf("the token of the earlier run: %v, want %v", err, rpctypes.ErrAuthFailed)
	}
	if _, err := dial(etcdsource.RootUser, cfg.Token.Reveal()); err != nil {
		t.Errorf("the new token: %v", err)
	}
	a.waitState(key, "UNIMPLEMENTED")
}
