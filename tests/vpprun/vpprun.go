// Package vpprun starts, restarts and stops real VPP processes for tests,
// from a VPP build folder with the scripts start.sh and stop.sh (the
// project's ../shared/vpp: VPP 25.10, see its README). For tests only: the
// daemon must not import it.
//
// # Which VPP the tests use
//
// Three environment variables decide, in this order:
//
//	VPP_API_SOCKET    the API socket of a VPP the user runs: the tests use it,
//	                  share it (they take turns) and never restart it
//	NETAGENT_VPP_DIR  a VPP build folder: each test package (each test
//	                  process) starts a VPP of its own from it, in a
//	                  temporary run directory, restarts it when a test needs
//	                  a VPP restart, and stops it when its tests end
//	neither           the tests use vppsim
//
// `make test` runs the VPP tests twice: against vppsim, then with
// NETAGENT_VPP_DIR set to ../shared/vpp when that folder exists
// (scripts/test-real-vpp.sh).
//
// # Lifetime
//
// Shared starts the process's VPP on first use; the package's TestMain
// calls StopShared after the tests. A VPP outlives a test process killed
// before that (a go test timeout, SIGKILL): so that it does not run on,
// Start also starts a watchdog, a shell that waits for the end of a pipe
// whose other end only the test process holds, and then runs stop.sh. The
// kernel closes the pipe when the test process ends, however it ends.
package vpprun

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DirEnv names the environment variable with the VPP build folder.
const DirEnv = "NETAGENT_VPP_DIR"

// SocketEnv names the environment variable with the API socket of a VPP the
// user runs.
const SocketEnv = "VPP_API_SOCKET"

// Dir is the VPP build folder of the tests ("" when they use no VPP of
// their own).
func Dir() string { return os.Getenv(DirEnv) }

// VPP is one VPP process started from a build folder.
type VPP struct {
	// Dir is the build folder (start.sh, stop.sh, bin/vppctl).
	Dir string
	// RunDir holds VPP's sockets, pid file, log and startup.conf.
	RunDir string
	// Socket is the binary API socket, CLISocket vppctl's.
	Socket, CLISocket string

	// User tells a VPP the user runs (Attach): never restarted or stopped.
	User bool

	mu       sync.Mutex
	pid      int
	watchdog *exec.Cmd
	pipe     *os.File // the write end: closing it ends the watchdog, which stops VPP
	ownDir   bool     // RunDir was made by Start and is removed by Stop
	launched bool     // start.sh ran: RunDir/startup.conf is there
}

// Start starts a VPP from the build folder dir in runDir ("": a new
// temporary directory, removed by Stop) and returns when its API socket
// answers (start.sh waits for it). The error carries start.sh's message
// (a missing Debian package, a VPP that exited, a run directory in use).
func Start(dir, runDir string) (*VPP, error) {
	if _, err := os.Stat(filepath.Join(dir, "start.sh")); err != nil {
		return nil, fmt.Errorf("no VPP build at %s (%s=%s): %w", dir, DirEnv, dir, err)
	}
	v := &VPP{Dir: dir, RunDir: runDir}
	if runDir == "" {
		// Short: unix socket paths are limited (start.sh allows 90 bytes).
		d, err := os.MkdirTemp("", "nvpp")
		if err != nil {
			return nil, err
		}
		v.RunDir, v.ownDir = d, true
	}
	v.Socket = filepath.Join(v.RunDir, "api.sock")
	v.CLISocket = filepath.Join(v.RunDir, "cli.sock")
	if err := v.start(); err != nil {
		v.removeRunDir()
		return nil, err
	}
	if err := v.startWatchdog(); err != nil {
		_ = v.stop()
		v.removeRunDir()
		return nil, err
	}
	return v, nil
}

// CLISocketEnv names the environment variable with the CLI socket of the
// user's VPP (default: cli.sock beside its API socket).
const CLISocketEnv = "VPP_CLI_SOCKET"

// Attach describes the VPP the user runs with the API socket socket: its
// CLI socket is VPP_CLI_SOCKET, or cli.sock in the folder of socket; CLI
// uses bin/vppctl of NETAGENT_VPP_DIR, or vppctl from PATH. It is never
// restarted or stopped.
func Attach(socket string) *VPP {
	cli := os.Getenv(CLISocketEnv)
	if cli == "" {
		cli = filepath.Join(filepath.Dir(socket), "cli.sock")
	}
	return &VPP{Dir: Dir(), Socket: socket, CLISocket: cli, User: true}
}

