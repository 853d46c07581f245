package browser

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"image/png"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// childEnv tells the test binary run by a test of this file which child
// it is (the tests that must see a test fail, or its process die).
const childEnv = "BROWSER_SELFTEST_CHILD"

// page is a small site: a page whose script adds an element a moment after
// a click, a form, and the page that shows what the form sent.
func page(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><title>start</title></head><body>
<h1 id="marker">browser self-test</h1>
<span id="count" data-n="0">0</span>
<button id="add" onclick="setTimeout(() => {
	const li = document.createElement('li'); li.className = 'late'; li.textContent = 'late';
	document.getElementById('list').append(li);
	const c = document.getElementById('count'); c.dataset.n = c.textContent = String(Number(c.dataset.n) + 1);
}, 300)">add</button>
<ul id="list"><li class="early">early</li></ul>
<a id="other" href="/other">other</a> <a href="/form">the form</a>
</body></html>`)
	})
	mux.HandleFunc("/form", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><title>form</title></head><body>
<form id="filter" action="/result" method="get">
<select name="state"><option value="">any</option><option value="PENDING">pending</option><option value="CONFIGURED">configured</option></select>
<input name="q" value="">
<button id="apply" type="submit">apply</button>
</form></body></html>`)
	})
	mux.HandleFunc("/result", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><html><head><title>result</title></head><body>
<dl id="params"><dt>state</dt><dd id="state">%s</dd><dt>q</dt><dd id="q">%s</dd></dl></body></html>`,
			html.EscapeString(r.URL.Query().Get("state")), html.EscapeString(r.URL.Query().Get("q")))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestRequirement: without Chromium or chromedriver the tests skip, saying
// which program and package are missing and how to install them; under
// CI they fail.
func TestRequirement(t *testing.T) {
	if fail, msg := requirement(nil, true); fail || msg != "" {
		t.Errorf("nothing missing: fail %v, %q", fail, msg)
	}
	missing := []string{"/usr/bin/chromedriver (Debian package chromium-driver)"}
	fail, msg := requirement(missing, false)
	if fail || !strings.Contains(msg, "/usr/bin/chromedriver (Debian package chromium-driver)") || !strings.Contains(msg, "make tools") {
		t.Errorf("missing chromedriver, not CI: fail %v, %q", fail, msg)
	}
	fail, msg = requirement(missing, true)
	if !fail || !strings.Contains(msg, "chromium-driver") || !strings.Contains(msg, "CI=true") {
		t.Errorf("missing chromedriver, CI: fail %v, %q", fail, msg)
	}
}

// TestClickWaitFormScreenshot: a click whose effect comes later is waited
// for; a link is followed; a form is filled (select, input) and sent by
// its button and by Submit; texts, attributes, the title, the source and a
// screenshot are read.
func TestClickWaitFormScreenshot(t *testing.T) {
	srv := page(t)
	b := Start(t)
	b.Open(srv.URL + "/")
	if got := b.Title(); got != "start" {
		t.Errorf("title %q", got)
	}
	if n, ok := b.Find("#count").Attr("data-n"); n != "0" || !ok {
		t.Errorf("data-n %q %v, want 0", n, ok)
	}
	if v, ok := b.Find("#count").Attr("data-nothing"); v != "" || ok {
		t.Errorf("an attribute the element has not: %q %v", v, ok)
	}

	b.Find("button#add").Click()
	if got := b.Find("li.late").Text(); got != "late" {
		t.Errorf("the added element's text %q", got)
	}
	b.WaitFor("the count at 1", func() error {
		if got := b.Attrs("#count", "data-n"); len(got) != 1 || got[0] != "1" {
			return fmt.Errorf("data-n %q", got)
		}
		return nil
	})
	if got := b.Texts("#list li"); strings.Join(got, ",") != "early,late" {
		t.Errorf("list %q", got)
	}
	if got := b.Count("li"); got != 2 {
		t.Errorf("%d li", got)
	}
	if got := len(b.Find("#list").FindAll("li")); got != 2 {
		t.Errorf("%d li in #list", got)
	}
	if got := b.FindAll("#nothing"); len(got) != 0 {
		t.Errorf("FindAll of nothing: %d elements", len(got))
	}

	b.FindByText("a", "the form").Follow()
	if got := b.URL(); got != srv.URL+"/form" {
		t.Fatalf("after following the link: %s", got)
	}
	b.Find("form#filter select[name=state]").Select("PENDING")
	q := b.Find("form#filter input[name=q]")
	q.Type("eth0 x")
	if got := q.Property("value"); got != "eth0 x" {
		t.Errorf("the input's value %v", got)
	}
	b.Find("button#apply").Follow()
	u, err := url.Parse(b.URL())
	if err != nil || u.Path != "/result" || u.Query().Get("state") != "PENDING" || u.Query().Get("q") != "eth0 x" {
		t.Fatalf("after apply: %s (%v)", b.URL(), err)
	}
	if got := b.Find("dd#state").Text(); got != "PENDING" {
		t.Errorf("the state sent %q", got)
	}

	b.Back()
	b.WaitFor("the form again", func() error {
		if got := b.URL(); got != srv.URL+"/form" {
			return fmt.Errorf("at %s", got)
		}
		return nil
	})
	b.Find("select[name=state]").Select("")
	q = b.Find("input[name=q]")
	q.Clear()
	q.Type("x")
	q.Submit()
	if got := b.Find("dd#q").Text(); got != "x" {
		t.Errorf("q sent by Submit %q", got)
	}
	if got := b.Find("dd#state").Text(); got != "" {
		t.Errorf("state sent by Submit %q, want the empty option's", got)
	}

	if src := b.Source(); !strings.Contains(src, `<dl id="params">`) {
		t.Errorf("source %s", testsupport.Tail(src, 500))
	}
	shot := b.Screenshot()
	cfg, err := png.DecodeConfig(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if cfg.Width != 1280 || cfg.Height < 500 {
		t.Errorf("screenshot %dx%d, want the window's 1280 wide", cfg.Width, cfg.Height)
	}
}

// TestNoProcessLeft: while a test runs, chromedriver's process group
// holds Chromium's processes; when the test has ended, none of them and no
// watchdog is left.
func TestNoProcessLeft(t *testing.T) {
	srv := page(t)
	var pgid, watchdog int
	t.Run("browse", func(t *testing.T) {
		b := Start(t)
		b.Open(srv.URL + "/")
		b.Find("#marker")
		pgid, watchdog = b.driver.cmd.Process.Pid, b.driver.watchdog.Process.Pid
		members := groupMembers(pgid)
		if len(members) < 3 {
			t.Errorf("chromedriver's group %d has %v: want chromedriver and Chromium's processes", pgid, members)
		}
	})
	if left := groupMembers(pgid); len(left) != 0 {
		t.Errorf("after the test, processes %v of chromedriver's group %d", left, pgid)
	}
	if err := syscall.Kill(watchdog, 0); err == nil && !zombie(watchdog) {
		t.Errorf("the watchdog %d still runs", watchdog)
	}
}

// zombie reports whether pid has ended and waits to be reaped.
func zombie(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z")
}

// TestArtifactsOnFailure: a test that fails leaves a screenshot (a PNG),
// the page's HTML and text in $NETAGENT_ARTIFACTS/<test name>, or with go
// test -artifacts under -outputdir, logs that folder and the start of the
// page's text; a wait that fails names what it waited for and the page.
func TestArtifactsOnFailure(t *testing.T) {
	Require(t)
	for _, c := range []struct {
		name string
		args func(dir string) ([]string, []string) // flags, environment
		want func(dir string) string               // the folder of the child's files
	}{
		{"env", func(dir string) ([]string, []string) {
			return nil, []string{ArtifactsEnv + "=" + dir}
		}, func(dir string) string { return filepath.Join(dir, "TestChildFails") }},
		{"outputdir", func(dir string) ([]string, []string) {
			return []string{"-test.artifacts", "-test.outputdir=" + dir}, []string{ArtifactsEnv + "="}
		}, func(dir string) string { return "" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			flags, env := c.args(dir)
			out, err := runChild(t, "TestChildFails", "fail", flags, env)
			if err == nil {
				t.Fatalf("the failing child passed:\n%s", out)
			}
			for _, want := range []string{"an element #nosuch: not within 200ms", "(page http://127.0.0.1:",
				"browser: the failed test's screenshot and page are in ", "browser self-test"} {
				if !strings.Contains(out, want) {
					t.Errorf("the child's output has no %q:\n%s", want, out)
				}
			}
			files := c.want(dir)
			if files == "" { // -artifacts: a folder of go test's under dir
				var shots []string
				_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
					if err == nil && d.Name() == "screenshot.png" {
						shots = append(shots, path)
					}
					return nil
				})
				if len(shots) != 1 {
					t.Fatalf("screenshots under %s: %v\n%s", dir, shots, out)
				}
				files = filepath.Dir(shots[0])
			}
			if !strings.Contains(out, files) {
				t.Errorf("the output does not name %s:\n%s", files, out)
			}
			shot, err := os.ReadFile(filepath.Join(files, "screenshot.png"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := png.Decode(bytes.NewReader(shot)); err != nil {
				t.Errorf("screenshot.png: %v", err)
			}
			if src, err := os.ReadFile(filepath.Join(files, "page.html")); err != nil || !strings.Contains(string(src), `id="marker"`) {
				t.Errorf("page.html: %v %s", err, src)
			}
			if txt, err := os.ReadFile(filepath.Join(files, "page.txt")); err != nil || !strings.Contains(string(txt), "URL: http://127.0.0.1:") ||
				!strings.Contains(string(txt), "browser self-test") {
				t.Errorf("page.txt: %v %s", err, txt)
			}
		})
	}
}

// TestWatchdog: when the test process dies without its cleanups (a go
// test timeout, SIGKILL), chromedriver and Chromium end with it.
func TestWatchdog(t *testing.T) {
	Require(t)
	// The killed child cannot remove its temporary directories (the
	// browser's profile among them): they go under this test's own.
	cmd := childCommand(t, "TestChildHangs", "hang", nil, []string{"TMPDIR=" + t.TempDir()})
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// The child prints its browser's group, then waits for ever.
	var out testsupport.SyncBuffer
	pgidCh := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			_, _ = out.Write([]byte(sc.Text() + "\n"))
			if v, ok := strings.CutPrefix(sc.Text(), "PGID "); ok {
				if pgid, err := strconv.Atoi(v); err == nil {
					pgidCh <- pgid
				}
			}
		}
	}()
	var pgid int
	select {
	case pgid = <-pgidCh:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the child printed no group:\n%s", out.String())
	}
	if members := groupMembers(pgid); len(members) < 3 {
		t.Fatalf("chromedriver's group %d has %v before the kill", pgid, members)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	testsupport.Eventually(t, 30*time.Second, func() error {
		if left := groupMembers(pgid); len(left) != 0 {
			return fmt.Errorf("processes %v of chromedriver's group %d still run after the test process died", left, pgid)
		}
		return nil
	})
}

// TestChildFails is run by TestArtifactsOnFailure: it fails on an element
// that never comes.
func TestChildFails(t *testing.T) {
	if os.Getenv(childEnv) != "fail" {
		t.Skip("run by TestArtifactsOnFailure")
	}
	srv := page(t)
	b := Start(t)
	b.Timeout = 200 * time.Millisecond
	b.Open(srv.URL + "/")
	b.Find("#nosuch")
}

// TestChildHangs is run by TestWatchdog: it starts a browser, prints its
// process group and waits to be killed.
func TestChildHangs(t *testing.T) {
	if os.Getenv(childEnv) != "hang" {
		t.Skip("run by TestWatchdog")
	}
	srv := page(t)
	b := Start(t)
	b.Open(srv.URL + "/")
	b.Find("#marker")
	fmt.Printf("PGID %d\n", b.driver.cmd.Process.Pid)
	select {}
}

// childCommand is this test binary running only the test name, with
// childEnv=mode.
func childCommand(t *testing.T, name, mode string, flags, env []string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-test.run=^" + name + "$", "-test.v", "-test.count=1"}, flags...)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), childEnv+"="+mode), env...)
	return cmd
}

// runChild runs the child and returns its output.
func runChild(t *testing.T, name, mode string, flags, env []string) (string, error) {
	t.Helper()
	out, err := childCommand(t, name, mode, flags, env).CombinedOutput()
	return string(out), err
}
