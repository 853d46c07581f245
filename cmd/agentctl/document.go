package main

import (
	"fmt"
	"io"
	"os"

	"github.com/netagent-io/netagent/pkg/models"
	configpb "github.com/netagent-io/netagent/proto/config"
)

// readDocument reads and parses a configuration document ("-": stdin) and
// returns it with its values. Its errors name the file, its format and,
// where the document tells, the line (models.ConfigFileError).
func (a *app) readDocument(file string) (*configpb.Config, []models.KV, error) {
	name, data, err := a.documentData(file)
	if err != nil {
		return nil, nil, err
	}
	return models.Default.ParseConfigDocument(name, data)
}

// documentData reads a configuration document ("-": stdin) and names it.
func (a *app) documentData(file string) (name string, data []byte, err error) {
	name = file
	if file == "-" {
		data, err = io.ReadAll(a.stdin)
		name = "standard input"
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return "", nil, fmt.Errorf("reading the configuration: %v", err)
	}
	return name, data, nil
}

// changeDocument is a configuration document read for a change (config
// update, config delete): the Config to send, read at once, and its values,
// whose keys and checks (models.Registry.ConfigKVs, ~1.5 us an item) are
// worked out while the request goes to the agent, which checks the same
// again. A document the quick reading refuses is read item by item at once,
// for an error that names the place.
type changeDocument struct {
	cfg   *configpb.Config
	items int // models.CountConfigItems
	done  chan struct{}
	kvs   []models.KV
	err   error
}

// readChangeDocument reads a configuration document ("-": stdin) for a
// change; its errors are those of readDocument.
func (a *app) readChangeDocument(file string) (*changeDocument, error) {
	name, data, err := a.documentData(file)
	if err != nil {
		return nil, err
	}
	d := &changeDocument{done: make(chan struct{})}
	cfg, ok := models.Default.DecodeConfigDocument(name, data)
	if !ok {
		defer close(d.done)
		if d.cfg, d.kvs, err = models.Default.ParseConfigDocument(name, data); err != nil {
			return nil, err
		}
		d.items = len(d.kvs)
		return d, nil
	}
	d.cfg, d.items = cfg, models.CountConfigItems(cfg)
	go func() {
		defer close(d.done)
		if d.kvs, d.err = models.Default.ConfigKVs(cfg); d.err != nil {
			// The item by item reading says where.
			_, _, d.err = models.Default.ParseConfigDocument(name, data)
			if d.err == nil {
				d.err = fmt.Errorf("%s: the document's items are not all valid", name)
			}
		}
	}()
	return d, nil
}

// values waits for the document's values (keys checked) and returns them.
func (d *changeDocument) values() ([]models.KV, error) {
	<-d.done
	return d.kvs, d.err
}

// warnAccepted says that the agent took a document agentctl's own check
// refuses (an agent of another version, whose models differ).
func (a *app) warnAccepted(err error) {
	fmt.Fprintf(a.stderr, "warning: the agent accepted the document, but agentctl's check of it says: %v\n", err)
}
