package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/netagent-io/netagent/pkg/models"
)

// agentProbeTimeout bounds the look at the agent's status that the
// commands working on etcd make on the side: an agent that does not answer
// within it is taken as none.
const agentProbeTimeout = time.Second

// agentProbe is GET /info/status made beside an etcd command: the agent's
// label and etcd, to warn when agentctl's label is not the agent's.
type agentProbe struct {
	done chan struct{}
	// status is the agent's status; nil when its REST API did not answer.
	status *agentStatus
}

// probeAgent starts reading the agent's status, bounded by
// agentProbeTimeout (or --timeout when shorter).
func (a *app) probeAgent(ctx context.Context) *agentProbe {
	p := &agentProbe{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		ctx, cancel := context.WithTimeout(ctx, min(a.timeout, agentProbeTimeout))
		defer cancel()
		var st agentStatus
		if a.restJSON(ctx, "GET", "/info/status", nil, &st) == nil {
			p.status = &st
		}
	}()
	return p
}

// wait returns the agent's status, nil when it did not answer (or no probe
// was started).
func (p *agentProbe) wait() *agentStatus {
	if p == nil {
		return nil
	}
	<-p.done
	return p.status
}

// withLabelCheck ends a command on the agent's etcd keys: when the agent
// that uses the same etcd has another label than agentctl, it does not
// read the keys the command wrote or read. The command's error says so;
// a command that succeeded warns on stderr.
func (a *app) withLabelCheck(err error) error {
	msg := a.labelMismatch(a.agent.wait())
	switch {
	case msg == "":
		return err
	case err != nil:
		return fmt.Errorf("%w; note: %s", err, msg)
	}
	fmt.Fprintln(a.stderr, "agentctl: warning: "+msg)
	return nil
}

// labelMismatch says what is wrong when the agent of st uses agentctl's
// etcd under another label; "" when all is well, or when it cannot be told
// (no agent, an agent without etcd or with another etcd).
func (a *app) labelMismatch(st *agentStatus) string {
	if st == nil || st.Label == "" || st.Label == a.label || !sameEtcd(st.Etcd.Endpoints, a.etcdEndpoints) {
		return ""
	}
	return fmt.Sprintf("the agent at %s is labelled %s, not %s (%s): it reads %s, not %s; give --label %s (or MICROSERVICE_LABEL=%s)",
		a.restBase(), st.Label, a.label, a.labelFrom, models.EtcdKeyPrefix(st.Label), models.EtcdKeyPrefix(a.label), st.Label, st.Label)
}

// sameEtcd tells whether two lists of etcd endpoints share one: the same
// host and port, with or without a scheme; localhost is 127.0.0.1, and an
// agent's embedded etcd listening on every address (0.0.0.0, ::) is any
// host at its port.
func sameEtcd(agent, ours []string) bool {
	for _, x := range agent {
		xh, xp := endpointHostPort(x)
		for _, y := range ours {
			yh, yp := endpointHostPort(y)
			if xp == yp && (xh == yh || xh == "0.0.0.0" || xh == "::") {
				return true
			}
		}
	}
	return false
}

// endpointHostPort is the host and port of an etcd endpoint
// (http://127.0.0.1:2379, 127.0.0.1:2379).
func endpointHostPort(endpoint string) (host, port string) {
	if _, rest, ok := strings.Cut(endpoint, "://"); ok {
		endpoint = rest
	}
	host, port, err := net.SplitHostPort(strings.TrimSuffix(endpoint, "/"))
	if err != nil {
		return endpoint, ""
	}
	if host == "localhost" {
		host = "127.0.0.1"
	}
	return host, port
}
