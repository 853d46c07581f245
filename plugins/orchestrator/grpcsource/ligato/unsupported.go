package ligato

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/netagent-io/netagent/pkg/models"
	ligatocfg "github.com/netagent-io/netagent/proto/ligato/configurator"
)

// refusal is a value of a request that is not applied, because netagent
// does not support its model or some of its fields.
type refusal struct {
	// place is where it is in the request: vpp_config.acls[0].
	place string
	// key and model are the value's, for a supported model whose key can
	// be built ("" and nil otherwise).
	key    string
	model  *models.Model
	reason string
}

type refusals []refusal

// places returns the places of the refused values of supported models
// (those toConfig must leave out).
func (rs refusals) places() map[string]bool {
	out := map[string]bool{}
	for _, r := range rs {
		if r.model != nil {
			out[r.place] = true
		}
	}
	return out
}

// originalField is a field of one of the original's messages that
// netagent's copy does not declare.
type originalField struct {
	name string
	// message is the original's message of its values, for a model's list
	// in a container.
	message string
	list    bool
	// section is the original's container that the field holds, for a
	// section netagent lacks as a whole (its items are reported one by
	// one).
	section protoreflect.FullName
}

// originalFields are the fields of the original's messages (its published
// .proto files) that netagent's do not declare, by the full name of
// netagent's message: they arrive as unknown fields. The containers'
// entries are the numbers their .proto files reserve (a test checks both
// agree).
var originalFields = map[protoreflect.FullName]map[protowire.Number]originalField{
	"ligato.configurator.Config": {
		3: {name: "netalloc_config", section: "ligato.netalloc.ConfigData"},
	},
	"ligato.netalloc.ConfigData": {
		10: {name: "ip_addresses", message: "ligato.netalloc.IPAllocation", list: true},
	},
	"ligato.vpp.ConfigData": {
		11: {name: "spans", message: "ligato.vpp.interfaces.Span", list: true},
		21: {name: "abfs", message: "ligato.vpp.abf.ABF", list: true},
		42: {name: "proxy_arp", message: "ligato.vpp.l3.ProxyARP"},
		43: {name: "ipscan_neighbor", message: "ligato.vpp.l3.IPScanNeighbor"},
		45: {name: "l3xconnects", message: "ligato.vpp.l3.L3XConnect", list: true},
		46: {name: "dhcp_proxies", message: "ligato.vpp.l3.DHCPProxy", list: true},
		47: {name: "teib_entries", message: "ligato.vpp.l3.TeibEntry", list: true},
		48: {name: "ip6nds", message: "ligato.vpp.l3.IP6ND", list: true},
		60: {name: "ipsec_spds", message: "ligato.vpp.ipsec.SecurityPolicyDatabase", list: true},
		61: {name: "ipsec_sas", message: "ligato.vpp.ipsec.SecurityAssociation", list: true},
		62: {name: "ipsec_tunnel_protections", message: "ligato.vpp.ipsec.TunnelProtection", list: true},
		70: {name: "punt_ipredirects", message: "ligato.vpp.punt.IPRedirect", list: true},
		71: {name: "punt_tohosts", message: "ligato.vpp.punt.ToHost", list: true},
		72: {name: "punt_exceptions", message: "ligato.vpp.punt.Exception", list: true},
		80: {name: "srv6_localsids", message: "ligato.vpp.srv6.LocalSID", list: true},
		81: {name: "srv6_policies", message: "ligato.vpp.srv6.Policy", list: true},
		82: {name: "srv6_steerings", message: "ligato.vpp.srv6.Steering", list: true},
		83: {name: "srv6_global", message: "ligato.vpp.srv6.SRv6Global"},
		90: {name: "ipfix_global", message: "ligato.vpp.ipfix.IPFIX"},
		91: {name: "ipfix_flowprobe_params", message: "ligato.vpp.ipfix.FlowProbeParams"},
		92: {name: "ipfix_flowprobes", message: "ligato.vpp.ipfix.FlowProbeFeature", list: true},
	},
	// Fields of supported models.
	"vpp.interfaces.Interface": {
		12:  {name: "rx_modes"},
		13:  {name: "rx_placements"},
		14:  {name: "ip6_nd"},
		105: {name: "ipsec"},
		106: {name: "vmx_net3"},
		107: {name: "bond"},
		108: {name: "gre"},
		109: {name: "gtpu"},
		110: {name: "ipip"},
		111: {name: "wireguard"},
	},
	"vpp.l3.VrfTable": {
		4: {name: "flow_hash_settings"},
	},
	"vpp.interfaces.SubInterface": {
		3: {name: "tag_rw_option"},
		4: {name: "push_dot1q"},
		5: {name: "tag1"},
		6: {name: "tag2"},
	},
}

