package etcdsource

import "time"

// liveness follows whether a watch still hears from etcd: after interval
// without a response it asks for a progress notification (etcd answers
// one on the watch's stream, at once, when its watchers are in sync), and
// after another interval without a response the watch is silent. etcd
// itself ends a require-leader watch when its member lost the leader; this
// covers what that cannot see: a member that hangs, a connection that
// passes nothing while TCP keeps it open.
type liveness struct {
	interval time.Duration
	now      func() time.Time
	ticker   *time.Ticker // nil: never asks
	last     time.Time    // the last response
	asked    time.Time    // when a progress request went out; zero: none since last
}

// livenessCheck is what a tick of liveness calls for.
type livenessCheck int

const (
	quiet       livenessCheck = iota // nothing to do
	askProgress                      // send a progress request
	silent                           // no answer: the watch is broken
)

func newLiveness(interval time.Duration, now func() time.Time) *liveness {
	l := &liveness{interval: interval, now: now, last: now()}
	if interval > 0 {
		// Ticks at half the interval: a check is late by at most that.
		l.ticker = time.NewTicker(interval / 2)
	}
	return l
}

// tick is the channel to wait on for checks (nil, never ready, when off).
func (l *liveness) tick() <-chan time.Time {
	if l.ticker == nil {
		return nil
	}
	return l.ticker.C
}

func (l *liveness) stop() {
	if l.ticker != nil {
		l.ticker.Stop()
	}
}

// heard records a response of the watch (events, a progress notification,
// an error, the channel's end).
func (l *liveness) heard() { l.last, l.asked = l.now(), time.Time{} }

// silentFor is how long the watch has been silent.
func (l *liveness) silentFor() time.Duration { return l.now().Sub(l.last) }

// check says what to do at a tick.
func (l *liveness) check() livenessCheck {
	now := l.now()
	switch {
	case now.Sub(l.last) < l.interval:
		return quiet
	case l.asked.IsZero():
		l.asked = now
		return askProgress
	case now.Sub(l.asked) >= l.interval:
		return silent
	}
	return quiet
}
