package txnlog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// Options control the rendering.
type Options struct {
	// MaxItems is how many input values and operations each section lists
	// before summarising the rest ("... and 99,800 more: CREATE 99,000,
	// DELETE 800"); 0 means DefaultMaxItems; negative: list all.
	MaxItems int
}

// DefaultMaxItems is the number of items a section lists when
// Options.MaxItems is 0.
const DefaultMaxItems = 20

// width is the width of the header box and of the footer line, in columns.
const width = 100

// Indentation of the sections, their items and the items' fields.
const (
	sectionIndent = "  "
	itemIndent    = "      "
	fieldIndent   = "          "
)

func (o Options) limit() int {
	switch {
	case o.MaxItems == 0:
		return DefaultMaxItems
	case o.MaxItems < 0:
		return -1
	default:
		return o.MaxItems
	}
}

// shown returns how many of n items are listed.
func (o Options) shown(n int) int {
	if l := o.limit(); l >= 0 && l < n {
		return l
	}
	return n
}

// WritePlan writes the header and what is known before execution: the
// transaction arguments (seq-num, type, resync type if any, description,
// revert/dry-run flags, input values with origin) and the planned operations.
// It is meant to be printed before execution so that a crash leaves a trace.
// The text is written with a single Write call. A nil rec is rendered as an
// empty record.
func WritePlan(w io.Writer, rec *api.RecordedTxn, o Options) error {
	var b bytes.Buffer
	writePlan(&b, orEmpty(rec), o)
	_, err := w.Write(b.Bytes())
	return err
}

// WriteResult writes the executed operations with start/stop times and
// duration, the errors, and the footer line with the duration. The text is
// written with a single Write call. A nil rec is rendered as an empty record.
func WriteResult(w io.Writer, rec *api.RecordedTxn, o Options) error {
	var b bytes.Buffer
	writeResult(&b, orEmpty(rec), o)
	_, err := w.Write(b.Bytes())
	return err
}

// Format returns WritePlan followed by WriteResult (for REST format=text and
// agentctl).
func Format(rec *api.RecordedTxn, o Options) string {
	rec = orEmpty(rec)
	var b bytes.Buffer
	writePlan(&b, rec, o)
	writeResult(&b, rec, o)
	return b.String()
}

func orEmpty(rec *api.RecordedTxn) *api.RecordedTxn {
	if rec == nil {
		return &api.RecordedTxn{}
	}
	return rec
}

// --- plan --------------------------------------------------------------------

func writePlan(b *bytes.Buffer, rec *api.RecordedTxn, o Options) {
	// Header box.
	left := "Transaction #" + strconv.FormatUint(rec.SeqNum, 10)
	right := rec.TxnType.String()
	if rec.ResyncType != api.NotResync {
		right += ", " + rec.ResyncType.String()
	}
	if rec.DryRun {
		right += ", dry run"
	}
	border := "+" + strings.Repeat("-", width-2) + "+\n"
	b.WriteString(border)
	pad := width - 4 - utf8.RuneCountInString(left) - utf8.RuneCountInString(right)
	if pad < 1 {
		pad = 1
	}
	b.WriteString("| " + left + strings.Repeat(" ", pad) + right + " |\n")
	b.WriteString(border)

	// Arguments.
	b.WriteString(sectionIndent + "* transaction arguments:\n")
	field(b, itemIndent, "seq-num", strconv.FormatUint(rec.SeqNum, 10))
	field(b, itemIndent, "type", rec.TxnType.String())
	if rec.ResyncType != api.NotResync {
		field(b, itemIndent, "resync", rec.ResyncType.String())
	}
	if rec.RetryAttempt > 0 {
		field(b, itemIndent, "retry-attempt", strconv.Itoa(rec.RetryAttempt))
	}
	if rec.Description != "" {
		field(b, itemIndent, "description", rec.Description)
	}
	if rec.WithRevert {
		field(b, itemIndent, "revert-on-failure", "true")
	}
	if rec.DryRun {
		field(b, itemIndent, "dry-run", "true")
	}
	writeValues(b, rec.Values, o)

	// Plan.
	b.WriteString(sectionIndent + "* planned operations:\n")
	writeOps(b, rec.Planned, 1, o)
}

func writeValues(b *bytes.Buffer, values []api.RecordedKVPair, o Options) {
	if len(values) == 0 {
		field(b, itemIndent, "values", "none")
		return
	}
	// One origin for all (the usual case) goes on the heading.
	sameOrigin := true
	for _, kv := range values[1:] {
		if kv.Origin != values[0].Origin {
			sameOrigin = false
			break
		}
	}
	if sameOrigin {
		b.WriteString(itemIndent + "- values (" + values[0].Origin.String() + "):\n")
	} else {
		b.WriteString(itemIndent + "- values:\n")
	}
	n := o.shown(len(values))
	for _, kv := range values[:n] {
		field(b, fieldIndent, "key", keyText(kv.Key))
		v := "(delete)"
		if !isNil(kv.Value) {
			v = renderValue(kv.Value)
		}
		more(b, fieldIndent, "value", v)
		if !sameOrigin {
			more(b, fieldIndent, "origin", kv.Origin.String())
		}
	}
	if rest := values[n:]; len(rest) > 0 {
		var set, del int
		for _, kv := range rest {
			if isNil(kv.Value) {
				del++
			} else {
				set++
			}
		}
		var parts []string
		if set > 0 {
			parts = append(parts, "set "+thousands(set))
		}
		if del > 0 {
			parts = append(parts, "delete "+thousands(del))
		}
		b.WriteString(fieldIndent + "... and " + thousands(len(rest)) + " more: " + strings.Join(parts, ", ") + "\n")
	}
}

