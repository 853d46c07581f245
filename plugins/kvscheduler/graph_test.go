package kvscheduler

import (
	"testing"
	"unsafe"
)

// Every value is a node, so the node's size is most of the scheduler's memory
// per value (docs/benchmarks.md, W6). Keep it in the 256-byte size class:
// rarely used fields belong in nodeRare, small fields together.
func TestNodeFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(node{}); size > 256 {
		t.Fatalf("node is %d bytes, over the 256-byte size class: move rare fields to nodeRare or pack small fields", size)
	}
}

// The fields scans and dependency checks read are in the node's first 128
// bytes (see node).
func TestNodeHotFieldsFirst(t *testing.T) {
	var n node
	if end := unsafe.Offsetof(n.rare) + unsafe.Sizeof(n.rare); end > 128 {
		t.Fatalf("the node's first part ends at byte %d, over 128", end)
	}
}
