package main

// fleet status: every agent that keeps its status in one etcd
// (internal/etcdstatus), read from etcd alone at one revision.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/internal/etcdstatus"
	"github.com/netagent-io/netagent/pkg/models"
	statuspb "github.com/netagent-io/netagent/proto/status"
)

// The states of an agent in the fleet view: the published ones (OK, INIT,
// ERROR) and two of agentctl's own.
const (
	fleetOK = "OK"
	// fleetAbsent: configuration keys under the label, no agent status.
	fleetAbsent = "ABSENT"
	// fleetUnreadable: a status key whose value is not a status.
	fleetUnreadable = "UNREADABLE"
)

// fleetDefaultLimit is how many values not CONFIGURED the table lists per
// agent unless --limit says otherwise.
const fleetDefaultLimit = 20

// fleetValuePage is how many value statuses one etcd request reads: about
// 0.5 MB with the statuses of routes, well under the default limits of
// etcd's responses and of the gRPC messages of its client.
const fleetValuePage = 1000

// fleetReadAttempts is how many times the read starts again when etcd
// compacted the revision it reads meanwhile.
const fleetReadAttempts = 3

// fleetStatus is the output of fleet status: what -o json and -o yaml
// print. The field names are part of agentctl's interface (documented in
// fleetStatusLong).
type fleetStatus struct {
	// Revision is the etcd revision every key was read at.
	Revision int64        `json:"revision"`
	Agents   []fleetAgent `json:"agents"`
}

// fleetAgent is one label under /vnf-agent/.
type fleetAgent struct {
	Label string `json:"label"`
	// State is the published state (OK, INIT, ERROR), ABSENT or
	// UNREADABLE.
	State string `json:"state"`
	// OK: state OK, every plugin OK, every value CONFIGURED or OBTAINED.
	OK bool `json:"ok"`
	// StatusError says why the state is UNREADABLE.
	StatusError  string        `json:"status_error"`
	BuildVersion string        `json:"build_version"`
	BuildDate    string        `json:"build_date"`
	CommitHash   string        `json:"commit_hash"`
	StartTime    *time.Time    `json:"start_time"`
	LastChange   *time.Time    `json:"last_change"`
	LastUpdate   *time.Time    `json:"last_update"`
	Plugins      []fleetPlugin `json:"plugins"`
	Values       fleetValues   `json:"values"`
}

// fleetPlugin is the published status of one of an agent's parts.
type fleetPlugin struct {
	Name string `json:"name"`
	// State is OK, INIT, ERROR, or UNREADABLE (Error says why).
	State      string     `json:"state"`
	Error      string     `json:"error"`
	LastChange *time.Time `json:"last_change"`
	LastUpdate *time.Time `json:"last_update"`
}

// fleetValues sums up an agent's value statuses.
type fleetValues struct {
	// Published: the agent publishes its values' statuses
	// (etcd.status.values), at least one is in etcd.
	Published bool `json:"published"`
	// Total counts the values, base and derived (and the unreadable
	// statuses).
	Total   int            `json:"total"`
	ByState map[string]int `json:"by_state"`
	// NotConfigured counts the values neither CONFIGURED nor OBTAINED
	// (the unreadable statuses among them); NotConfiguredValues lists
	// the first of them by key (all, or up to --limit).
	NotConfigured       int          `json:"not_configured"`
	NotConfiguredValues []fleetValue `json:"not_configured_values"`
}

// fleetValue is a value listed: its status (fields as in agentctl
// values -o json) and, for a derived value, the key of its base value.
type fleetValue struct {
	valueStatus
	BaseKey string `json:"base_key"`
}

// settledState tells whether a value in this state needs no attention:
// applied as asked (CONFIGURED) or found in the system and left alone
// (OBTAINED).
func settledState(state string) bool { return state == "CONFIGURED" || state == "OBTAINED" }

