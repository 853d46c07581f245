package api

import (
	"context"

	"google.golang.org/protobuf/proto"
)

// KeySelector selects keys: it returns true for the keys it accepts.
type KeySelector func(key string) bool

// Dependency is one precondition of a value: either a specific Key must exist,
// or (AnyOf) at least one existing key must be accepted by the selector, or
// (Exclusive) no other value may hold a resource. Dependencies of one value
// are ANDed. A key "exists" when its value is CONFIGURED or OBTAINED (a
// created derived value counts).
type Dependency struct {
	// Label names the dependency in status details ("unmet: interface").
	Label string
	// Key must exist for the dependency to be satisfied. Set one of Key,
	// AnyOf and Exclusive.
	Key string
	// AnyOf is satisfied by any existing key it accepts.
	AnyOf AnyOfDependency
	// Exclusive names a resource that only one value at a time may hold in
	// the SB (e.g. "the bridge-domain membership of interface loop1"). Every
	// value that lists the same Exclusive name competes for it: the
	// dependency is satisfied while no other of those values is applied in
	// the SB. A value is created only while it is free, so the first one
	// applied (created first, or found in the SB by a resync) holds it and
	// the others wait PENDING, their details naming the holder; when the
	// holder leaves the SB (in the same transaction too, before the waiting
	// value's turn or after it), the first waiting value in key order is
	// created; values that become creatable together (their interface
	// appears) are tried in key order too. An Exclusive dependency never
	// makes an applied value go: two holders found in the SB by a resync
	// both stay. The resource is read from the dependencies of the value's
	// intended value (of its applied one while nothing is intended): give
	// the value a key that names the resource, so that a change of
	// resource is a new key (deleted, then created).
	Exclusive string
}

// AnyOfDependency is satisfied by at least one existing key that starts with
// one of KeyPrefixes (when any are given) and is accepted by KeySelector.
// Prefixes bound the search: without them the scheduler has to offer every key
// of the graph to the selector, which is correct but slow in large graphs.
type AnyOfDependency struct {
	KeyPrefixes []string
	KeySelector KeySelector
}

// IsZero tells whether the AnyOf dependency is unset.
func (a AnyOfDependency) IsZero() bool {
	return a.KeySelector == nil && len(a.KeyPrefixes) == 0
}

// UniqueName is a name a value uses that no other value may use at the same
// time (KVDescriptor.Unique).
type UniqueName struct {
	// Field names the value's field that gives the name (for the INVALID
	// value's details), e.g. "host_if_name".
	Field string
	// Name is the name, qualified by what it names, e.g.
	// "linux host interface veth1 in namespace app".
	Name string
}

// KeyValuePair is a key with its value.
type KeyValuePair struct {
	Key   string
	Value proto.Message
}

// ValueOrigin tells where a value came from.
type ValueOrigin int

const (
	// UnknownOrigin: the descriptor cannot tell. A retrieved value of unknown
	// origin is taken as the NB's when the NB requests its key or the agent
	// created it; otherwise it is treated as foreign (OBTAINED) and never
	// deleted.
	UnknownOrigin ValueOrigin = iota
	// FromNB: requested by the northbound (created by the agent).
	FromNB
	// FromSB: created in the southbound by someone else; never deleted by the
	// agent.
	FromSB
)

func (o ValueOrigin) String() string {
	switch o {
	case FromNB:
		return "from-NB"
	case FromSB:
		return "from-SB"
	default:
		return "unknown"
	}
}

// KVWithMetadata is a key-value pair with its metadata and origin, as returned
// by Retrieve and pushed by SB notifications.
type KVWithMetadata struct {
	Key      string
	Value    proto.Message
	Metadata any
	Origin   ValueOrigin
}

