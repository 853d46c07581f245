package models

import (
	"strings"
	"testing"
)

// FuzzKeyOfValue: the key Key gives a valid value parses and is canonical,
// so that CheckKey may accept a key equal to it without parsing it
// (isKeyOf), as parsing it would have accepted it.
func FuzzKeyOfValue(f *testing.F) {
	for _, s := range []struct {
		model uint8
		json  string
	}{
		{0, `{"name":"loop1","type":"SOFTWARE_LOOPBACK","ip_addresses":["10.0.0.1/24"]}`},
		{1, `{"name":"bd1","interfaces":[{"name":"loop1"}]}`},
		{2, `{"vrf_id":1,"dst_network":"10.1.2.3/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop1"}`},
		{2, `{"dstNetwork":"2001:DB8::/32","type":"DROP"}`},
		{2, `{"dst_network":"::ffff:10.0.0.0/104","next_hop_addr":"::ffff:10.0.0.1","outgoing_interface":"a/b"}`},
		{3, `{"interface":"loop1","ip_address":"10.0.0.2","phys_address":"02:00:00:00:00:02"}`},
		{4, `{"name":"veth1","type":"VETH","veth":{"peer_if_name":"veth2"}}`},
		{5, `{"outgoing_interface":"veth1","dst_network":"10.2.0.0/16","gw_addr":"10.2.0.1"}`},
		{6, `{"interface":"veth1","ip_address":"FE80::2","hw_address":"02:00:00:00:00:03"}`},
	} {
		f.Add(s.model, []byte(s.json))
	}
	models := Default.Models()
	f.Fuzz(func(t *testing.T, model uint8, data []byte) {
		m := models[int(model)%len(models)]
		v := m.New()
		if UnmarshalJSON(data, v) != nil || m.Validate(v) != nil {
			return
		}
		key, err := m.Key(v)
		if err != nil {
			return
		}
		if _, err := m.ParseKey(key); err != nil {
			t.Fatalf("%s: the key %q of %v does not parse: %v", m.Name, key, v, err)
		}
		if c := m.canonical(key); c != key {
			t.Fatalf("%s: the key %q of %v is not canonical (%q)", m.Name, key, v, c)
		}
		if !m.isKeyOf(key, v) || m.checkKeyOf(key, v) != nil || m.CheckKey(key, v) != nil {
			t.Fatalf("%s: the key %q of %v is not accepted as its key", m.Name, key, v)
		}
	})
}

// FuzzValidateAppend: Key and CheckKey of a model with validateAppend (one
// parse of a route for its check and its key) say what they say without
// it (validate, then the key built apart): the same key or the same
// error, for the value's own key and for any other key.
func FuzzValidateAppend(f *testing.F) {
	for _, s := range []struct {
		model uint8
		json  string
		key   string
	}{
		{0, `{"vrf_id":1,"dst_network":"10.1.2.3/16","next_hop_addr":"10.0.0.254","outgoing_interface":"loop1"}`, ""},
		{0, `{"dstNetwork":"2001:DB8::/32","type":"DROP"}`, "config/vpp/v2/route/vrf/0/dst/2001:db8::/32/"},
		{0, `{"dst_network":"10.0.0.0/8","next_hop_addr":"2001:db8::1"}`, ""},
		{0, `{"dst_network":"10.0.0.0/33","next_hop_addr":"10.0.0.300","type":7,"via_vrf_id":2}`, ""},
		{0, `{"dst_network":"10.0.0.0/8","next_hop_addr":"10.0.0.1","outgoing_interface":"a b"}`, ""},
		{0, `{"dst_network":"10.0.0.0/8","type":"INTER_VRF","outgoing_interface":"x"}`, ""},
		{0, `{"dst_network":"10.0.0.0/8","next_hop_addr":"10.0.0.1"}`, "config/vpp/v2/route/if/loop1/vrf/0/dst/10.0.0.0/8/gw/10.0.0.1"},
		{1, `{"outgoing_interface":"veth1","dst_network":"10.2.0.0/16","gw_addr":"10.2.0.1"}`, "config/linux/l3/v2/route/10.2.0.0/16/veth1"},
		{1, `{"outgoing_interface":"veth1","dst_network":"::ffff:10.2.0.0/112"}`, ""},
	} {
		f.Add(s.model, []byte(s.json), s.key)
	}
	var withAppend []*Model
	for _, m := range Default.Models() {
		if m.validateAppend != nil {
			withAppend = append(withAppend, m)
		}
	}
	if len(withAppend) == 0 {
		f.Fatal("no model has validateAppend")
	}
	errText := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	f.Fuzz(func(t *testing.T, model uint8, data []byte, otherKey string) {
		m := withAppend[int(model)%len(withAppend)]
		plain := *m
		plain.validateAppend = nil
		v := m.New()
		if UnmarshalJSON(data, v) != nil {
			return
		}
		key, err := m.Key(v)
		wantKey, wantErr := plain.Key(v)
		if key != wantKey || errText(err) != errText(wantErr) {
			t.Fatalf("%s: Key(%v) = %q, %v; without validateAppend %q, %v", m.Name, v, key, err, wantKey, wantErr)
		}
		for _, k := range []string{key, wantKey + "/", otherKey} {
			if got, want := errText(m.CheckKey(k, v)), errText(plain.CheckKey(k, v)); got != want {
				t.Fatalf("%s: CheckKey(%q, %v) = %q; without validateAppend %q", m.Name, k, v, got, want)
			}
		}
	})
}

// The field errors of a value refused by Key or CheckKey stay those of
// that value when the next one is refused (Key builds in pooled scratch
// space).
func TestValidateAppendErrorsKept(t *testing.T) {
	m := VPPRoute
	bad1 := m.New()
	if err := UnmarshalJSON([]byte(`{"dst_network":"10.0.0.0/33","next_hop_addr":"10.0.0.1"}`), bad1); err != nil {
		t.Fatal(err)
	}
	bad2 := m.New()
	if err := UnmarshalJSON([]byte(`{"dst_network":"10.0.0.0/8","next_hop_addr":"nope"}`), bad2); err != nil {
		t.Fatal(err)
	}
	_, err1 := m.Key(bad1)
	err2 := m.CheckKey("config/vpp/v2/route/vrf/0/dst/10.0.0.0/8", bad2)
	_, err3 := m.Key(bad2)
	if err1 == nil || err2 == nil || err3 == nil {
		t.Fatalf("errors %v, %v, %v: want three", err1, err2, err3)
	}
	if s := err1.Error(); !strings.Contains(s, "dst_network") || strings.Contains(s, "next_hop_addr") {
		t.Errorf("Key of the first route: %q, want its dst_network only", s)
	}
	if s := err2.Error(); !strings.Contains(s, "next_hop_addr") || strings.Contains(s, "dst_network") {
		t.Errorf("CheckKey of the second route: %q, want its next_hop_addr only", s)
	}
}
