package models

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	configpb "github.com/netagent-io/netagent/proto/config"
)

// fastSame checks the property of decodeFast: what it decodes, protojson
// decodes to an equal message. It reports whether decodeFast decoded it.
func fastSame(t testing.TB, doc []byte) bool {
	t.Helper()
	fast := &configpb.Config{}
	if !decodeFast(doc, fast) {
		return false
	}
	slow := &configpb.Config{}
	if err := protojson.Unmarshal(doc, slow); err != nil {
		t.Errorf("decodeFast took a document protojson refuses (%v):\n%s", err, doc)
		return true
	}
	if !proto.Equal(fast, slow) {
		t.Errorf("document:\n%s\ndecodeFast: %v\nprotojson:  %v", doc, fast, slow)
	}
	return true
}

var fastDecoded = []string{
	`{}`,
	` {"vpp_config": {"interfaces": [{"name": "loop1", "type": "SOFTWARE_LOOPBACK", "enabled": true, "mtu": 9000, "ip_addresses": ["10.0.0.1/24"]}]}} `,
	`{"vppConfig":{"interfaces":[{"name":"tap1","type":"TAP","tap":{"version":2,"hostIfName":"h"}}]}}`,
	`{"linux_config":{"routes":[{"outgoing_interface":"eth0","dst_network":"10.1.0.0/16","gw_addr":"10.0.0.1","metric":10,"scope":"LINK"}]}}`,
	`{"linux_config":{"interfaces":[{"name":"v\"1\\\/\u00e9\ud83d\ude00","type":"VETH","veth":{"peer_if_name":"v2"}}]}}`,
	`{"vpp_config":{"routes":[]},"linux_config":{}}`,
	"{\n\t\"vpp_config\" :\r\n {\"interfaces\" : [ ] } }",
	`{"vpp_config":{"interfaces":[{"name":"é✓","enabled":false,"mtu":0}]}}`,
	// Strings whose length takes two and three bytes, after a short one.
	`{"vpp_config":{"interfaces":[{"name":"` + strings.Repeat("n", 200) + `","ip_addresses":["a","` + strings.Repeat("\\u00e9", 9000) + `"]}]}}`,
}

var fastRefused = []string{
	``,
	`null`,
	`{"vpp_config":null}`,
	`{"vpp_config":{"interfaces":[{"name":"a","mtu":"9000"}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","mtu":9000.0}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","mtu":1e3}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","mtu":-1}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","mtu":4294967296}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","mtu":09}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","type":1}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","type":"NO_SUCH_TYPE"}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","name":"b"}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","ipAddresses":[],"ip_addresses":[]}]}}`,
	`{"vpp_config":{"interfaces":[{"tap":{},"memif":{}}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a","no_such_field":1}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a"}]}} x`,
	`{"vpp_config":{"interfaces":[{"name":"a",}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a"},]}}`,
	`{"vpp_config":{"interfaces":[{"name":"\xff"}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"\ud83d"}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"a` + "\n" + `"}]}}`,
	`{"vpp_config":{"interfaces":[{"name":"\x"}]}}`,
	`{"vpp_config":{"interfaces":[{"enabled":True}]}}`,
	`{"vpp_config":{"interfaces":[{"enabled":truex}]}}`,
	`{"vpp_config":{"interfaces":{}}}`,
	`{"vpp_config":{"interfaces":[{"name":"a"}]}`,
	`[]`,
}

func TestDecodeFastAsProtojson(t *testing.T) {
	for _, doc := range fastDecoded {
		if !fastSame(t, []byte(doc)) {
			t.Errorf("not decoded:\n%s (protojson: %v)", doc, protojson.Unmarshal([]byte(doc), &configpb.Config{}))
		}
	}
	for _, doc := range fastRefused {
		if decodeFast([]byte(doc), &configpb.Config{}) {
			t.Errorf("decoded, but protojson's to read:\n%s", doc)
		}
	}
}

// TestDecodeFastGenerated: random configurations (every model, every
// field of theirs, oneofs, lists, odd strings) marshalled by protojson in
// both name styles, with and without indentation, then sometimes broken:
// decodeFast agrees with protojson on all it decodes, and decodes most of
// the intact documents without the fields it leaves to protojson.
func TestDecodeFastGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	n, decoded, plain := 2000, 0, 0
	if testing.Short() {
		n = 300
	}
	for range n {
		simple := r.IntN(2) == 0
		c := &configpb.Config{}
		fillRandom(r, c.ProtoReflect(), 0, simple)
		opts := protojson.MarshalOptions{UseProtoNames: r.IntN(2) == 0}
		if r.IntN(2) == 0 {
			opts.Multiline, opts.Indent = true, "  "
		}
		doc, err := opts.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		if r.IntN(4) == 0 {
			doc = breakJSON(r, doc)
		}
		if fastSame(t, doc) {
			decoded++
		} else if simple && proto.Equal(mustUnmarshal(doc), c) {
			t.Errorf("an intact document of the fields decodeFast reads was left to protojson:\n%s", doc)
		}
		if simple {
			plain++
		}
	}
	if decoded < plain/2 {
		t.Errorf("decoded %d of %d documents (%d without the fields left to protojson)", decoded, n, plain)
	}
	t.Logf("decoded %d of %d", decoded, n)
}

