package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// northboundCollector exports the state of the northbound sources that
// have a connection (etcd), read from Orchestrator.Sources at each scrape:
//
//	netagent_northbound_source_connected{source}   gauge, 1 while connected, 0 otherwise
//	netagent_northbound_source_lost_total{source}  counter, connections lost since the start
//	netagent_northbound_source_revision{source}    gauge, the last revision seen
//
// source is the orchestrator's SourceID (etcd). The sources without a
// connection (gRPC, the init file) have no series: nothing of theirs can be
// lost. An alert on netagent_northbound_source_connected == 0 for a while
// catches an agent that does not follow its etcd (the first connection
// included).
type northboundCollector struct {
	orch                      *orchestrator.Orchestrator
	connected, lost, revision *prometheus.Desc
}

func newNorthboundCollector(o *orchestrator.Orchestrator) *northboundCollector {
	desc := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName("netagent", "northbound", name), help, []string{"source"}, nil)
	}
	return &northboundCollector{orch: o,
		connected: desc("source_connected", "1 while the northbound source is connected to its server (etcd), 0 while connecting, lost or stopped."),
		lost:      desc("source_lost_total", "Times the northbound source lost the connection to its server."),
		revision:  desc("source_revision", "The last revision of its server the northbound source has seen (etcd: of its last read or watch response)."),
	}
}

func (c *northboundCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.connected
	ch <- c.lost
	ch <- c.revision
}

func (c *northboundCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.orch.Sources() {
		if st.State == orchestrator.SourceActive {
			continue
		}
		connected := 0.0
		if st.State == orchestrator.SourceConnected {
			connected = 1
		}
		id := string(st.ID)
		ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, connected, id)
		ch <- prometheus.MustNewConstMetric(c.lost, prometheus.CounterValue, float64(st.Losses), id)
		ch <- prometheus.MustNewConstMetric(c.revision, prometheus.GaugeValue, float64(st.Revision), id)
	}
}
