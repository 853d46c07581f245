package etcdsource

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// decoded is an etcd key and value (or delete) read: the KV for the sink,
// the key read (the canonical spelling of the etcd key's model key) and,
// for a value read under a variant of its key (see "Keys written for the
// original agent" in the package documentation), what the variant is.
type decoded struct {
	kv      orchestrator.KV
	read    string
	variant string
}

// variants follows the etcd keys that name a value under a variant of its
// key: which value each names, and which etcd key holds each value that
// such a key names. Only the Run goroutine uses it. Both maps are empty
// while etcd has no such key: the other keys are not followed.
type variants struct {
	byEtcdKey map[string]*variantKey
	// groups: a value's own key -> the etcd keys naming it.
	groups map[string]*group
}

// variantKey is an etcd key that names a value under a variant of its key.
type variantKey struct {
	etcdKey string
	// key is the value's own key, read the key read (the etcd key's model
	// key): the conflict error goes under read.
	key, read string
	value     proto.Message
	variant   string
	// created is the etcd key's create revision: of two variants, the one
	// created first holds the value.
	created int64
	// errShown: the sink has the conflict error under read.
	errShown bool
}

// group is the etcd keys that name one value: canonical tells whether an
// etcd key of the value's own key exists (it holds the value then);
// members are the variant keys, in the order they were created (the first
// holds the value when no own key does).
type group struct {
	canonical bool
	members   []*variantKey
	// has: the sink has the value (from the holder).
	has bool
}

func newVariants() *variants {
	return &variants{byEtcdKey: map[string]*variantKey{}, groups: map[string]*group{}}
}

func (x *variants) empty() bool { return len(x.byEtcdKey) == 0 }

// join adds (or updates) v in the group of its value.
func (x *variants) join(g *group, v *variantKey) {
	x.byEtcdKey[v.etcdKey] = v
	if slices.Contains(g.members, v) {
		return
	}
	i, _ := slices.BinarySearchFunc(g.members, v, byCreation)
	g.members = slices.Insert(g.members, i, v)
}

func byCreation(a, b *variantKey) int {
	return cmp.Or(cmp.Compare(a.created, b.created), cmp.Compare(a.etcdKey, b.etcdKey))
}

// leave takes v out of its group.
func (x *variants) leave(v *variantKey) {
	delete(x.byEtcdKey, v.etcdKey)
	if g := x.groups[v.key]; g != nil {
		g.members = slices.DeleteFunc(g.members, func(m *variantKey) bool { return m == v })
	}
}

// settle returns the events that give the sink the state of the group of
// key: the holder's value under key (own, the KV of an etcd key of the
// value's own key just put, when it holds it), and for each variant key,
// under the key read, nothing when it holds the value and otherwise an
// error naming the holder. Deletes are passed only for keys the sink has,
// and a put is "created" when the sink lacks the key (see batch). A group
// left without variant keys is forgotten.
func (x *variants) settle(key string, own *orchestrator.KV, label string) []event {
	g := x.groups[key]
	if g == nil {
		return nil
	}
	var out []event
	holder := ""
	switch {
	case g.canonical:
		holder = models.EtcdKey(label, key)
		if own != nil {
			out = append(out, event{kv: *own, created: !g.has})
		}
	case len(g.members) > 0:
		h := g.members[0]
		holder = h.etcdKey
		out = append(out, event{kv: orchestrator.KV{Key: key, Value: h.value, Note: variantNote(h.etcdKey, h.variant)}, created: !g.has})
	case g.has:
		out = append(out, event{kv: orchestrator.KV{Key: key}})
	}
	g.has = g.canonical || len(g.members) > 0
	for _, m := range g.members {
		switch {
		case m.etcdKey != holder:
			out = append(out, event{kv: orchestrator.KV{Key: m.read, Err: &models.KeyError{Key: m.etcdKey, Problem: fmt.Sprintf(
				"names the value of %s (%s), which etcd key %q holds: a value's own key wins over the original's forms of it, and of these the first written; delete one of them",
				key, m.variant, holder)}}, created: !m.errShown})
			m.errShown = true
		case m.errShown:
			out = append(out, event{kv: orchestrator.KV{Key: m.read}})
			m.errShown = false
		}
	}
	if len(g.members) == 0 {
		delete(x.groups, key)
	}
	return out
}

// variantNote is the note of a value read under a variant of its key.
func variantNote(etcdKey, variant string) string {
	return fmt.Sprintf("etcd key %q (%s) names this value", etcdKey, variant)
}

