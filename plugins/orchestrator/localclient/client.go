// Package localclient is the in-process northbound: a Go program embedding
// the agent changes the configuration with typed values, without JSON or a
// network hop. Its values have the highest priority (orchestrator.SourceLocal).
//
//	c := localclient.New(o, models.Default)
//	seq, err := c.Put(ctx, &linuxif.Interface{Name: "veth1", ...}, &linuxl3.Route{...})
//
// Each call is one transaction; it blocks until the transaction is done,
// like api.Txn.Commit (pass api.WithoutBlocking(ctx) to only queue it), and
// returns its *api.TransactionError for values that failed.
package localclient

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// Client changes the local source's values.
type Client struct {
	o   *orchestrator.Orchestrator
	reg *models.Registry
}

// New returns a client of the orchestrator (nil registry: models.Default).
// The local source is registered as synced (it starts empty).
func New(ctx context.Context, o *orchestrator.Orchestrator, reg *models.Registry) (*Client, error) {
	if reg == nil {
		reg = models.Default
	}
	if _, err := o.Resync(ctx, orchestrator.SourceLocal, nil); err != nil {
		return nil, err
	}
	return &Client{o: o, reg: reg}, nil
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
	return c.o.Change(ctx, orchestrator.SourceLocal, kvs)
}

// Delete removes the local values with the keys of these values (other
// sources' values of the same keys then apply).
func (c *Client) Delete(ctx context.Context, values ...proto.Message) (uint64, error) {
	kvs, err := c.kvs(values, true)
	if err != nil {
		return 0, err
	}
	return c.o.Change(ctx, orchestrator.SourceLocal, kvs)
}

// Resync replaces all the local values with these.
func (c *Client) Resync(ctx context.Context, values ...proto.Message) (uint64, error) {
	kvs, err := c.kvs(values, false)
	if err != nil {
		return 0, err
	}
	return c.o.Resync(ctx, orchestrator.SourceLocal, kvs)
}
