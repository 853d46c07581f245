package models

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/netagent-io/netagent/internal/yamljson"
)

var (
	marshalJSON   = protojson.MarshalOptions{UseProtoNames: true}
	unmarshalJSON = protojson.UnmarshalOptions{}
)

// MarshalJSON encodes a value as etcd holds it: protojson with the proto
// field names (snake_case), enums by name, default values left out, on one
// line with no spaces. The output is stable (protojson's own is not: it
// varies its spacing on purpose).
func MarshalJSON(v proto.Message) ([]byte, error) {
	raw, err := marshalJSON.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// UnmarshalJSON decodes a JSON value into v. Field names may be the proto
// names (snake_case) or their lowerCamelCase JSON names; enums are given by
// name (or number). Unknown fields and enum names are errors.
func UnmarshalJSON(data []byte, v proto.Message) error {
	if decodeFast(data, v) {
		return nil
	}
	return unmarshalJSON.Unmarshal(data, v) // resets v
}

// YAMLToJSON converts a YAML document to JSON as sigs.k8s.io/yaml's
// YAMLToJSONStrict does (a key given twice is an error): in one pass when
// the document is of the subset internal/yamljson reads (block and
// one-line flow collections, plain and one-line quoted scalars: what
// people and generators write), else with the YAML library, whose error
// names what is wrong with a broken document.
func YAMLToJSON(data []byte) ([]byte, error) {
	if js, ok := yamljson.Convert(data); ok {
		return js, nil
	}
	return yaml.YAMLToJSONStrict(data)
}

// UnmarshalYAML decodes a YAML document (with the same field names as JSON)
// into v.
func UnmarshalYAML(data []byte, v proto.Message) error {
	js, err := YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("YAML: %w", err)
	}
	return UnmarshalJSON(js, v)
}

// MarshalYAML encodes a value as YAML with the proto field names.
func MarshalYAML(v proto.Message) ([]byte, error) {
	js, err := MarshalJSON(v)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(js)
}

// DecodeError is a value that could not be decoded or does not fit its key.
type DecodeError struct {
	// Key is the model key (or etcd key) of the value.
	Key string
	Err error
}

func (e *DecodeError) Error() string { return fmt.Sprintf("value of key %q: %v", e.Key, e.Err) }
func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeValue decodes the JSON value of a model key: it finds the model of
// the key, decodes the value, checks its fields and that the key is the
// value's own. Every error names the key; a *KeyError says the key itself
// is wrong, a *ValidationError lists invalid fields.
func (r *Registry) DecodeValue(key string, data []byte) (*Model, proto.Message, error) {
	m, _, err := r.ParseKey(key)
	if err != nil {
		return nil, nil, err
	}
	v := m.New()
	if err := UnmarshalJSON(data, v); err != nil {
		return m, nil, &DecodeError{Key: key, Err: fmt.Errorf("not a valid %s JSON value: %w", m.MessageName(), err)}
	}
	if err := m.checkParsedKey(key, v); err != nil {
		return m, nil, err
	}
	return m, v, nil
}

// Resolved is a value read under a key that is its own or a variant of it
// (Registry.DecodeVariant).
type Resolved struct {
	Model *Model
	Value proto.Message
	// Key is the value's own key, in its canonical spelling.
	Key string
	// Variant is empty when the key read was (a spelling of) Key, and
	// otherwise says which variant it was (Model.ResolveKey).
	Variant string
}

// DecodeVariant is DecodeValue for keys written for the original agent: a
// key that is an unambiguous variant of the value's own key (see
// Model.ResolveKey) is accepted, and the result says under which key the
// value belongs. The errors are those of DecodeValue, but for a name that
// differs from the key's, which says that it is ambiguous.
func (r *Registry) DecodeVariant(key string, data []byte) (Resolved, error) {
	m, _, err := r.ParseKey(key)
	if err != nil {
		return Resolved{}, err
	}
	v := m.New()
	if err := UnmarshalJSON(data, v); err != nil {
		return Resolved{Model: m}, &DecodeError{Key: key, Err: fmt.Errorf("not a valid %s JSON value: %w", m.MessageName(), err)}
	}
	own, variant, err := m.ResolveKey(key, v)
	if err != nil {
		return Resolved{Model: m}, err
	}
	return Resolved{Model: m, Value: v, Key: own, Variant: variant}, nil
}

// EncodeValue returns the model key and the JSON of a value of a registered
// model, after checking its fields.
func (r *Registry) EncodeValue(v proto.Message) (string, []byte, error) {
	m := r.ModelOfMessage(v)
	if m == nil {
		return "", nil, unknownMessage(v)
	}
	key, err := m.Key(v)
	if err != nil {
		return "", nil, err
	}
	data, err := MarshalJSON(v)
	if err != nil {
		return "", nil, fmt.Errorf("key %q: %w", key, err)
	}
	return key, data, nil
}
