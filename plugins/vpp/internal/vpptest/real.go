package vpptest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/vishvananda/netlink"
	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/af_packet"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_neighbor"
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"

	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// lockVPP waits for the turn of the test on the real VPP at socket: an
// exclusive lock (flock) on a file named after the socket, held until the
// test ends. The test packages are separate processes that go test runs in
// parallel.
func lockVPP(t testing.TB, socket string) {
	t.Helper()
	sum := sha256.Sum256([]byte(socket))
	path := filepath.Join(os.TempDir(), fmt.Sprintf("netagent-vpptest-%x.lock", sum[:8]))
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644) // flock needs no write access: any user can take turns
	if err != nil {
		t.Fatalf("the lock of the real VPP's tests: %v", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		t.Fatalf("the lock of the real VPP's tests (%s): %v", path, err)
	}
	t.Cleanup(func() { _ = f.Close() }) // closing releases the lock
}

// restore removes what VPP has and had not when the test started (routes
// of the API and CLI sources, IP neighbours, interfaces, bridge domains,
// memif sockets, IP tables), and the host links made for the test; then it
// fails the test if something it made is still there, or if it deleted an
// interface with a static neighbour on it (VPP keeps that neighbour). What
// the test removed is not brought back (it is logged): on a VPP the agent
// shares with nothing, that is what earlier runs left.
func (v *VPP) restore() {
	t := v.t
	var errs []error
	try := func(what string, f func(ctx context.Context, conn api.Connection) error) {
		if err := v.tryCall(f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	now := v.Snapshot()

	// The API holds the tables the test made again before their routes go:
	// a table the test deleted through the API stays while a route resolves
	// in it, and deleting the last such route (the table's last hold)
	// crashes VPP 25.10.
	for _, tb := range now.Tables {
		if tb.ID != 0 && !slices.Contains(v.Before.Tables, tb) {
			try(fmt.Sprintf("ip_table_add_del (add table %d, ipv6 %v)", tb.ID, tb.IPv6), func(ctx context.Context, conn api.Connection) error {
				_, err := ip.NewServiceClient(conn).IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: true, Table: ip.IPTable{TableID: tb.ID, IsIP6: tb.IPv6}})
				return err
			})
		}
	}

	// Routes first: a real VPP keeps a route whose interface goes. A route
	// hides those of the sources after it (CLI after API): a few rounds.
	for range 3 {
		routes := slices.DeleteFunc(slices.Clone(now.Routes), v.Before.hadRoute)
		if len(routes) == 0 {
			break
		}
		for _, r := range routes {
			try("ip_route_add_del_v2 of "+r.String(), func(ctx context.Context, conn api.Connection) error {
				dst, err := ip_types.ParsePrefix(r.Prefix.String())
				if err != nil {
					return err
				}
				_, err = ip.NewServiceClient(conn).IPRouteAddDelV2(ctx, &ip.IPRouteAddDelV2{IsAdd: false, Route: ip.IPRouteV2{
					TableID: r.TableID, Prefix: dst, Src: r.Source,
				}})
				return err
			})
		}
		now.Routes = v.DumpRoutes(SourceAPI, SourceCLI)
	}

	newIfs := slices.DeleteFunc(slices.Clone(now.Interfaces), v.Before.hadInterface)

	// Neighbours before interfaces: VPP keeps the static neighbours of a
	// deleted interface under its sw_if_index, and gives them to the next
	// interface that gets that index. While no interface has it, no message
	// removes them (ip_neighbor_add_del: invalid sw_if_index), and
	// ip_neighbor_flush of all interfaces crashes VPP 25.10 (SIGSEGV in
	// fib_table_entry_path_remove2). So the neighbours on the interfaces
	// the test made go first, then those it added on others; those already
	// on no interface are removed through loopbacks that take their
	// indexes (removeStaleNeighbors), and fail the test when it left them.
	var stale []Neighbor
	var staleLeft []string
	for _, n := range now.Neighbors {
		switch {
		case !slices.ContainsFunc(now.Interfaces, func(i Interface) bool { return i.SwIfIndex == n.SwIfIndex }):
			stale = append(stale, n)
			if !v.Before.hadNeighbor(n) {
				staleLeft = append(staleLeft, n.String()+" (its interface deleted with it in place: VPP keeps it)")
			}
		case slices.ContainsFunc(newIfs, func(i Interface) bool { return i.SwIfIndex == n.SwIfIndex }) || !v.Before.hadNeighbor(n):
			try("ip_neighbor_add_del (delete "+n.String()+")", deleteNeighbor(n))
		}
	}
	errs = append(errs, v.removeStaleNeighbors(stale)...)

	// The interfaces the test found out of the bridge domains it made (its
	// own leave with their deletion), then its interfaces, sub-interfaces
	// first.
	for _, b := range now.BridgeDomains {
		if v.Before.hadBridgeDomain(b) {
			continue
		}
		for _, m := range b.Members {
			if !slices.ContainsFunc(newIfs, func(i Interface) bool { return i.SwIfIndex == m.SwIfIndex }) {
				try(fmt.Sprintf("sw_interface_set_l2_bridge (sw_if_index %d out of bd %d)", m.SwIfIndex, b.BdID), func(ctx context.Context, conn api.Connection) error {
					_, err := l2.NewServiceClient(conn).SwInterfaceSetL2Bridge(ctx, &l2.SwInterfaceSetL2Bridge{RxSwIfIndex: interface_types.InterfaceIndex(m.SwIfIndex), BdID: b.BdID, Enable: false})
					return err
				})
			}
		}
	}
	vxlans := v.DumpVxlans()
	// Sub-interfaces, then VXLAN tunnels (a multicast tunnel cannot be
	// deleted once its multicast interface is gone), then the rest.
	order := func(i Interface) int {
		switch {
		case i.IsSub():
			return 0
		case vxlans[i.SwIfIndex] != nil:
			return 1
		}
		return 2
	}
	slices.SortStableFunc(newIfs, func(a, b Interface) int { return order(a) - order(b) })
	memifs, taps, afPackets := v.DumpMemifs(), v.DumpTaps(), v.DumpAfPackets()
	for _, i := range newIfs {
		idx := interface_types.InterfaceIndex(i.SwIfIndex)
		what := fmt.Sprintf("deleting %s (sw_if_index %d, tag %q)", i.Name, i.SwIfIndex, i.Tag)
		try(what, func(ctx context.Context, conn api.Connection) (err error) {
			switch {
			case i.IsSub():
				_, err = interfaces.NewServiceClient(conn).DeleteSubif(ctx, &interfaces.DeleteSubif{SwIfIndex: idx})
			case memifs[i.SwIfIndex] != nil:
				_, err = memif.NewServiceClient(conn).MemifDelete(ctx, &memif.MemifDelete{SwIfIndex: idx})
			case taps[i.SwIfIndex] != nil:
				_, err = tapv2.NewServiceClient(conn).TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: idx})
			case vxlans[i.SwIfIndex] != nil:
				err = deleteVxlan(vxlans[i.SwIfIndex])(ctx, conn)
			case afPackets[i.SwIfIndex] != "":
				_, err = af_packet.NewServiceClient(conn).AfPacketDelete(ctx, &af_packet.AfPacketDelete{HostIfName: afPackets[i.SwIfIndex]})
			case i.DevType == "Loopback":
				_, err = interfaces.NewServiceClient(conn).DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: idx})
			default:
				err = fmt.Errorf("no way to delete an interface of type %q", i.DevType)
			}
			return err
		})
	}
	// The static L2 FIB entries of the domains the test made go before
	// them: VPP keeps them after their domain (l2_fib_table_dump shows them
	// with bd_id ~0) and gives them to the next domain that gets its
	// bd_index, another test's.
	for _, b := range now.BridgeDomains {
		if v.Before.hadBridgeDomain(b) {
			continue
		}
		for _, e := range dump[*l2.L2FibTableDetails](v, &l2.L2FibTableDump{BdID: b.BdID}) {
			if !e.StaticMac {
				continue
			}
			try(fmt.Sprintf("l2fib_add_del of %s in bd %d", e.Mac, b.BdID), func(ctx context.Context, conn api.Connection) error {
				_, err := l2.NewServiceClient(conn).L2fibAddDel(ctx, &l2.L2fibAddDel{Mac: e.Mac, BdID: b.BdID, SwIfIndex: e.SwIfIndex, IsAdd: false})
				if vppconn.IsVPPError(err, api.NO_SUCH_ENTRY) {
					return nil
				}
				return err
			})
		}
	}
	for _, b := range now.BridgeDomains {
		if v.Before.hadBridgeDomain(b) {
			continue
		}
		try(fmt.Sprintf("bridge_domain_add_del of bd %d (tag %q)", b.BdID, b.Tag), func(ctx context.Context, conn api.Connection) error {
			_, err := l2.NewServiceClient(conn).BridgeDomainAddDel(ctx, &l2.BridgeDomainAddDel{BdID: b.BdID, IsAdd: false})
			return err
		})
	}
	for id, name := range now.MemifSockets {
		if _, had := v.Before.MemifSockets[id]; had {
			continue
		}
		try(fmt.Sprintf("memif_socket_filename_add_del_v2 of socket %d (%s)", id, name), func(ctx context.Context, conn api.Connection) error {
			_, err := memif.NewServiceClient(conn).MemifSocketFilenameAddDelV2(ctx, &memif.MemifSocketFilenameAddDelV2{IsAdd: false, SocketID: id})
			return err
		})
	}
	for _, tb := range now.Tables {
		if tb.ID == 0 || slices.Contains(v.Before.Tables, tb) {
			continue
		}
		try(fmt.Sprintf("ip_table_add_del of table %d (ipv6 %v)", tb.ID, tb.IPv6), func(ctx context.Context, conn api.Connection) error {
			_, err := ip.NewServiceClient(conn).IPTableAddDel(ctx, &ip.IPTableAddDel{IsAdd: false, Table: ip.IPTable{TableID: tb.ID, IsIP6: tb.IPv6}})
			return err
		})
	}
	for _, name := range v.hostLinks {
		if link, err := netlink.LinkByName(name); err == nil {
			if err := netlink.LinkDel(link); err != nil {
				errs = append(errs, fmt.Errorf("deleting host link %s: %w", name, err))
			}
		}
	}

	after := v.Snapshot()
	var left, gone []string
	for _, i := range after.Interfaces {
		if !v.Before.hadInterface(i) {
			left = append(left, fmt.Sprintf("interface %s (sw_if_index %d, tag %q)", i.Name, i.SwIfIndex, i.Tag))
		}
	}
	for _, i := range v.Before.Interfaces {
		if !after.hadInterface(i) {
			gone = append(gone, fmt.Sprintf("interface %s (tag %q)", i.Name, i.Tag))
		}
	}
	for _, b := range after.BridgeDomains {
		if !v.Before.hadBridgeDomain(b) {
			left = append(left, fmt.Sprintf("bridge domain %d (tag %q)", b.BdID, b.Tag))
		}
	}
	for _, r := range after.Routes {
		if !v.Before.hadRoute(r) {
			left = append(left, "route "+r.String())
		}
	}
	for _, r := range v.Before.Routes {
		if !after.hadRoute(r) {
			gone = append(gone, "route "+r.String())
		}
	}
	for _, n := range after.Neighbors {
		if !v.Before.hadNeighbor(n) {
			left = append(left, n.String())
		}
	}
	left = append(left, staleLeft...)
	for _, n := range v.Before.Neighbors {
		if !after.hadNeighbor(n) {
			gone = append(gone, n.String())
		}
	}
	for _, tb := range after.Tables {
		if !slices.Contains(v.Before.Tables, tb) {
			left = append(left, fmt.Sprintf("table %d (ipv6 %v)", tb.ID, tb.IPv6))
		}
	}
	for id, name := range after.MemifSockets {
		if _, had := v.Before.MemifSockets[id]; !had {
			left = append(left, fmt.Sprintf("memif socket %d (%s)", id, name))
		}
	}
	if len(gone) > 0 {
		t.Logf("the test removed what VPP had before it (left by an earlier run?): %s", strings.Join(gone, "; "))
	}
	if len(errs) > 0 || len(left) > 0 {
		t.Errorf("the real VPP is not left as the test found it:\n  errors: %v\n  left: %s", errors.Join(errs...), strings.Join(left, "; "))
	}
}

