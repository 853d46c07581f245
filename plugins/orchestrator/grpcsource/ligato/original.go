package ligato

import (
	"google.golang.org/protobuf/reflect/protoreflect"
)

// UnsupportedFields names the fields of a value of one of netagent's models
// that netagent's message lacks (unknown fields, at any depth): the
// original's names where known ("rx_modes (12)", "sub.tag1 (5)"), else
// "field <number>". Empty when netagent supports the whole value.
func UnsupportedFields(m protoreflect.Message) []string {
	return unknownFieldNames(m, "")
}

// LackedModel tells whether a message is the model message of one of the
// original's models that netagent lacks ("ligato.vpp.acl.ACL"), and gives
// the field of the original's configuration container that lists its
// values ("vpp_config.acls").
func LackedModel(message protoreflect.FullName) (field string, ok bool) {
	for container, fields := range originalFields {
		section, isSection := sectionNames[container]
		if !isSection {
			continue
		}
		for _, f := range fields {
			if f.message == string(message) {
				return section + "." + f.name, true
			}
		}
	}
	return "", false
}

// sectionNames are the fields of the original's configuration container
// that hold its sections, by the sections' message.
var sectionNames = map[protoreflect.FullName]string{
	"ligato.vpp.ConfigData":      "vpp_config",
	"ligato.linux.ConfigData":    "linux_config",
	"ligato.netalloc.ConfigData": "netalloc_config",
}
