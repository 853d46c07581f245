package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/pkg/models"
	vppif "github.com/netagent-io/netagent/proto/vpp/interfaces"
)

// TestE2EDumpOfADisabledPart: an agent with VPP disabled answers a dump of
// VPP's values (by key prefix, descriptor or model name, in the SB and
// cached views, for our clients and the original's) with 409 saying VPP is
// disabled, not with an empty list that reads as "there are none"; the NB
// view of a key prefix lists the values the NB asks for. An unknown
// descriptor is 404 naming the registered ones; an unknown or ambiguous
// model name is 400 naming the candidates; a model by any of its names
// dumps under the model's key prefix.
func TestE2EDumpOfADisabledPart(t *testing.T) {
	cfg := testConfig(t) // VPP disabled
	cfg.Linux.Disabled = os.Geteuid() != 0
	a := startAgent(t, cfg, true)
	const vppDisabled = "VPP is disabled in this agent's configuration (vpp.disabled: true, or --vpp-socket off): nothing to dump"
	get := func(query string, header map[string]string) (int, string) {
		code, body := a.do("GET", "/scheduler/dump?"+query, header)
		var e struct {
			Error string `json:"error"`
		}
		if code != http.StatusOK {
			if err := json.Unmarshal(body, &e); err != nil {
				t.Errorf("dump?%s: %d %s: not a JSON error", query, code, body)
			}
			return code, e.Error
		}
		return code, string(body)
	}
	original := map[string]string{"User-Agent": "Ligato-Client/3.5.0 (linux)"}
	for _, c := range []struct {
		query  string
		header map[string]string
	}{
		{"key-prefix=" + url.QueryEscape(models.VPPInterface.KeyPrefix) + "&view=SB", nil},
		{"key-prefix=" + url.QueryEscape(models.VPPRoute.KeyPrefix) + "&view=cached", nil},
		{"key-prefix=vpp/interface/", nil},
		{"descriptor=vpp-interface&view=cached", nil},
		{"model=vpp.interfaces&view=SB", nil},
		{"model=vpp.interfaces.interface", nil},
		{"key-prefix=" + url.QueryEscape(models.VPPInterface.KeyPrefix) + "&view=SB", original},
		{"descriptor=vpp-route", original},
	} {
		if code, msg := get(c.query, c.header); code != http.StatusConflict || msg != vppDisabled {
			t.Errorf("dump?%s (original client: %v): %d %q, want 409 %q", c.query, c.header != nil, code, msg, vppDisabled)
		}
	}

	// The NB view of a key prefix lists what the NB asks for all the same
	// (UNIMPLEMENTED: no descriptor), for both clients.
	kv := newEtcdClient(t, cfg.Etcd.EmbeddedClientURL)
	key := kv.put(&vppif.Interface{Name: "disabled-e2e1", Type: vppif.Interface_SOFTWARE_LOOPBACK, Enabled: true})
	a.waitState(key, "UNIMPLEMENTED")
	nbQuery := "key-prefix=" + url.QueryEscape(models.VPPInterface.KeyPrefix) + "&view=NB"
	if code, body := get(nbQuery, nil); code != http.StatusOK || !strings.Contains(body, key) {
		t.Errorf("dump?%s: %d %s, want 200 listing %s", nbQuery, code, body, key)
	}
	if code, body := get(nbQuery, original); code != http.StatusOK || !strings.Contains(body, key) {
		t.Errorf("dump?%s (original client): %d %s, want 200 listing %s", nbQuery, code, body, key)
	}

	code, msg := get("descriptor=bogus", nil)
	if code != http.StatusNotFound || !strings.Contains(msg, `unknown descriptor "bogus"`) || !strings.Contains(msg, "registered:") {
		t.Errorf("dump?descriptor=bogus: %d %q, want 404 naming the registered descriptors", code, msg)
	}
	for query, wants := range map[string][]string{
		"model=bogus":    {`unknown model "bogus"`, "linux.interfaces.interface", "vpp.interfaces"},
		"model=linux.l3": {`"linux.l3" is ambiguous`, "linux.l3.arp, linux.l3.route"},
	} {
		code, msg := get(query, nil)
		if code != http.StatusBadRequest {
			t.Errorf("dump?%s: %d %q, want 400", query, code, msg)
		}
		for _, want := range wants {
			if !strings.Contains(msg, want) {
				t.Errorf("dump?%s: %q does not contain %q", query, msg, want)
			}
		}
	}
	// Every model of the Linux side (enabled when root) by its name and
	// each alias: 200, the view asked for.
	if cfg.Linux.Disabled {
		return
	}
	for _, m := range models.Default.Models() {
		if !strings.HasPrefix(m.KeyPrefix, "config/linux/") {
			continue
		}
		for _, name := range append([]string{m.Name}, models.Default.Aliases(m)...) {
			code, body := get("view=NB&model="+url.QueryEscape(name), nil)
			var d struct {
				View string `json:"view"`
			}
			if code != http.StatusOK || json.Unmarshal([]byte(body), &d) != nil || d.View != "NB" {
				t.Errorf("dump?model=%s: %d %s", name, code, body)
			}
		}
	}
}
