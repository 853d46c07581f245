package ifplugin_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	"github.com/netagent-io/netagent/tests/vppsim"
)

// A VPP without memif (memif_plugin.so not loaded) disables the memif
// values only: they fail, naming the message VPP lacks, and loopbacks and
// TAPs are managed as usual (created, found again by a resync).
func TestVPPWithoutMemif(t *testing.T) {
	v := vpptest.Start(t, vpptest.Options{Sim: vppsim.Options{Omit: []string{"memif_create_v2"}}, Areas: vppcalls.Areas()})
	if d := v.M.Status().Disabled; len(d) != 1 || d[vppcalls.MemifAreaName] == nil {
		t.Fatalf("disabled areas %v, want %s only", d, vppcalls.MemifAreaName)
	}
	p := ifplugin.New(v.M, quiet)
	e := &env{t: t, vpp: v, sim: v.Sim, m: v.M, p: p}
	e.s = e.newScheduler(p)
	loop := &vppif.Interface{Name: "loopA", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true, IpAddresses: []string{"10.11.0.1/24"}}
	tap := &vppif.Interface{Name: "tapA", Type: vppif.Interface_TAP, Enabled: true, Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{HostIfName: "tapa-host"}}}
	memif := &vppif.Interface{Name: "memA", Type: vppif.Interface_MEMIF, Enabled: true,
		Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Master: true, Id: 3, SocketFilename: filepath.Join(t.TempDir(), "m.sock")}}}
	retry := api.TxnOptions{Retry: &api.RetryOpt{Period: time.Millisecond, MaxCount: 3}}
	if _, err := e.commitWith(retry, loop, tap, memif); err == nil || !strings.Contains(err.Error(), "memif_create_v2") {
		t.Errorf("commit: %v, want memA's error naming memif_create_v2", err)
	}
	e.s.TransactionBarrier()
	for _, i := range []*vppif.Interface{loop, tap} {
		if st, vs := stateOf(e.s, ifplugin.InterfaceKey(i.GetName())); st != api.ValueStateConfigured {
			t.Errorf("%s: %v %v, want CONFIGURED", i.GetName(), st, vs)
		}
		if _, ok := v.InterfaceTagged(i.GetName()); !ok {
			t.Errorf("%s not in VPP", i.GetName())
		}
	}
	st, vs := stateOf(e.s, ifplugin.InterfaceKey("memA"))
	if st != api.ValueStateFailed || !strings.Contains(vs.GetError(), "memif_create_v2") {
		t.Errorf("memA: %v %v, want FAILED naming memif_create_v2", st, vs)
	}
	// A resync finds the loopback and the TAP as they are: it tries memA
	// again, and changes nothing else.
	seq, err := e.commitWith(api.TxnOptions{Resync: api.FullResync}, loop, tap, memif)
	if err == nil {
		t.Error("resync: no error for memA")
	}
	if ops := vpptest.Executed(t, e.s, seq); !slices.Equal(ops, []string{"CREATE " + ifplugin.InterfaceKey("memA") + " []"}) {
		t.Errorf("resync executed %v, want memA's create only", ops)
	}
}
