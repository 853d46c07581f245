package models

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxNameLen is the longest name (in bytes) of an item or a reference to one.
const MaxNameLen = 255

// checkName checks a logical name: 1 to MaxNameLen bytes of UTF-8, without
// spaces or control characters; "/" is allowed between non-empty segments
// other than "." and ".." (DPDK interfaces are called GigabitEthernet0/8/0),
// so a name has no leading, trailing or doubled "/".
func checkName(s string) error {
	if plainName(s) {
		return nil
	}
	return checkNameRunes(s)
}

// plainName reports whether s is a valid name of printable ASCII (the
// names of almost every value): one pass over its bytes, where
// checkNameRunes looks each rune up in Unicode's tables. False for
// anything else, valid or not: checkNameRunes decides then, and names
// the problem.
func plainName(s string) bool {
	if s == "" || len(s) > MaxNameLen {
		return false
	}
	seg := 0 // where the current segment starts
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			if c <= ' ' || c >= 0x7f {
				return false // a space, a control character, or not ASCII
			}
			if c != '/' {
				continue
			}
		}
		switch s[seg:i] {
		case "", ".", "..":
			return false
		}
		seg = i + 1
	}
	return true
}

// checkNameRunes is checkName for any string.
func checkNameRunes(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("is empty")
	case len(s) > MaxNameLen:
		return fmt.Errorf("is longer than %d bytes", MaxNameLen)
	case !utf8.ValidString(s):
		return fmt.Errorf("is not valid UTF-8")
	}
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) || !unicode.IsPrint(r) {
			return fmt.Errorf("contains %q (no spaces or control characters)", r)
		}
	}
	for seg := range strings.SplitSeq(s, "/") {
		switch seg {
		case "":
			return fmt.Errorf("has an empty segment (a leading, trailing or doubled /)")
		case ".", "..":
			return fmt.Errorf("has a segment %q", seg)
		}
	}
	return nil
}

// fieldErrors collects the invalid fields of a value.
type fieldErrors []FieldError

// FieldError is one invalid field of a value.
type FieldError struct {
	// Field is the path of the field, e.g. "ip_addresses[1]" or
	// "link.memif.ring_size".
	Field string
	// Problem says what is wrong, with the offending value.
	Problem string
}

func (e FieldError) String() string { return e.Field + ": " + e.Problem }

func (f *fieldErrors) add(field, format string, args ...any) {
	*f = append(*f, FieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
}

func (f fieldErrors) err(m *Model, key string) error {
	if len(f) == 0 {
		return nil
	}
	return &ValidationError{Model: m.Name, Key: key, Fields: f}
}

// ValidationError lists the invalid fields of a value.
type ValidationError struct {
	Model string
	// Key is the key of the value, when known.
	Key    string
	Fields []FieldError
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("invalid ")
	b.WriteString(e.Model)
	b.WriteString(" value")
	if e.Key != "" {
		fmt.Fprintf(&b, " for key %q", e.Key)
	}
	b.WriteString(": ")
	for i, fe := range e.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(fe.String())
	}
	return b.String()
}

// FieldNames returns the paths of the invalid fields.
func (e *ValidationError) FieldNames() []string {
	out := make([]string, len(e.Fields))
	for i, fe := range e.Fields {
		out[i] = fe.Field
	}
	return out
}

// name checks a required name field.
func (f *fieldErrors) name(field, v string) {
	if v == "" {
		f.add(field, "required")
	} else if err := checkName(v); err != nil {
		f.add(field, "name %q %v", v, err)
	}
}

// optName checks a name field that may be empty.
func (f *fieldErrors) optName(field, v string) {
	if v != "" {
		f.name(field, v)
	}
}

// cidr checks an address with a prefix length ("10.0.0.1/24"); host bits
// may be set.
func (f *fieldErrors) cidr(field, v string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(v)
	if err != nil || p.Addr().Zone() != "" {
		f.add(field, "%q is not an IP address with a prefix length (e.g. 10.0.0.1/24 or 2001:db8::1/64)", v)
		return netip.Prefix{}, false
	}
	return p, true
}