// add counts the status published under the value key key (the part of
// the etcd key after the agent's value prefix), listing the values not
// settled while fewer than limit are listed (limit 0: all). A status that
// does not decode counts as one UNREADABLE value.
func (v *fleetValues) add(key string, data []byte, limit int) {
	v.Published = true
	var st baseValueStatus
	problem := ""
	if err := json.Unmarshal(data, &st); err != nil {
		problem = fmt.Sprintf("not a value status: %v", err)
		if !json.Valid(data) {
			problem = "the status is not JSON"
		}
	} else if st.Value.Key == "" {
		problem = "not a value status: no value.key"
	}
	if problem != "" {
		v.count(valueStatus{Key: key, State: fleetUnreadable, Error: problem}, "", limit)
		return
	}
	v.count(st.Value, "", limit)
	for _, d := range st.DerivedValues {
		v.count(d, st.Value.Key, limit)
	}
}

func (v *fleetValues) count(vs valueStatus, baseKey string, limit int) {
	state := vs.state()
	v.Total++
	v.ByState[state]++
	if settledState(state) {
		return
	}
	v.NotConfigured++
	if limit == 0 || len(v.NotConfiguredValues) < limit {
		vs.State = state
		v.NotConfiguredValues = append(v.NotConfiguredValues, fleetValue{valueStatus: vs, BaseKey: baseKey})
	}
}

// unixTime is a time published as Unix seconds; nil when not published.
func unixTime(sec int64) *time.Time {
	if sec == 0 {
		return nil
	}
	t := time.Unix(sec, 0).UTC()
	return &t
}

// statusJSON decodes a status message as the publisher writes it (and as
// the original agent did); fields this agentctl does not know are ignored.
var statusJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// decodeStatus decodes the value of the status key key into m, with an
// error that names the key and says what is wrong.
func decodeStatus(key string, data []byte, m proto.Message) error {
	if !json.Valid(data) {
		return fmt.Errorf("%s is not valid JSON: %q", key, clip(string(data), 60))
	}
	if err := statusJSON.Unmarshal(data, m); err != nil {
		return fmt.Errorf("%s is not a status: %v", key, err)
	}
	return nil
}

// setAgent fills the agent's fields from the value of its status key.
func (ag *fleetAgent) setAgent(key string, data []byte) {
	var st statuspb.AgentStatus
	if err := decodeStatus(key, data, &st); err != nil {
		ag.State, ag.StatusError = fleetUnreadable, err.Error()
		return
	}
	ag.State = publishedState(data, st.GetState())
	ag.BuildVersion, ag.BuildDate, ag.CommitHash = st.GetBuildVersion(), st.GetBuildDate(), st.GetCommitHash()
	ag.StartTime, ag.LastChange, ag.LastUpdate = unixTime(st.GetStartTime()), unixTime(st.GetLastChange()), unixTime(st.GetLastUpdate())
	for _, ps := range st.GetPlugins() {
		if ps.GetName() != "" {
			ag.setPlugin(ps.GetName(), fleetPluginFrom(ps))
		}
	}
}

func fleetPluginFrom(ps *statuspb.PluginStatus) fleetPlugin {
	return fleetPlugin{State: ps.GetState().String(), Error: ps.GetError(),
		LastChange: unixTime(ps.GetLastChange()), LastUpdate: unixTime(ps.GetLastUpdate())}
}

// publishedState is the state of a status as published: protojson, told
// to ignore what it does not know, reads a state name it does not know
// (from a newer agent, say) as INIT, its zero value; the name itself says
// more, and is not OK.
func publishedState(data []byte, decoded statuspb.OperationalState) string {
	var raw struct {
		State json.RawMessage `json:"state"`
	}
	var name string
	if json.Unmarshal(data, &raw) == nil && json.Unmarshal(raw.State, &name) == nil {
		if _, known := statuspb.OperationalState_value[name]; !known {
			return name
		}
	}
	return decoded.String()
}

