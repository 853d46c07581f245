package ligato

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/pkg/models"
	configpb "github.com/netagent-io/netagent/proto/config"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
	ligatolinux "github.com/netagent-io/netagent/proto/ligato/linux"
	ligatovpp "github.com/netagent-io/netagent/proto/ligato/vpp"
)

// The original's containers and netagent's document list the same model
// messages under the same field names (a test checks that every list of the
// document has its place here): converting one into the other moves the
// lists, never copies a value.

// toConfig converts the original's container into netagent's document,
// leaving out the values at the places in skip (vpp_config.interfaces[2]).
func toConfig(c *ligatocfg.Config, skip map[string]bool) *configpb.Config {
	out := &configpb.Config{}
	if v := c.GetVppConfig(); v != nil {
		out.VppConfig = &configpb.VppConfig{
			Interfaces:      keep(v.GetInterfaces(), "vpp_config.interfaces", skip),
			BridgeDomains:   keep(v.GetBridgeDomains(), "vpp_config.bridge_domains", skip),
			Routes:          keep(v.GetRoutes(), "vpp_config.routes", skip),
			Arps:            keep(v.GetArps(), "vpp_config.arps", skip),
			Acls:            keep(v.GetAcls(), "vpp_config.acls", skip),
			Fibs:            keep(v.GetFibs(), "vpp_config.fibs", skip),
			XconnectPairs:   keep(v.GetXconnectPairs(), "vpp_config.xconnect_pairs", skip),
			Vrfs:            keep(v.GetVrfs(), "vpp_config.vrfs", skip),
			Nat44Global:     v.GetNat44Global(),
			Dnat44S:         keep(v.GetDnat44S(), "vpp_config.dnat44s", skip),
			Nat44Interfaces: keep(v.GetNat44Interfaces(), "vpp_config.nat44_interfaces", skip),
			Nat44Pools:      keep(v.GetNat44Pools(), "vpp_config.nat44_pools", skip),
		}
		if skip["vpp_config.nat44_global"] {
			out.VppConfig.Nat44Global = nil
		}
	}
	if l := c.GetLinuxConfig(); l != nil {
		out.LinuxConfig = &configpb.LinuxConfig{
			Interfaces: keep(l.GetInterfaces(), "linux_config.interfaces", skip),
			ArpEntries: keep(l.GetArpEntries(), "linux_config.arp_entries", skip),
			Routes:     keep(l.GetRoutes(), "linux_config.routes", skip),
		}
	}
	return out
}

// keep returns list without the items whose places (field[i]) are in skip.
func keep[T any](list []T, field string, skip map[string]bool) []T {
	if len(skip) == 0 {
		return list
	}
	out := make([]T, 0, len(list))
	for i, v := range list {
		if !skip[place(field, i)] {
			out = append(out, v)
		}
	}
	return out
}

func place(field string, i int) string { return fmt.Sprintf("%s[%d]", field, i) }

// fromConfig converts netagent's document into the original's container.
func fromConfig(c *configpb.Config) *ligatocfg.Config {
	if c == nil {
		return nil
	}
	out := &ligatocfg.Config{}
	if v := c.GetVppConfig(); v != nil {
		out.VppConfig = &ligatovpp.ConfigData{
			Interfaces:      v.GetInterfaces(),
			BridgeDomains:   v.GetBridgeDomains(),
			Routes:          v.GetRoutes(),
			Arps:            v.GetArps(),
			Acls:            v.GetAcls(),
			Fibs:            v.GetFibs(),
			XconnectPairs:   v.GetXconnectPairs(),
			Vrfs:            v.GetVrfs(),
			Nat44Global:     v.GetNat44Global(),
			Dnat44S:         v.GetDnat44S(),
			Nat44Interfaces: v.GetNat44Interfaces(),
			Nat44Pools:      v.GetNat44Pools(),
		}
	}
	if l := c.GetLinuxConfig(); l != nil {
		out.LinuxConfig = &ligatolinux.ConfigData{
			Interfaces: l.GetInterfaces(),
			ArpEntries: l.GetArpEntries(),
			Routes:     l.GetRoutes(),
		}
	}
	return out
}

// appendValue appends v to the list of its model in c.
func appendValue(c *configpb.Config, m *models.Model, v proto.Message) {
	cm := c.ProtoReflect()
	section := cm.Descriptor().Fields().ByName(protoreflect.Name(m.ConfigSection))
	sm := cm.Mutable(section).Message()
	field := sm.Descriptor().Fields().ByName(protoreflect.Name(m.ConfigField))
	if !field.IsList() { // a model of one value
		sm.Set(field, protoreflect.ValueOfMessage(v.ProtoReflect()))
		return
	}
	sm.Mutable(field).List().Append(protoreflect.ValueOfMessage(v.ProtoReflect()))
}
