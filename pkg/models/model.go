package models

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// KeyParts are the parts of a model key, by the proto field name of the
// value field each part comes from ("name", "vrf_id", "dst_network", ...).
// Optional parts that a key leaves out are absent.
type KeyParts map[string]string

// Model describes one kind of configuration item: its message, its key and
// where it sits in a configuration document.
type Model struct {
	// Name identifies the model in the CLI, the REST API and the original
	// agent's gRPC services: the original's model name, module.type of the
	// key ("vpp.interfaces": module vpp, type interfaces;
	// "linux.interfaces.interface": module linux.interfaces, type
	// interface). Registry.Lookup also takes the aliases users type for
	// it.
	Name string
	// KeyPrefix starts every key of the model, e.g.
	// "config/vpp/v2/interfaces/". It ends with "/", except for a model of
	// one value (Singleton), whose one key it is.
	KeyPrefix string
	// KeyTemplate documents the key, e.g. "config/vpp/v2/interfaces/<name>".
	KeyTemplate string
	// ConfigSection and ConfigField place the model's values in a
	// configuration document: "vpp_config" and "interfaces".
	ConfigSection, ConfigField string

	prototype proto.Message
	// keySuffix builds the part of the key after KeyPrefix from a value
	// whose fields are valid.
	keySuffix func(proto.Message) (string, error)
	// parseSuffix parses the part of a key after KeyPrefix.
	parseSuffix func(string) (KeyParts, error)
	// validate checks the fields of a value; every problem is listed.
	validate func(proto.Message, *fieldErrors)
	// validateAppend, when set, is validate followed, for a valid value,
	// by appending keySuffix to b (returning b unchanged for an invalid
	// one), with
	// one parse of the fields both need: what Key and CheckKey do for
	// every value of a bulk change of routes.
	validateAppend func(b []byte, v proto.Message, errs *fieldErrors) []byte
	// canonicalSuffix, when set, maps an accepted spelling of a key suffix
	// to the canonical one.
	canonicalSuffix func(string) string
	// omittable are the key parts that the original agent's keys of the
	// model may lack while the value sets them (ResolveKey).
	omittable []omittablePart
	// singleton: the model has one value, under the key KeyPrefix (which
	// does not end with "/"); its keySuffix is "", and parseSuffix
	// accepts "" and the other spellings canonicalSuffix maps to "".
	singleton bool
}

// Singleton tells whether the model has one value, under one key
// (KeyPrefix), as the original agent's models without a name: the NAT44
// global settings. In a configuration document its field holds a value,
// not a list.
func (m *Model) Singleton() bool { return m.singleton }

// omittablePart is an optional key part that keys written for the original
// agent may leave out although the value has it: the original kept a value
// under whatever key it was written and configured what the value says, and
// its older key templates lacked the part.
type omittablePart struct {
	// name is the key part ("outgoing_interface").
	name string
	// segment is how the part shows in a key ("if/<outgoing_interface>/"),
	// for the notes and messages.
	segment string
}

// MessageName is the full proto name of the model's message.
func (m *Model) MessageName() protoreflect.FullName {
	return m.prototype.ProtoReflect().Descriptor().FullName()
}

// New returns an empty value of the model.
func (m *Model) New() proto.Message {
	return m.prototype.ProtoReflect().New().Interface()
}

// Key returns the model key of a value (without the etcd prefix). The value
// must be of the model's message and have valid key fields.
func (m *Model) Key(v proto.Message) (string, error) {
	if err := m.checkType(v); err != nil {
		return "", err
	}
	if m.validateAppend != nil {
		sc := scratchPool.Get().(*keyScratch)
		defer sc.put()
		key := m.validateAppend(append(sc.buf[:0], m.KeyPrefix...), v, &sc.errs)
		if err := sc.errs.err(m, ""); err != nil {
			return "", err
		}
		return string(key), nil
	}
	var errs fieldErrors
	m.validate(v, &errs)
	if err := errs.err(m, ""); err != nil {
		return "", err
	}
	suffix, err := m.keySuffix(v)
	if err != nil {
		return "", err
	}
	return m.KeyPrefix + suffix, nil
}

// ParseKey splits a key of the model into its parts. The key must be in the
// form Key produces (canonical addresses, masked prefixes), so that one item
// has one key.
func (m *Model) ParseKey(key string) (KeyParts, error) {
	suffix, ok := strings.CutPrefix(key, m.KeyPrefix)
	if !ok {
		return nil, &KeyError{Key: key, Problem: fmt.Sprintf("not a key of model %s (%s)", m.Name, m.KeyTemplate)}
	}
	parts, err := m.parseSuffix(suffix)
	if err != nil {
		return nil, &KeyError{Key: key, Problem: fmt.Sprintf("%v (model %s: %s)", err, m.Name, m.KeyTemplate)}
	}
	return parts, nil
}

