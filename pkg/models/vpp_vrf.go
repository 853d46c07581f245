package models

import (
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	vppl3 "github.com/netagent-io/netagent/proto/vpp/l3"
)

// VPPVrfTable is a VPP IP table (VRF) of one protocol, with the original
// agent's key.
var VPPVrfTable = &Model{
	Name:          "vpp.vrf-table",
	KeyPrefix:     "config/vpp/v2/vrf-table/",
	KeyTemplate:   "config/vpp/v2/vrf-table/id/<id>/protocol/<IPV4|IPV6>",
	ConfigSection: "vpp_config", ConfigField: "vrfs",
	prototype:   &vppl3.VrfTable{},
	keySuffix:   vrfTableSuffix,
	parseSuffix: parseVrfTableSuffix,
	validate:    validateVrfTable,
}

// vrfTableLabelLen is the longest VRF table label: VPP keeps a table's
// name in 64 bytes, NUL included.
const vrfTableLabelLen = 63

// VrfTableKey returns the key of the VRF table of that id and protocol
// (ipv6 false: IPv4), the key values that need the table depend on.
func VrfTableKey(id uint32, ipv6 bool) string {
	return VPPVrfTable.KeyPrefix + vrfTableKeySuffix(id, ipv6)
}

func vrfTableKeySuffix(id uint32, ipv6 bool) string {
	p := vppl3.VrfTable_IPV4
	if ipv6 {
		p = vppl3.VrfTable_IPV6
	}
	return "id/" + strconv.FormatUint(uint64(id), 10) + "/protocol/" + p.String()
}

func vrfTableSuffix(v proto.Message) (string, error) {
	t := v.(*vppl3.VrfTable)
	return vrfTableKeySuffix(t.GetId(), t.GetProtocol() == vppl3.VrfTable_IPV6), nil
}

// parseVrfTableSuffix parses "id/<id>/protocol/<IPV4|IPV6>".
func parseVrfTableSuffix(s string) (KeyParts, error) {
	segs := strings.Split(s, "/")
	if len(segs) != 4 || segs[0] != "id" || segs[2] != "protocol" {
		return nil, fmt.Errorf("want id/<id>/protocol/<IPV4|IPV6>")
	}
	id, err := keyUint("id", segs[1])
	if err != nil {
		return nil, err
	}
	if _, ok := vppl3.VrfTable_Protocol_value[segs[3]]; !ok {
		return nil, fmt.Errorf("protocol %q is not IPV4 or IPV6", segs[3])
	}
	return KeyParts{"id": strconv.FormatUint(uint64(id), 10), "protocol": segs[3]}, nil
}

func validateVrfTable(v proto.Message, errs *fieldErrors) {
	t := v.(*vppl3.VrfTable)
	checkEnums(t.ProtoReflect(), "", errs)
	if t.GetId() == ^uint32(0) {
		errs.add("id", "4294967295 is VPP's \"no table\" (~0), not a table id")
	}
	if len(t.GetLabel()) > vrfTableLabelLen {
		errs.add("label", "%q is longer than %d bytes (VPP keeps a table's name in 64 bytes)", t.GetLabel(), vrfTableLabelLen)
	}
	for _, r := range t.GetLabel() {
		if r < ' ' || r == 0x7f {
			errs.add("label", "%q contains control characters", t.GetLabel())
			break
		}
	}
}
