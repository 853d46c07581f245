package models_test

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/pkg/models"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxl3 "github.com/netagent-io/netagent/proto/linux/l3"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// vtCase is a value and the fields Validate must report (none: valid).
type vtCase struct {
	name  string
	value proto.Message
	// fields are the exact ValidationError.FieldNames(); nil: valid.
	fields []string
	// want is a substring of the error message (the offending value or the
	// rule), when fields is not nil.
	want string
}

func vtRun(t *testing.T, m *models.Model, cases []vtCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := m.Validate(c.value)
			if c.fields == nil {
				if err != nil {
					t.Fatalf("Validate(%v) = %v, want nil", c.value, err)
				}
				// A valid value has a key, and the key is the value's own.
				key, err := m.Key(c.value)
				if err != nil {
					t.Fatalf("Key(%v) of a valid value: %v", c.value, err)
				}
				if err := m.CheckKey(key, c.value); err != nil {
					t.Errorf("CheckKey(%q) of its own value: %v", key, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%v) = nil, want errors in %q", c.value, c.fields)
			}
			var ve *models.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate error %q is a %T, want a *models.ValidationError", err, err)
			}
			if got := ve.FieldNames(); !biEqualStrings(got, c.fields) {
				t.Errorf("FieldNames() = %q, want %q (error %q)", got, c.fields, err)
			}
			if ve.Model != m.Name || ve.Key != "" {
				t.Errorf("ValidationError model %q key %q, want %q and no key", ve.Model, ve.Key, m.Name)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "invalid "+m.Name+" value: ") {
				t.Errorf("error %q does not start with %q", err, "invalid "+m.Name+" value: ")
			}
			// Key refuses an invalid value too.
			if key, err := m.Key(c.value); err == nil {
				t.Errorf("Key(%v) of an invalid value = %q, want an error", c.value, key)
			}
		})
	}
}

func vtVPPIf(name string, mutate ...func(*vppif.Interface)) *vppif.Interface {
	i := &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true}
	for _, f := range mutate {
		f(i)
	}
	return i
}

