package main

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestChangeConnectsWhileReadingTheDocument: config update and config
// delete open their gRPC connection before the document is read, so that
// reading and decoding a big one and connecting (TCP, HTTP/2, TLS) overlap.
// The document comes on standard input and is held back until the agent's
// port has seen the connection; without the early dial agentctl would
// connect only after reading it (the port would wait in vain, and the
// test fail when its deadline passes). A document that is refused is
// still refused with its own error.
func TestChangeConnectsWhileReadingTheDocument(t *testing.T) {
	for _, verb := range []string{"update", "delete"} {
		t.Run(verb, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			accepted := make(chan net.Conn, 1)
			go func() {
				c, err := ln.Accept()
				if err == nil {
					accepted <- c
				}
			}()
			stdin, feed := io.Pipe()
			var out, errOut bytes.Buffer
			done := make(chan int, 1)
			port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
			go func() {
				done <- run([]string{"config", verb, "--grpc-port", port, "--timeout", "2s", "-"}, stdin, &out, &errOut)
			}()
			select {
			case c := <-accepted:
				t.Cleanup(func() { c.Close() })
			case code := <-done:
				t.Fatalf("agentctl ended (exit %d) before connecting: %s", code, errOut.String())
			case <-time.After(10 * time.Second):
				t.Fatal("no connection to the agent's port while the document was being read")
			}
			// A document of an unknown section: its own error, not the
			// connection's.
			_, _ = feed.Write([]byte("bogus_config:\n  routes: []\n"))
			feed.Close()
			if code := <-done; code == 0 || !strings.Contains(errOut.String(), "bogus_config") {
				t.Errorf("exit %d, stderr %q: want the document's error, naming the unknown section", code, errOut.String())
			}
		})
	}
}
