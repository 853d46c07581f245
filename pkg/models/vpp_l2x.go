package models

import (
	"fmt"
	"net"
	"strings"

	"google.golang.org/protobuf/proto"

	vppl2 "github.com/netagent-io/netagent/proto/vpp/l2"
)

// The L2 cross-connects and static L2 FIB entries of VPP, with the original
// agent's keys.
var (
	// VPPXConnect is a one-way L2 cross-connect of two VPP interfaces, keyed
	// by its receive interface.
	VPPXConnect = &Model{
		Name:          "vpp.l2.xconnect",
		KeyPrefix:     "config/vpp/l2/v2/xconnect/",
		KeyTemplate:   "config/vpp/l2/v2/xconnect/<receive_interface>",
		ConfigSection: "vpp_config", ConfigField: "xconnect_pairs",
		prototype: &vppl2.XConnectPair{},
		keySuffix: func(v proto.Message) (string, error) {
			return v.(*vppl2.XConnectPair).GetReceiveInterface(), nil
		},
		parseSuffix: func(s string) (KeyParts, error) {
			if err := keyName("receive interface", s); err != nil {
				return nil, err
			}
			return KeyParts{"receive_interface": s}, nil
		},
		validate: validateXConnect,
	}
	// VPPL2FIB is a static entry of a VPP bridge domain's MAC table. The MAC
	// address of its key may be written in upper case (as the original's
	// keys were: they held the value's spelling); the canonical key has it
	// in lower case.
	VPPL2FIB = &Model{
		Name:          "vpp.l2.fib",
		KeyPrefix:     "config/vpp/l2/v2/fib/",
		KeyTemplate:   "config/vpp/l2/v2/fib/<bridge_domain>/mac/<phys_address>",
		ConfigSection: "vpp_config", ConfigField: "fibs",
		prototype:       &vppl2.FIBEntry{},
		keySuffix:       l2FIBSuffix,
		parseSuffix:     parseL2FIBSuffix,
		validate:        validateL2FIB,
		canonicalSuffix: canonicalL2FIBSuffix,
	}
)

func validateXConnect(v proto.Message, errs *fieldErrors) {
	x := v.(*vppl2.XConnectPair)
	errs.name("receive_interface", x.GetReceiveInterface())
	errs.name("transmit_interface", x.GetTransmitInterface())
}

// canonicalMAC is the canonical spelling of a MAC address: lower case,
// colons.
func canonicalMAC(s string) (string, bool) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return "", false
	}
	return hw.String(), true
}

func l2FIBSuffix(v proto.Message) (string, error) {
	f := v.(*vppl2.FIBEntry)
	mac, ok := canonicalMAC(f.GetPhysAddress())
	if !ok {
		return "", fmt.Errorf("phys_address: %q is not a MAC address", f.GetPhysAddress())
	}
	return f.GetBridgeDomain() + "/mac/" + mac, nil
}

// parseL2FIBSuffix parses "<bridge_domain>/mac/<phys_address>" from its
// end (a bridge domain name may contain "/"). The MAC address is six
// colon-separated pairs of hex digits, in either case.
func parseL2FIBSuffix(s string) (KeyParts, error) {
	const want = "want <bridge_domain>/mac/<phys_address>"
	bd, mac, ok := strings.Cut(s, "/mac/")
	for ok && strings.Contains(mac, "/mac/") { // the last "/mac/"
		var rest string
		rest, mac, _ = strings.Cut(mac, "/mac/")
		bd += "/mac/" + rest
	}
	if !ok {
		return nil, fmt.Errorf("%s", want)
	}
	if err := keyName("bridge domain", bd); err != nil {
		return nil, err
	}
	if len(bd) > vppTagLen {
		return nil, fmt.Errorf("bridge domain %q is longer than %d bytes (it is the VPP tag)", bd, vppTagLen)
	}
	if len(mac) != 17 || strings.Count(mac, ":") != 5 {
		return nil, fmt.Errorf("phys_address %q is not a MAC address of the form 02:00:00:00:00:01", mac)
	}
	canon, ok := canonicalMAC(mac)
	if !ok {
		return nil, fmt.Errorf("phys_address %q is not a MAC address of the form 02:00:00:00:00:01", mac)
	}
	return KeyParts{"bridge_domain": bd, "phys_address": canon}, nil
}

// canonicalL2FIBSuffix lower-cases the MAC address of a key suffix that
// parses.
func canonicalL2FIBSuffix(s string) string {
	i := strings.LastIndex(s, "/mac/")
	return s[:i] + strings.ToLower(s[i:])
}

func validateL2FIB(v proto.Message, errs *fieldErrors) {
	f := v.(*vppl2.FIBEntry)
	checkEnums(f.ProtoReflect(), "", errs)
	errs.mac("phys_address", f.GetPhysAddress())
	errs.name("bridge_domain", f.GetBridgeDomain())
	if len(f.GetBridgeDomain()) > vppTagLen {
		errs.add("bridge_domain", "%q is longer than %d bytes (a bridge domain's name is its VPP tag)", f.GetBridgeDomain(), vppTagLen)
	}
	switch f.GetAction() {
	case vppl2.FIBEntry_FORWARD:
		if f.GetOutgoingInterface() == "" {
			errs.add("outgoing_interface", "required for a FORWARD entry")
		} else {
			errs.name("outgoing_interface", f.GetOutgoingInterface())
		}
	case vppl2.FIBEntry_DROP:
		if f.GetOutgoingInterface() != "" {
			errs.add("outgoing_interface", "a DROP entry has no outgoing interface")
		}
		if f.GetBridgedVirtualInterface() {
			errs.add("bridged_virtual_interface", "a DROP entry is not the BVI's")
		}
	}
}
