package models

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Registry holds a set of models and finds the model of a key, a message or
// a name. It is read-only once built, and safe for concurrent use.
type Registry struct {
	models    []*Model
	byPrefix  map[string]*Model
	byMessage map[protoreflect.FullName]*Model
	byName    map[string]*Model
	// byAlias are the models of each alias of a model name (lowercase;
	// see Lookup), several when the alias is ambiguous.
	byAlias map[string][]*Model
	// maxSegments is the largest number of "/"-separated segments of a key
	// prefix: ModelOfKey tries at most that many prefixes of a key.
	maxSegments int
}

// NewRegistry builds a registry of the given models. Names, key prefixes,
// messages and configuration fields must be unique, and no key prefix may
// start another (a key must match at most one model).
func NewRegistry(models ...*Model) (*Registry, error) {
	r := &Registry{
		byPrefix:  map[string]*Model{},
		byMessage: map[protoreflect.FullName]*Model{},
		byName:    map[string]*Model{},
		byAlias:   map[string][]*Model{},
	}
	config := map[string]*Model{}
	for _, m := range models {
		switch {
		case m.Name == "":
			return nil, fmt.Errorf("model with key prefix %q has no name", m.KeyPrefix)
		case m.singleton && (strings.HasSuffix(m.KeyPrefix, "/") || strings.HasPrefix(m.KeyPrefix, "/")):
			return nil, fmt.Errorf("model %s: the key %q of a model of one value must not start or end with /", m.Name, m.KeyPrefix)
		case !m.singleton && (!strings.HasSuffix(m.KeyPrefix, "/") || strings.HasPrefix(m.KeyPrefix, "/")):
			return nil, fmt.Errorf("model %s: key prefix %q must end with / and not start with one", m.Name, m.KeyPrefix)
		case r.byName[m.Name] != nil:
			return nil, fmt.Errorf("model %s registered twice", m.Name)
		case r.byMessage[m.MessageName()] != nil:
			return nil, fmt.Errorf("models %s and %s both use message %s", r.byMessage[m.MessageName()].Name, m.Name, m.MessageName())
		}
		for _, o := range r.models {
			if strings.HasPrefix(m.KeyPrefix, o.KeyPrefix) || strings.HasPrefix(o.KeyPrefix, m.KeyPrefix) {
				return nil, fmt.Errorf("key prefixes of models %s (%s) and %s (%s) overlap", o.Name, o.KeyPrefix, m.Name, m.KeyPrefix)
			}
		}
		if m.ConfigField != "" {
			path := m.ConfigSection + "." + m.ConfigField
			if o := config[path]; o != nil {
				return nil, fmt.Errorf("models %s and %s both use configuration field %s", o.Name, m.Name, path)
			}
			config[path] = m
		}
		r.models = append(r.models, m)
		r.byPrefix[m.KeyPrefix] = m
		r.byMessage[m.MessageName()] = m
		r.byName[m.Name] = m
		r.maxSegments = max(r.maxSegments, strings.Count(m.KeyPrefix, "/"))
		if m.singleton {
			// Its key is matched whole (ModelOfKey), and the spellings
			// of it that go on with "/" by the prefix with that "/".
			r.byPrefix[m.KeyPrefix+"/"] = m
			r.maxSegments = max(r.maxSegments, strings.Count(m.KeyPrefix, "/")+1)
		}
	}
	for _, m := range r.models {
		for _, alias := range aliasesOf(m) {
			if r.byName[alias] == nil && !slices.Contains(r.byAlias[alias], m) {
				r.byAlias[alias] = append(r.byAlias[alias], m)
			}
		}
	}
	return r, nil
}

