// Package models is the configuration vocabulary of netagent: the models
// (kinds of items) with their keys, the codec of their values, and the
// configuration document that groups them.
//
// # Keys
//
// Every item has a model key, built from its value:
//
//	config/vpp/v2/interfaces/<name>
//	config/vpp/l2/v2/bridge-domain/<name>
//	config/vpp/v2/route/[if/<outgoing_interface>/]vrf/<vrf_id>/dst/<ip>/<prefix-len>[/gw/<next_hop_addr>]
//	config/vpp/v2/arp/<interface>/<ip_address>
//	config/vpp/acls/v2/acl/<name>
//	config/vpp/nat/v2/nat44-global                  (one value: Model.Singleton)
//	config/vpp/nat/v2/nat44-interface/<name>
//	config/vpp/nat/v2/nat44-pool/{<name>|vrf/<vrf_id>/address/<first_ip>[-<last_ip>]}
//	config/vpp/nat/v2/dnat44/<label>
//	config/linux/interfaces/v2/interface/<name>
//	config/linux/l3/v2/route/<dst ip>/<prefix-len>/<outgoing_interface>
//	config/linux/l3/v2/arp/<interface>/<ip_address>
//
// In etcd the key is prefixed with /vnf-agent/<microservice label>/
// (EtcdKey, ParseEtcdKey); the label defaults to "vpp1". These are the keys
// and JSON values of the original agent (Ligato vpp-agent v3), so that its
// etcd data can be used as it is.
//
// The route's "if/<outgoing_interface>/" is there only when the route has an
// outgoing interface, "/gw/<next_hop_addr>" only when it has a next hop. The
// original agent writes the key of a route without a next hop with a
// trailing "/" (".../dst/10.0.0.0/8/"); ParseKey and CheckKey accept that
// spelling, CanonicalKey drops the "/", and Key never writes it.
//
// A key holds each item once: addresses are in canonical form ("2001:db8::1",
// not "2001:DB8:0::1"), a destination is its network address ("10.1.0.0/16"
// for a value "10.1.2.3/16"), numbers are decimal without leading zeros.
// ParseKey rejects other spellings (but for the route's trailing "/", below)
// and CheckKey says which key the value belongs under.
//
// # Keys written for the original agent
//
// The original agent kept a value under whatever key it was written and
// configured what the value says. Registry.DecodeVariant (which the etcd
// source uses; DecodeValue stays strict) accepts those of its keys that
// name one item only, and gives the value's own key (Model.ResolveKey):
//
//   - unambiguous, accepted: a VPP route key without
//     "if/<outgoing_interface>/" (the original's older template) for a
//     route that has an outgoing interface, every other part equal
//     (".../route/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1" for a route via eth0
//     is the value of ".../route/if/eth0/vrf/0/dst/10.1.0.0/16/gw/10.0.0.1");
//   - ambiguous, refused: a name in the key that differs from the value's
//     (interface, bridge domain, Linux interface): the original kept the
//     value under the key and configured it by the value's name, so either
//     may be meant; the error names both;
//   - invalid, refused: a value without a name, whatever its key names (the
//     original refused it too);
//   - refused: any other part that differs or that the key has and the
//     value lacks; the error names the key the value belongs under.
//
// # Names
//
// A name (of an interface, a bridge domain, a reference to one) is 1 to 255
// bytes of UTF-8 without spaces or control characters. It may contain "/"
// between non-empty segments other than "." and "..": DPDK interfaces are
// called GigabitEthernet0/8/0. Key parsing takes the fixed parts (addresses,
// keywords) from the end of a key, so such names are never ambiguous. VPP
// interface, bridge domain and ACL names are at most 63 bytes (they are the
// VPP tag), and a name that is also a Linux interface name in the kernel
// (host_if_name, or the name when that is empty) is at most 15 bytes without
// "/" or ":". The logical name of a Linux interface (its key, and a veth's
// peer_if_name) has no "/" at all: the agent marks the links it creates
// with the alias "netagent/<label>/<name>" and claims only links whose
// alias has exactly that form.
//
// # Values
//
// Values are protobuf messages (proto/): JSON as protojson with the proto
// field names, enums by name, default values left out (MarshalJSON, stable
// byte for byte); reading accepts snake_case and lowerCamelCase field names
// and rejects unknown fields and enum names (UnmarshalJSON). YAML documents
// use the same field names.
//
// Registry.DecodeValue is the one entry for a value read from etcd or
// received from a client: it finds the model of the key, decodes the JSON,
// validates the fields (Model.Validate: names, addresses, ranges, the static
// rules of the model) and checks that the key is the value's own. Its errors
// name the key and the problem: a *KeyError for the key, a *DecodeError for
// the JSON, a *ValidationError listing every invalid field.
//
// # Configuration documents
//
// A configuration document (proto/config: Config) lists items by model, as
// the original agent's vpp_config and linux_config did:
//
//	vpp_config:
//	  interfaces:
//	    - name: loop1
//	      type: SOFTWARE_LOOPBACK
//	      enabled: true
//	      ip_addresses: [10.0.0.1/24]
//	  bridge_domains: [...]
//	  routes: [...]
//	  arps: [...]
//	  acls: [...]
//	linux_config:
//	  interfaces: [...]
//	  arp_entries: [...]
//	  routes: [...]
//
// Registry.ParseConfig turns a document into key-value pairs, reporting every
// problem with its place (vpp_config.interfaces[1]); BuildConfig goes the
// other way.
//
// # Lookups
//
// Registry.ModelOfKey finds the model of a key with one map lookup per "/"
// segment of the longest key prefix, whatever the number of models;
// ModelOfMessage and ModelByName are map lookups. A registry is immutable
// once built and safe for concurrent use.
//
// # Model names
//
// A model's name is the original agent's: module.type of its key, which
// makes "vpp.interfaces" beside "linux.interfaces.interface" (the
// original's modules are "vpp" and "linux.interfaces"). Every answer shows
// that name (the CLI, REST, the original's MetaService and ManagerService).
// Registry.Lookup, for what users type, also takes a model's aliases: its
// message's full name ("vpp.interfaces.interface"), its message's package
// and type ("vpp.l3.route", as "linux.l3.route"), the first segment of its
// module and its type ("linux.route", as "vpp.route") and its module when
// the module has one model ("linux.interfaces"), in any case. An alias of
// several models ("vpp.l2", "linux.l3") is an error naming them.
package models
