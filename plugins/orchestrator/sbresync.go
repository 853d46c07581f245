package orchestrator

import (
	"context"
	"fmt"
	"sync"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// SouthboundResync brings a southbound that connected again (VPP after a
// reconnect or a restart) back to the desired state: see "Southbound
// reconnects" in the package documentation. Make it with
// NewSouthboundResync, call Request from the connection's callback and Run
// on a goroutine of its own.
type SouthboundResync struct {
	o    *Orchestrator
	name string
	// wake tells Run that a request came (capacity 1: requests coalesce).
	wake chan struct{}

	mu sync.Mutex
	// pending: a request Run has not picked up yet; why: its description.
	pending bool
	why     string
	// running: Run is committing a resync.
	running bool
}

// NewSouthboundResync returns the resync of the southbound called name
// ("VPP"): Ready reports the agent not ready from a Request to the end of
// the resync it causes.
func (o *Orchestrator) NewSouthboundResync(name string) *SouthboundResync {
	r := &SouthboundResync{o: o, name: name, wake: make(chan struct{}, 1)}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sbResyncs = append(o.sbResyncs, r)
	return r
}

// Request asks for a downstream resync described by why. It never blocks
// (call it from a connection callback). Before the first full sync it does
// nothing: that sync applies everything.
func (r *SouthboundResync) Request(why string) {
	select {
	case <-r.o.Started():
	default:
		return
	}
	r.mu.Lock()
	r.pending, r.why = true, why
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default: // Run has a wake-up waiting: it picks up this request too
	}
}

// Run commits the requested resyncs, one at a time, until ctx ends. Each is
// a downstream resync with the default retry (api.DefaultRetry): values the
// southbound lacks are created (everything after a restart, in dependency
// order), values it has are left alone. Requests made while one runs are
// coalesced into one more resync after it. A transaction error other than
// values failing is logged.
func (r *SouthboundResync) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		}
		r.mu.Lock()
		if !r.pending {
			r.mu.Unlock()
			continue
		}
		why := r.why
		r.pending, r.running = false, true
		r.mu.Unlock()
		opts := api.TxnOptions{Resync: api.DownstreamResync, Retry: api.DefaultRetry(), Description: why}
		_, err := r.o.s.StartNBTransaction().Commit(ctx, opts)
		r.mu.Lock()
		r.running = false
		r.mu.Unlock()
		if err != nil && !isValueErrors(err) && ctx.Err() == nil {
			r.o.log.Warn("downstream resync after a southbound connected", "southbound", r.name, "error", err)
		}
	}
}

// notReady returns why the agent is not ready because of this southbound
// ("" when it is).
func (r *SouthboundResync) notReady() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending || r.running {
		return fmt.Sprintf("%s connected, its configuration being applied", r.name)
	}
	return ""
}
