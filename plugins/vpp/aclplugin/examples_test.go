package aclplugin_test

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin"
	"github.com/netagent-io/netagent/plugins/vpp/aclplugin/vppcalls"
	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
)

// The original agent's example ACL values, as its users write them: the
// etcd example of its documentation (VPP plugins, "Access Control Lists",
// with the enum as a number) and the values of its kvscheduler ACL example
// (examples/kvscheduler/acl), written as JSON, with its change step. They
// decode through the model registry as the etcd source decodes them, and
// apply.
var originalExamples = []struct{ key, json string }{
	{"/vnf-agent/vpp1/config/vpp/acls/v2/acl/acl1", `{"name":"acl1","interfaces":{"egress":["tap1","tap2"],"ingress":["tap3","tap4"]},"rules":[{"action":1,"ip_rule":{"ip":{"destination_network":"10.20.1.0/24","source_network":"192.168.1.2/32"},"tcp":{"destination_port_range":{"lower_port":1150,"upper_port":1250},"source_port_range":{"lower_port":150,"upper_port":250},"tcp_flags_mask":20,"tcp_flags_value":10}}}]}`},
	{"/vnf-agent/vpp1/config/vpp/acls/v2/acl/acl0", `{"name":"acl0","rules":[{"action":"PERMIT","ip_rule":{"ip":{"source_network":"10.0.0.0/24","destination_network":"20.0.0.0/24"}}}],"interfaces":{"ingress":["memif0"],"egress":["memif0"]}}`},
	{"/vnf-agent/vpp1/config/vpp/acls/v2/acl/acl2", `{"name":"acl2","rules":[{"action":"PERMIT","macip_rule":{"source_address":"192.168.0.1","source_address_prefix":16,"source_mac_address":"b2:74:8c:12:67:d2","source_mac_address_mask":"ff:ff:ff:ff:00:00"}}],"interfaces":{"ingress":["memif0"]}}`},
	{"/vnf-agent/vpp1/config/vpp/acls/v2/acl/acl3", `{"name":"acl3","rules":[{"action":"DENY","ip_rule":{"ip":{"destinationNetwork":"30.0.0.0/8"}}}],"interfaces":{"egress":["memif0"]}}`},
}

func TestOriginalExamplesApply(t *testing.T) {
	e := newEnv(t)
	var cfg []kv
	for _, n := range []string{"tap1", "tap2", "tap3", "tap4", "memif0"} {
		cfg = append(cfg, iface(n))
	}
	for _, x := range originalExamples {
		key, ok := strings.CutPrefix(x.key, "/vnf-agent/vpp1/")
		if !ok {
			t.Fatalf("example key %s", x.key)
		}
		m, v, err := models.Default.DecodeValue(key, []byte(x.json))
		if err != nil {
			t.Fatalf("the original's example %s: %v", x.key, err)
		}
		if m != models.VPPACL {
			t.Fatalf("%s decoded as model %s", x.key, m.Name)
		}
		cfg = append(cfg, kv{key, v})
	}
	e.mustCommit(cfg...)
	for _, c := range cfg {
		if st := e.status(c.key); st.GetState() != api.ValueStateConfigured {
			t.Errorf("%s: %v", c.key, st)
		}
	}
	acl1 := e.mustACL("acl1")
	want := vppcalls.IPRule{Action: vppcalls.Permit, Src: pfx("192.168.1.2/32"), Dst: pfx("10.20.1.0/24"), Proto: 6,
		SrcPort: vppcalls.Range{First: 150, Last: 250}, DstPort: vppcalls.Range{First: 1150, Last: 1250}, TCPFlagsMask: 20, TCPFlagsValue: 10}
	if len(acl1.Rules) != 1 || acl1.Rules[0] != want {
		t.Errorf("acl1 in VPP %v, want [%v]", acl1.Rules, want)
	}
	for _, n := range []string{"tap3", "tap4"} {
		if in, _ := e.lists(n); !slices.Equal(in, []string{"acl1"}) {
			t.Errorf("%s input %v, want [acl1]", n, in)
		}
	}
	for _, n := range []string{"tap1", "tap2"} {
		if _, out := e.lists(n); !slices.Equal(out, []string{"acl1"}) {
			t.Errorf("%s output %v, want [acl1]", n, out)
		}
	}
	if in, out := e.lists("memif0"); !slices.Equal(in, []string{"acl0"}) || !slices.Equal(out, []string{"acl0", "acl3"}) {
		t.Errorf("memif0 lists %v %v, want input [acl0], output [acl0 acl3]", in, out)
	}
	if tag := e.macipOf("memif0"); tag != "acl2" {
		t.Errorf("memif0 MAC-IP ACL %q, want acl2", tag)
	}
	if a3 := e.mustACL("acl3"); a3.Rules[0].Src != pfx("0.0.0.0/0") || a3.Rules[0].Dst != pfx("30.0.0.0/8") {
		t.Errorf("acl3 in VPP %v: an unset source network is any", a3.Rules)
	}
	e.mustResyncNothing("the examples applied", cfg...)

	// The example's change step: acl2 off its interface, acl0 off egress,
	// acl3's unset source network written 0.0.0.0/0 (the same ACL).
	change := func(name string, f func(a *vppacl.ACL)) kv {
		for i, c := range cfg {
			if c.key == aclKey(name) {
				a := proto.Clone(c.value).(*vppacl.ACL) // the scheduler holds c.value
				f(a)
				cfg[i] = aclKV(a)
				return cfg[i]
			}
		}
		t.Fatalf("no example %s", name)
		return kv{}
	}
	seq := e.mustCommit(
		change("acl2", func(a *vppacl.ACL) { a.Interfaces = nil }),
		change("acl0", func(a *vppacl.ACL) { a.Interfaces.Egress = nil }),
		change("acl3", func(a *vppacl.ACL) { a.Rules[0].IpRule.Ip.SourceNetwork = "0.0.0.0/0" }),
	)
	ops := e.executed(seq)
	for _, want := range []string{
		"DELETE " + aclplugin.ACLInterfaceKey("acl2", aclplugin.Ingress, "memif0"),
		"DELETE " + aclplugin.ACLInterfaceKey("acl0", aclplugin.Egress, "memif0"),
	} {
		if !has(ops, want) {
			t.Errorf("change executed %v, want %s", ops, want)
		}
	}
	if has(ops, "UPDATE "+aclKey("acl3")) {
		t.Errorf("change executed %v: acl3 is equivalent", ops)
	}
	if _, out := e.lists("memif0"); !slices.Equal(out, []string{"acl3"}) {
		t.Errorf("memif0 output %v, want [acl3]", out)
	}
	if tag := e.macipOf("memif0"); tag != "" {
		t.Errorf("memif0 MAC-IP ACL %q, want none", tag)
	}
	e.mustResyncNothing("after the change", cfg...)
}
