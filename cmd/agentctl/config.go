package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/pkg/models"
	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
	kvschedulerpb "github.com/netagent-io/netagent/proto/kvscheduler"
)

func (a *app) configCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Read, change, plan and follow the agent's configuration",
		Long: `Read, change, plan and follow the agent's configuration.

Changes made here go to the agent's gRPC source: they take precedence over the
same keys in etcd and the init file, and deleting them brings those values
back. A configuration FILE is a YAML (or JSON) document grouped by model, as
"agentctl config get" prints it:

  linux_config:
    interfaces:
      - name: veth-host
        type: VETH
        veth: {peer_if_name: veth-app}
  vpp_config:
    routes:
      - dst_network: 10.0.0.0/24
        next_hop_addr: 192.168.1.1

FILE "-" reads the document from standard input.`,
		Example: `  agentctl config get > desired.yaml
  agentctl config plan desired.yaml
  agentctl config update desired.yaml --wait
  agentctl config history
  agentctl config watch`,
	}
	c.AddCommand(a.configGet(), a.configUpdate(), a.configDelete(), a.configPlan(), a.configHistory(),
		a.configResync(), a.configWatch(), a.configConfirm(), a.configStatus())
	return c
}

func (a *app) configGet() *cobra.Command {
	return &cobra.Command{
		Use:   "get",
		Short: "Print the desired configuration as a YAML document",
		Long: `Print the desired configuration: the values of all the agent's sources
(etcd, gRPC, init file) merged, each key with the value of its
highest-priority source, as a document that "config update" reads back.
Values that have no place in it (not decodable or not valid: INVALID in
the agent) are left out, each named on standard error with the reason.
With -o json it is printed as JSON (the same document).`,
		Example: `  agentctl config get
  agentctl config get -o json > desired.json`,
		Args: argsNamed(),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, ctx, done, err := a.configuratorCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.Get(ctx, &configuratorpb.GetRequest{})
			if err != nil {
				return client.error("config get", err)
			}
			for _, lo := range resp.GetLeftOut() {
				fmt.Fprintf(a.stderr, "left out of the document: %s: %s\n", lo.GetKey(), oneLine(lo.GetReason()))
			}
			if a.output == "json" {
				data, err := models.MarshalJSON(resp.GetConfig())
				if err != nil {
					return err
				}
				var v any
				if err := json.Unmarshal(data, &v); err != nil {
					return err
				}
				return a.printData(v)
			}
			data, err := models.MarshalYAML(resp.GetConfig())
			if err != nil {
				return err
			}
			if strings.TrimSpace(string(data)) == "{}" {
				data = []byte("# no desired configuration\n{}\n")
			}
			_, err = a.stdout.Write(data)
			return err
		},
	}
}

// keyErrorJSON is a KeyError in the JSON/YAML output.
type keyErrorJSON struct {
	Key       string `json:"key"`
	Operation string `json:"operation,omitempty"`
	State     string `json:"state,omitempty"`
	Error     string `json:"error"`
}

type changeJSON struct {
	SeqNum  uint64         `json:"seq_num"`
	Values  int            `json:"values"`
	Waited  bool           `json:"waited"`
	Errors  []keyErrorJSON `json:"errors,omitempty"`
	Removed []string       `json:"removed,omitempty"`
	Kept    []keptKey      `json:"kept,omitempty"`
}

// keptKey is a key that a change took out of the gRPC source (or that the
// source did not have) but that another source of the agent still sets.
type keptKey struct {
	Key string `json:"key"`
	// By is "etcd" when the key is in etcd (at --etcd-endpoints), else
	// "another source" (the init file, or an etcd agentctl does not see).
	By string `json:"by"`
	// Label is the agent's label when it is not agentctl's (--label): the
	// key is under /vnf-agent/<Label>/, where the agent reads.
	Label string `json:"label,omitempty"`
}

// change is the result of an Update or Delete, as reportChange prints it.
type change struct {
	verb   string // "update of", "delete of"
	values int
	wait   bool
	seq    uint64
	errs   []*configuratorpb.KeyError
	// removed lists the keys an update --replace removed from the desired
	// configuration, kept those that another source still sets.
	removed []string
	kept    []keptKey
	// confirmWithin is the change's time to be confirmed (0: none).
	confirmWithin time.Duration
}

func keyErrorsJSON(errs []*configuratorpb.KeyError) []keyErrorJSON {
	out := make([]keyErrorJSON, 0, len(errs))
	for _, e := range errs {
		out = append(out, keyErrorJSON{Key: e.GetKey(), Operation: e.GetOperation(), State: stateName(e.GetState()), Error: e.GetError()})
	}
	return out
}

