package vpptest

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	linuxifplugin "github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	"github.com/netagent-io/netagent/tests/vpprun"
)

// TrafficAgent is a real VPP of its own (vpprun, in dir) and an agent configuring
// it, for the tests that send traffic through VPP: a scheduler with the
// interface descriptors and those of the plugins More adds.
type TrafficAgent struct {
	VPP *vpprun.VPP
	M   *vppconn.Manager
	S   *kvscheduler.Scheduler
}

// More adds a plugin to a TrafficAgent: its area and its descriptors, made on
// the agent's connection and scheduler.
type More func(m *vppconn.Manager, s *kvscheduler.Scheduler) (vppconn.Area, []*api.KVDescriptor)

// StartTrafficAgent starts a VPP in dir and an agent for it, with the plugins of
// more, told that the Linux host interfaces hostIfs exist (as the Linux
// interface watcher would: AF_PACKET interfaces wait for theirs);
// everything stops at the end of the test.
func StartTrafficAgent(t *testing.T, dir string, log *slog.Logger, more []More, hostIfs ...string) *TrafficAgent {
	t.Helper()
	v, err := vpprun.Start(dir, "")
	if err != nil {
		t.Fatalf("starting a VPP: %v", err)
	}
	t.Cleanup(func() { _ = v.Stop() })
	x := &TrafficAgent{VPP: v}
	x.M = vppconn.New(vppconn.Options{Socket: v.Socket, CallTimeout: 5 * time.Second, Log: log})
	ip := ifplugin.New(x.M, log)
	for _, area := range ip.Areas() {
		x.M.AddArea(area)
	}
	x.S = kvscheduler.New(kvscheduler.Options{Logger: log})
	ds := ip.Descriptors()
	for _, add := range more {
		area, more := add(x.M, x.S)
		x.M.AddArea(area)
		ds = append(ds, more...)
	}
	if err := x.S.RegisterKVDescriptor(ds...); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); x.M.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	t.Cleanup(x.S.Close)
	WaitConnected(t, x.M, nil)
	for _, h := range hostIfs {
		if err := x.S.PushSBNotification(api.KVWithMetadata{Key: linuxifplugin.HostNameKey(h), Value: &linuxif.Interface{Name: h}}); err != nil {
			t.Fatal(err)
		}
	}
	x.S.TransactionBarrier()
	return x
}

// Commit applies the values in one transaction, failing the test on an
// error.
func (x *TrafficAgent) Commit(t *testing.T, vs ...proto.Message) {
	t.Helper()
	txn := x.S.StartNBTransaction()
	for _, v := range vs {
		key, err := models.Default.Key(v)
		if err != nil {
			t.Fatal(err)
		}
		txn.SetValue(key, v)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatalf("VPP %s: commit: %v", x.VPP.RunDir, err)
	}
}

// Delete deletes the values of keys in one transaction, failing the test
// on an error.
func (x *TrafficAgent) Delete(t *testing.T, keys ...string) {
	t.Helper()
	txn := x.S.StartNBTransaction()
	for _, k := range keys {
		txn.SetValue(k, nil)
	}
	if _, err := txn.Commit(context.Background(), api.TxnOptions{}); err != nil {
		t.Fatalf("VPP %s: delete: %v", x.VPP.RunDir, err)
	}
}

// Show is what VPP's console answers to the commands (each a command and
// its arguments), for failure messages.
func (x *TrafficAgent) Show(cmds ...[]string) string {
	var b strings.Builder
	for _, cmd := range cmds {
		out, err := x.VPP.CLI(cmd...)
		fmt.Fprintf(&b, "%s: %s%v\n", strings.Join(cmd, " "), out, err)
	}
	return b.String()
}
