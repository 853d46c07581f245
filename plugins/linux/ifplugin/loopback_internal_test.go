package ifplugin

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
	"github.com/netagent-io/netagent/plugins/linux/nsplugin"
	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	"github.com/netagent-io/netagent/tests/netnstest"
)

// TestConfigureNeverTakesDownTheAgentsLoopback: the last rail behind
// Validate. A namespace reference that did not resolve to the agent's own
// namespace when the value was validated (a PID whose process came later)
// may resolve to it when the value is applied: configure then refuses to set
// the loopback down, with an error that is not retried. It runs only in a
// namespace of its own (a failure takes lo down).
func TestConfigureNeverTakesDownTheAgentsLoopback(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (sets links down)")
	}
	if !netnstest.Isolated() {
		t.Skip("runs only in a network namespace of its own (netnstest): a failure would take down the caller's lo")
	}
	ns, err := nsplugin.NewManager()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ns.Close)
	p := New(ns, slog.New(slog.NewTextHandler(io.Discard, nil)))
	h, err := ns.Handle(nsplugin.Ref{}, false)
	if err != nil {
		t.Fatal(err)
	}
	lo, err := h.LinkByName("lo")
	if err != nil || lo.Attrs().Flags&net.FlagUp == 0 {
		t.Fatalf("lo of the tests' namespace: %v, %v; want it up", lo, err)
	}
	err = p.configure(nsplugin.Ref{}, h, lo, nil, &linuxif.Interface{Name: "lo", Type: linuxif.Interface_LOOPBACK})
	var terminal *api.NonRetriableError
	if !errors.As(err, &terminal) || !strings.Contains(err.Error(), "refusing to set lo down: it is the loopback of the agent's own network namespace") {
		t.Errorf("configure lo down: %v, want a non-retriable refusal", err)
	}
	if lo, err := h.LinkByName("lo"); err != nil || lo.Attrs().Flags&net.FlagUp == 0 {
		t.Fatalf("lo after configure: %v, %v; want it up", lo, err)
	}
}