// printKeyErrors prints key errors as a table.
func (a *app) printKeyErrors(errs []keyErrorJSON) error {
	t := newTable(a.stdout, "KEY", "OPERATION", "STATE", "ERROR")
	for _, e := range errs {
		t.row(e.Key, e.Operation, e.State, e.Error)
	}
	return t.flush()
}

// reportChange prints the result of an Update or Delete; errors of keys end
// the command with exit code 1. With wait, the errors are those of the
// transaction's values and of the request's values it left in error (an
// INVALID value sent again: no transaction, still INVALID). A transaction
// number 0 means nothing changed, or that the agent keeps the change until
// its first full sync.
func (a *app) reportChange(c change) error {
	out := changeJSON{SeqNum: c.seq, Values: c.values, Waited: c.wait, Removed: c.removed, Kept: c.kept}
	if len(c.errs) > 0 {
		out.Errors = keyErrorsJSON(c.errs)
	}
	if a.output != "table" {
		if err := a.printData(out); err != nil {
			return err
		}
	} else {
		what := c.verb + " " + count(c.values, "value", "values")
		switch {
		case c.seq == 0 && (len(c.errs) > 0 || len(c.kept) > 0):
			fmt.Fprintf(a.stdout, "%s: nothing to change\n", what)
		case c.seq == 0:
			fmt.Fprintf(a.stdout, "%s: nothing to do (or kept until the agent's first full sync)\n", what)
		case c.wait && c.confirmWithin > 0:
			fmt.Fprintf(a.stdout, "%s: transaction #%d done, pending confirmation: reverted in %v unless \"agentctl config confirm %d\"\n", what, c.seq, c.confirmWithin, c.seq)
		case c.wait:
			fmt.Fprintf(a.stdout, "%s: transaction #%d done\n", what, c.seq)
		default:
			fmt.Fprintf(a.stdout, "%s: transaction #%d queued (--wait waits for it)\n", what, c.seq)
		}
		if len(c.removed) > 0 {
			fmt.Fprintf(a.stdout, "removed %s that the document no longer lists:\n", count(len(c.removed), "value", "values"))
			for _, key := range c.removed {
				fmt.Fprintln(a.stdout, "  "+key)
			}
		}
		for _, k := range c.kept {
			fmt.Fprintln(a.stdout, keptLine(k, c.seq != 0))
		}
		if len(c.errs) > 0 {
			if err := a.printKeyErrors(out.Errors); err != nil {
				return err
			}
		}
	}
	if len(c.errs) > 0 {
		return fmt.Errorf("%s in error after the %s (see ERROR)", count(len(c.errs), "value is", "values are"), strings.TrimSuffix(c.verb, " of"))
	}
	return nil
}

// keptLine says which source still sets a key and where to delete it;
// fallback tells that the change took the gRPC source's value away (the
// other source's value applies now).
func keptLine(k keptKey, fallback bool) string {
	del := "agentctl kvdb del " + k.Key
	if k.Label != "" {
		del = "agentctl --label " + k.Label + " kvdb del " + k.Key
	}
	switch {
	case k.By == "etcd" && fallback:
		return fmt.Sprintf("%s: etcd's value applies now (etcd sets it too; delete it there: %s)", k.Key, del)
	case k.By == "etcd":
		return fmt.Sprintf("%s is set by etcd, not by agentctl's gRPC source; delete it there: %s", k.Key, del)
	case fallback:
		return fmt.Sprintf("%s: the value of another source of the agent (the init file, or etcd) applies now", k.Key)
	}
	return fmt.Sprintf("%s is set by another source of the agent (the init file, or etcd), not by agentctl's gRPC source", k.Key)
}

// desiredValues returns the agent's desired configuration (Get), by key.
func desiredValues(ctx context.Context, client *configuratorClient) (map[string]proto.Message, error) {
	resp, err := client.Get(ctx, &configuratorpb.GetRequest{})
	if err != nil {
		return nil, client.error("config get", err)
	}
	kvs, err := models.Default.ConfigKVs(resp.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("the agent's desired configuration: %v", err)
	}
	out := make(map[string]proto.Message, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = kv.Value
	}
	return out, nil
}

// afterChange reads the desired configuration after a change, in a call of
// its own (the change may have used up the first call's time). It returns
// nil, with a warning on stderr, when it cannot: the change is made, only
// its report is shorter.
func (a *app) afterChange(cmd *cobra.Command, client *configuratorClient) map[string]proto.Message {
	ctx, cancel := a.callContext(cmd.Context())
	defer cancel()
	after, err := desiredValues(ctx, client)
	if err != nil {
		fmt.Fprintf(a.stderr, "agentctl: warning: reading the desired configuration after the change: %v\n", oneLine(err.Error()))
	}
	return after
}

// etcdLookupTimeout bounds the look-ups of keptBy in etcd: they only
// refine a report.
const etcdLookupTimeout = 2 * time.Second

