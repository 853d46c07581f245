package ligato

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/testing/protocmp"

	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	ligatolinux "github.com/netagent-io/netagent/proto/ligato/linux"
	ligatovpp "github.com/netagent-io/netagent/proto/ligato/vpp"
	ligatovppif "github.com/netagent-io/netagent/proto/ligato/vpp/interfaces"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// originalMatches is the original agent's definition of a filter match:
// the filter merged into a copy of the notification leaves it equal to
// the notification, scalars at their default and messages without fields
// counting as unset.
func originalMatches(n, f *ligatocfg.Notification) bool {
	merged := proto.Clone(n)
	proto.Merge(merged, f)
	return cmp.Equal(merged, n, protocmp.Transform(), protocmp.IgnoreDefaultScalars(), protocmp.IgnoreEmptyMessages())
}

func vppNote(typ ligatovppif.InterfaceNotification_NotifType, st *ligatovppif.InterfaceState) *ligatocfg.Notification {
	return &ligatocfg.Notification{Notification: &ligatocfg.Notification_VppNotification{
		VppNotification: &ligatovpp.Notification{Interface: &ligatovppif.InterfaceNotification{Type: typ, State: st}},
	}}
}

// sampleNotes are notifications as the notifier makes them, and some it
// does not (no state, no interface) to try the matching on absent
// messages.
func sampleNotes() []*ligatocfg.Notification {
	return []*ligatocfg.Notification{
		vppNote(ligatovppif.InterfaceNotification_UPDOWN, &ligatovppif.InterfaceState{
			Name: "loop1", InternalName: "loop0", Type: vppif.Interface_SOFTWARE_LOOPBACK, IfIndex: 1,
			AdminStatus: ligatovppif.InterfaceState_UP, OperStatus: ligatovppif.InterfaceState_DOWN,
			LastChange: 1700000000, PhysAddress: "02:00:00:00:00:01", Mtu: 1500,
		}),
		vppNote(ligatovppif.InterfaceNotification_UPDOWN, &ligatovppif.InterfaceState{
			Name: "mem1", InternalName: "memif1/0", Type: vppif.Interface_MEMIF, IfIndex: 2,
			AdminStatus: ligatovppif.InterfaceState_DELETED, OperStatus: ligatovppif.InterfaceState_DELETED,
			LastChange: 1700000005,
		}),
		vppNote(ligatovppif.InterfaceNotification_UPDOWN, &ligatovppif.InterfaceState{Name: "tap1", OperStatus: ligatovppif.InterfaceState_UP}),
		vppNote(ligatovppif.InterfaceNotification_COUNTERS, nil),
		{Notification: &ligatocfg.Notification_VppNotification{VppNotification: &ligatovpp.Notification{}}},
		{},
	}
}

// randomFilter makes a filter of some of the fields the notifications
// have, each unset, at its default, or at one of the values the samples
// have or a value none has; messages possibly present and empty; rarely
// a Linux notification.
func randomFilter(r *rand.Rand) *ligatocfg.Notification {
	pick := func(vs ...any) any { return vs[r.IntN(len(vs))] }
	if r.IntN(10) == 0 {
		return &ligatocfg.Notification{Notification: &ligatocfg.Notification_LinuxNotification{LinuxNotification: &ligatolinux.Notification{}}}
	}
	st := &ligatovppif.InterfaceState{}
	if r.IntN(2) == 0 {
		st.Name = pick("", "loop1", "mem1", "tap1", "other").(string)
	}
	if r.IntN(3) == 0 {
		st.InternalName = pick("", "loop0", "memif1/0", "x").(string)
	}
	if r.IntN(3) == 0 {
		st.Type = pick(vppif.Interface_UNDEFINED_TYPE, vppif.Interface_SOFTWARE_LOOPBACK, vppif.Interface_MEMIF, vppif.Interface_TAP).(vppif.Interface_Type)
	}
	if r.IntN(3) == 0 {
		st.IfIndex = pick(uint32(0), uint32(1), uint32(2), uint32(9)).(uint32)
	}
	status := func() ligatovppif.InterfaceState_Status {
		return ligatovppif.InterfaceState_Status(r.IntN(5)) // 4: unknown to both
	}
	if r.IntN(2) == 0 {
		st.AdminStatus = status()
	}
	if r.IntN(2) == 0 {
		st.OperStatus = status()
	}
	if r.IntN(4) == 0 {
		st.LastChange = pick(int64(0), int64(1700000000), int64(1700000005), int64(1)).(int64)
	}
	if r.IntN(4) == 0 {
		st.PhysAddress = pick("", "02:00:00:00:00:01", "02:00:00:00:00:02").(string)
	}
	if r.IntN(4) == 0 {
		st.Mtu = pick(uint32(0), uint32(1500), uint32(9000)).(uint32)
	}
	ifn := &ligatovppif.InterfaceNotification{}
	if r.IntN(2) == 0 {
		ifn.Type = ligatovppif.InterfaceNotification_NotifType(r.IntN(3))
	}
	// A state without fields set is present (an empty message) or not.
	if proto.Size(st) > 0 || r.IntN(2) == 0 {
		ifn.State = st
	}
	vn := &ligatovpp.Notification{}
	if proto.Size(ifn) > 0 || r.IntN(2) == 0 {
		vn.Interface = ifn
	}
	if proto.Size(vn) == 0 && r.IntN(3) == 0 {
		return &ligatocfg.Notification{} // no field set
	}
	return &ligatocfg.Notification{Notification: &ligatocfg.Notification_VppNotification{VppNotification: vn}}
}

