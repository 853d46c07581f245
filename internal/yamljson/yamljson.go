// Package yamljson converts the YAML documents people write by hand or
// generate (block mappings and sequences, one-line flow collections, plain
// and one-line quoted scalars, comments) to JSON in one pass, about ten
// times faster than decoding them with the YAML library into Go values and
// encoding those as JSON.
//
// It reads a subset of YAML and knows exactly what it reads: a document
// with anything else (anchors, aliases, tags, block scalars, multi-line
// scalars or flow collections, tabs, complex keys, a duplicate key, a float
// or a timestamp, a key that is not a string...) is not converted (ok
// false) and the caller reads it with the YAML library, which also gives
// the error of a broken document. What it converts means what
// sigs.k8s.io/yaml's YAMLToJSONStrict makes of the same document (YAML 1.1
// as go-yaml v2 resolves plain scalars: yes/no/on/off are booleans, 0x1f
// and 0755 integers): the tests and the fuzz target compare the two.
package yamljson

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxDepth bounds the nesting this reader follows (deeper: the library's).
const maxDepth = 200

// maxKey bounds a key's text, quotes included: YAML looks for the ":" of
// a key without "?" within 1,024 characters of its start.
const maxKey = 1000

// Convert returns the JSON form of a YAML document, or ok false when the
// document is outside the subset this package reads (see the package
// documentation): the caller then reads it with the YAML library.
func Convert(data []byte) (js []byte, ok bool) {
	lines, ok := splitLines(data)
	if !ok || len(lines) == 0 {
		return nil, false
	}
	p := &parser{lines: lines, col: lines[0].indent, out: make([]byte, 0, len(data)+len(data)/4)}
	defer func() {
		if r := recover(); r != nil {
			if _, bail := r.(outside); !bail {
				panic(r)
			}
			js, ok = nil, false
		}
	}()
	p.block(0)
	if p.i != len(p.lines) {
		return nil, false
	}
	return p.out, true
}

// outside is the panic that unwinds the parser from a construct outside
// the subset (recovered by Convert).
type outside struct{}

func bail() { panic(outside{}) }

// line is a line with content (not blank, not only a comment).
type line struct {
	indent int
	text   string // the whole line, without its line break
}

// splitLines checks the document's characters and returns its lines with
// content. Refused: invalid UTF-8, what YAML does not allow in a document
// (control characters, C1 ones included, U+FFFE, U+FFFF), a byte order
// mark, tabs, carriage returns, the line breaks YAML 1.1 adds to \n (NEL,
// LS, PS), directives, a document end or a second document.
func splitLines(data []byte) ([]line, bool) {
	if !utf8.Valid(data) {
		return nil, false
	}
	for i := 0; i < len(data); {
		c := data[i]
		if c < 0x80 {
			if (c < 0x20 && c != '\n') || c == 0x7f {
				return nil, false
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r <= 0x9f: // C1 controls, NEL (a line break in YAML 1.1) among them
			return nil, false
		case r == 0x2028 || r == 0x2029: // LS, PS
			return nil, false
		case r == 0xfeff || r == 0xfffe || r == 0xffff: // a byte order mark, non-characters
			return nil, false
		}
		i += size
	}
	s := string(data)
	lines := make([]line, 0, strings.Count(s, "\n")+1)
	first := true
	for len(s) > 0 {
		text := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			text, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		indent := 0
		for indent < len(text) && text[indent] == ' ' {
			indent++
		}
		rest := text[indent:]
		if rest == "" || rest[0] == '#' {
			continue
		}
		if indent == 0 {
			switch {
			case rest[0] == '%':
				return nil, false
			case marker(rest, "---"):
				if !first || strings.TrimRight(rest, " ") != "---" {
					return nil, false
				}
				first = false
				continue
			case marker(rest, "..."):
				return nil, false
			}
		}
		first = false
		lines = append(lines, line{indent: indent, text: text})
	}
	return lines, true
}

// marker tells whether a line starts with a document marker (--- or ...)
// followed by a blank or its end.
func marker(s, m string) bool {
	return strings.HasPrefix(s, m) && (len(s) == 3 || s[3] == ' ')
}

type parser struct {
	lines []line
	i     int // the current line
	col   int // where the current node starts on it
	depth int
	out   []byte
}

// next moves to the next line, at its indentation.
func (p *parser) next() {
	p.i++
	if p.i < len(p.lines) {
		p.col = p.lines[p.i].indent
	}
}

// rest is the current line from the current column.
func (p *parser) rest() string { return p.lines[p.i].text[p.col:] }

// more tells whether there is a current line.
func (p *parser) more() bool { return p.i < len(p.lines) }

func (p *parser) enter() {
	if p.depth++; p.depth > maxDepth {
		bail()
	}
}

// block reads the node that starts at the current column: a block
// sequence, a block mapping, or a node on one line. A node on one line
// must be the last thing at an indentation above parent's.
func (p *parser) block(parent int) {
	p.enter()
	defer func() { p.depth-- }()
	s := p.rest()
	switch {
	case seqEntry(s):
		p.sequence(p.col)
	case isKey(s):
		p.mapping(p.col)
	default:
		p.inline(s)
		p.next()
		if p.more() && p.col > parent {
			bail() // a continuation line, or an error the library names
		}
	}
}

// seqEntry tells whether s starts a block sequence entry ("-" followed by
// a blank or the end of the line).
func seqEntry(s string) bool {
	return len(s) > 0 && s[0] == '-' && (len(s) == 1 || s[1] == ' ')
}

// sequence reads the entries of a block sequence at indentation n.
func (p *parser) sequence(n int) {
	p.out = append(p.out, '[')
	for first := true; p.more() && p.col == n && seqEntry(p.rest()); first = false {
		if !first {
			p.out = append(p.out, ',')
		}
		after := p.rest()[1:]
		s := strings.TrimLeft(after, " ")
		if s == "" || s[0] == '#' {
			p.next()
			if p.more() && p.col > n {
				p.block(n)
			} else {
				p.out = append(p.out, "null"...)
			}
			continue
		}
		if seqEntry(s) {
			bail() // "- - a": a compact nested sequence
		}
		p.col += 1 + len(after) - len(s)
		p.block(n)
	}
	if p.more() && p.col > n {
		bail()
	}
	p.out = append(p.out, ']')
}

// isKey tells whether s starts with a mapping key: a plain scalar or a
// quoted one followed by ":" and a blank or the end of the line.
func isKey(s string) bool {
	_, _, ok := splitKey(s)
	return ok
}

// splitKey splits "key: rest" into the key's raw text (with its quotes)
// and what follows the ":" (ok false: not a key).
func splitKey(s string) (key, rest string, ok bool) {
	if s == "" {
		return "", "", false
	}
	if s[0] == '"' || s[0] == '\'' {
		_, after, qok := quoted(s)
		if !qok || len(after) == 0 || after[0] != ':' || (len(after) > 1 && after[1] != ' ') {
			return "", "", false
		}
		return s[:len(s)-len(after)], after[1:], true
	}
	if !plainStart(s) {
		return "", "", false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '#':
			if i > 0 && s[i-1] == ' ' {
				return "", "", false // a comment before any ':'
			}
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				return s[:i], s[i+1:], true
			}
		}
	}
	return "", "", false
}

