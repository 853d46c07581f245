package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// agentStatus is the answer of GET /info/status.
type agentStatus struct {
	Label      string            `json:"label"`
	Version    map[string]string `json:"version"`
	Started    time.Time         `json:"started"`
	Uptime     string            `json:"uptime"`
	Ready      bool              `json:"ready"`
	WaitingFor []string          `json:"waiting_for"`
	Degraded   []string          `json:"degraded"`
	FirstSync  bool              `json:"first_sync"`
	Etcd       struct {
		Endpoints []string `json:"endpoints"`
		Embedded  bool     `json:"embedded"`
	} `json:"etcd"`
	Northbound []sourceStatus `json:"northbound"`
	Linux      bool           `json:"linux"`
	VPP        struct {
		Enabled    bool                `json:"enabled"`
		Socket     string              `json:"socket"`
		Connected  bool                `json:"connected"`
		PID        uint32              `json:"pid"`
		Version    string              `json:"version"`
		Reconnects int                 `json:"reconnects"`
		Error      string              `json:"error"`
		Disabled   map[string][]string `json:"disabled"`
	} `json:"vpp"`
	ValuesByState      map[string]int            `json:"values_by_state"`
	ValuesByDescriptor map[string]map[string]int `json:"values_by_descriptor"`
	QueueLength        int                       `json:"queue_length"`
	Transactions       map[string]uint64         `json:"transactions"`
	// PendingConfirmation is the gRPC change pending confirmation.
	PendingConfirmation *struct {
		Seq         uint64    `json:"seq"`
		Description string    `json:"description"`
		Deadline    time.Time `json:"deadline"`
		TimeLeft    string    `json:"time_left"`
		Keys        []string  `json:"keys"`
	} `json:"pending_confirmation"`
}

// sourceStatus is a northbound source in GET /info/status.
type sourceStatus struct {
	Source   string     `json:"source"`
	State    string     `json:"state"`
	Since    *time.Time `json:"since"`
	For      string     `json:"for"`
	Error    string     `json:"error"`
	Revision int64      `json:"revision"`
	Losses   uint64     `json:"losses"`
	Synced   bool       `json:"synced"`
}

// connection describes the connection of a source that has one (etcd):
// "connected since T, revision R", "LOST since T (for D): ERROR; last
// revision R"...
func (s sourceStatus) connection() string {
	since := ""
	if s.Since != nil {
		since = " since " + s.Since.Local().Format("2006-01-02 15:04:05")
		if s.For != "" {
			since += " (" + s.For + ")"
		}
	}
	var out string
	switch s.State {
	case "connected":
		out = "connected" + since
		if s.Revision > 0 {
			out += fmt.Sprintf(", revision %d", s.Revision)
		}
	case "lost", "stopped":
		out = strings.ToUpper(s.State) + since
		if s.Error != "" {
			out += ": " + s.Error
		}
		if s.Revision > 0 {
			out += fmt.Sprintf("; last revision %d", s.Revision)
		}
	default: // connecting, or a state this agentctl does not know
		out = s.State + since
		if s.Error != "" {
			out += ": " + s.Error
		}
	}
	if s.Losses > 0 {
		out += "; " + count(int(s.Losses), "loss", "losses") + " since the start"
	}
	return out
}

// stateOrder lists value states in the order an operator reads them:
// good first, then waiting, then bad.
var stateOrder = []string{"CONFIGURED", "OBTAINED", "DISCOVERED", "PENDING", "UNIMPLEMENTED", "RETRYING", "FAILED", "INVALID", "MISSING", "REMOVED"}

func orderedStates(counts map[string]int) []string {
	rank := map[string]int{}
	for i, s := range stateOrder {
		rank[s] = i + 1
	}
	var states []string
	for s := range counts {
		states = append(states, s)
	}
	sort.Slice(states, func(i, j int) bool {
		ri, rj := rank[states[i]], rank[states[j]]
		if ri == 0 {
			ri = len(stateOrder) + 1
		}
		if rj == 0 {
			rj = len(stateOrder) + 1
		}
		if ri != rj {
			return ri < rj
		}
		return states[i] < states[j]
	})
	return states
}

func countsLine(counts map[string]int) string {
	var parts []string
	total := 0
	for _, s := range orderedStates(counts) {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		total += counts[s]
	}
	if total == 0 {
		return "none"
	}
	return fmt.Sprintf("%d (%s)", total, strings.Join(parts, ", "))
}

