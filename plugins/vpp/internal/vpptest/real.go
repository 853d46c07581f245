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
	"go.fd.io/govpp/binapi/ip_types"
	"go.fd.io/govpp/binapi/l2"
	"go.fd.io/govpp/binapi/memif"
	"go.fd.io/govpp/binapi/tapv2"
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
// of the API and CLI sources, interfaces, bridge domains, memif sockets, IP
// tables), and the host links made for the test; then it fails the test if
// something it made is still there. What the test removed is not brought
// back (it is logged): on a VPP the agent shares with nothing, that is what
// earlier runs left.
func (v *VPP) restore() {
	t := v.t
	var errs []error
	try := func(what string, f func(ctx context.Context, conn api.Connection) error) {
		if err := v.tryCall(f); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	now := v.Snapshot()

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

	// The interfaces the test found out of the bridge domains it made (its
	// own leave with their deletion), then its interfaces, sub-interfaces
	// first.
	newIfs := slices.DeleteFunc(slices.Clone(now.Interfaces), v.Before.hadInterface)
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
	slices.SortStableFunc(newIfs, func(a, b Interface) int {
		if a.IsSub() != b.IsSub() {
			if a.IsSub() {
				return -1
			}
			return 1
		}
		return 0
	})
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