// mapping reads the entries of a block mapping at indentation n.
func (p *parser) mapping(n int) {
	p.out = append(p.out, '{')
	var seen keySet
	for first := true; p.more() && p.col == n; first = false {
		raw, rest, ok := splitKey(p.rest())
		if !ok {
			bail()
		}
		key := keyString(raw)
		seen.add(key)
		if !first {
			p.out = append(p.out, ',')
		}
		p.out = appendString(p.out, key)
		p.out = append(p.out, ':')
		value := strings.TrimLeft(rest, " ")
		if value == "" || value[0] == '#' {
			p.next()
			switch {
			case p.more() && p.col > n:
				p.block(n)
			case p.more() && p.col == n && seqEntry(p.rest()):
				p.sequence(n) // a sequence may sit at its key's indentation
			default:
				p.out = append(p.out, "null"...)
			}
			continue
		}
		if seqEntry(value) || isKey(value) {
			bail() // "a: - b", "a: b: c": errors the library names
		}
		p.inline(value)
		p.next()
	}
	if p.more() && p.col > n {
		bail()
	}
	p.out = append(p.out, '}')
}

// keySet holds the keys of a mapping: a duplicate is refused (the library
// names it). Small mappings are searched, larger ones hashed.
type keySet struct {
	few  [16]string
	n    int
	many map[string]struct{}
}

func (k *keySet) add(key string) {
	if k.many == nil {
		for _, f := range k.few[:k.n] {
			if f == key {
				bail()
			}
		}
		if k.n < len(k.few) {
			k.few[k.n] = key
			k.n++
			return
		}
		k.many = make(map[string]struct{}, 2*len(k.few))
		for _, f := range k.few {
			k.many[f] = struct{}{}
		}
	}
	if _, dup := k.many[key]; dup {
		bail()
	}
	k.many[key] = struct{}{}
}