func TestValidateVPPInterface(t *testing.T) {
	long63, long64 := strings.Repeat("x", 63), strings.Repeat("x", 64)
	vtRun(t, models.VPPInterface, []vtCase{
		{name: "loopback", value: vtVPPIf("loop1", func(i *vppif.Interface) {
			i.IpAddresses = []string{"10.0.0.1/24", "2001:db8::1/64", "10.0.1.1/24"}
			i.PhysAddress = "02:00:00:00:00:01"
			i.Mtu = 9216
			i.Vrf = 3
		})},
		{name: "dpdk name", value: &vppif.Interface{Name: "GigabitEthernet0/8/0", Type: vppif.Interface_DPDK}},
		{name: "upper case MAC", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.PhysAddress = "02:AB:CD:EF:00:01" })},
		{name: "63-byte name", value: vtVPPIf(long63)},
		{name: "undefined type", value: &vppif.Interface{Name: "x"}},
		{name: "sub-interface", value: &vppif.Interface{Name: "GigabitEthernet0/8/0.100", Type: vppif.Interface_SUB_INTERFACE,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "GigabitEthernet0/8/0", SubId: 100}}}},
		{name: "memif", value: &vppif.Interface{Name: "memif1/1", Type: vppif.Interface_MEMIF,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Mode: vppif.MemifLink_IP, Master: true, Id: 1, SocketFilename: "/run/vpp/memif.sock"}}}},
		{name: "memif without link", value: &vppif.Interface{Name: "memif1/2", Type: vppif.Interface_MEMIF}},
		{name: "afpacket host", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "veth1"}}}},
		{name: "afpacket 15-byte host", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: strings.Repeat("h", 15)}}}},
		{name: "afpacket linux interface", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: "a/long/logical/linux/name"}}}},
		{name: "tap", value: &vppif.Interface{Name: "tap1", Type: vppif.Interface_TAP,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 2, HostIfName: "tap1", EnableGso: true}}}},
		{name: "unnumbered", value: vtVPPIf("unnum1", func(i *vppif.Interface) {
			i.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: "loop1"}
		})},

		{name: "64-byte name", value: vtVPPIf(long64), fields: []string{"name"}, want: "longer than 63 bytes"},
		{name: "empty name", value: vtVPPIf(""), fields: []string{"name"}, want: "required"},
		{name: "undefined enum number", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.Type = vppif.Interface_Type(99) }),
			fields: []string{"type"}, want: "99 is not a value of vpp.interfaces.Interface.Type"},
		{name: "undefined memif mode", value: &vppif.Interface{Name: "memif1", Type: vppif.Interface_MEMIF,
			Link: &vppif.Interface_Memif{Memif: &vppif.MemifLink{Mode: vppif.MemifLink_MemifMode(3)}}},
			fields: []string{"memif.mode"}, want: "3 is not a value of vpp.interfaces.MemifLink.MemifMode"},
		{name: "invalid MAC", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.PhysAddress = "02:00:00:00:00" }),
			fields: []string{"phys_address"}, want: `"02:00:00:00:00"`},
		{name: "EUI-64 MAC", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.PhysAddress = "02:00:00:ff:fe:00:00:01" }),
			fields: []string{"phys_address"}, want: `"02:00:00:ff:fe:00:00:01"`},
		{name: "multicast MAC", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.PhysAddress = "01:00:5e:00:00:01" }),
			fields: []string{"phys_address"}, want: "01:00:5e:00:00:01 is a multicast address"},
		{name: "broadcast MAC", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.PhysAddress = "ff:ff:ff:ff:ff:ff" }),
			fields: []string{"phys_address"}, want: "is a multicast address"},
		{name: "invalid second address", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.IpAddresses = []string{"10.0.0.1/24", "10.0.0.2/33"} }),
			fields: []string{"ip_addresses[1]"}, want: `"10.0.0.2/33"`},
		{name: "address without length", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.IpAddresses = []string{"2001:db8::1"} }),
			fields: []string{"ip_addresses[0]"}, want: `"2001:db8::1"`},
		{name: "duplicate address", value: vtVPPIf("loop1", func(i *vppif.Interface) {
			i.IpAddresses = []string{"10.0.0.1/24", "10.0.0.2/24", "10.0.0.1/16"}
		}), fields: []string{"ip_addresses[2]"}, want: "address 10.0.0.1 is already ip_addresses[0]"},
		{name: "duplicate IPv6 address in another spelling", value: vtVPPIf("loop1", func(i *vppif.Interface) {
			i.IpAddresses = []string{"2001:db8::1/64", "2001:DB8:0::1/64"}
		}), fields: []string{"ip_addresses[1]"}, want: "is already ip_addresses[0]"},
		{name: "mtu 9217", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.Mtu = 9217 }),
			fields: []string{"mtu"}, want: "9217 is above 9216"},
		{name: "unnumbered without interface", value: vtVPPIf("loop1", func(i *vppif.Interface) { i.Unnumbered = &vppif.Interface_Unnumbered{} }),
			fields: []string{"unnumbered.interface_with_ip"}, want: "required"},
		{name: "unnumbered to itself", value: vtVPPIf("loop1", func(i *vppif.Interface) {
			i.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: "loop1"}
		}), fields: []string{"unnumbered.interface_with_ip"}, want: "cannot borrow its own addresses"},
		{name: "unnumbered with addresses", value: vtVPPIf("loop1", func(i *vppif.Interface) {
			i.Unnumbered = &vppif.Interface_Unnumbered{InterfaceWithIp: "loop2"}
			i.IpAddresses = []string{"10.0.0.1/24"}
		}), fields: []string{"ip_addresses"}, want: "no addresses of its own"},
		{name: "memif link on a loopback", value: vtVPPIf("loop1", func(i *vppif.Interface) {
			i.Link = &vppif.Interface_Memif{Memif: &vppif.MemifLink{}}
		}), fields: []string{"memif"}, want: "set, but the interface is of type SOFTWARE_LOOPBACK"},
		{name: "afpacket link on a memif", value: &vppif.Interface{Name: "memif1", Type: vppif.Interface_MEMIF,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "eth0"}}},
			fields: []string{"afpacket"}, want: "set, but the interface is of type MEMIF"},
		{name: "tap link on an undefined type", value: &vppif.Interface{Name: "x",
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{}}},
			fields: []string{"tap"}, want: "set, but the interface is of type UNDEFINED_TYPE"},
		{name: "sub-interface without sub", value: &vppif.Interface{Name: "eth0.100", Type: vppif.Interface_SUB_INTERFACE},
			fields: []string{"sub"}, want: "required for a SUB_INTERFACE"},
		{name: "sub-interface without parent", value: &vppif.Interface{Name: "eth0.100", Type: vppif.Interface_SUB_INTERFACE,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{SubId: 100}}},
			fields: []string{"sub.parent_name"}, want: "required"},
		{name: "sub-interface of itself", value: &vppif.Interface{Name: "eth0.100", Type: vppif.Interface_SUB_INTERFACE,
			Link: &vppif.Interface_Sub{Sub: &vppif.SubInterface{ParentName: "eth0.100"}}},
			fields: []string{"sub.parent_name"}, want: "its own parent"},
		{name: "afpacket without link", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET},
			fields: []string{"afpacket"}, want: "host_if_name or linux_interface is required"},
		{name: "afpacket with empty link", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{}}},
			fields: []string{"afpacket"}, want: "host_if_name or linux_interface is required"},
		{name: "afpacket with both", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "veth1", LinuxInterface: "veth1"}}},
			fields: []string{"afpacket"}, want: "not both"},
		{name: "afpacket host name too long", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: strings.Repeat("h", 16)}}},
			fields: []string{"afpacket.host_if_name"}, want: "longer than 15 bytes"},
		{name: "afpacket host name with slash", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{HostIfName: "eth0/1"}}},
			fields: []string{"afpacket.host_if_name"}, want: "contains / or :"},
		{name: "afpacket invalid linux interface", value: &vppif.Interface{Name: "afp1", Type: vppif.Interface_AF_PACKET,
			Link: &vppif.Interface_Afpacket{Afpacket: &vppif.AfpacketLink{LinuxInterface: "veth 1"}}},
			fields: []string{"afpacket.linux_interface"}, want: `"veth 1"`},
		{name: "tap version 3", value: &vppif.Interface{Name: "tap1", Type: vppif.Interface_TAP,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{Version: 3}}},
			fields: []string{"tap.version"}, want: "3 is not 0 (default), 1 or 2"},
		{name: "tap host name with colon", value: &vppif.Interface{Name: "tap1", Type: vppif.Interface_TAP,
			Link: &vppif.Interface_Tap{Tap: &vppif.TapLink{HostIfName: "tap:1"}}},
			fields: []string{"tap.host_if_name"}, want: `"tap:1"`},
		{name: "every problem at once", value: &vppif.Interface{Name: long64, Type: vppif.Interface_AF_PACKET,
			PhysAddress: "x", IpAddresses: []string{"10.0.0.1/24", "y"}, Mtu: 65535},
			fields: []string{"name", "phys_address", "ip_addresses[1]", "mtu", "afpacket"}, want: "65535 is above 9216"},
	})
}

