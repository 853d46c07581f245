package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"

	configpb "github.com/netagent-io/netagent/proto/config"
)

// ParseConfigFile is ParseConfig for the document of a file (name: its path,
// or "standard input"): its errors are ConfigFileError's.
func (r *Registry) ParseConfigFile(name string, data []byte) ([]KV, error) {
	kvs, err := r.ParseConfig(data)
	if err != nil {
		return nil, ConfigFileError(name, data, err)
	}
	return kvs, nil
}

// ParseConfigDocument reads a configuration document (see ParseConfig) into
// the Config message that carries it and its values (the message's own
// items, in the order ParseConfig gives), with ParseConfigFile's checks and
// errors. The whole document is decoded at once (protojson, after the YAML
// parser for YAML), then its items are checked (ConfigKVs): twice as fast
// as ParseConfig followed by BuildConfig (10,000 routes in JSON: 58 ms
// against 115 ms).
// A document that fails there is read again by ParseConfigFile, so the
// errors name the item, its place and its line as they always did.
func (r *Registry) ParseConfigDocument(name string, data []byte) (*configpb.Config, []KV, error) {
	if cfg, ok := r.DecodeConfigDocument(name, data); ok {
		if kvs, err := r.ConfigKVs(cfg); err == nil {
			return cfg, kvs, nil
		}
	}
	// The item by item reading explains what is wrong; what it accepts
	// (null for the whole document, say) is taken as it reads it.
	kvs, slowErr := r.ParseConfigFile(name, data)
	if slowErr != nil {
		return nil, nil, slowErr
	}
	cfg, err := r.BuildConfig(kvs)
	if err != nil {
		return nil, nil, ConfigFileError(name, data, err)
	}
	return cfg, kvs, nil
}

// DecodeConfigDocument is the quick part of ParseConfigDocument: the
// document (JSON or YAML, see ParseConfigDocument) decoded in one pass,
// its items not checked (ConfigKVs does). false: it cannot be decoded so;
// ParseConfigDocument then says why and where.
func (r *Registry) DecodeConfigDocument(name string, data []byte) (*configpb.Config, bool) {
	js := data
	if documentFormat(name, data) != "JSON" {
		var err error
		if js, err = YAMLToJSON(data); err != nil {
			return nil, false
		}
	}
	cfg := &configpb.Config{}
	if err := UnmarshalJSON(js, cfg); err != nil {
		return nil, false
	}
	return cfg, true
}

// documentFormat is the format of a configuration document: JSON for a
// .json file or one that starts with "{", YAML otherwise.
func documentFormat(name string, data []byte) string {
	if strings.EqualFold(filepath.Ext(name), ".json") || bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return "JSON"
	}
	return "YAML"
}

var (
	// errPlace is an error of ParseConfig about one place of the
	// document: "vpp_config.interfaces[0]: ...", "bogus_config: ...".
	errPlace = regexp.MustCompile(`^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\[\d+\])?): (.*)$`)
	// errLine is an error of the YAML parser: "yaml: line 3: ...", and the
	// lines of its "unmarshal errors" ("  line 4: key "name" already set").
	errLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	// decoderPosition is protojson's prefix and position, in the JSON of
	// one item that agentctl made from the document, not in the document
	// (protojson puts a space or a no-break space after "proto:").
	decoderPosition = regexp.MustCompile(`^proto:[\s\x{a0}]*(?:\(line \d+:\d+\):[\s\x{a0}]*)?`)
	// errField finds the field an item's error is about: protojson's
	// `unknown field "x"` and `invalid value for enum field x:`, the
	// models' `invalid vpp.interfaces value: ip_addresses[0]: ...`.
	errField = []*regexp.Regexp{
		regexp.MustCompile(`unknown field "(\w+)"`),
		regexp.MustCompile(`\bfield (\w+):`),
		regexp.MustCompile(`^invalid [\w.]+ value: (\w+)(?:\[(\d+)\])?:`),
	}
)

