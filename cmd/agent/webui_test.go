package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestWebUI: the web view is served on the REST listener under /ui/, read
// without the token; a request that is not a read is refused, 401 without
// the token and 405 with it (the view never changes anything). The summary
// shows the health the agent knows.
func TestWebUI(t *testing.T) {
	cfg := testConfig(t)
	cfg.Etcd.EmbeddedDir = ""
	cfg.Linux.Disabled = true
	const token = "webui-secret-token"
	cfg.Token = NewSecret(token)
	a := startAgent(t, cfg, true)

	code, body := a.do("GET", "/ui/", nil)
	page := string(body)
	if code != http.StatusOK || !strings.Contains(page, `<table id="by-state"`) {
		t.Fatalf("GET /ui/ without the token: %d\n%s", code, body)
	}
	for _, want := range []string{
		`<tr class="check ok" data-area="agent" data-ok="true"><td>agent</td><td>ready (/readyz)</td><td class="status">ready</td>`,
		`<tr class="check ok" data-area="SB" data-ok="true"><td>SB</td><td>VPP</td><td class="status">disabled</td>`,
		`<tr class="check ok" data-area="SB" data-ok="true"><td>SB</td><td>Linux</td><td class="status">disabled</td>`,
		`<tr class="check ok" data-area="NB" data-ok="true"><td>NB</td><td>source grpc</td><td class="status">active</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the summary's health lacks %s\n%s", want, page)
		}
	}
	if code, body := a.do("GET", "/ui/values?state=PENDING", nil); code != http.StatusOK || !strings.Contains(string(body), `<span id="total">0</span>`) {
		t.Errorf("GET /ui/values?state=PENDING: %d\n%s", code, body)
	}
	if code, _ := a.do("GET", "/ui", nil); code != http.StatusOK {
		t.Errorf("GET /ui (redirected to /ui/): %d", code)
	}
	for _, path := range []string{"/ui/", "/ui/values", "/ui/value?key=x"} {
		if code, body := a.do("POST", path, nil); code != http.StatusUnauthorized {
			t.Errorf("POST %s without the token: %d %s, want 401", path, code, body)
		}
		if code, body := a.do("POST", path, map[string]string{"Authorization": "Bearer " + token}); code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s with the token: %d %s, want 405", path, code, body)
		}
	}
	if code, _ := a.do("DELETE", "/ui/values", nil); code != http.StatusUnauthorized {
		t.Errorf("DELETE /ui/values without the token: %d, want 401", code)
	}
}
