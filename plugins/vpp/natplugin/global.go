package natplugin

import (
	"context"
	"fmt"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func (p *Plugin) globalDescriptor() *api.TypedDescriptor[*vppnat.Nat44Global, *vppnat.Nat44Global] {
	apply := func(ctx context.Context, g *vppnat.Nat44Global) (*vppnat.Nat44Global, error) {
		if err := p.applyGlobal(ctx, g); err != nil {
			return nil, err
		}
		return proto.Clone(g).(*vppnat.Nat44Global), nil
	}
	return &api.TypedDescriptor[*vppnat.Nat44Global, *vppnat.Nat44Global]{
		Name:         GlobalDescriptorName,
		NBKeyPrefix:  GlobalKey,
		KeySelector:  func(key string) bool { return key == GlobalKey },
		WithMetadata: true,
		MetadataMapFactory: func() api.MetadataMapRW {
			mm := api.NewMetadataMap()
			p.mu.Lock()
			p.globalMeta = mm
			p.mu.Unlock()
			return mm
		},
		// The deprecated lists compare as the derived values they make
		// (their order, and entries that add up to the same, do not
		// matter); virtual_reassembly does not count (VPP has no such
		// setting).
		ValueComparator: func(_ string, a, b *vppnat.Nat44Global) bool {
			return a.GetForwarding() == b.GetForwarding() && a.GetEndpointIndependent() == b.GetEndpointIndependent() &&
				sameDerived(globalDerivedValues(GlobalKey, a), globalDerivedValues(GlobalKey, b))
		},
		Validate: func(key string, g *vppnat.Nat44Global) error {
			if err := models.VPPNat44Global.CheckKey(key, g); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		Create: func(ctx context.Context, _ string, g *vppnat.Nat44Global) (*vppnat.Nat44Global, error) {
			return apply(ctx, g)
		},
		Update: func(ctx context.Context, _ string, _, g *vppnat.Nat44Global, _ *vppnat.Nat44Global) (*vppnat.Nat44Global, error) {
			return apply(ctx, g)
		},
		Delete: func(ctx context.Context, _ string, _ *vppnat.Nat44Global, _ *vppnat.Nat44Global) error {
			return p.disable(ctx)
		},
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppnat.Nat44Global, *vppnat.Nat44Global]) ([]api.TypedKV[*vppnat.Nat44Global, *vppnat.Nat44Global], error) {
			return vppconn.Retrieved(p.retrieveGlobal(ctx, c))
		},
		DerivedValues:      globalDerivedValues,
		Notes:              globalNotes,
		IsRetriableFailure: isRetriable,
	}
}

// globalNotes says what the global settings ask for that VPP 25.10 has no
// setting for.
func globalNotes(_ string, g *vppnat.Nat44Global) []string {
	if g.GetVirtualReassembly() != nil {
		return []string{"virtual_reassembly ignored: VPP 25.10's NAT44-ED reassembles fragments itself and has no NAT reassembly settings"}
	}
	return nil
}

// applyGlobal enables NAT44 (unless VPP has it enabled: an interrupted
// create, someone else's enable) and sets forwarding when VPP differs.
func (p *Plugin) applyGlobal(ctx context.Context, g *vppnat.Nat44Global) error {
	have, err := p.h.Global(ctx)
	if err != nil {
		return fmt.Errorf("NAT44 global settings: %w", err)
	}
	if !have.Enabled {
		err := p.h.Enable(ctx, true)
		if err != nil && !vppconn.IsVPPError(err, govppapi.FEATURE_ALREADY_ENABLED) {
			return fmt.Errorf("enabling NAT44: %w", err)
		}
		// Enabling resets forwarding.
		have.Forwarding = false
	}
	if have.Forwarding != g.GetForwarding() {
		if err := p.h.SetForwarding(ctx, g.GetForwarding()); err != nil {
			return fmt.Errorf("NAT44 forwarding %v: %w", g.GetForwarding(), err)
		}
	}
	return nil
}

// disable disables NAT44, which removes every NAT setting of VPP (the
// values that depend on the global settings are deleted before it).
func (p *Plugin) disable(ctx context.Context) error {
	err := p.h.Enable(ctx, false)
	if err != nil && !vppconn.IsVPPError(err, govppapi.FEATURE_ALREADY_DISABLED) {
		return fmt.Errorf("disabling NAT44: %w", err)
	}
	return nil
}

// retrieveGlobal reports the global settings while NAT44 is enabled, of
// unknown origin: VPP cannot tell who enabled it, so the scheduler takes
// them for the NB's when the NB asks for them or the agent enabled NAT44,
// and for someone else's otherwise (OBTAINED: never disabled by the agent).
// The deprecated lists and virtual_reassembly are those of the expected
// value: the lists are the derived values, retrieved on their own, and
// VPP has no reassembly setting. The metadata is the value, for the
// Retrieves of the derived values.
func (p *Plugin) retrieveGlobal(ctx context.Context, correlate []api.TypedKV[*vppnat.Nat44Global, *vppnat.Nat44Global]) ([]api.TypedKV[*vppnat.Nat44Global, *vppnat.Nat44Global], error) {
	g, err := p.h.Global(ctx)
	if err != nil || !g.Enabled {
		return nil, err
	}
	v := &vppnat.Nat44Global{}
	for _, c := range correlate {
		if c.Key == GlobalKey && c.Value != nil {
			v = proto.Clone(c.Value).(*vppnat.Nat44Global)
		}
	}
	v.Forwarding = g.Forwarding
	return []api.TypedKV[*vppnat.Nat44Global, *vppnat.Nat44Global]{{
		Key: GlobalKey, Value: v, Metadata: proto.Clone(v).(*vppnat.Nat44Global), Origin: api.UnknownOrigin,
	}}, nil
}
