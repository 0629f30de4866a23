package player

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/world"
)

// TestGridMatchesScan checks the interest filter's grid against the scan
// of every object on random worlds: clustered and spread objects, several
// boxes per player, boxes unbounded in z (as the arena's) or in x (the
// fallback), empty and NaN boxes, objects at NaN.
func TestGridMatchesScan(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	on := 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 11))
		n := rng.IntN(400)
		spread := math.Pow(10, 1+3*rng.Float64())
		objs := make([]replica.Info, n)
		for i := range objs {
			st := dotSchema.NewState(world.ObjectID(i + 1))
			x, y := rng.NormFloat64()*spread, rng.NormFloat64()*spread
			if rng.IntN(50) == 0 {
				x = math.NaN()
			}
			st.SetLocation(world.Point{x, y, rng.Float64() * 10})
			objs[i] = replica.Info{ID: st.ID(), Kind: 1, State: st}
		}
		var gr grid
		gr.build(objs, 3, spread/(1+rng.Float64()*20))
		if gr.on {
			on++
		}
		for q := range 20 {
			var boxes []world.Box
			for range 1 + rng.IntN(3) {
				c := world.Point{rng.NormFloat64() * spread, rng.NormFloat64() * spread, 5}
				h := spread * rng.Float64() / 4
				b := world.BoxAround(c, world.Point{h, h * (0.5 + rng.Float64()), math.Inf(1)})
				switch rng.IntN(20) {
				case 0:
					b.Min[0] = math.Inf(-1)
				case 1:
					b.Min[1], b.Max[1] = b.Max[1], b.Min[1] // empty
				case 2:
					b.Max[0] = math.NaN()
				case 3:
					b.Min[2], b.Max[2] = 3, 4
				}
				boxes = append(boxes, b)
			}
			avatar := world.ObjectID(rng.IntN(n + 2))
			got := slices.Clone(gr.visible(objs, boxes, 3, avatar))
			var want []int32
			for i := range objs {
				in := objs[i].ID == avatar
				for _, b := range boxes {
					in = in || b.Contains(objs[i].State.Location(), 3)
				}
				if in {
					want = append(want, int32(i))
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d query %d (grid on: %v): grid gives %d objects, the scan %d", seed, q, gr.on, len(got), len(want))
			}
		}
	}
	if on != seeds {
		t.Fatalf("the grid was built for %d of %d worlds", on, seeds)
	}
}

func BenchmarkVisible(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	objs := make([]replica.Info, 2000)
	for i := range objs {
		st := dotSchema.NewState(world.ObjectID(i + 1))
		st.SetLocation(world.Point{rng.Float64() * 400, rng.Float64() * 400})
		objs[i] = replica.Info{ID: st.ID(), Kind: 1, State: st}
	}
	boxes := []world.Box{world.BoxAround(world.Point{200, 200}, world.Point{20, 20, math.Inf(1)})}
	for _, mode := range []string{"grid", "scan"} {
		b.Run(mode, func(b *testing.B) {
			var gr grid
			gr.build(objs, 3, 20)
			gr.on = mode == "grid"
			b.ReportAllocs()
			for b.Loop() {
				gr.visible(objs, boxes, 3, 1)
			}
		})
	}
}
