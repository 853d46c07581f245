package etcdsource_test

import (
	"fmt"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

const (
	routeKey = "config/vpp/v2/route/"
	// own is the key of the route via eth0 to 10.1.0.0/16, old the
	// original's older form of it, without the interface.
	ownRoute = routeKey + "if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1"
	oldRoute = routeKey + "vrf/0/dst/10.1.0.0/16/gw/10.0.0.1"
	// A route without a next hop: two spellings of its older form.
	ownRouteNoGW  = routeKey + "if/eth0/vrf/0/dst/10.2.0.0/16"
	oldRouteNoGW  = routeKey + "vrf/0/dst/10.2.0.0/16"
	oldRouteNoGW2 = routeKey + "vrf/0/dst/10.2.0.0/16/"
)

func routeJSON(dst, gw string, weight int) string {
	return fmt.Sprintf(`{"dst_network":%q,"next_hop_addr":%q,"outgoing_interface":"eth0","weight":%d}`, dst, gw, weight)
}

func route(dst, gw string, weight int) orchestrator.KV {
	return orchestrator.KV{Value: &vppl3.Route{DstNetwork: dst, NextHopAddr: gw, OutgoingInterface: "eth0", Weight: uint32(weight)}}
}

// state builds the sink state wanted: key, KV pairs (an Err KV stands for
// any error).
func state(pairs ...any) map[string]orchestrator.KV {
	out := map[string]orchestrator.KV{}
	for i := 0; i < len(pairs); i += 2 {
		kv := pairs[i+1].(orchestrator.KV)
		kv.Key = pairs[i].(string)
		out[kv.Key] = kv
	}
	return out
}

var anErr = orchestrator.KV{Err: fmt.Errorf("any")}

// expectKV checks the note, or the error, of a key the sink has.
func (h *harness) expectKV(key, noteHas, errHas string) {
	h.t.Helper()
	_, st := h.sink.snapshot()
	kv, ok := st[key]
	switch {
	case !ok:
		h.t.Errorf("%s: the sink does not have it", key)
	case noteHas == "" && kv.Note != "":
		h.t.Errorf("%s: note %q, want none", key, kv.Note)
	case !strings.Contains(kv.Note, noteHas):
		h.t.Errorf("%s: note %q, want it to say %q", key, kv.Note, noteHas)
	case errHas != "" && (kv.Err == nil || !strings.Contains(kv.Err.Error(), errHas)):
		h.t.Errorf("%s: error %v, want it to say %q", key, kv.Err, errHas)
	}
}

func TestVariantKeyDeliveredUnderItsOwnKey(t *testing.T) {
	h := newHarness(t)
	h.run(etcdsource.Options{})
	h.waitSynced()

	h.put(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 1))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 1)))
	h.expectKV(ownRoute, fmt.Sprintf(`etcd key %q (the original agent's form, without if/<outgoing_interface>/) names this value`, prefix+oldRoute), "")

	// Updated, then deleted: the delete, which names only the etcd key,
	// deletes the value under its own key.
	h.put(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 2))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 2)))
	h.del(prefix + oldRoute)
	h.sink.waitState(t, state())

	// A value that stops being a variant: the route without its interface
	// is the value of the key read.
	h.put(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 3))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 3)))
	h.put(prefix+oldRoute, `{"dst_network":"10.1.0.0/16","next_hop_addr":"10.0.0.1"}`)
	h.sink.waitState(t, state(oldRoute, orchestrator.KV{Value: &vppl3.Route{DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1"}}))
	h.expectKV(oldRoute, "", "")
	// ... and back.
	h.put(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 4))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 4)))
	h.del(prefix + oldRoute)
	h.sink.waitState(t, state())

	// A name that differs from the key's is refused, naming both.
	h.put(prefix+vppIfKey+"loop1", vppIf("loop2", 1))
	h.sink.waitState(t, state(vppIfKey+"loop1", anErr))
	h.expectKV(vppIfKey+"loop1", "", `the key names "loop1" but the value is "loop2": ambiguous`)
}

