package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
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
from-SB for values found in the dataplane) and the value as JSON. A model
whose part of the agent is disabled in its configuration (VPP's models with
vpp.disabled: true) is an error saying so, not an empty table.

` + modelsHelp(),
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
			if err != nil && re != nil && re.status == http.StatusConflict {
				// The part of the agent that would have them is disabled.
				return fmt.Errorf("dump %s: %s", m.Name, restMessage(body, re.status))
			}
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

// graphFormats are the formats the agent renders the graph in, and
// graphExtensions the file name extensions that stand for them.
var (
	graphFormats    = []string{"dot", "svg", "mermaid", "json"}
	graphExtensions = map[string]string{".dot": "dot", ".gv": "dot", ".svg": "svg", ".mmd": "mermaid", ".mermaid": "mermaid", ".json": "json"}
)

// graphFormatsList names the formats of graphFormats for messages.
const graphFormatsList = "dot, svg, mermaid or json"

// extensionsList names the extensions of graphExtensions for messages.
const extensionsList = ".svg, .dot or .gv, .json, .mmd or .mermaid"

// checkGraphFormat checks the format given to flag (-o, or --format as
// before -o was the format). A file name there is what -o was before it
// was the format, as in every other command: its error says to use --file.
func checkGraphFormat(flag, format string) error {
	switch {
	case format == "" || slices.Contains(graphFormats, format):
		return nil
	case strings.ContainsRune(format, '/') || filepath.Ext(format) != "":
		return fmt.Errorf("%s %q: -o is the format of the graph (%s), as in every command; --file %s writes the graph to that file", flag, format, graphFormatsList, format)
	}
	return fmt.Errorf("%s %q: want %s (--file FILE writes the graph to a file)", flag, format, graphFormatsList)
}

// graphFormat returns the format of the graph: -o, else the one the
// extension of the file stands for, else dot. An extension that stands for
// no format the agent renders (.png, .pdf...) is an error unless -o is
// given, and -o must not contradict the extension.
func graphFormat(format, file string) (string, error) {
	ext := strings.ToLower(filepath.Ext(file))
	if file == "" || file == "-" || ext == "" {
		if format == "" {
			format = "dot"
		}
		return format, nil
	}
	byExt, known := graphExtensions[ext]
	switch {
	case known && format == "":
		return byExt, nil
	case known && format != byExt:
		return "", fmt.Errorf("-o %s contradicts --file %s (a %s file name): drop -o, or name the file for %s (%s)", format, file, byExt, format, extensionsList)
	case known || format != "":
		return format, nil
	case ext == ".png" || ext == ".jpg" || ext == ".jpeg" || ext == ".gif" || ext == ".pdf":
		return "", fmt.Errorf("--file %s: the agent renders the graph as %s, not %s; name the file %s, or convert the DOT text: agentctl graph | dot -T%s > %s",
			file, strings.Join(graphFormats, ", "), strings.TrimPrefix(ext, "."), extensionsList, strings.TrimPrefix(ext, "."), file)
	}
	return "", fmt.Errorf("--file %s: no graph format is known for %s: name the file %s, or give -o (%s)", file, ext, extensionsList, graphFormatsList)
}

func (a *app) graphCommand() *cobra.Command {
	var txn uint64
	var format, oldFormat, file, keyPrefix string
	c := &cobra.Command{
		Use:   "graph",
		Short: "The dependency graph of the values, as DOT, SVG, Mermaid or JSON",
		Long: `Print the scheduler's graph (values, their states, dependencies and derived
values), now or as it was after transaction --txn N. --key-prefix narrows it
to the values under a prefix and the values they touch (their bases and
derived values, what they depend on, what depends on them): Graphviz takes
long to lay out thousands of values, and a picture of them is hard to read.

