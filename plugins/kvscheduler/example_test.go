package kvscheduler_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// A route waits for its interface: committed first, it is PENDING; the
// transaction that creates the interface creates the route right after it.
func Example() {
	s := kvscheduler.New(kvscheduler.Options{Logger: slog.New(slog.DiscardHandler)})
	defer s.Close()

	iface := &api.TypedDescriptor[*wrapperspb.StringValue, any]{
		Name:        "iface",
		NBKeyPrefix: "iface/",
		KeySelector: func(key string) bool { return strings.HasPrefix(key, "iface/") },
		Create: func(_ context.Context, key string, v *wrapperspb.StringValue) (any, error) {
			fmt.Println("create", key)
			return nil, nil
		},
		Delete: func(_ context.Context, key string, v *wrapperspb.StringValue, _ any) error {
			fmt.Println("delete", key)
			return nil
		},
	}
	route := &api.TypedDescriptor[*wrapperspb.StringValue, any]{
		Name:        "route",
		NBKeyPrefix: "route/",
		KeySelector: func(key string) bool { return strings.HasPrefix(key, "route/") },
		Create: func(_ context.Context, key string, v *wrapperspb.StringValue) (any, error) {
			fmt.Println("create", key, "via", v.GetValue())
			return nil, nil
		},
		Delete: func(_ context.Context, key string, v *wrapperspb.StringValue, _ any) error {
			fmt.Println("delete", key)
			return nil
		},
		Dependencies: func(key string, v *wrapperspb.StringValue) []api.Dependency {
			return []api.Dependency{{Label: "interface", Key: "iface/" + v.GetValue()}}
		},
	}
	if err := s.RegisterKVDescriptor(iface.KVDescriptor(), route.KVDescriptor()); err != nil {
		panic(err)
	}

	ctx := context.Background()
	s.StartNBTransaction().SetValue("route/10.0.0.0/24", wrapperspb.String("eth0")).Commit(ctx, api.TxnOptions{})
	st := s.GetValueStatus("route/10.0.0.0/24").GetValue()
	fmt.Println(st.GetState(), "waiting for", st.GetDetails())

	s.StartNBTransaction().SetValue("iface/eth0", wrapperspb.String("up")).Commit(ctx, api.TxnOptions{})
	fmt.Println(s.GetValueStatus("route/10.0.0.0/24").GetValue().GetState())

	s.StartNBTransaction().SetValue("iface/eth0", nil).Commit(ctx, api.TxnOptions{})
	fmt.Println(s.GetValueStatus("route/10.0.0.0/24").GetValue().GetState())
	// Output:
	// PENDING waiting for [interface]
	// create iface/eth0
	// create route/10.0.0.0/24 via eth0
	// CONFIGURED
	// delete route/10.0.0.0/24
	// delete iface/eth0
	// PENDING
}
