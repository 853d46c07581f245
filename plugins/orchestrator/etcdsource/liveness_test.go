package etcdsource

import (
	"testing"
	"time"
)

func TestLiveness(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	l := newLiveness(2*time.Second, clock)
	defer l.stop()
	step := func(d time.Duration, want livenessCheck) {
		t.Helper()
		now = now.Add(d)
		if got := l.check(); got != want {
			t.Fatalf("at +%v idle: %v, want %v", l.silentFor(), got, want)
		}
	}
	step(time.Second, quiet)
	step(time.Second, askProgress) // 2 s idle: ask
	step(time.Second, quiet)       // asked 1 s ago
	l.heard()                      // the progress notification came
	step(time.Second, quiet)
	step(time.Second, askProgress)
	step(1999*time.Millisecond, quiet)
	step(time.Millisecond, silent) // no answer within the interval
	if got := l.silentFor(); got != 4*time.Second {
		t.Errorf("silent for %v, want 4s", got)
	}
}

func TestLivenessOff(t *testing.T) {
	l := newLiveness(-1, time.Now)
	defer l.stop()
	if l.tick() != nil {
		t.Error("a negative interval ticks")
	}
}