// keptBy tells which source sets each of keys: etcd when etcd (at
// --etcd-endpoints) has it, else another source. Once etcd cannot be
// asked, the other keys are "another source" too.
func (a *app) keptBy(ctx context.Context, keys []string) []keptKey {
	out := make([]keptKey, len(keys))
	for i, key := range keys {
		out[i] = keptKey{Key: key, By: "another source"}
	}
	if len(keys) == 0 {
		return out
	}
	// The agent reads etcd under its own label: when it uses agentctl's
	// etcd under another one, the keys are looked up there.
	label, other := a.label, ""
	if st := a.probeAgent(ctx).wait(); a.labelMismatch(st) != "" {
		label, other = st.Label, st.Label
	}
	cc, err := a.etcdConfig(min(a.timeout, etcdLookupTimeout))
	if err != nil {
		return out
	}
	cli, err := clientv3.New(cc)
	if err != nil {
		return out
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, min(a.timeout, etcdLookupTimeout))
	defer cancel()
	for i, key := range keys {
		resp, err := cli.Get(ctx, models.EtcdKey(label, key), clientv3.WithKeysOnly())
		if err != nil {
			break
		}
		if len(resp.Kvs) > 0 {
			out[i].By, out[i].Label = "etcd", other
		}
	}
	return out
}

func stateName(s kvschedulerpb.ValueState) string {
	if s == kvschedulerpb.ValueState_NONEXISTENT {
		return ""
	}
	return s.String()
}

// planRevisionFlag is the --plan-revision flag of update and delete.
type planRevisionFlag struct {
	cmd   *cobra.Command
	value int64
}

const planRevisionUsage = "apply only if the agent's state is still at this revision, as config plan prints it (nothing applied otherwise)"

func addPlanRevisionFlag(c *cobra.Command) *planRevisionFlag {
	f := &planRevisionFlag{cmd: c}
	c.Flags().Int64Var(&f.value, "plan-revision", 0, planRevisionUsage)
	return f
}

// get returns the revision to send (nil without the flag); 0 and negative
// revisions are refused before the agent is asked.
func (f *planRevisionFlag) get() (*uint64, error) {
	if !f.cmd.Flags().Changed("plan-revision") {
		return nil, nil
	}
	if f.value <= 0 {
		return nil, fmt.Errorf("--plan-revision %d: a revision is a positive number, the one \"config plan\" prints (\"planned against revision N\")", f.value)
	}
	v := uint64(f.value)
	return &v, nil
}

