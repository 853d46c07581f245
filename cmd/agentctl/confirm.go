package main

// Changes to confirm and probes (issue 19): --confirm-within and --probe of
// config update/delete, config confirm, config status.

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/durationpb"

	configuratorpb "github.com/netagent-io/netagent/proto/configurator"
)

// defaultProbeTimeout is the timeout of a --probe without timeout=.
const defaultProbeTimeout = 5 * time.Second

// safetyFlags are --confirm-within and --probe of a change.
type safetyFlags struct {
	confirmWithin time.Duration
	probes        []string
}

const probeUsage = `a check that must pass once the change is applied, else it is reverted: "ping ADDRESS", "tcp HOST:PORT" or "http URL", then optionally netns=NAME and timeout=DURATION (default 5s); repeat for more`

func (f *safetyFlags) add(c *cobra.Command) {
	c.Flags().DurationVar(&f.confirmWithin, "confirm-within", 0, `revert the change unless "agentctl config confirm" keeps it within this time (e.g. 60s)`)
	c.Flags().StringArrayVar(&f.probes, "probe", nil, probeUsage)
}

// request returns the confirm_within and probes of the request; its
// errors name the flag.
func (f *safetyFlags) request() (*durationpb.Duration, []*configuratorpb.Probe, error) {
	var within *durationpb.Duration
	switch {
	case f.confirmWithin < 0:
		return nil, nil, fmt.Errorf("--confirm-within %v: want a positive duration", f.confirmWithin)
	case f.confirmWithin > 0:
		within = durationpb.New(f.confirmWithin)
	}
	probes := make([]*configuratorpb.Probe, 0, len(f.probes))
	for _, text := range f.probes {
		p, err := parseProbe(text)
		if err != nil {
			return nil, nil, fmt.Errorf("--probe %q: %v", text, err)
		}
		probes = append(probes, p)
	}
	return within, probes, nil
}

// parseProbe reads "KIND TARGET [netns=NAME] [timeout=DURATION]".
func parseProbe(text string) (*configuratorpb.Probe, error) {
	fields := strings.Fields(text)
	if len(fields) < 2 {
		return nil, fmt.Errorf(`want "ping ADDRESS", "tcp HOST:PORT" or "http URL", then netns=NAME, timeout=DURATION`)
	}
	kinds := map[string]configuratorpb.Probe_Kind{"ping": configuratorpb.Probe_PING, "tcp": configuratorpb.Probe_TCP, "http": configuratorpb.Probe_HTTP}
	kind, ok := kinds[strings.ToLower(fields[0])]
	if !ok {
		return nil, fmt.Errorf("kind %q: want ping, tcp or http", fields[0])
	}
	p := &configuratorpb.Probe{Kind: kind, Target: fields[1], Timeout: durationpb.New(defaultProbeTimeout)}
	for _, opt := range fields[2:] {
		name, value, ok := strings.Cut(opt, "=")
		switch {
		case ok && name == "netns" && value != "":
			p.Namespace = value
		case ok && name == "timeout":
			d, err := time.ParseDuration(value)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("timeout %q: want a positive duration (e.g. 2s)", value)
			}
			p.Timeout = durationpb.New(d)
		default:
			return nil, fmt.Errorf("%q: want netns=NAME or timeout=DURATION", opt)
		}
	}
	return p, nil
}

// reportProbes prints the results of the probes of a change.
func (a *app) reportProbes(results []*configuratorpb.ProbeResult) {
	if len(results) == 0 || a.output != "table" {
		return
	}
	for _, r := range results {
		p := r.GetProbe()
		what := strings.ToLower(p.GetKind().String()) + " " + p.GetTarget()
		if p.GetNamespace() != "" {
			what += " from netns " + p.GetNamespace()
		}
		if r.GetOk() {
			fmt.Fprintf(a.stdout, "probe %s: ok (%v)\n", what, r.GetTook().AsDuration().Round(time.Millisecond))
		} else {
			fmt.Fprintf(a.stdout, "probe %s: FAILED: %s\n", what, r.GetError())
		}
	}
}

func (a *app) configConfirm() *cobra.Command {
	return &cobra.Command{
		Use:   "confirm [SEQ]",
		Short: "Keep the change pending confirmation",
		Long: `Keep the change made with --confirm-within (or with probes and a
confirmation of its own): without it, the agent puts the values of its gRPC
source back as they were before the change when its time is up. SEQ, the
change's transaction number, makes sure the change confirmed is the one
meant; without it the pending change is confirmed, whichever it is.`,
		Example: `  agentctl config update new.yaml --confirm-within 60s
  agentctl config confirm`,
		Args: argsNamed("[SEQ]"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var seq uint64
			if len(args) == 1 {
				if _, err := fmt.Sscan(args[0], &seq); err != nil || seq == 0 {
					return fmt.Errorf("SEQ %q: want the change's transaction number (config status shows it)", args[0])
				}
			}
			client, ctx, done, err := a.configuratorCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.Confirm(ctx, &configuratorpb.ConfirmRequest{SeqNum: seq})
			if err != nil {
				return client.changeError("config confirm", err)
			}
			if a.output != "table" {
				return a.printData(map[string]uint64{"confirmed": resp.GetSeqNum()})
			}
			fmt.Fprintf(a.stdout, "change #%d confirmed: it stays\n", resp.GetSeqNum())
			return nil
		},
	}
}

func (a *app) configStatus() *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the change pending confirmation, if any",
		Long: `Show the change made with --confirm-within that waits for
"agentctl config confirm": its transaction, when it is reverted unless
confirmed, and the keys it changed.`,
		Example: `  agentctl config status
  agentctl config status -o json`,
		Args: argsNamed(),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, ctx, done, err := a.configuratorCall(cmd.Context())
			if err != nil {
				return err
			}
			defer done()
			resp, err := client.Pending(ctx, &configuratorpb.PendingRequest{})
			if err != nil {
				return client.changeError("config status", err)
			}
			type pendingJSON struct {
				Seq           uint64    `json:"seq"`
				Description   string    `json:"description"`
				Deadline      time.Time `json:"deadline"`
				ConfirmWithin string    `json:"confirm_within"`
				Keys          []string  `json:"keys"`
			}
			var out struct {
				Pending *pendingJSON `json:"pending"`
			}
			if resp.GetSeqNum() != 0 {
				out.Pending = &pendingJSON{Seq: resp.GetSeqNum(), Description: resp.GetDescription(), Deadline: resp.GetDeadline().AsTime(),
					ConfirmWithin: resp.GetConfirmWithin().AsDuration().String(), Keys: resp.GetKeys()}
			}
			if a.output != "table" {
				return a.printData(out)
			}
			if out.Pending == nil {
				fmt.Fprintln(a.stdout, "no change is pending confirmation")
				return nil
			}
			p := out.Pending
			left := time.Until(p.Deadline).Round(time.Second)
			fmt.Fprintf(a.stdout, "change #%d (%s) is pending confirmation: reverted at %s (in %v) unless \"agentctl config confirm %d\"\n",
				p.Seq, p.Description, p.Deadline.Local().Format("2006-01-02 15:04:05"), max(left, 0), p.Seq)
			for _, key := range p.Keys {
				fmt.Fprintln(a.stdout, "  "+key)
			}
			return nil
		},
	}
}
