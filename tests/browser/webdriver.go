package browser

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/netagent-io/netagent/tests/testsupport"
)

// This file is the W3C WebDriver protocol (https://www.w3.org/TR/webdriver2/)
// as far as the tests use it, over net/http and encoding/json: the
// chromedriver process, a session, elements. Every call returns an error;
// browser.go turns them into test failures.

// elementKey is the W3C name of an element reference in JSON.
const elementKey = "element-6066-11e4-a52e-4f735466cecf"

// Error is an error answered by the WebDriver server: Code is the W3C
// error code ("no such element", "stale element reference", ...). It
// matches ErrNoSuchElement and ErrStaleElement with errors.Is.
type Error struct {
	Status  int    // the HTTP status
	Code    string // the W3C error code
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("webdriver: %s (%d): %s", e.Code, e.Status, e.Message)
}

// Is matches an *Error of the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	return errors.As(target, &t) && t.Code == e.Code
}

var (
	// ErrNoSuchElement: a selector matched nothing.
	ErrNoSuchElement = &Error{Code: "no such element"}
	// ErrStaleElement: the element is no longer in the page (it changed or
	// another page loaded).
	ErrStaleElement = &Error{Code: "stale element reference"}
)

// driver is a running chromedriver in a process group of its own, with
// the watchdog that kills the group when the test process ends without
// stopping it (a go test timeout, SIGKILL).
type driver struct {
	cmd      *exec.Cmd
	url      string // http://127.0.0.1:<port>
	log      *testsupport.SyncBuffer
	exited   chan struct{} // closed when cmd.Wait returned
	watchdog *exec.Cmd
	pipe     *os.File // the watchdog's pipe: closing it ends the watchdog
}

// startedLine is what chromedriver prints on stdout when it listens.
var startedLine = regexp.MustCompile(`started successfully on port (\d+)`)

// startDriver starts chromedriver on a free loopback port (it picks the
// port: --port=0) and returns when it answers /status. Chromium and its
// helpers, started by chromedriver, stay in chromedriver's process group;
// home is their HOME-like folder (XDG config and cache), so that nothing
// is written to the user's.
func startDriver(path, home string, within time.Duration) (*driver, error) {
	d := &driver{log: &testsupport.SyncBuffer{}, exited: make(chan struct{})}
	d.cmd = exec.Command(path, "--port=0")
	d.cmd.Env = append(os.Environ(),
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"), "XDG_CACHE_HOME="+filepath.Join(home, "cache"))
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := d.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", path, err)
	}
	if err := d.startWatchdog(); err != nil {
		d.killGroup()
		<-d.exited
		return nil, err
	}
	port := make(chan string, 1)
	go func() {
		// Read stdout to its end, so that chromedriver never blocks on it.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			_, _ = d.log.Write([]byte(line + "\n"))
			if m := startedLine.FindStringSubmatch(line); m != nil {
				select {
				case port <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	select {
	case p := <-port:
		d.url = "http://127.0.0.1:" + p
	case <-d.exited:
		d.stop()
		return nil, fmt.Errorf("%s exited before it listened: %s", path, testsupport.Tail(d.log.String(), 2000))
	case <-time.After(within):
		d.stop()
		return nil, fmt.Errorf("%s did not listen within %v: %s", path, within, testsupport.Tail(d.log.String(), 2000))
	}
	return d, nil
}

// startWatchdog starts the shell that kills chromedriver's process group
// once its pipe closes: when stop closes it after it killed the watchdog
// (nothing then), or when the test process ends, however it ends (the
// kernel closes the pipe). The shell is in a process group of its own, so
// that a signal to the test's group does not end it first.
func (d *driver) startWatchdog() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", `cat >/dev/null; kill -9 -"$0" 2>/dev/null`, strconv.Itoa(d.cmd.Process.Pid))
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return fmt.Errorf("the watchdog of chromedriver: %w", err)
	}
	_ = r.Close()
	d.watchdog, d.pipe = cmd, w
	return nil
}

// killGroup sends SIGKILL to chromedriver's process group: chromedriver,
// and Chromium with its helpers if they still run.
func (d *driver) killGroup() { _ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL) }

// groupGone reports whether no live process of chromedriver's group is
// left. Zombies do not count: Chromium's processes that outlived
// chromedriver belong to init, which may be slow to reap them, or never
// reap them in a container.
func (d *driver) groupGone() bool { return len(groupMembers(d.cmd.Process.Pid)) == 0 }

