package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource"
)

// confirmCollector exports the changes to confirm of the gRPC source
// (confirm_within), read from grpcsource.Server.ConfirmStatus at each
// scrape:
//
//	netagent_confirm_pending         gauge, 1 while a change is pending confirmation
//	netagent_confirm_reverts_total   counter, unconfirmed changes reverted since the start
//
// The reverts include those made at start for a deadline that passed while
// the agent was stopped.
type confirmCollector struct {
	srv              *grpcsource.Server
	pending, reverts *prometheus.Desc
}

func newConfirmCollector(srv *grpcsource.Server) *confirmCollector {
	return &confirmCollector{srv: srv,
		pending: prometheus.NewDesc("netagent_confirm_pending", "1 while a gRPC change is pending confirmation (confirm_within), 0 otherwise.", nil, nil),
		reverts: prometheus.NewDesc("netagent_confirm_reverts_total", "gRPC changes reverted because they were not confirmed in time (or reverted on request).", nil, nil),
	}
}

func (c *confirmCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.pending
	ch <- c.reverts
}

func (c *confirmCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.srv.ConfirmStatus()
	pending := 0.0
	if st.Pending != nil {
		pending = 1
	}
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, pending)
	ch <- prometheus.MustNewConstMetric(c.reverts, prometheus.CounterValue, float64(st.Reverts))
}
