package grpcsource

import (
	"context"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// Apply changes values of the gRPC source as Update and Delete do, for the
// other gRPC services that configure the agent (the original's
// ManagerService): the values are set (nil: deleted) in one transaction,
// or with fullResync replace every value of the gRPC source (nil values
// are then not allowed: leave the keys out). The values must have been
// checked by the caller (keys of registered models, valid values). It
// waits until the transaction is done, like a request with wait_done, and
// returns its sequence number and the keys that failed in it (operation,
// error, current state); the other keys are applied all the same. The
// errors are those of Update (grpc status errors): what names the request
// (what: "set config") comes first in their messages.
func (s *Server) Apply(ctx context.Context, what string, kvs []orchestrator.KV, fullResync bool) (uint64, []*configuratorpb.KeyError, error) {
	return s.commit(ctx, what, true, nil, func(ctx context.Context, opts api.TxnOptions) (uint64, error) {
		if fullResync {
			return s.o.Resync(ctx, orchestrator.SourceGRPC, kvs, opts)
		}
		return s.o.Change(ctx, orchestrator.SourceGRPC, kvs, opts)
	})
}
