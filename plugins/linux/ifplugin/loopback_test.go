package ifplugin_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// TestLoopbackWithoutHostName: a LOOPBACK value is the lo of its namespace
// whatever its logical name; host_if_name may be left empty (or be lo), and
// any other host name is INVALID, naming the one given.
func TestLoopbackWithoutHostName(t *testing.T) {
	needRoot(t)
	ns := namespace(t, "ifp-lo1")
	run(t, "ip", "netns", "add", ns)
	a := newAgent(t)
	lo := &linuxif.Interface{Name: "w3lo1", Type: linuxif.Interface_LOOPBACK, Enabled: true, Namespace: nsRef(ns), IpAddresses: []string{"10.98.0.1/32"}}
	a.mustCommit(lo)
	if st := a.s.GetValueStatus(ifplugin.InterfaceKey("w3lo1")).GetValue(); st.GetState() != api.ValueStateConfigured {
		t.Fatalf("LOOPBACK w3lo1 without host_if_name: %v %q, want CONFIGURED", st.GetState(), st.GetError())
	}
	if got := addrs(t, ns, "lo"); !slices.Contains(got, "10.98.0.1/32") {
		t.Errorf("addresses of lo in %s: %v", ns, got)
	}
	if ops := fullResync(a, lo); len(ops) > 0 {
		t.Errorf("resync executed %v", ops)
	}
	a.delete("w3lo1")
	if got := addrs(t, ns, "lo"); slices.Contains(got, "10.98.0.1/32") {
		t.Errorf("addresses of lo in %s after the value was deleted: %v", ns, got)
	}

	bad := &linuxif.Interface{Name: "w3lo2", HostIfName: "lo2", Type: linuxif.Interface_LOOPBACK, Enabled: true, Namespace: nsRef(ns)}
	_, err := a.commit(api.TxnOptions{}, bad)
	st := a.s.GetValueStatus(ifplugin.InterfaceKey("w3lo2")).GetValue()
	if err == nil || st.GetState() != api.ValueStateInvalid || !strings.Contains(st.GetError(), `host_if_name must be empty or lo, not "lo2"`) {
		t.Errorf("LOOPBACK with host_if_name lo2: %v, %v %q; want INVALID naming lo2", err, st.GetState(), st.GetError())
	}
}
