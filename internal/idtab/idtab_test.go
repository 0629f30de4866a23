package idtab

import (
	"math/rand/v2"
	"testing"

	"github.com/overworld/overworld/world"
)

// TestTableMatchesMap runs random puts, gets and deletes on a table and on
// a Go map and requires the same answers after every operation, over IDs
// drawn from a small clustered set (heavy collisions, probe runs wrapping
// around the array and cut by deletions) and from the whole space; then
// every slot must hold a live key.
func TestTableMatchesMap(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var tb Table[int32]
		ref := map[world.ObjectID]int32{}
		keys := 1 + rng.IntN(500)
		key := func() world.ObjectID {
			if rng.IntN(4) == 0 {
				return world.ObjectID(rng.Uint64())
			}
			k := rng.IntN(keys) // clustered like real IDs (origin << 32 | sequence)
			return world.ObjectID(uint64(k%7)<<32 | uint64(k/7))
		}
		for op := range 3000 {
			id := key()
			switch rng.IntN(3) {
			case 0, 1:
				v := 1 + rng.Int32N(1<<20)
				tb.Put(id, v)
				ref[id] = v
			case 2:
				tb.Delete(id)
				delete(ref, id)
			}
			if got, want := tb.Get(id), ref[id]; got != want {
				t.Fatalf("seed %d op %d: Get(%v) = %d, want %d", seed, op, id, got, want)
			}
			q := key()
			if got, want := tb.Get(q), ref[q]; got != want {
				t.Fatalf("seed %d op %d: Get(%v) = %d, want %d", seed, op, q, got, want)
			}
			if tb.Len() != len(ref) {
				t.Fatalf("seed %d op %d: Len %d, want %d", seed, op, tb.Len(), len(ref))
			}
		}
		for id, v := range ref {
			if tb.Get(id) != v {
				t.Fatalf("seed %d: final Get(%v) wrong", seed, id)
			}
		}
		n := 0
		for _, s := range tb.slots {
			if s.v != 0 {
				n++
				if ref[s.id] != s.v {
					t.Fatalf("seed %d: stale slot %v", seed, s.id)
				}
			}
		}
		if n != len(ref) {
			t.Fatalf("seed %d: %d occupied slots, %d keys", seed, n, len(ref))
		}
	}
}

// TestPutZeroPanics: the zero value marks empty slots and cannot be stored.
func TestPutZeroPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Put of the zero value did not panic")
		}
	}()
	var tb Table[*int]
	tb.Put(1, nil)
}
