// Package browser drives Debian's headless Chromium through chromedriver,
// with a small W3C WebDriver client (net/http and encoding/json), for the
// tests of the agent's web view. Tests only: nothing of the daemon imports
// it.
//
// # Using it
//
//	b := browser.Start(t)        // skips (or fails in CI) without Chromium
//	b.Open(srv.URL + "/ui/")
//	b.Find("a#nav-values").Follow()
//	b.Find("select[name=state]").Select("PENDING")
//	b.Find("button#apply").Follow()
//	keys := b.Attrs("table#values tr.value", "data-key")
//
// Start starts chromedriver on a free loopback port and a new browser
// session (a new, empty profile), and registers with t what ends them:
// deleting the session, then stopping chromedriver's process group,
// Chromium's processes included, and checking that none is left.
//
// Every method fails the test (t.Fatal) when the browser does not do what
// it is asked, with the selector and the page's address in the message. A
// test never sleeps: Find waits for its element to be there, Follow for
// the page it loads, and WaitFor polls any condition until a deadline
// (Timeout).
//
// # Chromium, and when it is missing
//
// The tests use /usr/bin/chromium and /usr/bin/chromedriver, from Debian's
// packages chromium and chromium-driver, which `make tools`
// (scripts/install-tools.sh) installs. Without them Start skips the test
// and says what is missing and how to install it, except under CI=true,
// where it fails it: `make test`, which CI runs, installs them first, so
// there a missing browser is a broken installation, not a machine without
// one.
//
// # On failure
//
// When the test has failed by the time it ends, Start's cleanup saves a
// screenshot (screenshot.png), the page's HTML (page.html) and its address
// and text (page.txt) into the test's artifact folder, logs where, and
// logs the start of the page's text. The folder is, in this order:
//
//	$NETAGENT_ARTIFACTS/<test name>      when the variable is set
//	go test's -outputdir                 with go test -artifacts (t.ArtifactDir)
//	$TMPDIR/netagent-artifacts-<test>-*  otherwise (kept: not the test's TempDir)
package browser

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// The programs the tests drive: Debian's packages chromium and
// chromium-driver.
const (
	ChromiumPath     = "/usr/bin/chromium"
	ChromedriverPath = "/usr/bin/chromedriver"
)

// ArtifactsEnv names the environment variable with the folder where
// failed tests leave their screenshot and page.
const ArtifactsEnv = "NETAGENT_ARTIFACTS"

// ChromiumArgs are the switches Chromium runs with: headless, as root
// (no sandbox), and without any connection of its own to the internet,
// which this machine's network refuses (updates, sync, safe browsing).
var ChromiumArgs = []string{
	"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
	"--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--disable-dev-shm-usage", "--window-size=1280,1024",
}

// Missing returns what the browser tests need and this machine lacks
// (nil: nothing), each with the Debian package that brings it.
func Missing() []string {
	var missing []string
	for _, p := range []struct{ path, pkg string }{{ChromiumPath, "chromium"}, {ChromedriverPath, "chromium-driver"}} {
		if fi, err := os.Stat(p.path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			missing = append(missing, fmt.Sprintf("%s (Debian package %s)", p.path, p.pkg))
		}
	}
	return missing
}

// requirement tells what to do without the programs: skip, with a message
// saying what is missing and how to install it, or, under CI, fail.
func requirement(missing []string, ci bool) (fail bool, msg string) {
	if len(missing) == 0 {
		return false, ""
	}
	msg = "browser test: missing " + strings.Join(missing, " and ") + "; install with `make tools` (scripts/install-tools.sh, as root)"
	if ci {
		return true, msg + "; CI=true: `make test` installs them, so their absence fails the test"
	}
	return false, msg
}

// Require skips the test when Chromium or chromedriver is missing, saying
// which and how to install them, and fails it instead under CI=true.
func Require(t testing.TB) {
	t.Helper()
	if fail, msg := requirement(Missing(), os.Getenv("CI") == "true"); fail {
		t.Fatal(msg)
	} else if msg != "" {
		t.Skip(msg)
	}
}

