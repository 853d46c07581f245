package main

import (
	"context"
	"log/slog"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// linuxPart is the Linux side: the namespace manager, the interface and L3
// plugins (their descriptors registered by newLinuxPart; each keeps a
// netlink socket per namespace for its batches) and the watcher of the host interfaces, which also reports the drift of the
// agent's links, addresses, routes and ARP entries (ifplugin's package
// doc, "Drift").
type linuxPart struct {
	ns      *nsplugin.Manager
	ifp     *ifplugin.Plugin
	l3      *l3plugin.Plugin
	watcher *ifplugin.Watcher
}

// newLinuxPart builds the Linux plugins and registers their descriptors
// with s. Nothing runs until run.
func newLinuxPart(cfg Config, s *kvscheduler.Scheduler, log *slog.Logger) (*linuxPart, error) {
	nsm, err := nsplugin.NewManager()
	if err != nil {
		return nil, err
	}
	ifp := ifplugin.New(nsm, log)
	ifp.SetLabel(cfg.Label)
	ifp.SetVPPDisabled(cfg.VPP.Disabled)
	l3 := l3plugin.New(nsm, l3plugin.SchedulerInterfaces(s), log)
	l3.SetInterfaceLister(l3plugin.SchedulerInterfaceNames(s))
	l3.SetAdoptOriginalRoutes(cfg.Linux.AdoptOriginalRoutes)
	p := &linuxPart{ns: nsm, ifp: ifp, l3: l3}
	if err := s.RegisterKVDescriptor(append(ifp.Descriptors(), ifplugin.WatcherDescriptor())...); err != nil {
		p.close()
		return nil, err
	}
	if err := s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
		p.close()
		return nil, err
	}
	p.watcher = ifplugin.NewWatcher(nsm, s, log)
	p.watcher.SetLinkObjects(l3) // routes and ARP entries changed outside the agent
	return p, nil
}

// run runs the watcher until ctx ends.
func (p *linuxPart) run(ctx context.Context) { p.watcher.Run(ctx) }

// close closes the plugins' netlink sockets, then the namespace handles;
// run must have returned and the scheduler must be closed (no descriptor
// call after this: Agent.release closes the scheduler first).
func (p *linuxPart) close() {
	p.l3.Close()
	p.ifp.Close()
	p.ns.Close()
}
