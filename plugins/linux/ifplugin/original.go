package ifplugin

import (
	"fmt"
	"strings"

	"github.com/vishvananda/netlink"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
)

// OriginalAliasPrefix starts the alias of the links the original agent
// (Ligato vpp-agent) made: "/vnf-agent/<microservice label>/", then the
// logical name and, per link type, what it refers to (originalAlias).
const OriginalAliasPrefix = "/vnf-agent/"

// originalAlias parses the alias the original agent of this agent's label
// gives a link of its own:
//
//   - veth: "<prefix><logical name>/<peer's logical name>";
//   - tuntap (TAP_TO_VPP): "<prefix><logical name>/<VPP TAP's logical
//     name>/<host name VPP gave it>";
//   - dummy: "<prefix><logical name>".
//
// It returns the logical name and the second part (the peer of a veth end,
// the VPP TAP of a TAP_TO_VPP; "" otherwise). Any other alias, another
// label's, or another link kind (the original's lo, which LOOPBACK values
// find by name anyway; its vrf devices, VRF_DEVICE values being INVALID
// here) is not the original's here (ok false). An agent without a label recognises nothing: the original always
// has one (vpp1 by default).
func (p *Plugin) originalAlias(link netlink.Link) (name, ref string, ok bool) {
	if p.originalPrefix == "" {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(link.Attrs().Alias, p.originalPrefix)
	if !ok {
		return "", "", false
	}
	parts := strings.Split(rest, "/")
	want := 0
	switch link.Type() {
	case "veth":
		want = 2
	case "tuntap", "tun":
		want = 3
	case "dummy":
		want = 1
	}
	if want == 0 || len(parts) != want || parts[0] == "" || (want > 1 && parts[1] == "") {
		return "", "", false
	}
	if want > 1 {
		ref = parts[1]
	}
	return parts[0], ref, true
}

// originals tells whether link is the link the original agent made for v:
// its alias (originalAlias) names v, and the peer of a VETH or the VPP TAP
// of a TAP_TO_VPP that v names, on a link of v's kind. Such a link is
// adopted as v (see inheritedLinks), never re-created.
func (p *Plugin) originals(link netlink.Link, v *linuxif.Interface) bool {
	name, ref, ok := p.originalAlias(link)
	if !ok || name != v.GetName() || linuxType(link) != v.GetType() {
		return false
	}
	switch v.GetType() {
	case linuxif.Interface_VETH:
		return ref == v.GetVeth().GetPeerIfName()
	case linuxif.Interface_TAP_TO_VPP:
		return ref == v.GetTap().GetVppTapIfName()
	}
	return true
}

// notThisLink explains why a link of v's name is not v's link: the error
// of a Create that finds it, non-retriable. A link that carries the
// original agent's alias of v with another peer (or VPP TAP) says so.
func (p *Plugin) notThisLink(link netlink.Link, v *linuxif.Interface, ref nsplugin.Ref, what string) error {
	attrs := link.Attrs()
	err := fmt.Errorf("a link named %s already exists in the %s and is not this %s (type %s, alias %q)", attrs.Name, ref, what, link.Type(), attrs.Alias)
	if name, ref, ok := p.originalAlias(link); ok && name == v.GetName() && ref != "" {
		err = fmt.Errorf("%w: the original agent made it for %s with %s, this value names %s; not adopted",
			err, name, ref, v.GetVeth().GetPeerIfName()+v.GetTap().GetVppTapIfName())
	}
	return api.NonRetriable(err)
}

// inheritedLinks: the logical names whose link Retrieve found carrying the
// original agent's alias (originals). The interface descriptor's
// ValueComparator reports such a value different from any other, so that
// the scheduler calls Update, which rewrites the alias to this agent's: the
// only operation the takeover executes; and the checks of whose a link is
// (owner) take the original's alias as this interface's.
//
// Retrieve sets a name when it finds the original's alias and clears it
// when it finds ours (or no link): the set follows the kernel as the last
// refresh saw it. Update does not clear it: when another value of the same
// transaction fails, the scheduler runs the transaction's algorithm again,
// replaying the calls already made, and the comparator must then answer as
// it did when the Update was planned (cleared, it would skip the Update,
// the re-run would no longer match the calls made, and the record would
// lack the rewrite). Until the next refresh, a transaction that sets the
// value again executes one more Update, which finds the alias ours and
// changes nothing; Create and Delete, after which the original's link is
// gone, clear the name.
type inheritedLinks map[string]bool

func (p *Plugin) isInherited(name string) bool {
	p.inheritedMu.Lock()
	defer p.inheritedMu.Unlock()
	return p.inherited[name]
}

func (p *Plugin) setInherited(name string, on bool) {
	p.inheritedMu.Lock()
	defer p.inheritedMu.Unlock()
	if on {
		p.inherited[name] = true
	} else {
		delete(p.inherited, name)
	}
}

// owner returns the logical name of the interface a link is the link of:
// by this agent's alias, or by the original's alias of an interface
// adopted whose alias is not rewritten yet.
func (p *Plugin) owner(link netlink.Link) (string, bool) {
	if name, ok := p.ownName(link.Attrs().Alias); ok {
		return name, true
	}
	if name, _, ok := p.originalAlias(link); ok && p.isInherited(name) {
		return name, true
	}
	return "", false
}