// setPluginKey records the status of the plugin name from its own key,
// which wins over its entry in the agent's status (both are written
// together).
func (ag *fleetAgent) setPluginKey(name, key string, data []byte) {
	var ps statuspb.PluginStatus
	if err := decodeStatus(key, data, &ps); err != nil {
		ag.setPlugin(name, fleetPlugin{State: fleetUnreadable, Error: err.Error()})
		return
	}
	p := fleetPluginFrom(&ps)
	p.State = publishedState(data, ps.GetState())
	ag.setPlugin(name, p)
}

func (ag *fleetAgent) setPlugin(name string, p fleetPlugin) {
	p.Name = name
	for i := range ag.Plugins {
		if ag.Plugins[i].Name == name {
			ag.Plugins[i] = p
			return
		}
	}
	ag.Plugins = append(ag.Plugins, p)
}

// pluginsNotOK are the agent's plugins in another state than OK.
func (ag *fleetAgent) pluginsNotOK() []fleetPlugin {
	var out []fleetPlugin
	for _, p := range ag.Plugins {
		if p.State != fleetOK {
			out = append(out, p)
		}
	}
	return out
}

// finish sorts the plugins and sets OK once everything is read.
func (ag *fleetAgent) finish() {
	sort.Slice(ag.Plugins, func(i, j int) bool { return ag.Plugins[i].Name < ag.Plugins[j].Name })
	ag.OK = ag.State == fleetOK && len(ag.pluginsNotOK()) == 0 && ag.Values.NotConfigured == 0
}

// fleetReader reads the agents' statuses under /vnf-agent/, every key at
// the revision of its first request.
//
// Memory stays bounded by the agents, not their values: each label is
// found as the first key after the previous label's keys (firstKey, a
// few small ranges), an agent's and its plugins' statuses are read whole
// (a few keys), and its value statuses page by page (pageSize keys a
// request), keeping of them the counts and the values listed (limit per
// agent). An agent's configuration is not read, but for whether it has
// any when it has no status.
type fleetReader struct {
	kv clientv3.KV
	// timeout bounds each request.
	timeout time.Duration
	// match keeps the labels to read (nil: all).
	match func(label string) bool
	// limit is the most values not CONFIGURED listed per agent (0: all).
	limit    int
	pageSize int64

	// rev is the revision of the read (0 until its first answer).
	rev int64
	// skipped are the labels found that match does not keep.
	skipped []string
}

// read reads the fleet. When etcd compacts the revision being read, it
// starts again at the newest one (up to fleetReadAttempts times).
func (r *fleetReader) read(ctx context.Context) (*fleetStatus, error) {
	for attempt := 1; ; attempt++ {
		fs, err := r.readOnce(ctx)
		if errors.Is(err, rpctypes.ErrCompacted) && attempt < fleetReadAttempts {
			continue
		}
		return fs, err
	}
}

func (r *fleetReader) readOnce(ctx context.Context) (*fleetStatus, error) {
	r.rev, r.skipped = 0, nil
	fs := &fleetStatus{Agents: []fleetAgent{}}
	for from := models.EtcdPrefix; ; {
		key, found, err := r.firstKey(ctx, from)
		if err != nil {
			return nil, err
		}
		if !found {
			break
		}
		label, _, ok := strings.Cut(strings.TrimPrefix(key, models.EtcdPrefix), "/")
		if !ok {
			from = key + "\x00" // /vnf-agent/<something>, no label: not an agent's
			continue
		}
		// The next label's keys start after every key of this one.
		from = clientv3.GetPrefixRangeEnd(models.EtcdKeyPrefix(label))
		if models.ValidLabel(label) != nil {
			continue // no agent takes such a label
		}
		if r.match != nil && !r.match(label) {
			r.skipped = append(r.skipped, label)
			continue
		}
		ag, err := r.agent(ctx, label)
		if err != nil {
			return nil, err
		}
		if ag != nil {
			fs.Agents = append(fs.Agents, *ag)
		}
	}
	fs.Revision = r.rev
	// Key order puts "a.b/" before "a/": the table is by label.
	sort.Slice(fs.Agents, func(i, j int) bool { return fs.Agents[i].Label < fs.Agents[j].Label })
	sort.Strings(r.skipped)
	return fs, nil
}

