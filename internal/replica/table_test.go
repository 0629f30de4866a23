package replica

import (
	"testing"
	"unsafe"
)

// TestEntryLayout: an entry fits the 256-byte size class (whose objects
// start on a cache line) and its groups of fields start on their lines.
func TestEntryLayout(t *testing.T) {
	var e entry
	if n := unsafe.Sizeof(e); n > 256 || n <= 240 {
		t.Errorf("entry is %d bytes, want 241 to 256 (the 256-byte size class)", n)
	}
	for _, f := range []struct {
		name      string
		off, want uintptr
	}{
		{"obj", unsafe.Offsetof(e.obj), 64},
		{"hist", unsafe.Offsetof(e.hist), 128},
		{"holders", unsafe.Offsetof(e.holders), 160},
		{"hnodes", unsafe.Offsetof(e.hnodes), 192},
	} {
		if f.off != f.want {
			t.Errorf("entry.%s at offset %d, want %d", f.name, f.off, f.want)
		}
	}
}

// TestStoreLayout: what every received packet touches in a Store lies in
// its first 6 cache lines, before the configuration and the rest.
func TestStoreLayout(t *testing.T) {
	var s Store
	if end := unsafe.Offsetof(s.ack) + unsafe.Sizeof(s.ack); end > 6*64 || unsafe.Offsetof(s.cfg) < end {
		t.Errorf("the per-packet fields end at byte %d of the Store, want them first and within 384 bytes", end)
	}
}
