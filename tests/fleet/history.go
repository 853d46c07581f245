package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/netagent-io/netagent/pkg/models"
)

// Write is one write of etcd, as its history has it.
type Write struct {
	Rev    int64
	Label  string
	Key    string // the model key
	Seq    uint32 // the value's sequence number (0 for a delete)
	Delete bool
}

func (w Write) String() string {
	if w.Delete {
		return fmt.Sprintf("rev %d: delete %s/%s", w.Rev, w.Label, w.Key)
	}
	return fmt.Sprintf("rev %d: put %s/%s=%d", w.Rev, w.Label, w.Key, w.Seq)
}

// History records every write of an etcd cluster from a revision on, by
// a watch of all keys, as etcd's own robustness tests do: the writes as
// etcd applied them, whatever the writers' clients saw (a put that timed
// out may have been applied). It checks that the revisions it sees follow
// on without a gap (every revision has at least one event).
type History struct {
	mu      sync.Mutex
	writes  []Write
	last    int64
	errs    []string
	changed chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

// RecordHistory starts recording the writes of the cluster after revision
// after, with cli (a client of every member, not one a fault affects
// alone). Recording stops when the test ends.
func RecordHistory(t testing.TB, cli *clientv3.Client, after int64) *History {
	ctx, cancel := context.WithCancel(context.Background())
	h := &History{last: after, changed: make(chan struct{}), cancel: cancel, done: make(chan struct{})}
	wch := cli.Watch(ctx, "\x00", clientv3.WithFromKey(), clientv3.WithRev(after+1))
	go func() {
		defer close(h.done)
		for wr := range wch {
			if err := wr.Err(); err != nil {
				h.fail(fmt.Sprintf("history watch: %v", err))
				continue
			}
			h.add(wr.Events)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

func (h *History) fail(msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, msg)
}

func (h *History) add(events []*clientv3.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ev := range events {
		rev := ev.Kv.ModRevision
		if rev != h.last && rev != h.last+1 {
			h.errs = append(h.errs, fmt.Sprintf("history: revision %d after %d", rev, h.last))
		}
		h.last = rev
		label, key, err := models.ParseEtcdKey(string(ev.Kv.Key))
		if err != nil || !strings.HasPrefix(key, KeyPrefix) {
			continue // not a value of the tests (status keys among them)
		}
		w := Write{Rev: rev, Label: label, Key: key, Delete: ev.Type == mvccpb.DELETE}
		if !w.Delete {
			var v struct {
				Mtu uint32 `json:"mtu"`
			}
			if err := json.Unmarshal(ev.Kv.Value, &v); err != nil {
				h.errs = append(h.errs, fmt.Sprintf("history: %s: %v", ev.Kv.Key, err))
			}
			w.Seq = v.Mtu
		}
		h.writes = append(h.writes, w)
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// WaitRev waits until the history has seen revision rev.
func (h *History) WaitRev(rev int64, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		h.mu.Lock()
		last, changed := h.last, h.changed
		h.mu.Unlock()
		if last >= rev {
			return nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return fmt.Errorf("history: revision %d not seen within %v (last %d)", rev, timeout, last)
		}
	}
}

// Errors are the problems of the recording itself (gaps, watch errors).
func (h *History) Errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errs...)
}

// Writes returns the writes of label's values, in revision order.
func (h *History) Writes(label string) []Write {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Write
	for _, w := range h.writes {
		if w.Label == label {
			out = append(out, w)
		}
	}
	return out
}

// Final is the state the writes of label leave: key -> sequence number.
func Final(writes []Write) map[string]uint32 {
	out := map[string]uint32{}
	for _, w := range writes {
		if w.Delete {
			delete(out, w.Key)
		} else {
			out[w.Key] = w.Seq
		}
	}
	return out
}