// --- result ------------------------------------------------------------------

func writeResult(b *bytes.Buffer, rec *api.RecordedTxn, o Options) {
	dur := "?"
	stop := "(unfinished)"
	if !rec.Stop.IsZero() {
		stop = timestamp(rec.Stop)
		dur = duration(rec.Stop.Sub(rec.Start))
	}

	// The operations whose errors are reported: the executed ones, or the
	// plan's foreseen failures when nothing was executed.
	errOps := rec.Executed
	if rec.DryRun {
		b.WriteString(sectionIndent + "* executed operations: none (dry run)\n")
		errOps = rec.Planned
	} else {
		b.WriteString(sectionIndent + "* executed operations (" + timestamp(rec.Start) + " - " + stop + ", duration = " + dur + "):\n")
		exe, planned := rec.Executed, rec.Planned
		if shared := len(exe) > 0 && len(planned) > 0 && &exe[0] == &planned[0]; shared {
			// Executed is (an extension of) the plan: do not repeat it.
			switch {
			case len(exe) == len(planned):
				b.WriteString(itemIndent + "executed as planned (" + count(len(exe), "operation") + ")\n")
			case len(exe) > len(planned):
				b.WriteString(itemIndent + "executed as planned (" + count(len(planned), "operation") + "), then:\n")
				writeOps(b, exe[len(planned):], len(planned)+1, o)
			default:
				b.WriteString(itemIndent + "executed the first " + count(len(exe), "planned operation") + "\n")
			}
		} else {
			writeOps(b, exe, 1, o)
		}
	}

	// Errors.
	var failed []*api.RecordedTxnOp
	for _, op := range errOps {
		if op != nil && op.NewErr != nil {
			failed = append(failed, op)
		}
	}
	if len(failed) > 0 {
		b.WriteString(sectionIndent + "* errors:\n")
		n := o.shown(len(failed))
		for _, op := range failed[:n] {
			line := op.Operation.String() + " " + keyText(op.Key) + ": " + errorText(op.NewErr)
			b.WriteString(itemIndent + "- " + oneLine(line, itemIndent+"    ") + "\n")
		}
		if rest := len(failed) - n; rest > 0 {
			b.WriteString(itemIndent + "... and " + thousands(rest) + " more\n")
		}
	}

	// Footer.
	foot := "+--- #" + strconv.FormatUint(rec.SeqNum, 10)
	if rec.DryRun {
		foot += " (dry run)"
	}
	foot += " took " + dur
	if len(failed) > 0 {
		foot += ", " + count(len(failed), "error")
	}
	foot += " "
	if fill := width - 1 - utf8.RuneCountInString(foot); fill > 0 {
		foot += strings.Repeat("-", fill)
	}
	b.WriteString(foot + "+\n")
}

// --- operations --------------------------------------------------------------

// writeOps lists ops numbered from first, then summarises those beyond the
// limit by operation.
func writeOps(b *bytes.Buffer, ops []*api.RecordedTxnOp, first int, o Options) {
	if len(ops) == 0 {
		b.WriteString(itemIndent + "(no operations)\n")
		return
	}
	n := o.shown(len(ops))
	for i, op := range ops[:n] {
		writeOp(b, first+i, op)
	}
	rest := ops[n:]
	if len(rest) == 0 {
		return
	}
	byOp := map[api.TxnOperation]int{}
	missing := 0
	for _, op := range rest {
		if op == nil {
			missing++
			continue
		}
		byOp[op.Operation]++
	}
	var parts []string
	for _, kind := range []api.TxnOperation{api.OpCreate, api.OpUpdate, api.OpDelete, api.OpValidate, api.OpUndefined} {
		if c := byOp[kind]; c > 0 {
			parts = append(parts, kind.String()+" "+thousands(c))
			delete(byOp, kind)
		}
	}
	// Operations unknown to this package, by number for a stable order.
	for _, kind := range slices.Sorted(maps.Keys(byOp)) {
		parts = append(parts, kind.String()+" "+thousands(byOp[kind]))
	}
	if missing > 0 {
		parts = append(parts, "missing "+thousands(missing))
	}
	b.WriteString(itemIndent + "... and " + thousands(len(rest)) + " more: " + strings.Join(parts, ", ") + "\n")
}

