package natplugin

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	govppapi "go.fd.io/govpp/api"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/internal/validate"
	"github.com/netagent-io/netagent/plugins/vpp/natplugin/vppcalls"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	vppnat "github.com/netagent-io/netagent/proto/vpp/nat"
)

func natIfName(key string) string { return strings.TrimPrefix(key, models.VPPNat44Interface.KeyPrefix) }

// features is a Nat44Interface as VPP keeps it: the output feature takes
// no side (VPP's output interface excludes the inside and outside
// features), so nat_inside or nat_outside with output_feature is the
// output feature alone.
type features struct{ inside, outside, output bool }

func wantedFeatures(i *vppnat.Nat44Interface) features {
	if i.GetOutputFeature() {
		return features{output: true}
	}
	return features{inside: i.GetNatInside(), outside: i.GetNatOutside()}
}

func haveFeatures(f vppcalls.InterfaceFeatures) features {
	return features{inside: f.Inside, outside: f.Outside, output: f.Output}
}

func (p *Plugin) interfaceDescriptor() *api.TypedDescriptor[*vppnat.Nat44Interface, any] {
	prefix := models.VPPNat44Interface.KeyPrefix
	return &api.TypedDescriptor[*vppnat.Nat44Interface, any]{
		Name:        InterfaceDescriptorName,
		NBKeyPrefix: prefix,
		KeySelector: func(key string) bool { return strings.HasPrefix(key, prefix) },
		KeyLabel:    natIfName,
		ValueComparator: func(_ string, a, b *vppnat.Nat44Interface) bool {
			return a.GetName() == b.GetName() && wantedFeatures(a) == wantedFeatures(b)
		},
		Validate: func(key string, i *vppnat.Nat44Interface) error {
			if err := models.VPPNat44Interface.CheckKey(key, i); err != nil {
				return validate.Invalid(err)
			}
			return nil
		},
		Create: func(ctx context.Context, _ string, i *vppnat.Nat44Interface) (any, error) {
			return nil, p.syncInterface(ctx, i.GetName(), wantedFeatures(i))
		},
		Update: func(ctx context.Context, _ string, _, i *vppnat.Nat44Interface, _ any) (any, error) {
			return nil, p.syncInterface(ctx, i.GetName(), wantedFeatures(i))
		},
		Delete: func(ctx context.Context, _ string, i *vppnat.Nat44Interface, _ any) error {
			return p.clearInterface(ctx, i.GetName())
		},
		Retrieve: func(ctx context.Context, c []api.TypedKV[*vppnat.Nat44Interface, any]) ([]api.TypedKV[*vppnat.Nat44Interface, any], error) {
			return vppconn.Retrieved(p.retrieveInterfaces(ctx, c))
		},
		Dependencies: func(_ string, i *vppnat.Nat44Interface) []api.Dependency {
			return []api.Dependency{globalDependency, {Label: "interface " + i.GetName(), Key: ifplugin.InterfaceKey(i.GetName())}}
		},
		Unique: func(_ string, i *vppnat.Nat44Interface) []api.UniqueName {
			return []api.UniqueName{{Field: "name", Name: featuresName(i.GetName())}}
		},
		IsRetriableFailure:   isRetriable,
		RetrieveDependencies: []string{ifplugin.InterfaceDescriptorName, GlobalDescriptorName},
	}
}

// syncInterface brings the NAT features of an interface from what VPP has
// (read first: a change behind the agent's back, or a lost reply, leaves
// VPP other than the old value) to want. VPP refuses the output feature
// beside the others and the reverse, so what goes goes first; an inside or
// outside feature is added before the other is deleted, as VPP deletes
// whichever feature an interface has left when asked to delete either.
func (p *Plugin) syncInterface(ctx context.Context, name string, want features) error {
	sw, err := p.swIfIndex(ctx, name)
	if err != nil {
		return err
	}
	all, err := p.h.Interfaces(ctx)
	if err != nil {
		return fmt.Errorf("NAT interface %s: %w", name, err)
	}
	have := haveFeatures(all[sw])
	set := func(f vppcalls.Feature, add bool) error {
		if err := p.h.SetFeature(ctx, sw, f, add); err != nil {
			verb := "deleting"
			if add {
				verb = "adding"
			}
			return fmt.Errorf("NAT interface %s (sw_if_index %d): %s the %s feature: %w", name, sw, verb, f, err)
		}
		return nil
	}
	if have.output && !want.output {
		if err := set(vppcalls.Output, false); err != nil {
			return err
		}
		have.output = false
	}
	for _, f := range []struct {
		feature    vppcalls.Feature
		have, want bool
	}{{vppcalls.Inside, have.inside, want.inside}, {vppcalls.Outside, have.outside, want.outside}} {
		if f.want && !f.have {
			if err := set(f.feature, true); err != nil {
				return err
			}
		}
	}
	for _, f := range []struct {
		feature    vppcalls.Feature
		have, want bool
	}{{vppcalls.Inside, have.inside, want.inside}, {vppcalls.Outside, have.outside, want.outside}} {
		if f.have && !f.want {
			if err := set(f.feature, false); err != nil && !vppconn.IsVPPError(err, govppapi.NO_SUCH_ENTRY) {
				return err
			}
		}
	}
	if want.output && !have.output {
		if err := set(vppcalls.Output, true); err != nil {
			return err
		}
	}
	return nil
}

