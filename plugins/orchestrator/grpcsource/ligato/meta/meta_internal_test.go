package meta

import (
	"strings"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
)

// A model without the original's form of key prefix, or without a name
// template, is refused with its name: New fails.
func TestDetailRefusesModelsOutsideTheCatalogue(t *testing.T) {
	for _, m := range []*models.Model{
		{Name: "vpp.span", KeyPrefix: "config/vpp/v2/span/"},             // no name template
		{Name: "vpp.interfaces", KeyPrefix: "config/vpp/v2/interface/"},  // name and prefix disagree
		{Name: "vpp.interfaces", KeyPrefix: "status/vpp/v2/interfaces/"}, // not config
		{Name: "vpp.interfaces", KeyPrefix: "config/vpp/v2/interfaces"},  // no trailing "/"
		{Name: "interfaces", KeyPrefix: "config/v2/interfaces/"},         // no module
	} {
		if _, err := detail(m); err == nil || !strings.Contains(err.Error(), m.Name) {
			t.Errorf("%s under %s: %v, want an error naming the model", m.Name, m.KeyPrefix, err)
		}
	}
}
