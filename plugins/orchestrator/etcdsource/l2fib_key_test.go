package etcdsource_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/orchestrator"
	"github.com/netagent-io/netagent/plugins/orchestrator/etcdsource"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// An L2 FIB entry under the original's key, its MAC in upper case (as the
// original's docs write it): the value is passed under the key with the
// MAC in lower case, and deleting the etcd key deletes it.
func TestL2FIBKeyOfTheOriginal(t *testing.T) {
	h := newHarness(t)
	h.run(etcdsource.Options{})
	h.waitSynced()
	const (
		etcdKey = "config/vpp/l2/v2/fib/bd1/mac/62:89:C6:A3:6D:5C"
		own     = "config/vpp/l2/v2/fib/bd1/mac/62:89:c6:a3:6d:5c"
	)
	h.put(prefix+etcdKey, `{"phys_address":"62:89:C6:A3:6D:5C","bridge_domain":"bd1","outgoing_interface":"tap1","action":"FORWARD","static_config":true,"bridged_virtual_interface":false}`)
	h.waitEtcdState()
	calls, _ := h.sink.snapshot()
	c := calls[len(calls)-1]
	want := &vppl2.FIBEntry{PhysAddress: "62:89:C6:A3:6D:5C", BridgeDomain: "bd1", OutgoingInterface: "tap1", StaticConfig: true}
	if len(c.kvs) != 1 || c.kvs[0].Key != own || c.kvs[0].Err != nil || !proto.Equal(c.kvs[0].Value, want) {
		t.Fatalf("after the put: %v, want %s = %v", c, own, want)
	}
	h.del(prefix + etcdKey)
	h.waitEtcdState()
	calls, _ = h.sink.snapshot()
	if c := calls[len(calls)-1]; len(c.kvs) != 1 || c.kvs[0] != (orchestrator.KV{Key: own}) {
		t.Errorf("after the delete: %v, want a Change deleting %s", c, own)
	}
}
