package grpcsource

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
)

// StateFileName is the file of the state directory that holds the change
// pending confirmation.
const StateFileName = "confirm-pending.json"

// stateVersion is the version of the state file's format.
const stateVersion = 1

// stateFile is the pending confirmation as kept in the state directory.
type stateFile struct {
	Version     int    `json:"version"`
	Seq         uint64 `json:"seq"`
	Description string `json:"description"`
	// ConfirmWithin is a Go duration ("5m0s").
	ConfirmWithin string       `json:"confirm_within"`
	Deadline      time.Time    `json:"deadline"`
	Keys          []string     `json:"keys"`
	Before        []stateValue `json:"before"`
	After         []stateValue `json:"after"`
}

// stateValue is a value of the gRPC source: its model JSON (models.
// MarshalJSON), or the reason it could not be decoded.
type stateValue struct {
	Key         string          `json:"key"`
	Value       json.RawMessage `json:"value,omitempty"`
	Note        string          `json:"note,omitempty"`
	Undecodable string          `json:"undecodable,omitempty"`
}

func (c *confirmer) path() string { return filepath.Join(c.dir, StateFileName) }

// checkWritable makes the state directory if needed and checks that a file
// can be written in it.
func (c *confirmer) checkWritable() error {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	f, err := os.CreateTemp(c.dir, ".confirm-check-*")
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	name := f.Name()
	_ = f.Close()
	return os.Remove(name)
}

// save writes p atomically (a temporary file renamed), readable by the
// agent only.
func (c *confirmer) save(p *pending) error {
	sf := stateFile{Version: stateVersion, Seq: p.Seq, Description: p.Description, ConfirmWithin: p.ConfirmWithin.String(),
		Deadline: p.Deadline.UTC(), Keys: p.Keys}
	var err error
	if sf.Before, err = encodeValues(p.before); err != nil {
		return err
	}
	if sf.After, err = encodeValues(p.after); err != nil {
		return err
	}
	data, err := json.MarshalIndent(sf, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	f, err := os.CreateTemp(c.dir, "."+StateFileName+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.path())
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// remove removes the state file (none: nothing to do).
func (c *confirmer) remove() error {
	if c.dir == "" {
		return nil
	}
	if err := os.Remove(c.path()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// moveAside renames a state file that cannot be used to <name>.bad.
func (c *confirmer) moveAside() (string, error) {
	bad := c.path() + ".bad"
	return bad, os.Rename(c.path(), bad)
}

// load reads the state file: nil when there is none; an error naming the
// problem when it cannot be read or used.
func (c *confirmer) load(reg *models.Registry) (*pending, error) {
	data, err := os.ReadFile(c.path())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var sf stateFile
	if err := json.Unmarshal(data, &sf); err != nil {
		return nil, fmt.Errorf("not the JSON of a pending confirmation: %w", err)
	}
	if sf.Version != stateVersion {
		return nil, fmt.Errorf("version %d: want %d", sf.Version, stateVersion)
	}
	within, err := time.ParseDuration(sf.ConfirmWithin)
	if err != nil || within <= 0 {
		return nil, fmt.Errorf("confirm_within %q: want a positive duration", sf.ConfirmWithin)
	}
	if sf.Deadline.IsZero() {
		return nil, errors.New("no deadline")
	}
	p := &pending{PendingChange: PendingChange{Seq: sf.Seq, Description: sf.Description, ConfirmWithin: within,
		Deadline: sf.Deadline, Keys: sf.Keys}}
	if p.before, err = decodeValues(reg, "before", sf.Before); err != nil {
		return nil, err
	}
	if p.after, err = decodeValues(reg, "after", sf.After); err != nil {
		return nil, err
	}
	return p, nil
}

func encodeValues(kvs []orchestrator.KV) ([]stateValue, error) {
	out := make([]stateValue, 0, len(kvs))
	for _, kv := range kvs {
		sv := stateValue{Key: kv.Key, Note: kv.Note}
		switch {
		case kv.Err != nil:
			sv.Undecodable = kv.Err.Error()
		case kv.Value == nil:
			continue
		default:
			if bad, ok := kv.Value.(*api.UndecodableValue); ok {
				sv.Undecodable = bad.GetReason()
				break
			}
			data, err := models.MarshalJSON(kv.Value)
			if err != nil {
				return nil, fmt.Errorf("value of %s: %w", kv.Key, err)
			}
			sv.Value = data
		}
		out = append(out, sv)
	}
	return out, nil
}

func decodeValues(reg *models.Registry, field string, svs []stateValue) ([]orchestrator.KV, error) {
	out := make([]orchestrator.KV, 0, len(svs))
	for i, sv := range svs {
		kv := orchestrator.KV{Key: sv.Key, Note: sv.Note}
		switch {
		case sv.Undecodable != "":
			kv.Err = errors.New(sv.Undecodable)
		case len(sv.Value) == 0:
			return nil, fmt.Errorf("%s[%d] (%s): no value", field, i, sv.Key)
		default:
			_, v, err := reg.DecodeValue(sv.Key, sv.Value)
			if err != nil {
				return nil, fmt.Errorf("%s[%d]: %w", field, i, err)
			}
			kv.Value = v
		}
		out = append(out, kv)
	}
	return out, nil
}