// rebuild makes the index of a full read: kvs are the values read under
// their own keys, found those read under variants (created set). It
// returns kvs with the values of the variant keys that hold one and the
// errors of those that do not.
func (s *Source) rebuild(kvs []orchestrator.KV, found []*variantKey) []orchestrator.KV {
	x := newVariants()
	s.vars = x
	if len(found) == 0 {
		return kvs
	}
	slices.SortFunc(found, byCreation)
	for _, v := range found {
		g := x.groups[v.key]
		if g == nil {
			g = &group{}
			x.groups[v.key] = g
		}
		x.join(g, v)
	}
	for _, kv := range kvs {
		if g := x.groups[kv.Key]; g != nil {
			g.canonical = true
		}
	}
	for _, key := range slices.Sorted(maps.Keys(x.groups)) {
		for _, ev := range x.settle(key, nil, s.opts.Label) {
			kvs = append(kvs, ev.kv)
		}
	}
	return kvs
}

// change appends to out the events for the batch of one etcd event of the
// watch: its KV, unless variant keys are involved. createRev and rev are
// the revisions of the etcd key's creation and of the event. The error is
// that of a read of etcd (see canonicalExists): the watch must end.
func (s *Source) change(ctx context.Context, out []event, etcdKey string, d decoded, created bool, createRev, rev int64) ([]event, error) {
	x := s.vars
	if x.empty() && d.variant == "" {
		return append(out, event{kv: d.kv, created: created}), nil
	}
	label := s.opts.Label
	prev := x.byEtcdKey[etcdKey]
	if prev != nil && prev.key != d.kv.Key {
		// It names another value now, or its own, or is gone.
		x.leave(prev)
		out = append(out, x.settle(prev.key, nil, label)...)
	}
	if d.variant != "" {
		if prev == nil {
			// The etcd key held the value of the key read until now (or
			// nothing, if just created): that value is gone.
			if g := x.groups[d.read]; g != nil {
				g.canonical = false
				out = append(out, x.settle(d.read, nil, label)...)
			} else if !created {
				out = append(out, event{kv: orchestrator.KV{Key: d.read}})
			}
		}
		g := x.groups[d.kv.Key]
		if g == nil {
			canonical, err := s.canonicalExists(ctx, d.kv.Key, rev)
			if err != nil {
				return nil, err
			}
			g = &group{canonical: canonical, has: canonical}
			x.groups[d.kv.Key] = g
		}
		v := prev
		if v == nil || v.key != d.kv.Key {
			v = &variantKey{etcdKey: etcdKey, key: d.kv.Key, read: d.read, created: createRev}
			if prev != nil {
				v.errShown = prev.errShown
			}
		}
		v.value, v.variant = d.kv.Value, d.variant
		x.join(g, v)
		return append(out, x.settle(d.kv.Key, nil, label)...), nil
	}
	// A delete, or a value (or an undecodable one) of the key read.
	if g := x.groups[d.read]; g != nil {
		g.canonical = d.kv.Value != nil || d.kv.Err != nil
		var own *orchestrator.KV
		if g.canonical {
			own = &d.kv
		}
		return append(out, x.settle(d.read, own, label)...), nil
	}
	if prev != nil {
		// A variant key no more: the sink has its conflict error, or
		// nothing, under the key read.
		if d.kv.Value != nil || d.kv.Err != nil {
			return append(out, event{kv: d.kv, created: !prev.errShown}), nil
		}
		if prev.errShown {
			out = append(out, event{kv: d.kv})
		}
		return out, nil
	}
	return append(out, event{kv: d.kv, created: created}), nil
}

// canonicalExists tells whether etcd has, at revision rev, an etcd key of
// the value's own key key (in any spelling of it).
func (s *Source) canonicalExists(ctx context.Context, key string, rev int64) (bool, error) {
	keys := []string{key}
	if m := s.opts.Registry.ModelOfKey(key); m != nil {
		if k, err := m.CanonicalKey(key + "/"); err == nil && k == key {
			keys = append(keys, key+"/")
		}
	}
	for _, k := range keys {
		rctx, cancel := context.WithTimeout(clientv3.WithRequireLeader(ctx), s.opts.ReadTimeout)
		resp, err := s.client.Get(rctx, models.EtcdKey(s.opts.Label, k), clientv3.WithRev(rev), clientv3.WithCountOnly())
		cancel()
		if err != nil {
			return false, fmt.Errorf("reading whether %s is in etcd: %w", models.EtcdKey(s.opts.Label, k), err)
		}
		if resp.Count > 0 {
			return true, nil
		}
	}
	return false, nil
}
