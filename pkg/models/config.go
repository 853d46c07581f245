package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/internal/parallel"
	configpb "github.com/netagent-io/netagent/proto/config"
)

// KV is a configuration item: a model key (without the etcd prefix) and its
// value.
type KV struct {
	Key   string
	Value proto.Message
}

var configDesc = (&configpb.Config{}).ProtoReflect().Descriptor()

// configField finds a field of a message descriptor by its proto name or its
// lowerCamelCase JSON name.
func configField(md protoreflect.MessageDescriptor, name string) protoreflect.FieldDescriptor {
	if fd := md.Fields().ByName(protoreflect.Name(name)); fd != nil {
		return fd
	}
	return md.Fields().ByJSONName(name)
}

func fieldNames(md protoreflect.MessageDescriptor) string {
	var names []string
	for i := range md.Fields().Len() {
		names = append(names, string(md.Fields().Get(i).Name()))
	}
	return strings.Join(names, ", ")
}

// modelOfConfigField returns the model of the values listed under
// section.field of a configuration document.
func (r *Registry) modelOfConfigField(section, field protoreflect.FieldDescriptor) (*Model, error) {
	for _, m := range r.models {
		if m.ConfigSection == string(section.Name()) && m.ConfigField == string(field.Name()) {
			if field.Message() == nil || field.Message().FullName() != m.MessageName() {
				return nil, fmt.Errorf("%s.%s holds %v values, but model %s is of %s", section.Name(), field.Name(), field.Message().FullName(), m.Name, m.MessageName())
			}
			return m, nil
		}
	}
	return nil, fmt.Errorf("%s.%s: no model registered for it", section.Name(), field.Name())
}

// ParseConfig reads a configuration document, YAML or JSON (JSON is YAML),
// grouped by model as in the original agent:
//
//	vpp_config:
//	  interfaces:
//	    - name: loop1
//	      type: SOFTWARE_LOOPBACK
//	linux_config:
//	  routes: [...]
//
// and returns its items, section by section and field by field (in name
// order), each list in its order. Every problem is reported, each
// with its place in the document (vpp_config.interfaces[1]) and the item's
// key when it has one; on any problem no item is returned.
func (r *Registry) ParseConfig(data []byte) ([]KV, error) {
	// Strict: a name given twice in a mapping is an error, not a silent
	// override. A JSON document is read as JSON (several times faster than
	// through the YAML parser, which JSON also is): decodeObject refuses a
	// name twice in the document's and the sections' objects, protojson in
	// an item's.
	js := data
	if !isJSONObject(data) {
		var err error
		if js, err = YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("configuration document: %w", err)
		}
	}
	var top map[string]json.RawMessage
	if err := decodeObject(js, &top); err != nil {
		return nil, fmt.Errorf("configuration document: %w", err)
	}
	var kvs []KV
	var errs []error
	where := map[string]string{}
	sectionSpelling := map[protoreflect.Name]string{}
	for _, sectionName := range sortedKeys(top) {
		section := configField(configDesc, sectionName)
		if section == nil {
			errs = append(errs, fmt.Errorf("%s: unknown section (known: %s)", sectionName, fieldNames(configDesc)))
			continue
		}
		if other, twice := sectionSpelling[section.Name()]; twice {
			errs = append(errs, fmt.Errorf("%s: section given twice (as %s and %s)", section.Name(), other, sectionName))
			continue
		}
		sectionSpelling[section.Name()] = sectionName
		var fields map[string]json.RawMessage
		if err := decodeObject(top[sectionName], &fields); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", section.Name(), err))
			continue
		}
		fieldSpelling := map[protoreflect.Name]string{}
		for _, fieldName := range sortedKeys(fields) {
			field := configField(section.Message(), fieldName)
			if field == nil {
				errs = append(errs, fmt.Errorf("%s.%s: unknown field (known: %s)", section.Name(), fieldName, fieldNames(section.Message())))
				continue
			}
			if other, twice := fieldSpelling[field.Name()]; twice {
				errs = append(errs, fmt.Errorf("%s.%s: field given twice (as %s and %s)", section.Name(), field.Name(), other, fieldName))
				continue
			}
			fieldSpelling[field.Name()] = fieldName
			m, err := r.modelOfConfigField(section, field)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			var items []json.RawMessage
			if !field.IsList() {
				// The field of a model of one value holds that value.
				if !isJSONObject(fields[fieldName]) {
					errs = append(errs, fmt.Errorf("%s.%s: want one %s value (a mapping)", section.Name(), field.Name(), m.Name))
					continue
				}
				items = []json.RawMessage{fields[fieldName]}
			} else if err := json.Unmarshal(fields[fieldName], &items); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: want a list of %s values", section.Name(), field.Name(), m.Name))
				continue
			}
			for k, item := range items {
				place := fmt.Sprintf("%s.%s[%d]", section.Name(), field.Name(), k)
				if !field.IsList() {
					place = fmt.Sprintf("%s.%s", section.Name(), field.Name())
				}
				v := m.New()
				if err := UnmarshalJSON(item, v); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", place, err))
					continue
				}
				key, err := m.Key(v)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", place, err))
					continue
				}
				if first, dup := where[key]; dup {
					errs = append(errs, fmt.Errorf("%s: key %q is already %s", place, key, first))
					continue
				}
				where[key] = place
				kvs = append(kvs, KV{Key: key, Value: v})
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return kvs, nil
}

