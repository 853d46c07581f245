package vppconn

import "runtime/debug"

// TargetVPP is the VPP release whose binary API the plugins are built
// against: GoVPP's bindings (GoVPPModule, v0.13.0) were generated from
// VPP 25.10. Another VPP works as far as the messages of the plugins'
// areas match, which the Manager checks at every connect.
const TargetVPP = "25.10"

// GoVPPModule is the module of GoVPP, whose bindings the plugins use.
const GoVPPModule = "go.fd.io/govpp"

// GoVPPVersion is the version of GoVPP built into the binary ("" when the
// binary has no module information).
func GoVPPVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == GoVPPModule {
			if d.Replace != nil {
				return d.Replace.Version
			}
			return d.Version
		}
	}
	return ""
}
