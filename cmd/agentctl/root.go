package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/netagent-io/netagent/pkg/models"
)

// Exit codes.
const (
	exitOK      = 0
	exitError   = 1
	exitChanges = 2
)

// exitCodeError ends the command with an exit code other than 1, after its
// output is written (plan with changes: 2). An empty message prints nothing.
type exitCodeError struct {
	code int
	msg  string
}

func (e *exitCodeError) Error() string { return e.msg }

// app holds the global flags and the streams of one run.
type app struct {
	host          string
	grpcPort      int
	restPort      int
	label         string
	etcdEndpoints []string
	token         string
	tokenFile     string
	tls           bool
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsInsecure   bool
	timeout       time.Duration
	output        string

	stdin          io.Reader
	stdout, stderr io.Writer
}

// envFallbacks maps global flags to the environment variables read when the
// flag is not given.
var envFallbacks = []struct{ flag, env string }{
	{"host", "AGENT_HOST"},
	{"grpc-port", "AGENT_GRPC_PORT"},
	{"rest-port", "AGENT_REST_PORT"},
	{"label", "MICROSERVICE_LABEL"},
	{"etcd-endpoints", "ETCD_ENDPOINTS"},
	{"token", "NETAGENT_TOKEN"},
	{"token-file", "NETAGENT_TOKEN_FILE"},
	{"tls", "AGENTCTL_TLS"},
	{"tls-ca", "AGENTCTL_TLS_CA"},
	{"tls-cert", "AGENTCTL_TLS_CERT"},
	{"tls-key", "AGENTCTL_TLS_KEY"},
	{"tls-insecure", "AGENTCTL_TLS_INSECURE"},
	{"timeout", "AGENTCTL_TIMEOUT"},
	{"output", "AGENTCTL_OUTPUT"},
}

func envOf(flag string) string {
	for _, f := range envFallbacks {
		if f.flag == flag {
			return f.env
		}
	}
	return ""
}

// run executes agentctl with the arguments and returns its exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	if strings.HasPrefix(err.Error(), "unknown command ") {
		err = fmt.Errorf("%v (see agentctl --help)", err)
	}
	var ec *exitCodeError
	if errors.As(err, &ec) {
		if ec.msg != "" {
			fmt.Fprintln(stderr, "agentctl: "+oneLine(ec.msg))
		}
		return ec.code
	}
	fmt.Fprintln(stderr, "agentctl: "+oneLine(err.Error()))
	return exitError
}

// oneLine keeps an error on one line: an operator greps for it, a script
// reads the last line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, "\r", "")
	return strings.ReplaceAll(s, "\n", "; ")
}

const rootLong = `agentctl is the command line of netagent.

It talks to a running agent over gRPC (configuration) and REST (status,
values, history, graph), and to etcd directly (kvdb). Every global flag has an
environment variable used when the flag is not given:

  --host            AGENT_HOST            agent address (default 127.0.0.1)
  --grpc-port       AGENT_GRPC_PORT       gRPC port (default 9111)
  --rest-port       AGENT_REST_PORT       REST port (default 9191)
  --label           MICROSERVICE_LABEL    microservice label (etcd keys under /vnf-agent/<label>/)
  --etcd-endpoints  ETCD_ENDPOINTS        etcd endpoints, comma separated
  --token           NETAGENT_TOKEN        bearer token for changes
  --token-file      NETAGENT_TOKEN_FILE   file holding the token
  --tls             AGENTCTL_TLS          use TLS for gRPC and REST
  --tls-ca          AGENTCTL_TLS_CA       CA bundle that signed the agent's certificate
  --tls-cert/-key   AGENTCTL_TLS_CERT/KEY client certificate and key
  --tls-insecure    AGENTCTL_TLS_INSECURE skip verifying the agent's certificate
  --timeout         AGENTCTL_TIMEOUT      limit of each request (default 10s)
  -o, --output      AGENTCTL_OUTPUT       table, yaml or json

Exit codes: 0 success, 1 error, 2 "config plan" has changes.`

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "agentctl",
		Short:         "Operate a netagent: configuration, status, values, history, graph, etcd",
		Long:          rootLong,
		SilenceUsage:  true,
		SilenceErrors: true,
		Example: `  agentctl status
  agentctl config update veth.yaml --wait
  agentctl config plan veth.yaml; echo "exit $?"
  agentctl values linux.interfaces.interface -o yaml
  agentctl --host 10.0.0.5 --token-file /run/secrets/netagent config get`,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.resolve(cmd.Root().PersistentFlags())
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.host, "host", "127.0.0.1", "agent host name or address")
	pf.IntVar(&a.grpcPort, "grpc-port", 9111, "agent gRPC port")
	pf.IntVar(&a.restPort, "rest-port", 9191, "agent REST port")
	pf.StringVarP(&a.label, "label", "l", models.DefaultLabel, "microservice label: etcd keys are under /vnf-agent/<label>/")
	pf.StringSliceVar(&a.etcdEndpoints, "etcd-endpoints", []string{"127.0.0.1:2379"}, "etcd endpoints, comma separated (kvdb)")
	pf.StringVar(&a.token, "token", "", "bearer token sent with changes")
	pf.StringVar(&a.tokenFile, "token-file", "", "file holding the bearer token")
	pf.BoolVar(&a.tls, "tls", false, "use TLS for gRPC and REST")
	pf.StringVar(&a.tlsCA, "tls-ca", "", "PEM file of the CA that signed the agent's certificate (implies --tls)")
	pf.StringVar(&a.tlsCert, "tls-cert", "", "PEM client certificate (implies --tls)")
	pf.StringVar(&a.tlsKey, "tls-key", "", "PEM key of the client certificate")
	pf.BoolVar(&a.tlsInsecure, "tls-insecure", false, "do not verify the agent's certificate (implies --tls)")
	pf.DurationVar(&a.timeout, "timeout", 10*time.Second, "limit of each request")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table, yaml or json")
	_ = root.RegisterFlagCompletionFunc("output", fixedCompletion("table", "yaml", "json"))

	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%v (see %s --help)", err, cmd.CommandPath())
	})
	root.AddCommand(a.configCommand(), a.statusCommand(), a.valuesCommand(), a.dumpCommand(),
		a.graphCommand(), a.kvdbCommand())
	return root
}