func (a *app) configUpdate() *cobra.Command {
	var replace, wait, verify bool
	var planRevision *planRevisionFlag
	var safety safetyFlags
	c := &cobra.Command{
		Use:   "update FILE",
		Short: "Set the values of a configuration document",
		Long: `Set the values of a configuration document in the agent (its gRPC source).

With --replace the document replaces everything set before through gRPC:
values it no longer lists are removed (etcd and init-file values are not
touched), and the command lists them (and the keys where the value of etcd
or the init file applies again). With --wait the command returns once the transaction is done,
derived values included, and lists the values that failed and those of the
document that stay in error (an INVALID value sent again changes nothing
and is still INVALID), with exit code 1.

With --plan-revision N (the revision "config plan" printed) the update is
applied only if the agent's state is still at revision N: when anything
changed since the plan (another update, etcd, an event in the dataplane, a
retry), nothing is applied and the command fails (exit 1) naming both
revisions and the change in between: plan again. Give the same document
(and --replace) as to the plan; the revision tells that the state did not
change, not that the document is the one planned.

With --verify the agent reads the values back from the dataplane once the
update is applied, and reverts the whole update when one is not there as
applied (or when an operation fails): the errors say which value and that
the update was reverted (exit 1). --verify implies --wait; not with
--replace.

With --confirm-within DURATION the update is applied and has to be kept
with "agentctl config confirm" within DURATION: otherwise the agent puts
the values of its gRPC source back as they were before it (also over a
restart of the agent). While it is pending, other changes through gRPC are
refused; "agentctl config status" shows it. With --probe (ping, tcp or http
checks, optionally from a named netns) the update is reverted at once when
a probe fails once it is applied, and kept when all pass (or left pending
with --confirm-within).

A document goes in one gRPC message: 64 MiB at most by default (100k routes
are 4.3 MB). A bigger one is refused, saying by which side and the setting
to raise: --grpc-max-msg-size here, grpc.max_recv_msg_size in the agent's
configuration. A big --wait may need a longer --timeout.`,
		Example: `  agentctl config update veth.yaml
  agentctl config update veth.yaml --wait
  agentctl config update all.yaml --replace --wait
  agentctl config update veth.yaml --wait --plan-revision 42
  agentctl config update veth.yaml --verify
  agentctl config update addr.yaml --confirm-within 60s
  agentctl config update addr.yaml --probe "ping 10.0.0.1 netns=app timeout=2s"
  cat veth.yaml | agentctl config update -`,
		Args:              argsNamed("FILE"),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			conn := a.dialEarly()
			defer conn.close()
			doc, err := a.readChangeDocument(args[0])
			if err != nil {
				return err
			}
			n := doc.items
			if n == 0 && !replace {
				return fmt.Errorf("%s has no values: nothing to update (with --replace, an empty document removes every value set through gRPC)", args[0])
			}
			rev, err := planRevision.get()
			if err != nil {
				return err
			}
			if verify && replace {
				return errors.New("--verify is for a change, not for --replace (a full replacement is not reverted as a whole)")
			}
			within, probes, err := safety.request()
			if err != nil {
				return err
			}
			wait = wait || verify || within != nil || len(probes) > 0
			client, ctx, done, err := conn.call(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			// --replace: what the desired configuration loses is reported,
			// from the desired configuration before and after.
			var before map[string]proto.Message
			if replace {
				if before, err = desiredValues(ctx, client); err != nil {
					return err
				}
			}
			resp, err := client.Update(ctx, &configuratorpb.UpdateRequest{Update: doc.cfg, FullResync: replace, WaitDone: wait, PlanRevision: rev, Verify: verify,
				ConfirmWithin: within, Probes: probes})
			kvs, docErr := doc.values()
			if err != nil {
				if docErr != nil {
					return docErr // the agent refused it too; this names the place
				}
				return client.changeError("config update", err)
			}
			if docErr != nil {
				a.warnAccepted(docErr)
			}
			a.reportProbes(resp.GetProbeResults())
			c := change{verb: "update of", values: n, wait: wait, seq: resp.GetSeqNum(), errs: resp.GetErrors(), confirmWithin: within.AsDuration()}
			if !replace {
				return a.reportChange(c)
			}
			if after := a.afterChange(cmd, client); after != nil {
				listed := map[string]bool{}
				for _, kv := range kvs {
					listed[kv.Key] = true
				}
				var fallback []string
				for _, key := range slices.Sorted(maps.Keys(before)) {
					now, still := after[key]
					switch {
					case listed[key]:
					case !still:
						c.removed = append(c.removed, key)
					case !proto.Equal(now, before[key]):
						fallback = append(fallback, key)
					}
				}
				c.kept = a.keptBy(cmd.Context(), fallback)
			}
			return a.reportChange(c)
		},
	}
	c.Flags().BoolVar(&replace, "replace", false, "replace all the values set through gRPC with the document's")
	c.Flags().BoolVar(&wait, "wait", false, "wait until the transaction is done and report failed values")
	c.Flags().BoolVar(&verify, "verify", false, "read the values back once applied and revert the whole update if one is not there (implies --wait)")
	safety.add(c)
	planRevision = addPlanRevisionFlag(c)
	return c
}

func (a *app) configDelete() *cobra.Command {
	var wait, verify bool
	var planRevision *planRevisionFlag
	var safety safetyFlags
	c := &cobra.Command{
		Use:   "delete FILE",
		Short: "Remove the values of a configuration document",
		Long: `Remove the values of the items of a configuration document from the agent's
gRPC source. Only the fields that make an item's key matter (an interface's
name, a route's destination...). Where etcd or the init file also has the key,
its value applies again, and the command says so: such a key is deleted from
etcd with "agentctl kvdb del KEY". --plan-revision N deletes only if the
agent's state is still at revision N, as for "config update"; --verify
checks that the values are gone from the dataplane and reverts the delete
when one is still there.`,
		Example:           `  agentctl config delete veth.yaml --wait`,
		Args:              argsNamed("FILE"),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			conn := a.dialEarly()
			defer conn.close()
			doc, err := a.readChangeDocument(args[0])
			if err != nil {
				return err
			}
			n := doc.items
			if n == 0 {
				return fmt.Errorf("%s has no values: nothing to delete", args[0])
			}
			rev, err := planRevision.get()
			if err != nil {
				return err
			}
			within, probes, err := safety.request()
			if err != nil {
				return err
			}
			wait = wait || verify || within != nil || len(probes) > 0
			client, ctx, done, err := conn.call(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.Delete(ctx, &configuratorpb.DeleteRequest{Delete: doc.cfg, WaitDone: wait, PlanRevision: rev, Verify: verify,
				ConfirmWithin: within, Probes: probes})
			kvs, docErr := doc.values()
			if err != nil {
				if docErr != nil {
					return docErr // the agent refused it too; this names the place
				}
				return client.changeError("config delete", err)
			}
			if docErr != nil {
				a.warnAccepted(docErr)
			}
			a.reportProbes(resp.GetProbeResults())
			c := change{verb: "delete of", values: n, wait: wait, seq: resp.GetSeqNum(), errs: resp.GetErrors(), confirmWithin: within.AsDuration()}
			// A key the desired configuration still has is set by another
			// source: say which, and where to delete it.
			if after := a.afterChange(cmd, client); after != nil {
				var kept []string
				for _, kv := range kvs {
					if _, still := after[kv.Key]; still {
						kept = append(kept, kv.Key)
					}
				}
				c.kept = a.keptBy(cmd.Context(), kept)
			}
			return a.reportChange(c)
		},
	}
	c.Flags().BoolVar(&wait, "wait", false, "wait until the transaction is done and report failed values")
	c.Flags().BoolVar(&verify, "verify", false, "check that the values are gone once deleted and revert the delete if one is not (implies --wait)")
	safety.add(c)
	planRevision = addPlanRevisionFlag(c)
	return c
}