// Browser is one headless Chromium driven for a test.
type Browser struct {
	t testing.TB
	// Timeout bounds each wait: Find, Follow, WaitFor, and page loads.
	Timeout time.Duration

	driver  *driver
	session *session
}

// Element is an element of the page a Browser shows.
type Element struct {
	b    *Browser
	id   string
	desc string // the selector that found it, for messages
}

// Start starts chromedriver and Chromium for the test, and ends them when
// the test ends. Without Chromium it skips the test, or fails it under
// CI=true (see the package doc).
func Start(t testing.TB) *Browser {
	t.Helper()
	Require(t)
	b := &Browser{t: t, Timeout: 30 * time.Second}
	home := t.TempDir() // removed after the cleanup below: Chromium has ended by then
	d, err := startDriver(ChromedriverPath, home, b.Timeout)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	b.driver = d
	caps := map[string]any{
		"browserName":      "chrome",
		"pageLoadStrategy": "normal",
		"timeouts":         map[string]int{"implicit": 0, "pageLoad": int(b.Timeout.Milliseconds()), "script": int(b.Timeout.Milliseconds())},
		"goog:chromeOptions": map[string]any{
			"binary": ChromiumPath,
			"args":   append(append([]string{}, ChromiumArgs...), "--user-data-dir="+filepath.Join(home, "profile")),
		},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*b.Timeout)
	defer cancel()
	b.session, err = newSession(ctx, d, caps)
	if err != nil {
		stopErr := d.stop()
		t.Fatalf("browser: new session: %v (%v); chromedriver: %s", err, stopErr, testsupport.Tail(d.log.String(), 2000))
	}
	t.Cleanup(func() {
		if err := b.close(); err != nil {
			t.Errorf("browser: %v", err)
		}
	})
	// Registered last, so run first: while the page is still there.
	t.Cleanup(func() {
		if t.Failed() {
			b.saveArtifacts()
		}
	})
	return b
}

// close deletes the session (Chromium quits) and stops chromedriver's
// process group, and fails when a process of it is left.
func (b *Browser) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), b.Timeout)
	defer cancel()
	errDelete := b.session.delete(ctx)
	if errDelete != nil {
		errDelete = fmt.Errorf("deleting the session: %w", errDelete)
	}
	return errors.Join(errDelete, b.driver.stop())
}

// ctx is the context of one command: page loads are bounded by the
// session's pageLoad timeout, the request by a little more.
func (b *Browser) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), b.Timeout+10*time.Second)
}

// fatalf fails the test, naming the page the browser shows.
func (b *Browser) fatalf(format string, args ...any) {
	b.t.Helper()
	b.t.Fatalf("%s (page %s)", fmt.Sprintf(format, args...), b.currentURL())
}

// currentURL is the page's address, or why there is none, for messages.
func (b *Browser) currentURL() string {
	ctx, cancel := b.ctx()
	defer cancel()
	var u string
	if err := b.session.call(ctx, http.MethodGet, "/url", nil, &u); err != nil {
		return "unknown: " + err.Error()
	}
	return u
}

// Open loads the page at url and returns when it has loaded.
func (b *Browser) Open(url string) {
	b.t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	if err := b.session.call(ctx, http.MethodPost, "/url", map[string]string{"url": url}, nil); err != nil {
		b.fatalf("open %s: %v", url, err)
	}
}

// URL is the address of the page shown.
func (b *Browser) URL() string {
	b.t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	var u string
	if err := b.session.call(ctx, http.MethodGet, "/url", nil, &u); err != nil {
		b.t.Fatalf("browser: the page's address: %v", err)
	}
	return u
}

// Title is the page's title.
func (b *Browser) Title() string {
	b.t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	var s string
	if err := b.session.call(ctx, http.MethodGet, "/title", nil, &s); err != nil {
		b.fatalf("the title: %v", err)
	}
	return s
}

// Source is the page's HTML as the browser has it now (the DOM, with what
// scripts changed).
func (b *Browser) Source() string {
	b.t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	var s string
	if err := b.session.call(ctx, http.MethodGet, "/source", nil, &s); err != nil {
		b.fatalf("the page source: %v", err)
	}
	return s
}

