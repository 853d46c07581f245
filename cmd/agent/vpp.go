package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/orchestrator"
	vppacl "github.com/netagent-io/netagent/plugins/vpp/aclplugin"
	vppif "github.com/netagent-io/netagent/plugins/vpp/ifplugin"
	vppl2 "github.com/netagent-io/netagent/plugins/vpp/l2plugin"
	vppl3 "github.com/netagent-io/netagent/plugins/vpp/l3plugin"
	vppnat "github.com/netagent-io/netagent/plugins/vpp/natplugin"
	"github.com/netagent-io/netagent/plugins/vpp/vppconn"
)

// vppPart is the VPP side: the connection manager (VPP is connected in the
// background; while it is away the operations of VPP values fail with "VPP
// is not connected"), the descriptors of the interface, L2, L3, ACL and NAT44 plugins
// (registered by newVPPPart), the link state watcher (which also reports
// the agent's interfaces deleted or set to another admin state outside the
// agent: ifplugin's package doc, "Drift"), and the resync that
// brings VPP back to the desired state each time it connects
// (orchestrator.SouthboundResync: after a restart VPP is empty).
type vppPart struct {
	conn   *vppconn.Manager
	links  *vppif.LinkStateWatcher
	resync *orchestrator.SouthboundResync
	// firstConnect is closed when VPP connects the first time.
	firstConnect     chan struct{}
	firstConnectOnce sync.Once
	// startWaitOver is closed when waitFirstConnect returned: from then
	// on VPP not connected is an error, not the agent starting.
	startWaitOver chan struct{}
}

// firstConnectWait bounds how long Run waits for VPP before it starts the
// sources: a running VPP connects within milliseconds, and the first full
// resync then finds what it has (otherwise its Retrieves fail, it plans
// to create everything, and those operations fail until the resync after
// the connect). Without VPP the agent starts after this wait.
const firstConnectWait = 3 * time.Second

// newVPPPart builds the VPP plugins, registers their descriptors with s and
// the connection's metrics with reg. Nothing runs until run.
func newVPPPart(cfg Config, s *kvscheduler.Scheduler, o *orchestrator.Orchestrator, reg prometheus.Registerer, log *slog.Logger) (*vppPart, error) {
	p := &vppPart{resync: o.NewSouthboundResync("VPP"), firstConnect: make(chan struct{}), startWaitOver: make(chan struct{})}
	p.conn = vppconn.New(vppconn.Options{Socket: cfg.VPP.Socket, CallTimeout: cfg.VPP.CallTimeout.Duration, Log: log,
		OnConnect: p.connected})
	vif := vppif.New(p.conn, log)
	vif.SetLinuxDisabled(cfg.Linux.Disabled)
	l2 := vppl2.New(p.conn, vppif.SchedulerInterfaces(s), log)
	l2.SetInterfaceLister(vppif.SchedulerInterfaceNames(s))
	l3 := vppl3.New(p.conn, vppif.SchedulerInterfaces(s), log)
	l3.SetInterfaceLister(vppif.SchedulerInterfaceNames(s))
	acl := vppacl.New(p.conn, vppif.SchedulerInterfaces(s), log)
	acl.SetInterfaceLister(vppif.SchedulerInterfaceNames(s))
	nat := vppnat.New(p.conn, vppif.SchedulerInterfaces(s), log)
	nat.SetInterfaceLister(vppif.SchedulerInterfaceNames(s))
	for _, a := range append(vif.Areas(), l2.Area(), l3.Area(), acl.Area(), nat.Area()) {
		p.conn.AddArea(a)
	}
	for _, ds := range [][]*api.KVDescriptor{vif.Descriptors(), l2.Descriptors(), l3.Descriptors(), acl.Descriptors(), nat.Descriptors()} {
		if err := s.RegisterKVDescriptor(ds...); err != nil {
			return nil, err
		}
	}
	p.links = vppif.NewLinkStateWatcher(p.conn, s, log)
	p.links.SetDriftReporter(s)
	p.conn.AddArea(p.links.Area())
	if err := p.conn.Register(reg); err != nil {
		return nil, err
	}
	return p, nil
}

// connected is the connection's OnConnect (called on its goroutine, which
// run starts after newVPPPart built everything it reads).
func (p *vppPart) connected(restarted, _ bool) {
	p.firstConnectOnce.Do(func() { close(p.firstConnect) })
	p.links.Resync()
	p.resync.Request(fmt.Sprintf("VPP connected (restarted: %v)", restarted))
}

// run starts the watcher, the resync and the connection, on goroutines
// counted by wg that end with ctx.
func (p *vppPart) run(ctx context.Context, wg *sync.WaitGroup) {
	wg.Add(3)
	go func() { defer wg.Done(); p.links.Run(ctx) }()
	go func() { defer wg.Done(); p.resync.Run(ctx) }()
	go func() { defer wg.Done(); p.conn.Run(ctx) }()
}

// waitFirstConnect waits until VPP connects the first time, at most
// firstConnectWait (or until ctx ends). Call it once.
func (p *vppPart) waitFirstConnect(ctx context.Context) {
	defer close(p.startWaitOver)
	t := time.NewTimer(firstConnectWait)
	defer t.Stop()
	select {
	case <-p.firstConnect:
	case <-t.C:
	case <-ctx.Done():
	}
}

// notReady says why VPP keeps the agent from being ready (nothing when it
// does not).
func (p *vppPart) notReady() []string { return p.conn.Status().NotReady() }
