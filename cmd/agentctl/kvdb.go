package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/netagent-io/netagent/pkg/models"
)

func (a *app) kvdbCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "kvdb",
		Short: "Read and write the agent's keys in etcd directly",
		Long: `Read and write the agent's configuration keys in etcd, under
/vnf-agent/<label>/ (--label, MICROSERVICE_LABEL), at --etcd-endpoints
(ETCD_ENDPOINTS). The agent applies what is written there.

KEY is a model key such as config/vpp/v2/interfaces/loop1, or the full etcd
key /vnf-agent/<label>/config/vpp/v2/interfaces/loop1. "put" checks the value
with the model codec before writing: a value that does not decode, does not
fit its key or fails the model's field checks is refused with the reason, and
nothing is written. The plugins' own checks (an interface type a plugin does
not support) run in the agent: such a value is written and becomes INVALID
there (agentctl values --state INVALID; config plan reports it beforehand).

The embedded etcd of an agent with a token takes no request without
credentials: with a token (--token, --token-file or NETAGENT_TOKEN) kvdb
authenticates as user root with the token as password. Another etcd with
authentication takes --etcd-user USER:PASSWORD (AGENTCTL_ETCD_USER).

An agent labelled otherwise does not read these keys: when the agent at
--host and --rest-port uses the same etcd under another label (its GET
/info/status, asked on the side for at most a second), kvdb warns on stderr
and names the --label to give.

A connection to etcd is given 3 s (--timeout, when given): what is at an
endpoint that is not etcd is said (nothing: connection refused; the
agent's gRPC or REST port; a listener that does not answer gRPC).`,
		Example: `  agentctl kvdb list
  agentctl kvdb list config/linux/
  agentctl kvdb get config/vpp/v2/interfaces/loop1
  agentctl kvdb put config/vpp/v2/interfaces/loop1 '{"name":"loop1","type":"SOFTWARE_LOOPBACK","enabled":true}'
  agentctl kvdb put config/vpp/v2/interfaces/loop1 - < loop1.json
  agentctl kvdb del config/vpp/v2/interfaces/loop1
  agentctl kvdb list --token-file /run/secrets/netagent   # an agent's embedded etcd, with its token`,
	}
	c.AddCommand(a.kvdbList(), a.kvdbGet(), a.kvdbPut(), a.kvdbDel())
	for _, sub := range c.Commands() {
		run := sub.RunE
		sub.RunE = func(cmd *cobra.Command, args []string) error {
			a.agent = a.probeAgent(cmd.Context())
			return a.withLabelCheck(run(cmd, args))
		}
	}
	return c
}

// embeddedEtcdUser is the user of an agent's embedded etcd when the agent
// has a token (etcdsource.RootUser): its password is the token.
const embeddedEtcdUser = "root"

// etcdConfig is the configuration of an etcd client for the endpoints (its
// own logs silenced), with the credentials: --etcd-user USER:PASSWORD, else,
// with a token, the embedded etcd's user and the token.
func (a *app) etcdConfig(dialTimeout time.Duration) (clientv3.Config, error) {
	cc := clientv3.Config{Endpoints: a.etcdEndpoints, DialTimeout: dialTimeout, Logger: zap.NewNop()}
	switch {
	case a.etcdUser != "":
		user, password, ok := strings.Cut(a.etcdUser, ":")
		if !ok || user == "" {
			return cc, fmt.Errorf("%s: want USER:PASSWORD", a.etcdUserFrom)
		}
		cc.Username, cc.Password = user, password
	case a.token != "":
		cc.Username, cc.Password = embeddedEtcdUser, a.token
	}
	return cc, nil
}

// etcd returns an etcd client for the endpoints, connected: op's error
// says what is at the endpoints when it gets no connection within
// etcdConnectBound (nothing, another API of the agent, a listener that
// never answers). With credentials it authenticates at once: a wrong
// password is its error.
func (a *app) etcd(op string) (*clientv3.Client, error) {
	bound := a.etcdConnectBound()
	cc, err := a.etcdConfig(bound)
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(cc)
	if errors.Is(err, rpctypes.ErrAuthFailed) {
		return nil, fmt.Errorf("%s: etcd at %s rejected user %s: %s", op, strings.Join(a.etcdEndpoints, ","), cc.Username, a.etcdPasswordHint())
	}
	if err == nil {
		if err = etcdConnected(c, bound); err != nil {
			_ = c.Close()
		}
	}
	if err != nil {
		return nil, a.etcdUnreachable(op, err)
	}
	return c, nil
}

