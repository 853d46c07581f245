package main

import (
	"bytes"
	"net"
	"strconv"
	"strings"
	"testing"
)

// A server that speaks first (an HTTP/2 server's settings frame, as the
// agent's gRPC port sends it): the REST client either reads it as a
// malformed response or as one nobody asked for, depending on whether its
// request was written first (or, while writing it, finds the connection it
// closed on that answer); the server then closes, as gRPC does. All say the
// same one line: not HTTP, maybe the gRPC port.
func TestRESTPortAnsweringFirst(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	settings := []byte{0, 0, 6, 4, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0x40, 0}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(settings)
			go func() {
				// As gRPC does with a request that is no HTTP/2 preface:
				// read it, and close.
				_, _ = c.Read(make([]byte, 4096))
				c.Close()
			}()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	for range 5 {
		var stdout, stderr bytes.Buffer
		code := run([]string{"values", "--host", "127.0.0.1", "--rest-port", strconv.Itoa(port), "--timeout", "5s"}, strings.NewReader(""), &stdout, &stderr)
		msg := stderr.String()
		if code != exitError || strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "agentctl: ") {
			t.Fatalf("exit %d, stderr %q: want exit %d and one line starting with agentctl:", code, msg, exitError)
		}
		for _, want := range []string{"REST API", "not HTTP", "gRPC port", "--rest-port"} {
			if !strings.Contains(msg, want) {
				t.Errorf("stderr %q does not contain %q", msg, want)
			}
		}
	}
}