// keyString is the string a mapping key's raw text stands for; a plain key
// that does not resolve to a string (true, 1, null, <<) is refused.
func keyString(raw string) string {
	if raw == "" {
		bail() // a null key
	}
	if len(raw) > maxKey {
		bail() // past what YAML allows of a key without "?"
	}
	if raw[0] == '"' || raw[0] == '\'' {
		s, _, _ := quoted(raw)
		return s
	}
	if raw[len(raw)-1] == ' ' || !plainStart(raw) || raw == "<<" {
		bail()
	}
	if kind, _ := resolve(raw); kind != kindString {
		bail()
	}
	return raw
}

// plainStart tells whether s may start a plain scalar (the indicators that
// cannot, and '-', '?' and ':' followed by a blank).
func plainStart(s string) bool {
	switch s[0] {
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '-', '?', ':':
		return len(s) > 1 && s[1] != ' '
	}
	return true
}

// inline reads a node that is the rest of the line s: a flow collection,
// a quoted scalar or a plain scalar, then at most a comment.
func (p *parser) inline(s string) {
	var after string
	switch s[0] {
	case '{', '[':
		after = p.flow(s)
	case '"', '\'':
		v, a, ok := quoted(s)
		if !ok {
			bail()
		}
		p.out = appendString(p.out, v)
		after = a
	default:
		if !plainStart(s) {
			bail()
		}
		end := len(s)
		for i := 0; i < len(s); i++ {
			if s[i] == '#' && i > 0 && s[i-1] == ' ' {
				end = i
				break
			}
			if s[i] == ':' && (i+1 == len(s) || s[i+1] == ' ') {
				bail()
			}
		}
		p.scalar(strings.TrimRight(s[:end], " "))
		return
	}
	if t := strings.TrimLeft(after, " "); t != "" && (t[0] != '#' || len(t) == len(after)) {
		bail() // something after the node, or a comment without a blank before it
	}
}

// flow reads a one-line flow collection at the start of s and returns what
// follows it.
func (p *parser) flow(s string) string {
	p.enter()
	defer func() { p.depth-- }()
	open, closing := s[0], byte('}')
	if open == '[' {
		closing = ']'
	}
	p.out = append(p.out, open)
	s = strings.TrimLeft(s[1:], " ")
	if s != "" && s[0] == closing {
		p.out = append(p.out, closing)
		return s[1:]
	}
	var seen keySet
	for first := true; ; first = false {
		if !first {
			p.out = append(p.out, ',')
		}
		if open == '{' {
			var key string
			key, s = p.flowKey(s)
			seen.add(key)
			p.out = appendString(p.out, key)
			p.out = append(p.out, ':')
		}
		s = p.flowNode(s)
		s = strings.TrimLeft(s, " ")
		if s == "" {
			bail() // continued on the next line
		}
		switch s[0] {
		case ',':
			s = strings.TrimLeft(s[1:], " ")
			if s == "" || s[0] == closing {
				bail() // a trailing comma, or the next line
			}
		case closing:
			p.out = append(p.out, closing)
			return s[1:]
		default:
			bail()
		}
	}
}

// flowKey reads "key: " in a flow mapping and returns the key and what
// follows the ": ".
func (p *parser) flowKey(s string) (string, string) {
	var key, after string
	if s != "" && (s[0] == '"' || s[0] == '\'') {
		k, a, ok := quoted(s)
		if !ok {
			bail()
		}
		key, after = k, a
	} else {
		raw, a := flowPlain(s, true)
		key, after = keyString(raw), a
	}
	if len(after) < 2 || after[0] != ':' || after[1] != ' ' {
		bail() // no value, "k:v", or spaces before the ':'
	}
	return key, strings.TrimLeft(after[1:], " ")
}

// flowNode reads a node in a flow collection and returns what follows.
func (p *parser) flowNode(s string) string {
	if s == "" {
		bail()
	}
	switch s[0] {
	case '{', '[':
		return p.flow(s)
	case '"', '\'':
		v, after, ok := quoted(s)
		if !ok {
			bail()
		}
		p.out = appendString(p.out, v)
		return after
	}
	raw, after := flowPlain(s, false)
	if after != "" && after[0] == ':' {
		bail() // "[a: b]", "{a: b: c}"
	}
	p.scalar(raw)
	return after
}

