package localclient_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/localclient"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPutDeleteAndPriority(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := kvscheduler.New(kvscheduler.Options{Logger: log})
	defer s.Close()
	var mu sync.Mutex
	sb := map[string]uint32{}
	d := &api.TypedDescriptor[*vppif.Interface, any]{
		Name: "vpp-interface", NBKeyPrefix: models.VPPInterface.KeyPrefix,
		KeySelector: func(k string) bool { return strings.HasPrefix(k, models.VPPInterface.KeyPrefix) },
		Create: func(_ context.Context, k string, v *vppif.Interface) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			sb[k] = v.GetMtu()
			return nil, nil
		},
		Update: func(_ context.Context, k string, _, v *vppif.Interface, md any) (any, error) {
			mu.Lock()
			defer mu.Unlock()
			sb[k] = v.GetMtu()
			return nil, nil
		},
		Delete: func(_ context.Context, k string, _ *vppif.Interface, _ any) error {
			mu.Lock()
			defer mu.Unlock()
			delete(sb, k)
			return nil
		},
	}
	if err := s.RegisterKVDescriptor(d.KVDescriptor()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := orchestrator.New(s, log)
	o.Register(orchestrator.SourceEtcd)
	c, err := localclient.New(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := models.VPPInterface.KeyPrefix + "loop1"
	if _, err := o.Resync(ctx, orchestrator.SourceEtcd, []orchestrator.KV{{Key: key, Value: &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Mtu: 1500}}}, api.TxnOptions{}); err != nil {
		t.Fatal(err)
	}
	mtu := func() uint32 {
		mu.Lock()
		defer mu.Unlock()
		return sb[key]
	}
	loop := &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Mtu: 9000}
	if _, err := c.Put(ctx, loop); err != nil || mtu() != 9000 {
		t.Fatalf("local put: mtu %d, %v", mtu(), err)
	}
	if _, err := c.Delete(ctx, proto.Clone(loop)); err != nil || mtu() != 1500 {
		t.Errorf("local delete falls back to etcd: mtu %d, %v", mtu(), err)
	}
	if _, err := c.Put(ctx, &vppif.Interface{Name: "bad name", Mtu: 1}); err == nil || !strings.Contains(err.Error(), "name") {
		t.Errorf("invalid value: %v", err)
	}
}

// TestWithOptions: a client WithOptions commits with them (NonBlocking:
// Put returns while its transaction runs), refused options fail the call
// and change nothing, and the original client keeps its own options.
func TestWithOptions(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := kvscheduler.New(kvscheduler.Options{Logger: log})
	defer s.Close()
	entered, release := make(chan string), make(chan struct{})
	d := &api.TypedDescriptor[*vppif.Interface, any]{
		Name: "vpp-interface", NBKeyPrefix: models.VPPInterface.KeyPrefix,
		KeySelector: func(k string) bool { return strings.HasPrefix(k, models.VPPInterface.KeyPrefix) },
		Create: func(_ context.Context, k string, _ *vppif.Interface) (any, error) {
			entered <- k
			<-release
			return nil, nil
		},
		Delete: func(context.Context, string, *vppif.Interface, any) error { return nil },
	}
	if err := s.RegisterKVDescriptor(d.KVDescriptor()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	o := orchestrator.New(s, log)
	c, err := localclient.New(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	loop := &vppif.Interface{Name: "loop1", Type: vppif.Interface_SOFTWARE_LOOPBACK}
	key := models.VPPInterface.KeyPrefix + "loop1"

	if _, err := c.WithOptions(api.TxnOptions{Revert: true}).Put(ctx, loop); err == nil || !strings.Contains(err.Error(), "transaction options: Revert ") {
		t.Errorf("Put with Revert: %v, want the option refused", err)
	}
	if v := o.Value(key); v != nil {
		t.Fatalf("Put with refused options set %v", v)
	}

	queued := make(chan error, 1)
	go func() {
		seq, err := c.WithOptions(api.TxnOptions{NonBlocking: true}).Put(ctx, loop)
		if err == nil && seq == 0 {
			err = errors.New("no sequence number")
		}
		queued <- err
	}()
	if k := <-entered; k != key {
		t.Fatalf("create of %s, want %s", k, key)
	}
	select {
	case err := <-queued:
		if err != nil {
			t.Errorf("non-blocking Put: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a non-blocking Put did not return while its Create ran")
	}
	close(release)

	// The client itself still blocks: when Delete returns, its transaction
	// (after the Put's) is done.
	if _, err := c.Delete(ctx, loop); err != nil {
		t.Fatal(err)
	}
	if st := s.GetValueStatus(key).GetValue().GetState(); st != api.ValueStateNonexistent {
		t.Errorf("%s after the blocking Delete: %v", key, st)
	}
}
