package api

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
)

// TypedKV is KVWithMetadata with a typed value and metadata.
type TypedKV[V proto.Message, M any] struct {
	Key      string
	Value    V
	Metadata M
	Origin   ValueOrigin
}

// TypedDescriptor is a KVDescriptor whose callbacks take the descriptor's own
// value type V (e.g. *interfaces.Interface) and metadata type M, so that
// descriptor code has no type assertions. KVDescriptor converts it for
// registration. Every field means what the same field of KVDescriptor means.
//
// ValueTypeName defaults to the full proto name of V, which makes values of
// any other type INVALID before a callback sees them.
type TypedDescriptor[V proto.Message, M any] struct {
	Name                 string
	NBKeyPrefix          string
	KeySelector          KeySelector
	ValueTypeName        string
	KeyLabel             func(key string) string
	ValueComparator      func(key string, oldValue, newValue V) bool
	WithMetadata         bool
	MetadataMapFactory   func() MetadataMapRW
	Validate             func(key string, value V) error
	Create               func(ctx context.Context, key string, value V) (metadata M, err error)
	Delete               func(ctx context.Context, key string, value V, metadata M) error
	Update               func(ctx context.Context, key string, oldValue, newValue V, oldMetadata M) (newMetadata M, err error)
	UpdateWithRecreate   func(key string, oldValue, newValue V, metadata M) bool
	Retrieve             func(ctx context.Context, correlate []TypedKV[V, M]) ([]TypedKV[V, M], error)
	Prefetch             func(ctx context.Context)
	IsRetriableFailure   func(err error) bool
	DerivedValues        func(key string, value V) []KeyValuePair
	Dependencies         func(key string, value V) []Dependency
	Unique               func(key string, value V) []UniqueName
	Notes                func(key string, value V) []string
	RetrieveDependencies []string
}

// KVDescriptor returns the untyped descriptor to register.
func (d *TypedDescriptor[V, M]) KVDescriptor() *KVDescriptor {
	var zero V
	typeName := d.ValueTypeName
	if typeName == "" {
		typeName = string(zero.ProtoReflect().Descriptor().FullName())
	}
	kv := &KVDescriptor{
		Name:                 d.Name,
		NBKeyPrefix:          d.NBKeyPrefix,
		KeySelector:          d.KeySelector,
		ValueTypeName:        typeName,
		KeyLabel:             d.KeyLabel,
		WithMetadata:         d.WithMetadata,
		MetadataMapFactory:   d.MetadataMapFactory,
		IsRetriableFailure:   d.IsRetriableFailure,
		RetrieveDependencies: d.RetrieveDependencies,
		Prefetch:             d.Prefetch,
	}
	if f := d.ValueComparator; f != nil {
		kv.ValueComparator = func(key string, oldValue, newValue proto.Message) bool {
			o, ok1 := oldValue.(V)
			n, ok2 := newValue.(V)
			if !ok1 || !ok2 {
				return proto.Equal(oldValue, newValue)
			}
			return f(key, o, n)
		}
	}
	if f := d.Validate; f != nil {
		kv.Validate = func(key string, value proto.Message) error {
			v, err := typedValue[V](d.Name, value)
			if err != nil {
				return NewInvalidValueError(err)
			}
			return f(key, v)
		}
	}
	if f := d.Create; f != nil {
		kv.Create = func(ctx context.Context, key string, value proto.Message) (any, error) {
			v, err := typedValue[V](d.Name, value)
			if err != nil {
				return nil, NonRetriable(err)
			}
			md, err := f(ctx, key, v)
			return md, err
		}
	}
	if f := d.Delete; f != nil {
		kv.Delete = func(ctx context.Context, key string, value proto.Message, metadata any) error {
			v, err := typedValue[V](d.Name, value)
			if err != nil {
				return NonRetriable(err)
			}
			return f(ctx, key, v, typedMetadata[M](metadata))
		}
	}
	if f := d.Update; f != nil {
		kv.Update = func(ctx context.Context, key string, oldValue, newValue proto.Message, oldMetadata any) (any, error) {
			o, err := typedValue[V](d.Name, oldValue)
			if err != nil {
				return oldMetadata, NonRetriable(err)
			}
			n, err := typedValue[V](d.Name, newValue)
			if err != nil {
				return oldMetadata, NonRetriable(err)
			}
			md, err := f(ctx, key, o, n, typedMetadata[M](oldMetadata))
			return md, err
		}
	}
	if f := d.UpdateWithRecreate; f != nil {
		kv.UpdateWithRecreate = func(key string, oldValue, newValue proto.Message, metadata any) bool {
			o, ok1 := oldValue.(V)
			n, ok2 := newValue.(V)
			if !ok1 || !ok2 {
				return true
			}
			return f(key, o, n, typedMetadata[M](metadata))
		}
	}
	if f := d.Retrieve; f != nil {
		kv.Retrieve = func(ctx context.Context, correlate []KVWithMetadata) ([]KVWithMetadata, error) {
			typed := make([]TypedKV[V, M], 0, len(correlate))
			for _, c := range correlate {
				v, ok := c.Value.(V)
				if !ok {
					continue
				}
				typed = append(typed, TypedKV[V, M]{Key: c.Key, Value: v, Metadata: typedMetadata[M](c.Metadata), Origin: c.Origin})
			}
			retrieved, err := f(ctx, typed)
			out := make([]KVWithMetadata, 0, len(retrieved))
			for _, r := range retrieved {
				var md any
				if d.WithMetadata {
					md = r.Metadata
				}
				out = append(out, KVWithMetadata{Key: r.Key, Value: r.Value, Metadata: md, Origin: r.Origin})
			}
			return out, err
		}
	}
	if f := d.DerivedValues; f != nil {
		kv.DerivedValues = func(key string, value proto.Message) []KeyValuePair {
			v, ok := value.(V)
			if !ok {
				return nil
			}
			return f(key, v)
		}
	}
	if f := d.Dependencies; f != nil {
		kv.Dependencies = func(key string, value proto.Message) []Dependency {
			v, ok := value.(V)
			if !ok {
				return nil
			}
			return f(key, v)
		}
	}
	if f := d.Unique; f != nil {
		kv.Unique = func(key string, value proto.Message) []UniqueName {
			v, ok := value.(V)
			if !ok {
				return nil
			}
			return f(key, v)
		}
	}
	if f := d.Notes; f != nil {
		kv.Notes = func(key string, value proto.Message) []string {
			v, ok := value.(V)
			if !ok {
				return nil
			}
			return f(key, v)
		}
	}
	return kv
}

func typedValue[V proto.Message](descriptor string, value proto.Message) (V, error) {
	v, ok := value.(V)
	if !ok {
		var zero V
		return zero, fmt.Errorf("descriptor %s: value of type %T, expected %T", descriptor, value, zero)
	}
	return v, nil
}

func typedMetadata[M any](metadata any) M {
	m, _ := metadata.(M)
	return m
}
