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
	seeds := 300
	if testing.Short() {
		seeds = 30
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 0))
		var q queue
		type ref struct {
			at  int64
			seq uint64
			tag int
		}
		var want []ref
		tag := 0
		now := int64(0)
		for step := 0; step < 2000; step++ {
			if rng.IntN(5) == 0 {
				q.next() // a peek may move the wheel past now (Run does this)
			}
			if q.len() == 0 || rng.IntN(3) > 0 {
				at := now + spread(rng)
				tag++
				// Sequence numbers unrelated to push order (a parallel
				// window pushes its workers' events together).
				seq := uint64(rng.Uint32())<<20 | uint64(tag)
				q.push(at, entry{kind: evFunc, ref: int32(tag), seq: seq})
				want = append(want, ref{at, seq, tag})
				continue
			}
			slices.SortFunc(want, func(a, b ref) int {
				if c := cmp.Compare(a.at, b.at); c != 0 {
					return c
				}
				return cmp.Compare(a.seq, b.seq)
			})
			ev := q.pop()
			at := ev.at
			if at != want[0].at || int(ev.ref) != want[0].tag {
				t.Fatalf("seed %d step %d: popped (%d, #%d), want (%d, #%d)", seed, step, at, ev.ref, want[0].at, want[0].tag)
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
	}
}

// spread draws a delay: mostly within one bucket (many ties and pushes into
// the open bucket), sometimes across the wheel, sometimes beyond its horizon.
func spread(rng *rand.Rand) int64 {
	switch rng.IntN(5) {
	case 4:
		return rng.Int64N(4*wheelSize) << bucketShift // bucket starts: ties between wheel and far events
	case 0:
		return rng.Int64N(20) // few distinct times: many ties
	case 1:
		return rng.Int64N(2 << bucketShift)
	case 2:
		return rng.Int64N(wheelSize << bucketShift)
	}
	return rng.Int64N(4 * wheelSize << bucketShift)
}