// ConfigFileError rewrites an error of ParseConfig or BuildConfig for the
// document of a file (name; "standard input", say): it names the document
// and its format, gives each error the line of the item or field it is
// about when the document has it, and drops what the decoders add
// ("configuration document:", "yaml:", protojson's "proto: (line 1:21):",
// whose position is in the JSON of one item, not in the document).
func ConfigFileError(name string, data []byte, err error) error {
	format := documentFormat(name, data)
	var root *yamlv3.Node
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	var out []string
	for _, msg := range strings.Split(err.Error(), "\n") {
		msg = strings.TrimSpace(msg)
		// The document's own errors (it does not parse) carry this prefix;
		// the errors of its places do not.
		msg, whole := strings.CutPrefix(msg, "configuration document: ")
		msg = strings.TrimSpace(msg)
		switch {
		case msg == "" || msg == "yaml: unmarshal errors:":
			continue
		case format == "JSON" && strings.HasPrefix(msg, "yaml: ") && !json.Valid(data):
			out = append(out, jsonSyntaxError(data))
			continue
		}
		if m := errLine.FindStringSubmatch(msg); m != nil {
			out = append(out, "line "+m[1]+": "+m[2])
			continue
		}
		m := errPlace.FindStringSubmatch(msg)
		if m == nil || (whole && strings.HasPrefix(msg, "yaml: ")) {
			out = append(out, strings.TrimPrefix(msg, "yaml: "))
			continue
		}
		place, text := m[1], decoderPosition.ReplaceAllString(m[2], "")
		path := placePath(place)
		for _, re := range errField {
			if f := re.FindStringSubmatch(text); f != nil {
				path = append(path, f[1])
				if len(f) > 2 && f[2] != "" {
					path = append(path, f[2])
				}
				break
			}
		}
		if line := DocumentLine(root, path); line > 0 {
			out = append(out, fmt.Sprintf("line %d: %s: %s", line, place, text))
		} else {
			out = append(out, place+": "+text)
		}
	}
	return fmt.Errorf("%s (%s): %s", name, format, strings.Join(out, "\n"))
}

// jsonSyntaxError is the syntax error of a JSON document with its line and
// column.
func jsonSyntaxError(data []byte) string {
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return strings.TrimPrefix(fmt.Sprint(err), "json: ")
	}
	// The end of the input is where its content ends, not after the last
	// newline. Offset counts the bytes read, the wrong one included.
	content := bytes.TrimRight(data, " \t\r\n")
	before := content[:min(int(se.Offset), len(content))]
	line := bytes.Count(before, []byte("\n")) + 1
	if int(se.Offset) > len(content) || strings.HasPrefix(se.Error(), "unexpected end") {
		return fmt.Sprintf("line %d: %s", line, se.Error())
	}
	column := len(before) - bytes.LastIndexByte(before, '\n') - 1
	return fmt.Sprintf("line %d, column %d: %s", line, column, se.Error())
}

// placePath splits a place of the document ("vpp_config.interfaces[0]")
// into the names and indexes that lead to it.
func placePath(place string) []string {
	var path []string
	for _, part := range strings.Split(place, ".") {
		name, index, indexed := strings.Cut(part, "[")
		path = append(path, name)
		if indexed {
			path = append(path, strings.TrimSuffix(index, "]"))
		}
	}
	return path
}

// nodeLine returns the line of the node a path leads to in a YAML (or JSON)
// document (for a mapping entry, the line of its key), or of the deepest
// node it reaches; 0 when it reaches none. Names match a key in any of the
// spellings the codec accepts (vpp_config, vppConfig).
func DocumentLine(n *yamlv3.Node, path []string) int {
	line := 0
	for _, step := range path {
		if n == nil {
			break
		}
		var next *yamlv3.Node
		switch n.Kind {
		case yamlv3.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if sameName(n.Content[i].Value, step) {
					line, next = n.Content[i].Line, n.Content[i+1]
					break
				}
			}
		case yamlv3.SequenceNode:
			if i, err := strconv.Atoi(step); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
				line = next.Line
			}
		}
		n = next
	}
	return line
}

// sameName tells whether two field names are spellings of one: the proto
// name (ip_addresses) and the JSON name (ipAddresses).
func sameName(a, b string) bool {
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	return norm(a) == norm(b)
}