// Screenshot is a PNG of the browser's window.
func (b *Browser) Screenshot() []byte {
	b.t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	png, err := b.session.screenshot(ctx)
	if err != nil {
		b.fatalf("screenshot: %v", err)
	}
	return png
}

// Execute runs a synchronous script in the page (arguments[i] are args;
// an *Element is passed as the element) and decodes what it returns into
// out (nil: ignored).
func (b *Browser) Execute(out any, script string, args ...any) {
	b.t.Helper()
	if err := b.execute(out, script, args...); err != nil {
		b.fatalf("script %q: %v", script, err)
	}
}

func (b *Browser) execute(out any, script string, args ...any) error {
	ctx, cancel := b.ctx()
	defer cancel()
	wire := make([]any, len(args))
	for i, a := range args {
		if e, ok := a.(*Element); ok {
			wire[i] = elementRef{elementKey: e.id}
		} else {
			wire[i] = a
		}
	}
	return b.session.execute(ctx, script, wire, out)
}

// WaitFor calls cond until it returns nil, every 25 ms, and fails the test
// with what and cond's last error when Timeout passes first.
func (b *Browser) WaitFor(what string, cond func() error) {
	b.t.Helper()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(b.Timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			b.fatalf("%s: not within %v: %v", what, b.Timeout, err)
		}
	}
}

// Find returns the first element that matches the CSS selector, waiting
// until there is one.
func (b *Browser) Find(css string) *Element {
	b.t.Helper()
	return b.findFrom("", css, css)
}

func (b *Browser) findFrom(from, css, desc string) *Element {
	b.t.Helper()
	var id string
	b.WaitFor("an element "+desc, func() error {
		ctx, cancel := b.ctx()
		defer cancel()
		var err error
		id, err = b.session.find(ctx, from, css)
		if errors.Is(err, ErrNoSuchElement) {
			return err
		}
		if err != nil {
			b.fatalf("find %s: %v", desc, err)
		}
		return nil
	})
	return &Element{b: b, id: id, desc: desc}
}

// FindAll returns the elements that match the CSS selector now, in
// document order (none: an empty slice, at once).
func (b *Browser) FindAll(css string) []*Element {
	b.t.Helper()
	return b.findAllFrom("", css, css)
}

func (b *Browser) findAllFrom(from, css, desc string) []*Element {
	b.t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	ids, err := b.session.findAll(ctx, from, css)
	if err != nil {
		b.fatalf("find all %s: %v", desc, err)
	}
	els := make([]*Element, len(ids))
	for i, id := range ids {
		els[i] = &Element{b: b, id: id, desc: fmt.Sprintf("%s[%d]", desc, i)}
	}
	return els
}

// FindByText returns the first element that matches the CSS selector and
// whose text, trimmed, is text, waiting until there is one.
func (b *Browser) FindByText(css, text string) *Element {
	b.t.Helper()
	desc := fmt.Sprintf("%s with the text %q", css, text)
	var found *Element
	b.WaitFor("an element "+desc, func() error {
		var ref elementRef
		err := b.execute(&ref, `for (const e of document.querySelectorAll(arguments[0])) {
				if (e.innerText.trim() === arguments[1]) return e;
			}
			return null;`, css, text)
		if err != nil {
			b.fatalf("find %s: %v", desc, err)
		}
		if ref == nil {
			return fmt.Errorf("%d elements %s, none with that text: %q", b.Count(css), css, b.Texts(css))
		}
		found = &Element{b: b, id: ref[elementKey], desc: desc}
		return nil
	})
	return found
}

// Count is the number of elements that match the CSS selector now.
func (b *Browser) Count(css string) int {
	b.t.Helper()
	var n int
	b.Execute(&n, `return document.querySelectorAll(arguments[0]).length`, css)
	return n
}

// Texts are the texts (innerText, trimmed) of the elements that match the
// CSS selector now, read at once in the page: a page that changes meanwhile
// gives no stale element.
func (b *Browser) Texts(css string) []string {
	b.t.Helper()
	var out []string
	b.Execute(&out, `return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText.trim())`, css)
	return out
}