// deleteNeighbor is the ip_neighbor_add_del call that deletes n.
func deleteNeighbor(n Neighbor) func(ctx context.Context, conn api.Connection) error {
	return func(ctx context.Context, conn api.Connection) error {
		a, err := ip_types.ParseAddress(n.IP.String())
		if err != nil {
			return err
		}
		_, err = ip_neighbor.NewServiceClient(conn).IPNeighborAddDel(ctx, &ip_neighbor.IPNeighborAddDel{IsAdd: false, Neighbor: ip_neighbor.IPNeighbor{
			SwIfIndex: interface_types.InterfaceIndex(n.SwIfIndex), IPAddress: a,
		}})
		return err
	}
}

// staleReviveLimit bounds the loopbacks removeStaleNeighbors makes.
const staleReviveLimit = 64

// removeStaleNeighbors removes neighbours that VPP kept of deleted
// interfaces. No message removes a neighbour while no interface has its
// sw_if_index, and VPP gives a new interface a free index before a new one:
// so loopbacks are created until they have taken every index of the stale
// neighbours (staleReviveLimit loopbacks beyond their number at most), the
// neighbours are deleted from them, and the loopbacks deleted.
func (v *VPP) removeStaleNeighbors(stale []Neighbor) []error {
	byIndex := map[uint32][]Neighbor{}
	for _, n := range stale {
		byIndex[n.SwIfIndex] = append(byIndex[n.SwIfIndex], n)
	}
	var errs []error
	var loops []interface_types.InterfaceIndex
	for range len(byIndex) + staleReviveLimit {
		if len(byIndex) == 0 {
			break
		}
		err := v.tryCall(func(ctx context.Context, conn api.Connection) error {
			r, err := interfaces.NewServiceClient(conn).CreateLoopback(ctx, &interfaces.CreateLoopback{})
			if err == nil {
				loops = append(loops, r.SwIfIndex)
			}
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("create_loopback (to remove the neighbours VPP kept of deleted interfaces): %w", err))
			break
		}
		sw := uint32(loops[len(loops)-1])
		for _, n := range byIndex[sw] {
			if err := v.tryCall(deleteNeighbor(n)); err != nil {
				errs = append(errs, fmt.Errorf("ip_neighbor_add_del (delete %s, on a loopback of that index): %w", n, err))
			}
		}
		delete(byIndex, sw)
	}
	for _, sw := range loops {
		if err := v.tryCall(func(ctx context.Context, conn api.Connection) error {
			_, err := interfaces.NewServiceClient(conn).DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: sw})
			return err
		}); err != nil {
			errs = append(errs, fmt.Errorf("delete_loopback of sw_if_index %d (made to remove neighbours): %w", sw, err))
		}
	}
	for sw, ns := range byIndex {
		errs = append(errs, fmt.Errorf("%d neighbours VPP kept on sw_if_index %d of a deleted interface are left: none of %d loopbacks got that index", len(ns), sw, len(loops)))
	}
	return errs
}

