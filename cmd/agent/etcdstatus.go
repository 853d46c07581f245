package main

import (
	"strings"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	statuspb "github.com/netagent-io/netagent/proto/status"
)

// The names of the agent's parts in its status in etcd: the original's
// where one of its plugins did the same work (govpp, etcd).
const (
	statusOrchestrator = "orchestrator"
	statusEtcd         = "etcd"
	statusVPP          = "govpp"
	statusLinux        = "linux"
)

// newStatusPublisher returns the publisher of the agent's status in its
// etcd (nil when there is none or etcd.status.disabled), with the values'
// statuses when etcd.status.values. The etcd client must be made
// (etcdPart.start).
func (a *Agent) newStatusPublisher() *etcdstatus.Publisher {
	if a.etcd == nil || a.cfg.Etcd.Status.Disabled {
		return nil
	}
	v := buildVersion()
	opts := etcdstatus.Options{
		Label: a.cfg.Label, TTL: a.cfg.Etcd.Status.TTL.Duration, Started: a.started, Log: a.log,
		Build: etcdstatus.Build{Version: v["version"], Date: v["vcs.time"], Commit: v["vcs.revision"]},
	}
	if a.cfg.Etcd.Status.Values {
		opts.Values = a.sched
	}
	return etcdstatus.New(a.etcd.source.Client(), a.statusReport, opts)
}

// statusReport is the agent's status as published in etcd (the states'
// meaning: internal/etcdstatus's package documentation). It reads what
// /readyz and /info/status read.
func (a *Agent) statusReport() etcdstatus.Report {
	var r etcdstatus.Report
	add := func(name string, state statuspb.OperationalState, err string) {
		r.Plugins = append(r.Plugins, etcdstatus.Plugin{Name: name, State: state, Error: err})
	}

	add(statusOrchestrator, okOnce(a.orch.Started()), "")
	for _, src := range a.orch.Sources() {
		if src.ID != orchestrator.SourceEtcd {
			continue
		}
		switch src.State {
		case orchestrator.SourceConnected:
			add(statusEtcd, statuspb.OperationalState_OK, "")
		case orchestrator.SourceLost, orchestrator.SourceStopped:
			add(statusEtcd, statuspb.OperationalState_ERROR, src.Error)
		default: // connecting
			add(statusEtcd, statuspb.OperationalState_INIT, src.Error)
		}
	}
	if a.vpp != nil {
		vs := a.vpp.conn.Status()
		notReady := vs.NotReady()
		switch {
		case len(notReady) == 0:
			add(statusVPP, statuspb.OperationalState_OK, "")
		case vs.Connected:
			add(statusVPP, statuspb.OperationalState_ERROR, strings.Join(notReady, "; "))
		case !isClosed(a.vpp.startWaitOver):
			add(statusVPP, statuspb.OperationalState_INIT, "") // the agent waits for VPP's first connection
		default:
			why := strings.Join(notReady, "; ")
			if vs.Error != "" {
				why += ": " + vs.Error
			}
			add(statusVPP, statuspb.OperationalState_ERROR, why)
		}
	}
	if a.linux != nil {
		add(statusLinux, okOnce(a.linux.watcher.Synced()), "")
	}

	ready, _ := a.ready()
	r.State = statuspb.OperationalState_OK
	if !ready {
		r.State = statuspb.OperationalState_INIT
	}
	for _, p := range r.Plugins {
		if p.State == statuspb.OperationalState_ERROR {
			r.State = statuspb.OperationalState_ERROR
		}
	}
	return r
}

// okOnce is OK once done is closed, INIT before.
func okOnce(done <-chan struct{}) statuspb.OperationalState {
	if isClosed(done) {
		return statuspb.OperationalState_OK
	}
	return statuspb.OperationalState_INIT
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