func mustUnmarshal(doc []byte) *configpb.Config {
	c := &configpb.Config{}
	if protojson.Unmarshal(doc, c) != nil {
		return nil
	}
	return c
}

var oddStrings = []string{"", "a", "eth0", "10.0.0.1/24", "é", "✓ x", "\"q\"", "back\\slash", "tab\t", "nl\n", "\x00", "\u2028", "😀", "</script>&"}

// fillRandom sets random values in m's fields (simple: only the kinds
// decodeFast reads).
func fillRandom(r *rand.Rand, m protoreflect.Message, depth int, simple bool) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if r.IntN(3) == 0 || (fd.ContainingOneof() != nil && m.WhichOneof(fd.ContainingOneof()) != nil) {
			continue
		}
		if simple && !fastKind(fd) {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range r.IntN(3) {
				k, ok := randomScalar(r, fd.MapKey())
				v, vok := randomScalar(r, fd.MapValue())
				if ok && vok {
					mp.Set(k.MapKey(), v)
				}
			}
		case fd.IsList():
			list := m.Mutable(fd).List()
			for range r.IntN(4) {
				if fd.Kind() == protoreflect.MessageKind {
					if depth > 3 {
						break
					}
					e := list.NewElement()
					fillRandom(r, e.Message(), depth+1, simple)
					list.Append(e)
				} else if v, ok := randomScalar(r, fd); ok {
					list.Append(v)
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth <= 3 {
				fillRandom(r, m.Mutable(fd).Message(), depth+1, simple)
			}
		default:
			if v, ok := randomScalar(r, fd); ok {
				m.Set(fd, v)
			}
		}
	}
}

// fastKind tells whether decodeFast reads a field of fd's kind.
func fastKind(fd protoreflect.FieldDescriptor) bool {
	if fd.IsMap() {
		return false
	}
	switch fd.Kind() {
	case protoreflect.StringKind, protoreflect.BoolKind, protoreflect.EnumKind, protoreflect.Int32Kind,
		protoreflect.Sint32Kind, protoreflect.Sfixed32Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return true
	case protoreflect.MessageKind:
		return fd.Message().ParentFile().Package() != "google.protobuf"
	}
	return false
}

func randomScalar(r *rand.Rand, fd protoreflect.FieldDescriptor) (protoreflect.Value, bool) {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(oddStrings[r.IntN(len(oddStrings))]), true
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0), true
	case protoreflect.EnumKind:
		vals := fd.Enum().Values()
		return protoreflect.ValueOfEnum(vals.Get(r.IntN(vals.Len())).Number()), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32([]int32{0, 1, -1, 2147483647, -2147483648, 77}[r.IntN(6)]), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32([]uint32{0, 1, 4294967295, 9000}[r.IntN(4)]), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(r.Int64()), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(r.Uint64()), true
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(r.Float32()), true
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(r.Float64()), true
	case protoreflect.BytesKind:
		return protoreflect.ValueOfBytes([]byte{1, 2, 3}), true
	}
	return protoreflect.Value{}, false
}

// breakJSON changes a document a little: a character inserted, dropped
// or replaced with one JSON gives a meaning.
func breakJSON(r *rand.Rand, doc []byte) []byte {
	const specials = `{}[],:" \-0123456789.eE`
	if len(doc) == 0 {
		return doc
	}
	s := string(doc)
	i := r.IntN(len(s))
	c := string(specials[r.IntN(len(specials))])
	switch r.IntN(3) {
	case 0:
		s = s[:i] + c + s[i:]
	case 1:
		s = s[:i] + s[i+1:]
	default:
		s = s[:i] + c + s[i+1:]
	}
	return []byte(s)
}

func FuzzDecodeFast(f *testing.F) {
	for _, doc := range append(append([]string{}, fastDecoded...), fastRefused...) {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		fastSame(t, doc)
	})
}

// BenchmarkUnmarshalConfig: agentctl's 10,000-route document (VPP routes,
// JSON) through decodeFast and through protojson.
func BenchmarkUnmarshalConfig(b *testing.B) {
	var doc strings.Builder
	doc.WriteString(`{"vpp_config":{"routes":[`)
	for j := range 10000 {
		if j > 0 {
			doc.WriteString(",")
		}
		fmt.Fprintf(&doc, `{"dst_network":"20.%d.%d.0/24","next_hop_addr":"10.90.0.2","outgoing_interface":"bench-lp"}`, j>>8, j&255)
	}
	doc.WriteString("]}}")
	data := []byte(doc.String())
	b.Run("decodeFast", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if !decodeFast(data, &configpb.Config{}) {
				b.Fatal("not decoded")
			}
		}
	})
	b.Run("protojson", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if err := protojson.Unmarshal(data, &configpb.Config{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