// Attrs are the values of the attribute name of the elements that match
// the CSS selector now ("" where an element has no such attribute), read
// at once in the page.
func (b *Browser) Attrs(css, name string) []string {
	b.t.Helper()
	var out []string
	b.Execute(&out, `return Array.from(document.querySelectorAll(arguments[0]), e => e.getAttribute(arguments[1]) ?? "")`, css, name)
	return out
}

// Back goes back to the previous page of the history.
func (b *Browser) Back() {
	b.t.Helper()
	ctx, cancel := b.ctx()
	defer cancel()
	if err := b.session.call(ctx, http.MethodPost, "/back", nil, nil); err != nil {
		b.fatalf("back: %v", err)
	}
}

func (e *Element) path() string { return "/element/" + e.id }

func (e *Element) get(what string, out any) {
	e.b.t.Helper()
	ctx, cancel := e.b.ctx()
	defer cancel()
	if err := e.b.session.call(ctx, http.MethodGet, e.path()+"/"+what, nil, out); err != nil {
		e.b.fatalf("%s of %s: %v", what, e.desc, err)
	}
}

func (e *Element) post(what string, body any) {
	e.b.t.Helper()
	ctx, cancel := e.b.ctx()
	defer cancel()
	if err := e.b.session.call(ctx, http.MethodPost, e.path()+"/"+what, body, nil); err != nil {
		e.b.fatalf("%s %s: %v", what, e.desc, err)
	}
}

// Text is the element's rendered text (WebDriver's, as a person sees it).
func (e *Element) Text() string {
	e.b.t.Helper()
	var s string
	e.get("text", &s)
	return s
}

// Attr is the value of the element's attribute name, and whether it has
// one.
func (e *Element) Attr(name string) (string, bool) {
	e.b.t.Helper()
	var s *string
	e.get("attribute/"+name, &s)
	if s == nil {
		return "", false
	}
	return *s, true
}

// Property is the value of the element's DOM property name (e.g. "value"
// of an input or a select, "checked"), as JSON decodes it.
func (e *Element) Property(name string) any {
	e.b.t.Helper()
	var v any
	e.get("property/"+name, &v)
	return v
}

// TagName is the element's tag, lower case.
func (e *Element) TagName() string {
	e.b.t.Helper()
	var s string
	e.get("name", &s)
	return strings.ToLower(s)
}

// Find returns the first element inside e that matches the CSS selector,
// waiting until there is one.
func (e *Element) Find(css string) *Element {
	e.b.t.Helper()
	return e.b.findFrom(e.path(), css, e.desc+" "+css)
}

// FindAll returns the elements inside e that match the CSS selector now.
func (e *Element) FindAll(css string) []*Element {
	e.b.t.Helper()
	return e.b.findAllFrom(e.path(), css, e.desc+" "+css)
}

// Click clicks the element, as a person does (WebDriver scrolls it into
// view and fails when something covers it). For a click that loads
// another page, Follow waits for it.
func (e *Element) Click() {
	e.b.t.Helper()
	e.post("click", nil)
}

// Follow clicks the element (a link, a submit button) and returns when
// the page it loads has replaced the current one and has loaded.
func (e *Element) Follow() {
	e.b.t.Helper()
	e.b.navigating("follow "+e.desc, e.Click)
}

// Submit submits the element's form (the element itself, or the form of
// a field in it) as its submit button would, and returns when the answer
// has loaded.
func (e *Element) Submit() {
	e.b.t.Helper()
	e.b.navigating("submit the form of "+e.desc, func() {
		e.b.Execute(nil, `const f = arguments[0].form || arguments[0]; f.requestSubmit();`, e)
	})
}

// navigating marks the current document, runs act, and waits until a new
// document without the mark has loaded.
func (b *Browser) navigating(what string, act func()) {
	b.t.Helper()
	b.Execute(nil, `window.__netagentOldPage = true`)
	act()
	b.WaitFor(what+": a new page", func() error {
		var state struct {
			Old   bool   `json:"old"`
			Ready string `json:"ready"`
		}
		if err := b.execute(&state, `return {old: window.__netagentOldPage === true, ready: document.readyState}`); err != nil {
			return err // e.g. between the two documents
		}
		if state.Old || state.Ready != "complete" {
			return fmt.Errorf("still the old page, or not loaded (%q)", state.Ready)
		}
		return nil
	})
}

