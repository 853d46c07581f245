package l3plugin_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/vpptest"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// waitStatus waits (10 s at most) until the status of key satisfies ok,
// reading the watch channel statuses (WatchValueStatus with all keys), and
// returns it.
func (e *env) waitStatus(statuses <-chan *api.BaseValueStatus, key, what string, ok func(*api.ValueStatus) bool) *api.ValueStatus {
	e.t.Helper()
	if st := e.status(key); ok(st) {
		return st
	}
	deadline := time.After(10 * time.Second)
	for {
		select {
		case <-statuses:
			if st := e.status(key); ok(st) {
				return st
			}
		case <-deadline:
			e.t.Fatalf("%s: not %s within 10 s: %v", key, what, e.status(key))
			return nil
		}
	}
}

// ops lists the executed operations of a transaction with their errors:
// "CREATE <key> [flags] <error or ok>".
func (e *env) ops(seq uint64) []string {
	e.t.Helper()
	rec := e.s.GetRecordedTransaction(seq)
	if rec == nil {
		e.t.Fatalf("transaction %d not recorded", seq)
	}
	var out []string
	for _, op := range rec.Executed {
		if op.NOOP || op.Property {
			continue
		}
		result := "ok"
		if op.NewErr != nil {
			result = op.NewErr.Error()
		}
		out = append(out, fmt.Sprintf("%s %s %v %s", op.Operation, op.Key, op.Flags(), result))
	}
	return out
}

// checkCallTimeout checks that err says that VPP did not answer msg within
// the call timeout.
func checkCallTimeout(t *testing.T, err error, msg string, timeout time.Duration) {
	t.Helper()
	var ct *vppconn.CallTimeoutError
	if !errors.As(err, &ct) || ct.Message != msg {
		t.Errorf("error %v (%T), want a *vppconn.CallTimeoutError of %s", err, err, msg)
		return
	}
	if ct.Timeout <= timeout-50*time.Millisecond || ct.Timeout > timeout {
		t.Errorf("timeout error %+v, want about %v", ct, timeout)
	}
}

