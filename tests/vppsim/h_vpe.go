package vppsim

import (
	"time"

	"go.fd.io/govpp/api"
	"go.fd.io/govpp/binapi/memclnt"
	"go.fd.io/govpp/binapi/vpe"
	"go.fd.io/govpp/binapi/vpe_types"
)

// Version is what show_version reports.
const Version = "25.10-release"

func sockclntCreate(c *call, m *memclnt.SockclntCreate) api.Message {
	c.s.log.Debug("vppsim: sockclnt_create", "client", c.cl.index, "name", m.Name)
	return &memclnt.SockclntCreateReply{
		Index:        c.cl.index,
		Count:        uint16(len(c.s.table.entries)),
		MessageTable: c.s.table.entries,
	}
}

func sockclntDelete(c *call, _ *memclnt.SockclntDelete) api.Message {
	delete(c.st.ifEvents, c.cl)
	return &memclnt.SockclntDeleteReply{}
}

func memclntKeepalive(*call, *memclnt.MemclntKeepalive) api.Message {
	return &memclnt.MemclntKeepaliveReply{}
}

func controlPing(c *call, _ *memclnt.ControlPing) api.Message {
	return &memclnt.ControlPingReply{ClientIndex: c.cl.index, VpePID: c.s.pid}
}

func showVersion(*call, *vpe.ShowVersion) api.Message {
	return &vpe.ShowVersionReply{
		Program:        "vpe",
		Version:        Version,
		BuildDate:      "2025-10-29T12:00:00",
		BuildDirectory: "/w/workspace/vpp-merge-2510-ubuntu2404-x86_64",
	}
}

func showVpeSystemTime(*call, *vpe.ShowVpeSystemTime) api.Message {
	return &vpe.ShowVpeSystemTimeReply{VpeSystemTime: vpe_types.NewTimestamp(time.Now())}
}
