package locate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCellTabMatchesMap applies random adds, updates, deletions and clears
// to a cellTab and checks it against a Go map after every operation:
// every key held is found with its list, no other key is, and the count
// agrees. Keys are crowded into a few cells (long probe runs, wrapping
// around the slot array) or spread over the whole int32 range.
func TestCellTabMatchesMap(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 11))
		span := []int{2, 5, 40}[r.IntN(3)]
		key := func() cellKey {
			if r.IntN(10) == 0 {
				return cellKey{int32(r.Uint32()), int32(r.Uint32())}
			}
			if r.IntN(20) == 0 {
				return cellKey{math.MinInt32 + int32(r.IntN(2)), math.MaxInt32 - int32(r.IntN(2))}
			}
			return cellKey{int32(r.IntN(span) - span/2), int32(r.IntN(span) - span/2)}
		}
		var x cellTab[int]
		ref := map[cellKey]int{}
		for step := range 2000 {
			k := key()
			switch op := r.IntN(10); {
			case op < 5:
				s := x.ref(k)
				if _, had := ref[k]; had != (s.l != nil) {
					t.Fatalf("seed %d step %d: ref(%v) found %v, map has it: %v", seed, step, k, s.l != nil, had)
				}
				s.l = append(s.l[:0], step)
				ref[k] = step
			case op < 9:
				c := x.find(k)
				if _, had := ref[k]; had != (c >= 0) {
					t.Fatalf("seed %d step %d: find(%v) = %d, map has it: %v", seed, step, k, c, had)
				}
				if c >= 0 {
					x.delAt(c)
					delete(ref, k)
				}
			case r.IntN(20) == 0:
				x.clear()
				clear(ref)
			}
			if x.len() != len(ref) {
				t.Fatalf("seed %d step %d: len %d, map %d", seed, step, x.len(), len(ref))
			}
			for k, v := range ref {
				if l := x.get(k); len(l) != 1 || l[0] != v {
					t.Fatalf("seed %d step %d: get(%v) = %v, map %d", seed, step, k, l, v)
				}
			}
			held := 0
			for j := range x.slots {
				if s := &x.slots[j]; s.l != nil {
					held++
					if _, ok := ref[s.key]; !ok {
						t.Fatalf("seed %d step %d: slot %d holds %v, not in the map", seed, step, j, s.key)
					}
				}
			}
			if held != len(ref) {
				t.Fatalf("seed %d step %d: %d slots held, map %d", seed, step, held, len(ref))
			}
			if k := key(); x.get(k) == nil && x.find(k) >= 0 {
				t.Fatalf("seed %d step %d: get and find disagree on %v", seed, step, k)
			}
		}
	}
}
