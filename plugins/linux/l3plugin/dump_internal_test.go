package l3plugin

import (
	"errors"
	"testing"

	"github.com/vishvananda/netlink"
)

// A dump the kernel interrupts is run again; one interrupted every time is an
// error, never a partial result.
func TestDumpRetriesInterruptedDumps(t *testing.T) {
	calls := 0
	got, err := dump("test", func() ([]int, error) {
		calls++
		if calls < 3 {
			return []int{1}, netlink.ErrDumpInterrupted // partial
		}
		return []int{1, 2, 3}, nil
	})
	if err != nil || len(got) != 3 || calls != 3 {
		t.Errorf("dump interrupted twice: %v, %v after %d calls; want the full result after 3", got, err, calls)
	}

	calls = 0
	got, err = dump("test", func() ([]int, error) {
		calls++
		return []int{1}, netlink.ErrDumpInterrupted
	})
	if !errors.Is(err, netlink.ErrDumpInterrupted) || got != nil || calls != maxDumpAttempts {
		t.Errorf("dump always interrupted: %v, %v after %d calls; want ErrDumpInterrupted and nothing after %d", got, err, calls, maxDumpAttempts)
	}

	calls = 0
	other := errors.New("boom")
	if _, err = dump("test", func() ([]int, error) { calls++; return nil, other }); !errors.Is(err, other) || calls != 1 {
		t.Errorf("dump failing otherwise: %v after %d calls; want the error at once", err, calls)
	}
}
