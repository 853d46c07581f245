package natplugin

import (
	"context"
	"fmt"

	govppapi "go.fd.io/govpp/api"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func (p *Plugin) globalDescriptor() *api.TypedDescriptor[*vppnat.Nat44Global, any] {
	return &api.TypedDescriptor[*vppnat.Nat44Global, any]{
		Name:        GlobalDescriptorName,
		NBKeyPrefix: GlobalKey,
		KeySelector: func(key string) bool { return key == GlobalKey },
		Validate: func(key string, g *vppnat.Nat44Global) error {
			if err := models.VPPNat44Global.CheckKey(key, g); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		Create: func(ctx context.Context, _ string, g *vppnat.Nat44Global) (any, error) {
			return nil, p.applyGlobal(ctx, g)
		},
		Update: func(ctx context.Context, _ string, _, g *vppnat.Nat44Global, _ any) (any, error) {
			return nil, p.applyGlobal(ctx, g)
		},
		Delete: func(ctx context.Context, _ string, _ *vppnat.Nat44Global, _ any) error {
			return p.disable(ctx)
		},
		Retrieve: func(ctx context.Context, _ []api.TypedKV[*vppnat.Nat44Global, any]) ([]api.TypedKV[*vppnat.Nat44Global, any], error) {
			return vppconn.Retrieved(p.retrieveGlobal(ctx))
		},
		IsRetriableFailure: isRetriable,
	}
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
func (p *Plugin) retrieveGlobal(ctx context.Context) ([]api.TypedKV[*vppnat.Nat44Global, any], error) {
	g, err := p.h.Global(ctx)
	if err != nil || !g.Enabled {
		return nil, err
	}
	return []api.TypedKV[*vppnat.Nat44Global, any]{{
		Key: GlobalKey, Value: &vppnat.Nat44Global{Forwarding: g.Forwarding}, Origin: api.UnknownOrigin,
	}}, nil
}