func TestValidateNames(t *testing.T) {
	accepted := []string{
		"GigabitEthernet0/8/0", "eth0.100", "memif1/1", "unicode-é", "a", "x:y", "a.b/c..d/...",
		"loop-1_2", strings.Repeat("n", 255), strings.Repeat("a/", 127) + "a",
	}
	rejected := map[string]string{
		"empty":                  "",
		"space":                  "a b",
		"leading slash":          "/a",
		"trailing slash":         "a/",
		"doubled slash":          "a//b",
		"dot segment":            "a/./b",
		"dot-dot segment":        "a/../b",
		"dot":                    ".",
		"dot-dot":                "..",
		"leading dot segment":    "./a",
		"tab":                    "a\tb",
		"newline":                "a\n",
		"NUL":                    "a\x00b",
		"DEL":                    "a\x7fb",
		"no-break space":         "a\u00a0b",
		"zero-width space":       "a\u200bb",
		"invalid UTF-8":          "a\xffb",
		"256 bytes":              strings.Repeat("n", 256),
		"256 bytes with slashes": strings.Repeat("a/", 127) + "ab",
	}
	// The name rules are the same for every name field; an ARP entry's
	// interface has no other limit.
	arp := func(iface string) *vppl3.ARPEntry {
		return &vppl3.ARPEntry{Interface: iface, IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01"}
	}
	var cases []vtCase
	for _, n := range accepted {
		cases = append(cases, vtCase{name: "accepted " + n, value: arp(n)})
	}
	for what, n := range rejected {
		want := "interface: name "
		if n == "" {
			want = "interface: required"
		}
		cases = append(cases, vtCase{name: "rejected " + what, value: arp(n), fields: []string{"interface"}, want: want})
	}
	vtRun(t, models.VPPARP, cases)

	// The same names in other name fields.
	for _, n := range []string{"GigabitEthernet0/8/0", "eth0.100", "memif1/1", "unicode-é"} {
		if err := models.VPPBridgeDomain.Validate(&vppl2.BridgeDomain{Name: n, Interfaces: []*vppl2.BridgeDomain_Interface{{Name: n}}}); err != nil {
			t.Errorf("bridge domain %q: %v", n, err)
		}
		if err := models.LinuxRoute.Validate(&linuxl3.Route{OutgoingInterface: n, DstNetwork: "10.0.0.0/8"}); err != nil {
			t.Errorf("linux route via %q: %v", n, err)
		}
	}
	for what, n := range rejected {
		err := models.LinuxRoute.Validate(&linuxl3.Route{OutgoingInterface: n, DstNetwork: "10.0.0.0/8"})
		var ve *models.ValidationError
		if !errors.As(err, &ve) || !biEqualStrings(ve.FieldNames(), []string{"outgoing_interface"}) {
			t.Errorf("linux route via %s %q: %v, want an error for outgoing_interface", what, n, err)
		}
		err = models.VPPRoute.Validate(&vppl3.Route{OutgoingInterface: n, DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1"})
		// An empty outgoing interface is allowed on a VPP route.
		if n == "" {
			if err != nil {
				t.Errorf("vpp route without outgoing interface: %v", err)
			}
		} else if !errors.As(err, &ve) || !biEqualStrings(ve.FieldNames(), []string{"outgoing_interface"}) {
			t.Errorf("vpp route via %s %q: %v, want an error for outgoing_interface", what, n, err)
		}
	}

	// The messages say what is wrong.
	for n, want := range map[string]string{
		"":                        "required",
		"a b":                     `contains ' '`,
		"a//b":                    "empty segment",
		"a/../b":                  `segment ".."`,
		strings.Repeat("n", 256):  "longer than 255 bytes",
		"a\xffb":                  "not valid UTF-8",
		"a\tb":                    `contains '\t'`,
		strings.Repeat("v", 64):   "longer than 63 bytes",
		strings.Repeat("v", 1000): "longer than 255 bytes",
	} {
		err := models.VPPInterface.Validate(&vppif.Interface{Name: n})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("VPP interface name %.20q: error %v, want one containing %q", n, err, want)
		}
	}
}

func TestValidateBridgeDomain(t *testing.T) {
	bd := func(mutate func(*vppl2.BridgeDomain)) *vppl2.BridgeDomain {
		b := &vppl2.BridgeDomain{Name: "bd1", Flood: true, Learn: true, Forward: true, ArpTermination: true, MacAge: 10,
			Interfaces: []*vppl2.BridgeDomain_Interface{
				{Name: "loop1", BridgedVirtualInterface: true},
				{Name: "memif1/1", SplitHorizonGroup: 1},
			},
			ArpTerminationTable: []*vppl2.BridgeDomain_ArpTerminationEntry{
				{IpAddress: "10.0.0.1", PhysAddress: "02:00:00:00:00:01"},
				{IpAddress: "2001:db8::1", PhysAddress: "02:00:00:00:00:02"},
			}}
		if mutate != nil {
			mutate(b)
		}
		return b
	}
	member := func(name string, bvi bool) *vppl2.BridgeDomain_Interface {
		return &vppl2.BridgeDomain_Interface{Name: name, BridgedVirtualInterface: bvi}
	}
	vtRun(t, models.VPPBridgeDomain, []vtCase{
		{name: "valid", value: bd(nil)},
		{name: "name only", value: &vppl2.BridgeDomain{Name: "bd1"}},
		{name: "63-byte name", value: &vppl2.BridgeDomain{Name: strings.Repeat("b", 63)}},
		{name: "64-byte name", value: &vppl2.BridgeDomain{Name: strings.Repeat("b", 64)}, fields: []string{"name"}, want: "longer than 63 bytes"},
		{name: "invalid name", value: &vppl2.BridgeDomain{Name: "bd/"}, fields: []string{"name"}, want: `"bd/"`},
		{name: "invalid member name", value: bd(func(b *vppl2.BridgeDomain) { b.Interfaces[1].Name = "" }),
			fields: []string{"interfaces[1].name"}, want: "required"},
		{name: "duplicate member", value: bd(func(b *vppl2.BridgeDomain) {
			b.Interfaces = append(b.Interfaces, member("memif1/1", false))
		}), fields: []string{"interfaces[2].name"}, want: `"memif1/1" is already interfaces[1]`},
		{name: "two BVIs", value: bd(func(b *vppl2.BridgeDomain) { b.Interfaces[1].BridgedVirtualInterface = true }),
			fields: []string{"interfaces[1].bridged_virtual_interface"}, want: "interfaces[0] is the BVI already"},
		{name: "three BVIs", value: bd(func(b *vppl2.BridgeDomain) {
			b.Interfaces = append(b.Interfaces, member("loop2", true), member("loop3", true))
		}), fields: []string{"interfaces[2].bridged_virtual_interface", "interfaces[3].bridged_virtual_interface"}, want: "interfaces[0] is the BVI already"},
		{name: "invalid arp termination address", value: bd(func(b *vppl2.BridgeDomain) { b.ArpTerminationTable[0].IpAddress = "10.0.0.1/32" }),
			fields: []string{"arp_termination_table[0].ip_address"}, want: `"10.0.0.1/32"`},
		{name: "invalid arp termination MAC", value: bd(func(b *vppl2.BridgeDomain) { b.ArpTerminationTable[0].PhysAddress = "02-00-00-00-00" }),
			fields: []string{"arp_termination_table[0].phys_address"}, want: `"02-00-00-00-00"`},
		{name: "missing arp termination MAC", value: bd(func(b *vppl2.BridgeDomain) { b.ArpTerminationTable[1].PhysAddress = "" }),
			fields: []string{"arp_termination_table[1].phys_address"}, want: `""`},
		{name: "duplicate arp termination address", value: bd(func(b *vppl2.BridgeDomain) {
			b.ArpTerminationTable = append(b.ArpTerminationTable,
				&vppl2.BridgeDomain_ArpTerminationEntry{IpAddress: "2001:DB8:0::1", PhysAddress: "02:00:00:00:00:03"})
		}), fields: []string{"arp_termination_table[2].ip_address"}, want: "2001:db8::1 is already arp_termination_table[1]"},
	})
}

// TestRouteChecksEveryEnum: the VPP and Linux routes' checks test their
// one enum (type, scope) directly instead of walking the message for enums;
// that holds while it is the route's only enum and it has no message field.
// A new one fails here: check it in validateVPPRoute / validateLinuxRoute
// too (or go back to checkEnums).
func TestRouteChecksEveryEnum(t *testing.T) {
	for _, tc := range []struct {
		route   proto.Message
		checked protoreflect.Name
		check   string
	}{
		{&vppl3.Route{}, "type", "validateVPPRoute"},
		{&linuxl3.Route{}, "scope", "validateLinuxRoute"},
	} {
		md := tc.route.ProtoReflect().Descriptor()
		for i := range md.Fields().Len() {
			fd := md.Fields().Get(i)
			if (fd.Kind() == protoreflect.EnumKind || fd.Kind() == protoreflect.MessageKind) && fd.Name() != tc.checked {
				t.Errorf("%s.%s is a %s field: %s does not check its enums", md.FullName(), fd.Name(), fd.Kind(), tc.check)
			}
		}
	}
}

func TestValidateVPPRoute(t *testing.T) {
	vtRun(t, models.VPPRoute, []vtCase{
		{name: "via gateway", value: &vppl3.Route{VrfId: 1, DstNetwork: "10.1.0.0/16", NextHopAddr: "10.0.0.1", OutgoingInterface: "GigabitEthernet0/8/0", Weight: 1, Preference: 2}},
		{name: "host bits set", value: &vppl3.Route{DstNetwork: "10.1.2.3/16", OutgoingInterface: "loop1"}},
		{name: "default route", value: &vppl3.Route{DstNetwork: "0.0.0.0/0", NextHopAddr: "10.0.0.1"}},
		{name: "IPv6", value: &vppl3.Route{DstNetwork: "2001:db8::/32", NextHopAddr: "fe80::1", OutgoingInterface: "loop1"}},
		{name: "inter-VRF", value: &vppl3.Route{Type: vppl3.Route_INTER_VRF, VrfId: 1, ViaVrfId: 2, DstNetwork: "10.0.0.0/8"}},
		{name: "drop", value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "192.0.2.0/24"}},
		{name: "inter-VRF via a next hop", value: &vppl3.Route{Type: vppl3.Route_INTER_VRF, ViaVrfId: 2, DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1"}},

		{name: "undefined type", value: &vppl3.Route{Type: vppl3.Route_RouteType(3), DstNetwork: "10.0.0.0/8"},
			fields: []string{"type"}, want: "3 is not a value of vpp.l3.Route.RouteType"},
		{name: "no destination", value: &vppl3.Route{NextHopAddr: "10.0.0.1"}, fields: []string{"dst_network"}, want: `""`},
		{name: "destination without length", value: &vppl3.Route{DstNetwork: "10.0.0.0", OutgoingInterface: "loop1"}, fields: []string{"dst_network"}, want: `"10.0.0.0"`},
		{name: "destination with zone", value: &vppl3.Route{DstNetwork: "fe80::%eth0/64", OutgoingInterface: "loop1"}, fields: []string{"dst_network"}, want: `"fe80::%eth0/64"`},
		{name: "next hop with length", value: &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "10.0.0.1/32"},
			fields: []string{"next_hop_addr"}, want: `"10.0.0.1/32" is not an IP address`},
		{name: "IPv6 next hop for IPv4 destination", value: &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "2001:db8::1"},
			fields: []string{"next_hop_addr"}, want: "2001:db8::1 is not of the IP version of dst_network 10.0.0.0/8"},
		{name: "IPv4 next hop for IPv6 destination", value: &vppl3.Route{DstNetwork: "2001:db8::/32", NextHopAddr: "10.0.0.1"},
			fields: []string{"next_hop_addr"}, want: "is not of the IP version"},
		{name: "invalid outgoing interface", value: &vppl3.Route{DstNetwork: "10.0.0.0/8", OutgoingInterface: "a b"},
			fields: []string{"outgoing_interface"}, want: `"a b"`},
		// What each type of route may have.
		{name: "drop with a next hop", value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1"},
			fields: []string{"next_hop_addr"}, want: "a DROP route has no next hop"},
		{name: "drop with an interface", value: &vppl3.Route{Type: vppl3.Route_DROP, DstNetwork: "10.0.0.0/8", OutgoingInterface: "loop1"},
			fields: []string{"outgoing_interface"}, want: "a DROP route has no outgoing interface"},
		{name: "inter-VRF with an interface, looking up its own VRF", value: &vppl3.Route{Type: vppl3.Route_INTER_VRF, VrfId: 3, ViaVrfId: 3, DstNetwork: "10.0.0.0/8", OutgoingInterface: "loop1"},
			fields: []string{"outgoing_interface", "via_vrf_id"}, want: "3 is vrf_id itself: the lookup would loop"},
		{name: "intra-VRF without next hop or interface", value: &vppl3.Route{DstNetwork: "10.0.0.0/8"},
			fields: []string{"next_hop_addr"}, want: "an INTRA_VRF route needs a next hop or an outgoing interface"},
		{name: "via_vrf_id on an intra-VRF route", value: &vppl3.Route{DstNetwork: "10.0.0.0/8", NextHopAddr: "1.1.1.1", ViaVrfId: 3},
			fields: []string{"via_vrf_id"}, want: "only an INTER_VRF route is looked up in another VRF"},
		{name: "every problem", value: &vppl3.Route{Type: 7, DstNetwork: "x", NextHopAddr: "y", OutgoingInterface: "/"},
			fields: []string{"type", "dst_network", "next_hop_addr", "outgoing_interface"}, want: `"y"`},
	})
}

func TestValidateVPPARP(t *testing.T) {
	vtRun(t, models.VPPARP, []vtCase{
		{name: "valid", value: &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02", Static: true}},
		{name: "IPv6", value: &vppl3.ARPEntry{Interface: "memif1/1", IpAddress: "2001:db8::2", PhysAddress: "02:00:00:00:00:02"}},
		{name: "no interface", value: &vppl3.ARPEntry{IpAddress: "10.0.0.2", PhysAddress: "02:00:00:00:00:02"}, fields: []string{"interface"}, want: "required"},
		{name: "bad address", value: &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.256", PhysAddress: "02:00:00:00:00:02"},
			fields: []string{"ip_address"}, want: `"10.0.0.256"`},
		{name: "no MAC", value: &vppl3.ARPEntry{Interface: "loop1", IpAddress: "10.0.0.2"}, fields: []string{"phys_address"}, want: `""`},
	})
}

func vtLinuxIf(name string, mutate ...func(*linuxif.Interface)) *linuxif.Interface {
	i := &linuxif.Interface{Name: name, Type: linuxif.Interface_DUMMY, Enabled: true}
	for _, f := range mutate {
		f(i)
	}
	return i
}

func vtVeth(peer string) *linuxif.Interface_Veth {
	return &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: peer}}
}