// retrieveInterfaces reports the NAT features of the agent's interfaces
// (and of the foreign ones a value names), one value per interface, origin
// FromNB: VPP keeps no tag on them, so the features of an interface the
// agent owns are taken for its own (a full resync removes those the NB
// does not ask for) and those of other interfaces are left alone. An
// expected value without features is reported as it is when VPP has none.
// A value equivalent to the expected one is returned as the expected one.
// The interfaces of the global settings' nat_interfaces are left to their
// Retrieve (retrieveGlobalInterfaces) but those a Nat44Interface holds.
func (p *Plugin) retrieveInterfaces(ctx context.Context, correlate []api.TypedKV[*vppnat.Nat44Interface, any]) ([]api.TypedKV[*vppnat.Nat44Interface, any], error) {
	expected := map[string]*vppnat.Nat44Interface{}
	configured := map[string]bool{}
	for _, c := range correlate {
		if c.Value != nil {
			expected[c.Value.GetName()] = c.Value
			configured[c.Value.GetName()] = true
		}
	}
	// The interfaces of the global settings' nat_interfaces are the
	// global's (its derived values, retrieved after this), unless a valid
	// Nat44Interface of the interface holds them: the one already applied
	// keeps them, and when both come together (a restart) the
	// Nat44Interface gets them (the first key, see featuresName).
	claimed := map[string]bool{}
	global := p.globalInterfaces()
	view := api.ViewOf(ctx)
	for name := range global {
		if exp := expected[name]; exp != nil && view.GetValueStatus(models.VPPNat44Interface.KeyPrefix+name).GetValue().GetState() != api.ValueStateInvalid {
			claimed[name] = true
		}
		configured[name] = true
	}
	p.mu.Lock()
	p.claimed = claimed
	p.mu.Unlock()
	all, err := p.h.Interfaces(ctx)
	if err != nil {
		return nil, err
	}
	nm := p.newNamer(ctx, configured)
	seen := map[string]bool{}
	var out []api.TypedKV[*vppnat.Nat44Interface, any]
	for sw, f := range all {
		name, ok := nm.name(sw)
		if !ok || (global[name] != nil && !claimed[name]) {
			continue
		}
		v := &vppnat.Nat44Interface{Name: name, NatInside: f.Inside, NatOutside: f.Outside}
		if f.Output {
			v = &vppnat.Nat44Interface{Name: name, NatOutside: true, OutputFeature: true}
		}
		if exp := expected[name]; exp != nil && wantedFeatures(exp) == wantedFeatures(v) {
			v = proto.Clone(exp).(*vppnat.Nat44Interface)
		}
		seen[name] = true
		out = append(out, api.TypedKV[*vppnat.Nat44Interface, any]{Key: models.VPPNat44Interface.KeyPrefix + name, Value: v, Origin: api.FromNB})
	}
	for name, exp := range expected {
		if !seen[name] && wantedFeatures(exp) == (features{}) && (global[name] == nil || claimed[name]) {
			if _, ok := p.ifaces(ctx, name); ok {
				out = append(out, api.TypedKV[*vppnat.Nat44Interface, any]{Key: models.VPPNat44Interface.KeyPrefix + name, Value: proto.Clone(exp).(*vppnat.Nat44Interface), Origin: api.FromNB})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// clearInterface removes the NAT features of an interface; an interface
// already gone took its features with it (success).
func (p *Plugin) clearInterface(ctx context.Context, name string) error {
	err := p.syncInterface(ctx, name, features{})
	var missing *missingInterfaceError
	if errors.As(err, &missing) {
		p.log.Debug("NAT features to remove: the interface is gone, and its features with it", "interface", name)
		return nil
	}
	return err
}
