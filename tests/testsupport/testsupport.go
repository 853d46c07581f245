// Package testsupport holds small helpers shared by the tests: a
// self-signed certificate for TLS listeners, a log buffer that concurrent
// writers can share, free loopback ports, the live heap after a
// collection, waiting for a condition with a deadline. Tests only: nothing
// of the daemon imports it.
package testsupport

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Cert is a self-signed certificate for 127.0.0.1: a server's certificate
// and key (CertFile, KeyFile), and the pool that trusts it (Pool; CertFile
// is also its CA file).
type Cert struct {
	CertFile, KeyFile string
	Pool              *x509.CertPool
}

// SelfSigned writes a self-signed ECDSA certificate for 127.0.0.1, valid
// for an hour around now, and its key into a temporary directory of the
// test.
func SelfSigned(t testing.TB) *Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netagent test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c := &Cert{CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem"), Pool: x509.NewCertPool()}
	c.Pool.AddCert(cert)
	if err := os.WriteFile(c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return c
}

// SyncBuffer is a bytes.Buffer for concurrent writers (a process's stdout
// and stderr, a logger).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Tail returns the last n bytes of s, marked as cut when it is longer.
func Tail(s string, n int) string {
	if len(s) > n {
		return "...\n" + s[len(s)-n:]
	}
	return s
}

// LiveHeap returns the bytes of live heap objects after a full collection
// (two, so that what the first freed is swept).
func LiveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// Eventually calls check every 10 ms until it returns nil, and fails the
// test with its last error when within passes first. It returns how long
// it took.
func Eventually(t testing.TB, within time.Duration, check func() error) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(within)
	for {
		err := check()
		if err == nil {
			return time.Since(start)
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("not within %v: %v", within, err)
		}
	}
}

// handedOut are the ports FreePorts returned in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreePorts returns n distinct loopback TCP ports that were free a moment
// ago and that no earlier call of this process returned, chosen at random
// below the kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768
// and up by default): the kernel gives ports of that range to every
// outgoing connection and every listener on port 0, so a port found there
// (listening on :0, then closing) can be taken by any connection of the
// tests running meanwhile before the test binds it again, and an agent's
// embedded etcd then fails with "address already in use".
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	low := ephemeralLow()
	const from = 10000
	handedOut.Lock()
	defer handedOut.Unlock()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries > 10000 {
			t.Fatalf("no free loopback port found in %d-%d", from, low-1)
		}
		p := from + mrand.IntN(low-from)
		if handedOut.ports[p] {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken
		}
		_ = l.Close()
		handedOut.ports[p] = true
		ports = append(ports, p)
	}
	return ports
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768
// when it cannot be read, or when it leaves too little below it).
func ephemeralLow() int {
	data, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(string(data), &low, &high); err != nil || low < 12000 {
		return 32768
	}
	return low
}