// ForTests is the real VPP that the environment gives the tests: the
// user's (VPP_API_SOCKET, Attach), or the test process's own started from
// NETAGENT_VPP_DIR (Shared); nil, nil when the tests use vppsim.
func ForTests() (*VPP, error) {
	if s := os.Getenv(SocketEnv); s != "" {
		return Attach(s), nil
	}
	if Dir() == "" {
		return nil, nil
	}
	return Shared()
}

// start starts VPP: the first time with start.sh, which checks VPP's
// libraries (ldd of every plugin: seconds on a loaded machine) and writes
// RunDir/startup.conf; after that (Restart, Up) by launching bin/vpp with
// that startup.conf as start.sh does, detached, and waiting until its API
// socket exists and its console answers.
func (v *VPP) start() error {
	v.mu.Lock()
	launched := v.launched
	v.mu.Unlock()
	if launched {
		return v.relaunch()
	}
	cmd := exec.Command(filepath.Join(v.Dir, "start.sh"), v.RunDir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", cmd.Path, v.RunDir, err, strings.TrimSpace(stderr.String()))
	}
	pid, err := strconv.Atoi(strings.TrimSpace(stdout.String()))
	if err != nil {
		return fmt.Errorf("%s %s printed %q, not a PID: %v", cmd.Path, v.RunDir, stdout.String(), err)
	}
	v.mu.Lock()
	v.pid, v.launched = pid, true
	v.mu.Unlock()
	return nil
}

// relaunch starts bin/vpp again with the startup.conf start.sh wrote.
func (v *VPP) relaunch() error {
	conf := filepath.Join(v.RunDir, "startup.conf")
	// nohup and & as in start.sh: VPP is not the test process's child
	// (nothing to reap), and outlives it only until the watchdog stops it.
	cmd := exec.Command("/bin/sh", "-c", `cd / && nohup "$0" -c "$1" >"$2" 2>&1 </dev/null & echo $!`,
		filepath.Join(v.Dir, "bin", "vpp"), conf, filepath.Join(v.RunDir, "vpp.stdout"))
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("starting %s -c %s: %v", filepath.Join(v.Dir, "bin", "vpp"), conf, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		return fmt.Errorf("starting VPP in %s: no PID (%q)", v.RunDir, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if syscall.Kill(pid, 0) != nil {
			tail, _ := os.ReadFile(filepath.Join(v.RunDir, "vpp.stdout"))
			return fmt.Errorf("VPP (pid %d) exited during its start in %s: %s", pid, v.RunDir, strings.TrimSpace(string(tail)))
		}
		if _, err := os.Stat(v.Socket); err == nil {
			if _, err := v.CLI("show", "version"); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("VPP (pid %d) did not answer within 30 s; see %s/vpp.stdout and vpp.log", pid, v.RunDir)
		}
		time.Sleep(20 * time.Millisecond)
	}
	v.mu.Lock()
	v.pid = pid
	v.mu.Unlock()
	return nil
}

func (v *VPP) stop() error {
	cmd := exec.Command(filepath.Join(v.Dir, "stop.sh"), v.RunDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", cmd.Path, v.RunDir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// startWatchdog starts the shell that stops VPP once the pipe closes. It
// is in a process group of its own, so that a signal to the test's group
// (go test's SIGQUIT, a Ctrl-C) does not end it before it did its work.
func (v *VPP) startWatchdog() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command("/bin/sh", "-c", `cat >/dev/null; exec "$0" "$1" >/dev/null 2>&1`, filepath.Join(v.Dir, "stop.sh"), v.RunDir)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return fmt.Errorf("the watchdog of the VPP in %s: %w", v.RunDir, err)
	}
	_ = r.Close()
	v.watchdog, v.pipe = cmd, w
	return nil
}

// PID is the process ID of the running VPP (it changes with Restart).
func (v *VPP) PID() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.pid
}

// Restart stops VPP and starts it again in the same run directory: a new
// process with a new PID and an empty dataplane (only local0), at the same
// API socket. It returns when the new VPP answers.
func (v *VPP) Restart() error {
	if v.User {
		return fmt.Errorf("the VPP at %s is the user's (%s): the tests do not restart it", v.Socket, SocketEnv)
	}
	if err := v.stop(); err != nil {
		return err
	}
	return v.start()
}

