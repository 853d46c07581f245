package ifplugin

import (
	"testing"

	"github.com/vishvananda/netlink"

	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// TestOriginalAlias: the original agent's alias formats, per link kind,
// of this agent's label only.
func TestOriginalAlias(t *testing.T) {
	p := &Plugin{aliasPrefix: AliasPrefix, inherited: inheritedLinks{}}
	p.SetLabel("vpp1")
	veth := func(alias string) netlink.Link { return &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Alias: alias}} }
	dummy := func(alias string) netlink.Link { return &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Alias: alias}} }
	tap := func(alias string) netlink.Link { return &netlink.Tuntap{LinkAttrs: netlink.LinkAttrs{Alias: alias}} }
	lo := func(alias string) netlink.Link {
		return &netlink.Device{LinkAttrs: netlink.LinkAttrs{Name: "lo", Alias: alias}}
	}
	for _, c := range []struct {
		link      netlink.Link
		name, ref string
		ok        bool
	}{
		{link: veth("/vnf-agent/vpp1/ocv2/ocv1"), name: "ocv2", ref: "ocv1", ok: true},
		{link: veth("/vnf-agent/vpp1/ocv2")},
		{link: veth("/vnf-agent/vpp1/ocv2/ocv1/x")},
		{link: veth("/vnf-agent/vpp1//ocv1")},
		{link: veth("/vnf-agent/vpp1/ocv2/")},
		{link: veth("/vnf-agent/vpp2/ocv2/ocv1")},
		{link: veth("/vnf-agent/vpp/1/ocv2/ocv1")},
		{link: veth("netagent/vpp1/ocv2")},
		{link: tap("/vnf-agent/vpp1/tap1/vpptap1/tap-host"), name: "tap1", ref: "vpptap1", ok: true},
		{link: tap("/vnf-agent/vpp1/tap1/vpptap1")},
		{link: dummy("/vnf-agent/vpp1/d1"), name: "d1", ok: true},
		{link: dummy("/vnf-agent/vpp1/d1/x")},
		{link: lo("/vnf-agent/vpp1/lo1")},
	} {
		name, ref, ok := p.originalAlias(c.link)
		if name != c.name || ref != c.ref || ok != c.ok {
			t.Errorf("%s %q: %q %q %v, want %q %q %v", c.link.Type(), c.link.Attrs().Alias, name, ref, ok, c.name, c.ref, c.ok)
		}
	}
	unlabelled := &Plugin{aliasPrefix: AliasPrefix}
	unlabelled.SetLabel("")
	if _, _, ok := unlabelled.originalAlias(veth("/vnf-agent/vpp1/ocv2/ocv1")); ok {
		t.Error("an agent without a label took the original's link")
	}

	v := &linuxif.Interface{Name: "ocv2", Type: linuxif.Interface_VETH, Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "ocv1"}}}
	if !p.originals(veth("/vnf-agent/vpp1/ocv2/ocv1"), v) {
		t.Error("the original's end of ocv2 with peer ocv1 is not ocv2's")
	}
	if p.originals(veth("/vnf-agent/vpp1/ocv2/other"), v) || p.originals(dummy("/vnf-agent/vpp1/ocv2"), v) {
		t.Error("a link of another peer or kind is ocv2's")
	}
}