// resolve applies the environment fallbacks to the global flags not given
// and checks them.
func (a *app) resolve(pf *pflag.FlagSet) error {
	for _, f := range envFallbacks {
		fl := pf.Lookup(f.flag)
		v, set := os.LookupEnv(f.env)
		if fl == nil || fl.Changed || !set || v == "" {
			continue
		}
		if fl.Value.Type() == "stringSlice" {
			// A stringSlice flag appends on Set; the environment replaces
			// the default.
			if err := fl.Value.(pflag.SliceValue).Replace(splitList(v)); err != nil {
				return fmt.Errorf("%s=%q: %v", f.env, v, err)
			}
			continue
		}
		if err := fl.Value.Set(v); err != nil {
			return fmt.Errorf("%s=%q: not a valid %s for --%s", f.env, v, fl.Value.Type(), f.flag)
		}
	}
	switch a.output {
	case "table", "yaml", "json":
	default:
		return fmt.Errorf("output format %q: want table, yaml or json (-o, %s)", a.output, envOf("output"))
	}
	for name, port := range map[string]int{"grpc-port": a.grpcPort, "rest-port": a.restPort} {
		if port <= 0 || port > 65535 {
			return fmt.Errorf("--%s %d: want a port from 1 to 65535", name, port)
		}
	}
	if a.timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration such as 10s", a.timeout)
	}
	if err := models.ValidLabel(a.label); err != nil {
		return fmt.Errorf("--label: %v", err)
	}
	if a.tokenFile != "" {
		data, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %v", err)
		}
		if a.token == "" {
			a.token = strings.TrimSpace(string(data))
		}
	}
	if a.tlsCA != "" || a.tlsCert != "" || a.tlsInsecure {
		a.tls = true
	}
	if (a.tlsCert == "") != (a.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// argsNamed checks the positional arguments against their names: "X" is
// required, "[X]" optional; the error names what is missing or extra.
func argsNamed(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		required := 0
		for _, n := range names {
			if !strings.HasPrefix(n, "[") {
				required++
			}
		}
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		help := "see " + cmd.CommandPath() + " --help"
		switch {
		case len(args) < required:
			return fmt.Errorf("%s: missing %s (%s)", name, strings.Join(names[len(args):required], " "), help)
		case len(args) > len(names) && len(names) == 0:
			return fmt.Errorf("%s takes no arguments, got %q (%s)", name, strings.Join(args, " "), help)
		case len(args) > len(names):
			return fmt.Errorf("%s: too many arguments: %q after %s (%s)", name, strings.Join(args[len(names):], " "), strings.Join(names, " "), help)
		}
		return nil
	}
}

// fixedCompletion completes a flag or argument from a fixed list.
func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// modelNames are the names of the models, for completion and errors.
func modelNames() []string {
	var names []string
	for _, m := range models.Default.Models() {
		names = append(names, m.Name)
	}
	return names
}

// modelArg completes a MODEL argument.
func modelArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return modelNames(), cobra.ShellCompDirectiveNoFileComp
}

// findModel returns the model named name.
func findModel(name string) (*models.Model, error) {
	if m := models.Default.ModelByName(name); m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("unknown model %q (known: %s)", name, strings.Join(modelNames(), ", "))
}
