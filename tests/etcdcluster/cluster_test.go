package etcdcluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// TestIsolateAndHold checks the harness's faults: an isolated member does
// not get what the others write, loses its leader, and catches up once
// healed; a held proxy passes nothing until released.
func TestIsolateAndHold(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-member etcd cluster: not in -short")
	}
	c := Start(t, Options{})
	cut := (c.Leader() + 1) % 3
	c.Isolate(cut)
	rest := c.Others(cut)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := c.Client(rest...).Put(ctx, "k", "v"); err != nil {
		t.Fatal(err)
	}
	one, err := clientv3.New(clientv3.Config{Endpoints: []string{c.Members[cut].Endpoint()}, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	count := func() (int, error) {
		r, err := one.Get(ctx, "k", clientv3.WithSerializable())
		if err != nil {
			return 0, err
		}
		return len(r.Kvs), nil
	}
	testsupport.Eventually(t, 30*time.Second, func() error {
		if l := c.Members[cut].server().Server.Leader(); l != 0 {
			return fmt.Errorf("the isolated member still follows %v", l)
		}
		return nil
	})
	if n, err := count(); err != nil || n != 0 {
		t.Fatalf("the isolated member has the key written after it was cut off: %d, %v", n, err)
	}

	c.Members[cut].Hold()
	hctx, hcancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, err = one.Get(hctx, "k", clientv3.WithSerializable())
	hcancel()
	if err == nil {
		t.Error("a read through a held proxy was answered")
	}
	c.Members[cut].Release()

	c.Heal(cut)
	testsupport.Eventually(t, 30*time.Second, func() error {
		if n, err := count(); err != nil || n != 1 {
			return fmt.Errorf("the healed member has %d keys (%v), want 1", n, err)
		}
		return nil
	})
}
