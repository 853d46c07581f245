package main

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
)

// redacted is how a set Secret prints.
const redacted = "(set)"

// Secret is a value that is never printed: the token. Every way of showing
// it — the fmt verbs (%v, %+v, %#v, %s, %q, %x...) directly or as a field,
// slog (LogValuer) and JSON — gives "(set)" when it is set and "" when not,
// whatever characters it holds. Reveal returns it, for the places that
// compare it or send it. The value sits behind a pointer, so that even a
// Secret in an unexported field, which fmt prints without calling its
// methods, shows as an address.
type Secret struct {
	value *string
}

// NewSecret returns a Secret holding s (an empty one when s is "").
func NewSecret(s string) Secret {
	if s == "" {
		return Secret{}
	}
	return Secret{value: &s}
}

// IsSet tells whether the Secret holds a value.
func (s Secret) IsSet() bool { return s.value != nil }

// Reveal returns the value ("" when not set).
func (s Secret) Reveal() string {
	if s.value == nil {
		return ""
	}
	return *s.value
}

// Matches tells, in constant time, whether presented is the value. An
// unset Secret matches nothing.
func (s Secret) Matches(presented string) bool {
	return s.IsSet() && subtle.ConstantTimeCompare([]byte(presented), []byte(*s.value)) == 1
}

// String returns "(set)" or "".
func (s Secret) String() string {
	if s.IsSet() {
		return redacted
	}
	return ""
}

// Format implements fmt.Formatter: every verb prints String.
func (s Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		fmt.Fprintf(f, "%q", s.String())
		return
	}
	_, _ = io.WriteString(f, s.String())
}

// GoString implements fmt.GoStringer (Format takes precedence in fmt; this
// covers direct callers).
func (s Secret) GoString() string { return s.String() }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON shows "(set)" or "".
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText shows "(set)" or "" (for encoders that prefer text).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalJSON reads the value from the configuration file: a string;
// null changes nothing. Another kind, a number included (YAML would have
// dropped a leading zero: the token must be quoted), is an
// *json.UnmarshalTypeError that names the kind only, never the content.
func (s *Secret) UnmarshalJSON(b []byte) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	var kind string
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		*s = NewSecret(v)
		return nil
	case json.Number:
		kind = "number"
	case bool:
		kind = "bool"
	case []any:
		kind = "array"
	default:
		kind = "object"
	}
	return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeOf("")}
}