// flowPlain reads a plain scalar in a flow collection: up to a flow
// indicator, ": " or a comment; a ':' inside must be followed by a
// character that is none of those.
func flowPlain(s string, key bool) (raw, after string) {
	if s == "" || !plainStart(s) || s[0] == ':' || s[0] == '?' {
		bail() // in a flow collection ':' and '?' are indicators wherever a node starts
	}
	i := 0
loop:
	for ; i < len(s); i++ {
		switch s[i] {
		case ',', '[', ']', '{', '}', '?':
			break loop
		case '#':
			if i > 0 && s[i-1] == ' ' {
				bail() // a comment inside a one-line collection
			}
		case ':':
			if i+1 == len(s) || s[i+1] == ' ' {
				break loop
			}
			switch s[i+1] {
			case ',', '[', ']', '{', '}', '#':
				bail()
			}
		}
	}
	if i < len(s) && s[i] == '?' {
		bail()
	}
	raw = strings.TrimRight(s[:i], " ")
	if raw == "" || (key && len(raw) != i) {
		bail()
	}
	return raw, s[len(raw):]
}

// quoted reads a quoted scalar that closes on this line and returns its
// value and what follows the closing quote.
func quoted(s string) (value, after string, ok bool) {
	if s[0] == '\'' {
		var b []byte
		for i := 1; i < len(s); i++ {
			if s[i] != '\'' {
				continue
			}
			if i+1 < len(s) && s[i+1] == '\'' {
				b = append(b, s[1:i+1]...)
				s = s[i+1:]
				i = 0
				continue
			}
			if b == nil {
				return s[1:i], s[i+1:], true
			}
			return string(append(b, s[1:i]...)), s[i+1:], true
		}
		return "", "", false
	}
	var b []byte
	start := 1
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '"':
			if b == nil {
				return s[start:i], s[i+1:], true
			}
			return string(append(b, s[start:i]...)), s[i+1:], true
		case '\\':
			if i+1 == len(s) {
				return "", "", false
			}
			b = append(b, s[start:i]...)
			n := 2
			switch e := s[i+1]; e {
			case '\\', '"':
				b = append(b, e)
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'r':
				b = append(b, '\r')
			case '0':
				b = append(b, 0)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'u':
				if i+6 > len(s) {
					return "", "", false
				}
				r, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
				if err != nil || (r >= 0xd800 && r < 0xe000) {
					return "", "", false
				}
				b = utf8.AppendRune(b, rune(r))
				n = 6
			default:
				return "", "", false
			}
			i += n - 1
			start = i + 1
		}
	}
	return "", "", false
}

// kind is what a plain scalar resolves to.
type kind int

const (
	kindString kind = iota
	kindNull
	kindBool
	kindInt
)

// resolve resolves a plain scalar as go-yaml v2 does (its resolve, tag
// ""); what this package does not convert (floats, timestamps, binary
// integers) is refused. For kindBool value is "true" or "false", for
// kindInt the integer in decimal.
func resolve(s string) (kind, string) {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return kindNull, "null"
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return kindBool, "true"
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return kindBool, "false"
	case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
		bail()
	}
	switch c := s[0]; {
	case c == '.':
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			bail()
		}
	case c == '+' || c == '-' || (c >= '0' && c <= '9'):
		if len(s) > 4 && s[4] == '-' && digits(s[:4]) {
			bail() // may be a timestamp
		}
		if !numeric(s) {
			break // strconv would refuse it (and allocate its error)
		}
		plain := strings.ReplaceAll(s, "_", "")
		if v, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return kindInt, strconv.FormatInt(v, 10)
		}
		if v, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return kindInt, strconv.FormatUint(v, 10)
		}
		if yamlFloat(plain) || strings.HasPrefix(plain, "0b") || strings.HasPrefix(plain, "-0b") {
			bail()
		}
	}
	return kindString, s
}

// numeric tells whether s may be one of go-yaml v2's integers or floats:
// only their characters (digits, signs, prefixes, exponents, '_', '.'),
// at most one '.' (an IPv4 address is none of them).
func numeric(s string) bool {
	dots := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		case c == 'x', c == 'X', c == 'o', c == 'O', c == '_', c == '+', c == '-':
		case c == '.':
			if dots++; dots > 1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// yamlFloat tells whether s is of the form go-yaml v2 reads as a float:
// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
func yamlFloat(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	intDigits := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
		intDigits++
	}
	if i < len(s) && s[i] == '.' {
		i++
		frac := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			frac++
		}
		if intDigits == 0 && frac == 0 {
			return false
		}
	} else if intDigits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		exp := 0
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
			exp++
		}
		if exp == 0 {
			return false
		}
	}
	return i == len(s)
}

// scalar writes a plain scalar as JSON.
func (p *parser) scalar(s string) {
	switch k, v := resolve(s); k {
	case kindString:
		p.out = appendString(p.out, v)
	default:
		p.out = append(p.out, v...)
	}
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\t':
			b = append(b, '\\', 't')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
