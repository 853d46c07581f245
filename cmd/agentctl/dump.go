package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

type dumpedValue struct {
	Key   string `json:"key"`
	Value struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"value"`
	Origin   string          `json:"origin"`
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

type dumpAnswer struct {
	View   string        `json:"view"`
	Values []dumpedValue `json:"values"`
	Error  string        `json:"error,omitempty"`
}

func (a *app) dumpCommand() *cobra.Command {
	var view string
	c := &cobra.Command{
		Use:   "dump MODEL",
		Short: "Dump the values of a model: actual (SB), desired (NB) or cached",
		Long: `Dump the values of a model as the agent sees them:

  --view cached  the agent's view of the dataplane (default; no SB call)
  --view SB      read from VPP and Linux now (Retrieve)
  --view NB      the desired values

The table shows each key, where the value comes from (origin: from-NB, or
from-SB for values found in the dataplane) and the value as JSON.

Models: ` + strings.Join(modelNames(), ", "),
		Example: `  agentctl dump vpp.interfaces
  agentctl dump linux.interfaces.interface --view SB
  agentctl dump vpp.route --view NB -o yaml`,
		Args:              argsNamed("MODEL"),
		ValidArgsFunction: modelArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := findModel(args[0])
			if err != nil {
				return err
			}
			switch strings.ToLower(view) {
			case "sb":
				view = "SB"
			case "nb":
				view = "NB"
			case "cached":
				view = "cached"
			default:
				return fmt.Errorf("--view %q: want NB, SB or cached", view)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			q := url.Values{"key-prefix": {m.KeyPrefix}, "view": {view}}
			body, _, err := a.rest(ctx, "GET", "/scheduler/dump", q)
			var re *restError
			partial := err != nil && errors.As(err, &re) && re.status == 502
			if err != nil && !partial {
				return err
			}
			var ans dumpAnswer
			if jerr := json.Unmarshal(body, &ans); jerr != nil {
				return fmt.Errorf("answer of GET /scheduler/dump is not what agentctl expects: %v", jerr)
			}
			if a.output != "table" {
				if ans.Values == nil {
					ans.Values = []dumpedValue{}
				}
				if perr := a.printData(ans); perr != nil {
					return perr
				}
			} else if len(ans.Values) == 0 {
				fmt.Fprintf(a.stdout, "No %s values in the %s view.\n", m.Name, ans.View)
			} else {
				t := newTable(a.stdout, "KEY", "ORIGIN", "VALUE")
				for _, v := range ans.Values {
					t.row(v.Key, v.Origin, compactJSON(v.Value.Value))
				}
				if ferr := t.flush(); ferr != nil {
					return ferr
				}
			}
			if partial {
				return fmt.Errorf("the dataplane did not answer in full: %s", ans.Error)
			}
			return nil
		},
	}
	c.Flags().StringVar(&view, "view", "cached", "NB, SB or cached")
	_ = c.RegisterFlagCompletionFunc("view", fixedCompletion("NB", "SB", "cached"))
	return c
}

func (a *app) graphCommand() *cobra.Command {
	var txn uint64
	var format, file string
	c := &cobra.Command{
		Use:   "graph",
		Short: "The dependency graph of the values, as DOT or SVG",
		Long: `Print the scheduler's graph (values, their states, dependencies and derived
values), now or as it was after transaction --txn N.

--format dot (default) prints Graphviz DOT text; svg renders it in the agent
(which needs Graphviz's dot there); mermaid and json are also available.
-o FILE writes the graph to FILE instead of standard output; a FILE ending
in .svg chooses SVG. (In this command -o is the output file, not the output
format.)`,
		Example: `  agentctl graph > graph.dot
  agentctl graph -o graph.svg
  agentctl graph --txn 12 --format svg -o txn12.svg
  agentctl graph | dot -Tpng > graph.png`,
		Args: argsNamed(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format == "" {
				format = "dot"
				if strings.EqualFold(filepath.Ext(file), ".svg") {
					format = "svg"
				}
			}
			switch format {
			case "dot", "svg", "mermaid", "json":
			default:
				return fmt.Errorf("--format %q: want dot, svg, mermaid or json", format)
			}
			q := url.Values{"format": {format}}
			if cmd.Flags().Changed("txn") {
				if txn == 0 {
					return errors.New("--txn 0: want a transaction sequence number (1, 2, ...)")
				}
				q.Set("txn", strconv.FormatUint(txn, 10))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			body, _, err := a.rest(ctx, "GET", "/scheduler/graph", q)
			if err != nil {
				return err
			}
			if file == "" || file == "-" {
				_, err = a.stdout.Write(body)
				return err
			}
			if err := os.WriteFile(file, body, 0o644); err != nil {
				return fmt.Errorf("writing the graph: %v", err)
			}
			fmt.Fprintf(a.stderr, "graph written to %s (%s, %d bytes)\n", file, format, len(body))
			return nil
		},
	}
	c.Flags().Uint64Var(&txn, "txn", 0, "the graph as it was after transaction N")
	c.Flags().StringVar(&format, "format", "", "dot, svg, mermaid or json (default dot, or svg for -o *.svg)")
	c.Flags().StringVarP(&file, "output", "o", "", "write the graph to this file")
	_ = c.RegisterFlagCompletionFunc("format", fixedCompletion("dot", "svg", "mermaid", "json"))
	return c
}
