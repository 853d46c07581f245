package l3plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/ip"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// VrfTableDescriptorName is the descriptor of VRF tables.
const VrfTableDescriptorName = "vpp-vrf-table"

// VrfTableMetadata is what the VRF table descriptor keeps per table:
// whether the table is the agent's to delete, in the VPP process of
// VPPPID. A table is the agent's when the agent created it, or when VPP
// has it as the configuration asks for it (the configuration names it,
// with VPP's name for it). A table VPP has under another name may be
// someone else's: its Delete is refused (see Ownership of VRF tables).
type VrfTableMetadata struct {
	Owned  bool
	VPPPID uint32
}

// tableOf is the table of a VRF table value.
func tableOf(t *vppl3.VrfTable) tableKey {
	return tableKey{id: t.GetId(), ipv6: t.GetProtocol() == vppl3.VrfTable_IPV6}
}

// defaultTableName is the name VPP gives a table created without one.
func defaultTableName(k tableKey) string {
	if k.ipv6 {
		return fmt.Sprintf("ipv6-VRF:%d", k.id)
	}
	return fmt.Sprintf("ipv4-VRF:%d", k.id)
}

// tableName is the name a VRF table value gives its table in VPP: its
// label, or VPP's default name.
func tableName(t *vppl3.VrfTable) string {
	if t.GetLabel() != "" {
		return t.GetLabel()
	}
	return defaultTableName(tableOf(t))
}

// vrfTablesEquivalent is the ValueComparator: an empty label is VPP's
// default name.
func vrfTablesEquivalent(a, b *vppl3.VrfTable) bool {
	return tableOf(a) == tableOf(b) && tableName(a) == tableName(b)
}

func (p *Plugin) vrfTableDescriptor() *api.TypedDescriptor[*vppl3.VrfTable, *VrfTableMetadata] {
	prefix := models.VPPVrfTable.KeyPrefix
	return &api.TypedDescriptor[*vppl3.VrfTable, *VrfTableMetadata]{
		Name:            VrfTableDescriptorName,
		NBKeyPrefix:     prefix,
		KeySelector:     func(key string) bool { return strings.HasPrefix(key, prefix) },
		ValueComparator: func(_ string, a, b *vppl3.VrfTable) bool { return vrfTablesEquivalent(a, b) },
		WithMetadata:    true,
		Validate: func(key string, t *vppl3.VrfTable) error {
			if err := models.VPPVrfTable.CheckKey(key, t); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		Create: p.createVrfTable,
		Delete: p.deleteVrfTable,
		// A new label: VPP cannot rename a table, so the agent's own is
		// made again (its routes and interface bindings go first and come
		// back after it); another's is not touched (refuseRelabel).
		UpdateWithRecreate: func(_ string, _, _ *vppl3.VrfTable, md *VrfTableMetadata) bool { return md != nil && md.Owned },
		Update:             p.refuseRelabel,
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppl3.VrfTable, *VrfTableMetadata]) ([]api.TypedKV[*vppl3.VrfTable, *VrfTableMetadata], error) {
			return vppconn.Retrieved(p.retrieveVrfTables(ctx, c))
		},
		IsRetriableFailure: isRetriable,
	}
}

