package locate

import (
	"math/rand/v2"
	"testing"

	"github.com/overworld/overworld/world"
)

// TestIDTableMatchesMap: random puts, deletes and gets agree with a Go map
// after every operation, over IDs drawn from a small set (so that probe
// runs collide, wrap around the array and are cut by deletions) and from
// the whole space.
func TestIDTableMatchesMap(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 41))
		var tab idTable
		ref := map[world.ObjectID]int32{}
		pool := 1 + r.IntN(300)
		id := func() world.ObjectID {
			if r.IntN(4) == 0 {
				return world.ObjectID(r.Uint64())
			}
			return world.MakeObjectID(uint32(1+r.IntN(3)), uint32(r.IntN(pool)))
		}
		for op := range 2000 {
			k := id()
			switch r.IntN(3) {
			case 0, 1:
				v := int32(r.IntN(1 << 20))
				tab.put(k, v)
				ref[k] = v
			case 2:
				tab.del(k)
				delete(ref, k)
			}
			if tab.n != len(ref) {
				t.Fatalf("seed %d, op %d: %d entries, want %d", seed, op, tab.n, len(ref))
			}
			if op%50 == 0 || op == 1999 {
				for k, v := range ref {
					if got, ok := tab.get(k); !ok || got != v {
						t.Fatalf("seed %d, op %d: get(%v) = %d, %v; want %d", seed, op, k, got, ok, v)
					}
				}
			}
			q := id()
			want, wok := ref[q]
			if got, ok := tab.get(q); ok != wok || got != want {
				t.Fatalf("seed %d, op %d: get(%v) = %d, %v; want %d, %v", seed, op, q, got, ok, want, wok)
			}
		}
	}
}