// isJSONObject tells whether data is a JSON object (and nothing else).
func isJSONObject(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// decodeObject decodes a JSON object, refusing a name given twice; null is
// an empty one.
func decodeObject(data []byte, out *map[string]json.RawMessage) error {
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		*out = nil
		return nil
	}
	notMapping := fmt.Errorf("want a mapping of names to values")
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return notMapping
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return notMapping
		}
		name, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return notMapping
		}
		if _, twice := m[name]; twice {
			return fmt.Errorf("%q given twice", name)
		}
		m[name] = v
	}
	*out = m
	return nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// BuildConfig groups items into a configuration document, each list sorted
// by key. Every item must be of a model with a place in the document.
func (r *Registry) BuildConfig(kvs []KV) (*configpb.Config, error) {
	sorted := append([]KV(nil), kvs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Key < sorted[j].Key })
	c := &configpb.Config{}
	cm := c.ProtoReflect()
	for _, kv := range sorted {
		m := r.ModelOfMessage(kv.Value)
		if m == nil {
			return nil, fmt.Errorf("key %q: %w", kv.Key, unknownMessage(kv.Value))
		}
		section := configDesc.Fields().ByName(protoreflect.Name(m.ConfigSection))
		if section == nil || m.ConfigField == "" {
			return nil, fmt.Errorf("key %q: model %s has no place in a configuration document", kv.Key, m.Name)
		}
		field := section.Message().Fields().ByName(protoreflect.Name(m.ConfigField))
		if _, err := r.modelOfConfigField(section, field); field == nil || err != nil {
			return nil, fmt.Errorf("key %q: model %s has no place in a configuration document", kv.Key, m.Name)
		}
		v := protoreflect.ValueOfMessage(proto.Clone(kv.Value).ProtoReflect())
		sm := cm.Mutable(section).Message()
		if !field.IsList() {
			if sm.Has(field) {
				return nil, fmt.Errorf("key %q: model %s has one value, and the document has it already", kv.Key, m.Name)
			}
			sm.Set(field, v)
			continue
		}
		sm.Mutable(field).List().Append(v)
	}
	return c, nil
}

