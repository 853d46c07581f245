package orchestrator

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// SourceState is the state of a northbound source's connection.
type SourceState string

// The states of a source. A source without a connection to keep (gRPC
// clients, the init file, the in-process client) is always SourceActive.
const (
	// SourceActive: the source has no connection; it delivers whenever
	// its clients send (gRPC) or once (the init file).
	SourceActive SourceState = "active"
	// SourceConnecting: the source has not reached its server yet.
	SourceConnecting SourceState = "connecting"
	// SourceConnected: the source reads its server and follows it.
	SourceConnected SourceState = "connected"
	// SourceLost: the source was connected and lost its server; it retries.
	SourceLost SourceState = "lost"
	// SourceStopped: the source stopped on an error retrying cannot fix
	// (refused credentials, a closed client); it delivers nothing more.
	SourceStopped SourceState = "stopped"
)

// Connection is the state of a source's connection, as the source reports
// it (a Connector).
type Connection struct {
	State SourceState
	// Since is when the source entered State.
	Since time.Time
	// Error is, when not connected, the last error of the source's
	// attempts (the one that made it lost, then that of each retry).
	Error string
	// Revision is the last revision of its server the source has seen
	// (etcd: the revision of its last read or watch response; 0: none).
	Revision int64
	// Losses counts the times the connection was lost since the source
	// started.
	Losses uint64
}

// Connector is a source with a connection to keep (etcd): it tells the
// state of that connection. Connection is called from any goroutine, at
// any time, and must not call the orchestrator.
type Connector interface {
	Connection() Connection
}

// SourceStatus is the status of one source: the state of its connection
// (SourceActive for a source without one) and whether it delivered its
// first state.
type SourceStatus struct {
	ID SourceID
	Connection
	// Synced: the source delivered its first state (Resync).
	Synced bool
}

// RegisterConnection declares the connection of a source (registered with
// Register): Sources and Degraded read its state from c.
func (o *Orchestrator) RegisterConnection(id SourceID, c Connector) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.connectors[id] = c
}

// Sources returns the status of the registered sources, highest priority
// first.
func (o *Orchestrator) Sources() []SourceStatus {
	o.mu.Lock()
	out := make([]SourceStatus, 0, len(o.sources))
	connectors := map[SourceID]Connector{}
	for id := range o.sources {
		out = append(out, SourceStatus{ID: id, Connection: Connection{State: SourceActive}, Synced: o.synced[id]})
		connectors[id] = o.connectors[id]
	}
	o.mu.Unlock()
	// The connectors are asked without mu: they have locks of their own.
	for i := range out {
		if c := connectors[out[i].ID]; c != nil {
			out[i].Connection = c.Connection()
		}
	}
	slices.SortFunc(out, func(a, b SourceStatus) int {
		if pa, pb := priority[a.ID], priority[b.ID]; pa != pb {
			return pb - pa
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return out
}

// Degraded returns why the agent is degraded, one reason per source that
// lost its connection or stopped (none: it is not). A degraded agent keeps
// serving and keeps the dataplane as it is: the last state of such a
// source stays applied, and the other sources' changes still apply; only
// that source's changes do not arrive. A source still connecting for the
// first time is not a degradation: the agent is not ready until it
// delivers (Ready).
func (o *Orchestrator) Degraded() []string {
	var reasons []string
	for _, st := range o.Sources() {
		switch st.State {
		case SourceLost:
			reasons = append(reasons, fmt.Sprintf("source %s lost its connection at %s (%s); its last state (revision %d) stays applied, its changes do not arrive until it is back",
				st.ID, st.Since.UTC().Format(time.RFC3339), st.Error, st.Revision))
		case SourceStopped:
			reasons = append(reasons, fmt.Sprintf("source %s stopped at %s (%s); its last state (revision %d) stays applied, its changes no longer arrive (restart the agent once this is fixed)",
				st.ID, st.Since.UTC().Format(time.RFC3339), st.Error, st.Revision))
		}
	}
	return reasons
}
