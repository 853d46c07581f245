// Package localclient is the in-process northbound: a Go program embedding
// the agent changes the configuration with typed values, without JSON or a
// network hop. Its values have the highest priority (orchestrator.SourceLocal).
//
//	c := localclient.New(o, models.Default)
//	seq, err := c.Put(ctx, &linuxif.Interface{Name: "veth1", ...}, &linuxl3.Route{...})
//
// Each call is one transaction; it blocks until the transaction is done,
// like api.Txn.Commit, and returns its *api.TransactionError for values that
// failed. WithOptions gives a client committing with other options, e.g. to
// only queue the transactions:
//
//	seq, err := c.WithOptions(api.TxnOptions{NonBlocking: true}).Put(ctx, v)
package localclient

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// Client changes the local source's values.
type Client struct {
	o   *orchestrator.Orchestrator
	reg *models.Registry
	// opts are the options of every transaction of the client.
	opts api.TxnOptions
}

// New returns a client of the orchestrator (nil registry: models.Default).
// The local source is registered as synced (it starts empty).
func New(ctx context.Context, o *orchestrator.Orchestrator, reg *models.Registry) (*Client, error) {
	if reg == nil {
		reg = models.Default
	}
	if _, err := o.Resync(ctx, orchestrator.SourceLocal, nil, api.TxnOptions{}); err != nil {
		return nil, err
	}
	return &Client{o: o, reg: reg}, nil
}

// WithOptions returns a client of the same source whose transactions are
// committed with opts (see the orchestrator's package documentation for the
// options it accepts: invalid ones fail each call with a
// *api.TransactionError naming the field, and change nothing). c is
// unchanged.
func (c *Client) WithOptions(opts api.TxnOptions) *Client {
	c2 := *c
	c2.opts = opts
	return &c2
}

func (c *Client) kvs(values []proto.Message, del bool) ([]orchestrator.KV, error) {
	out := make([]orchestrator.KV, 0, len(values))
	for i, v := range values {
		key, err := c.reg.Key(v)
		if err != nil {
			return nil, fmt.Errorf("value %d: %w", i, err)
		}
		kv := orchestrator.KV{Key: key, Value: v}
		if del {
			kv.Value = nil
		}
		out = append(out, kv)
	}
	return out, nil
}

// Put creates or updates values (validated first: nothing is applied if one
// is invalid).
func (c *Client) Put(ctx context.Context, values ...proto.Message) (uint64, error) {
	kvs, err := c.kvs(values, false)
	if err != nil {
		return 0, err
	}
	return c.o.Change(ctx, orchestrator.SourceLocal, kvs, c.opts)
}

// Delete removes the local values with the keys of these values (other
// sources' values of the same keys then apply).
func (c *Client) Delete(ctx context.Context, values ...proto.Message) (uint64, error) {
	kvs, err := c.kvs(values, true)
	if err != nil {
		return 0, err
	}
	return c.o.Change(ctx, orchestrator.SourceLocal, kvs, c.opts)
}

// Resync replaces all the local values with these.
func (c *Client) Resync(ctx context.Context, values ...proto.Message) (uint64, error) {
	kvs, err := c.kvs(values, false)
	if err != nil {
		return 0, err
	}
	return c.o.Resync(ctx, orchestrator.SourceLocal, kvs, c.opts)
}
