package ifplugin

import (
	"log/slog"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// driftRecorder is a DriftReporter over one metadata map that records the
// reports.
type driftRecorder struct {
	m       api.MetadataMap
	reports []api.DriftReport
}

func (r *driftRecorder) ReportDrift(reports ...api.DriftReport) error {
	r.reports = append(r.reports, reports...)
	return nil
}

func (r *driftRecorder) GetMetadataMap(string) api.MetadataMap { return r.m }

// Midway through a transaction (a wave of admin states set down, the
// interfaces' values updated in the next wave, deletes whose results the
// scheduler has not taken yet), the metadata holds the values before: what
// the agent itself just did is no drift; anything else still is.
func TestReportDriftMidwayThroughTheAgentsTransaction(t *testing.T) {
	m := newIndexMap(nil)
	for i, name := range []string{"set-down", "deleted", "other-down", "other-deleted"} {
		m.Put(name, &Metadata{SwIfIndex: uint32(i + 1), Value: &vppif.Interface{Name: name, Enabled: true}})
	}
	// Their replies have come (settled): VPP has carried them out.
	m.record("set-down", agentChange{SwIfIndex: 1})()
	m.record("deleted", agentChange{SwIfIndex: 2, Deleted: true})()
	// A change recorded at another index (an interface of the same name
	// before) says nothing about this one, in flight or not.
	m.record("other-down", agentChange{SwIfIndex: 7})
	r := &driftRecorder{m: m}
	w := &LinkStateWatcher{drift: r, log: slog.New(slog.DiscardHandler), evented: map[uint32]bool{1: false, 2: true, 3: false, 4: true}}
	states := []vppcalls.LinkState{
		{SwIfIndex: 1, Tag: "set-down"},
		{SwIfIndex: 3, Tag: "other-down"},
	}
	if err := w.reportDrift(states); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{AdminStateKey("other-down", true): true, InterfaceKey("other-deleted"): true}
	if len(r.reports) != len(want) {
		t.Fatalf("reports %v, want the keys %v", r.reports, want)
	}
	for _, rep := range r.reports {
		if !want[rep.Key] {
			t.Errorf("reported %s (%s): the agent's own change", rep.Key, rep.Cause)
		}
	}
	// Once the scheduler has the new metadata, the record of another
	// index is dropped with it, and a change by someone else after the
	// agent's is drift again.
	m.Put("set-down", &Metadata{SwIfIndex: 1, Value: &vppif.Interface{Name: "set-down"}})
	r.reports, w.evented = nil, map[uint32]bool{1: false}
	if err := w.reportDrift([]vppcalls.LinkState{{SwIfIndex: 1, Tag: "set-down", AdminUp: true}}); err != nil {
		t.Fatal(err)
	}
	if len(r.reports) != 1 || r.reports[0].Key != AdminStateKey("set-down", false) {
		t.Errorf("reports %v, want the admin state of set-down set up by someone else", r.reports)
	}
}

// A request of the agent's still waiting for its reply may not be carried
// out when the watcher lists VPP: an interface it sets up, VPP still
// showing it down (as created), is not reported; once the reply has come,
// the same state is drift. An interface the agent just created is down as
// the agent left it until its admin state is set.
func TestReportDriftNotWhileTheAgentsRequestIsInFlight(t *testing.T) {
	m := newIndexMap(nil)
	m.Put("setting-up", &Metadata{SwIfIndex: 1, Value: &vppif.Interface{Name: "setting-up", Enabled: true}})
	m.Put("created", &Metadata{SwIfIndex: 2, Value: &vppif.Interface{Name: "created", Enabled: true}})
	settle := m.record("setting-up", agentChange{SwIfIndex: 1, AdminUp: true})
	m.record("created", agentChange{SwIfIndex: 2})() // created (down), its admin state not set yet
	r := &driftRecorder{m: m}
	w := &LinkStateWatcher{drift: r, log: slog.New(slog.DiscardHandler), evented: map[uint32]bool{1: true, 2: true}}
	down := []vppcalls.LinkState{{SwIfIndex: 1, Tag: "setting-up"}, {SwIfIndex: 2, Tag: "created"}}
	if err := w.reportDrift(down); err != nil {
		t.Fatal(err)
	}
	if len(r.reports) != 0 {
		t.Errorf("reports %v while the agent's request is in flight and of an interface it just created", r.reports)
	}
	settle()
	w.evented = map[uint32]bool{1: true}
	if err := w.reportDrift(down[:1]); err != nil {
		t.Fatal(err)
	}
	if len(r.reports) != 1 || r.reports[0].Key != AdminStateKey("setting-up", true) {
		t.Errorf("reports %v once the reply came, want setting-up's admin state set down by someone else", r.reports)
	}
}
