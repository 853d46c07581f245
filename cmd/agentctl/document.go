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
	var data []byte
	var err error
	name := file
	if file == "-" {
		data, err = io.ReadAll(a.stdin)
		name = "standard input"
	} else {
		data, err = os.ReadFile(file)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the configuration: %v", err)
	}
	return models.Default.ParseConfigDocument(name, data)
}
