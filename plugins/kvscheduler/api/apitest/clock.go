package apitest

import (
	"sync"
	"time"
)

// Clock is a scheduler clock (kvscheduler.Options.Clock) that a test
// moves by hand with Advance. Its timers (retries) run on real time, or
// never fire with NoTimers (a value waiting for its retry stays RETRYING).
type Clock struct {
	NoTimers bool

	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now implements the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// AfterFunc implements the clock: f runs after d of real time, or never
// with NoTimers. The function returned stops the timer.
func (c *Clock) AfterFunc(d time.Duration, f func()) func() bool {
	if c.NoTimers {
		return func() bool { return true }
	}
	return time.AfterFunc(d, f).Stop
}