// etcdPasswordHint says where the rejected etcd password came from.
func (a *app) etcdPasswordHint() string {
	if a.etcdUser != "" {
		return "wrong user or password (" + a.etcdUserFrom + ")"
	}
	return fmt.Sprintf("the password is the token (from %s), and it is not the token of the agent whose embedded etcd this is", a.tokenFrom)
}

// etcdCall returns an etcd client, a context bounded by --timeout and the
// function that releases both.
func (a *app) etcdCall(ctx context.Context, op string) (*clientv3.Client, context.Context, func(), error) {
	cli, err := a.etcd(op)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	return cli, ctx, func() { cancel(); _ = cli.Close() }, nil
}

// etcdError explains a failed etcd request; a timeout says whether the
// client had a connection to etcd (etcd is slow) or none (etcd is not
// there).
func (a *app) etcdError(cli *clientv3.Client, op string, err error) error {
	endpoints := strings.Join(a.etcdEndpoints, ",")
	switch {
	case errors.Is(err, rpctypes.ErrUserEmpty):
		return fmt.Errorf("%s: etcd at %s wants a user and password: the embedded etcd of an agent with a token takes the token (--token, --token-file or NETAGENT_TOKEN); another etcd, --etcd-user USER:PASSWORD", op, endpoints)
	case errors.Is(err, rpctypes.ErrPermissionDenied):
		return fmt.Errorf("%s: etcd at %s: user %s may not do this (permission denied)", op, endpoints, cli.Username)
	}
	if status.Code(err) == codes.Unimplemented {
		// A gRPC server answers, not etcd: the agent's gRPC port?
		return a.etcdUnreachable(op, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		if cli.ActiveConnection().GetState() == connectivity.Ready {
			return fmt.Errorf("%s: etcd at %s did not answer within %v (raise --timeout)", op, endpoints, a.timeout)
		}
		return fmt.Errorf("%s: no connection to etcd at %s within %v (is it running? --etcd-endpoints or ETCD_ENDPOINTS)", op, endpoints, a.timeout)
	}
	return fmt.Errorf("%s: etcd: %v", op, err)
}

// etcdKey turns a KEY argument into the model key and the etcd key.
func (a *app) etcdKey(arg string) (modelKey, etcdKey string, err error) {
	if strings.HasPrefix(arg, models.EtcdPrefix) {
		label, mk, err := models.ParseEtcdKey(arg)
		if err != nil {
			return "", "", err
		}
		if label != a.label {
			return "", "", fmt.Errorf("key %q is of label %q, not %q (--label, MICROSERVICE_LABEL)", arg, label, a.label)
		}
		return mk, arg, nil
	}
	if strings.HasPrefix(arg, "/") {
		return "", "", fmt.Errorf("key %q: want a model key (config/...) or a key under %s", arg, models.EtcdKeyPrefix(a.label))
	}
	return arg, models.EtcdKey(a.label, arg), nil
}

// keyCompletion completes a KEY argument from the keys in etcd (within one
// second; nothing when etcd does not answer) and the models' key prefixes.
func (a *app) keyCompletion(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if err := a.resolve(cmd.Root().PersistentFlags()); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveError
	}
	var out []string
	for _, m := range models.Default.Models() {
		if strings.HasPrefix(m.KeyPrefix, toComplete) {
			out = append(out, m.KeyPrefix)
		}
	}
	cli, err := a.etcd("completion")
	if err != nil {
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), time.Second)
	defer cancel()
	base := models.EtcdKeyPrefix(a.label)
	resp, err := cli.Get(ctx, base+toComplete, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1000))
	if err == nil {
		for _, kv := range resp.Kvs {
			out = append(out, strings.TrimPrefix(string(kv.Key), base))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

type kvJSON struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

// valueJSON is an etcd value for JSON output: as is when it is JSON, else
// as a JSON string.
func valueJSON(v []byte) json.RawMessage {
	if json.Valid(v) {
		return v
	}
	s, _ := json.Marshal(string(v))
	return s
}

func (a *app) kvdbList() *cobra.Command {
	var keysOnly bool
	c := &cobra.Command{
		Use:   "list [PREFIX]",
		Short: "List the keys (and values) under /vnf-agent/<label>/[PREFIX]",
		Example: `  agentctl kvdb list
  agentctl kvdb list config/vpp/ --keys-only
  agentctl kvdb list -o json`,
		Args:              argsNamed("[PREFIX]"),
		ValidArgsFunction: a.keyCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			prefix := models.EtcdKeyPrefix(a.label)
			if len(args) == 1 {
				_, ek, err := a.etcdKey(args[0])
				if err != nil {
					return err
				}
				prefix = ek
			}
			cli, ctx, done, err := a.etcdCall(cmd.Context(), "kvdb list")
			if err != nil {
				return err
			}
			defer done()
			opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)}
			if keysOnly {
				opts = append(opts, clientv3.WithKeysOnly())
			}
			resp, err := cli.Get(ctx, prefix, opts...)
			if err != nil {
				return a.etcdError(cli, "kvdb list", err)
			}
			base := models.EtcdKeyPrefix(a.label)
			if a.output != "table" {
				if keysOnly {
					keys := []string{}
					for _, kv := range resp.Kvs {
						keys = append(keys, strings.TrimPrefix(string(kv.Key), base))
					}
					return a.printData(keys)
				}
				out := []kvJSON{}
				for _, kv := range resp.Kvs {
					out = append(out, kvJSON{Key: strings.TrimPrefix(string(kv.Key), base), Value: valueJSON(kv.Value)})
				}
				return a.printData(out)
			}
			if len(resp.Kvs) == 0 {
				fmt.Fprintf(a.stdout, "No keys under %s.\n", prefix)
				return nil
			}
			if keysOnly {
				for _, kv := range resp.Kvs {
					fmt.Fprintln(a.stdout, strings.TrimPrefix(string(kv.Key), base))
				}
				return nil
			}
			t := newTable(a.stdout, "KEY", "VALUE")
			for _, kv := range resp.Kvs {
				t.row(strings.TrimPrefix(string(kv.Key), base), string(kv.Value))
			}
			return t.flush()
		},
	}
	c.Flags().BoolVar(&keysOnly, "keys-only", false, "list the keys only")
	return c
}

