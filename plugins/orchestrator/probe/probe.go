// Package probe runs the checks a change may name, which must pass once
// it is applied (issue 19: "probes that roll back"): ping an address, open
// a TCP connection, GET an HTTP URL, each within its timeout and, for a
// probe that names one, from a named network namespace (the namespaces of
// `ip netns`, /var/run/netns/NAME).
//
// A probe passes when:
//
//   - Ping: an ICMP (ICMPv6) echo reply comes from the target address; an
//     echo request is sent every 200 ms until one comes or the timeout
//     ends (the first requests may be lost while the kernel resolves the
//     next hop). Needs raw sockets (the agent runs as root).
//   - TCP: a connection to host:port is established (then closed).
//   - HTTP: a GET of the URL (http or https) answers with a status below
//     400 within the timeout (redirects followed, as net/http does).
//
// Check tells what is wrong with a probe before anything runs (the kind,
// the target's form, a timeout between 1 ms and MaxTimeout, a namespace
// name); Run runs probes concurrently and gives each its Result. A probe
// whose namespace does not exist fails with an error naming it; Run never
// fails as a whole.
package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netns"
)

// Kind is what a probe does.
type Kind int

// The kinds of probes.
const (
	Ping Kind = iota + 1
	TCP
	HTTP
)

func (k Kind) String() string {
	switch k {
	case Ping:
		return "ping"
	case TCP:
		return "tcp"
	case HTTP:
		return "http"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// MaxTimeout is the longest timeout a probe may have: a probe is a check
// that a change left the host reachable, not a wait.
const MaxTimeout = time.Minute

// Probe is one check.
type Probe struct {
	Kind Kind
	// Target is an IP address (Ping), host:port (TCP) or an http(s) URL
	// (HTTP).
	Target string
	// Namespace, when set, is the named network namespace (ip netns) the
	// probe runs from; empty: the agent's.
	Namespace string
	// Timeout bounds the probe (1 ms to MaxTimeout).
	Timeout time.Duration
}

func (p Probe) String() string {
	s := p.Kind.String() + " " + p.Target
	if p.Namespace != "" {
		s += " from netns " + p.Namespace
	}
	return s
}

// Check tells what is wrong with p, naming the field.
func (p Probe) Check() error {
	switch {
	case p.Timeout <= 0:
		return fmt.Errorf("probe %s: timeout %v: want a positive duration", p, p.Timeout)
	case p.Timeout > MaxTimeout:
		return fmt.Errorf("probe %s: timeout %v: at most %v", p, p.Timeout, MaxTimeout)
	case p.Namespace != "" && (strings.ContainsAny(p.Namespace, "/\x00") || p.Namespace == "." || p.Namespace == ".."):
		return fmt.Errorf("probe %s: namespace %q is not a name of ip netns", p, p.Namespace)
	}
	switch p.Kind {
	case Ping:
		if a, err := netip.ParseAddr(p.Target); err != nil || a.Zone() != "" {
			return fmt.Errorf("probe %s: target %q: want an IP address", p, p.Target)
		}
	case TCP:
		host, port, err := net.SplitHostPort(p.Target)
		if err != nil || host == "" || port == "" {
			return fmt.Errorf("probe %s: target %q: want host:port", p, p.Target)
		}
	case HTTP:
		u, err := url.Parse(p.Target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("probe %s: target %q: want an http:// or https:// URL", p, p.Target)
		}
	default:
		return fmt.Errorf("probe %s: unknown kind (ping, tcp or http)", p)
	}
	return nil
}

// Result is what one probe found.
type Result struct {
	Probe Probe
	// Err is nil when the probe passed, else why it did not.
	Err  error
	Took time.Duration
}

// OK tells whether the probe passed.
func (r Result) OK() bool { return r.Err == nil }

// Run runs the probes concurrently, each within its own timeout (and ctx),
// and returns their results in the order of probes. A probe Check refuses
// fails with Check's error, without running.
func Run(ctx context.Context, probes []Probe) []Result {
	out := make([]Result, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		out[i].Probe = p
		if err := p.Check(); err != nil {
			out[i].Err = err
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, p.Timeout)
			defer cancel()
			start := time.Now()
			err := run(pctx, p)
			timedOut := pctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
			if err != nil && timedOut && ctx.Err() == nil {
				err = fmt.Errorf("no answer within %v: %w", p.Timeout, err)
			}
			if err != nil {
				err = fmt.Errorf("probe %s: %w", p, err)
			}
			out[i].Err, out[i].Took = err, time.Since(start)
		}()
	}
	wg.Wait()
	return out
}

func run(ctx context.Context, p Probe) error {
	switch p.Kind {
	case Ping:
		return ping(ctx, p)
	case TCP:
		c, err := dial(ctx, p.Namespace, p.Target)
		if err != nil {
			return err
		}
		return c.Close()
	case HTTP:
		return get(ctx, p)
	}
	return errors.New("unknown kind")
}

// inNamespace runs f with its OS thread in the named namespace (the
// agent's when name is empty). Sockets f opens stay in that namespace. If
// the way back fails, the thread is never unlocked and ends with its
// goroutine.
func inNamespace(name string, f func() error) error {
	if name == "" {
		return f()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		origin, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("the agent's namespace: %w", err)
			return
		}
		defer origin.Close()
		target, err := netns.GetFromName(name)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("namespace %q: %w", name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("entering namespace %q: %w", name, err)
			return
		}
		ferr := f()
		if err := netns.Set(origin); err != nil {
			errc <- fmt.Errorf("returning from namespace %q: %v (after: %v)", name, err, ferr)
			return // the thread stays locked and dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// dial opens a TCP connection from the namespace: the socket is made in it
// (inNamespace), the connection established outside (the socket keeps its
// namespace).
func dial(ctx context.Context, namespace, address string) (net.Conn, error) {
	var conn net.Conn
	err := inNamespace(namespace, func() error {
		var err error
		conn, err = (&net.Dialer{}).DialContext(ctx, "tcp", address)
		return err
	})
	return conn, err
}

func get(ctx context.Context, p Probe) error {
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, address string) (net.Conn, error) {
			return dial(ctx, p.Namespace, address)
		},
		DisableKeepAlives: true,
	}}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Target, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	return nil
}