func writeOp(b *bytes.Buffer, num int, op *api.RecordedTxnOp) {
	head := itemIndent + strconv.Itoa(num) + ". "
	if op == nil {
		b.WriteString(head + "(missing operation)\n")
		return
	}
	head += op.Operation.String()
	if flags := op.Flags(); len(flags) > 0 {
		head += " [" + strings.Join(flags, " ") + "]"
	}
	b.WriteString(head + ":\n")
	field(b, fieldIndent, "key", keyText(op.Key))

	prev, next := op.PrevValue, op.NewValue
	if isNil(prev) {
		prev = nil
	}
	if isNil(next) {
		next = nil
	}
	switch {
	case op.Operation == api.OpCreate && next != nil:
		field(b, fieldIndent, "value", renderValue(next))
	case op.Operation == api.OpDelete && prev != nil:
		field(b, fieldIndent, "value", renderValue(prev))
	case prev != nil && next != nil && equal(prev, next):
		field(b, fieldIndent, "value", renderValue(next))
	case op.Operation != api.OpUpdate && (prev == nil) != (next == nil):
		// A single value (e.g. VALIDATE): no before/after to tell apart.
		field(b, fieldIndent, "value", renderValue(cmp.Or(next, prev)))
	default:
		if prev != nil {
			field(b, fieldIndent, "prev-value", renderValue(prev))
		}
		if next != nil {
			field(b, fieldIndent, "new-value", renderValue(next))
		}
	}
	if interestingStates(op) {
		field(b, fieldIndent, "state", op.PrevState.String()+" -> "+op.NewState.String())
	}
	if op.PrevErr != nil {
		field(b, fieldIndent, "prev-error", errorText(op.PrevErr))
	}
	if op.NewErr != nil {
		field(b, fieldIndent, "error", errorText(op.NewErr))
	}
}

// interestingStates tells whether the state change of op is worth a line:
// any change except the routine ones of a create (from nothing to configured
// or obtained) and of a delete (from there back to nothing).
func interestingStates(op *api.RecordedTxnOp) bool {
	if op.PrevState == op.NewState {
		return false
	}
	none := func(s api.ValueState) bool {
		return s == api.ValueStateNonexistent || s == api.ValueStateRemoved
	}
	present := func(s api.ValueState) bool {
		return s == api.ValueStateConfigured || s == api.ValueStateObtained || s == api.ValueStateDiscovered
	}
	switch op.Operation {
	case api.OpCreate:
		return !(none(op.PrevState) && present(op.NewState))
	case api.OpDelete:
		return !(present(op.PrevState) && none(op.NewState))
	}
	return true
}

// --- text helpers ------------------------------------------------------------

// field writes "<indent>- name: text".
func field(b *bytes.Buffer, indent, name, text string) {
	b.WriteString(indent + "- " + name + ": " + oneLine(text, indent+"    ") + "\n")
}

// keyText returns the key, or "" (quoted) for an empty one.
func keyText(key string) string {
	if key == "" {
		return `""`
	}
	return key
}

// more writes "<indent>  name: text", a further field of the entry written by
// field with the same indent.
func more(b *bytes.Buffer, indent, name, text string) {
	b.WriteString(indent + "  " + name + ": " + oneLine(text, indent+"    ") + "\n")
}

// oneLine indents the continuation lines of a multi-line text with indent so
// that they stay inside the entry they belong to.
func oneLine(s, indent string) string {
	s = strings.TrimRight(s, "\n")
	if !strings.Contains(s, "\n") {
		return s
	}
	return strings.ReplaceAll(s, "\n", "\n"+indent)
}

// isNil tells whether v is nil or a typed nil message.
func isNil(v proto.Message) (isNil bool) {
	if v == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			isNil = true
		}
	}()
	return !v.ProtoReflect().IsValid()
}

// equal is proto.Equal that survives broken messages.
func equal(a, b proto.Message) (eq bool) {
	defer func() {
		if recover() != nil {
			eq = false
		}
	}()
	return proto.Equal(a, b)
}

var jsonOpts = protojson.MarshalOptions{UseProtoNames: true}

// renderValue renders a value as compact protojson (proto field names, on one
// line without spaces, defaults omitted), falling back to a description of
// the message when it cannot be marshalled.
func renderValue(v proto.Message) (out string) {
	name := "?"
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("<%s: %v>", name, p)
		}
	}()
	name = string(v.ProtoReflect().Descriptor().FullName())
	raw, err := jsonOpts.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%s: %v>", name, err)
	}
	// protojson varies its spacing on purpose; compact it to be stable.
	var c bytes.Buffer
	if err := json.Compact(&c, raw); err != nil {
		return fmt.Sprintf("<%s: %v>", name, err)
	}
	return c.String()
}

// errorText returns err.Error(), surviving a typed nil error whose method
// panics.
func errorText(err error) (out string) {
	defer func() {
		if p := recover(); p != nil {
			out = fmt.Sprintf("<%T: %v>", err, p)
		}
	}()
	return err.Error()
}

// timestamp formats t as RFC 3339 with nanoseconds, in UTC.
func timestamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// duration rounds d to microseconds.
func duration(d time.Duration) string {
	return d.Round(time.Microsecond).String()
}

// count returns "1 thing" or "1,234 things".
func count(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return thousands(n) + " " + thing + "s"
}

// thousands formats n with comma thousands separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