// KVDescriptor describes one kind of value to the scheduler. It is a struct of
// attributes and callbacks rather than an interface: descriptors are stateless,
// the scheduler keeps the state (values, metadata, status) and shows it.
// Optional fields may be left at their zero values.
type KVDescriptor struct {
	// Name identifies the descriptor; unique among registered descriptors.
	// Mandatory.
	Name string

	// NBKeyPrefix is the prefix under which the northbound (e.g. etcd) holds
	// the values of this descriptor. Empty for descriptors of derived values.
	NBKeyPrefix string

	// KeySelector returns true for the keys this descriptor describes.
	// Mandatory. Selectors of different descriptors must not overlap; a key
	// accepted by two descriptors belongs to the one registered first.
	KeySelector KeySelector

	// ValueTypeName is the full proto name of the value message (e.g.
	// "vpp.interfaces.Interface"). When set, a value of another type is
	// INVALID. Mandatory for descriptors of NB values.
	ValueTypeName string

	// KeyLabel shortens a key into a label unique within the descriptor (e.g.
	// the interface name); it is the key of the metadata map. Default: the key.
	KeyLabel func(key string) string

	// ValueComparator tells whether two values of a key are equivalent, so
	// that a change between them needs no Update (e.g. MTU 0 and 1500).
	// Default: proto.Equal.
	ValueComparator func(key string, oldValue, newValue proto.Message) bool

	// WithMetadata enables metadata for the values of this descriptor: what
	// Create, Update and Retrieve return is kept with the value and published
	// in the descriptor's metadata map.
	WithMetadata bool

	// MetadataMapFactory builds the metadata map, for maps with secondary
	// indexes. Default: a plain map from label to metadata.
	MetadataMapFactory func() MetadataMapRW

	// Validate checks a value before it is created or updated. An error makes
	// the value INVALID: it is not applied (a previous version is removed from
	// the SB) and not retried until the value changes. Wrap the reason with
	// NewInvalidValueError to name the invalid fields.
	Validate func(key string, value proto.Message) error

	// Create creates the value in the SB and returns its metadata. Called only
	// when all dependencies are satisfied. Mandatory for descriptors of NB and
	// derived values that need an SB operation. On error the scheduler
	// refreshes the key (Retrieve) to learn what the failure left behind;
	// for a derived value its base too.
	//
	// ctx, for Create, Update, Delete and Retrieve alike, is cancelled when
	// the scheduler closes and carries the call's deadline when the
	// scheduler has one (Options.CallTimeout); pass it to the SB calls.
	// ViewOf(ctx) reads statuses and metadata; RequestReconcile(ctx, ...)
	// asks for follow-up work. A callback never calls the scheduler itself
	// (see the package doc).
	Create func(ctx context.Context, key string, value proto.Message) (metadata any, err error)

	// Delete removes the value from the SB. Called only after all values that
	// depend on it, and its derived values, were deleted. Deleting a value
	// that is already gone should succeed.
	Delete func(ctx context.Context, key string, value proto.Message, metadata any) error

	// Update changes the value in place and returns the new metadata (the old
	// metadata may be modified and returned). Without Update every change is
	// applied by re-creation: Delete then Create.
	Update func(ctx context.Context, key string, oldValue, newValue proto.Message, oldMetadata any) (newMetadata any, err error)

	// Batch, when set, executes many Create, Update and Delete operations
	// of this descriptor in one call, so that the descriptor can keep many
	// SB requests in flight (VPP requests on the API socket, netlink
	// messages on one socket) instead of one request and its reply at a
	// time. Create,
	// Update and Delete must be set too: Batch is an optimisation of them,
	// with the same semantics per operation. See BatchOp for the contract.
	Batch func(ctx context.Context, ops []BatchOp)

	// UpdateWithRecreate tells whether this change must be applied by
	// re-creation even though Update exists (e.g. a changed interface type).
	// Values that depend on the re-created value are deleted first (PENDING)
	// and created again after it.
	UpdateWithRecreate func(key string, oldValue, newValue proto.Message, metadata any) bool

	// Retrieve reads every value of this descriptor present in the SB.
	// correlate holds the base (non-derived) values the scheduler expects
	// (the NB values at startup, the applied values at run time), with their
	// metadata, to help reconstruct NB-shaped values from SB data. Values it
	// returns must be accepted by KeySelector and appear once. Without
	// Retrieve the SB is assumed to be as the scheduler left it.
	//
	// Derived values: the Retrieve of a descriptor of derived values other
	// than their base's descriptor is their SB state: a derived value it
	// does not return is missing (and created again), whatever its base
	// derives. The SB state of any other derived value (a property, one whose
	// descriptor has no Retrieve, or one described by its base's descriptor,
	// whose Retrieve returns base values) is what DerivedValues returns for
	// the retrieved base value; a derived value the scheduler knows it has
	// not applied (e.g. PENDING) stays not applied, as the base alone cannot
	// tell. Derived values of an OBTAINED base are always what its
	// DerivedValues returns.
	Retrieve func(ctx context.Context, correlate []KVWithMetadata) ([]KVWithMetadata, error)

	// Prefetch, optional, lets a Retrieve start its SB reads early: a
	// refresh calls it for every descriptor whose Retrieve it will call,
	// before the first Retrieve, so that what a Retrieve reads without
	// needing other descriptors' results (a VPP route dump, while the
	// interfaces are read and turned into values) is read meanwhile.
	// Contract: it returns at once (it starts the reads in a goroutine of
	// its own) and cannot fail: an error of the reads is the Retrieve's.
	// ctx carries the refresh's memo (RefreshMemo) and lives until the
	// refresh ends (it is cancelled then, also when the Retrieve is never
	// called because the refresh stopped early); Prefetch stores the handle
	// of its reads in the memo before it returns, and the goroutine does
	// not touch the memo. The Retrieve loads the handle, waits for the
	// reads (or its own ctx) and checks they are still good to use (the SB
	// they were read from is the one it reads now); without a handle it
	// reads as it would without Prefetch. Refreshes that read a few values
	// (after a failure, of a drift) do not prefetch.
	Prefetch func(ctx context.Context)

	// IsRetriableFailure tells whether an error of Create, Update or Delete
	// may go away if the operation is repeated. Default: every error is
	// retriable, except InvalidValueError and errors marked NonRetriable.
	IsRetriableFailure func(err error) bool

	// DerivedValues breaks the value into separately handled parts (e.g. one
	// value per IP address of an interface). Derived values exist only while
	// the base value exists: they are created right after it and deleted
	// before it. A derived key that no descriptor describes is a property: it
	// exists while its base does, with no CRUD. Pure, like Validate: a
	// function of the key and the value only; a full resync reuses what it
	// gave for the same value message at the one before.
	DerivedValues func(key string, value proto.Message) []KeyValuePair

	// Dependencies lists what must exist before the value can be created.
	// Pure, like Validate. The scheduler neither modifies nor keeps the
	// slice (it copies the dependencies): the same slice may be returned
	// for many values (internal/depcache keeps one per interface of a
	// route, say), and must not be changed after.
	Dependencies func(key string, value proto.Message) []Dependency

	// Unique lists names that only one value at a time may use (e.g. the
	// host interface name of a Linux link in its namespace, a memif id on
	// its socket): a value using a name that another valid value already
	// uses is INVALID, its error naming the field, the name and that value;
	// it is validated again, and applied, when the other value drops the
	// name (deleted, changed, or invalid). Of values that ask for a name in
	// one transaction, the first in key order gets it. Names are compared
	// as given, across descriptors: prefix them with what they name. Pure,
	// like Validate; called only for values Validate accepts. Names are
	// those of intended values: when two values swap names in one
	// transaction and their changes are applied by re-creation, the first
	// re-creation may meet the other's old object in the SB and fail; the
	// refresh after the failure completes it, but the transaction reports
	// the failure.
	Unique func(key string, value proto.Message) []UniqueName

	// Notes, optional, is what the descriptor has to say about a value it
	// accepts, for the operator: a field it takes and ignores, say ("X
	// ignored: VPP 25.10 has no such setting"). The notes end the value's
	// status details (before the NB's note, see NotedTxn) while the value
	// is intended and not INVALID. Pure, like Validate: called when a
	// status is read, for the value intended then.
	Notes func(key string, value proto.Message) []string

	// RetrieveDependencies names the descriptors whose values must be
	// retrieved before this one's (e.g. interfaces before routes, to map
	// interface indexes to names). The metadata their Retrieves returned is
	// in their metadata maps when this Retrieve is called; a Retrieve must
	// not look up the metadata of a descriptor it does not name (it may be
	// as the previous refresh left it).
	RetrieveDependencies []string
}