// A VPP call slower than the call timeout fails its value (RETRYING, the
// error naming the message and the timeout) and holds nothing else up: the
// values after it in its transaction and later transactions are applied.
// Once VPP is fast again the retry applies it. A call delayed within the
// timeout just succeeds, and a slow call that VPP carries out in the end is
// found by the refresh that follows the failure: applied once, CONFIGURED.
func TestSlowVPPCall(t *testing.T) {
	vpptest.NeedSim(t, "delays and fails requests (Delay, FailNext)")
	const (
		callTimeout = 300 * time.Millisecond
		// slow is longer than the call timeout and shorter than two: VPP
		// serves a connection's requests one at a time, and the requests it
		// holds behind a slow one (sent when the slow call gave up) are
		// answered within their own timeout. The health check tolerates it
		// (no reconnect).
		slow        = 400 * time.Millisecond
		retryPeriod = time.Second
	)
	e := newEnvWith(t, envOptions{callTimeout: callTimeout})
	statuses := make(chan *api.BaseValueStatus, 16)
	t.Cleanup(e.s.WatchValueStatus(statuses, nil))
	arp := func(ip string) kv {
		return arpKV(t, &vppl3.ARPEntry{Interface: "if1", IpAddress: ip, PhysAddress: "02:00:00:00:00:01", Static: true})
	}
	neighbor := func(ip string) string { return "if1 " + ip + " 02:00:00:00:00:01 static=true" }
	configured := func(st *api.ValueStatus) bool { return st.GetState() == api.ValueStateConfigured }

	// Delayed within the timeout: applied.
	e.sim.Delay("ip_neighbor_add_del", callTimeout/4)
	fast := arp("192.168.1.1")
	start := time.Now()
	e.mustCommit(iface("if1"), fast)
	if took := time.Since(start); took < callTimeout/4 {
		t.Fatalf("the commit took %v: the delay did not apply", took)
	}
	if st := e.status(fast.key); !configured(st) {
		t.Errorf("ARP entry delayed within the timeout: %v, want CONFIGURED", st)
	}

	// Slower than the timeout, and VPP refuses it in the end: the refresh
	// after the failure finds nothing, the value waits for its retry. The
	// route is created after it in the same transaction (its key sorts
	// after) while VPP still works on the slow request.
	e.sim.Delay("ip_neighbor_add_del", slow)
	e.sim.FailNext("ip_neighbor_add_del", -1, 1)
	refused := arp("192.168.1.2")
	sameTxn := routeKV(t, &vppl3.Route{DstNetwork: "10.2.0.0/16", OutgoingInterface: "if1"})
	seq, err := e.commitWith(api.TxnOptions{Retry: &api.RetryOpt{Period: retryPeriod, MaxCount: 3}}, refused, sameTxn)
	var te *api.TransactionError
	if !errors.As(err, &te) {
		t.Fatalf("commit: %v, want a TransactionError", err)
	}
	checkCallTimeout(t, te.ErrorOf(refused.key), "ip_neighbor_add_del", callTimeout)
	if err := te.ErrorOf(sameTxn.key); err != nil {
		t.Errorf("the route after the slow ARP entry failed: %v", err)
	}
	st := e.status(refused.key)
	if st.GetState() != api.ValueStateRetrying || !strings.Contains(st.GetError(), "ip_neighbor_add_del") ||
		!strings.Contains(st.GetError(), "within "+callTimeout.String()) {
		t.Errorf("slow ARP entry: %v, want RETRYING with an error naming ip_neighbor_add_del and the %v timeout", st, callTimeout)
	}
	timedOut := (&vppconn.CallTimeoutError{Timeout: callTimeout}).Error()
	if got := e.ops(seq); len(got) != 2 ||
		!strings.HasPrefix(got[0], "CREATE "+refused.key+" [] ip_neighbor_add_del") || !strings.HasSuffix(got[0], timedOut) ||
		got[1] != "CREATE "+sameTxn.key+" [] ok" {
		t.Errorf("executed\n%s\nwant the ARP entry's CREATE timing out, then the route's CREATE", strings.Join(got, "\n"))
	}
	if st := e.status(sameTxn.key); !configured(st) {
		t.Errorf("route in the slow value's transaction: %v, want CONFIGURED", st)
	}
	if got := e.neighbors(); slices.Contains(got, neighbor("192.168.1.2")) {
		t.Errorf("VPP refused the slow ARP entry, yet it is there: %v", got)
	}

	// A later transaction, VPP still slow on ARP entries, the failed value
	// waiting for its retry: applied, and only its own values are touched.
	laterIf, laterRoute := iface("if2"), routeKV(t, &vppl3.Route{DstNetwork: "10.3.0.0/16", OutgoingInterface: "if2"})
	seq = e.mustCommit(laterIf, laterRoute)
	wantOps := []string{"CREATE " + laterIf.key + " [] ok", "CREATE " + laterRoute.key + " [] ok"}
	if got := e.ops(seq); !slices.Equal(got, wantOps) {
		t.Errorf("later transaction executed %v, want %v", got, wantOps)
	}

	// VPP is fast again: the retry applies the value.
	e.sim.Delay("ip_neighbor_add_del", 0)
	fastAgain := time.Now()
	e.waitStatus(statuses, refused.key, "CONFIGURED by its retry", configured)
	var retried bool
	for _, rec := range e.s.GetTransactionHistory(fastAgain, time.Time{}) {
		for _, op := range rec.Executed {
			if rec.TxnType == api.RetryFailedOps && op.Key == refused.key && op.Operation == api.OpCreate && op.IsRetry && op.NewErr == nil {
				retried = true
			}
		}
	}
	if !retried {
		t.Errorf("no successful retry of %s after VPP was fast again", refused.key)
	}

	// Slower than the timeout, but VPP carries it out: the refresh after
	// the failure finds the entry, and the value is CONFIGURED without a
	// second request.
	e.sim.Delay("ip_neighbor_add_del", slow)
	done := arp("192.168.1.3")
	e.resetCalls()
	seq, err = e.commit(done)
	e.sim.Delay("ip_neighbor_add_del", 0)
	if got := e.ops(seq); len(got) != 1 || !strings.HasSuffix(got[0], timedOut) {
		t.Errorf("executed %v, want the CREATE that timed out", got)
	}
	if err != nil { // the failed call may be reported, nothing else
		if !errors.As(err, &te) || len(te.KVErrors) != 1 {
			t.Errorf("commit: %v, want at most the call timeout of %s", err, done.key)
		} else {
			checkCallTimeout(t, te.ErrorOf(done.key), "ip_neighbor_add_del", callTimeout)
		}
	}
	if st := e.status(done.key); !configured(st) {
		t.Errorf("ARP entry VPP added after the call timed out: %v, want CONFIGURED", st)
	}
	if w, _ := e.writes(); !slices.Equal(w, []string{"ip_neighbor_add_del"}) {
		t.Errorf("VPP writes %v, want one ip_neighbor_add_del", w)
	}

	want := []string{neighbor("192.168.1.1"), neighbor("192.168.1.2"), neighbor("192.168.1.3")}
	if got := e.neighbors(); !slices.Equal(got, want) {
		t.Errorf("neighbours %v, want %v", got, want)
	}
	// VPP and the scheduler agree: a full resync changes nothing.
	e.resetCalls()
	seq, err = e.resync(api.FullResync, iface("if1"), fast, refused, sameTxn, done, laterIf, laterRoute)
	if err != nil {
		t.Fatalf("full resync: %v", err)
	}
	if got := e.ops(seq); len(got) != 0 {
		t.Errorf("full resync executed %v", got)
	}
	if w, _ := e.writes(); len(w) != 0 {
		t.Errorf("full resync wrote %v", w)
	}
}