// HostLinks makes sure host (Linux) interfaces of the names exist, for the
// AF_PACKET interfaces of a test. With vppsim they need not (the test's
// simulator decides which exist: vppsim.Options.HostIfExists). On a real
// VPP each is made as one end of a veth pair (the other end <name>-p), up,
// in the network namespace of the test, which must be VPP's, and removed at
// the end of the test; that needs root, and the test is skipped without it.
func (v *VPP) HostLinks(names ...string) {
	v.t.Helper()
	if !v.Real() {
		return
	}
	if os.Geteuid() != 0 {
		v.t.Skipf("AF_PACKET on a real VPP needs host interfaces (%s): making veth pairs needs root", strings.Join(names, ", "))
	}
	for _, name := range names {
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: name}, PeerName: name + "-p"}
		if err := netlink.LinkAdd(veth); err != nil {
			if errors.Is(err, syscall.EEXIST) {
				v.t.Fatalf("veth pair %s for AF_PACKET: %v (left by an earlier run? ip link del %s)", name, err, name)
			}
			v.t.Fatalf("veth pair %s for AF_PACKET: %v", name, err)
		}
		v.hostLinks = append(v.hostLinks, name)
		for _, end := range []string{name, name + "-p"} {
			link, err := netlink.LinkByName(end)
			if err == nil {
				err = netlink.LinkSetUp(link)
			}
			if err != nil {
				v.t.Fatalf("veth %s up: %v", end, err)
			}
		}
	}
}