func TestValidateLinuxInterface(t *testing.T) {
	ns := func(typ linuxns.NetNamespace_ReferenceType, ref string) func(*linuxif.Interface) {
		return func(i *linuxif.Interface) { i.Namespace = &linuxns.NetNamespace{Type: typ, Reference: ref} }
	}
	vtRun(t, models.LinuxInterface, []vtCase{
		{name: "dummy", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) {
			i.IpAddresses = []string{"192.168.1.1/24", "2001:db8::1/64"}
			i.PhysAddress = "02:00:00:00:00:01"
			i.Mtu = 9000
		})},
		{name: "15-byte name", value: vtLinuxIf(strings.Repeat("n", 15))},
		{name: "long name with host name", value: vtLinuxIf("a-rather-long-logical:name", func(i *linuxif.Interface) { i.HostIfName = "eth1" })},
		{name: "long loopback name without host name (lo)", value: &linuxif.Interface{Name: "lo-of-a-rather-long:name", Type: linuxif.Interface_LOOPBACK}},
		{name: "veth", value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, HostIfName: "v1",
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2",
				RxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_DISABLED, TxChecksumOffloading: linuxif.VethLink_CHKSM_OFFLOAD_ENABLED}}}},
		{name: "tap to vpp", value: &linuxif.Interface{Name: "tap1", Type: linuxif.Interface_TAP_TO_VPP,
			Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap1"}}}},
		{name: "named namespace", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_NSID, "ns1"))},
		{name: "pid namespace", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_PID, "1234"))},
		{name: "fd namespace", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_FD, "/proc/1/ns/net"))},
		{name: "microservice namespace", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_MICROSERVICE, "ms1"))},
		{name: "empty namespace", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_UNDEFINED, ""))},
		{name: "vrf member", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.VrfMasterInterface = "vrf1" })},

		{name: "empty name", value: vtLinuxIf(""), fields: []string{"name"}, want: "required"},
		{name: "host_if_name too long", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.HostIfName = strings.Repeat("h", 16) }),
			fields: []string{"host_if_name"}, want: "longer than 15 bytes"},
		{name: "host_if_name with colon", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.HostIfName = "eth0:1" }),
			fields: []string{"host_if_name"}, want: "contains / or :"},
		{name: "host_if_name dot-dot", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.HostIfName = ".." }),
			fields: []string{"host_if_name"}, want: "not a name"},
		{name: "host_if_name with space", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.HostIfName = "a b" }),
			fields: []string{"host_if_name"}, want: "spaces or control characters"},
		{name: "long name without host name", value: vtLinuxIf(strings.Repeat("n", 16)),
			fields: []string{"host_if_name"}, want: "required: name"},
		{name: "name with slash", value: vtLinuxIf("uplink/eth0", func(i *linuxif.Interface) { i.HostIfName = "eth0" }),
			fields: []string{"name"}, want: `name "uplink/eth0" contains "/" (a Linux interface's name is part of the alias`},
		{name: "name with slash without host name", value: vtLinuxIf("eth0/1"),
			fields: []string{"name"}, want: `contains "/"`},
		{name: "name with colon without host name", value: vtLinuxIf("eth0:1"),
			fields: []string{"host_if_name"}, want: "contains / or :"},
		{name: "undefined type", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.Type = linuxif.Interface_Type(42) }),
			fields: []string{"type"}, want: "42 is not a value of linux.interfaces.Interface.Type"},
		{name: "undefined namespace type", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_ReferenceType(9), "ns1")),
			fields: []string{"namespace.type"}, want: "9 is not a value of linux.namespace.NetNamespace.ReferenceType"},
		{name: "namespace reference without type", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_UNDEFINED, "ns1")),
			fields: []string{"namespace.type"}, want: "required with a reference"},
		{name: "named namespace without reference", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_NSID, "")),
			fields: []string{"namespace.reference"}, want: "required for a namespace of type NSID"},
		{name: "pid namespace not a number", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_PID, "init")),
			fields: []string{"namespace.reference"}, want: `"init" is not a process ID`},
		{name: "pid namespace negative", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_PID, "-1")),
			fields: []string{"namespace.reference"}, want: `"-1" is not a process ID`},
		{name: "pid namespace too large", value: vtLinuxIf("dummy1", ns(linuxns.NetNamespace_PID, "2147483648")),
			fields: []string{"namespace.reference"}, want: `"2147483648" is not a process ID`},
		{name: "invalid MAC", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.PhysAddress = "02:00:00:00:00:01:02" }),
			fields: []string{"phys_address"}, want: `"02:00:00:00:00:01:02"`},
		{name: "multicast MAC", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.PhysAddress = "01:00:5e:00:00:01" }),
			fields: []string{"phys_address"}, want: "01:00:5e:00:00:01 is a multicast address"},
		{name: "zero MAC", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.PhysAddress = "00:00:00:00:00:00" }),
			fields: []string{"phys_address"}, want: "not an address an interface can have"},
		{name: "invalid address", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.IpAddresses = []string{"10.0.0.1/24", "fe80::1/129"} }),
			fields: []string{"ip_addresses[1]"}, want: `"fe80::1/129"`},
		{name: "invalid vrf master", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.VrfMasterInterface = "a//b" }),
			fields: []string{"vrf_master_interface"}, want: `"a//b"`},
		{name: "own vrf master", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) { i.VrfMasterInterface = "dummy1" }),
			fields: []string{"vrf_master_interface"}, want: "its own VRF master"},
		{name: "veth without link", value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH},
			fields: []string{"veth"}, want: "required for a VETH interface"},
		{name: "veth with tap link", value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH,
			Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap1"}}},
			fields: []string{"veth"}, want: "required for a VETH interface"},
		{name: "veth without peer", value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, Link: vtVeth("")},
			fields: []string{"veth.peer_if_name"}, want: "required"},
		{name: "veth peer with slash", value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, Link: vtVeth("ns1/veth2")},
			fields: []string{"veth.peer_if_name"}, want: `name "ns1/veth2" contains "/"`},
		{name: "veth its own peer", value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH, Link: vtVeth("veth1")},
			fields: []string{"veth.peer_if_name"}, want: "its own peer"},
		{name: "undefined checksum offloading", value: &linuxif.Interface{Name: "veth1", Type: linuxif.Interface_VETH,
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "veth2", TxChecksumOffloading: 5}}},
			fields: []string{"veth.tx_checksum_offloading"}, want: "5 is not a value of linux.interfaces.VethLink.ChecksumOffloading"},
		{name: "veth link on a loopback", value: &linuxif.Interface{Name: "lo1", Type: linuxif.Interface_LOOPBACK, Link: vtVeth("veth2")},
			fields: []string{"veth"}, want: "set, but the interface is of type LOOPBACK"},
		{name: "tap without link", value: &linuxif.Interface{Name: "tap1", Type: linuxif.Interface_TAP_TO_VPP},
			fields: []string{"tap"}, want: "required for a TAP_TO_VPP interface"},
		{name: "tap without vpp name", value: &linuxif.Interface{Name: "tap1", Type: linuxif.Interface_TAP_TO_VPP,
			Link: &linuxif.Interface_Tap{Tap: &linuxif.TapLink{}}},
			fields: []string{"tap.vpp_tap_if_name"}, want: "required"},
		{name: "tap link on a dummy", value: vtLinuxIf("dummy1", func(i *linuxif.Interface) {
			i.Link = &linuxif.Interface_Tap{Tap: &linuxif.TapLink{VppTapIfName: "tap1"}}
		}), fields: []string{"tap"}, want: "set, but the interface is of type DUMMY"},
	})
}

