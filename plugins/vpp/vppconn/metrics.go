package vppconn

import (
	"context"
	"errors"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.fd.io/govpp/api"
)

// Metrics of the VPP connection, registered by the daemon (Register):
//
//	netagent_vpp_connected                      gauge, 1 while connected
//	netagent_vpp_reconnects_total               counter
//	netagent_vpp_api_call_duration_seconds      histogram {message, result}
//
// message is the request's VPP name (create_loopback, ip_route_add_del,
// sw_interface_dump ...), result "ok" or "error". A dump is timed from its
// request to the end of its details.
type metrics struct {
	calls *prometheus.HistogramVec
}

func newMetrics() *metrics {
	return &metrics{calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "netagent", Subsystem: "vpp", Name: "api_call_duration_seconds",
		Help:    "VPP binary API calls by request message and result.",
		Buckets: prometheus.ExponentialBuckets(0.00002, 2, 18),
	}, []string{"message", "result"})}
}

func (mt *metrics) observe(msg string, start time.Time, err error) {
	mt.observeDuration(msg, time.Since(start), err)
}

// observeDuration records a call that took d (a pipelined call: its share
// of the pipeline's time).
func (mt *metrics) observeDuration(msg string, d time.Duration, err error) {
	mt.observeDurations(msg, d, err != nil, 1)
}

// observeDurations records n calls of msg that took d each.
func (mt *metrics) observeDurations(msg string, d time.Duration, failed bool, n int) {
	result := "ok"
	if failed {
		result = "error"
	}
	o := mt.calls.WithLabelValues(msg, result)
	for range n {
		o.Observe(d.Seconds())
	}
}

// Register adds the connection's metrics to reg.
func (m *Manager) Register(reg prometheus.Registerer) error {
	connected := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "netagent", Subsystem: "vpp", Name: "connected",
		Help: "1 while the agent is connected to VPP."}, func() float64 {
		if m.Status().Connected {
			return 1
		}
		return 0
	})
	reconnects := prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "netagent", Subsystem: "vpp", Name: "reconnects_total",
		Help: "Connections to VPP after the first."}, func() float64 { return float64(m.Status().Reconnects) })
	for _, c := range []prometheus.Collector{connected, reconnects, m.metrics.calls} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// instrumented times every request made through it, and reports a call that
// ran out of time as a *CallTimeoutError.
type instrumented struct {
	conn api.Connection
	mt   *metrics
}

func (c instrumented) Invoke(ctx context.Context, req, reply api.Message) error {
	start := time.Now()
	err := callTimeout(ctx, req.GetMessageName(), start, c.conn.Invoke(ctx, req, reply))
	observed := err
	if observed == nil {
		observed = retvalError(reply)
	}
	c.mt.observe(req.GetMessageName(), start, observed)
	return err
}

// retvalError is the VPP error a reply carries in its Retval (the service
// clients turn it into an error after Invoke returns).
func retvalError(reply api.Message) error {
	v := reflect.ValueOf(reply)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	if i := retvalField(v.Type()); i >= 0 {
		if r := v.Field(i).Int(); r != 0 {
			return api.RetvalToVPPApiError(int32(r))
		}
	}
	return nil
}

// retvalFields: by reply struct type, the index of its integer Retval
// field, -1 for none (a lookup by name per reply cost ~100 ns, 1 ms a
// batch of 10,000 routes).
var retvalFields sync.Map

func retvalField(t reflect.Type) int {
	if i, ok := retvalFields.Load(t); ok {
		return i.(int)
	}
	i := -1
	if f, ok := t.FieldByName("Retval"); ok && len(f.Index) == 1 && f.Type.Kind() >= reflect.Int && f.Type.Kind() <= reflect.Int64 {
		i = f.Index[0]
	}
	retvalFields.Store(t, i)
	return i
}

func (c instrumented) NewStream(ctx context.Context, options ...api.StreamOption) (api.Stream, error) {
	s, err := c.conn.NewStream(ctx, options...)
	if err != nil {
		return nil, err
	}
	return &instrumentedStream{Stream: s, ctx: ctx, mt: c.mt}, nil
}

func (c instrumented) WatchEvent(ctx context.Context, event api.Message) (api.Watcher, error) {
	return c.conn.WatchEvent(ctx, event)
}

// instrumentedStream times each request from SendMsg to its reply, or for a
// dump to its end (the control ping reply, an error or Close).
type instrumentedStream struct {
	api.Stream
	ctx   context.Context
	mt    *metrics
	msg   string
	start time.Time
	err   error
}

func (s *instrumentedStream) finish() {
	if s.msg != "" {
		s.mt.observe(s.msg, s.start, s.err)
		s.msg, s.err = "", nil
	}
}

func (s *instrumentedStream) SendMsg(m api.Message) error {
	name := m.GetMessageName()
	if name == "control_ping" {
		return s.Stream.SendMsg(m) // ends a dump: part of the dump's time
	}
	s.finish()
	s.msg, s.start = name, time.Now()
	err := s.Stream.SendMsg(m)
	if err != nil {
		s.err = err
		s.finish()
	}
	return err
}

func (s *instrumentedStream) RecvMsg() (api.Message, error) {
	m, err := s.Stream.RecvMsg()
	if s.msg != "" {
		err = callTimeout(s.ctx, s.msg, s.start, err)
	}
	switch {
	case err != nil && !errors.Is(err, io.EOF):
		s.err = err
		s.finish()
	case err != nil:
		s.finish()
	case m.GetMessageType() == api.ReplyMessage && !strings.HasSuffix(m.GetMessageName(), "_details"):
		// A reply, or the control ping reply ending a dump, ends the call;
		// the details of a dump (reply messages too) do not.
		s.finish()
	}
	return m, err
}

func (s *instrumentedStream) Close() error {
	s.finish()
	return s.Stream.Close()
}