// Down stops the VPP process, as a VPP that goes away, and leaves its run
// directory for Up.
func (v *VPP) Down() error {
	if v.User {
		return fmt.Errorf("the VPP at %s is the user's (%s): the tests do not stop it", v.Socket, SocketEnv)
	}
	return v.stop()
}

// Up starts VPP again after Down, in the same run directory (empty).
func (v *VPP) Up() error {
	if v.User {
		return fmt.Errorf("the VPP at %s is the user's (%s): the tests do not start it", v.Socket, SocketEnv)
	}
	return v.start()
}

// Lock waits for the turn of the caller on the VPP at socket, among the
// test processes that share it (the user's VPP: go test runs packages in
// parallel): an exclusive flock on a file named after the socket. unlock
// (closing the file) ends the turn; so does the end of the process.
func Lock(socket string) (unlock func(), err error) {
	sum := sha256.Sum256([]byte(socket))
	path := filepath.Join(os.TempDir(), fmt.Sprintf("netagent-vpptest-%x.lock", sum[:8]))
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644) // flock needs no write access: any user can take turns
	if err != nil {
		return nil, fmt.Errorf("the lock of the VPP at %s: %w", socket, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("the lock of the VPP at %s (%s): %w", socket, path, err)
	}
	return func() { _ = f.Close() }, nil
}

// Stop stops VPP (stop.sh) and the watchdog, and removes a run directory
// that Start made. Calling it again does nothing.
func (v *VPP) Stop() error {
	v.mu.Lock()
	pipe, watchdog := v.pipe, v.watchdog
	v.pipe, v.watchdog = nil, nil
	v.mu.Unlock()
	if pipe == nil {
		return nil
	}
	err := v.stop()
	_ = pipe.Close() // the watchdog runs stop.sh again: nothing left to stop
	_ = watchdog.Wait()
	v.removeRunDir()
	return err
}

func (v *VPP) removeRunDir() {
	if v.ownDir {
		_ = os.RemoveAll(v.RunDir)
	}
}

// CLI runs a command on VPP's console (vppctl) and returns what it printed.
func (v *VPP) CLI(args ...string) (string, error) {
	vppctl, err := v.vppctl()
	if err != nil {
		return "", err
	}
	cmd := exec.Command(vppctl, append([]string{"-s", v.CLISocket}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("vppctl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.ReplaceAll(string(out), "\r", ""), nil
}

// vppctl is the console client: bin/vppctl of the build folder, or vppctl
// from PATH for the user's VPP without one.
func (v *VPP) vppctl() (string, error) {
	if v.Dir != "" {
		return filepath.Join(v.Dir, "bin", "vppctl"), nil
	}
	path, err := exec.LookPath("vppctl")
	if err != nil {
		return "", fmt.Errorf("no vppctl for the VPP at %s: put it on PATH or set %s to a VPP build folder", v.Socket, DirEnv)
	}
	return path, nil
}

// HasCLI tells whether CLI can reach VPP's console: a vppctl to run and
// the CLI socket there; why says what is missing.
func (v *VPP) HasCLI() (ok bool, why string) {
	if _, err := v.vppctl(); err != nil {
		return false, err.Error()
	}
	if _, err := os.Stat(v.CLISocket); err != nil {
		return false, fmt.Sprintf("no CLI socket for the VPP at %s: %v (set %s)", v.Socket, err, CLISocketEnv)
	}
	return true, ""
}

var shared struct {
	once sync.Once
	vpp  *VPP
	err  error
}

// Shared is the test process's own VPP, started from Dir() on first use
// (and then reused: the tests of a package take turns on it). It fails
// when DirEnv is not set.
func Shared() (*VPP, error) {
	shared.once.Do(func() {
		dir := Dir()
		if dir == "" {
			shared.err = fmt.Errorf("%s is not set", DirEnv)
			return
		}
		shared.vpp, shared.err = Start(dir, "")
	})
	return shared.vpp, shared.err
}

// StopShared stops the VPP that Shared started, if any. A package's
// TestMain calls it after its tests.
func StopShared() {
	if shared.vpp != nil {
		_ = shared.vpp.Stop()
	}
}