func (a *app) statusCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show whether the agent is ready, its sources, VPP connection and value counts",
		Long: `Show the agent's state: ready or what it waits for, its label and version,
etcd and its connection, the northbound sources, the Linux and VPP plugins
(VPP connection, PID, version, messages it lacks), and how many values are
in each state, in total and per descriptor.

An agent whose etcd connection is lost is DEGRADED, with the reason: it
keeps serving (gRPC changes still apply) and keeps the dataplane as it is
(the last state read from etcd stays applied); when etcd is back it reads
etcd's whole state again and applies what changed. The etcd line says
connected (since when, the last revision seen), connecting, LOST (since
when, the error of the last attempt, the last revision seen) or STOPPED,
and how many times the connection was lost; the gRPC and init-file sources
have no connection and are always active.`,
		Example: `  agentctl status
  agentctl status -o json | jq .vpp
  agentctl status -o json | jq '.northbound[] | select(.source == "etcd")'`,
		Args: argsNamed(),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			var raw json.RawMessage
			if err := a.restJSON(ctx, "GET", "/info/status", nil, &raw); err != nil {
				var re *restError
				if errors.As(err, &re) && re.status == 404 {
					return fmt.Errorf("%v (not the agent's REST API, or an agent older than this agentctl: check --rest-port)", err)
				}
				return err
			}
			if a.output != "table" {
				return a.printData(raw)
			}
			var st agentStatus
			if err := json.Unmarshal(raw, &st); err != nil {
				return fmt.Errorf("answer of GET /info/status is not what agentctl expects: %v", err)
			}
			return a.printStatus(st)
		},
	}
}

func (a *app) printStatus(st agentStatus) error {
	w := newTable(a.stdout, "", "")
	state := "ready"
	if !st.Ready {
		state = "NOT READY, waiting for: " + strings.Join(st.WaitingFor, "; ")
	}
	if len(st.Degraded) > 0 {
		// Degraded: serving, the dataplane kept as it is (see /readyz).
		state += ", DEGRADED: " + strings.Join(st.Degraded, "; ")
	}
	w.row("Agent:", state)
	w.row("Label:", st.Label)
	version := st.Version["version"]
	if version == "" {
		version = "(devel)"
	}
	if rev := st.Version["vcs.revision"]; rev != "" {
		version += " (" + clip(rev, 12+3)
		if st.Version["vcs.modified"] == "true" {
			version += ", modified"
		}
		version += ")"
	}
	if g := st.Version["go"]; g != "" {
		version += ", " + g
	}
	w.row("Version:", version)
	w.row("Uptime:", st.Uptime+" (since "+st.Started.Local().Format("2006-01-02 15:04:05")+")")
	firstSync := "done"
	if !st.FirstSync {
		firstSync = "not yet (nothing is deleted before it)"
	}
	w.row("First sync:", firstSync)
	etcd := "not used"
	var sources []string
	for _, src := range st.Northbound {
		s := src.Source + " " + src.State
		if !src.Synced {
			s += " (no state yet)"
		}
		sources = append(sources, s)
	}
	if len(st.Etcd.Endpoints) > 0 {
		etcd = strings.Join(st.Etcd.Endpoints, ", ")
		if st.Etcd.Embedded {
			etcd += " (embedded)"
		}
		for _, src := range st.Northbound {
			if src.Source == "etcd" {
				etcd += ": " + src.connection()
			}
		}
	}
	w.row("etcd:", etcd)
	if len(sources) > 0 {
		w.row("Sources:", strings.Join(sources, ", "))
	}
	linux := "disabled"
	if st.Linux {
		linux = "enabled"
	}
	w.row("Linux:", linux)
	vpp := "disabled"
	if st.VPP.Enabled {
		if st.VPP.Connected {
			vpp = fmt.Sprintf("connected to %s (VPP %s, PID %d, %s)", st.VPP.Socket, st.VPP.Version, st.VPP.PID, count(st.VPP.Reconnects, "reconnect", "reconnects"))
		} else {
			vpp = "NOT CONNECTED (" + st.VPP.Socket + ")"
			if st.VPP.Error != "" {
				vpp += ": " + st.VPP.Error
			}
		}
		var areas []string
		for area := range st.VPP.Disabled {
			areas = append(areas, area)
		}
		sort.Strings(areas)
		for _, area := range areas {
			vpp += fmt.Sprintf("; %s disabled, VPP lacks %s", area, strings.Join(st.VPP.Disabled[area], ", "))
		}
	}
	w.row("VPP:", vpp)
	w.row("Values:", countsLine(st.ValuesByState))
	w.row("Queue:", count(st.QueueLength, "transaction", "transactions")+" waiting")
	var txns uint64
	for _, n := range st.Transactions {
		txns += n
	}
	w.row("Transactions:", strconv.FormatUint(txns, 10)+" since start")
	if p := st.PendingConfirmation; p != nil {
		w.row("Pending:", fmt.Sprintf("change #%d (%s) reverted at %s (in %s) unless confirmed: agentctl config confirm %d",
			p.Seq, count(len(p.Keys), "value", "values"), p.Deadline.Local().Format("15:04:05"), p.TimeLeft, p.Seq))
	}
	if err := w.flush(); err != nil {
		return err
	}
	if len(st.ValuesByDescriptor) == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	t := newTable(a.stdout, "DESCRIPTOR", "VALUES")
	var descs []string
	for d := range st.ValuesByDescriptor {
		descs = append(descs, d)
	}
	sort.Strings(descs)
	for _, d := range descs {
		// (The agent names the groups of properties, such as an interface's
		// UP state, and of values no descriptor claims.)
		t.row(d, countsLine(st.ValuesByDescriptor[d]))
	}
	return t.flush()
}

