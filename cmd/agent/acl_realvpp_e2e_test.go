package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	vppacl "github.com/netagent-io/netagent/proto/vpp/acl"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// TestE2ERealVPPACLTraffic: ACLs written to etcd as the original agent's
// users write them filter the traffic a real VPP routes. Two test
// namespaces joined to VPP by AF_PACKET interfaces on veth pairs (made by
// the agent):
//
//	ns1 10.78.1.2 --- afp1 10.78.1.1 [VPP] afp2 10.78.2.1 --- ns2 10.78.2.2
//
// An IP ACL denying ICMP from ns1's network, then permitting the rest, on
// afp1's ingress stops ns1's pings to ns2 (its other rules let everything
// else through); a MAC-IP ACL permitting every IPv4 source on afp2's ingress
// lets traffic through. The agent restarted on that VPP executes nothing;
// the IP ACL taken off afp1 lets the pings through again, and the keys
// deleted leave VPP without ACLs of the agent's.
func TestE2ERealVPPACLTraffic(t *testing.T) {
	needRoot(t)
	if testing.Short() {
		t.Skip("builds and runs the agent binary; skipped with -short")
	}
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("needs ping (iputils-ping; make test installs it)")
	}
	v := startE2EVPP(t)
	v.needOwnReal("AF_PACKET interfaces on veths of the test's network namespace, and vppctl")
	cfg := realVPPAgentConfig(t, v)
	a := startAgentProcess(t, cfg)
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)

	ns := [3]netNames{{}, uniqueNames(t, "acl1"), uniqueNames(t, "acl2")}
	afp := func(i int, addr string) *vppif.Interface {
		return &vppif.Interface{Name: fmt.Sprintf("afp%d", i), Type: vppif.Interface_AF_PACKET, Enabled: true, IpAddresses: []string{addr},
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: ns[i].host}}}
	}
	var keys []string
	for i, addr := range map[int]string{1: "10.78.1.2/24", 2: "10.78.2.2/24"} {
		keys = append(keys,
			kv.put(veth(ns[i].host, ns[i].peer, "", 0)),
			kv.put(veth(ns[i].peer, ns[i].host, ns[i].ns, 0, addr)),
			kv.put(route(ns[i].peer, "10.78.0.0/16", fmt.Sprintf("10.78.%d.1", i))))
	}
	keys = append(keys, kv.put(afp(1, "10.78.1.1/24")), kv.put(afp(2, "10.78.2.1/24")))
	for _, key := range keys {
		a.waitState(key, "CONFIGURED")
	}
	pingFrom(t, ns[1].ns, "10.78.2.2")

	noICMP := &vppacl.ACL{Name: "no-icmp-from-ns1", Rules: []*vppacl.ACL_Rule{
		{Action: vppacl.ACL_Rule_DENY, IpRule: &vppacl.ACL_Rule_IpRule{
			Ip:   &vppacl.ACL_Rule_IpRule_Ip{SourceNetwork: "10.78.1.0/24", DestinationNetwork: "10.78.2.0/24"},
			Icmp: &vppacl.ACL_Rule_IpRule_Icmp{},
		}},
		{Action: vppacl.ACL_Rule_PERMIT, IpRule: &vppacl.ACL_Rule_IpRule{}},
	}, Interfaces: &vppacl.ACL_Interfaces{Ingress: []string{"afp1"}}}
	anyIPv4 := &vppacl.ACL{Name: "any-ipv4-source", Rules: []*vppacl.ACL_Rule{
		{Action: vppacl.ACL_Rule_PERMIT, MacipRule: &vppacl.ACL_Rule_MacIpRule{SourceAddress: "0.0.0.0"}},
	}, Interfaces: &vppacl.ACL_Interfaces{Ingress: []string{"afp2"}}}
	aclKeys := []string{kv.put(anyIPv4)}
	a.waitState(aclKeys[0], "CONFIGURED")
	pingFrom(t, ns[1].ns, "10.78.2.2") // the MAC-IP ACL lets it through
	aclKeys = append(aclKeys, kv.put(noICMP))
	a.waitState(aclKeys[1], "CONFIGURED")
	a.waitState("vpp/acl/no-icmp-from-ns1/interface/ingress/afp1", "CONFIGURED")
	if out, err := exec.Command("ip", "netns", "exec", ns[1].ns, "ping", "-n", "-c", "2", "-W", "1", "10.78.2.2").CombinedOutput(); err == nil {
		t.Errorf("ns1 pings ns2 through an ACL denying ICMP:\n%s\n%s", out, v.cli("show", "acl-plugin", "acl"))
	}
	for _, want := range []string{"tag {no-icmp-from-ns1}", "applied inbound on sw_if_index: " + fmt.Sprint(v.mustTagged("afp1"))} {
		if out := v.cli("show", "acl-plugin", "acl"); !strings.Contains(out, want) {
			t.Errorf("vppctl show acl-plugin acl lacks %q:\n%s", want, out)
		}
	}
	if out := v.cli("show", "acl-plugin", "macip", "acl"); !strings.Contains(out, "tag {any-ipv4-source}") {
		t.Errorf("vppctl show acl-plugin macip acl lacks the MAC-IP ACL:\n%s", out)
	}
	if rec := a.downstreamResync(); len(executedOps(rec)) != 0 {
		t.Errorf("a downstream resync right after the ACLs were applied executed %v", executedOps(rec))
	}

	// The agent restarts on the in-sync VPP: nothing to do.
	if err := a.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	a = startAgentProcess(t, cfg)
	for _, rec := range a.history("") {
		if rec.Type == "SB notification" {
			continue
		}
		if ops := executedOps(rec); len(ops) != 0 {
			t.Errorf("transaction #%d (%s, %q) of the restarted agent on an in-sync VPP executed %v", rec.SeqNum, rec.Resync, rec.Description, ops)
		}
	}
	for _, key := range append(keys, aclKeys...) {
		if st := a.status(key); st.Value.State != "CONFIGURED" {
			t.Errorf("after the restart %s: %+v", key, st.Value)
		}
	}

	// The IP ACL off afp1: the pings go through again.
	noICMP.Interfaces = nil
	kv.put(noICMP)
	a.waitState("vpp/acl/no-icmp-from-ns1/interface/ingress/afp1", "")
	pingFrom(t, ns[1].ns, "10.78.2.2")

	for _, key := range aclKeys {
		kv.del(key)
	}
	for _, key := range aclKeys {
		a.waitState(key, "")
	}
	for _, show := range [][]string{{"show", "acl-plugin", "acl"}, {"show", "acl-plugin", "macip", "acl"}} {
		if out := v.cli(show...); strings.Contains(out, "no-icmp-from-ns1") || strings.Contains(out, "any-ipv4-source") {
			t.Errorf("vppctl %s after the ACLs were deleted:\n%s", strings.Join(show, " "), out)
		}
	}
}

// mustTagged returns the sw_if_index of the interface tagged tag.
func (v *e2eVPP) mustTagged(tag string) uint32 {
	v.t.Helper()
	i, ok := v.tagged(tag)
	if !ok {
		v.t.Fatalf("VPP has no interface tagged %s: %v", tag, v.interfaces())
	}
	return i.SwIfIndex
}
