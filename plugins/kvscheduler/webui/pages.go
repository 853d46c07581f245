package webui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netagent-io/netagent/plugins/kvscheduler/api"
)

// --- summary -------------------------------------------------------------------

// maxPendingListed bounds the pending values the summary lists.
const maxPendingListed = 100

type stateCount struct {
	State string
	Count int
}

type groupCount struct {
	Name  string
	Count int
	// States are the non-zero counts by state, in the order of states.
	States []stateCount
}

type pendingValue struct {
	Key     string
	Derived bool
	// Waits are the unmet dependencies as the status gives them.
	Waits []string
}

type summaryData struct {
	Revision  uint64
	Total     int
	ByState   []stateCount
	ByGroup   []groupCount
	Pending   []pendingValue
	PendingN  int
	HasHealth bool
	Health    []Check
	History   api.HistoryInfo
	HistoryAt string
}

func (h *Handler) summary(w http.ResponseWriter, r *http.Request) {
	if _, err := params(r); err != nil {
		h.fail(w, err)
		return
	}
	ix := h.values.get(h.s)
	d := summaryData{Revision: ix.rev, Total: len(ix.entries), History: h.s.GetHistoryInfo()}
	d.HistoryAt = d.History.Starts()
	for _, st := range states {
		d.ByState = append(d.ByState, stateCount{st.String(), len(ix.byState[st])})
	}
	for _, g := range ix.groups {
		gc := groupCount{Name: g, Count: len(ix.byGroup[g])}
		for _, st := range states {
			if n := ix.groupStates[g][st]; n > 0 {
				gc.States = append(gc.States, stateCount{st.String(), n})
			}
		}
		d.ByGroup = append(d.ByGroup, gc)
	}
	pending := ix.byState[api.ValueStatePending]
	d.PendingN = len(pending)
	for _, p := range pending[:min(len(pending), maxPendingListed)] {
		e := &ix.entries[p]
		d.Pending = append(d.Pending, pendingValue{Key: e.key, Derived: e.derived, Waits: e.details})
	}
	if h.opts.Health != nil {
		d.HasHealth, d.Health = true, h.opts.Health()
	}
	h.render(w, http.StatusOK, "summary", layout{Title: "Summary", Nav: "nav-summary", Body: d})
}

// --- values --------------------------------------------------------------------

const (
	defaultPageSize = 100
	maxPageSize     = 1000
)

type valueRow struct {
	Key, State, Descriptor, Origin, LastOp, Error string
	// Details of the status (what a PENDING value waits for).
	Details []string
	Derived bool
}

type valuesData struct {
	States      []string
	Descriptors []string
	// The filter as asked for.
	State, Descriptor, Prefix, Q string
	Size                         int
	Rows                         []valueRow
	Pager                        pager
	Revision                     uint64
}

func (h *Handler) valuesPage(w http.ResponseWriter, r *http.Request) {
	d, err := h.filterValues(r)
	if err != nil {
		h.fail(w, err)
		return
	}
	h.render(w, http.StatusOK, "values", layout{Title: "Values", Nav: "nav-values", Body: d})
}

