package vppconn

import (
	"errors"
	"testing"

	"go.fd.io/govpp/api"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/ip"
)

// retvalOf is a reply whose Retval is not an integer: not a VPP error.
type retvalOf[T any] struct {
	interfaces.SwInterfaceDetails
	Retval T
}

// TestRetvalError: a reply's non-zero integer Retval is its VPP error,
// also when asked again (the field's index is kept per type); a zero one,
// a reply without the field or with a field of another kind is none.
func TestRetvalError(t *testing.T) {
	for range 2 {
		if err := retvalError(&ip.IPRouteAddDelReply{Retval: -6}); !errors.Is(err, api.VPPApiError(-6)) {
			t.Errorf("Retval -6: %v, want VPP error -6 (%v)", err, api.VPPApiError(-6))
		}
		if err := retvalError(&interfaces.CreateLoopbackReply{Retval: -2, SwIfIndex: 3}); !errors.Is(err, api.VPPApiError(-2)) {
			t.Errorf("Retval -2: %v, want VPP error -2", err)
		}
		for name, reply := range map[string]any{
			"Retval 0":           &ip.IPRouteAddDelReply{},
			"no Retval":          &interfaces.SwInterfaceDetails{SwIfIndex: 1},
			"a string Retval":    &retvalOf[string]{Retval: "-6"},
			"an unsigned Retval": &retvalOf[uint32]{Retval: 6},
		} {
			msg, ok := reply.(api.Message)
			if !ok {
				// The generic test types are messages by their embedded
				// SwInterfaceDetails.
				t.Fatalf("%s: %T is not a message", name, reply)
			}
			if err := retvalError(msg); err != nil {
				t.Errorf("%s: %v, want no error", name, err)
			}
		}
	}
}

func BenchmarkRetvalError(b *testing.B) {
	reply := &ip.IPRouteAddDelReply{Retval: 0}
	for b.Loop() {
		if retvalError(reply) != nil {
			b.Fatal("an error")
		}
	}
}