// Clear empties an input or a textarea.
func (e *Element) Clear() {
	e.b.t.Helper()
	e.post("clear", nil)
}

// Type types text into the element, as keystrokes after what it holds.
func (e *Element) Type(text string) {
	e.b.t.Helper()
	e.post("value", map[string]string{"text": text})
}

// Select chooses the <option> of the <select> e whose value is value, by
// clicking it as a person does, and checks that the select then has it.
func (e *Element) Select(value string) {
	e.b.t.Helper()
	if tag := e.TagName(); tag != "select" {
		e.b.fatalf("select %q in %s: a <%s>, not a <select>", value, e.desc, tag)
	}
	var values []string
	for _, o := range e.FindAll("option") {
		v, _ := o.Property("value").(string)
		if v == value {
			o.Click()
			if got, _ := e.Property("value").(string); got != value {
				e.b.fatalf("select %q in %s: the select has %q after the click", value, e.desc, got)
			}
			return
		}
		values = append(values, v)
	}
	e.b.fatalf("select %q in %s: no such option; the options are %q", value, e.desc, values)
}

// --- artifacts on failure ------------------------------------------------

// unsafeName are the characters a test name must not bring into a folder
// name.
var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// artifactDir returns (and creates) the folder where the failed test's
// screenshot and page go (see the package doc).
func artifactDir(t testing.TB) (string, error) {
	name := unsafeName.ReplaceAllString(t.Name(), "_")
	if dir := os.Getenv(ArtifactsEnv); dir != "" {
		dir = filepath.Join(dir, name)
		return dir, os.MkdirAll(dir, 0o755)
	}
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		return t.ArtifactDir(), nil
	}
	return os.MkdirTemp("", "netagent-artifacts-"+name+"-")
}

// textDumpSize bounds the page text logged on failure.
const textDumpSize = 3000

// saveArtifacts writes the screenshot, the page source and text of a
// failed test and logs where, and the start of the text. What it cannot
// get (Chromium gone) it logs instead.
func (b *Browser) saveArtifacts() {
	t := b.t
	dir, err := artifactDir(t)
	if err != nil {
		t.Logf("browser: no folder for the screenshot and page: %v", err)
		return
	}
	var page struct {
		URL   string `json:"url"`
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	var problems []error
	if err := b.execute(&page, `return {url: location.href, title: document.title, text: document.body ? document.body.innerText : ""}`); err != nil {
		problems = append(problems, fmt.Errorf("the page's text: %w", err))
	}
	text := fmt.Sprintf("URL: %s\nTitle: %s\n\n%s\n", page.URL, page.Title, page.Text)
	problems = append(problems, os.WriteFile(filepath.Join(dir, "page.txt"), []byte(text), 0o644))

	ctx, cancel := b.ctx()
	defer cancel()
	var src string
	if err := b.session.call(ctx, http.MethodGet, "/source", nil, &src); err != nil {
		problems = append(problems, fmt.Errorf("the page source: %w", err))
	} else {
		problems = append(problems, os.WriteFile(filepath.Join(dir, "page.html"), []byte(src), 0o644))
	}
	if png, err := b.session.screenshot(ctx); err != nil {
		problems = append(problems, fmt.Errorf("the screenshot: %w", err))
	} else {
		problems = append(problems, os.WriteFile(filepath.Join(dir, "screenshot.png"), png, 0o644))
	}
	t.Logf("browser: the failed test's screenshot and page are in %s (screenshot.png, page.html, page.txt)", dir)
	if err := errors.Join(problems...); err != nil {
		t.Logf("browser: not all saved: %v", err)
	}
	dump := page.Text
	if len(dump) > textDumpSize {
		dump = dump[:textDumpSize] + "\n..."
	}
	t.Logf("browser: the page at the failure: %s %q\n%s", page.URL, page.Title, dump)
}