func (h *Handler) filterValues(r *http.Request) (*valuesData, error) {
	q, err := params(r, "state", "descriptor", "prefix", "q", "page", "size")
	if err != nil {
		return nil, err
	}
	page, err := intParam(q, "page", 1, 0)
	if err != nil {
		return nil, err
	}
	size, err := intParam(q, "size", defaultPageSize, maxPageSize)
	if err != nil {
		return nil, err
	}
	ix := h.values.get(h.s)
	f := filter{anyState: true, group: q.Get("descriptor"), prefix: q.Get("prefix"), contains: q.Get("q")}
	if s := q.Get("state"); s != "" {
		if f.state, err = parseState(s); err != nil {
			return nil, err
		}
		f.anyState = false
	}
	if f.group != "" && !slices.Contains(ix.groups, f.group) {
		return nil, badParam("descriptor", "unknown descriptor %q (known: %s)", f.group, strings.Join(ix.groups, ", "))
	}
	d := &valuesData{States: stateNames(), Descriptors: ix.groups, State: q.Get("state"), Descriptor: f.group,
		Prefix: f.prefix, Q: f.contains, Size: size, Revision: ix.rev}
	if !f.anyState {
		d.State = f.state.String()
	}
	rows, total := ix.query(f, (page-1)*size, size)
	// The links keep the filter as given, without the empty fields.
	link := url.Values{}
	for name, v := range q {
		if v[0] != "" && name != "page" {
			link.Set(name, v[0])
		}
	}
	if d.Pager, err = newPager("/ui/values", link, page, size, total); err != nil {
		return nil, err
	}
	for _, e := range rows {
		d.Rows = append(d.Rows, valueRow{Key: e.key, State: e.state.String(), Descriptor: e.group,
			Origin: originName(e.origin), LastOp: opName(e.lastOp), Error: e.err, Details: e.details, Derived: e.derived})
	}
	return d, nil
}

// --- one value -----------------------------------------------------------------

// maxListed bounds the dependents (and derived values) listed on a value's
// page; the graph shows fewer.
const maxListed = 1000

type link struct {
	Key, State string
	// Label of the dependency; Satisfied whether it is met.
	Label     string
	Satisfied bool
	// Note says more: the prefixes of an AnyOf dependency without a
	// target, the resource of an Exclusive one.
	Note string
}

type eventRow struct {
	Seq                     uint64
	Since, Until            string
	Operation, State, Error string
	Flags                   string
	Value                   string
}

type valueData struct {
	Key        string
	Found      bool
	State      string
	Status     *api.ValueStatus
	Origin     string
	Base       string
	Details    []string
	Value      string
	Deps       []link
	Dependents []link
	MoreDeps   int
	Derived    []*api.ValueStatus
	Graph      *neighbourhood
	Timeline   []eventRow
	Revision   uint64
}

func (h *Handler) valuePage(w http.ResponseWriter, r *http.Request) {
	q, err := params(r, "key")
	if err != nil {
		h.fail(w, err)
		return
	}
	key := q.Get("key")
	if !q.Has("key") || key == "" {
		h.fail(w, badParam("key", "required: the key of a value"))
		return
	}
	d := &valueData{Key: key}
	for _, rev := range h.s.GetKeyTimeline(key) {
		ev := eventRow{Seq: rev.TxnSeq, Since: formatTime(rev.Since), Until: formatTime(rev.Until),
			Operation: opName(rev.Operation), State: rev.State.String(), Error: rev.Error,
			Flags: strings.Join(rev.Flags, " "), Value: valueJSON(rev.Value)}
		d.Timeline = append(d.Timeline, ev)
	}
	d.Revision = h.s.CurrentRevision()
	g := newLocalGraph(h.s)
	n := g.node(key)
	if n == nil {
		msg := fmt.Sprintf("no value with the key %q", key)
		if len(d.Timeline) > 0 {
			msg += " now; its timeline is below"
		}
		h.render(w, http.StatusNotFound, "value", layout{Title: "No such value", Nav: "nav-values", Error: msg, Body: d})
		return
	}
	d.Found, d.State, d.Base = true, n.State.String(), n.Base
	d.Origin = "NB"
	if n.Obtained {
		d.Origin = "SB"
	}
	d.Value = valueJSON(n.Value)
	// The status of the key: the base's status holds those of its derived
	// values.
	bs := h.s.GetValueStatus(key)
	d.Status = bs.GetValue()
	if n.Base != "" {
		for _, st := range bs.GetDerivedValues() {
			if st.GetKey() == key {
				d.Status = st
			}
		}
	} else {
		d.Derived = bs.GetDerivedValues()
	}
	for _, dep := range n.Dependencies {
		targets := dependencyTargets(dep)
		note := ""
		switch {
		case dep.Exclusive != "":
			note = "exclusive use of " + dep.Exclusive
			if len(targets) > 0 {
				note += ", held by"
			}
		case dep.Key == "" && len(targets) == 0 && len(dep.AnyOfPrefixes) > 0:
			note = "any value under " + strings.Join(dep.AnyOfPrefixes, ", ")
		case dep.Key == "" && len(targets) == 0:
			note = "any value its descriptor accepts"
		}
		if len(targets) == 0 {
			d.Deps = append(d.Deps, link{Label: dep.Label, Satisfied: dep.Satisfied, Note: note})
		}
		for _, t := range targets {
			l := link{Key: t, Label: dep.Label, Satisfied: dep.Satisfied, Note: note}
			if tn := g.node(t); tn != nil {
				l.State = tn.State.String()
			}
			d.Deps = append(d.Deps, l)
		}
	}
	dependents := g.dependentKeys(key)
	for _, dn := range g.nodes(dependents[:min(len(dependents), maxListed)]) {
		l := link{Key: dn.Key, State: dn.State.String()}
		for _, dep := range dn.Dependencies {
			if slices.Contains(dependencyTargets(dep), key) {
				l.Label, l.Satisfied = dep.Label, dep.Satisfied
			}
		}
		d.Dependents = append(d.Dependents, l)
	}
	d.MoreDeps = len(dependents) - len(d.Dependents)
	d.Graph = layoutNeighbourhood(g, n)
	h.render(w, http.StatusOK, "value", layout{Title: key, Nav: "nav-values", Body: d})
}