// plannedJSON is a planned operation in the JSON/YAML output.
type plannedJSON struct {
	Operation string          `json:"operation"`
	Key       string          `json:"key"`
	Flags     []string        `json:"flags,omitempty"`
	Value     json.RawMessage `json:"value,omitempty"`
	PrevValue json.RawMessage `json:"prev_value,omitempty"`
	Error     string          `json:"error,omitempty"`
}

func rawOrNil(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

// hasFlag tells whether a planned operation has a flag.
func hasFlag(op plannedJSON, flag string) bool {
	for _, f := range op.Flags {
		if f == flag {
			return true
		}
	}
	return false
}

func (a *app) configPlan() *cobra.Command {
	var replace bool
	c := &cobra.Command{
		Use:   "plan FILE",
		Short: "Show what an update would do, without doing it",
		Long: `Show the operations "config update FILE" would execute, in order, without
applying anything (a dry run in the agent's scheduler, dependencies and
derived values included).

Every operation listed is a change: the scheduler plans nothing for a value
the agent already has. FLAGS tell more: IS-PENDING, the value would wait for
its dependencies (nothing is executed for it yet); NOOP, nothing is executed
(a pending or invalid value is only recorded); DERIVED, PROPERTY, RECREATE.
Values of the document that the agent already has but holds in error (an
INVALID value planned again) are listed after the plan.

A plan with changes ends with the revision of the agent's state it was made
against ("planned against revision N"; "revision" in -o json/yaml):
"config update FILE --plan-revision N" applies the document only if nothing
changed since, and refuses it otherwise. Revisions count the changes of the
agent's state since it started (any transaction that changed anything:
updates, etcd, events in the dataplane, retries).

A plan is not a transaction of the agent's history ("config history" does not
list it, however many plans are made): the agent keeps the last few plans
apart, and "config history SEQ" still shows one of them by its number.

Exit codes: 0 no changes, 2 changes, 1 an error (also when an operation of
the plan would fail, e.g. an invalid value, or when a value of the document
is in error in the agent and stays so).

The document and the plan each go in one gRPC message (64 MiB at most by
default; 100k routes: a 4.3 MB document, a 15 MB plan). One over a limit is
refused, saying by which side and the setting to raise: --grpc-max-msg-size
here, grpc.max_recv_msg_size or grpc.max_send_msg_size in the agent's
configuration.`,
		Example: `  agentctl config plan veth.yaml
  agentctl config plan all.yaml --replace
  agentctl config plan veth.yaml    # ... "Planned against revision 42: ..."
  agentctl config update veth.yaml --plan-revision 42
  if agentctl config plan veth.yaml >/dev/null; then echo in sync; fi`,
		Args:              argsNamed("FILE"),
		ValidArgsFunction: yamlFiles,
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, _, err := a.readDocument(args[0])
			if err != nil {
				return err
			}
			client, ctx, done, err := a.configuratorCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.Plan(ctx, &configuratorpb.UpdateRequest{Update: doc, FullResync: replace})
			if err != nil {
				return client.error("config plan", err)
			}
			// Every planned operation is a change, NOOP ones too: a value
			// that would be pending or invalid is still a new desired value.
			var changes, failing, pending int
			counts := map[string]int{}
			out := []plannedJSON{}
			unchanged := keyErrorsJSON(resp.GetUnchangedErrors())
			for _, op := range resp.GetOperations() {
				changes++
				counts[op.GetOperation()]++
				if op.GetError() != "" {
					failing++
				}
				p := plannedJSON{Operation: op.GetOperation(), Key: op.GetKey(), Flags: op.GetFlags(),
					Value: rawOrNil(op.GetValueJson()), PrevValue: rawOrNil(op.GetPrevValueJson()), Error: op.GetError()}
				if hasFlag(p, "IS-PENDING") {
					pending++
				}
				out = append(out, p)
			}
			if a.output != "table" {
				if err := a.printData(map[string]any{"changes": changes, "operations": out, "unchanged_errors": unchanged, "revision": resp.GetRevision()}); err != nil {
					return err
				}
			} else if changes == 0 && len(unchanged) == 0 {
				fmt.Fprintln(a.stdout, "No changes: the agent already has this configuration.")
			} else if changes == 0 {
				fmt.Fprintln(a.stdout, "No changes: the agent already has this configuration, but it is in error:")
			} else {
				t := newTable(a.stdout, "#", "OPERATION", "KEY", "FLAGS", "ERROR")
				for i, op := range out {
					t.row(strconv.Itoa(i+1), op.Operation, op.Key, strings.Join(op.Flags, " "), op.Error)
				}
				if err := t.flush(); err != nil {
					return err
				}
				var parts []string
				for _, name := range []string{"CREATE", "UPDATE", "DELETE", "VALIDATE"} {
					if counts[name] > 0 {
						parts = append(parts, fmt.Sprintf("%d %s", counts[name], strings.ToLower(name)))
					}
				}
				summary := fmt.Sprintf("Plan: %s (%s)", count(changes, "operation", "operations"), strings.Join(parts, ", "))
				if pending > 0 {
					summary += fmt.Sprintf("; %d would wait for dependencies (IS-PENDING)", pending)
				}
				fmt.Fprintln(a.stdout, summary+".")
				fmt.Fprintf(a.stdout, "Planned against revision %d: config update --plan-revision %d applies it only if nothing changed since.\n",
					resp.GetRevision(), resp.GetRevision())
				if len(unchanged) > 0 {
					fmt.Fprintln(a.stdout, "\nUnchanged, and in error in the agent:")
				}
			}
			if a.output == "table" && len(unchanged) > 0 {
				if err := a.printKeyErrors(unchanged); err != nil {
					return err
				}
			}
			var problems []string
			if failing > 0 {
				problems = append(problems, fmt.Sprintf("%d of %s would fail", failing, count(changes, "operation", "operations")))
			}
			if len(unchanged) > 0 {
				problems = append(problems, count(len(unchanged), "value of the document is", "values of the document are")+
					" in error in the agent and the update would not change that")
			}
			switch {
			case len(problems) > 0:
				return fmt.Errorf("plan: %s (see ERROR)", strings.Join(problems, "; "))
			case changes > 0:
				return &exitCodeError{code: exitChanges}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&replace, "replace", false, "plan a --replace update")
	return c
}

// --- history ---------------------------------------------------------------------

// txnRecord is a transaction of the REST history (the fields agentctl
// shows; JSON/YAML output passes the agent's answer through).
type txnRecord struct {
	SeqNum       uint64    `json:"seq_num"`
	Type         string    `json:"type"`
	Resync       string    `json:"resync"`
	Description  string    `json:"description"`
	WithRevert   bool      `json:"with_revert"`
	DryRun       bool      `json:"dry_run"`
	RetryAttempt int       `json:"retry_attempt"`
	Start        time.Time `json:"start"`
	Stop         time.Time `json:"stop"`
	Values       []struct {
		Key string `json:"key"`
	} `json:"values"`
	Planned  []txnOp `json:"planned"`
	Executed []txnOp `json:"executed"`
	// VerifyFailed: what verification after apply found the dataplane not
	// holding as applied.
	VerifyFailed []struct {
		Key       string `json:"key"`
		Operation string `json:"operation"`
		Error     string `json:"error"`
	} `json:"verify_failed"`
}

type txnOp struct {
	Operation string   `json:"operation"`
	Key       string   `json:"key"`
	NewState  string   `json:"new_state"`
	Error     string   `json:"error"`
	Flags     []string `json:"flags"`
}

func (r txnRecord) kind() string {
	k := r.Type
	if r.Resync != "" {
		k += " (" + r.Resync + ")"
	}
	if r.DryRun {
		k += " (dry run)"
	}
	if r.RetryAttempt > 0 {
		k += fmt.Sprintf(" (retry %d)", r.RetryAttempt)
	}
	return k
}

func (r txnRecord) failed() int {
	n := 0
	for _, op := range r.Executed {
		if op.Error != "" {
			n++
		}
	}
	return n
}

func (a *app) configHistory() *cobra.Command {
	var details bool
	var last int
	c := &cobra.Command{
		Use:   "history [SEQ]",
		Short: "List the transactions the agent executed, or show one",
		Long: `List the transactions kept in the agent's history (a table of their
sequence number, type, time, operations and errors), or show transaction SEQ
with its executed operations. --details prints the transaction log format
(the boxed log of the agent) instead.`,
		Example: `  agentctl config history
  agentctl config history --last 5
  agentctl config history 12
  agentctl config history 12 --details
  agentctl config history -o json`,
		Args: argsNamed("[SEQ]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if len(args) == 1 {
				seq, err := strconv.ParseUint(args[0], 10, 64)
				if err != nil || seq == 0 {
					return fmt.Errorf("SEQ %q: want a transaction sequence number (1, 2, ...)", args[0])
				}
				q.Set("seq-num", args[0])
			}
			if last < 0 {
				return fmt.Errorf("--last %d: want 0 (all) or more", last)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			if details {
				q.Set("format", "text")
				body, _, err := a.rest(ctx, "GET", "/scheduler/txn-history", q)
				if err != nil {
					return a.withNewestTxn(ctx, err)
				}
				_, err = a.stdout.Write(body)
				return err
			}
			var raw struct {
				History      json.RawMessage   `json:"history"`
				Transactions []json.RawMessage `json:"transactions"`
			}
			if err := a.restJSON(ctx, "GET", "/scheduler/txn-history", q, &raw); err != nil {
				return a.withNewestTxn(ctx, err)
			}
			if last > 0 && len(raw.Transactions) > last {
				raw.Transactions = raw.Transactions[len(raw.Transactions)-last:]
			}
			if a.output != "table" {
				return a.printData(raw)
			}
			recs := make([]txnRecord, len(raw.Transactions))
			for i, t := range raw.Transactions {
				if err := json.Unmarshal(t, &recs[i]); err != nil {
					return fmt.Errorf("answer of GET /scheduler/txn-history is not what agentctl expects: %v", err)
				}
			}
			if len(args) == 1 {
				return a.printTxn(recs[0])
			}
			if len(recs) == 0 {
				fmt.Fprintln(a.stdout, "No transactions in the history.")
				return nil
			}
			t := newTable(a.stdout, "SEQ", "TYPE", "START", "DURATION", "VALUES", "OPERATIONS", "FAILED", "DESCRIPTION")
			for _, r := range recs {
				t.row(strconv.FormatUint(r.SeqNum, 10), r.kind(), r.Start.Local().Format("2006-01-02 15:04:05.000"),
					r.Stop.Sub(r.Start).Round(time.Microsecond).String(), strconv.Itoa(len(r.Values)),
					strconv.Itoa(len(r.Executed)), strconv.Itoa(r.failed()), clip(r.Description, 60))
			}
			return t.flush()
		},
	}
	c.Flags().BoolVar(&details, "details", false, "print the transaction log format")
	c.Flags().IntVar(&last, "last", 0, "only the last N transactions (0: all kept)")
	return c
}

// printTxn prints one transaction: a header and its executed operations.
func (a *app) printTxn(r txnRecord) error {
	fmt.Fprintf(a.stdout, "Transaction #%d: %s\n", r.SeqNum, r.kind())
	if r.Description != "" {
		fmt.Fprintf(a.stdout, "Description:  %s\n", r.Description)
	}
	fmt.Fprintf(a.stdout, "Start:        %s (took %v)\n", r.Start.Local().Format("2006-01-02 15:04:05.000"), r.Stop.Sub(r.Start).Round(time.Microsecond))
	fmt.Fprintf(a.stdout, "Values:       %d\n", len(r.Values))
	ops, what := r.Executed, "Executed"
	if r.DryRun {
		ops, what = r.Planned, "Planned"
	}
	if len(ops) == 0 {
		fmt.Fprintf(a.stdout, "%s:%snothing\n", what, strings.Repeat(" ", 13-len(what)))
		return nil
	}
	fmt.Fprintln(a.stdout)
	t := newTable(a.stdout, "#", "OPERATION", "KEY", "STATE", "FLAGS", "ERROR")
	for i, op := range ops {
		t.row(strconv.Itoa(i+1), op.Operation, op.Key, op.NewState, strings.Join(op.Flags, " "), op.Error)
	}
	if err := t.flush(); err != nil {
		return err
	}
	if len(r.VerifyFailed) > 0 {
		fmt.Fprintf(a.stdout, "\nVerification after apply: %s not held by the dataplane as applied\n", count(len(r.VerifyFailed), "value", "values"))
		v := newTable(a.stdout, "OPERATION", "KEY", "ERROR")
		for _, f := range r.VerifyFailed {
			v.row(f.Operation, f.Key, f.Error)
		}
		return v.flush()
	}
	return nil
}

func (a *app) configResync() *cobra.Command {
	var retry, verbose bool
	c := &cobra.Command{
		Use:   "resync",
		Short: "Make the dataplane match the desired configuration again",
		Long: `Run a downstream resync: the agent reads the actual state of VPP and Linux
and corrects every difference from the desired configuration. An in-sync
system executes nothing. --retry retries failed operations; --verbose makes
the agent log the state it read.`,
		Example: `  agentctl config resync
  agentctl config resync --retry -o yaml`,
		Args: argsNamed(),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{}
			if retry {
				q.Set("retry", "true")
			}
			if verbose {
				q.Set("verbose", "true")
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			var raw struct {
				Transaction json.RawMessage `json:"transaction"`
				Error       string          `json:"error"`
			}
			if err := a.restJSON(ctx, "POST", "/scheduler/downstream-resync", q, &raw); err != nil {
				return err
			}
			if a.output != "table" {
				if err := a.printData(raw); err != nil {
					return err
				}
			} else {
				var r txnRecord
				if err := json.Unmarshal(raw.Transaction, &r); err != nil {
					return fmt.Errorf("answer of POST /scheduler/downstream-resync is not what agentctl expects: %v", err)
				}
				if err := a.printTxn(r); err != nil {
					return err
				}
			}
			if raw.Error != "" {
				return fmt.Errorf("resync: %s", raw.Error)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&retry, "retry", false, "retry failed operations")
	c.Flags().BoolVar(&verbose, "verbose", false, "the agent logs the state it read")
	return c
}

// --- watch -----------------------------------------------------------------------

type statusEventJSON struct {
	Time          string   `json:"time"`
	Key           string   `json:"key"`
	State         string   `json:"state"`
	LastOperation string   `json:"last_operation,omitempty"`
	Error         string   `json:"error,omitempty"`
	Details       []string `json:"details,omitempty"`
	Derived       bool     `json:"derived,omitempty"`
}

func (a *app) configWatch() *cobra.Command {
	var prefixes []string
	var count int
	c := &cobra.Command{
		Use:   "watch",
		Short: "Follow the status of values as it changes",
		Long: `Print the status of every value (base and derived), then every change, as it
happens, until interrupted (Ctrl-C) or until --count statuses are printed.
Table output prints one line per status; -o json prints one JSON object per
line; -o yaml one document per status.`,
		Example: `  agentctl config watch
  agentctl config watch --key-prefix config/vpp/v2/interfaces/
  agentctl config watch -o json | jq .`,
		Args: argsNamed(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if count < 0 {
				return fmt.Errorf("--count %d: want 0 (no limit) or more", count)
			}
			client, closeConn, err := a.configurator()
			if err != nil {
				return err
			}
			defer closeConn()
			ctx, cancel := context.WithCancel(a.withToken(cmd.Context()))
			defer cancel()
			stream, err := client.WatchStatus(ctx, &configuratorpb.WatchStatusRequest{KeyPrefixes: prefixes})
			if err != nil {
				return client.error("config watch", err)
			}
			printed := 0
			for {
				st, err := stream.Recv()
				if err != nil {
					if cmd.Context().Err() != nil {
						return nil // interrupted
					}
					if errors.Is(err, io.EOF) {
						return errors.New("config watch: the agent ended the stream (stopping?)")
					}
					return client.error("config watch", err)
				}
				for _, vs := range append([]*kvschedulerpb.ValueStatus{st.GetValue()}, st.GetDerivedValues()...) {
					if err := a.printStatusEvent(vs); err != nil {
						return err
					}
					printed++
					if count > 0 && printed >= count {
						return nil
					}
				}
			}
		},
	}
	c.Flags().StringSliceVar(&prefixes, "key-prefix", nil, "only keys with this prefix (repeatable)")
	c.Flags().IntVar(&count, "count", 0, "stop after N statuses (0: no limit)")
	return c
}

func (a *app) printStatusEvent(vs *kvschedulerpb.ValueStatus) error {
	ev := statusEventJSON{Time: time.Now().Format(time.RFC3339Nano), Key: vs.GetKey(), State: vs.GetState().String(),
		Error: vs.GetError(), Details: vs.GetDetails(), Derived: vs.GetDerived()}
	if op := vs.GetLastOperation(); op != kvschedulerpb.TxnOperation_UNDEFINED {
		ev.LastOperation = op.String()
	}
	switch a.output {
	case "json":
		data, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(a.stdout, "%s\n", data)
		return err
	case "yaml":
		fmt.Fprintln(a.stdout, "---")
		return a.printData(ev)
	}
	line := fmt.Sprintf("%s  %-10s %s", time.Now().Format("15:04:05.000"), ev.State, ev.Key)
	if ev.LastOperation != "" {
		line += "  (" + ev.LastOperation + ")"
	}
	if ev.Error != "" {
		line += "  error: " + oneLine(ev.Error)
	}
	// The details of a PENDING value are the dependencies it waits for, of
	// an INVALID one its invalid fields.
	switch {
	case len(ev.Details) == 0:
	case ev.State == kvschedulerpb.ValueState_PENDING.String():
		line += "  waiting for: " + strings.Join(ev.Details, ", ")
	case ev.State == kvschedulerpb.ValueState_INVALID.String():
		line += "  invalid fields: " + strings.Join(ev.Details, ", ")
	default:
		line += "  details: " + strings.Join(ev.Details, ", ")
	}
	_, err := fmt.Fprintln(a.stdout, line)
	return err
}

// yamlFiles completes configuration file names.
func yamlFiles(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return []string{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
}