-o (--output) is the format, as in every command: dot (default) prints
Graphviz DOT text; svg renders it in the agent (which needs Graphviz's dot
there); mermaid and json are also available. --file FILE (-f) writes the
graph to FILE instead of standard output, in the format its extension names
unless -o is given: .svg, .dot or .gv, .json, .mmd or .mermaid (without
extension: DOT). The agent renders no PNG or PDF: convert the DOT text with
Graphviz (see the examples).`,
		Example: `  agentctl graph > graph.dot
  agentctl graph --file graph.svg
  agentctl graph -o json | jq '.nodes | length'
  agentctl graph --txn 12 --file txn12.svg
  agentctl graph --key-prefix config/vpp/v2/interfaces/loop1 --file loop1.svg
  agentctl graph -o mermaid
  agentctl graph | dot -Tpng > graph.png`,
		Args: argsNamed(),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkGraphFormat("-o", format); err != nil {
				return err
			}
			if err := checkGraphFormat("--format", oldFormat); err != nil {
				return err
			}
			switch {
			case format == "":
				format = oldFormat
			case oldFormat != "" && oldFormat != format:
				return fmt.Errorf("-o %s and --format %s: give one (--format is the old name of -o)", format, oldFormat)
			}
			format, err := graphFormat(format, file)
			if err != nil {
				return err
			}
			q := url.Values{"format": {format}}
			if keyPrefix != "" {
				q.Set("key-prefix", keyPrefix)
			}
			if cmd.Flags().Changed("txn") {
				if txn == 0 {
					return errors.New("--txn 0: want a transaction sequence number (1, 2, ...)")
				}
				q.Set("txn", strconv.FormatUint(txn, 10))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), a.timeout)
			defer cancel()
			body, _, err := a.rest(ctx, "GET", "/scheduler/graph", q)
			if err != nil && q.Has("txn") {
				return a.withNewestTxn(ctx, err)
			} else if err != nil {
				return err
			}
			if file == "" || file == "-" {
				_, err = a.stdout.Write(body)
				return err
			}
			if err := os.WriteFile(file, body, 0o644); err != nil {
				return fmt.Errorf("writing the graph: %v", err)
			}
			fmt.Fprintf(a.stderr, "graph written to %s (%s, %s)\n", file, format, count(len(body), "byte", "bytes"))
			return nil
		},
	}
	c.Flags().Uint64Var(&txn, "txn", 0, "the graph as it was after transaction N")
	c.Flags().StringVar(&keyPrefix, "key-prefix", "", "only the values whose keys start with this, and the values they touch")
	c.Flags().StringVarP(&format, "output", "o", "", "format: dot, svg, mermaid or json (default: from the --file extension, else dot)")
	c.Flags().StringVarP(&file, "file", "f", "", "write the graph to this file (.svg, .dot, .gv, .json, .mmd, .mermaid; - is standard output)")
	// --format was the format when -o was the file: kept for the scripts
	// of then, out of the help.
	c.Flags().StringVar(&oldFormat, "format", "", "the old name of -o")
	_ = c.Flags().MarkHidden("format")
	_ = c.RegisterFlagCompletionFunc("output", fixedCompletion(graphFormats...))
	_ = c.RegisterFlagCompletionFunc("format", fixedCompletion(graphFormats...))
	return c
}

// withNewestTxn adds the number of the newest transaction to the error of
// a request for a transaction that is not in the history (404): the agent
// says where its history starts.
func (a *app) withNewestTxn(ctx context.Context, err error) error {
	var re *restError
	if !errors.As(err, &re) || re.status != http.StatusNotFound {
		return err
	}
	var stats struct {
		History struct {
			NewestSeq uint64 `json:"newest_seq"`
		} `json:"history"`
	}
	if serr := a.restJSON(ctx, "GET", "/scheduler/stats", nil, &stats); serr != nil || stats.History.NewestSeq == 0 {
		return err
	}
	return fmt.Errorf("%w; the newest transaction is #%d", err, stats.History.NewestSeq)
}