func (a *app) kvdbGet() *cobra.Command {
	return &cobra.Command{
		Use:   "get KEY",
		Short: "Print the value of a key",
		Example: `  agentctl kvdb get config/vpp/v2/interfaces/loop1
  agentctl kvdb get config/vpp/v2/interfaces/loop1 -o yaml`,
		Args:              argsNamed("KEY"),
		ValidArgsFunction: a.keyCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, ek, err := a.etcdKey(args[0])
			if err != nil {
				return err
			}
			cli, ctx, done, err := a.etcdCall(cmd.Context(), "kvdb get")
			if err != nil {
				return err
			}
			defer done()
			resp, err := cli.Get(ctx, ek)
			if err != nil {
				return a.etcdError(cli, "kvdb get", err)
			}
			if len(resp.Kvs) == 0 {
				return fmt.Errorf("key %s: not in etcd", ek)
			}
			v := resp.Kvs[0].Value
			if !json.Valid(v) {
				// Shown as it is, with a warning: the agent cannot use it.
				fmt.Fprintf(a.stderr, "warning: the value of %s is not JSON\n", ek)
				_, err = fmt.Fprintf(a.stdout, "%s\n", v)
				return err
			}
			return a.printData(json.RawMessage(v))
		},
	}
}

func (a *app) kvdbPut() *cobra.Command {
	return &cobra.Command{
		Use:   "put KEY [VALUE | -]",
		Short: "Write the value of a key, checked by the model codec first",
		Long: `Write the value of a key. VALUE is JSON (or YAML) with the model's field
names; "-" or no VALUE reads it from standard input. The value is checked
before it is written: it must decode as the key's model, pass the model's
field checks (IP and MAC addresses, names, required fields) and be the value
of that key (its name and key fields match). A value that fails is refused
with the reason and nothing is written. The value is stored as canonical
JSON. The plugins' own checks run in the agent only: a value they refuse is
written and shows INVALID in "agentctl values".`,
		Example: `  agentctl kvdb put config/vpp/v2/interfaces/loop1 '{"name":"loop1","type":"SOFTWARE_LOOPBACK"}'
  agentctl kvdb put config/linux/interfaces/v2/interface/veth1 - < veth1.yaml`,
		Args:              argsNamed("KEY", "[VALUE]"),
		ValidArgsFunction: a.keyCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			mk, ek, err := a.etcdKey(args[0])
			if err != nil {
				return err
			}
			var data []byte
			if len(args) == 1 || args[1] == "-" {
				if data, err = io.ReadAll(a.stdin); err != nil {
					return fmt.Errorf("reading the value: %v", err)
				}
			} else {
				data = []byte(args[1])
			}
			trimmed := strings.TrimSpace(string(data))
			if trimmed == "" {
				return fmt.Errorf("refused: key %q: empty value", mk)
			}
			if strings.HasPrefix(trimmed, "{") && !json.Valid(data) {
				// Meant as JSON: its error says more than YAML's would.
				var v any
				return fmt.Errorf("refused: key %q: the value is not valid JSON: %v", mk, json.Unmarshal(data, &v))
			}
			// JSON is decoded as given, so that a decoder's position is in
			// the text the user wrote; YAML is converted first.
			js := data
			if !json.Valid(data) {
				if js, err = models.YAMLToJSON(data); err != nil {
					return fmt.Errorf("refused: key %q: the value is neither JSON nor YAML: %v", mk, err)
				}
			}
			_, v, err := models.Default.DecodeValue(mk, js)
			if err != nil {
				return fmt.Errorf("refused: %v", err)
			}
			canonical, err := models.MarshalJSON(v)
			if err != nil {
				return fmt.Errorf("refused: key %q: %v", mk, err)
			}
			cli, ctx, done, err := a.etcdCall(cmd.Context(), "kvdb put")
			if err != nil {
				return err
			}
			defer done()
			resp, err := cli.Put(ctx, ek, string(canonical))
			if err != nil {
				return a.etcdError(cli, "kvdb put", err)
			}
			if a.output != "table" {
				return a.printData(map[string]any{"key": mk, "value": json.RawMessage(canonical), "revision": resp.Header.GetRevision()})
			}
			fmt.Fprintf(a.stdout, "put %s (etcd revision %d)\n", ek, resp.Header.GetRevision())
			return nil
		},
	}
}