// The matching is the original's, on every pair of sample notifications
// and filters made of their fields.
func TestMatchesAsTheOriginal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	notes := sampleNotes()
	var outcomes [2]int
	for i := range 1000 {
		f := randomFilter(r)
		for _, n := range notes {
			want := originalMatches(n, f)
			if got := matches(n.ProtoReflect(), f.ProtoReflect()); got != want {
				t.Fatalf("filter %d %v on %v: matches %v, the original's %v", i, f, n, got, want)
			}
			if want {
				outcomes[1]++
			} else {
				outcomes[0]++
			}
		}
	}
	// Both outcomes, often: the filters are not all trivial.
	if outcomes[0] < 200 || outcomes[1] < 200 {
		t.Errorf("outcomes (no match, match): %v, want both", outcomes)
	}
}

// Filters as the original agentctl sends them, the edge cases named.
func TestWanted(t *testing.T) {
	loop1 := sampleNotes()[0]
	state := func(st *ligatovppif.InterfaceState) *ligatocfg.Notification { return vppNote(0, st) }
	withStateUnknown := func(raw []byte) *ligatocfg.Notification {
		f := state(&ligatovppif.InterfaceState{Name: "loop1"})
		m := f.GetVppNotification().GetInterface().GetState().ProtoReflect()
		m.SetUnknown(raw)
		return f
	}
	statistics := protowire.AppendTag(nil, 100, protowire.BytesType)
	inPackets := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 5)
	for _, c := range []struct {
		what    string
		filters []*ligatocfg.Notification
		want    bool
	}{
		{"no filters", nil, true},
		{"name", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop1"})}, true},
		{"another name", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop2"})}, false},
		{"name and oper state", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop1", OperStatus: ligatovppif.InterfaceState_DOWN})}, true},
		{"name and another oper state", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop1", OperStatus: ligatovppif.InterfaceState_UP})}, false},
		{"either filter", []*ligatocfg.Notification{
			state(&ligatovppif.InterfaceState{Name: "loop2"}), state(&ligatovppif.InterfaceState{OperStatus: ligatovppif.InterfaceState_DOWN}),
		}, true},
		{"neither filter", []*ligatocfg.Notification{
			state(&ligatovppif.InterfaceState{Name: "loop2"}), state(&ligatovppif.InterfaceState{OperStatus: ligatovppif.InterfaceState_UP}),
		}, false},
		{"UPDOWN", []*ligatocfg.Notification{vppNote(ligatovppif.InterfaceNotification_UPDOWN, nil)}, true},
		{"COUNTERS", []*ligatocfg.Notification{vppNote(ligatovppif.InterfaceNotification_COUNTERS, nil)}, false},
		// An enum's 0 is its default: not a filter.
		{"UNKNOWN_STATUS", []*ligatocfg.Notification{state(&ligatovppif.InterfaceState{Name: "loop1", AdminStatus: ligatovppif.InterfaceState_UNKNOWN_STATUS})}, true},
		{"empty filter", []*ligatocfg.Notification{{}}, true},
		{"empty VPP notification", []*ligatocfg.Notification{{Notification: &ligatocfg.Notification_VppNotification{}}}, true},
		{"Linux notification", []*ligatocfg.Notification{{Notification: &ligatocfg.Notification_LinuxNotification{LinuxNotification: &ligatolinux.Notification{}}}}, false},
		// The original's statistics, which netagent's state lacks: empty,
		// the original ignores it; with counters, netagent never sends them.
		{"empty statistics", []*ligatocfg.Notification{withStateUnknown(protowire.AppendBytes(statistics, nil))}, true},
		{"statistics", []*ligatocfg.Notification{withStateUnknown(protowire.AppendBytes(statistics, inPackets))}, false},
		{"unknown scalar", []*ligatocfg.Notification{withStateUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 0))}, false},
	} {
		if got := wanted(loop1, c.filters); got != c.want {
			t.Errorf("%s: wanted %v, want %v", c.what, got, c.want)
		}
	}
}

// The notification messages have no lists nor maps, which matches refuses
// (the original's merge would append to them).
func TestNotificationsHaveNoListsNorMaps(t *testing.T) {
	seen := map[protoreflect.FullName]bool{}
	var walk func(md protoreflect.MessageDescriptor)
	walk = func(md protoreflect.MessageDescriptor) {
		if seen[md.FullName()] {
			return
		}
		seen[md.FullName()] = true
		fields := md.Fields()
		for i := range fields.Len() {
			fd := fields.Get(i)
			if fd.IsList() || fd.IsMap() {
				t.Errorf("%s is a list or a map", fd.FullName())
			}
			if fd.Message() != nil {
				walk(fd.Message())
			}
		}
	}
	walk((&ligatocfg.Notification{}).ProtoReflect().Descriptor())
	if len(seen) < 5 {
		t.Errorf("walked %d messages, want the whole tree", len(seen))
	}
}
