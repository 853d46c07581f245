package main

import (
	"time"
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
	// FirstSync tells whether the first full sync of the northbound is in.
	FirstSync bool                      `json:"first_sync"`
	Etcd      etcdStatusJSON            `json:"etcd"`
	Linux     bool                      `json:"linux"`
	VPP       vppStatusJSON             `json:"vpp"`
	Values    map[string]int            `json:"values_by_state"`
	ByDesc    map[string]map[string]int `json:"values_by_descriptor"`
	Queue     int                       `json:"queue_length"`
	Txns      map[string]uint64         `json:"transactions"`
}

type etcdStatusJSON struct {
	Endpoints []string `json:"endpoints,omitempty"`
	Embedded  bool     `json:"embedded"`
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
	out := statusJSON{
		Label: a.cfg.Label, Version: buildVersion(), Started: a.started.UTC(),
		Uptime: time.Since(a.started).Round(time.Second).String(), Ready: ok, WaitingFor: why,
		Etcd:  etcdStatusJSON{Embedded: a.cfg.Etcd.EmbeddedDir != ""},
		Linux: a.linux != nil, Values: st.ValuesByState, ByDesc: st.ValuesByDescriptor,
		Queue: st.QueueLength, Txns: st.Transactions,
	}
	if a.etcd != nil {
		out.Etcd.Endpoints = a.etcd.endpoints
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