func TestValidateLinuxRoute(t *testing.T) {
	vtRun(t, models.LinuxRoute, []vtCase{
		{name: "via gateway", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/16", GwAddr: "10.0.0.1", Scope: linuxl3.Route_GLOBAL, Metric: 100}},
		{name: "link route", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/16", Scope: linuxl3.Route_LINK}},
		{name: "IPv6", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "::/0", GwAddr: "fe80::1"}},

		{name: "undefined scope", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/16", Scope: 5},
			fields: []string{"scope"}, want: "5 is not a value of linux.l3.Route.Scope"},
		{name: "no interface", value: &linuxl3.Route{DstNetwork: "10.1.0.0/16"}, fields: []string{"outgoing_interface"}, want: "required"},
		{name: "bad destination", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/-1"},
			fields: []string{"dst_network"}, want: `"10.1.0.0/-1"`},
		{name: "bad gateway", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/16", GwAddr: "gw"},
			fields: []string{"gw_addr"}, want: `"gw" is not an IP address`},
		{name: "gateway of the other family", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/16", GwAddr: "fe80::1"},
			fields: []string{"gw_addr"}, want: "fe80::1 is not of the IP version of dst_network 10.1.0.0/16"},
		{name: "IPv4 gateway for IPv6", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "2001:db8::/32", GwAddr: "10.0.0.1"},
			fields: []string{"gw_addr"}, want: "is not of the IP version"},
		{name: "IPv4-mapped destination", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "::ffff:10.9.0.0/112"},
			fields: []string{"dst_network"}, want: "::ffff:10.9.0.0 is an IPv4-mapped IPv6 address: write the IPv4 address 10.9.0.0"},
		{name: "IPv4-mapped gateway", value: &linuxl3.Route{OutgoingInterface: "veth1", DstNetwork: "10.1.0.0/16", GwAddr: "::ffff:10.0.0.1"},
			fields: []string{"gw_addr"}, want: "::ffff:10.0.0.1 is an IPv4-mapped IPv6 address"},
	})
}