// CanonicalKey returns the canonical spelling of a key of the model (the one
// Key builds). The only other spelling accepted is the original agent's key
// of a route without a next hop, which ends with "/".
func (m *Model) CanonicalKey(key string) (string, error) {
	if _, err := m.ParseKey(key); err != nil {
		return "", err
	}
	return m.canonical(key), nil
}

// canonical maps a key that parses to its canonical spelling.
func (m *Model) canonical(key string) string {
	if m.canonicalSuffix == nil {
		return key
	}
	return m.KeyPrefix + m.canonicalSuffix(key[len(m.KeyPrefix):])
}

// Validate checks the fields of a value: names, addresses, ranges and the
// static rules of the model. The error lists every invalid field.
func (m *Model) Validate(v proto.Message) error {
	if err := m.checkType(v); err != nil {
		return err
	}
	var errs fieldErrors
	m.validate(v, &errs)
	return errs.err(m, "")
}

// CheckKey tells whether key is the key of value v: v must be valid (as
// Validate checks it: callers need not call both) and key must be (a
// spelling of) the key Key(v) returns. Problems of the value's fields are
// reported first; the error says which part disagrees.
func (m *Model) CheckKey(key string, v proto.Message) error {
	if err := m.checkType(v); err != nil {
		return &KeyError{Key: key, Problem: err.Error()}
	}
	if ok, err := m.validateKeyOf(key, v); ok || err != nil {
		return err
	}
	if _, err := m.ParseKey(key); err != nil {
		return err
	}
	return m.checkKeyOf(key, v)
}

// checkParsedKey is CheckKey for a key that parses and a value of the model.
func (m *Model) checkParsedKey(key string, v proto.Message) error {
	if ok, err := m.validateKeyOf(key, v); ok || err != nil {
		return err
	}
	return m.checkKeyOf(key, v)
}

// keyScratch is what Key and CheckKey build a key in (validateAppend): a
// buffer and the field errors, pooled, as a function value's arguments
// escape to the heap.
type keyScratch struct {
	buf  [160]byte
	errs fieldErrors
}

var scratchPool = sync.Pool{New: func() any { return new(keyScratch) }}

// put returns sc to the pool; field errors go with the error that holds
// them.
func (sc *keyScratch) put() {
	if len(sc.errs) > 0 {
		sc.errs = nil
	}
	scratchPool.Put(sc)
}

// validateKeyOf validates v (its fields' error, if any) and tells whether
// key is its key, spelled as Key spells it.
func (m *Model) validateKeyOf(key string, v proto.Message) (bool, error) {
	if m.validateAppend != nil {
		sc := scratchPool.Get().(*keyScratch)
		defer sc.put()
		own := m.validateAppend(append(sc.buf[:0], m.KeyPrefix...), v, &sc.errs)
		if err := sc.errs.err(m, key); err != nil {
			return false, err
		}
		return key == string(own), nil
	}
	var errs fieldErrors
	m.validate(v, &errs)
	if err := errs.err(m, key); err != nil {
		return false, err
	}
	return m.isKeyOf(key, v), nil
}

// isKeyOf tells whether key is exactly the key Key gives the valid value v
// (a key that parses and is canonical: FuzzKeyOfValue): the usual case,
// decided without parsing key. Another spelling of it is for checkKeyOf.
func (m *Model) isKeyOf(key string, v proto.Message) bool {
	suffix, err := m.keySuffix(v)
	return err == nil && len(key) == len(m.KeyPrefix)+len(suffix) &&
		strings.HasPrefix(key, m.KeyPrefix) && key[len(m.KeyPrefix):] == suffix
}

// checkKeyOf tells whether key is (a spelling of) the key of the valid
// value v.
func (m *Model) checkKeyOf(key string, v proto.Message) error {
	suffix, err := m.keySuffix(v)
	if err != nil {
		return &KeyError{Key: key, Problem: err.Error()}
	}
	if want := m.KeyPrefix + suffix; want != m.canonical(key) {
		return &KeyError{Key: key, Problem: fmt.Sprintf("the value belongs under %s: %s", want, m.disagreement(key, want))}
	}
	return nil
}

