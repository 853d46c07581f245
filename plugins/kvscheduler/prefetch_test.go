package kvscheduler_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// prefetchProbe records the Prefetch and Retrieve calls of two descriptors
// (interfaces retrieved before routes; routes prefetch).
type prefetchProbe struct {
	events []string
	ctxs   []context.Context // the contexts Prefetch got
}

func (p *prefetchProbe) register(t *testing.T, e *env, prefetch func(ctx context.Context)) {
	t.Helper()
	iface := e.sb.Descriptor(ifaces())
	ifaceRetrieve := iface.Retrieve
	iface.Retrieve = func(ctx context.Context, c []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
		p.events = append(p.events, "retrieve iface")
		return ifaceRetrieve(ctx, c)
	}
	o := routes()
	o.RetrieveDependencies = []string{"iface"}
	route := e.sb.Descriptor(o)
	routeRetrieve := route.Retrieve
	route.Retrieve = func(ctx context.Context, c []api.KVWithMetadata) ([]api.KVWithMetadata, error) {
		v, ok := api.RefreshMemo(ctx).Load("prefetched")
		if ok {
			p.events = append(p.events, "retrieve route, prefetched "+v.(string))
		} else {
			p.events = append(p.events, "retrieve route")
		}
		return routeRetrieve(ctx, c)
	}
	route.Prefetch = func(ctx context.Context) {
		p.events = append(p.events, "prefetch route")
		p.ctxs = append(p.ctxs, ctx)
		prefetch(ctx)
	}
	for _, d := range []any{iface, route} {
		if err := e.s.RegisterKVDescriptor(d.(*api.KVDescriptor)); err != nil {
			t.Fatal(err)
		}
	}
}

// A full resync calls Prefetch before the first Retrieve, with the memo
// its Retrieve then loads, and ends Prefetch's context when the refresh
// ends; other refreshes (after a failure, an SB-view dump) do not prefetch.
func TestPrefetchBeforeTheRetrievesOfAResync(t *testing.T) {
	e := newEnv(t)
	p := &prefetchProbe{}
	p.register(t, e, func(ctx context.Context) { api.RefreshMemo(ctx).Store("prefetched", "routes") })
	e.mustCommit(context.Background(), set("iface/a", "a"), set("route/r", "dep=iface/a"))
	if len(p.events) != 0 {
		t.Fatalf("a transaction without refresh called %q", p.events)
	}
	if _, err := e.resync(set("iface/a", "a"), set("route/r", "dep=iface/a")); err != nil {
		t.Fatal(err)
	}
	want := []string{"prefetch route", "retrieve iface", "retrieve route, prefetched routes"}
	if !slices.Equal(p.events, want) {
		t.Fatalf("calls of a full resync: %q, want %q", p.events, want)
	}
	if err := p.ctxs[0].Err(); !errors.Is(err, context.Canceled) {
		t.Errorf("Prefetch's context after the resync: %v, want it cancelled", err)
	}
	// The refresh after a failed Create, and an SB-view dump: Retrieves
	// only.
	p.events = nil
	e.sb.Fail("create", "route/s", errors.New("refused"), 1)
	if _, err := e.commit(context.Background(), set("route/s", "dep=iface/a")); err == nil {
		t.Fatal("the failed create: no error")
	}
	if _, err := e.s.DumpValuesByKeyPrefix("", api.SBView); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(p.events, "prefetch route") || len(p.events) == 0 {
		t.Errorf("calls of the refreshes after a failure and of a dump: %q, want Retrieves and no Prefetch", p.events)
	}
	e.expectState("route/r", api.ValueStateConfigured)
}

// A Prefetch that panics costs its prefetch only: the resync goes on, the
// Retrieve reads without it.
func TestPrefetchPanicIsContained(t *testing.T) {
	e := newEnv(t)
	p := &prefetchProbe{}
	p.register(t, e, func(context.Context) { panic("prefetch broke") })
	e.mustCommit(context.Background(), set("iface/a", "a"), set("route/r", "dep=iface/a"))
	if _, err := e.resync(set("iface/a", "a"), set("route/r", "dep=iface/a")); err != nil {
		t.Fatal(err)
	}
	want := []string{"prefetch route", "retrieve iface", "retrieve route"}
	if !slices.Equal(p.events, want) {
		t.Fatalf("calls of a full resync: %q, want %q", p.events, want)
	}
	e.expectState("iface/a", api.ValueStateConfigured)
	e.expectState("route/r", api.ValueStateConfigured)
}
