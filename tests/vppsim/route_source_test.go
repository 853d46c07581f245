package vppsim_test

import (
	"testing"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/fib_types"
	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"
	"go.fd.io/govpp/binapi/ip"
	"go.fd.io/govpp/binapi/ip_types"

	"github.com/netagent-io/netagent/tests/vppsim"
)

// routeV2Dump returns prefix -> (best source, next hops) of one table, all
// sources when src is 0.
func routeV2Dump(t *testing.T, ipc ip.RPCService, table uint32, src uint8) map[string]ip.IPRouteV2 {
	t.Helper()
	ds := collect(t, must(ipc.IPRouteV2Dump(ctx, &ip.IPRouteV2Dump{Src: src, Table: ip.IPTable{TableID: table}}))(t).Recv)
	m := map[string]ip.IPRouteV2{}
	for _, d := range ds {
		if d.Route.TableID != table || int(d.Route.NPaths) != len(d.Route.Paths) {
			t.Errorf("bad details %+v", d.Route)
		}
		m[d.Route.Prefix.String()] = d.Route
	}
	return m
}

func nextHops(r ip.IPRouteV2) []string {
	var out []string
	for _, p := range r.Paths {
		out = append(out, p.Nh.Address.GetIP4().String())
	}
	return out
}

// TestRouteSources: routes of ip_route_add_del have the API source; the
// entries VPP makes itself have theirs; ip_route_add_del_v2 adds paths of
// another source; ip_route_v2_dump reports each entry's best source and
// filters by it.
func TestRouteSources(t *testing.T) {
	s := startSim(t, vppsim.Options{})
	conn := connect(t, s)
	ic := interfaces.NewServiceClient(conn)
	ipc := ip.NewServiceClient(conn)
	loop := must(ic.CreateLoopback(ctx, &interfaces.CreateLoopback{}))(t).SwIfIndex
	a, _ := ip_types.ParseAddressWithPrefix("10.0.0.1/24")
	must(ic.SwInterfaceAddDelAddress(ctx, &interfaces.SwInterfaceAddDelAddress{SwIfIndex: loop, IsAdd: true, Prefix: a}))(t)
	must(ic.SwInterfaceSetFlags(ctx, &interfaces.SwInterfaceSetFlags{SwIfIndex: loop, Flags: interface_types.IF_STATUS_API_FLAG_ADMIN_UP}))(t)

	dst, _ := ip_types.ParsePrefix("192.168.1.0/24")
	attached, _ := ip_types.ParsePrefix("10.0.0.0/24")
	for _, p := range []ip_types.Prefix{dst, attached} {
		must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{IsAdd: true, IsMultipath: true, Route: ip.IPRoute{
			Prefix: p, NPaths: 1, Paths: []fib_types.FibPath{nhPath("10.0.0.2", loop)},
		}}))(t)
	}

	all := routeV2Dump(t, ipc, 0, 0)
	for prefix, want := range map[string]uint8{
		"192.168.1.0/24": vppsim.SourceAPI,
		"10.0.0.0/24":    vppsim.SourceInterface, // the interface source is better than the API's
		"10.0.0.1/32":    vppsim.SourceInterface,
		"0.0.0.0/0":      vppsim.SourceDefaultRoute,
		"224.0.0.0/4":    vppsim.SourceSpecial,
	} {
		if r, ok := all[prefix]; !ok || r.Src != want {
			t.Errorf("%s: %+v, want source %d", prefix, r, want)
		}
	}
	if ps := all["10.0.0.0/24"].Paths; len(ps) != 1 || ps[0].Nh.Address.GetIP4().String() != "0.0.0.0" {
		t.Errorf("the attached entry shows %+v, want the interface's path", ps)
	}
	if ours := routeV2Dump(t, ipc, 0, vppsim.SourceAPI); len(ours) != 1 || ours["192.168.1.0/24"].Src != vppsim.SourceAPI {
		t.Errorf("API-sourced entries: %+v", ours)
	}

	// Another source on the same prefix: its own paths, shown when the
	// better API source goes.
	must(ipc.IPRouteAddDelV2(ctx, &ip.IPRouteAddDelV2{IsAdd: true, Route: ip.IPRouteV2{
		Prefix: dst, NPaths: 1, Src: vppsim.SourceCLI, Paths: []fib_types.FibPath{nhPath("10.0.0.9", loop)},
	}}))(t)
	if r := routeV2Dump(t, ipc, 0, 0)["192.168.1.0/24"]; r.Src != vppsim.SourceAPI || len(nextHops(r)) != 1 || nextHops(r)[0] != "10.0.0.2" {
		t.Errorf("with API and CLI paths: %+v", r)
	}
	if rs := s.Routes(); len(rs) != 3 || rs[1].Source != vppsim.SourceAPI || rs[2].Source != vppsim.SourceCLI {
		t.Errorf("routes = %+v", rs)
	}
	must(ipc.IPRouteAddDel(ctx, &ip.IPRouteAddDel{Route: ip.IPRoute{Prefix: dst}}))(t)
	if r := routeV2Dump(t, ipc, 0, 0)["192.168.1.0/24"]; r.Src != vppsim.SourceCLI || len(nextHops(r)) != 1 || nextHops(r)[0] != "10.0.0.9" {
		t.Errorf("the API route deleted: %+v, want the CLI's", r)
	}
	if left := routeV2Dump(t, ipc, 0, vppsim.SourceAPI); len(left) != 0 {
		t.Errorf("API-sourced entries left: %+v", left)
	}
	// Source 0 is the API's; an unknown source is refused.
	must(ipc.IPRouteAddDelV2(ctx, &ip.IPRouteAddDelV2{IsAdd: true, Route: ip.IPRouteV2{
		Prefix: dst, NPaths: 1, Paths: []fib_types.FibPath{nhPath("10.0.0.3", loop)},
	}}))(t)
	if r := routeV2Dump(t, ipc, 0, vppsim.SourceAPI)["192.168.1.0/24"]; nextHops(r)[0] != "10.0.0.3" {
		t.Errorf("v2 without source: %+v", r)
	}
	_, err := ipc.IPRouteAddDelV2(ctx, &ip.IPRouteAddDelV2{IsAdd: true, Route: ip.IPRouteV2{
		Prefix: dst, NPaths: 1, Src: 200, Paths: []fib_types.FibPath{nhPath("10.0.0.4", loop)},
	}})
	wantVPPError(t, err, api.INVALID_VALUE)
}
