package etcdsource

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/connectivity"
)

// flappingConn is a connection that is READY whenever connectionLost
// reads its state, but changes it (changes times) in between: it went from
// READY through CONNECTING back to READY before the read (etcd restarted on
// the same address, the client reconnected at once).
type flappingConn struct{ changes int }

func (c *flappingConn) GetState() connectivity.State { return connectivity.Ready }

func (c *flappingConn) WaitForStateChange(ctx context.Context, _ connectivity.State) bool {
	if c.changes > 0 {
		c.changes--
		return true
	}
	<-ctx.Done()
	return false
}

// TestConnectionLostSeesAQuickReconnect: a connection that left READY is
// lost, even when it is READY again when connectionLost looks (it missed
// this on a loaded machine, and the watch then resumed on an etcd that came
// back empty, missing its first revisions).
func TestConnectionLostSeesAQuickReconnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	lost := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		connectionLost(ctx, &flappingConn{changes: 2}, lost)
	}()
	<-done
	select {
	case <-lost:
	default:
		t.Fatal("connectionLost returned without closing lost: the reconnect went unnoticed")
	}
}

// TestConnectionLostNotWhileReady: a connection that stays READY is not
// lost.
func TestConnectionLostNotWhileReady(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lost := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		connectionLost(ctx, &flappingConn{}, lost)
	}()
	cancel()
	<-done
	select {
	case <-lost:
		t.Fatal("lost closed for a connection that stayed READY")
	default:
	}
}

// stepConn goes through states, one per WaitForStateChange, and then
// stays in the last one.
type stepConn struct {
	states []connectivity.State
}

func (c *stepConn) GetState() connectivity.State { return c.states[0] }

func (c *stepConn) WaitForStateChange(ctx context.Context, _ connectivity.State) bool {
	if len(c.states) > 1 {
		c.states = c.states[1:]
		return true
	}
	<-ctx.Done()
	return false
}

// connectionLost is started before the full read, while the client may
// still be reconnecting: failures before the connection is READY are not a
// loss; leaving READY afterwards is.
func TestConnectionLostFromBeforeTheRead(t *testing.T) {
	for _, tc := range []struct {
		name   string
		states []connectivity.State
		lost   bool
	}{
		{"reconnecting then ready", []connectivity.State{connectivity.TransientFailure, connectivity.Connecting, connectivity.Ready}, false},
		{"idle then ready", []connectivity.State{connectivity.Idle, connectivity.Ready}, false},
		{"ready then idle", []connectivity.State{connectivity.TransientFailure, connectivity.Ready, connectivity.Idle}, true},
		{"ready then failed", []connectivity.State{connectivity.Ready, connectivity.TransientFailure}, true},
		{"shut down", []connectivity.State{connectivity.Connecting, connectivity.Shutdown}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			defer cancel()
			lost := make(chan struct{})
			connectionLost(ctx, &stepConn{states: tc.states}, lost)
			select {
			case <-lost:
				if !tc.lost {
					t.Error("lost closed")
				}
			default:
				if tc.lost {
					t.Error("lost not closed")
				}
			}
		})
	}
}