// createVrfTable creates the table, named with the label
// (ip_table_add_del add, which also makes the API a holder of a table VPP
// already has). Table 0 always exists, and VPP ignores ip_table_add_del
// for it: nothing is sent. VPP cannot rename a table: one it already has
// under another name (held by someone else: the CLI, interfaces bound to
// it, route paths through it, another API client) is refused, VPP
// untouched, with a retriable error saying so.
func (p *Plugin) createVrfTable(ctx context.Context, _ string, t *vppl3.VrfTable) (*VrfTableMetadata, error) {
	k := tableOf(t)
	pid := p.m.PID()
	if k.id == 0 {
		if t.GetLabel() != "" && t.GetLabel() != defaultTableName(k) {
			p.log.Info("VRF table 0 always exists and keeps its name; the label is not applied", "table", k.String(), "label", t.GetLabel())
		}
		return &VrfTableMetadata{VPPPID: pid}, nil
	}
	all, err := p.dumpTables(ctx)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", k, err)
	}
	for _, have := range all {
		if have.tableKey == k && have.name != tableName(t) {
			return nil, fmt.Errorf("%s: VPP already has it, named %q, and cannot rename a table: something else holds it (interfaces bound to it, routes through it, the CLI or another API client); label it %q, or free it", k, have.name, have.name)
		}
	}
	err = p.call(ctx, func(ctx context.Context, conn govppapi.Connection) error {
		_, err := ip.NewServiceClient(conn).IPTableAddDel(ctx, &ip.IPTableAddDel{
			IsAdd: true, Table: ip.IPTable{TableID: k.id, IsIP6: k.ipv6, Name: t.GetLabel()},
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ip_table_add_del (add %s, %q): %w", k, tableName(t), err)
	}
	return &VrfTableMetadata{Owned: true, VPPPID: pid}, nil
}

// refuseRelabel is the Update of a label change of a table that is not the
// agent's (VrfTableMetadata.Owned false): VPP has it under another name,
// and cannot rename it; deleting it to make it again might destroy someone
// else's table (another API client's hold is the API's too). So it fails,
// VPP untouched, saying so; table 0 keeps its name whatever the label.
func (p *Plugin) refuseRelabel(_ context.Context, _ string, old, t *vppl3.VrfTable, md *VrfTableMetadata) (*VrfTableMetadata, error) {
	k := tableOf(t)
	if k.id == 0 {
		return md, nil
	}
	return md, api.NonRetriable(fmt.Errorf("%s: VPP has it named %q, which the agent did not make, and cannot rename a table: not relabelled %q (it may be someone else's); label it %q, or delete it from VPP and resync", k, tableName(old), tableName(t), tableName(old)))
}

// deleteVrfTable ends the API's hold on the table (ip_table_add_del
// delete): VPP destroys it, with whatever routes are left in it, once
// nothing else holds it (the routes and interface bindings of the agent
// that need it depend on the value and are gone by then). Table 0 is never
// deleted; a table already gone, or made in a VPP that has restarted
// since, is success.
func (p *Plugin) deleteVrfTable(ctx context.Context, _ string, t *vppl3.VrfTable, md *VrfTableMetadata) error {
	k := tableOf(t)
	if k.id == 0 {
		return nil
	}
	if md != nil && md.VPPPID != p.m.PID() {
		return nil // created in a VPP that has restarted since: gone with it
	}
	err := p.call(ctx, func(ctx context.Context, conn govppapi.Connection) error {
		_, err := ip.NewServiceClient(conn).IPTableAddDel(ctx, &ip.IPTableAddDel{
			IsAdd: false, Table: ip.IPTable{TableID: k.id, IsIP6: k.ipv6},
		})
		return err
	})
	if err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_FIB, govppapi.NO_SUCH_ENTRY) {
		return fmt.Errorf("ip_table_add_del (delete %s): %w", k, err)
	}
	return nil
}

// retrieveVrfTables reports VPP's IP tables (ip_table_dump), labelled with
// their names (an expected value that VPP has as it asks is reported as
// is):
//
//   - table 0 of each protocol: the expected value when the configuration
//     has one, else VPP's, of origin FromSB (never deleted);
//   - every other table: of unknown origin. The scheduler takes it for the
//     NB's when the configuration names it or the agent created it (and
//     deletes it when the configuration drops it), and for someone else's
//     otherwise (OBTAINED, never deleted). VPP's dump says nothing of who
//     made a table, and its name is the user's label, so the agent does not
//     mark its tables: see Ownership of VRF tables in the package doc.
func (p *Plugin) retrieveVrfTables(ctx context.Context, correlate []api.TypedKV[*vppl3.VrfTable, *VrfTableMetadata]) ([]api.TypedKV[*vppl3.VrfTable, *VrfTableMetadata], error) {
	pid := p.m.PID() // before the dump: a table of a VPP restarted since is not taken for this one's
	expected := make(map[tableKey]*vppl3.VrfTable, len(correlate))
	owned := map[tableKey]bool{}
	for _, c := range correlate {
		if c.Value != nil {
			expected[tableOf(c.Value)] = c.Value
			owned[tableOf(c.Value)] = c.Metadata != nil && c.Metadata.Owned && c.Metadata.VPPPID == pid
		}
	}
	all, err := p.refreshTables(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.TypedKV[*vppl3.VrfTable, *VrfTableMetadata], 0, len(all))
	for _, t := range all {
		v := &vppl3.VrfTable{Id: t.id, Label: t.name}
		if t.ipv6 {
			v.Protocol = vppl3.VrfTable_IPV6
		}
		exp := expected[t.tableKey]
		origin := api.UnknownOrigin
		if t.id == 0 {
			origin = api.FromSB
			if exp != nil {
				// VPP keeps table 0 as it is, whatever the label.
				v, origin = exp, api.FromNB
			}
		}
		md := &VrfTableMetadata{Owned: owned[t.tableKey], VPPPID: pid}
		if exp != nil && vrfTablesEquivalent(exp, v) {
			v, md.Owned = exp, t.id != 0
		}
		out = append(out, api.TypedKV[*vppl3.VrfTable, *VrfTableMetadata]{
			Key: models.VrfTableKey(t.id, t.ipv6), Value: proto.Clone(v).(*vppl3.VrfTable), Metadata: md, Origin: origin,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// refreshTables lists VPP's tables for the Retrieve of a refresh: those of
// the route dump the refresh's Prefetch started (one ip_table_dump per
// refresh), when it read them from the VPP connected now; otherwise one
// ip_table_dump.
func (p *Plugin) refreshTables(ctx context.Context) ([]vppTable, error) {
	if v, ok := api.RefreshMemo(ctx).Load(memoRouteDump); ok {
		d := v.(*routeDump)
		select {
		case <-d.done:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		if d.err == nil && d.pid == p.m.PID() {
			return d.tables, nil
		}
	}
	return p.dumpTables(ctx)
}