// --- transactions --------------------------------------------------------------

const txnsPageSize = 50

type txnRow struct {
	Seq                      uint64
	Start, Type, Origin      string
	Planned, Executed, Error int
	DryRun, Revert           bool
}

type txnsData struct {
	Rows    []txnRow
	Pager   pager
	History api.HistoryInfo
	Starts  string
}

func (h *Handler) txnsPage(w http.ResponseWriter, r *http.Request) {
	q, err := params(r, "page", "size")
	if err == nil {
		var d *txnsData
		if d, err = h.txns(q); err == nil {
			h.render(w, http.StatusOK, "txns", layout{Title: "Transactions", Nav: "nav-txns", Body: d})
			return
		}
	}
	h.fail(w, err)
}

func txnType(rec *api.RecordedTxn) string {
	t := rec.TxnType.String()
	if rec.ResyncType != api.NotResync {
		t += ", " + rec.ResyncType.String()
	}
	if rec.TxnType == api.RetryFailedOps && rec.RetryAttempt > 0 {
		t += " #" + strconv.Itoa(rec.RetryAttempt)
	}
	return t
}

// opErrors counts the operations that failed and the values verification
// found out of sync.
func opErrors(rec *api.RecordedTxn) int {
	n := len(rec.VerifyFailed)
	for _, op := range rec.Executed {
		if op.NewErr != nil {
			n++
		}
	}
	return n
}

func (h *Handler) txns(q url.Values) (*txnsData, error) {
	page, err := intParam(q, "page", 1, 0)
	if err != nil {
		return nil, err
	}
	size, err := intParam(q, "size", txnsPageSize, maxPageSize)
	if err != nil {
		return nil, err
	}
	recs := h.s.GetTransactionHistory(time.Time{}, time.Time{})
	d := &txnsData{History: h.s.GetHistoryInfo()}
	d.Starts = d.History.Starts()
	link := url.Values{}
	if q.Get("size") != "" {
		link.Set("size", strconv.Itoa(size))
	}
	if d.Pager, err = newPager("/ui/txns", link, page, size, len(recs)); err != nil {
		return nil, err
	}
	// Newest first: position i from the end.
	for i := d.Pager.First; i >= 1 && i <= d.Pager.Last; i++ {
		rec := recs[len(recs)-i]
		d.Rows = append(d.Rows, txnRow{Seq: rec.SeqNum, Start: formatTime(rec.Start), Type: txnType(rec),
			Origin: rec.Description, Planned: len(rec.Planned), Executed: len(rec.Executed), Error: opErrors(rec),
			DryRun: rec.DryRun, Revert: rec.WithRevert})
	}
	return d, nil
}

