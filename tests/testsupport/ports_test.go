package testsupport

import (
	"fmt"
	"net"
	"testing"
)

// FreePorts: distinct ports below the kernel's ephemeral range, each
// bindable when returned, never returned twice by the process.
func TestFreePorts(t *testing.T) {
	low := ephemeralLow()
	seen := map[int]bool{}
	for range 5 {
		for _, p := range FreePorts(t, 4) {
			if p < 10000 || p >= low {
				t.Errorf("port %d: not in 10000-%d", p, low-1)
			}
			if seen[p] {
				t.Errorf("port %d returned twice", p)
			}
			seen[p] = true
			l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
			if err != nil {
				t.Errorf("port %d cannot be bound: %v", p, err)
				continue
			}
			_ = l.Close()
		}
	}
}
