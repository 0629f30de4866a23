package sim

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestQueueOrder checks the heap against a sorted reference on seeded random
// interleavings of pushes and pops, with many ties: events come out by time,
// and events at one time in the order they were pushed.
func TestQueueOrder(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var q queue
		type ref struct {
			at  int64
			tag int
		}
		var want []ref
		tag := 0
		now := int64(0)
		for step := 0; step < 500; step++ {
			if q.len() == 0 || rng.IntN(3) > 0 {
				at := now + rng.Int64N(20) // few distinct times: many ties
				tag++
				q.push(at, event{kind: evFunc, id: tag})
				want = append(want, ref{at, tag})
				continue
			}
			slices.SortStableFunc(want, func(a, b ref) int { return cmp.Compare(a.at, b.at) })
			at, ev := q.pop()
			if at != want[0].at || ev.id != want[0].tag {
				t.Fatalf("seed %d step %d: popped (%d, #%d), want (%d, #%d)", seed, step, at, ev.id, want[0].at, want[0].tag)
			}
			if at < now {
				t.Fatalf("seed %d: time went back from %d to %d", seed, now, at)
			}
			now = at
			want = want[1:]
		}
		if q.len() != len(want) {
			t.Fatalf("seed %d: queue holds %d, want %d", seed, q.len(), len(want))
		}
		if len(q.bodies) > 500 {
			t.Fatalf("seed %d: %d bodies for at most 500 live events: slots are not recycled", seed, len(q.bodies))
		}
	}
}