// notMapped refuses an IPv4-mapped IPv6 address (::ffff:a.b.c.d) where the
// Linux plugins take the IPv4 address: its key would not be the key of what
// the kernel holds (and, as a prefix, its length is of the IPv6 form).
func (f *fieldErrors) notMapped(field string, a netip.Addr) {
	if a.Is4In6() {
		f.add(field, "%s is an IPv4-mapped IPv6 address: write the IPv4 address %s", a, a.Unmap())
	}
}

// ip checks an IP address.
func (f *fieldErrors) ip(field, v string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		f.add(field, "%q is not an IP address", v)
		return netip.Addr{}, false
	}
	return a, true
}

// mac checks a 48-bit MAC address.
func (f *fieldErrors) mac(field, v string) {
	hw, err := net.ParseMAC(v)
	if err != nil || len(hw) != 6 {
		f.add(field, "%q is not a MAC address (e.g. 02:00:00:00:00:01)", v)
	}
}

// interfaceMAC checks the MAC address of an interface: a 48-bit unicast
// address other than all zeros (the kernel and VPP refuse the others, and a
// kernel that refuses it after creating the link leaves it half made).
func (f *fieldErrors) interfaceMAC(field, v string) {
	hw, err := net.ParseMAC(v)
	switch {
	case err != nil || len(hw) != 6:
		f.add(field, "%q is not a MAC address (e.g. 02:00:00:00:00:01)", v)
	case hw[0]&1 != 0:
		f.add(field, "%s is a multicast address; an interface needs a unicast one (the first byte even, e.g. 02:00:00:00:00:01)", v)
	case string(hw) == "\x00\x00\x00\x00\x00\x00":
		f.add(field, "%s is not an address an interface can have", v)
	}
}

// required reports an empty required field.
func (f *fieldErrors) required(field, v string) bool {
	if v == "" {
		f.add(field, "required")
		return false
	}
	return true
}

// canonicalIP returns the canonical text of an address (lower case, IPv6
// zeros compressed, IPv4-mapped IPv6 kept as such).
func canonicalIP(a netip.Addr) string { return a.String() }

// keyIP parses the IP address part of a key, which must be canonical.
func keyIP(part, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%s %q is not an IP address", part, s)
	}
	if a.String() != s {
		return netip.Addr{}, fmt.Errorf("%s %q is not in canonical form %q", part, s, a.String())
	}
	return a, nil
}

// keyPrefix parses "<ip>/<len>" of a key: the network address, canonical,
// with host bits clear.
func keyPrefix(part, ip, length string) (netip.Prefix, error) {
	a, err := keyIP(part, ip)
	if err != nil {
		return netip.Prefix{}, err
	}
	bits, err := strconv.Atoi(length)
	if err != nil || bits < 0 || bits > a.BitLen() {
		return netip.Prefix{}, fmt.Errorf("%s prefix length %q is not a number from 0 to %d", part, length, a.BitLen())
	}
	if canon := strconv.Itoa(bits); canon != length {
		return netip.Prefix{}, fmt.Errorf("%s prefix length %q is not in canonical form %q", part, length, canon)
	}
	p := netip.PrefixFrom(a, bits)
	if p.Masked() != p {
		return netip.Prefix{}, fmt.Errorf("%s %s has host bits set (the key holds the network address %s)", part, p, p.Masked())
	}
	return p, nil
}

// keyUint parses a decimal uint32 part of a key, without leading zeros.
func keyUint(part, s string) (uint32, error) {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a decimal number from 0 to 4294967295", part, s)
	}
	if canon := strconv.FormatUint(v, 10); canon != s {
		return 0, fmt.Errorf("%s %q is not in canonical form %q", part, s, canon)
	}
	return uint32(v), nil
}

// keyName checks a name part of a key.
func keyName(part, s string) error {
	if err := checkName(s); err != nil {
		return fmt.Errorf("%s %q %v", part, s, err)
	}
	return nil
}
