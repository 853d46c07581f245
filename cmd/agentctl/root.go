package main

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/netagent-io/netagent/pkg/models"
	"github.com/netagent-io/netagent/plugins/orchestrator/grpcsource/msglimit"
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
	host     string
	grpcPort int
	restPort int
	label    string
	// labelFrom says where the label came from: "--label",
	// "MICROSERVICE_LABEL" or "the default".
	labelFrom     string
	etcdEndpoints []string
	token         string
	tokenFile     string
	// tokenFrom says where the token came from, for the error of a token
	// the agent rejects: "--token", "NETAGENT_TOKEN", "--token-file FILE"...
	tokenFrom string
	// etcdUser is USER:PASSWORD for etcd (kvdb); etcdUserFrom says where
	// it came from.
	etcdUser     string
	etcdUserFrom string
	tls          bool
	tlsCA        string
	tlsCert      string
	tlsKey       string
	tlsInsecure  bool
	timeout      time.Duration
	// timeoutGiven: --timeout or AGENTCTL_TIMEOUT was given (it then
	// bounds the connection to etcd too).
	timeoutGiven bool
	output       string
	// grpcMaxMsgSize is --grpc-max-msg-size as given; grpcMaxMsg the
	// limit it gives, in bytes.
	grpcMaxMsgSize string
	grpcMaxMsg     int

	// agent is the look at the agent's status that the commands on its
	// etcd keys make on the side (kvdb).
	agent *agentProbe

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
	{"etcd-user", "AGENTCTL_ETCD_USER"},
	{"tls", "AGENTCTL_TLS"},
	{"tls-ca", "AGENTCTL_TLS_CA"},
	{"tls-cert", "AGENTCTL_TLS_CERT"},
	{"tls-key", "AGENTCTL_TLS_KEY"},
	{"tls-insecure", "AGENTCTL_TLS_INSECURE"},
	{"timeout", "AGENTCTL_TIMEOUT"},
	{"grpc-max-msg-size", "AGENTCTL_GRPC_MAX_MSG_SIZE"},
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
	// The standard logger is used only by libraries, net/http's transport
	// among them ("Unsolicited response received on idle HTTP channel" when
	// the REST port is a gRPC one): agentctl says what went wrong in its
	// own one line.
	log.SetOutput(io.Discard)
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
values, history, graph), and to etcd directly (kvdb; fleet: the status
every agent publishes there). Every global flag has an environment variable
used when the flag is not given:

  --host            AGENT_HOST            agent address (default 127.0.0.1)
  --grpc-port       AGENT_GRPC_PORT       gRPC port (default 9111)
  --rest-port       AGENT_REST_PORT       REST port (default 9191)
  --label           MICROSERVICE_LABEL    microservice label (etcd keys under /vnf-agent/<label>/)
  --etcd-endpoints  ETCD_ENDPOINTS        etcd endpoints, comma separated
  --token           NETAGENT_TOKEN        bearer token for changes
  --token-file      NETAGENT_TOKEN_FILE   file holding the token
  --etcd-user       AGENTCTL_ETCD_USER    USER:PASSWORD for etcd (kvdb, fleet); unset, the token
                                          is root's password, as the embedded etcd
                                          of an agent with a token wants
  --tls             AGENTCTL_TLS          use TLS for gRPC and REST
  --tls-ca          AGENTCTL_TLS_CA       CA bundle that signed the agent's certificate
  --tls-cert/-key   AGENTCTL_TLS_CERT/KEY client certificate and key
  --tls-insecure    AGENTCTL_TLS_INSECURE skip verifying the agent's certificate
  --timeout         AGENTCTL_TIMEOUT      limit of each request (default 10s), and
                                          of the connection to etcd (default 3s)
  --grpc-max-msg-size AGENTCTL_GRPC_MAX_MSG_SIZE
                                          largest gRPC message sent or taken
                                          (default 64MiB: a 100k-route document
                                          is 4.3 MB; the agent's own limits are
                                          grpc.max_recv_msg_size and
                                          grpc.max_send_msg_size in its config)
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
			if !talksToAgent(cmd) {
				return nil // help, completion scripts: the global flags do not matter
			}
			return a.resolve(cmd.Root().PersistentFlags())
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.host, "host", "127.0.0.1", "agent host name or address")
	pf.IntVar(&a.grpcPort, "grpc-port", 9111, "agent gRPC port")
	pf.IntVar(&a.restPort, "rest-port", 9191, "agent REST port")
	pf.StringVarP(&a.label, "label", "l", models.DefaultLabel, "microservice label: etcd keys are under /vnf-agent/<label>/")
	a.etcdEndpoints = []string{"127.0.0.1:2379"}
	pf.Var(&listFlag{list: &a.etcdEndpoints}, "etcd-endpoints", "etcd endpoints, comma separated (kvdb, fleet); given twice, the last counts")
	pf.StringVar(&a.token, "token", "", "bearer token sent with changes")
	pf.StringVar(&a.tokenFile, "token-file", "", "file holding the bearer token")
	pf.StringVar(&a.etcdUser, "etcd-user", "", "USER:PASSWORD for etcd (kvdb, fleet; default with a token: root and the token, as an agent's embedded etcd wants)")
	pf.BoolVar(&a.tls, "tls", false, "use TLS for gRPC and REST")
	pf.StringVar(&a.tlsCA, "tls-ca", "", "PEM file of the CA that signed the agent's certificate (implies --tls)")
	pf.StringVar(&a.tlsCert, "tls-cert", "", "PEM client certificate (implies --tls)")
	pf.StringVar(&a.tlsKey, "tls-key", "", "PEM key of the client certificate")
	pf.BoolVar(&a.tlsInsecure, "tls-insecure", false, "do not verify the agent's certificate (implies --tls)")
	pf.DurationVar(&a.timeout, "timeout", 10*time.Second, "limit of each request (and, when given, of the connection to etcd: 3s otherwise)")
	pf.StringVar(&a.grpcMaxMsgSize, "grpc-max-msg-size", msglimit.FormatLimit(msglimit.Default), "largest gRPC message agentctl sends or takes (64MiB, 8MB or bytes)")
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table, yaml or json")
	_ = root.RegisterFlagCompletionFunc("output", fixedCompletion("table", "yaml", "json"))

	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%v (see %s --help)", err, cmd.CommandPath())
	})
	root.AddCommand(a.configCommand(), a.statusCommand(), a.valuesCommand(), a.dumpCommand(),
		a.graphCommand(), a.kvdbCommand(), a.fleetCommand())
	// cobra adds help and completion when it executes; added now, they get
	// examples and the error handling of the others.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Run, c.RunE = nil, helpRun
			c.Example = "  agentctl help\n  agentctl help config plan"
		case "completion":
			completionExamples(c)
		}
	}
	for _, c := range append([]*cobra.Command{root}, root.Commands()...) {
		if c.HasSubCommands() && !c.Runnable() {
			c.Args, c.RunE = cobra.ArbitraryArgs, groupRun
			c.SuggestionsMinimumDistance = 2
		}
	}
	return root
}

