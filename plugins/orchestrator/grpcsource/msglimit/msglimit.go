// Package msglimit is about the size limits of the Configurator's gRPC
// messages: a configuration document of 100k routes is a 4.3 MB request,
// and gRPC refuses messages over 4 MiB unless told otherwise. It has the
// default limit of the agent and agentctl (Default), the sizes written in
// a configuration or a flag (Parse, FormatLimit), and errors and log lines
// that say which side refused a message and what to change.
//
// # Which side refused
//
// gRPC refuses a message over a limit with codes.ResourceExhausted and one
// of three messages, X the message's size and L the limit:
//
//	trying to send message larger than max (X vs. L)         the client's send limit
//	grpc: trying to send message larger than max (X vs. L)   the server's send limit
//	grpc: received message larger than max (X vs. L)        a receive limit
//
// The client learns of a receive limit the same way whichever side hit it;
// Explain tells them apart by the size: X is the request's size when the
// server refused the request (an answer of exactly the request's size
// refused by the client would be taken for the server's refusal). On the
// server, ServerLog logs every refusal with the setting to change.
package msglimit

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// Default is the limit of a message each way, for the agent and agentctl:
// a document of 100k routes (4.3 MB) or of 100k interfaces fits, and so
// does the plan of either.
const Default = 64 << 20

// Max is the largest limit gRPC takes.
const Max = math.MaxInt32

// The agent's settings, named in the errors of its limits.
const (
	AgentRecvSetting = "grpc.max_recv_msg_size in the agent's configuration"
	AgentSendSetting = "grpc.max_send_msg_size in the agent's configuration"
)

// units are the suffixes Parse takes (case does not matter).
var units = map[string]int{
	"": 1, "b": 1,
	"k": 1000, "kb": 1000, "m": 1000 * 1000, "mb": 1000 * 1000, "g": 1000 * 1000 * 1000, "gb": 1000 * 1000 * 1000,
	"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30,
}

// Parse reads a size: a number of bytes, or a number with a unit (KB, MB,
// GB: powers of 1000; KiB, MiB, GiB: of 1024), as in 64MiB, 8 MB or
// 1.5MiB. It must be from 1 byte to Max (just under 2 GiB).
func Parse(s string) (int, error) {
	trimmed := strings.TrimSpace(s)
	i := strings.IndexFunc(trimmed, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(trimmed)
	}
	unit, ok := units[strings.ToLower(strings.TrimSpace(trimmed[i:]))]
	n, err := strconv.ParseFloat(trimmed[:i], 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("size %q: want a number of bytes, or one with a unit such as 64MiB or 8MB", s)
	}
	size := n * float64(unit)
	if size < 1 || size > Max {
		return 0, fmt.Errorf("size %q: want from 1 byte to just under 2 GiB", s)
	}
	return int(size), nil
}

// FormatLimit writes a limit the way Parse reads it back: in MiB, KiB or
// bytes, whichever is exact ("64 MiB", "1536 KiB", "1000000 B").
func FormatLimit(n int) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// FormatSize writes the size of a message for a person: "9.1 MB",
// "512.0 kB", "12 B".
func FormatSize(n int) string {
	switch {
	case n >= 1000*1000:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// refusal is a message refused for its size, as gRPC reports it.
type refusal struct {
	send        bool // a sender refused to send it (else a receiver to take it)
	serverSends bool // the server's own send limit (send only)
	size, limit int
}

// parse reads a refusal from gRPC's error.
func parse(err error) (refusal, bool) {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted {
		return refusal{}, false
	}
	var r refusal
	msg := st.Message()
	for _, f := range []struct {
		format      string
		send, serve bool
	}{
		{"grpc: trying to send message larger than max (%d vs. %d)", true, true},
		{"trying to send message larger than max (%d vs. %d)", true, false},
		{"grpc: received message larger than max (%d vs. %d)", false, false},
	} {
		if n, _ := fmt.Sscanf(msg, f.format, &r.size, &r.limit); n == 2 {
			r.send, r.serverSends = f.send, f.serve
			return r, true
		}
	}
	return refusal{}, false
}

// Explain returns the error of a client's call that gRPC refused for a
// message's size as a ResourceExhausted status whose message says which
// side refused what and the setting to change: the agent's (AgentRecvSetting,
// AgentSendSetting) or the client's own (clientSetting, e.g. "--grpc-max-msg-size
// or AGENTCTL_GRPC_MAX_MSG_SIZE"). requestSize is the size of the call's
// request (proto.Size). Any other error is returned as it is.
func Explain(err error, requestSize int, clientSetting string) error {
	r, ok := parse(err)
	if !ok {
		return err
	}
	var msg string
	switch {
	case r.send && r.serverSends:
		msg = fmt.Sprintf("the agent refused to send its %s answer: its limit is %s (%s)", FormatSize(r.size), FormatLimit(r.limit), AgentSendSetting)
	case r.send:
		msg = fmt.Sprintf("agentctl refused to send a %s request: its limit is %s (%s)", FormatSize(r.size), FormatLimit(r.limit), clientSetting)
	case r.size == requestSize:
		msg = fmt.Sprintf("the agent refused a %s request: its limit is %s (%s)", FormatSize(r.size), FormatLimit(r.limit), AgentRecvSetting)
	default:
		msg = fmt.Sprintf("agentctl refused the agent's %s answer: its limit is %s (%s)", FormatSize(r.size), FormatLimit(r.limit), clientSetting)
	}
	return status.Error(codes.ResourceExhausted, msg)
}

// ServerLog returns a stats.Handler (grpc.StatsHandler) that logs, at warn
// level, each message the server refused for its size: the call, the
// size, the limit and the agent's setting.
func ServerLog(log *slog.Logger) stats.Handler { return serverLog{log: log} }

type serverLog struct{ log *slog.Logger }

type methodKey struct{}

func (h serverLog) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, methodKey{}, info.FullMethodName)
}

func (h serverLog) HandleRPC(ctx context.Context, s stats.RPCStats) {
	end, ok := s.(*stats.End)
	if !ok || end.Error == nil {
		return
	}
	r, ok := parse(end.Error)
	if !ok {
		return
	}
	method, _ := ctx.Value(methodKey{}).(string)
	if r.send {
		h.log.Warn(fmt.Sprintf("the agent refused to send a %s answer: its limit is %s (%s)", FormatSize(r.size), FormatLimit(r.limit), AgentSendSetting),
			"call", method)
		return
	}
	h.log.Warn(fmt.Sprintf("the agent refused a %s request: its limit is %s (%s)", FormatSize(r.size), FormatLimit(r.limit), AgentRecvSetting),
		"call", method)
}

func (serverLog) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

func (serverLog) HandleConn(context.Context, stats.ConnStats) {}