// maxOpsListed is the number of operations of each table of a
// transaction's page; ?page= shows the next ones.
const maxOpsListed = 500

type opRow struct {
	Key, Operation, Descriptor string
	PrevState, NewState        string
	Error, Flags               string
}

type txnData struct {
	Rec               *api.RecordedTxn
	Type              string
	Duration          string
	Start, Stop       string
	Planned, Executed []opRow
	Pager             pager
	Values            int
	VerifyFailed      []opRow
}

func opRows(ops []*api.RecordedTxnOp, first, last int) []opRow {
	var out []opRow
	for i := first - 1; i >= 0 && i < last && i < len(ops); i++ {
		op := ops[i]
		row := opRow{Key: op.Key, Operation: opName(op.Operation), Descriptor: op.Descriptor,
			PrevState: op.PrevState.String(), NewState: op.NewState.String(), Flags: strings.Join(op.Flags(), " ")}
		if op.NewErr != nil {
			row.Error = op.NewErr.Error()
		}
		out = append(out, row)
	}
	return out
}

func (h *Handler) txnPage(w http.ResponseWriter, r *http.Request) {
	d, err := h.txn1(r)
	var pe *pageError
	switch {
	case err == nil:
		h.render(w, http.StatusOK, "txn", layout{Title: fmt.Sprintf("Transaction #%d", d.Rec.SeqNum), Nav: "nav-txns", Body: d})
	case errors.As(err, &pe) && pe.code == http.StatusNotFound:
		h.render(w, http.StatusNotFound, "error", layout{Title: "No such transaction", Nav: "nav-txns", Error: pe.msg})
	default:
		h.fail(w, err)
	}
}

func (h *Handler) txn1(r *http.Request) (*txnData, error) {
	q, err := params(r, "seq", "page")
	if err != nil {
		return nil, err
	}
	s := q.Get("seq")
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil || seq == 0 {
		if s == "" {
			return nil, badParam("seq", "required: the sequence number of a transaction")
		}
		return nil, badParam("seq", "%q is not a transaction sequence number (1, 2, ...)", s)
	}
	page, err := intParam(q, "page", 1, 0)
	if err != nil {
		return nil, err
	}
	rec := h.s.GetRecordedTransaction(seq)
	if rec == nil {
		return nil, &pageError{http.StatusNotFound, fmt.Sprintf("transaction #%d is not in the history (%s)", seq, h.s.GetHistoryInfo().Starts())}
	}
	d := &txnData{Rec: rec, Type: txnType(rec), Start: formatTime(rec.Start), Stop: formatTime(rec.Stop),
		Duration: rec.Stop.Sub(rec.Start).String(), Values: len(rec.Values)}
	link := url.Values{"seq": {strconv.FormatUint(seq, 10)}}
	if d.Pager, err = newPager("/ui/txn", link, page, maxOpsListed, max(len(rec.Planned), len(rec.Executed))); err != nil {
		return nil, err
	}
	first, last := (page-1)*maxOpsListed+1, page*maxOpsListed
	d.Planned = opRows(rec.Planned, first, last)
	d.Executed = opRows(rec.Executed, first, last)
	for _, f := range rec.VerifyFailed {
		row := opRow{Key: f.Key, Operation: opName(f.Operation)}
		if f.Error != nil {
			row.Error = f.Error.Error()
		}
		d.VerifyFailed = append(d.VerifyFailed, row)
	}
	return d, nil
}