// firstKey returns the first key under /vnf-agent/ from from on, trying
// the ranges of growingBounds in turn: etcd walks every key of a range to
// count them, whatever the limit, so that one range to the end of
// /vnf-agent/ per label would walk the keys of every later agent (its
// values' statuses, its configuration) for each label, quadratic in the
// fleet's size, under etcd's index lock. These ranges walk about the keys
// of the next label or few, a few requests a label.
func (r *fleetReader) firstKey(ctx context.Context, from string) (string, bool, error) {
	for _, bound := range growingBounds(from) {
		resp, err := r.get(ctx, from, clientv3.WithRange(bound), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		if err != nil {
			return "", false, err
		}
		if len(resp.Kvs) > 0 {
			return string(resp.Kvs[0].Key), true, nil
		}
	}
	return "", false, nil
}

// growingBounds are the ends of the ranges, from from, in which firstKey
// looks for a key: each holds the one before, the last is the end of
// /vnf-agent/. From the last byte of from (after which come the labels
// that extend the one before from) to the first byte of the label: the
// keys whose byte there is greater by less than 2, 4, 8... (up to 0xff),
// then every key with from's bytes before it. The first range with a key
// thus reaches at most about twice as far, in that byte, as the key.
func growingBounds(from string) []string {
	var bounds []string
	add := func(b string) {
		if len(bounds) == 0 || b > bounds[len(bounds)-1] {
			bounds = append(bounds, b)
		}
	}
	for k := len(from) - 1; k >= len(models.EtcdPrefix); k-- {
		if k < len(from)-1 {
			for d := 2; int(from[k])+d <= 0xff; d *= 2 {
				add(from[:k] + string([]byte{from[k] + byte(d)}))
			}
		}
		add(clientv3.GetPrefixRangeEnd(from[:k]))
	}
	add(clientv3.GetPrefixRangeEnd(models.EtcdPrefix))
	return bounds
}

// get is one range request at the read's revision, bounded by timeout.
func (r *fleetReader) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	if r.rev != 0 {
		opts = append(opts, clientv3.WithRev(r.rev))
	}
	resp, err := r.kv.Get(ctx, key, opts...)
	if err != nil {
		return nil, err
	}
	if r.rev == 0 {
		r.rev = resp.Header.GetRevision()
	}
	return resp, nil
}

// agent reads the statuses of label; nil when it has neither a status key
// nor a configuration key (only other keys under check/, say).
func (r *fleetReader) agent(ctx context.Context, label string) (*fleetAgent, error) {
	ag := &fleetAgent{Label: label, Plugins: []fleetPlugin{},
		Values: fleetValues{ByState: map[string]int{}, NotConfiguredValues: []fleetValue{}}}
	agentKey := etcdstatus.AgentKey(label)
	resp, err := r.get(ctx, agentKey)
	if err != nil {
		return nil, err
	}
	published := len(resp.Kvs) > 0
	if published {
		ag.setAgent(agentKey, resp.Kvs[0].Value)
	} else {
		ag.State = fleetAbsent
	}

	pluginPrefix := etcdstatus.PluginKey(label, "")
	if resp, err = r.get(ctx, pluginPrefix, clientv3.WithPrefix()); err != nil {
		return nil, err
	}
	for _, kv := range resp.Kvs {
		if name := strings.TrimPrefix(string(kv.Key), pluginPrefix); name != "" && !strings.Contains(name, "/") {
			ag.setPluginKey(name, string(kv.Key), kv.Value)
			published = true
		}
	}

	valuePrefix := etcdstatus.ValueKeyPrefix(label)
	end := clientv3.GetPrefixRangeEnd(valuePrefix)
	for from := valuePrefix; ; {
		// Ranges come sorted by key: the page's last key is where the
		// next one starts.
		resp, err := r.get(ctx, from, clientv3.WithRange(end), clientv3.WithLimit(r.pageSize))
		if err != nil {
			return nil, err
		}
		for _, kv := range resp.Kvs {
			ag.Values.add(strings.TrimPrefix(string(kv.Key), valuePrefix), kv.Value, r.limit)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			break
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
	published = published || ag.Values.Published

	if !published {
		configured, err := r.hasConfiguration(ctx, label)
		if err != nil || !configured {
			return nil, err
		}
	}
	ag.finish()
	return ag, nil
}

// hasConfiguration tells whether label has a key outside the status tree
// (check/): an agent's configuration.
func (r *fleetReader) hasConfiguration(ctx context.Context, label string) (bool, error) {
	base := models.EtcdKeyPrefix(label)
	check := base + etcdstatus.KeyPrefix
	for _, span := range [][2]string{
		{base, check},
		{clientv3.GetPrefixRangeEnd(check), clientv3.GetPrefixRangeEnd(base)},
	} {
		resp, err := r.get(ctx, span[0], clientv3.WithRange(span[1]), clientv3.WithKeysOnly(), clientv3.WithLimit(1))
		if err != nil {
			return false, err
		}
		if len(resp.Kvs) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// labelMatcher keeps the labels that match one of the patterns (path.Match
// globs); nil for no patterns. A malformed pattern is an error.
func labelMatcher(patterns []string) (func(string) bool, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("label pattern %q: %v (want a label or a glob such as 'edge-*' or 'vpp[12]')", p, err)
		}
	}
	return func(label string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, label); ok {
				return true
			}
		}
		return false
	}, nil
}

