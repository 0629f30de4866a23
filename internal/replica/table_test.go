package replica

import (
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/overworld/overworld/world"
)

// TestTableMatchesMap runs random puts, gets and deletes on a table and on
// a Go map and requires the same answers after every operation.
func TestTableMatchesMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tb table
		ref := map[world.ObjectID]*entry{}
		// Few distinct keys (heavy collisions and re-insertions), clustered
		// like real IDs (origin node << 32 | sequence).
		keys := 1 + rng.IntN(500)
		key := func() world.ObjectID {
			k := rng.IntN(keys)
			return world.ObjectID(uint64(k%7)<<32 | uint64(k/7))
		}
		for op := range 20000 {
			id := key()
			switch rng.IntN(3) {
			case 0:
				e := &entry{id: id}
				tb.put(id, e)
				ref[id] = e
			case 1:
				tb.del(id)
				delete(ref, id)
			}
			if got, want := tb.get(id), ref[id]; got != want {
				t.Fatalf("seed %d op %d: get(%v) = %p, want %p", seed, op, id, got, want)
			}
			if tb.len() != len(ref) {
				t.Fatalf("seed %d op %d: len %d, want %d", seed, op, tb.len(), len(ref))
			}
		}
		for id, e := range ref {
			if tb.get(id) != e {
				t.Fatalf("seed %d: final get(%v) wrong", seed, id)
			}
		}
		n := 0
		for _, s := range tb.slots {
			if s.e != nil {
				n++
				if ref[s.id] != s.e {
					t.Fatalf("seed %d: stale slot %v", seed, s.id)
				}
			}
		}
		if n != len(ref) {
			t.Fatalf("seed %d: %d occupied slots, %d keys", seed, n, len(ref))
		}
	}
}

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
		{"holders", unsafe.Offsetof(e.holders), 192},
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
