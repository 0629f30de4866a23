package locate

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/wire"
	"github.com/overworld/overworld/world"
)

// TestMatchOrderIsStableSort checks sendMatches' order against a stable
// sort of the matches by subscriber and then lifetime (short-lived
// first), on random queues with few and many subscribers (large node IDs
// too), reusing the key slice.
func TestMatchOrderIsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	var order []uint64
	for round := range 2000 {
		nsub := 1 + r.IntN(30)
		subs := make([]wire.NodeID, nsub)
		for k := range subs {
			subs[k] = wire.NodeID(r.IntN(100))
			if r.IntN(5) == 0 {
				subs[k] = wire.NodeID(r.Uint32())
			}
		}
		ms := make([]matchOut, r.IntN(200))
		for i := range ms {
			ms[i] = matchOut{to: subs[r.IntN(nsub)], pub: wire.Pub{ID: world.ObjectID(i)}, until: time.Duration(r.IntN(3)) * time.Second}
		}
		long := func(m matchOut) int {
			if m.until > time.Second {
				return 1
			}
			return 0
		}
		want := slices.Clone(ms)
		slices.SortStableFunc(want, func(a, b matchOut) int {
			if c := cmp.Compare(a.to, b.to); c != 0 {
				return c
			}
			return cmp.Compare(long(a), long(b))
		})
		order = matchOrder(ms, 0, time.Second, order[:0])
		if len(order) != len(want) {
			t.Fatalf("round %d: %d keys for %d matches", round, len(order), len(want))
		}
		for i, k := range order {
			m := ms[uint32(k&^matchLong)]
			if m.to != want[i].to || m.pub.ID != want[i].pub.ID || wire.NodeID(k>>32) != m.to {
				t.Fatalf("round %d: position %d holds match %d for %d, want match %d for %d", round, i, m.pub.ID, m.to, want[i].pub.ID, want[i].to)
			}
		}
	}
}

// TestFindSubIsBinarySearch checks the written-out search against
// slices.BinarySearchFunc on sorted subscriber lists, for present and absent
// nodes.
func TestFindSubIsBinarySearch(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for round := range 500 {
		var d Directory
		for range r.IntN(40) {
			d.subs = append(d.subs, storedSub{node: wire.NodeID(r.IntN(200))})
		}
		slices.SortFunc(d.subs, func(a, b storedSub) int { return cmp.Compare(a.node, b.node) })
		d.subs = slices.CompactFunc(d.subs, func(a, b storedSub) bool { return a.node == b.node })
		for n := range wire.NodeID(202) {
			i, ok := d.findSub(n)
			wi, wok := slices.BinarySearchFunc(d.subs, n, func(s storedSub, n wire.NodeID) int { return cmp.Compare(s.node, n) })
			if i != wi || ok != wok {
				t.Fatalf("round %d: node %d: (%d, %v), want (%d, %v)", round, n, i, ok, wi, wok)
			}
		}
	}
}