// unsupported lists what of c netagent does not support: the values of
// the original's models it lacks, and (with fields) the values of
// supported models that carry fields it lacks. It does not change c.
func (s *Server) unsupported(c *ligatocfg.Config, fields bool) refusals {
	var out refusals
	cm := c.ProtoReflect()
	sections := cm.Descriptor().Fields()
	for i := range sections.Len() {
		sfd := sections.Get(i)
		if !cm.Has(sfd) {
			continue
		}
		sm := cm.Get(sfd).Message()
		if fields {
			out = append(out, s.unsupportedValues(sm, string(sfd.Name()))...)
		}
		out = append(out, unknownItems(sm.GetUnknown(), sm.Descriptor().FullName(), string(sfd.Name()))...)
	}
	return append(out, unknownItems(cm.GetUnknown(), cm.Descriptor().FullName(), "")...)
}

// unsupportedValues returns the values of a section whose messages carry
// fields netagent lacks.
func (s *Server) unsupportedValues(sm protoreflect.Message, section string) refusals {
	var out refusals
	fields := sm.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if !fd.IsList() || fd.Message() == nil {
			continue
		}
		list := sm.Get(fd).List()
		for j := range list.Len() {
			v := list.Get(j).Message()
			unknown := unknownFieldNames(v, "")
			if len(unknown) == 0 {
				continue
			}
			r := refusal{
				place:  place(section+"."+string(fd.Name()), j),
				reason: fmt.Sprintf("fields of the original's model that netagent does not support: %s; the value is not applied", strings.Join(unknown, ", ")),
			}
			if m := s.reg.ModelOfMessage(v.Interface()); m != nil {
				r.model = m
				if key, err := m.Key(v.Interface()); err == nil {
					r.key = key
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// unknownFieldNames names the unknown fields of m and of the messages it
// holds (path.name (number)), in the order found.
func unknownFieldNames(m protoreflect.Message, path string) []string {
	var out []string
	eachField(m.GetUnknown(), func(num protowire.Number, _ protowire.Type, _ []byte) {
		name := fmt.Sprintf("field %d", num)
		if f, ok := originalFields[m.Descriptor().FullName()][num]; ok {
			name = fmt.Sprintf("%s (%d)", f.name, num)
		}
		if path != "" {
			name = path + "." + name
		}
		if len(out) == 0 || out[len(out)-1] != name {
			out = append(out, name) // a repeated field once
		}
	})
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Message() == nil || fd.IsMap() {
			return true
		}
		sub := string(fd.Name())
		if path != "" {
			sub = path + "." + sub
		}
		if fd.IsList() {
			for i := range v.List().Len() {
				out = append(out, unknownFieldNames(v.List().Get(i).Message(), place(sub, i))...)
			}
			return true
		}
		out = append(out, unknownFieldNames(v.Message(), sub)...)
		return true
	})
	return out
}

// unknownItems returns the items of the unknown fields of a container: one
// per value of a list, one per singular field; those of a section netagent
// lacks as a whole one by one.
func unknownItems(raw protoreflect.RawFields, container protoreflect.FullName, path string) refusals {
	var out refusals
	counts := map[protowire.Number]int{}
	seen := map[protowire.Number]bool{}
	eachField(raw, func(num protowire.Number, typ protowire.Type, val []byte) {
		f, known := originalFields[container][num]
		name := f.name
		if !known {
			name = fmt.Sprintf("field %d", num)
		}
		at := name
		if path != "" {
			at = path + "." + name
		}
		switch {
		case known && f.section != "" && typ == protowire.BytesType:
			out = append(out, unknownItems(val, f.section, at)...)
		case known && f.list:
			out = append(out, refusal{place: place(at, counts[num]), reason: fmt.Sprintf("%s values (the original's %s) are not supported by netagent; not applied", name, f.message)})
			counts[num]++
		case known:
			if !seen[num] { // a singular message may come in parts
				out = append(out, refusal{place: at, reason: fmt.Sprintf("%s (the original's %s) is not supported by netagent; not applied", name, f.message)})
			}
		default:
			if !seen[num] {
				out = append(out, refusal{place: at, reason: fmt.Sprintf("field %d of %s is not known to netagent; not applied", num, container)})
			}
		}
		seen[num] = true
	})
	return out
}

// eachField calls fn with each field of raw, in order: its number, wire
// type and value (a length-delimited field's contents without the length).
// It stops at the first malformed field (the unmarshaling that kept raw
// has checked it already).
func eachField(raw []byte, fn func(protowire.Number, protowire.Type, []byte)) {
	for len(raw) > 0 {
		num, typ, n := protowire.ConsumeTag(raw)
		if n < 0 {
			return
		}
		raw = raw[n:]
		n = protowire.ConsumeFieldValue(num, typ, raw)
		if n < 0 {
			return
		}
		val := raw[:n]
		if typ == protowire.BytesType {
			val, _ = protowire.ConsumeBytes(raw)
		}
		fn(num, typ, val)
		raw = raw[n:]
	}
}