const fleetLong = `Views of every agent that keeps its status in one etcd (--etcd-endpoints,
ETCD_ENDPOINTS), from etcd alone: the agents need not be reachable.`

func (a *app) fleetCommand() *cobra.Command {
	c := &cobra.Command{
		Use:     "fleet",
		Short:   "Every agent on one etcd: their published status",
		Long:    fleetLong,
		Example: "  agentctl fleet status --etcd-endpoints 10.0.0.1:2379,10.0.0.2:2379",
	}
	c.AddCommand(a.fleetStatusCommand())
	return c
}

const fleetStatusLong = `List every agent found under /vnf-agent/ in the etcd at --etcd-endpoints
(ETCD_ENDPOINTS) with the status it publishes there, every key read at one
etcd revision. Each agent keeps under /vnf-agent/<label>/check/status/v1/
its state (agent), that of its parts (plugin/<name>) and, with
etcd.status.values: true in its configuration, that of each of its values
(value/<key>). The keys live under a lease: when the agent stops, or has
been cut off from etcd for longer than etcd.status.ttl (10s), they go.

The table has one row per label:

  LABEL           the agent's microservice label
  STATE           OK, INIT (starting or resyncing: not ready), ERROR (a part
                  failed); ABSENT: configuration under /vnf-agent/<label>/ but
                  no status (the agent is stopped, cut off from etcd for
                  longer than its TTL, or publishes none: etcd.status.disabled);
                  UNREADABLE: the status key holds something else (the error
                  follows the table). A label without status nor
                  configuration is not listed; nor is one whose agent
                  stopped with nothing configured in etcd.
  LAST CHANGE     when STATE last changed, and how long ago
  VERSION         the agent's build version
  PLUGINS NOT OK  its parts in another state than OK
  VALUES          its values by state, or "not published"

After it, for each agent with something to say: its parts not OK with
their errors, and its values neither CONFIGURED nor OBTAINED (base or
derived: key, state, error or what it waits for), the first --limit of
them by key.

LABEL-PATTERNs (globs: edge-*, vpp[12]) keep the matching labels; --problems
keeps the agents not OK: state other than OK, a part not OK, or a value
neither CONFIGURED nor OBTAINED.

-o json and -o yaml print:
  revision                  the etcd revision read
  agents[]                  by label:
    label, state            as in the table
    ok                      state OK, every part OK, every value CONFIGURED
                            or OBTAINED
    status_error            why the state is UNREADABLE
    build_version, build_date, commit_hash
    start_time, last_change, last_update
                            RFC 3339, null when not published
    plugins[]               name, state (or UNREADABLE), error, last_change,
                            last_update
    values                  published, total (base and derived values),
                            by_state, not_configured (how many are neither
                            CONFIGURED nor OBTAINED), not_configured_values[]
                            (key, state, error, last_operation, details,
                            descriptor_name, derived, base_key: the base
                            value of a derived one; all of them unless
                            --limit is given)
A status that is not valid is UNREADABLE where it is (the agent, a part,
a value) and leaves the others as they are; keys under /vnf-agent/ that
are neither statuses nor configuration are ignored.

Memory grows with the agents, not their values: the value statuses are
read a page at a time (1,000 a request), keeping the counts and the
values listed. --timeout bounds each request, not the whole read.

Exit codes: 0 the fleet was listed, whatever the agents' states; 1 an
error, no agent at all under /vnf-agent/, or none matching the
LABEL-PATTERNs.`