// ResolveKey tells under which key a value read under key is kept: the
// key of the value (Key), in its canonical spelling, when key is a spelling
// of it or a variant of it whose meaning is unambiguous. variant is empty
// for a spelling of the value's own key, and otherwise says which variant
// key is ("the original agent's form, without if/<outgoing_interface>/"),
// for a note in the value's status. The variants accepted are the keys the
// original agent (Ligato vpp-agent v3) accepted and that name one item
// only:
//
//   - a key that lacks an optional part the value sets, every other part
//     equal: the VPP route key without "if/<outgoing_interface>/" (the
//     original's older template) for a route with an outgoing interface.
//
// Everything else is refused: a *ValidationError when the value's fields
// are invalid (a value without a name is refused so, whatever its key
// names: the original refused it too, "defined without logical name"), and
// otherwise a *KeyError saying why:
//
//   - a key that names another item than a name-keyed value (an interface
//     or bridge domain under .../loop1 whose name is loop2): the original
//     kept the value under the key but configured it by the value's name,
//     so which item is meant is ambiguous; the error names both;
//   - a key with a part the value lacks (a route key with
//     "if/<outgoing_interface>/" for a route without one), or a part that
//     differs (VRF, destination, next hop, interface, address): the error
//     names the key the value belongs under and the parts that differ;
//   - a key that does not parse (ParseKey's error).
//
// The value's own key costs what CheckKey costs; only a mismatch parses
// the keys.
func (m *Model) ResolveKey(key string, v proto.Message) (own, variant string, err error) {
	if err := m.checkType(v); err != nil {
		return "", "", &KeyError{Key: key, Problem: err.Error()}
	}
	if ok, err := m.validateKeyOf(key, v); ok || err != nil {
		if err != nil {
			return "", "", err
		}
		return key, "", nil
	}
	got, err := m.ParseKey(key)
	if err != nil {
		return "", "", err
	}
	suffix, err := m.keySuffix(v)
	if err != nil {
		return "", "", &KeyError{Key: key, Problem: err.Error()}
	}
	own = m.KeyPrefix + suffix
	if own == m.canonical(key) {
		return own, "", nil
	}
	want, err := m.ParseKey(own)
	if err != nil {
		return "", "", &KeyError{Key: key, Problem: err.Error()}
	}
	if variant := m.omittedParts(got, want); variant != "" {
		return own, variant, nil
	}
	if name, ok := got["name"]; ok && len(got) == 1 && len(want) == 1 {
		return "", "", &KeyError{Key: key, Problem: fmt.Sprintf(
			"the key names %q but the value is %q: ambiguous (the original agent kept such a value under its key and configured it as named in the value); write it under %s, or name it %q",
			name, want["name"], own, name)}
	}
	return "", "", &KeyError{Key: key, Problem: fmt.Sprintf("the value belongs under %s: %s", own, m.disagreement(key, own))}
}

// omittedParts says how key parts got differ from the value's parts want
// when they differ only by omittable parts left out of the key ("the
// original agent's form, without if/<outgoing_interface>/"), or "".
func (m *Model) omittedParts(got, want KeyParts) string {
	if len(m.omittable) == 0 {
		return ""
	}
	for name, g := range got {
		if w, ok := want[name]; !ok || w != g {
			return ""
		}
	}
	var left []string
	for name := range want {
		if _, ok := got[name]; ok {
			continue
		}
		i := slices.IndexFunc(m.omittable, func(p omittablePart) bool { return p.name == name })
		if i < 0 {
			return ""
		}
		left = append(left, m.omittable[i].segment)
	}
	if len(left) == 0 {
		return ""
	}
	sort.Strings(left)
	return "the original agent's form, without " + strings.Join(left, " and ")
}

// disagreement names the key parts that differ between two keys of the model.
func (m *Model) disagreement(key, want string) string {
	got, err1 := m.ParseKey(key)
	exp, err2 := m.ParseKey(want)
	if err1 != nil || err2 != nil {
		return "the keys differ"
	}
	var diffs []string
	for _, name := range sortedNames(got, exp) {
		g, gok := got[name]
		e, eok := exp[name]
		switch {
		case gok && !eok:
			diffs = append(diffs, fmt.Sprintf("the key has %s %q, the value none", name, g))
		case !gok && eok:
			diffs = append(diffs, fmt.Sprintf("the value has %s %q, the key none", name, e))
		case g != e:
			diffs = append(diffs, fmt.Sprintf("%s is %q in the key but %q in the value", name, g, e))
		}
	}
	if len(diffs) == 0 {
		return "the keys differ"
	}
	return strings.Join(diffs, "; ")
}

func sortedNames(a, b KeyParts) []string {
	seen := map[string]bool{}
	var names []string
	for _, p := range []KeyParts{a, b} {
		for k := range p {
			if !seen[k] {
				seen[k] = true
				names = append(names, k)
			}
		}
	}
	sort.Strings(names)
	return names
}

func (m *Model) checkType(v proto.Message) error {
	if v == nil {
		return fmt.Errorf("model %s: nil value", m.Name)
	}
	if got := v.ProtoReflect().Descriptor().FullName(); got != m.MessageName() {
		return fmt.Errorf("model %s: value is a %s, want a %s", m.Name, got, m.MessageName())
	}
	return nil
}

// KeyError is a key that is malformed or matches no model, or disagrees with
// its value.
type KeyError struct {
	Key     string
	Problem string
}

func (e *KeyError) Error() string { return fmt.Sprintf("key %q: %s", e.Key, e.Problem) }
