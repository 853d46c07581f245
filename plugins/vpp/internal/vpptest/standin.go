package vpptest

import (
	"context"
	"errors"
	"io"
	"strings"

	interfaces "go.fd.io/govpp/binapi/interface"
	"go.fd.io/govpp/binapi/interface_types"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// InterfaceStandIn stands in for ifplugin's interface descriptor (under its
// name and keys): a loopback per value, tagged with the logical name, with
// *ifplugin.Metadata{SwIfIndex, InternalName} in the metadata map, as
// ifplugin publishes it.
func InterfaceStandIn(m *vppconn.Manager) *api.KVDescriptor {
	return standIn(m, func(md ifplugin.Metadata) *ifplugin.Metadata { return &md },
		func(md *ifplugin.Metadata) ifplugin.Metadata { return *md })
}

// InterfaceStandInValues is InterfaceStandIn publishing ifplugin.Metadata
// values rather than pointers (ifplugin.SchedulerInterfaces reads both).
func InterfaceStandInValues(m *vppconn.Manager) *api.KVDescriptor {
	return standIn(m, func(md ifplugin.Metadata) ifplugin.Metadata { return md },
		func(md ifplugin.Metadata) ifplugin.Metadata { return md })
}

// standInArea is the area of the stand-in's calls: registered with no
// Manager, so never disabled.
const standInArea = "test-interfaces"

func standIn[MD any](m *vppconn.Manager, wrap func(ifplugin.Metadata) MD, unwrap func(MD) ifplugin.Metadata) *api.KVDescriptor {
	prefix := models.VPPInterface.KeyPrefix
	call := func(ctx context.Context, f func(ctx context.Context, c interfaces.RPCService) error) error {
		if err := ctx.Err(); err != nil {
			return err // as ifplugin: nothing is sent once ctx has ended
		}
		conn, err := m.Conn(standInArea)
		if err != nil {
			return err
		}
		ctx, cancel := m.CallContext(ctx)
		defer cancel()
		return f(ctx, interfaces.NewServiceClient(conn))
	}
	d := &api.TypedDescriptor[*vppif.Interface, MD]{
		Name:         ifplugin.InterfaceDescriptorName,
		NBKeyPrefix:  prefix,
		KeySelector:  func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:     func(key string) string { return strings.TrimPrefix(key, prefix) },
		WithMetadata: true,
		Create: func(ctx context.Context, _ string, v *vppif.Interface) (md MD, err error) {
			err = call(ctx, func(ctx context.Context, c interfaces.RPCService) error {
				r, err := c.CreateLoopback(ctx, &interfaces.CreateLoopback{})
				if err != nil {
					return err
				}
				md = wrap(ifplugin.Metadata{SwIfIndex: uint32(r.SwIfIndex)})
				_, err = c.SwInterfaceTagAddDel(ctx, &interfaces.SwInterfaceTagAddDel{IsAdd: true, SwIfIndex: r.SwIfIndex, Tag: v.GetName()})
				return err
			})
			return md, err
		},
		Delete: func(ctx context.Context, _ string, _ *vppif.Interface, md MD) error {
			return call(ctx, func(ctx context.Context, c interfaces.RPCService) error {
				_, err := c.DeleteLoopback(ctx, &interfaces.DeleteLoopback{SwIfIndex: interface_types.InterfaceIndex(unwrap(md).SwIfIndex)})
				return err
			})
		},
		Retrieve: func(ctx context.Context, correlate []api.TypedKV[*vppif.Interface, MD]) (out []api.TypedKV[*vppif.Interface, MD], err error) {
			byName := map[string]api.TypedKV[*vppif.Interface, MD]{}
			for _, c := range correlate {
				byName[c.Value.GetName()] = c
			}
			err = call(ctx, func(ctx context.Context, c interfaces.RPCService) error {
				st, err := c.SwInterfaceDump(ctx, &interfaces.SwInterfaceDump{SwIfIndex: ^interface_types.InterfaceIndex(0)})
				if err != nil {
					return err
				}
				for {
					d, err := st.Recv()
					if errors.Is(err, io.EOF) {
						return nil
					}
					if err != nil {
						return err
					}
					if kv, ok := byName[d.Tag]; ok {
						out = append(out, api.TypedKV[*vppif.Interface, MD]{
							Key: kv.Key, Value: kv.Value, Origin: api.FromNB,
							Metadata: wrap(ifplugin.Metadata{SwIfIndex: uint32(d.SwIfIndex), InternalName: d.InterfaceName}),
						})
					}
				}
			})
			return out, err
		},
	}
	return d.KVDescriptor()
}