// aliasesOf are the other spellings of m's name users type (lowercase):
// its module, when the module has this one model ("linux.interfaces");
// the first segment of its module and its type ("linux.route", as
// "vpp.route"); the package of its message and its type ("vpp.l3.route",
// as "linux.l3.route"); the full name of its message
// ("vpp.interfaces.interface", as "linux.interfaces.interface"). The
// model's name is module.type, as the original agent's, and the type is
// the last segment of its key prefix.
func aliasesOf(m *Model) []string {
	name := strings.ToLower(m.Name)
	prefix := strings.TrimSuffix(m.KeyPrefix, "/")
	typ := strings.ToLower(prefix[strings.LastIndexByte(prefix, '/')+1:])
	module, ok := strings.CutSuffix(name, "."+typ)
	if !ok {
		return nil // a name not of the original's form has no aliases
	}
	area, _, _ := strings.Cut(module, ".")
	msg := m.MessageName()
	var out []string
	for _, a := range []string{module, area + "." + typ, strings.ToLower(string(msg.Parent())) + "." + typ, strings.ToLower(string(msg))} {
		if a != name && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// Lookup returns the model a user means by name: the model of that name
// (the original agent's: module.type, e.g. "vpp.interfaces",
// "linux.interfaces.interface"), else the one model that has name as an
// alias (see aliasesOf: "vpp.interfaces.interface", "linux.interfaces",
// "vpp.l3.route"...). Case does not matter. A name that is neither, or the
// alias of several models ("vpp.l2"), is a *ModelNameError listing the
// candidates.
func (r *Registry) Lookup(name string) (*Model, error) {
	lower := strings.ToLower(name)
	if m := r.byName[lower]; m != nil {
		return m, nil
	}
	switch ms := r.byAlias[lower]; len(ms) {
	case 0:
		return nil, &ModelNameError{Name: name, Candidates: r.Names()}
	case 1:
		return ms[0], nil
	default:
		var names []string
		for _, m := range ms {
			names = append(names, m.Name)
		}
		sort.Strings(names)
		return nil, &ModelNameError{Name: name, Candidates: names, Ambiguous: true}
	}
}

// Aliases returns the aliases Lookup finds m by (those that name m only),
// sorted.
func (r *Registry) Aliases(m *Model) []string {
	var out []string
	for alias, ms := range r.byAlias {
		if len(ms) == 1 && ms[0] == m {
			out = append(out, alias)
		}
	}
	sort.Strings(out)
	return out
}

// Names returns the names of the models, sorted.
func (r *Registry) Names() []string {
	var out []string
	for _, m := range r.Models() {
		out = append(out, m.Name)
	}
	return out
}

// ModelNameError is a name that names no model, or several (Ambiguous).
type ModelNameError struct {
	Name string
	// Candidates are the names of the models an ambiguous name may mean,
	// or of every model for an unknown name; sorted.
	Candidates []string
	Ambiguous  bool
}

func (e *ModelNameError) Error() string {
	if e.Ambiguous {
		return fmt.Sprintf("model name %q is ambiguous: it may be %s", e.Name, strings.Join(e.Candidates, ", "))
	}
	return fmt.Sprintf("unknown model %q (known: %s)", e.Name, strings.Join(e.Candidates, ", "))
}

// Models returns the registered models, sorted by name.
func (r *Registry) Models() []*Model {
	out := append([]*Model(nil), r.models...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ModelOfKey returns the model a model key belongs to, or nil. It costs one
// map lookup per segment of the longest key prefix, whatever the number of
// models.
func (r *Registry) ModelOfKey(key string) *Model {
	end := 0
	for range r.maxSegments {
		i := strings.IndexByte(key[end:], '/')
		if i < 0 {
			// The whole key: the key of a model of one value, or none.
			if m := r.byPrefix[key]; m != nil && m.singleton {
				return m
			}
			return nil
		}
		end += i + 1
		if m := r.byPrefix[key[:end]]; m != nil {
			return m
		}
	}
	return nil
}

// ModelOfMessage returns the model of a value, or nil.
func (r *Registry) ModelOfMessage(v proto.Message) *Model {
	if v == nil {
		return nil
	}
	return r.byMessage[v.ProtoReflect().Descriptor().FullName()]
}

// ModelByName returns the model with exactly that name, or nil; Lookup
// also takes the aliases a user may type.
func (r *Registry) ModelByName(name string) *Model { return r.byName[name] }

// Key returns the model key of a value of any registered model.
func (r *Registry) Key(v proto.Message) (string, error) {
	m := r.ModelOfMessage(v)
	if m == nil {
		return "", unknownMessage(v)
	}
	return m.Key(v)
}

// ParseKey finds the model of a key and splits the key into its parts.
func (r *Registry) ParseKey(key string) (*Model, KeyParts, error) {
	m := r.ModelOfKey(key)
	if m == nil {
		return nil, nil, &KeyError{Key: key, Problem: "matches no model (known prefixes: " + strings.Join(r.prefixes(), ", ") + ")"}
	}
	parts, err := m.ParseKey(key)
	if err != nil {
		return nil, nil, err
	}
	return m, parts, nil
}

func (r *Registry) prefixes() []string {
	var out []string
	for _, m := range r.models {
		out = append(out, m.KeyPrefix)
	}
	sort.Strings(out)
	return out
}

func unknownMessage(v proto.Message) error {
	if v == nil {
		return fmt.Errorf("nil value")
	}
	return fmt.Errorf("no model for message %s", v.ProtoReflect().Descriptor().FullName())
}

// EtcdPrefix is the prefix of every etcd key of an agent.
const EtcdPrefix = "/vnf-agent/"

// DefaultLabel is the microservice label of an agent unless configured.
const DefaultLabel = "vpp1"

// EtcdKey returns the etcd key of a model key for the agent with that
// microservice label: /vnf-agent/<label>/<model key>.
func EtcdKey(label, modelKey string) string {
	return EtcdPrefix + label + "/" + modelKey
}

// EtcdKeyPrefix returns the prefix of the etcd keys of the agent with that
// label: /vnf-agent/<label>/.
func EtcdKeyPrefix(label string) string { return EtcdPrefix + label + "/" }

// ParseEtcdKey splits an etcd key into the agent's label and the model key.
func ParseEtcdKey(etcdKey string) (label, modelKey string, err error) {
	rest, ok := strings.CutPrefix(etcdKey, EtcdPrefix)
	if !ok {
		return "", "", &KeyError{Key: etcdKey, Problem: "etcd key does not start with " + EtcdPrefix}
	}
	label, modelKey, ok = strings.Cut(rest, "/")
	if !ok || label == "" || modelKey == "" || strings.HasPrefix(modelKey, "/") {
		return "", "", &KeyError{Key: etcdKey, Problem: "etcd key is not " + EtcdPrefix + "<label>/<model key>"}
	}
	if err := ValidLabel(label); err != nil {
		return "", "", &KeyError{Key: etcdKey, Problem: err.Error()}
	}
	return label, modelKey, nil
}

// ValidLabel checks a microservice label: a valid name without "/".
func ValidLabel(label string) error {
	if strings.Contains(label, "/") {
		return fmt.Errorf("microservice label %q contains /", label)
	}
	if err := checkName(label); err != nil {
		return fmt.Errorf("microservice label %q: %v", label, err)
	}
	return nil
}
