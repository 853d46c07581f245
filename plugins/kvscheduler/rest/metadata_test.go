package rest

import (
	"encoding/json"
	"testing"

	linuxif "github.com/netagent-io/netagent/proto/linux/interfaces"
	linuxns "github.com/netagent-io/netagent/proto/linux/namespace"
)

// TestDumpMetadataNames: metadata in a dump reads as the values do: the
// proto messages in it as protojson with proto names (ip_addresses, not
// the Go oneof wrapper Link), enums by name, the Go fields in snake_case
// (or their json tag; "-" leaves one out), nested structs, lists and maps
// likewise.
func TestDumpMetadataNames(t *testing.T) {
	type ref struct {
		Type      linuxns.NetNamespace_ReferenceType
		Reference string
	}
	type metadata struct {
		Index      int
		HostName   string
		SwIfIndex  uint32
		Namespace  ref
		Type       linuxif.Interface_Type
		Value      *linuxif.Interface
		Missing    *linuxif.Interface
		Tagged     string `json:"tagged_name"`
		Hidden     string `json:"-"`
		Ingress    []string
		ByName     map[string]linuxif.Interface_Type
		unexported int
	}
	md := &metadata{Index: 2, HostName: "eth0", SwIfIndex: 5, Namespace: ref{Type: linuxns.NetNamespace_NSID, Reference: "app"},
		Type: linuxif.Interface_VETH, Tagged: "t", Hidden: "h", Ingress: []string{"a"}, ByName: map[string]linuxif.Interface_Type{"x": linuxif.Interface_LOOPBACK},
		Value: &linuxif.Interface{Name: "v1", Type: linuxif.Interface_VETH, IpAddresses: []string{"10.0.0.1/24"}, PhysAddress: "02:00:00:00:00:01",
			Link: &linuxif.Interface_Veth{Veth: &linuxif.VethLink{PeerIfName: "v2"}}}}
	data, err := json.Marshal(dumpJSON{Key: "k", Metadata: metadataJSON(md)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Metadata map[string]any `json:"metadata"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"index":2,"host_name":"eth0","sw_if_index":5,"namespace":{"type":"NSID","reference":"app"},"type":"VETH",
		"value":{"name":"v1","type":"VETH","ip_addresses":["10.0.0.1/24"],"phys_address":"02:00:00:00:00:01","veth":{"peer_if_name":"v2"}},
		"missing":null,"tagged_name":"t","ingress":["a"],"by_name":{"x":"LOOPBACK"}}`
	var want map[string]any
	if err := json.Unmarshal([]byte(wantJSON), &want); err != nil {
		t.Fatal(err)
	}
	gotJSON, _ := json.Marshal(got.Metadata)
	wantNorm, _ := json.Marshal(want)
	if string(gotJSON) != string(wantNorm) {
		t.Errorf("metadata:\n%s\nwant\n%s", gotJSON, wantNorm)
	}
	if metadataJSON(nil) != nil {
		t.Errorf("no metadata: %v, want none", metadataJSON(nil))
	}
}
