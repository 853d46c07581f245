package main

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// closedPorts returns n loopback ports nothing listens on.
func closedPorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
		l.Close()
	}
	return ports
}

// TestEtcdEndpointsPrecedence: --etcd-endpoints replaces the default and
// ETCD_ENDPOINTS; given twice, the second replaces the first, as any
// other flag given twice; one value with commas is a list. The endpoints
// used are those the error of an etcd that is not there names, each.
func TestEtcdEndpointsPrecedence(t *testing.T) {
	p := closedPorts(t, 3)
	a, b, c := "127.0.0.1:"+p[0], "127.0.0.1:"+p[1], "127.0.0.1:"+p[2]
	for _, tc := range []struct {
		name string
		env  string
		args []string
		want []string
	}{
		{"flag twice", "", []string{"--etcd-endpoints", a, "--etcd-endpoints", b}, []string{b}},
		{"flag over the environment", a, []string{"--etcd-endpoints", b}, []string{b}},
		{"flag twice over the environment", a, []string{"--etcd-endpoints", b, "--etcd-endpoints", c}, []string{c}},
		{"the environment over the default", a + ", " + b, nil, []string{a, b}},
		{"a list in one flag", "", []string{"--etcd-endpoints", a + "," + c}, []string{a, c}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("ETCD_ENDPOINTS", tc.env)
			_, stderr, code := runCtl(append([]string{"kvdb", "list", "--timeout", "1s"}, tc.args...)...)
			for _, endpoint := range []string{a, b, c, "127.0.0.1:2379"} {
				if used := slices.Contains(tc.want, endpoint); code != exitError || strings.Contains(stderr, "etcd at "+endpoint+" ") != used {
					t.Errorf("kvdb list %s with ETCD_ENDPOINTS=%q: exit %d, %q; want the error of etcd at %s",
						strings.Join(tc.args, " "), tc.env, code, stderr, strings.Join(tc.want, " and "))
					break
				}
			}
		})
	}
	t.Run("empty", func(t *testing.T) {
		_, stderr, code := runCtl("kvdb", "list", "--etcd-endpoints", " , ")
		if code != exitError || !strings.Contains(stderr, "--etcd-endpoints") || !strings.Contains(stderr, "at least one") {
			t.Errorf("kvdb list --etcd-endpoints ' , ': exit %d, %q", code, stderr)
		}
	})
}