// --- values ----------------------------------------------------------------------

// valueStatus is a ValueStatus as the REST API encodes it (protojson).
type valueStatus struct {
	Key            string   `json:"key"`
	State          string   `json:"state"`
	Error          string   `json:"error"`
	LastOperation  string   `json:"last_operation"`
	Details        []string `json:"details"`
	DescriptorName string   `json:"descriptor_name"`
	Derived        bool     `json:"derived"`
}

type baseValueStatus struct {
	Value         valueStatus   `json:"value"`
	DerivedValues []valueStatus `json:"derived_values"`
}

func (vs valueStatus) state() string {
	if vs.State == "" {
		return "NONEXISTENT"
	}
	return vs.State
}

func (vs valueStatus) explanation() string {
	switch {
	case vs.Error != "":
		return vs.Error
	case len(vs.Details) > 0 && vs.state() == "PENDING":
		return "waiting for " + strings.Join(vs.Details, ", ")
	case len(vs.Details) > 0 && vs.state() == "INVALID":
		return "invalid fields: " + strings.Join(vs.Details, ", ")
	case len(vs.Details) > 0:
		return strings.Join(vs.Details, ", ")
	case vs.state() == "UNIMPLEMENTED":
		return "no descriptor handles this key (is its plugin disabled?)"
	}
	return ""
}

func (a *app) valuesCommand() *cobra.Command {
	var states []string
	c := &cobra.Command{
		Use:   "values [MODEL]",
		Short: "Table of values with their state and error",
		Long: `List the values the agent knows (those of MODEL, or all), each base value
followed by its derived values (indented), with its state, last operation,
and its error or what it waits for. --state keeps the values (base or
derived) in the given states.

` + modelsHelp(),
		Example: `  agentctl values
  agentctl values vpp.interfaces
  agentctl values --state FAILED,INVALID,PENDING
  agentctl values linux.l3.route -o yaml`,
		Args:              argsNamed("[MODEL]"),
		ValidArgsFunction: modelArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				m, err := findModel(args[0])
				if err != nil {
					return err
				}
				q.Set("key-prefix", m.KeyPrefix)
			}
			keep := map[string]bool{}
			for _, s := range states {
				s = strings.ToUpper(strings.TrimSpace(s))
				if !knownState(s) {
					return fmt.Errorf("--state %s: unknown state (known: %s)", s, strings.Join(stateOrder, ", "))
				}
				keep[s] = true
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			var raw struct {
				Statuses []baseValueStatus `json:"statuses"`
			}
			if err := a.restJSON(ctx, "GET", "/scheduler/status", q, &raw); err != nil {
				return err
			}
			list := raw.Statuses
			if len(keep) > 0 {
				var kept []baseValueStatus
				for _, b := range list {
					var derived []valueStatus
					for _, d := range b.DerivedValues {
						if keep[d.state()] {
							derived = append(derived, d)
						}
					}
					if keep[b.Value.state()] || len(derived) > 0 {
						kept = append(kept, baseValueStatus{Value: b.Value, DerivedValues: derived})
					}
				}
				list = kept
			}
			if a.output != "table" {
				if list == nil {
					list = []baseValueStatus{}
				}
				return a.printData(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "No values.")
				return nil
			}
			t := newTable(a.stdout, "KEY", "STATE", "OPERATION", "ERROR / DETAILS")
			for _, b := range list {
				t.row(b.Value.Key, b.Value.state(), b.Value.LastOperation, b.Value.explanation())
				for _, d := range b.DerivedValues {
					t.row("  "+d.Key, d.state(), d.LastOperation, d.explanation())
				}
			}
			return t.flush()
		},
	}
	c.Flags().StringSliceVar(&states, "state", nil, "only values in these states (comma separated)")
	_ = c.RegisterFlagCompletionFunc("state", fixedCompletion(stateOrder...))
	return c
}

func knownState(s string) bool {
	for _, k := range stateOrder {
		if k == s {
			return true
		}
	}
	return s == "NONEXISTENT"
}
