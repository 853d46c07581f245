package fleet

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	a, b := Key("a"), Key("b")
	writes := []Write{
		{Rev: 2, Key: a, Seq: 1},
		{Rev: 3, Key: b, Seq: 2},
		{Rev: 4, Key: a, Seq: 3},
		{Rev: 5, Key: b, Delete: true},
		{Rev: 6, Key: a, Seq: 4},
	}
	create := func(k string, s uint32) Op { return Op{Kind: "create", Key: k, Seq: s} }
	update := func(k string, s uint32) Op { return Op{Kind: "update", Key: k, Seq: s} }
	del := func(k string, s uint32) Op { return Op{Kind: "delete", Key: k, Seq: s} }
	for _, tc := range []struct {
		name  string
		ops   []Op
		exact bool
		want  string // a part of the first violation; "" for none
	}{
		{"every write once", []Op{create(a, 1), create(b, 2), update(a, 3), del(b, 2), update(a, 4)}, true, ""},
		{"coalesced, not exact", []Op{create(a, 1), create(b, 2), del(b, 2), update(a, 4)}, false, ""},
		{"coalesced, exact", []Op{create(a, 1), create(b, 2), del(b, 2), update(a, 4)}, true, "rev 4: put /" + a + "=3: applied 0 times"},
		{"resync after an outage", []Op{create(a, 4)}, false, ""},
		{"doubled create", []Op{create(a, 1), create(a, 3)}, false, "doubled create"},
		{"missed delete", []Op{create(a, 1), create(b, 2), update(a, 3), update(a, 4)}, true, "rev 5: delete /" + b + ": applied 0 times"},
		{"delete twice", []Op{create(b, 2), del(b, 2), del(b, 2)}, false, "delete of a key the southbound does not have"},
		{"older value again", []Op{create(a, 1), update(a, 4), update(a, 3)}, false, "applies the write of rev 4 after that of rev 6"},
		{"the same write twice", []Op{create(a, 1), del(a, 1), create(a, 1)}, false, "etcd did not delete the key after rev 2"},
		{"a value never written", []Op{create(a, 9)}, false, "no write of that value"},
		{"a key etcd never had", []Op{create(Key("c"), 1)}, false, "etcd never had the key"},
		{"update of a key not there", []Op{update(a, 1)}, false, "update of a key the southbound does not have"},
		{"deleted and back", []Op{create(b, 2), del(b, 2), create(b, 2)}, false, "applies the write of rev 3 after that of rev 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(writes, tc.ops, tc.exact)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("violations %q, want none", got)
			case tc.want != "" && len(got) == 0:
				t.Errorf("no violation, want %q", tc.want)
			case tc.want != "" && !strings.Contains(got[0], tc.want):
				t.Errorf("violations %q, want the first with %q", got, tc.want)
			}
		})
	}
}
