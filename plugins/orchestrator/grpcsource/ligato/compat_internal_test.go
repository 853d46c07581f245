package ligato

import (
	"fmt"
	"slices"
	"sort"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	configpb "github.com/netagent-io/netagent/proto/config"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

func newInterface(name string) *vppif.Interface {
	return &vppif.Interface{Name: name, Type: vppif.Interface_SOFTWARE_LOOPBACK}
}

// Every list of netagent's document has its place in the original's
// containers, under the same name and with the same message, and the
// conversions carry it both ways: a model added to the document without
// its place here fails this test.
func TestConversionCoversTheDocument(t *testing.T) {
	c := &configpb.Config{}
	cm := c.ProtoReflect()
	lm := (&ligatocfg.Config{}).ProtoReflect()
	sections := cm.Descriptor().Fields()
	n := 0
	for i := range sections.Len() {
		sfd := sections.Get(i)
		lsfd := lm.Descriptor().Fields().ByName(sfd.Name())
		if lsfd == nil {
			t.Errorf("section %s has no place in ligato.configurator.Config", sfd.Name())
			continue
		}
		sm := cm.Mutable(sfd).Message()
		fields := sfd.Message().Fields()
		for j := range fields.Len() {
			fd := fields.Get(j)
			lfd := lsfd.Message().Fields().ByName(fd.Name())
			if lfd == nil || lfd.Message() == nil || lfd.Message().FullName() != fd.Message().FullName() || lfd.IsList() != fd.IsList() {
				t.Errorf("%s.%s (%s) has no field of the same message and cardinality in %s", sfd.Name(), fd.Name(), fd.Message().FullName(), lsfd.Message().FullName())
				continue
			}
			if !fd.IsList() { // the value of a model of one value
				v := sm.Mutable(fd).Message()
				if !setFirstString(v, fmt.Sprintf("v%d", n)) {
					setFirstBool(v)
				}
				n++
				continue
			}
			// One value with a field set, told apart from the others.
			v := sm.Mutable(fd).List().NewElement()
			setFirstString(v.Message(), fmt.Sprintf("v%d", n))
			sm.Mutable(fd).List().Append(v)
			n++
		}
	}
	back := toConfig(fromConfig(c), nil)
	if !proto.Equal(back, c) {
		t.Errorf("document -> original's -> document:\n%v\nwant\n%v", back, c)
	}
	// Through the wire, as a client of the original's protos sees it.
	b, err := proto.Marshal(fromConfig(c))
	if err != nil {
		t.Fatal(err)
	}
	var wire ligatocfg.Config
	if err := proto.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	if back := toConfig(&wire, nil); !proto.Equal(back, c) {
		t.Errorf("through the wire:\n%v\nwant\n%v", back, c)
	}
}

// setFirstString sets the first string field of m; false when it has none.
func setFirstString(m protoreflect.Message, s string) bool {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); fd.Kind() == protoreflect.StringKind && !fd.IsList() {
			m.Set(fd, protoreflect.ValueOfString(s))
			return true
		}
	}
	return false
}

// setFirstBool sets the first bool field of m.
func setFirstBool(m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		if fd := fields.Get(i); fd.Kind() == protoreflect.BoolKind && !fd.IsList() {
			m.Set(fd, protoreflect.ValueOfBool(true))
			return
		}
	}
}

// toConfig leaves out the places asked, and only those.
func TestToConfigSkips(t *testing.T) {
	c := &configpb.Config{VppConfig: &configpb.VppConfig{}}
	for i := range 3 {
		c.VppConfig.Interfaces = append(c.VppConfig.Interfaces, newInterface(fmt.Sprintf("loop%d", i)))
	}
	got := toConfig(fromConfig(c), map[string]bool{"vpp_config.interfaces[1]": true, "vpp_config.routes[0]": true})
	var names []string
	for _, i := range got.GetVppConfig().GetInterfaces() {
		names = append(names, i.GetName())
	}
	if want := []string{"loop0", "loop2"}; !slices.Equal(names, want) {
		t.Errorf("interfaces %v, want %v", names, want)
	}
	if len(c.VppConfig.Interfaces) != 3 {
		t.Error("toConfig changed its input")
	}
}

// The numbers the containers reserve are the original's fields that
// originalFields names, with the same names.
func TestReservedFieldsAreNamed(t *testing.T) {
	for _, name := range []protoreflect.FullName{"ligato.configurator.Config", "ligato.vpp.ConfigData", "ligato.linux.ConfigData"} {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		if err != nil {
			t.Fatal(err)
		}
		md := d.(protoreflect.MessageDescriptor)
		var reservedNums, tableNums []int
		var reservedNames, tableNames []string
		for i := range md.ReservedRanges().Len() {
			r := md.ReservedRanges().Get(i)
			for n := r[0]; n < r[1]; n++ {
				reservedNums = append(reservedNums, int(n))
			}
		}
		for i := range md.ReservedNames().Len() {
			reservedNames = append(reservedNames, string(md.ReservedNames().Get(i)))
		}
		for num, f := range originalFields[name] {
			tableNums = append(tableNums, int(num))
			tableNames = append(tableNames, f.name)
		}
		sort.Ints(reservedNums)
		sort.Ints(tableNums)
		sort.Strings(reservedNames)
		sort.Strings(tableNames)
		if !slices.Equal(reservedNums, tableNums) || !slices.Equal(reservedNames, tableNames) {
			t.Errorf("%s reserves %v %v, originalFields names %v %v", name, reservedNums, reservedNames, tableNums, tableNames)
		}
		for num := range originalFields[name] {
			if md.Fields().ByNumber(num) != nil {
				t.Errorf("%s: field %d is both declared and in originalFields", name, num)
			}
		}
	}
}

// The unknown fields of supported models that originalFields names are
// not declared by netagent's messages (else they would not be unknown).
func TestOriginalFieldsOfModelsAreUndeclared(t *testing.T) {
	for name, fields := range originalFields {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		if err != nil {
			if name == "ligato.netalloc.ConfigData" {
				continue // the original's only
			}
			t.Errorf("%s: %v", name, err)
			continue
		}
		for num, f := range fields {
			if fd := d.(protoreflect.MessageDescriptor).Fields().ByNumber(num); fd != nil {
				t.Errorf("%s declares %d (%s), which originalFields names %s", name, num, fd.Name(), f.name)
			}
		}
	}
}

// unknownFieldNames names nested fields by their path.
func TestUnknownFieldNames(t *testing.T) {
	r := newInterface("loop1").ProtoReflect()
	raw := protowire.AppendBytes(protowire.AppendTag(nil, 12, protowire.BytesType), nil)
	raw = append(raw, protowire.AppendBytes(protowire.AppendTag(nil, 12, protowire.BytesType), nil)...)
	raw = protowire.AppendVarint(protowire.AppendTag(raw, 77, protowire.VarintType), 1)
	r.SetUnknown(raw)
	if got, want := unknownFieldNames(r, ""), []string{"rx_modes (12)", "field 77"}; !slices.Equal(got, want) {
		t.Errorf("names %v, want %v", got, want)
	}
}
