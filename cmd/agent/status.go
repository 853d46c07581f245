package main

import (
	"time"

	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// statusJSON is the answer of GET /info/status: what an operator asks first
// (agentctl status): is the agent ready, and if not why; which version;
// is VPP there; how many values are in which state.
type statusJSON struct {
	Label      string            `json:"label"`
	Version    map[string]string `json:"version"`
	Started    time.Time         `json:"started"`
	Uptime     string            `json:"uptime"`
	Ready      bool              `json:"ready"`
	WaitingFor []string          `json:"waiting_for,omitempty"`
	// Degraded are the reasons the agent is degraded (a northbound source
	// lost its connection), as /readyz gives them.
	Degraded []string `json:"degraded,omitempty"`
	// FirstSync tells whether the first full sync of the northbound is in.
	FirstSync bool           `json:"first_sync"`
	Etcd      etcdStatusJSON `json:"etcd"`
	// Northbound are the sources, highest priority first.
	Northbound []sourceStatusJSON        `json:"northbound"`
	Linux      bool                      `json:"linux"`
	VPP        vppStatusJSON             `json:"vpp"`
	Values     map[string]int            `json:"values_by_state"`
	ByDesc     map[string]map[string]int `json:"values_by_descriptor"`
	Queue      int                       `json:"queue_length"`
	Txns       map[string]uint64         `json:"transactions"`
	// PendingConfirmation is the gRPC change pending confirmation, if any.
	PendingConfirmation *pendingConfirmationJSON `json:"pending_confirmation,omitempty"`
}

// pendingConfirmationJSON is the grpcsource.PendingChange of the status.
type pendingConfirmationJSON struct {
	Seq         uint64    `json:"seq"`
	Description string    `json:"description"`
	Deadline    time.Time `json:"deadline"`
	// TimeLeft is the time until the revert, rounded to the second.
	TimeLeft string   `json:"time_left"`
	Keys     []string `json:"keys"`
}

type etcdStatusJSON struct {
	Endpoints []string `json:"endpoints,omitempty"`
	Embedded  bool     `json:"embedded"`
}

// sourceStatusJSON is a northbound source's orchestrator.SourceStatus.
type sourceStatusJSON struct {
	Source string `json:"source"`
	// State is active (no connection: gRPC, init file), connecting,
	// connected, lost or stopped.
	State string `json:"state"`
	// Since is when the source entered State, and For how long ago that
	// was (sources with a connection).
	Since *time.Time `json:"since,omitempty"`
	For   string     `json:"for,omitempty"`
	// Error is the last error when not connected.
	Error string `json:"error,omitempty"`
	// Revision is the last revision seen (etcd).
	Revision int64 `json:"revision,omitempty"`
	// Losses counts the connections lost since the start.
	Losses uint64 `json:"losses,omitempty"`
	Synced bool   `json:"synced"`
}

func sourcesJSON(sources []orchestrator.SourceStatus, now time.Time) []sourceStatusJSON {
	out := make([]sourceStatusJSON, 0, len(sources))
	for _, st := range sources {
		j := sourceStatusJSON{Source: string(st.ID), State: string(st.State), Error: st.Error,
			Revision: st.Revision, Losses: st.Losses, Synced: st.Synced}
		if !st.Since.IsZero() {
			since := st.Since.UTC()
			j.Since, j.For = &since, now.Sub(st.Since).Round(time.Second).String()
		}
		out = append(out, j)
	}
	return out
}

type vppStatusJSON struct {
	Enabled    bool                `json:"enabled"`
	Socket     string              `json:"socket,omitempty"`
	Connected  bool                `json:"connected"`
	PID        uint32              `json:"pid,omitempty"`
	Version    string              `json:"version,omitempty"`
	Reconnects int                 `json:"reconnects"`
	Error      string              `json:"error,omitempty"`
	Disabled   map[string][]string `json:"disabled,omitempty"`
}

// status is the answer of GET /info/status.
func (a *Agent) status() statusJSON {
	ok, why := a.ready()
	st := a.sched.GetStats()
	now := time.Now()
	out := statusJSON{
		Label: a.cfg.Label, Version: buildVersion(), Started: a.started.UTC(),
		Uptime: now.Sub(a.started).Round(time.Second).String(), Ready: ok, WaitingFor: why,
		Degraded: a.orch.Degraded(), Northbound: sourcesJSON(a.orch.Sources(), now),
		Etcd:  etcdStatusJSON{Embedded: a.cfg.Etcd.EmbeddedDir != ""},
		Linux: a.linux != nil, Values: st.ValuesByState, ByDesc: st.ValuesByDescriptor,
		Queue: st.QueueLength, Txns: st.Transactions,
	}
	if a.etcd != nil {
		out.Etcd.Endpoints = a.etcd.endpoints
	}
	if p := a.servers.configurer.ConfirmStatus().Pending; p != nil {
		out.PendingConfirmation = &pendingConfirmationJSON{Seq: p.Seq, Description: p.Description, Deadline: p.Deadline.UTC(),
			TimeLeft: max(p.Deadline.Sub(now), 0).Round(time.Second).String(), Keys: p.Keys}
	}
	select {
	case <-a.orch.Started():
		out.FirstSync = true
	default:
	}
	if a.vpp != nil {
		vs := a.vpp.conn.Status()
		out.VPP = vppStatusJSON{Enabled: true, Socket: vs.Socket, Connected: vs.Connected, PID: vs.PID,
			Version: vs.Version, Reconnects: vs.Reconnects, Error: vs.Error}
		if len(vs.Disabled) > 0 {
			out.VPP.Disabled = vs.Disabled
		}
	}
	return out
}