func (a *app) fleetStatusCommand() *cobra.Command {
	var limit int
	var problems bool
	c := &cobra.Command{
		Use:   "status [LABEL-PATTERN...]",
		Short: "Every agent under /vnf-agent/ with its state, parts and values not CONFIGURED",
		Long:  fleetStatusLong,
		Example: `  agentctl fleet status --etcd-endpoints 10.0.0.1:2379
  agentctl fleet status 'edge-*' --problems
  agentctl fleet status vpp1 --limit 0
  agentctl fleet status -o json | jq '.agents[] | select(.ok | not) | .label'`,
		Args: cobra.ArbitraryArgs,
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			match, err := labelMatcher(args)
			if err != nil {
				return err
			}
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all) or more", limit)
			}
			if !cmd.Flags().Changed("limit") && a.output != "table" {
				limit = 0 // JSON and YAML: everything unless asked otherwise
			}
			cli, err := a.etcd("fleet status")
			if err != nil {
				return err
			}
			defer cli.Close()
			r := &fleetReader{kv: cli, timeout: a.timeout, match: match, limit: limit, pageSize: fleetValuePage}
			fs, err := r.read(cmd.Context())
			if errors.Is(err, rpctypes.ErrCompacted) {
				return fmt.Errorf("fleet status: etcd compacted the revision being read %d times over (the read took longer than its compaction retention): try again", fleetReadAttempts)
			}
			if err != nil {
				return a.etcdError(cli, "fleet status", err)
			}
			endpoints := strings.Join(a.etcdEndpoints, ",")
			switch {
			case len(fs.Agents) == 0 && len(r.skipped) == 0:
				return fmt.Errorf("fleet status: no agent in etcd at %s: no status nor configuration under %s (is it the agents' etcd? --etcd-endpoints or ETCD_ENDPOINTS)", endpoints, models.EtcdPrefix)
			case len(fs.Agents) == 0:
				return fmt.Errorf("fleet status: no label matches %s (labels in etcd at %s: %s)", strings.Join(args, " "), endpoints, listSome(r.skipped, 10))
			}
			all := len(fs.Agents)
			if problems {
				kept := []fleetAgent{}
				for _, ag := range fs.Agents {
					if !ag.OK {
						kept = append(kept, ag)
					}
				}
				fs.Agents = kept
			}
			if a.output != "table" {
				return a.printData(fs)
			}
			if len(fs.Agents) == 0 {
				if all == 1 {
					fmt.Fprintln(a.stdout, "The agent is OK.")
				} else {
					fmt.Fprintf(a.stdout, "All %d agents are OK.\n", all)
				}
				return nil
			}
			return printFleet(a.stdout, fs, time.Now())
		},
	}
	c.Flags().IntVar(&limit, "limit", fleetDefaultLimit, "values not CONFIGURED listed per agent, 0 for all (-o json/yaml: all unless given)")
	c.Flags().BoolVar(&problems, "problems", false, "only the agents not OK (state, a part or a value)")
	return c
}

