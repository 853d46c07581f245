package etcdcluster

import (
	"net"
	"sync"
	"sync/atomic"
)

// proxy passes TCP connections from its own loopback port to a member's
// client port, and can hang them (hold) or close them.
type proxy struct {
	target string
	ln     net.Listener

	// isolated is set while the member is cut off from its peers (the
	// cluster's Leader skips it).
	isolated atomic.Bool

	mu      sync.Mutex
	held    bool
	resume  chan struct{} // closed by release
	conns   map[net.Conn]struct{}
	closed  bool
	running sync.WaitGroup
}

func newProxy(target string) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}, resume: make(chan struct{})}
	close(p.resume)
	p.running.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.running.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.running.Add(1)
		go func() {
			defer p.running.Done()
			p.serve(c)
		}()
	}
}

// serve passes c to the target until either side closes.
func (p *proxy) serve(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close() // the member is stopped: as if its port refused
		return
	}
	if !p.track(c, u) {
		return
	}
	done := make(chan struct{}, 2)
	pass := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				<-p.gate()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		c.Close()
		u.Close()
		done <- struct{}{}
	}
	go pass(u, c)
	go pass(c, u)
	<-done
	<-done
	p.untrack(c, u)
}

// gate returns a channel closed when bytes may pass.
func (p *proxy) gate() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.resume
}

func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.conns, c)
	}
}

// hold stops every byte until release. A read already returned waits
// before its write.
func (p *proxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		p.held = true
		p.resume = make(chan struct{})
	}
}

func (p *proxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held {
		p.held = false
		close(p.resume)
	}
}

// dropConnections closes every connection passing through.
func (p *proxy) dropConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// close stops the proxy and closes its connections.
func (p *proxy) close() {
	p.ln.Close()
	p.release()
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.running.Wait()
}
