package main

import "strings"

// disabledPart is a part of the agent its configuration can switch off,
// known by the names of its descriptors and the keys of its values: with
// the part off, none of its descriptors is registered, and a dump of its
// values would answer an empty list, which reads as "there are none"
// (rest.Options.Disabled answers the reason instead).
type disabledPart struct {
	reason string
	// descriptorPrefix starts the names of its descriptors ("vpp-").
	descriptorPrefix string
	// keyPrefixes start the keys of its values: the models' keys and the
	// derived and SB keys (shared/spec/models.md).
	keyPrefixes []string
}

// disabledParts are the parts the configuration switched off.
func (a *Agent) disabledParts() []disabledPart {
	var out []disabledPart
	if a.cfg.VPP.Disabled {
		out = append(out, disabledPart{
			reason:           "VPP is disabled in this agent's configuration (vpp.disabled: true, or --vpp-socket off): nothing to dump",
			descriptorPrefix: "vpp-", keyPrefixes: []string{"config/vpp/", "vpp/"},
		})
	}
	if a.cfg.Linux.Disabled {
		out = append(out, disabledPart{
			reason:           "Linux is disabled in this agent's configuration (linux.disabled: true): nothing to dump",
			descriptorPrefix: "linux-", keyPrefixes: []string{"config/linux/", "linux/"},
		})
	}
	return out
}

// disabledReason is rest.Options.Disabled: why the values of a descriptor
// or under a key prefix cannot be in this agent, "" when they can.
func (a *Agent) disabledReason(descriptor, keyPrefix string) string {
	for _, p := range a.disabledParts() {
		if descriptor != "" && strings.HasPrefix(descriptor, p.descriptorPrefix) {
			return p.reason
		}
		for _, kp := range p.keyPrefixes {
			if keyPrefix != "" && strings.HasPrefix(keyPrefix, kp) {
				return p.reason
			}
		}
	}
	return ""
}
