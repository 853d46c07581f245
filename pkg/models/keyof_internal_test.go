package models

import "testing"

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
