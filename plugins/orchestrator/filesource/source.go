// Package filesource is the init-file source of the orchestrator
// (orchestrator.SourceInitFile, the lowest priority): a file of desired
// state read when the agent starts, under what etcd and gRPC clients set.
//
// # The file
//
// It is either a configuration document (YAML or JSON, grouped by model as
// in examples/veth-route.yaml; see models.Registry.ParseConfigFile) or a
// list of key/value pairs whose keys are model keys or etcd keys of this
// agent's label:
//
//   - key: config/linux/interfaces/v2/interface/veth1
//     value: {name: veth1, type: VETH, veth: {peer_if_name: veth2}}
//
// New reads and checks the whole file: an error names the file, its format,
// the line and the item, and nothing is delivered. A file the agent cannot
// use is an error of the agent's start, not a set of INVALID values.
//
// # Delivery
//
// Run hands the values to the sink's Resync once, as the source's whole
// state, and returns. The file is not watched: a changed file applies at
// the next start.
package filesource

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	yamlv3 "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// Sink receives the file's state (the *orchestrator.Orchestrator
// implements it).
type Sink interface {
	Resync(ctx context.Context, id orchestrator.SourceID, kvs []orchestrator.KV, opts api.TxnOptions) (uint64, error)
}

var _ Sink = (*orchestrator.Orchestrator)(nil)

// Source is the init file, read and checked.
type Source struct {
	path string
	kvs  []orchestrator.KV
	sink Sink
}

// New reads the file at path for the agent of label (its etcd keys are
// accepted; those of another label are an error), decoding values with reg
// (nil: models.Default), and returns the source that delivers them to
// sink.
func New(path, label string, reg *models.Registry, sink Sink) (*Source, error) {
	if reg == nil {
		reg = models.Default
	}
	kvs, err := read(path, label, reg)
	if err != nil {
		return nil, err
	}
	return &Source{path: path, kvs: kvs, sink: sink}, nil
}

// Values returns the file's values, sorted by key.
func (s *Source) Values() []orchestrator.KV { return s.kvs }

// Run delivers the file's values to the sink's Resync (with the
// orchestrator's default options) and returns its error: a transaction
// error when the resync it caused could not run, an *api.TransactionError
// without TxnInitError when some values failed.
func (s *Source) Run(ctx context.Context) error {
	_, err := s.sink.Resync(ctx, orchestrator.SourceInitFile, s.kvs, api.TxnOptions{})
	return err
}

// read reads and decodes the file.
func read(path, label string, reg *models.Registry) ([]orchestrator.KV, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("init file: %w", err)
	}
	js, err := models.YAMLToJSON(data)
	if err != nil {
		// It does not parse: the document parser says where, as for a
		// configuration document.
		if _, err := reg.ParseConfigFile(path, data); err != nil {
			return nil, fmt.Errorf("init file %w", err)
		}
		return nil, fmt.Errorf("init file %s: %w", path, err)
	}
	var out []orchestrator.KV
	if trimmed := strings.TrimSpace(string(js)); strings.HasPrefix(trimmed, "[") {
		out, err = readList(path, label, reg, data, trimmed)
		if err != nil {
			return nil, err
		}
	} else {
		kvs, err := reg.ParseConfigFile(path, data)
		if err != nil {
			return nil, fmt.Errorf("init file %w", err)
		}
		for _, kv := range kvs {
			out = append(out, orchestrator.KV{Key: kv.Key, Value: kv.Value})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// readList decodes a list of {key, value} items (js: the file as JSON).
func readList(path, label string, reg *models.Registry, data []byte, js string) ([]orchestrator.KV, error) {
	format := "YAML"
	if strings.EqualFold(filepath.Ext(path), ".json") {
		format = "JSON"
	}
	var root *yamlv3.Node
	var doc yamlv3.Node
	if yamlv3.Unmarshal(data, &doc) == nil && len(doc.Content) == 1 {
		root = doc.Content[0]
	}
	// where is "line 7: item 3": the place of an item in the list.
	where := func(i int) string {
		if line := models.DocumentLine(root, []string{strconv.Itoa(i)}); line > 0 {
			return fmt.Sprintf("line %d: item %d", line, i)
		}
		return fmt.Sprintf("item %d", i)
	}
	var items []struct {
		Key   string          `json:"key"`
		Value json.RawMessage `json:"value"`
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&items); err != nil {
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if field, ok := strings.CutPrefix(msg, "unknown field "); ok {
			field = strings.Trim(field, `"`)
			if line := keyLine(root, field); line > 0 {
				msg = fmt.Sprintf("line %d: %s: unknown field (an item has key and value)", line, field)
			}
		}
		return nil, fmt.Errorf("init file %s (%s, a list of {key, value}): %s", path, format, msg)
	}
	var out []orchestrator.KV
	var errs []error
	for i, it := range items {
		key := it.Key
		if strings.HasPrefix(key, models.EtcdPrefix) {
			l, mk, err := models.ParseEtcdKey(key)
			if err == nil && l != label {
				err = fmt.Errorf("etcd key of label %q, this agent is %q", l, label)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where(i), err))
				continue
			}
			key = mk
		}
		_, v, err := reg.DecodeValue(key, it.Value)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", where(i), err))
			continue
		}
		out = append(out, orchestrator.KV{Key: key, Value: v})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("init file %s (%s): %w", path, format, errors.Join(errs...))
	}
	return out, nil
}

// keyLine returns the line of the first key named field in the items of the
// list root (0: none).
func keyLine(root *yamlv3.Node, field string) int {
	if root == nil || root.Kind != yamlv3.SequenceNode {
		return 0
	}
	for _, item := range root.Content {
		if item.Kind != yamlv3.MappingNode {
			continue
		}
		for i := 0; i+1 < len(item.Content); i += 2 {
			if item.Content[i].Value == field {
				return item.Content[i].Line
			}
		}
	}
	return 0
}
