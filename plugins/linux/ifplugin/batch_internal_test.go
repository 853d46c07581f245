package ifplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	"github.com/netagent-io/netagent/tests/netnstest"
)

// batchEnv is a named namespace with links made by hand, and a Plugin.
type batchEnv struct {
	t    *testing.T
	p    *Plugin
	name string // the named namespace
	ns   *linuxns.NetNamespace
}

func newBatchEnv(t *testing.T) *batchEnv {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (creates links and namespaces)")
	}
	if !netnstest.Isolated() {
		t.Skip("runs only in a network namespace of its own (netnstest): it makes links in the agent's namespace")
	}
	mgr, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(mgr.Close)
	e := &batchEnv{t: t, p: New(mgr, slog.New(slog.NewTextHandler(io.Discard, nil))), name: fmt.Sprintf("ifp-batch-%d", os.Getpid())}
	t.Cleanup(e.p.Close)
	e.ns = &linuxns.NetNamespace{Type: linuxns.NetNamespace_NSID, Reference: e.name}
	e.ip("netns", "add", e.name)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", e.name).Run() })
	return e
}

func (e *batchEnv) ip(args ...string) {
	e.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		e.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// in returns the ip arguments for the namespace (inNS) or the tests' own.
func (e *batchEnv) in(inNS bool, args ...string) []string {
	if inNS {
		return append([]string{"-n", e.name}, args...)
	}
	return args
}

// pair makes a veth pair marked as the agent's (alias of each end).
func (e *batchEnv) pair(inNS bool, a, b string) {
	e.ip(e.in(inNS, "link", "add", a, "type", "veth", "peer", "name", b)...)
	e.ip(e.in(inNS, "link", "set", a, "alias", AliasPrefix+a)...)
	e.ip(e.in(inNS, "link", "set", b, "alias", AliasPrefix+b)...)
}

func (e *batchEnv) del(inNS bool, name string, typ linuxif.Interface_Type) api.BatchOp {
	v := &linuxif.Interface{Name: name, Type: typ}
	if inNS {
		v.Namespace = e.ns
	}
	return api.BatchOp{Op: api.OpDelete, Key: "config/linux/interfaces/v2/interface/" + name, From: v}
}

// link returns the link of a namespace (nil when there is none).
func (e *batchEnv) link(inNS bool, name string) netlink.Link {
	e.t.Helper()
	ref := nsplugin.Ref{}
	if inNS {
		ref = nsplugin.RefOf(e.ns)
	}
	h, err := e.p.ns.Handle(ref, false)
	if err != nil {
		e.t.Fatal(err)
	}
	l, err := h.LinkByName(name)
	if err != nil && !isNotFound(err) {
		e.t.Fatal(err)
	}
	return l
}

// results checks that every op has its result: failed ones (by value name)
// with an error containing the text, the others done.
func results(t *testing.T, ops []api.BatchOp, failed map[string]string) {
	t.Helper()
	for i := range ops {
		name := ops[i].From.(*linuxif.Interface).GetName()
		_, err, finished := ops[i].Result()
		switch want, ok := failed[name]; {
		case !finished:
			t.Errorf("%s: no result", name)
		case ok && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: %v, want an error with %q", name, err, want)
		case !ok && err != nil:
			t.Errorf("%s: %v, want it done", name, err)
		}
	}
}

// TestBatchDeletesLinksAsGroups: one batch deletes veth ends and a dummy
// of a named namespace and of the agent's (a group delete in each), one
// pair with both ends in the batch, a link already gone, and a link that
// is not ours (its op fails, the link stays). The group number drawn first
// is one a foreign link is in: it is not taken, and the foreign link
// stays.
func TestBatchDeletesLinksAsGroups(t *testing.T) {
	e := newBatchEnv(t)
	for i := range 4 {
		e.pair(true, fmt.Sprintf("bg%d-0", i), fmt.Sprintf("bg%d-1", i))
	}
	e.pair(false, "bh0-0", "bh0-1")
	e.pair(false, "bh1-0", "bh1-1")
	// A DUMMY value (the kernel may lack dummy links: its link is a veth
	// end, which Delete does not check).
	e.pair(true, "bgd", "bgdp")
	// Not ours: a foreign alias; a foreign link in group 77.
	e.pair(true, "bgx-0", "bgx-1")
	e.ip(e.in(true, "link", "set", "bgx-0", "alias", "someone/else")...)
	e.ip(e.in(true, "link", "add", "foreign", "type", "veth", "peer", "name", "foreignp")...)
	e.ip(e.in(true, "link", "set", "foreign", "group", "77")...)
	e.ip(e.in(false, "link", "add", "foreign", "type", "veth", "peer", "name", "foreignp")...)
	e.ip(e.in(false, "link", "set", "foreign", "group", "77")...)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", "foreign").Run() })
	draws := 0
	old := groupCandidate
	t.Cleanup(func() { groupCandidate = old })
	groupCandidate = func() uint32 {
		draws++
		if draws%2 == 1 {
			return 77
		}
		return 4242
	}
	ops := []api.BatchOp{
		e.del(true, "bg0-0", linuxif.Interface_VETH),
		e.del(true, "bg0-1", linuxif.Interface_VETH), // the other end, same batch
		e.del(true, "bg1-0", linuxif.Interface_VETH),
		e.del(false, "bh0-0", linuxif.Interface_VETH),
		e.del(true, "bgx-0", linuxif.Interface_VETH), // not ours
		e.del(true, "bg2-1", linuxif.Interface_VETH),
		e.del(true, "gone", linuxif.Interface_VETH), // no link
		e.del(false, "bh1-1", linuxif.Interface_VETH),
		e.del(true, "bg3-0", linuxif.Interface_VETH),
		e.del(true, "bgd", linuxif.Interface_DUMMY),
	}
	e.p.interfaceBatch(context.Background(), ops)
	results(t, ops, map[string]string{"bgx-0": "is not ours"})
	if _, err, _ := ops[4].Result(); !errors.As(err, new(*api.NonRetriableError)) {
		t.Errorf("bgx-0: %v, want a non-retriable error", err)
	}
	if draws < 4 {
		t.Errorf("%d group numbers drawn, want 2 per namespace (the first in use)", draws)
	}
	for _, n := range []string{"bg0-0", "bg0-1", "bg1-0", "bg1-1", "bg2-0", "bg2-1", "bg3-0", "bg3-1", "bgd", "bgdp"} {
		if l := e.link(true, n); l != nil {
			t.Errorf("%s in %s is left: %v", n, e.name, l.Attrs())
		}
	}
	for _, n := range []string{"bh0-0", "bh0-1", "bh1-0", "bh1-1"} {
		if l := e.link(false, n); l != nil {
			t.Errorf("%s is left: %v", n, l.Attrs())
		}
	}
	for _, inNS := range []bool{true, false} {
		if l := e.link(inNS, "foreign"); l == nil || l.Attrs().Group != 77 {
			t.Errorf("the foreign link (namespace %v): %v, want it in group 77", inNS, l)
		}
	}
	for _, n := range []string{"bgx-0", "bgx-1"} {
		if l := e.link(true, n); l == nil || l.Attrs().Group != 0 {
			t.Errorf("%s (not ours): %v, want it kept in group 0", n, l)
		}
	}
}

// TestBatchGroupRefusedOrTaken: when the kernel refuses the group delete
// (lo, which cannot be deleted, marked as an interface of the agent) the
// links get their group back and are deleted one by one: lo's op fails
// with the kernel's error, lo keeps group 0, the others are deleted. When
// another link joins the group before it is deleted, the group is not
// deleted and that link stays.
func TestBatchGroupRefusedOrTaken(t *testing.T) {
	e := newBatchEnv(t)
	e.pair(true, "br0-0", "br0-1")
	e.pair(true, "br1-0", "br1-1")
	e.ip(e.in(true, "link", "set", "lo", "alias", AliasPrefix+"fake-lo")...)
	lo := e.del(true, "fake-lo", linuxif.Interface_DUMMY)
	lo.From.(*linuxif.Interface).HostIfName = "lo"
	ops := []api.BatchOp{e.del(true, "br0-0", linuxif.Interface_VETH), lo, e.del(true, "br1-1", linuxif.Interface_VETH)}
	e.p.interfaceBatch(context.Background(), ops)
	results(t, ops, map[string]string{"fake-lo": "deleting lo: operation not supported"})
	if l := e.link(true, "lo"); l == nil || l.Attrs().Group != 0 {
		t.Errorf("lo: %v, want it kept with its group 0 back", l)
	}
	for _, n := range []string{"br0-0", "br1-1"} {
		if l := e.link(true, n); l != nil {
			t.Errorf("%s is left: %v", n, l.Attrs())
		}
	}

	e.pair(true, "bt0-0", "bt0-1")
	e.pair(true, "bt1-0", "bt1-1")
	e.ip(e.in(true, "link", "add", "intruder", "type", "veth", "peer", "name", "intruderp")...)
	t.Cleanup(func() { testHookGroupSet = nil })
	testHookGroupSet = func(_ nsplugin.Ref, id uint32) {
		e.ip(e.in(true, "link", "set", "intruder", "group", fmt.Sprint(id))...)
	}
	ops = []api.BatchOp{e.del(true, "bt0-0", linuxif.Interface_VETH), e.del(true, "bt1-0", linuxif.Interface_VETH)}
	e.p.interfaceBatch(context.Background(), ops)
	results(t, ops, nil)
	if e.link(true, "intruder") == nil {
		t.Errorf("the link that joined the group was deleted")
	}
	for _, n := range []string{"bt0-0", "bt1-0"} {
		if l := e.link(true, n); l != nil {
			t.Errorf("%s is left: %v", n, l.Attrs())
		}
	}
}
