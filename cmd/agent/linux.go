package main

import (
	"context"
	"log/slog"

	"github.com/netagent-io/netagent/plugins/kvscheduler"
	"github.com/netagent-io/netagent/plugins/linux/ifplugin"
	"github.com/netagent-io/netagent/plugins/linux/l3plugin"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
)

// linuxPart is the Linux side: the namespace manager, the descriptors of
// the interface and L3 plugins (registered by newLinuxPart) and the
// watcher of the host interfaces, which also reports the drift of the
// agent's links, addresses, routes and ARP entries (ifplugin's package
// doc, "Drift").
type linuxPart struct {
	ns      *nsplugin.Manager
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
	if err := s.RegisterKVDescriptor(append(ifp.Descriptors(), ifplugin.WatcherDescriptor())...); err != nil {
		nsm.Close()
		return nil, err
	}
	if err := s.RegisterKVDescriptor(l3.Descriptors()...); err != nil {
		nsm.Close()
		return nil, err
	}
	w := ifplugin.NewWatcher(nsm, s, log)
	w.SetLinkObjects(l3) // routes and ARP entries changed outside the agent
	return &linuxPart{ns: nsm, watcher: w}, nil
}

// run runs the watcher until ctx ends.
func (p *linuxPart) run(ctx context.Context) { p.watcher.Run(ctx) }

// close releases the namespace handles; run must have returned.
func (p *linuxPart) close() { p.ns.Close() }