// tapSupport is, per socket, why the real VPP cannot create TAP v2
// interfaces ("" when it can).
var tapSupport sync.Map // socket -> string

// CanCreateTap tells whether VPP can create TAP v2 interfaces, and why not.
// vppsim can; a real VPP is asked once per test process, by creating a TAP
// and deleting it again: TAP v2 needs /dev/vhost-net on VPP's host.
func (v *VPP) CanCreateTap() (bool, string) {
	v.t.Helper()
	if !v.Real() {
		return true, ""
	}
	if why, ok := tapSupport.Load(v.Socket); ok {
		return why == "", why.(string)
	}
	why := ""
	v.call("tap_create_v3 (probe)", func(ctx context.Context, conn api.Connection) error {
		c := tapv2.NewServiceClient(conn)
		r, err := c.TapCreateV3(ctx, &tapv2.TapCreateV3{
			ID: NoIndex, UseRandomMac: true, NumRxQueues: 1, NumTxQueues: 1, RxRingSz: 256, TxRingSz: 256, Tag: "vpptest-tap-probe",
		})
		if err != nil {
			why = fmt.Sprintf("tap_create_v3: %v (TAP v2 needs /dev/vhost-net on VPP's host)", err)
			return nil
		}
		_, err = c.TapDeleteV2(ctx, &tapv2.TapDeleteV2{SwIfIndex: r.SwIfIndex})
		return err
	})
	tapSupport.Store(v.Socket, why)
	return why == "", why
}

// NeedTap skips the test when VPP cannot create TAP v2 interfaces.
func (v *VPP) NeedTap() {
	v.t.Helper()
	if ok, why := v.CanCreateTap(); !ok {
		v.t.Skipf("the VPP at %s cannot create TAP v2 interfaces: %s", v.Socket, why)
	}
}
