// Command agentctl is the command line of netagent for operators: it reads
// and changes the agent's configuration over gRPC, shows status, values,
// dumps, transaction history and the dependency graph over REST, edits
// the agent's etcd keys directly (kvdb), and lists the status every agent
// on one etcd publishes there (fleet status).
//
// Exit codes: 0 success, 1 error (one line on stderr, never a stack trace),
// 2 "config plan" found changes (as terraform plan -detailed-exitcode).
//
// Every global flag has an environment fallback, used when the flag is not
// given; see `agentctl --help`.
package main

import (
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
