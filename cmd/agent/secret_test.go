package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

// leakyToken holds the characters that JSON escapes (& < > "), which let
// the token through the old redaction by string replacement, and a marker
// that is found in any copy of it, escaped or not.
const (
	tokenMarker = "s3cr3tMARK"
	leakyToken  = tokenMarker + `&<a>"b'c\d`
)

// noToken fails the test if out holds the token, in clear or escaped.
func noToken(t *testing.T, what, out string) {
	t.Helper()
	if strings.Contains(out, tokenMarker) {
		t.Errorf("%s shows the token: %s", what, out)
	}
}

// TestSecretFmt: every fmt verb, on the Secret, a pointer to it, a
// configuration holding it, a struct holding it in an unexported field,
// maps, slices and errors, shows "(set)" or an address, never the value.
func TestSecretFmt(t *testing.T) {
	s := NewSecret(leakyToken)
	cfg := defaultConfig()
	cfg.Token = s
	type hidden struct{ token Secret }
	values := map[string]any{
		"Secret":            s,
		"*Secret":           &s,
		"Config":            cfg,
		"*Config":           &cfg,
		"unexported field":  hidden{token: s},
		"map":               map[string]Secret{"token": s},
		"slice":             []Secret{s},
		"error":             fmt.Errorf("wrapped: %w", errors.New(fmt.Sprint(cfg))),
		"any in a struct":   struct{ V any }{V: s},
		"pointer in struct": struct{ P *Secret }{P: &s},
	}
	for name, v := range values {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3v", "%T"} {
			noToken(t, fmt.Sprintf("%s with %s", name, verb), fmt.Sprintf(verb, v))
		}
		noToken(t, name+" with Sprint", fmt.Sprint(v))
		noToken(t, name+" with Sprintln", fmt.Sprintln(v))
	}
	for verb, want := range map[string]string{"%v": "(set)", "%s": "(set)", "%+v": "(set)", "%#v": "(set)", "%q": `"(set)"`} {
		if got := fmt.Sprintf(verb, s); got != want {
			t.Errorf("Sprintf(%q, secret) = %q, want %q", verb, got, want)
		}
	}
	if got := fmt.Sprintf("%v|%q", Secret{}, NewSecret("")); got != `|""` {
		t.Errorf("an unset Secret prints %q, want nothing", got)
	}
	if got := s.GoString(); got != "(set)" {
		t.Errorf("GoString: %q", got)
	}
}

