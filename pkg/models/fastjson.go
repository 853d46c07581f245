package models

import (
	"slices"
	"strconv"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// decodeFast decodes a JSON document into m as protojson.Unmarshal does,
// for the documents and values agentctl, the etcd source and the tests
// send: objects of proto3 messages, their fields by JSON or proto name,
// strings, booleans, 32-bit integers as JSON integers, enums by name,
// nested messages and lists of those. It reports false for anything else
// (null, 64-bit integers, floats, bytes, maps, well-known types, an enum
// by number, a number as a string, a field given twice, two fields of one
// oneof, an unknown field, broken JSON...): m is then in an unspecified
// state, and the caller decodes with protojson (which resets it), which
// also gives the error.
//
// It reads the JSON once, writing the message's binary form, which
// proto.Unmarshal decodes with the generated code's tables: protojson
// sets each field through protoreflect (two allocations a string), 2.8 us
// a route of agentctl's 10,000-route document against about a third of
// that (BenchmarkUnmarshalConfig).
func decodeFast(data []byte, m proto.Message) bool {
	d := fastDecoder{b: data}
	d.ws()
	wire, ok := d.object(m.ProtoReflect().Descriptor(), 0, nil)
	if !ok {
		return false
	}
	d.ws()
	if d.i != len(d.b) {
		return false
	}
	return proto.Unmarshal(wire, m) == nil
}

type fastDecoder struct {
	b       []byte
	i       int
	scratch [][]byte // per depth: a nested message's binary form
}

// maxFastDepth bounds the nesting decodeFast follows (deeper: protojson).
const maxFastDepth = 64

func (d *fastDecoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips white space and tells whether c is next, taking it.
func (d *fastDecoder) next(c byte) bool {
	d.ws()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// fastFields are a message's fields by the names protojson accepts: the
// JSON name first, the proto name when no field has it as JSON name.
type fastFields struct {
	byName map[string]protoreflect.FieldDescriptor
	enums  map[protoreflect.FullName]map[string]protoreflect.EnumNumber
	ok     bool // a proto3 message that is not a well-known type
}

var fastFieldsCache sync.Map // protoreflect.FullName -> *fastFields

func fieldsOf(md protoreflect.MessageDescriptor) *fastFields {
	if f, ok := fastFieldsCache.Load(md.FullName()); ok {
		return f.(*fastFields)
	}
	f := &fastFields{byName: map[string]protoreflect.FieldDescriptor{}, enums: map[protoreflect.FullName]map[string]protoreflect.EnumNumber{}}
	f.ok = md.Syntax() == protoreflect.Proto3 && md.ParentFile().Package() != "google.protobuf"
	fields := md.Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		f.byName[string(fd.Name())] = fd
		if ed := fd.Enum(); ed != nil {
			names := map[string]protoreflect.EnumNumber{}
			for j := range ed.Values().Len() {
				v := ed.Values().Get(j)
				names[string(v.Name())] = v.Number()
			}
			f.enums[ed.FullName()] = names
		}
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		f.byName[fd.JSONName()] = fd
	}
	fastFieldsCache.Store(md.FullName(), f)
	return f
}

// object reads a JSON object of a message of md and appends the message's
// binary form to out.
func (d *fastDecoder) object(md protoreflect.MessageDescriptor, depth int, out []byte) ([]byte, bool) {
	if depth > maxFastDepth || !d.next('{') {
		return nil, false
	}
	fields := fieldsOf(md)
	if !fields.ok {
		return nil, false
	}
	if d.next('}') {
		return out, true
	}
	var seen []protoreflect.FieldNumber
	var oneofs []int
	for {
		d.ws()
		name, ok := d.key()
		if !ok || !d.next(':') {
			return nil, false
		}
		fd := fields.byName[string(name)]
		if fd == nil || fd.IsMap() || fd.IsExtension() || slices.Contains(seen, fd.Number()) {
			return nil, false // unknown, a map, given twice
		}
		seen = append(seen, fd.Number())
		if oo := fd.ContainingOneof(); oo != nil {
			if slices.Contains(oneofs, oo.Index()) {
				return nil, false // a second field of one oneof
			}
			oneofs = append(oneofs, oo.Index())
		}
		d.ws()
		if fd.IsList() {
			if !d.next('[') {
				return nil, false
			}
			if !d.next(']') {
				for {
					d.ws()
					if out, ok = d.value(fields, fd, depth, out); !ok {
						return nil, false
					}
					if d.next(',') {
						continue
					}
					if !d.next(']') {
						return nil, false
					}
					break
				}
			}
		} else if out, ok = d.value(fields, fd, depth, out); !ok {
			return nil, false
		}
		if d.next(',') {
			continue
		}
		if !d.next('}') {
			return nil, false
		}
		return out, true
	}
}

// value reads one value of field fd (an element of a list) and appends it
// with its tag.
func (d *fastDecoder) value(fields *fastFields, fd protoreflect.FieldDescriptor, depth int, out []byte) ([]byte, bool) {
	num := fd.Number()
	switch fd.Kind() {
	case protoreflect.MessageKind:
		for len(d.scratch) <= depth+1 {
			d.scratch = append(d.scratch, nil)
		}
		sub, ok := d.object(fd.Message(), depth+1, d.scratch[depth+1][:0])
		if !ok {
			return nil, false
		}
		out = protowire.AppendTag(out, num, protowire.BytesType)
		out = protowire.AppendBytes(out, sub)
		d.scratch[depth+1] = sub
		return out, true
	case protoreflect.StringKind:
		if d.i >= len(d.b) || d.b[d.i] != '"' {
			return nil, false
		}
		out = protowire.AppendTag(out, num, protowire.BytesType)
		// The length is written after the string: one byte reserved,
		// moved when it takes more.
		at := len(out)
		out, ok := d.str(append(out, 0))
		if !ok {
			return nil, false
		}
		n := len(out) - at - 1
		if size := protowire.SizeVarint(uint64(n)); size > 1 {
			out = append(out, make([]byte, size-1)...)
			copy(out[at+size:], out[at+1:at+1+n])
		}
		protowire.AppendVarint(out[at:at], uint64(n))
		return out, true
	case protoreflect.BoolKind:
		switch {
		case d.literal("true"):
			return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), 1), true
		case d.literal("false"):
			return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), 0), true
		}
	case protoreflect.EnumKind:
		if fd.Enum().FullName() == "google.protobuf.NullValue" {
			return nil, false
		}
		name, ok := d.key()
		if !ok {
			return nil, false
		}
		if n, ok := fields.enums[fd.Enum().FullName()][string(name)]; ok {
			return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), uint64(int64(n))), true
		}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		if s, ok := d.integer(); ok {
			if v, err := strconv.ParseInt(s, 10, 32); err == nil {
				switch fd.Kind() {
				case protoreflect.Sint32Kind:
					return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), protowire.EncodeZigZag(v)), true
				case protoreflect.Sfixed32Kind:
					return protowire.AppendFixed32(protowire.AppendTag(out, num, protowire.Fixed32Type), uint32(int32(v))), true
				}
				return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), uint64(v)), true
			}
		}
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		if s, ok := d.integer(); ok && s[0] != '-' {
			if v, err := strconv.ParseUint(s, 10, 32); err == nil {
				if fd.Kind() == protoreflect.Fixed32Kind {
					return protowire.AppendFixed32(protowire.AppendTag(out, num, protowire.Fixed32Type), uint32(v)), true
				}
				return protowire.AppendVarint(protowire.AppendTag(out, num, protowire.VarintType), v), true
			}
		}
	}
	return nil, false
}

