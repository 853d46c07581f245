package etcdsource

import (
	"log/slog"
	"sync"
	"time"

	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// connection is the state of the source's connection to etcd (see
// "Connection state" in the package documentation). It logs the changes:
// one line when etcd cannot be reached at first, one at a loss (warn, with
// the error) and one at the connection or the recovery (info, with how long
// it was lost); the retries in between are logged at debug level only.
type connection struct {
	log *slog.Logger
	now func() time.Time

	mu sync.Mutex
	st orchestrator.Connection
}

func newConnection(log *slog.Logger, now func() time.Time) *connection {
	return &connection{log: log, now: now, st: orchestrator.Connection{State: orchestrator.SourceConnecting}}
}

// get returns the state.
func (c *connection) get() orchestrator.Connection {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// starting records that Run starts connecting.
func (c *connection) starting() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st = orchestrator.Connection{State: orchestrator.SourceConnecting, Since: c.now()}
}

// failed records an attempt that failed (a read, a watch that ended or whose
// connection was lost); retryIn is the wait before the next one.
func (c *connection) failed(err error, retryIn time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	first := c.st.Error == ""
	switch c.st.State {
	case orchestrator.SourceConnected:
		c.st.State, c.st.Since = orchestrator.SourceLost, now
		c.st.Losses++
		c.log.Warn("lost the connection to etcd; retrying until it is back (the agent keeps serving; the last state read from etcd stays applied)",
			"error", err, "revision", c.st.Revision)
	case orchestrator.SourceConnecting:
		if first {
			c.log.Warn("cannot reach etcd; retrying until it answers (the agent is not ready before it read etcd's state)", "error", err)
		} else {
			c.log.Debug("etcd still unreachable", "error", err, "for", now.Sub(c.st.Since).Round(time.Millisecond), "retry-in", retryIn)
		}
	case orchestrator.SourceLost:
		c.log.Debug("etcd still unreachable", "error", err, "lost-for", now.Sub(c.st.Since).Round(time.Millisecond), "retry-in", retryIn)
	default:
		return
	}
	c.st.Error = err.Error()
}

// established records a full read of etcd's state at rev.
func (c *connection) established(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	switch c.st.State {
	case orchestrator.SourceConnecting:
		c.log.Info("connected to etcd", "revision", rev, "after", now.Sub(c.st.Since).Round(time.Millisecond))
	case orchestrator.SourceLost:
		c.log.Info("the connection to etcd is back; applying its state", "revision", rev,
			"lost-for", now.Sub(c.st.Since).Round(time.Millisecond), "lost-at-revision", c.st.Revision)
	case orchestrator.SourceConnected:
		c.st.Revision = max(c.st.Revision, rev)
		return
	default:
		return
	}
	c.st = orchestrator.Connection{State: orchestrator.SourceConnected, Since: now, Revision: rev, Losses: c.st.Losses}
}

// seen records a revision of a watch response.
func (c *connection) seen(rev int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st.State == orchestrator.SourceConnected {
		c.st.Revision = max(c.st.Revision, rev)
	}
}

// stopped records that Run ends on an error retrying cannot fix.
func (c *connection) stopped(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.State, c.st.Since, c.st.Error = orchestrator.SourceStopped, c.now(), err.Error()
}