// groupMembers returns the IDs of the processes of group pgid that are
// not zombies, from /proc.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if g, err := strconv.Atoi(fields[2]); err == nil && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// stop ends the watchdog first (so that it never kills a recycled group
// ID), then chromedriver's whole group: SIGTERM, and SIGKILL for what is
// left after grace. It returns an error when processes of the group are
// still there afterwards.
func (d *driver) stop() error {
	if d.watchdog != nil {
		_ = d.watchdog.Process.Kill()
		_ = d.watchdog.Wait()
		_ = d.pipe.Close()
		d.watchdog = nil
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	const grace = 5 * time.Second
	select {
	case <-d.exited:
	case <-time.After(grace):
	}
	if !d.groupGone() {
		d.killGroup()
	}
	<-d.exited
	// Chromium's processes are not chromedriver's children once it exited:
	// their group dies a moment after the SIGKILL, not when Wait returns.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(grace)
	for !d.groupGone() {
		select {
		case <-tick.C:
			d.killGroup()
		case <-deadline:
			return fmt.Errorf("processes %v of chromedriver's group %d still run %v after SIGKILL",
				groupMembers(d.cmd.Process.Pid), d.cmd.Process.Pid, grace)
		}
	}
	return nil
}

// session is one WebDriver session (one browser) of a driver.
type session struct {
	http *http.Client
	base string // <driver url>/session/<id>
}

// newSession asks the driver for a browser with the capabilities.
func newSession(ctx context.Context, d *driver, caps map[string]any) (*session, error) {
	s := &session{http: &http.Client{}, base: d.url + "/session"}
	var out struct {
		SessionID string `json:"sessionId"`
	}
	if err := s.call(ctx, http.MethodPost, "", map[string]any{"capabilities": map[string]any{"alwaysMatch": caps}}, &out); err != nil {
		return nil, err
	}
	if out.SessionID == "" {
		return nil, errors.New("webdriver: new session: no session ID in the answer")
	}
	s.base += "/" + out.SessionID
	return s, nil
}

// call sends a command: method, path under the session, body (nil: none
// for GET, {} for POST) and decodes the answer's "value" into out (nil:
// ignored). An error answer is an *Error.
func (s *session) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if method == http.MethodPost {
		if body == nil {
			body = map[string]any{}
		}
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return fmt.Errorf("webdriver: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("webdriver: %s %s: reading the answer: %w", method, path, err)
	}
	var envelope struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &envelope); err != nil {
		return fmt.Errorf("webdriver: %s %s: %d %s: %w", method, path, resp.StatusCode, testsupport.Tail(string(raw), 500), err)
	}
	if resp.StatusCode != http.StatusOK {
		e := &Error{Status: resp.StatusCode}
		var v struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(envelope.Value, &v) == nil {
			e.Code, e.Message = v.Error, v.Message
		} else {
			e.Message = string(envelope.Value)
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(envelope.Value, out); err != nil {
		return fmt.Errorf("webdriver: %s %s: the value %s: %w", method, path, testsupport.Tail(string(envelope.Value), 500), err)
	}
	return nil
}

// elementRef is an element reference in JSON.
type elementRef map[string]string

func (s *session) find(ctx context.Context, from, css string) (string, error) {
	var ref elementRef
	if err := s.call(ctx, http.MethodPost, from+"/element", map[string]string{"using": "css selector", "value": css}, &ref); err != nil {
		return "", err
	}
	return ref[elementKey], nil
}

func (s *session) findAll(ctx context.Context, from, css string) ([]string, error) {
	var refs []elementRef
	if err := s.call(ctx, http.MethodPost, from+"/elements", map[string]string{"using": "css selector", "value": css}, &refs); err != nil {
		return nil, err
	}
	ids := make([]string, len(refs))
	for i, r := range refs {
		ids[i] = r[elementKey]
	}
	return ids, nil
}

// execute runs a synchronous script; arguments that are element IDs
// must be passed as elementRef.
func (s *session) execute(ctx context.Context, script string, args []any, out any) error {
	if args == nil {
		args = []any{}
	}
	return s.call(ctx, http.MethodPost, "/execute/sync", map[string]any{"script": script, "args": args}, out)
}

func (s *session) screenshot(ctx context.Context) ([]byte, error) {
	var b64 string
	if err := s.call(ctx, http.MethodGet, "/screenshot", nil, &b64); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(b64)
}

func (s *session) delete(ctx context.Context) error {
	return s.call(ctx, http.MethodDelete, "", nil, nil)
}
