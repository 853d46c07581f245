package l3plugin

import (
	"context"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// WaitRoutePrefetch waits until the route dump that Prefetch started in the
// refresh of ctx has ended; false: the refresh started none.
func WaitRoutePrefetch(ctx context.Context) bool {
	v, ok := api.RefreshMemo(ctx).Load(memoRouteDump)
	if !ok {
		return false
	}
	<-v.(*routeDump).done
	return true
}
