package main

import (
	"strings"

	"github.com/netagent-io/netagent/plugins/kvscheduler/webui"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// healthChecks are the health lines of the web view's summary, from what
// /readyz and /info/status read: the readiness, each northbound source,
// and the southbound (VPP's connection, Linux).
func (a *Agent) healthChecks() []webui.Check {
	ok, why := a.ready()
	ready := webui.Check{Area: "agent", Name: "ready (/readyz)", OK: ok, Status: "ready"}
	if !ok {
		ready.Status, ready.Detail = "not ready", "waiting for "+strings.Join(why, "; ")
	} else if degraded := a.orch.Degraded(); len(degraded) > 0 {
		ready.Status, ready.Detail = "degraded", strings.Join(degraded, "; ")
	}
	checks := []webui.Check{ready}
	for _, src := range a.orch.Sources() {
		c := webui.Check{Area: "NB", Name: "source " + string(src.ID), Status: string(src.State), Detail: src.Error,
			OK: src.State == orchestrator.SourceActive || src.State == orchestrator.SourceConnected}
		if !src.Synced {
			c.OK, c.Status = false, c.Status+", first state not delivered"
		}
		checks = append(checks, c)
	}
	if a.vpp == nil {
		checks = append(checks, webui.Check{Area: "SB", Name: "VPP", OK: true, Status: "disabled"})
	} else {
		vs := a.vpp.conn.Status()
		c := webui.Check{Area: "SB", Name: "VPP " + vs.Socket, OK: vs.Connected, Status: "connected"}
		if vs.Connected {
			c.Detail = vs.Version
		} else {
			c.Status, c.Detail = "not connected", vs.Error
		}
		if nr := vs.NotReady(); vs.Connected && len(nr) > 0 {
			c.OK, c.Status, c.Detail = false, "not ready", strings.Join(nr, "; ")
		}
		checks = append(checks, c)
	}
	linux := webui.Check{Area: "SB", Name: "Linux", OK: true, Status: "enabled"}
	if a.linux == nil {
		linux.Status = "disabled"
	}
	return append(checks, linux)
}
