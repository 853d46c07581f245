package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestPrintTxnVerifyFailed: a transaction record whose verification after
// apply found values missing lists them after its operations, with the
// operation and the reason; one without lists nothing more.
func TestPrintTxnVerifyFailed(t *testing.T) {
	record := func(verify string) string {
		var r txnRecord
		doc := `{"seq_num":7,"type":"NB transaction","start":"2026-11-28T10:00:00Z","stop":"2026-11-28T10:00:01Z",
			"executed":[{"operation":"CREATE","key":"iface/a","new_state":"MISSING"}]` + verify + `}`
		if err := json.Unmarshal([]byte(doc), &r); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		a := &app{stdout: &out, output: "table"}
		if err := a.printTxn(r); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	got := record(`,"verify_failed":[{"key":"iface/a","operation":"CREATE","error":"verification after apply: the SB does not hold it"}]`)
	for _, want := range []string{"Verification after apply: 1 value not held by the dataplane as applied", "CREATE", "iface/a", "the SB does not hold it"} {
		if !strings.Contains(got, want) {
			t.Errorf("history of a transaction with a verification failure does not say %q:\n%s", want, got)
		}
	}
	if got := record(""); strings.Contains(got, "Verification") {
		t.Errorf("history of a transaction without verification failures:\n%s", got)
	}
}