// listSome joins the first n of names, saying how many more there are.
func listSome(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// printFleet writes the fleet's table, then what each agent has to say;
// now is the time the ages are counted from.
func printFleet(w io.Writer, fs *fleetStatus, now time.Time) error {
	t := newTable(w, "LABEL", "STATE", "LAST CHANGE", "VERSION", "PLUGINS NOT OK", "VALUES")
	absent := false
	for _, ag := range fs.Agents {
		var notOK []string
		for _, p := range ag.pluginsNotOK() {
			notOK = append(notOK, p.Name+" "+p.State)
		}
		values := "not published"
		switch {
		case ag.Values.Published:
			values = countsLine(ag.Values.ByState)
		case ag.State == fleetAbsent:
			values = ""
			absent = true
		}
		t.row(ag.Label, ag.State, whenAgo(ag.LastChange, now), clip(ag.BuildVersion, 24), strings.Join(notOK, ", "), values)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if absent {
		fmt.Fprintln(w, "(ABSENT: configuration in etcd but no status: the agent is stopped, cut off from\n"+
			"etcd for longer than its status TTL, or publishes none: etcd.status.disabled.)")
	}
	for _, ag := range fs.Agents {
		if err := printFleetAgent(w, ag, now); err != nil {
			return err
		}
	}
	return nil
}

// printFleetAgent writes what is wrong with an agent, if anything: its
// unreadable status, its parts not OK and its values not CONFIGURED.
func printFleetAgent(w io.Writer, ag fleetAgent, now time.Time) error {
	plugins := ag.pluginsNotOK()
	if ag.StatusError == "" && len(plugins) == 0 && ag.Values.NotConfigured == 0 {
		return nil
	}
	fmt.Fprintf(w, "\n%s:\n", ag.Label)
	if ag.StatusError != "" {
		fmt.Fprintf(w, "  status UNREADABLE: %s\n", ag.StatusError)
	}
	for _, p := range plugins {
		line := "  plugin " + p.Name + " " + p.State
		if p.LastChange != nil {
			line += " since " + whenAgo(p.LastChange, now)
		}
		if p.Error != "" {
			line += ": " + oneLine(p.Error)
		}
		fmt.Fprintln(w, line)
	}
	if ag.Values.NotConfigured == 0 {
		return nil
	}
	fmt.Fprintf(w, "  %s not CONFIGURED:\n", count(ag.Values.NotConfigured, "value", "values"))
	t := newTable(w, "  KEY", "STATE", "ERROR / DETAILS")
	for _, vs := range ag.Values.NotConfiguredValues {
		explanation := vs.explanation()
		if vs.BaseKey != "" {
			explanation = strings.TrimSuffix("derived from "+vs.BaseKey+": "+explanation, ": ")
		}
		t.row("  "+vs.Key, vs.State, explanation)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if more := ag.Values.NotConfigured - len(ag.Values.NotConfiguredValues); more > 0 {
		fmt.Fprintf(w, "  ... and %d more (--limit 0 lists them all)\n", more)
	}
	return nil
}

// whenAgo is a time for the table, local, with how long ago it was; ""
// when unknown.
func whenAgo(t *time.Time, now time.Time) string {
	if t == nil {
		return ""
	}
	return t.Local().Format("2006-01-02 15:04:05") + " (" + ago(now.Sub(*t)) + ")"
}

// ago says how long ago something was d before now, to the second, in at
// most two units: "45s ago", "3m12s ago", "5h7m ago", "2d3h ago". A time
// ahead of this clock (another host's) is "in 2s".
func ago(d time.Duration) string {
	suffix := " ago"
	if d < 0 {
		d, suffix = -d, ""
	}
	s := int64(d.Round(time.Second) / time.Second)
	var out string
	switch {
	case s < 60:
		out = fmt.Sprintf("%ds", s)
	case s < 3600:
		out = fmt.Sprintf("%dm%02ds", s/60, s%60)
	case s < 48*3600:
		out = fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		out = fmt.Sprintf("%dd%dh", s/86400, s%86400/3600)
	}
	if suffix == "" {
		return "in " + out
	}
	return out + suffix
}