func (a *app) kvdbDel() *cobra.Command {
	var prefix bool
	c := &cobra.Command{
		Use:   "del KEY",
		Short: "Delete a key (or, with --prefix, every key under it)",
		Example: `  agentctl kvdb del config/vpp/v2/interfaces/loop1
  agentctl kvdb del config/vpp/v2/route/ --prefix`,
		Args:              argsNamed("KEY"),
		ValidArgsFunction: a.keyCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, ek, err := a.etcdKey(args[0])
			if err != nil {
				return err
			}
			cli, ctx, done, err := a.etcdCall(cmd.Context(), "kvdb del")
			if err != nil {
				return err
			}
			defer done()
			var opts []clientv3.OpOption
			if prefix {
				opts = append(opts, clientv3.WithPrefix())
			}
			resp, err := cli.Delete(ctx, ek, opts...)
			if err != nil {
				return a.etcdError(cli, "kvdb del", err)
			}
			if resp.Deleted == 0 && !prefix {
				return fmt.Errorf("key %s: not in etcd", ek)
			}
			if a.output != "table" {
				return a.printData(map[string]any{"deleted": resp.Deleted, "revision": resp.Header.GetRevision()})
			}
			fmt.Fprintf(a.stdout, "deleted %s (etcd revision %d)\n", count(int(resp.Deleted), "key", "keys"), resp.Header.GetRevision())
			return nil
		},
	}
	c.Flags().BoolVar(&prefix, "prefix", false, "delete every key under KEY")
	return c
}