// TestSecretSlog: the text and JSON handlers show "(set)" for the Secret
// as an attribute, in a group, and inside a configuration logged as a
// value.
func TestSecretSlog(t *testing.T) {
	cfg := defaultConfig()
	cfg.Token = NewSecret(leakyToken)
	for name, h := range map[string]func(io.Writer) slog.Handler{
		"text": func(w io.Writer) slog.Handler { return slog.NewTextHandler(w, nil) },
		"json": func(w io.Writer) slog.Handler { return slog.NewJSONHandler(w, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(h(&buf))
		log.Info("m", "token", cfg.Token, "config", cfg, slog.Group("g", "token", cfg.Token), slog.Any("ptr", &cfg.Token))
		log.With("token", cfg.Token).Warn("with")
		noToken(t, name+" handler", buf.String())
		if !strings.Contains(buf.String(), "(set)") {
			t.Errorf("%s handler: %s, want the token shown as (set)", name, buf.String())
		}
	}
	if v := NewSecret(leakyToken).LogValue(); v.Kind() != slog.KindString || v.String() != "(set)" {
		t.Errorf("LogValue: %v", v)
	}
}

// TestSecretJSON: JSON shows "(set)" (and "" when unset), also where JSON
// would escape the token's characters; the configuration file reads a
// string, and another kind (a number too: YAML drops leading zeros) is an
// error naming the field, not the content.
func TestSecretJSON(t *testing.T) {
	cfg := defaultConfig()
	cfg.Token = NewSecret(leakyToken)
	for name, marshal := range map[string]func(any) ([]byte, error){
		"Marshal":       json.Marshal,
		"MarshalIndent": func(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") },
	} {
		data, err := marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		noToken(t, name, string(data))
		if !strings.Contains(string(data), `"token":`) || !strings.Contains(string(data), `"(set)"`) {
			t.Errorf("%s: %s, want \"token\": \"(set)\"", name, data)
		}
	}
	if data, _ := json.Marshal(defaultConfig()); !strings.Contains(string(data), `"token":""`) {
		t.Errorf("unset token: %s, want \"token\":\"\"", data)
	}
	if text, _ := NewSecret(leakyToken).MarshalText(); string(text) != "(set)" {
		t.Errorf("MarshalText: %q", text)
	}

	for yaml, want := range map[string]string{
		"token: 'a&b<c>\"d'\n": `a&b<c>"d`,
		"token: \"0123\"\n":    "0123",
		"token: null\n":        "",
	} {
		cfg, err := loadConfig([]string{"--config", writeFile(t, "agent.yaml", yaml)}, env(nil))
		if err != nil || cfg.Token.Reveal() != want {
			t.Errorf("%q: token %q, %v; want %q", yaml, cfg.Token.Reveal(), err, want)
		}
	}
	for yaml, want := range map[string]string{
		"token: [" + tokenMarker + "]\n":    "line 1: token: want a string, got a list",
		"token: {a: " + tokenMarker + "}\n": "line 1: token: want a string, got a mapping",
		"token: 123456789\n":                "line 1: token: want a string, got a number",
	} {
		_, err := loadConfig([]string{"--config", writeFile(t, "agent.yaml", yaml)}, env(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", yaml, err, want)
		}
		if err != nil && (strings.Contains(err.Error(), tokenMarker) || strings.Contains(err.Error(), "123456789")) {
			t.Errorf("the error of a bad token shows it: %v", err)
		}
	}
}

// TestSecretMatches: the presented value matches the token, nothing else
// does, and an unset token matches nothing (not even "").
func TestSecretMatches(t *testing.T) {
	s := NewSecret(leakyToken)
	if !s.Matches(leakyToken) || s.Matches(tokenMarker) || s.Matches("") || s.Matches(leakyToken+"x") {
		t.Error("Matches of a set token")
	}
	if (Secret{}).Matches("") || NewSecret("").IsSet() {
		t.Error("an unset token matches \"\" or is set")
	}
	if s.Reveal() != leakyToken {
		t.Errorf("Reveal: %q", s.Reveal())
	}
}

// TestTokenNeverLogged: an agent with a token holding & < > " logs its
// configuration at start with "token":"(set)", and neither that log nor
// anything it logs while it refuses and accepts changes holds the token.
func TestTokenNeverLogged(t *testing.T) {
	cfg := testConfig(t)
	cfg.Etcd.EmbeddedDir = ""
	cfg.Linux.Disabled = true
	cfg.LogLevel = "debug"
	cfg.Token = NewSecret(leakyToken)
	a := startAgent(t, cfg, true)
	if code, body := a.do("POST", "/scheduler/downstream-resync", map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d %s", code, body)
	}
	if code, body := a.do("POST", "/scheduler/downstream-resync", map[string]string{"Authorization": "Bearer " + leakyToken}); code != http.StatusOK {
		t.Errorf("the token: %d %s", code, body)
	}
	var status map[string]any
	a.getJSON("/info/status", &status)
	noToken(t, "/info/status", fmt.Sprint(status))
	if err := a.stop(); err != nil {
		t.Fatal(err)
	}
	logs := a.log.String()
	noToken(t, "the agent's log", logs)
	if !strings.Contains(logs, `\"token\":\"(set)\"`) {
		t.Errorf("the agent's log at start does not show the configuration with the token as (set):\n%s", logs)
	}
}
