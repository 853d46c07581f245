package ifplugin

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// TestRenameDownKeepsRoutesAndNeighbours: kernels before 6.2 rename a link
// only while it is down, and a link that goes down loses its routes and
// neighbours; renameDown, the way such a kernel is served, puts them back:
// routes of every table, with or without a gateway, IPv4 and IPv6, and the
// permanent neighbours. (This kernel may rename live links; renameDown is
// called directly.)
func TestRenameDownKeepsRoutesAndNeighbours(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (creates links)")
	}
	ns, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	h, err := ns.Handle(nsplugin.Ref{}, false)
	if err != nil {
		t.Fatal(err)
	}
	ip := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Cleanup(func() {
		_ = exec.Command("ip", "link", "del", "rnd0").Run()
		_ = exec.Command("ip", "link", "del", "rnd0new").Run()
	})
	ip("link", "add", "rnd0", "type", "veth", "peer", "name", "rnd1")
	ip("link", "set", "rnd1", "up")
	p := &Plugin{ns: ns}
	if err := p.linkSysctls(nsplugin.Ref{}, "rnd0", ipv6Settings); err != nil {
		t.Fatal(err)
	}
	ip("link", "set", "rnd0", "up")
	ip("addr", "add", "10.80.0.1/24", "dev", "rnd0")
	ip("addr", "add", "fd80::1/64", "dev", "rnd0", "nodad")
	ip("route", "add", "172.21.0.0/16", "dev", "rnd0", "scope", "link", "proto", "181")
	ip("route", "add", "10.81.0.0/24", "via", "172.21.0.1", "dev", "rnd0", "metric", "5", "proto", "181")
	ip("route", "add", "10.82.0.0/24", "via", "10.80.0.2", "dev", "rnd0", "table", "100")
	ip("-6", "route", "add", "fd81::/64", "via", "fd80::2", "dev", "rnd0", "proto", "181")
	ip("neigh", "add", "10.80.0.9", "lladdr", "02:00:00:00:80:09", "dev", "rnd0", "nud", "permanent")
	ip("neigh", "add", "fd80::9", "lladdr", "02:00:00:00:80:0a", "dev", "rnd0", "nud", "permanent")

	link, err := h.LinkByName("rnd0")
	if err != nil {
		t.Fatal(err)
	}
	if err := renameDown(h, link, "rnd0new"); err != nil {
		t.Fatalf("renameDown: %v", err)
	}
	if l, err := h.LinkByName("rnd0new"); err != nil || l.Attrs().Index != link.Attrs().Index || l.Attrs().Flags&net.FlagUp == 0 {
		t.Fatalf("after renameDown: %v, %v; want the same link under its new name, up", l, err)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-4", "route", "show", "dev", "rnd0new"}, []string{"172.21.0.0/16 proto 181 scope link", "10.81.0.0/24 via 172.21.0.1 proto 181 metric 5"}},
		{[]string{"-4", "route", "show", "table", "100"}, []string{"10.82.0.0/24 via 10.80.0.2 dev rnd0new"}},
		{[]string{"-6", "route", "show", "dev", "rnd0new"}, []string{"fd81::/64 via fd80::2 proto 181"}},
		{[]string{"neigh", "show", "dev", "rnd0new"}, []string{"10.80.0.9 lladdr 02:00:00:00:80:09 PERMANENT", "fd80::9 lladdr 02:00:00:00:80:0a PERMANENT"}},
		{[]string{"addr", "show", "dev", "rnd0new"}, []string{"10.80.0.1/24", "fd80::1/64"}},
	} {
		out := ip(c.args...)
		for _, w := range c.want {
			if !strings.Contains(out, w) {
				t.Errorf("ip %s: %q missing:\n%s", strings.Join(c.args, " "), w, out)
			}
		}
	}
}