// talksToAgent tells whether a command uses the global flags (all but the
// groups, help and the completion scripts).
func talksToAgent(cmd *cobra.Command) bool {
	if cmd.HasSubCommands() || cmd.Name() == "help" {
		return false
	}
	return !cmd.HasParent() || cmd.Parent().Name() != "completion"
}

// helpRun is the help command: the help of a command, and an unknown
// command is an error (cobra's prints the root's usage and exits 0).
func helpRun(c *cobra.Command, args []string) error {
	cmd, rest, err := c.Root().Find(args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return groupRun(cmd, rest)
	}
	cmd.InitDefaultHelpFlag() // listed under Flags, as with --help
	return cmd.Help()
}

// completionExamples gives the completion command and its subcommands
// examples, as every command of agentctl has.
func completionExamples(c *cobra.Command) {
	examples := map[string]string{
		"bash":       "  source <(agentctl completion bash)\n  agentctl completion bash > /etc/bash_completion.d/agentctl",
		"zsh":        "  agentctl completion zsh > \"${fpath[1]}/_agentctl\"",
		"fish":       "  agentctl completion fish > ~/.config/fish/completions/agentctl.fish",
		"powershell": "  agentctl completion powershell | Out-String | Invoke-Expression",
	}
	c.Example = examples["bash"] + "\n" + examples["zsh"] + "\n" + examples["fish"] + "\n" + examples["powershell"]
	for _, sub := range c.Commands() {
		sub.Example = examples[sub.Name()]
	}
}

