package ligato

import (
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
)

// wanted reports whether a client that asked with filters gets n: every
// notification without filters, otherwise one that matches at least one
// of them.
func wanted(n *ligatocfg.Notification, filters []*ligatocfg.Notification) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if matches(n.ProtoReflect(), f.ProtoReflect()) {
			return true
		}
	}
	return false
}

// matches reports whether notification n matches filter f, a notification
// by example, as the original agent decides: it merges the filter into a
// copy of the notification and keeps the notification when the copy
// equals it, scalars at their default value and messages without fields
// counting as unset. Field by field of those the filter sets (for proto3
// scalars: to a value other than their default, so an enum's 0 filters
// nothing):
//   - a scalar must have the filter's value in n;
//   - a message n has must match recursively; a message n lacks matches
//     only when the filter's is empty (no field set), and when it is a
//     member of a oneof of which n has another member, that member must
//     be empty too (a linux_notification filter matches no VPP
//     notification);
//   - a list or a map never matches: the merge would append to n's (the
//     notification messages have none; a test checks);
//   - a field netagent does not know (the original's InterfaceState
//     statistics) matches only when empty: n never has it.
//
// An empty filter (no field set) therefore matches every notification, as
// in the original.
func matches(n, f protoreflect.Message) bool {
	if !unknownEmpty(f.GetUnknown()) {
		return false
	}
	ok := true
	f.Range(func(fd protoreflect.FieldDescriptor, fv protoreflect.Value) bool {
		ok = fieldMatches(n, fd, fv)
		return ok
	})
	return ok
}

func fieldMatches(n protoreflect.Message, fd protoreflect.FieldDescriptor, fv protoreflect.Value) bool {
	if fd.IsList() || fd.IsMap() {
		return false
	}
	if od := fd.ContainingOneof(); od != nil {
		if other := n.WhichOneof(od); other != nil && other != fd && !isEmptyValue(other, n.Get(other)) {
			return false
		}
	}
	if fd.Message() == nil {
		return n.Get(fd).Equal(fv)
	}
	if !n.Has(fd) {
		return isEmptyValue(fd, fv)
	}
	return matches(n.Get(fd).Message(), fv.Message())
}

// isEmptyValue reports whether a field's value counts as unset in the
// original's comparison: a message without fields, a scalar at its
// default.
func isEmptyValue(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
	if fd.Message() != nil {
		m := v.Message()
		empty := len(m.GetUnknown()) == 0
		m.Range(func(protoreflect.FieldDescriptor, protoreflect.Value) bool {
			empty = false
			return false
		})
		return empty
	}
	return v.Equal(fd.Default())
}

// unknownEmpty reports whether the unknown fields of a filter are all
// empty: length-delimited without contents (an empty message of a field
// the original declares and netagent does not).
func unknownEmpty(raw protoreflect.RawFields) bool {
	empty := true
	eachField(raw, func(_ protowire.Number, typ protowire.Type, val []byte) {
		if typ != protowire.BytesType || len(val) > 0 {
			empty = false
		}
	})
	return empty
}