func TestVariantKeyConflicts(t *testing.T) {
	h := newHarness(t)
	h.run(etcdsource.Options{})
	h.waitSynced()

	// The value's own key holds it against a variant written before or
	// after it.
	h.put(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 1))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 1)))
	h.put(prefix+ownRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 2))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 2), oldRoute, anErr))
	h.expectKV(ownRoute, "", "")
	h.expectKV(oldRoute, "", fmt.Sprintf("which etcd key %q holds", prefix+ownRoute))
	h.put(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 3))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 2), oldRoute, anErr))
	// The holder goes: the variant takes over.
	h.del(prefix + ownRoute)
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 3)))
	h.expectKV(ownRoute, prefix+oldRoute, "")
	// Back, then the variant goes.
	h.put(prefix+ownRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 4))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 4), oldRoute, anErr))
	h.del(prefix + oldRoute)
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 4)))
	h.del(prefix + ownRoute)
	h.sink.waitState(t, state())

	// Two variants: the first written holds the value.
	h.put(prefix+oldRouteNoGW, routeJSON("10.2.0.0/16", "", 1))
	h.put(prefix+oldRouteNoGW2, routeJSON("10.2.0.0/16", "", 2))
	h.sink.waitState(t, state(ownRouteNoGW, route("10.2.0.0/16", "", 1), oldRouteNoGW, anErr))
	h.expectKV(oldRouteNoGW, "", fmt.Sprintf("which etcd key %q holds", prefix+oldRouteNoGW))
	h.del(prefix + oldRouteNoGW)
	h.sink.waitState(t, state(ownRouteNoGW, route("10.2.0.0/16", "", 2)))
	h.expectKV(ownRouteNoGW, prefix+oldRouteNoGW2, "")
	h.del(prefix + oldRouteNoGW2)
	h.sink.waitState(t, state())

	// A variant and its own key in one etcd transaction, then both gone in
	// another.
	h.txn(clientv3.OpPut(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 5)), clientv3.OpPut(prefix+ownRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 6)))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 6), oldRoute, anErr))
	h.txn(clientv3.OpDelete(prefix+ownRoute), clientv3.OpDelete(prefix+oldRoute))
	h.sink.waitState(t, state())
}

// The full read rebuilds what the watch followed: at the start, and after
// etcd restarted (the watch broke and the source read everything again).
func TestVariantKeysRebuiltByTheFullRead(t *testing.T) {
	h := newHarness(t)
	h.put(prefix+oldRouteNoGW, routeJSON("10.2.0.0/16", "", 1))
	h.put(prefix+oldRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 1))
	h.put(prefix+ownRoute, routeJSON("10.1.0.0/16", "10.0.0.1", 2))
	h.put(prefix+oldRouteNoGW2, routeJSON("10.2.0.0/16", "", 2))
	h.run(etcdsource.Options{})
	h.waitSynced()
	want := state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 2), oldRoute, anErr,
		ownRouteNoGW, route("10.2.0.0/16", "", 1), oldRouteNoGW, anErr)
	h.sink.waitState(t, want)

	// A change the watch must follow with the rebuilt index: the holder of
	// the route without a next hop goes, the other variant takes over;
	// written again, the first holds it.
	h.etcd.stop()
	h.etcd.start()
	h.del(prefix + oldRouteNoGW)
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 2), oldRoute, anErr,
		ownRouteNoGW, route("10.2.0.0/16", "", 2)))
	h.put(prefix+oldRouteNoGW, routeJSON("10.2.0.0/16", "", 3))
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 2), oldRoute, anErr,
		ownRouteNoGW, route("10.2.0.0/16", "", 2), oldRouteNoGW, anErr))
	h.expectKV(oldRouteNoGW, "", fmt.Sprintf("which etcd key %q holds", prefix+oldRouteNoGW2))

	// Again, the index rebuilt by creation order.
	h.etcd.stop()
	h.etcd.start()
	h.del(prefix + oldRouteNoGW2)
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 2), oldRoute, anErr,
		ownRouteNoGW, route("10.2.0.0/16", "", 3)))
	h.del(prefix + ownRoute)
	h.sink.waitState(t, state(ownRoute, route("10.1.0.0/16", "10.0.0.1", 1), ownRouteNoGW, route("10.2.0.0/16", "", 3)))
	h.expectKV(ownRoute, prefix+oldRoute, "")
	h.del(prefix + oldRouteNoGW)
	h.del(prefix + oldRoute)
	h.sink.waitState(t, state())
}