// key reads a JSON string without escapes (a field or enum name) and
// returns its bytes.
func (d *fastDecoder) key() ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			return d.b[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false // names are ASCII; protojson says what is wrong
		}
	}
	return nil, false
}

// literal takes the word w when it comes next, followed by a delimiter.
func (d *fastDecoder) literal(w string) bool {
	end := d.i + len(w)
	if end > len(d.b) || string(d.b[d.i:end]) != w || (end < len(d.b) && !delimiter(d.b[end])) {
		return false
	}
	d.i = end
	return true
}

func delimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ']', '}':
		return true
	}
	return false
}

// integer takes a JSON number that is an integer without fraction or
// exponent (-?(0|[1-9][0-9]*)) and returns its text.
func (d *fastDecoder) integer() (string, bool) {
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.i - digits
	if n == 0 || n > 11 || (n > 1 && d.b[digits] == '0') || (d.i < len(d.b) && !delimiter(d.b[d.i])) {
		return "", false
	}
	return string(d.b[start:d.i]), true
}

// str reads a JSON string and appends its value to out: valid UTF-8,
// escapes decoded as protojson decodes them.
func (d *fastDecoder) str(out []byte) ([]byte, bool) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return nil, false
	}
	d.i++
	begin := len(out)
	ascii := true
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			d.i++
			if !ascii && !utf8.Valid(out[begin:]) {
				return nil, false
			}
			return out, true
		case c < 0x20:
			return nil, false
		case c != '\\':
			if c >= 0x80 {
				ascii = false
			}
			// The run of plain bytes at once.
			j := d.i + 1
			for j < len(d.b) && d.b[j] != '"' && d.b[j] != '\\' && d.b[j] >= 0x20 {
				if d.b[j] >= 0x80 {
					ascii = false
				}
				j++
			}
			out = append(out, d.b[d.i:j]...)
			d.i = j
			continue
		}
		if d.i+1 >= len(d.b) {
			return nil, false
		}
		e := d.b[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return nil, false
			}
			if utf16.IsSurrogate(r) {
				// A pair, or protojson refuses it.
				if d.i+1 >= len(d.b) || d.b[d.i] != '\\' || d.b[d.i+1] != 'u' {
					return nil, false
				}
				d.i += 2
				r2, ok := d.hex4()
				if !ok {
					return nil, false
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return nil, false
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return nil, false
}

func (d *fastDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(d.b[d.i:d.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	d.i += 4
	return rune(v), true
}
