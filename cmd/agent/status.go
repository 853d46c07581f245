package main

import (
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
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

func agentStatus(cfg Config, started time.Time, endpoints []string, ready func() (bool, []string),
	o *orchestrator.Orchestrator, s *kvscheduler.Scheduler, vppm *vppconn.Manager) statusJSON {
	ok, why := ready()
	st := s.GetStats()
	out := statusJSON{
		Label: cfg.Label, Version: buildVersion(), Started: started.UTC(),
		Uptime: time.Since(started).Round(time.Second).String(), Ready: ok, WaitingFor: why,
		Etcd:  etcdStatusJSON{Endpoints: endpoints, Embedded: cfg.Etcd.EmbeddedDir != ""},
		Linux: !cfg.Linux.Disabled, Values: st.ValuesByState, ByDesc: st.ValuesByDescriptor,
		Queue: st.QueueLength, Txns: st.Transactions,
	}
	select {
	case <-o.Started():
		out.FirstSync = true
	default:
	}
	if vppm != nil {
		vs := vppm.Status()
		out.VPP = vppStatusJSON{Enabled: true, Socket: vs.Socket, Connected: vs.Connected, PID: vs.PID,
			Version: vs.Version, Reconnects: vs.Reconnects, Error: vs.Error}
		if len(vs.Disabled) > 0 {
			out.VPP.Disabled = vs.Disabled
		}
	}
	return out
}
