package ifplugin_test

import (
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
)

func TestParseDerivedKeys(t *testing.T) {
	for _, name := range []string{"loop1", "GigabitEthernet0/8/0", "unnumbered", "a/address/b"} {
		if i, c, ok := ifplugin.ParseAddressKey(ifplugin.AddressKey(name, "2001:db8::1/64")); !ok || i != name || c != "2001:db8::1/64" {
			t.Errorf("ParseAddressKey(%s) = %q %q %v", name, i, c, ok)
		}
		if i, up, ok := ifplugin.ParseAdminStateKey(ifplugin.AdminStateKey(name, true)); !ok || i != name || !up {
			t.Errorf("ParseAdminStateKey(%s) = %q %v %v", name, i, up, ok)
		}
		if i, vrf, ver, ok := ifplugin.ParseVRFKey(ifplugin.VRFKey(name, 42, "both")); !ok || i != name || vrf != 42 || ver != "both" {
			t.Errorf("ParseVRFKey(%s) = %q %d %q %v", name, i, vrf, ver, ok)
		}
		if i, ok := ifplugin.ParseUnnumberedKey(ifplugin.UnnumberedKey(name)); !ok || i != name {
			t.Errorf("ParseUnnumberedKey(%s) = %q %v", name, i, ok)
		}
	}
	// The keys of an interface named "unnumbered" are not unnumbered keys.
	for _, k := range []string{
		ifplugin.AddressKey("unnumbered", "10.0.0.1/24"), ifplugin.AdminStateKey("unnumbered", false),
		ifplugin.VRFKey("unnumbered", 1, "both"), ifplugin.HasIPAddressKey("unnumbered"), ifplugin.LinkStateKey("unnumbered", true),
	} {
		if _, ok := ifplugin.ParseUnnumberedKey(k); ok {
			t.Errorf("%s taken for an unnumbered key", k)
		}
	}
	for _, k := range []string{"vpp/interface/x/vrf/01/ip-version/both", "vpp/interface/x/vrf/1/ip-version/v5", "vpp/interface//admin-state/UP", "vpp/interface/x/address/static/"} {
		_, _, _, vrf := ifplugin.ParseVRFKey(k)
		_, _, admin := ifplugin.ParseAdminStateKey(k)
		_, _, addr := ifplugin.ParseAddressKey(k)
		if vrf || admin || addr {
			t.Errorf("%s parsed (vrf %v admin %v address %v)", k, vrf, admin, addr)
		}
	}
}

// Every derived key belongs to at most one descriptor.
func TestSelectorsDoNotOverlap(t *testing.T) {
	p := ifplugin.NewWithHandler(nil, quiet)
	keys := []string{
		ifplugin.InterfaceKey("loop1"), ifplugin.AddressKey("unnumbered", "10.0.0.1/24"),
		ifplugin.AdminStateKey("unnumbered", true), ifplugin.VRFKey("unnumbered", 3, "both"),
		ifplugin.UnnumberedKey("loop1"), ifplugin.HasIPAddressKey("loop1"), ifplugin.LinkStateKey("loop1", true),
	}
	want := map[string]string{
		keys[0]: ifplugin.InterfaceDescriptorName, keys[1]: ifplugin.AddressDescriptorName,
		keys[2]: ifplugin.AdminStateDescriptorName, keys[3]: ifplugin.VRFDescriptorName,
		keys[4]: ifplugin.UnnumberedDescriptorName, keys[5]: "", keys[6]: "",
	}
	for _, k := range keys {
		var got []string
		for _, d := range p.Descriptors() {
			if d.KeySelector(k) {
				got = append(got, d.Name)
			}
		}
		if (want[k] == "" && len(got) != 0) || (want[k] != "" && (len(got) != 1 || got[0] != want[k])) {
			t.Errorf("%s selected by %v, want %q", k, got, want[k])
		}
	}
}

func TestLookupBySwIfIndex(t *testing.T) {
	m := ifplugin.IndexMapFactory()
	m.Put("a", &ifplugin.Metadata{SwIfIndex: 1})
	m.Put("b", &ifplugin.Metadata{SwIfIndex: 2})
	check := func(mm api.MetadataMap, idx uint32, want string) {
		t.Helper()
		got, ok := ifplugin.LookupBySwIfIndex(mm, idx)
		if got != want || ok != (want != "") {
			t.Errorf("LookupBySwIfIndex(%d) = %q %v, want %q", idx, got, ok, want)
		}
	}
	check(m, 1, "a")
	check(m, 2, "b")
	check(m, 3, "")
	// a is re-created at another index; c takes index 1 (VPP reuses it).
	m.Put("a", &ifplugin.Metadata{SwIfIndex: 5})
	m.Put("c", &ifplugin.Metadata{SwIfIndex: 1})
	check(m, 1, "c")
	check(m, 5, "a")
	m.Delete("a")
	check(m, 5, "")
	check(m, 1, "c")
	// b is deleted after d took its index: d stays.
	m.Put("d", &ifplugin.Metadata{SwIfIndex: 2})
	m.Delete("b")
	check(m, 2, "d")
	if labels := m.ListLabels(); len(labels) != 2 || labels[0] != "c" || labels[1] != "d" {
		t.Errorf("labels %v", labels)
	}

	// Any other map is scanned.
	plain := api.NewMetadataMap()
	plain.Put("x", &ifplugin.Metadata{SwIfIndex: 7})
	plain.Put("y", ifplugin.Metadata{SwIfIndex: 8})
	check(plain, 7, "x")
	check(plain, 8, "y")
	check(plain, 9, "")
	check(nil, 7, "")
}
