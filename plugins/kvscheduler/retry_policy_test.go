package kvscheduler_test

// The retry policy belongs to the value, given by the NB transaction that set
// it, not to whichever transaction executes it (issue 15, C).

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/kvscheduler/internal/mocksb"
)

// Seed 002's AF-Packet, committed with retry, waits PENDING for its host
// interface. The SB notification of the host lets it be created; that Create
// fails (retriably): it is retried after the period of the NB transaction's
// retry options and ends CONFIGURED.
func TestRetryOfFailureInNotificationTxn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := openEnv(t)
		defer e.s.Close()
		e.register(
			mocksb.Options{Name: "linux-iface-watcher", Prefix: "linux/interface/host-name/"},
			mocksb.Options{Name: "vpp-iface", Prefix: "vpp/interface/", NB: true, WithMetadata: true, Deps: mocksb.DependsOn},
		)
		const (
			host   = "linux/interface/host-name/eth1"
			afp    = "vpp/interface/my-afpacket"
			afpVal = "afpacket host=eth1 dep=" + host
		)

		// 1. NB, with retry every 2s, at most 3 times: the AF-Packet waits.
		ctx := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: 2 * time.Second, MaxCount: 3, ExpBackoff: false}})
		e.mustCommit(ctx, set(afp, afpVal))
		e.expectOps("afpacket without host")
		e.expectState(afp, api.ValueStatePending, host)

		// 2. eth1 appears; the notification's transaction creates the
		//    AF-Packet, which fails: RETRYING, not FAILED.
		e.sb.Put(host, mocksb.Str("eth1"), nil, api.FromSB)
		e.sb.Fail("create", afp, nil, 1)
		e.notify(api.KVWithMetadata{Key: host, Value: mocksb.Str("eth1"), Origin: api.FromSB})
		e.expectOps("host appears", "create "+afp+"="+afpVal)
		e.expectState(host, api.ValueStateObtained)
		e.expectState(afp, api.ValueStateRetrying)

		// 3. Not before the NB transaction's period.
		time.Sleep(time.Second)
		synctest.Wait()
		e.expectOps("before the period")

		// 4. The retry creates it.
		time.Sleep(time.Second)
		synctest.Wait()
		e.expectOps("retry", "create "+afp+"="+afpVal)
		e.expectState(afp, api.ValueStateConfigured)
		e.expectSB("retry", map[string]string{host: "eth1", afp: afpVal})
		h := e.s.GetTransactionHistory(time.Time{}, time.Time{})
		if last := h[len(h)-1]; last.TxnType != api.RetryFailedOps || last.RetryAttempt != 1 {
			t.Errorf("last transaction: %v attempt %d, want the first RetryFailedOps attempt", last.TxnType, last.RetryAttempt)
		}
	})
}

// A route committed with retry waits for its interface; the interface comes
// in a transaction without retry, and the route's Create fails: the route is
// retried, with its own options. A route set without retry is not retried when a
// transaction with retry creates it and it fails.
func TestRetryPolicyOfTheTransactionThatSetTheValue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := openEnv(t)
		defer e.s.Close()
		e.register(ifaces(), routes())
		const route = "10.1.0.0/24 dep=iface/my-tap"
		withRetry := withOpts(context.Background(), api.TxnOptions{Retry: &api.RetryOpt{Period: time.Second, MaxCount: 3, ExpBackoff: false}})

		// 1. The route, with retry: PENDING.
		e.mustCommit(withRetry, set("route/my-route", route))
		e.expectState("route/my-route", api.ValueStatePending, "iface/my-tap")

		// 2. The interface, without retry: created; the route's Create
		//    fails and is retried after its own period.
		e.sb.Fail("create", "route/my-route", nil, 1)
		_, err := e.commit(context.Background(), set("iface/my-tap", "tap"))
		txnErr(t, err)
		e.expectOps("interface", "create iface/my-tap=tap", "create route/my-route="+route)
		e.expectState("iface/my-tap", api.ValueStateConfigured)
		e.expectState("route/my-route", api.ValueStateRetrying)
		time.Sleep(time.Second)
		synctest.Wait()
		e.expectOps("retry of the route", "create route/my-route="+route)
		e.expectState("route/my-route", api.ValueStateConfigured)

		// 3. A second route, set without retry, waits for another
		//    interface; a transaction with retry brings the interface, and
		//    the route's Create fails: FAILED, not retried.
		const routeB = "10.2.0.0/24 dep=iface/other"
		e.mustCommit(context.Background(), set("route/b", routeB))
		e.sb.Fail("create", "route/b", nil, 1)
		_, err = e.commit(withRetry, set("iface/other", "tap"))
		txnErr(t, err)
		e.expectOps("other interface", "create iface/other=tap", "create route/b="+routeB)
		e.expectState("route/b", api.ValueStateFailed)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		e.expectOps("no retry of route/b")
		e.expectState("route/b", api.ValueStateFailed)
	})
}