// groupRun runs a command that only groups others (agentctl, config, kvdb,
// completion): without arguments it prints its help; an argument is an
// unknown command (cobra would print the help and exit 0 for "agentctl
// config udpate").
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q (", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "did you mean " + strings.Join(s, " or ") + "? "
	}
	return errors.New(msg + "see " + cmd.CommandPath() + " --help)")
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
		if err := fl.Value.Set(v); err != nil {
			if _, isList := fl.Value.(*listFlag); isList {
				return fmt.Errorf("%s=%q: %v", f.env, v, err)
			}
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
	a.timeoutGiven = pf.Changed("timeout") || os.Getenv(envOf("timeout")) != ""
	if a.timeout <= 0 {
		return fmt.Errorf("--timeout %v: want a positive duration such as 10s", a.timeout)
	}
	size, err := msglimit.Parse(a.grpcMaxMsgSize)
	if err != nil {
		return fmt.Errorf("--grpc-max-msg-size: %v", err)
	}
	a.grpcMaxMsg = size
	if err := models.ValidLabel(a.label); err != nil {
		return fmt.Errorf("--label: %v", err)
	}
	switch {
	case pf.Changed("label"):
		a.labelFrom = "--label"
	case os.Getenv(envOf("label")) != "":
		a.labelFrom = envOf("label")
	default:
		a.labelFrom = "the default"
	}
	switch {
	case a.token != "" && pf.Changed("token"):
		a.tokenFrom = "--token"
	case a.token != "":
		a.tokenFrom = envOf("token")
	}
	if a.tokenFile != "" {
		data, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return fmt.Errorf("--token-file: %v", err)
		}
		if a.token == "" {
			a.token = strings.TrimSpace(string(data))
			a.tokenFrom = "--token-file " + a.tokenFile
			if !pf.Changed("token-file") {
				a.tokenFrom = envOf("token-file") + "=" + a.tokenFile
			}
		}
	}
	switch {
	case a.etcdUser != "" && pf.Changed("etcd-user"):
		a.etcdUserFrom = "--etcd-user"
	case a.etcdUser != "":
		a.etcdUserFrom = envOf("etcd-user")
	}
	if a.tlsCA != "" || a.tlsCert != "" || a.tlsInsecure {
		a.tls = true
	}
	if (a.tlsCert == "") != (a.tlsKey == "") {
		return errors.New("--tls-cert and --tls-key go together")
	}
	return nil
}

// listFlag is a flag of a comma-separated list that a value given later
// replaces, as with any other flag (pflag's string slice appends the
// second --etcd-endpoints to the first): the flag, else the environment,
// else the default.
type listFlag struct {
	list *[]string
}

func (f *listFlag) Set(v string) error {
	items := splitList(v)
	if len(items) == 0 {
		return errors.New("want at least one item")
	}
	*f.list = items
	return nil
}

func (f *listFlag) String() string {
	if f.list == nil {
		return ""
	}
	return strings.Join(*f.list, ",")
}

func (f *listFlag) Type() string { return "list" }

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

// modelsHelp lists the models in the help of the commands that take one.
func modelsHelp() string {
	return "Models (the original agent's names, as every answer shows them): " + strings.Join(modelNames(), ", ") + `.
Other spellings are accepted where they name one model: its message's name
(vpp.interfaces.interface), vpp.l3.route as linux.l3.route, linux.route as
vpp.route, a module of one model (linux.interfaces); in any case.`
}

// modelArg completes a MODEL argument.
func modelArg(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return modelNames(), cobra.ShellCompDirectiveNoFileComp
}

// findModel returns the model a user means by name: its name or an alias
// that names it alone (models.Registry.Lookup); otherwise the error lists
// the models it may mean.
func findModel(name string) (*models.Model, error) {
	return models.Default.Lookup(name)
}