// ConfigKVs returns the items of a configuration document, in the order
// ParseConfig gives.
// The items are the document's own messages (not copies), checked as
// ParseConfig checks them: each valid for its model's key, no key twice.
func (r *Registry) ConfigKVs(c *configpb.Config) ([]KV, error) {
	cm := c.ProtoReflect()
	items := CountConfigItems(c)
	kvs := make([]KV, 0, items)
	var errs []error
	where := make(map[string]itemPlace, items)
	for _, section := range sortedFields(configDesc) {
		if !cm.Has(section) {
			continue
		}
		sm := cm.Get(section).Message()
		for _, field := range sortedFields(section.Message()) {
			if !sm.Has(field) {
				continue // an empty list, as the JSON form leaves it out
			}
			m, err := r.modelOfConfigField(section, field)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			// A list, or the value of a model of one value.
			n, item := 1, func(int) protoreflect.Message { return sm.Get(field).Message() }
			if field.IsList() {
				list := sm.Get(field).List()
				n, item = list.Len(), func(k int) protoreflect.Message { return list.Get(k).Message() }
			}
			keyed := itemKeys(m, n, item)
			for k, it := range keyed {
				key, v, err := it.key, it.value, it.err
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", itemPlace{section.Name(), field.Name(), k}, err))
					continue
				}
				if first, dup := where[key]; dup {
					errs = append(errs, fmt.Errorf("%s: key %q is already %s", itemPlace{section.Name(), field.Name(), k}, key, first))
					continue
				}
				where[key] = itemPlace{section.Name(), field.Name(), k}
				kvs = append(kvs, KV{Key: key, Value: v})
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return kvs, nil
}

// keyedItem is an item of a list with its key, or why it has none.
type keyedItem struct {
	key   string
	value proto.Message
	err   error
}

// keysPerWorker is how many items of a list a goroutine keys at least
// (parallel.For): m.Key checks the item and builds its key, ~1.5 us a
// route, the same work for each item, independent of the others.
const keysPerWorker = 1024

// itemKeys returns the n items of a list (item(k): the k-th) with their
// keys, in order; a long list on more than one core.
func itemKeys(m *Model, n int, item func(int) protoreflect.Message) []keyedItem {
	out := make([]keyedItem, n)
	parallel.For(n, keysPerWorker, func(k int) {
		vm := item(k)
		v := vm.Interface()
		if !vm.IsValid() {
			v = m.New() // a nil entry is an empty value, as on the wire
		}
		key, err := m.Key(v)
		out[k] = keyedItem{key, v, err}
	})
	return out
}

// CountConfigItems is the number of items of a configuration document: the
// entries of its lists, each one value of ConfigKVs when the document is
// valid. It reads nothing else of the items (cheap for big documents).
func CountConfigItems(c *configpb.Config) int {
	n := 0
	c.ProtoReflect().Range(func(_ protoreflect.FieldDescriptor, sv protoreflect.Value) bool {
		sm, ok := sv.Interface().(protoreflect.Message)
		if !ok {
			return true
		}
		sm.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList():
				n += v.List().Len()
			case fd.Message() != nil:
				n++ // the value of a model of one value
			}
			return true
		})
		return true
	})
	return n
}

// itemPlace is where an item is in a configuration document:
// section.field[index].
type itemPlace struct {
	section, field protoreflect.Name
	index          int
}

// String is section.field[index], section.field for the field of a model
// of one value.
func (p itemPlace) String() string {
	if fd := configDesc.Fields().ByName(p.section); fd != nil {
		if f := fd.Message().Fields().ByName(p.field); f != nil && !f.IsList() {
			return fmt.Sprintf("%s.%s", p.section, p.field)
		}
	}
	return fmt.Sprintf("%s.%s[%d]", p.section, p.field, p.index)
}

// sortedFields returns the fields of md in the order of their proto names.
func sortedFields(md protoreflect.MessageDescriptor) []protoreflect.FieldDescriptor {
	fields := make([]protoreflect.FieldDescriptor, md.Fields().Len())
	for i := range fields {
		fields[i] = md.Fields().Get(i)
	}
	sort.Slice(fields, func(i, j int) bool { return fields[i].Name() < fields[j].Name() })
	return fields
}