func TestValidateLinuxARP(t *testing.T) {
	vtRun(t, models.LinuxARP, []vtCase{
		{name: "valid", value: &linuxl3.ARPEntry{Interface: "veth1", IpAddress: "10.0.0.2", HwAddress: "02:00:00:00:00:02"}},
		{name: "no interface", value: &linuxl3.ARPEntry{IpAddress: "10.0.0.2", HwAddress: "02:00:00:00:00:02"}, fields: []string{"interface"}, want: "required"},
		{name: "address with zone", value: &linuxl3.ARPEntry{Interface: "veth1", IpAddress: "fe80::2%veth1", HwAddress: "02:00:00:00:00:02"},
			fields: []string{"ip_address"}, want: `"fe80::2%veth1"`},
		{name: "bad MAC", value: &linuxl3.ARPEntry{Interface: "veth1", IpAddress: "10.0.0.2", HwAddress: "02:00:00:00:00:0g"},
			fields: []string{"hw_address"}, want: `"02:00:00:00:00:0g"`},
		{name: "IPv4-mapped address", value: &linuxl3.ARPEntry{Interface: "veth1", IpAddress: "::ffff:10.0.0.2", HwAddress: "02:00:00:00:00:02"},
			fields: []string{"ip_address"}, want: "write the IPv4 address 10.0.0.2"},
	})
}

// TestValidateWrongMessage: Validate of a value of another model, or of
// nil, is an error, not a panic, and not a ValidationError.
func TestValidateWrongMessage(t *testing.T) {
	for _, m := range models.Builtin() {
		for _, v := range []proto.Message{nil, &vppl3.ARPEntry{}, &linuxl3.ARPEntry{}} {
			if v != nil && models.Default.ModelOfMessage(v) == m {
				continue
			}
			err := m.Validate(v)
			if err == nil {
				t.Errorf("%s.Validate(%T) = nil, want an error", m.Name, v)
				continue
			}
			var ve *models.ValidationError
			if errors.As(err, &ve) {
				t.Errorf("%s.Validate(%T) = %v, a ValidationError", m.Name, v, err)
			}
			if !strings.Contains(err.Error(), m.Name) {
				t.Errorf("%s.Validate(%T) = %q, does not name the model", m.Name, v, err)
			}
		}
	}
}