// MetadataMap is a read-only view of the metadata of one descriptor's values,
// indexed by label (KeyLabel). It is safe for concurrent use.
type MetadataMap interface {
	// GetValue returns the metadata of the value with the given label.
	GetValue(label string) (metadata any, exists bool)
	// ListLabels returns the labels of all values with metadata, sorted.
	ListLabels() []string
}

// MetadataMapRW is the writable metadata map the scheduler owns. A custom map
// (MetadataMapFactory) maintains its secondary indexes in Put and Delete. The
// scheduler is the only writer; readers may call concurrently.
type MetadataMapRW interface {
	MetadataMap
	// Put stores (or replaces) the metadata of a label.
	Put(label string, metadata any)
	// Delete removes the metadata of a label; deleting a missing label is a
	// no-op.
	Delete(label string)
}

// BatchOp is one operation of a KVDescriptor.Batch call: its input (what
// Create, Update or Delete would be given) and its result, which Batch
// sets with Done or Fail.
//
// The scheduler passes a batch operations of one transaction, of one
// descriptor, that the dependency graph does not order among themselves:
// no operation's value depends on (or is derived from) another's of the
// batch, and no key appears twice. Every operation they need before them
// has been executed and succeeded; those that need them wait until the
// batch returns, so the order of the dependency graph is kept between
// batches (see "Descriptors with Batch" in the package documentation of
// the scheduler: waves). Values with Exclusive dependencies or an AnyOf
// one without KeyPrefixes, and every operation of a transaction with
// revert, are executed one at a time.
//
// Within a batch the descriptor may have every request in flight at once,
// but it sends them in the order given (the plan's, which can matter to
// the SB even between independent values: a route deleted under one key
// and created under another), and it gives each operation its own result:
// an operation that fails does not stop the others. A failed operation is
// handled as if its own Create, Update or Delete had failed (refresh,
// retry); the others as succeeded. An operation left without a result
// counts as failed with a non-retriable error that says so; a panic fails
// every operation still without one.
type BatchOp struct {
	Op  TxnOperation // OpCreate, OpUpdate or OpDelete
	Key string
	// From is the applied value (Update, Delete); To the value to apply
	// (Create, Update).
	From, To proto.Message
	// Metadata is the applied value's metadata (Update, Delete).
	Metadata any

	result   any
	err      error
	finished bool
}

// Done records that the operation succeeded, with the new metadata
// (Create, Update; nil otherwise).
func (op *BatchOp) Done(metadata any) {
	op.result, op.err, op.finished = metadata, nil, true
}

// Fail records that the operation failed with err (nil: Done(nil)).
func (op *BatchOp) Fail(err error) {
	op.result, op.err, op.finished = nil, err, true
}

// Result returns what Done or Fail recorded; finished is false when
// neither was called.
func (op *BatchOp) Result() (metadata any, err error, finished bool) {
	return op.result, op.err, op.finished
}
