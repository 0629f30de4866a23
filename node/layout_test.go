package node

import (
	"testing"
	"unsafe"
)

// TestNodeLayout: the fields every received packet touches lie in the
// Node's first three cache lines (see Node), the outbox's ready count
// (Outbox.Len) among them.
func TestNodeLayout(t *testing.T) {
	var n Node
	for _, f := range []struct {
		name string
		end  uintptr
	}{
		{"id", unsafe.Offsetof(n.id) + unsafe.Sizeof(n.id)},
		{"now", unsafe.Offsetof(n.now) + unsafe.Sizeof(n.now)},
		{"store", unsafe.Offsetof(n.store) + unsafe.Sizeof(n.store)},
		{"disc", unsafe.Offsetof(n.disc) + unsafe.Sizeof(n.disc)},
		{"in", unsafe.Offsetof(n.in) + unsafe.Sizeof(n.in)},
	} {
		if f.end > 64 {
			t.Errorf("%s ends at byte %d, past line 0", f.name, f.end)
		}
	}
	if lo, hi := unsafe.Offsetof(n.lout), unsafe.Offsetof(n.lout)+unsafe.Sizeof(n.lout); lo < 64 || hi > 128 {
		t.Errorf("lout spans bytes %d to %d, not line 1", lo, hi)
	}
	if off := unsafe.Offsetof(n.out); off != 128 {
		t.Errorf("out starts at byte %d, not line 2", off)
	}
	// The outbox's first line holds its ready count (Len).
	if got := n.out.Len(); got != 0 || unsafe.Sizeof(n.out) < 64 {
		t.Errorf("outbox: Len %d, %d bytes", got, unsafe.Sizeof(n.out))
	}
}
