package locate

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// randAggBoxes returns n boxes of a node's primaries: clustered (players
// who fight together overlap), some far apart, some degenerate, empty or
// unbounded in a dimension.
func randAggBoxes(r *rand.Rand, n, dims int) []world.Box {
	bs := make([]world.Box, n)
	var centre world.Point
	for d := range dims {
		centre[d] = r.Float64() * 1000
	}
	for i := range bs {
		var c, half world.Point
		for d := range dims {
			c[d] = centre[d] + (r.Float64()-0.5)*60
			if r.IntN(4) == 0 {
				c[d] = r.Float64() * 1000
			}
			half[d] = 5 + r.Float64()*30
			if r.IntN(6) == 0 {
				c[d] = math.Round(c[d]/10) * 10
				half[d] = 10
			}
		}
		bs[i] = world.BoxAround(c, half)
		switch r.IntN(25) {
		case 0:
			d := r.IntN(dims)
			bs[i].Min[d], bs[i].Max[d] = math.Inf(-1), math.Inf(1)
		case 1:
			bs[i].Max[0] = bs[i].Min[0] - 1 // empty
		case 2:
			bs[i].Max[0] = bs[i].Min[0] // degenerate
		}
	}
	return bs
}

// maskedVolume is b's volume over the dimensions in which u has a finite,
// positive extent.
func maskedVolume(b, u world.Box, dims int) float64 {
	v := 1.0
	for d := range dims {
		if ext := u.Max[d] - u.Min[d]; ext > 0 && !math.IsInf(ext, 0) {
			v *= b.Max[d] - b.Min[d]
		}
	}
	return v
}

// TestMergeBounds checks the aggregation filter on seeded random sets of
// boxes: every input box lies in its merged box (soundness), each merged
// box is the bounding box of its inputs, there are never more merged boxes
// than inputs, every merged box's volume is at most (1+ε) × the summed
// volumes of its inputs, and no two merged boxes could still merge.
func TestMergeBounds(t *testing.T) {
	seeds := 600
	if testing.Short() {
		seeds = 120
	}
	var in, out int
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 41))
		dims := 1 + r.IntN(3)
		eps := []float64{0, 0.1, 0.5, 1, 3}[r.IntN(5)]
		boxes := randAggBoxes(r, r.IntN(30), dims)
		merged, group, err := Merge(boxes, dims, eps, []world.Box{{}}, nil)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		merged = merged[1:] // Merge appends
		if len(group) != len(boxes) || len(merged) > len(boxes) {
			t.Fatalf("seed %d: %d groups for %d boxes, %d merged", seed, len(group), len(boxes), len(merged))
		}
		in += len(boxes)
		out += len(merged)
		members := make([][]world.Box, len(merged))
		bounds := make([]world.Box, len(merged))
		for i, b := range boxes {
			g := group[i]
			if b.Empty(dims) {
				if g != -1 {
					t.Fatalf("seed %d: empty box %d in group %d", seed, i, g)
				}
				continue
			}
			if g < 0 || g >= len(merged) || !merged[g].Covers(b, dims) {
				t.Fatalf("seed %d ε %v: box %d %v not inside its merged box (group %d of %v)", seed, eps, i, b, g, merged)
			}
			if len(members[g]) == 0 {
				bounds[g] = b
			} else {
				bounds[g] = bounds[g].Union(b)
			}
			members[g] = append(members[g], b)
		}
		sum := func(u world.Box, gs ...int) float64 {
			var s float64
			for _, g := range gs {
				for _, b := range members[g] {
					s += maskedVolume(b, u, dims)
				}
			}
			return s
		}
		for g := range merged {
			if len(members[g]) == 0 {
				t.Fatalf("seed %d: merged box %d holds no input", seed, g)
			}
			for d := range dims {
				if bounds[g].Min[d] != merged[g].Min[d] || bounds[g].Max[d] != merged[g].Max[d] {
					t.Fatalf("seed %d: merged box %v is not the bounding box %v of its inputs", seed, merged[g], bounds[g])
				}
			}
			if v, s := maskedVolume(merged[g], merged[g], dims), sum(merged[g], g); v > (1+eps)*s*(1+1e-12) {
				t.Fatalf("seed %d: merged box %d volume %v > (1+%v) × %v", seed, g, v, eps, s)
			}
		}
		// Maximal: no two merged boxes satisfy the merge rule.
		for a := range merged {
			for b := a + 1; b < len(merged); b++ {
				if merged[a].Covers(merged[b], dims) || merged[b].Covers(merged[a], dims) {
					t.Fatalf("seed %d: merged box %v covers %v but they were not merged", seed, merged[a], merged[b])
				}
				u := merged[a].Union(merged[b])
				ok := true
				for d := range dims {
					if math.IsInf(u.Max[d]-u.Min[d], 0) && (merged[a].Min[d] != merged[b].Min[d] || merged[a].Max[d] != merged[b].Max[d]) {
						ok = false
					}
				}
				if v := maskedVolume(u, u, dims); ok && !math.IsInf(v, 0) && v <= (1+eps)*sum(u, a, b) {
					t.Fatalf("seed %d ε %v: merged boxes %v and %v could still merge (volume %v, parts %v)", seed, eps, merged[a], merged[b], v, sum(u, a, b))
				}
			}
		}
	}
	t.Logf("%d boxes merged into %d (%.2f×)", in, out, float64(in)/float64(out))
}

// TestMergeShapes checks merging on shapes with a known answer.
func TestMergeShapes(t *testing.T) {
	sq := func(x, y, h float64) world.Box { return world.BoxAround(world.Point{x, y}, world.Point{h, h}) }
	cases := []struct {
		name  string
		boxes []world.Box
		eps   float64
		want  int
	}{
		{"identical", []world.Box{sq(0, 0, 10), sq(0, 0, 10), sq(0, 0, 10)}, 0, 1},
		{"nested", []world.Box{sq(0, 0, 10), sq(1, 1, 2), sq(-5, 5, 3)}, 0, 1},
		{"far apart", []world.Box{sq(0, 0, 10), sq(100, 0, 10), sq(0, 100, 10)}, 1, 3},
		{"two floors", []world.Box{sq(0, 0, 10), {Min: world.Point{-10, -10, 3}, Max: world.Point{10, 10, 3}}}, 1, 2},
		{"half overlap", []world.Box{sq(0, 0, 10), sq(10, 0, 10)}, 0, 1}, // union 600 ≤ 800
		{"diagonal neighbours", []world.Box{sq(0, 0, 10), sq(20, 20, 10)}, 0.5, 2},
		{"diagonal, generous ε", []world.Box{sq(0, 0, 10), sq(20, 20, 10)}, 1, 1}, // 1600 ≤ 2 × 800
		{"unbounded z, same", []world.Box{{Min: world.Point{0, 0, math.Inf(-1)}, Max: world.Point{10, 10, math.Inf(1)}},
			{Min: world.Point{5, 0, math.Inf(-1)}, Max: world.Point{15, 10, math.Inf(1)}}}, 0, 1},
		{"unbounded z, different", []world.Box{{Min: world.Point{0, 0, math.Inf(-1)}, Max: world.Point{10, 10, math.Inf(1)}},
			{Min: world.Point{5, 0, 0}, Max: world.Point{15, 10, 1}}}, 10, 2},
	}
	for _, c := range cases {
		got, _, err := Merge(c.boxes, 3, c.eps, nil, nil) // z: flat at 0, or unbounded
		if err != nil || len(got) != c.want {
			t.Errorf("%s: %d boxes %v (err %v), want %d", c.name, len(got), got, err, c.want)
		}
	}
	for _, bad := range []struct {
		eps  float64
		dims int
		b    world.Box
	}{{-1, 2, world.Box{}}, {math.NaN(), 2, world.Box{}}, {math.Inf(1), 2, world.Box{}}, {0, 0, world.Box{}}, {0, 2, world.Box{Max: world.Point{math.NaN()}}}} {
		dst := []world.Box{sq(1, 1, 1)}
		got, _, err := Merge([]world.Box{bad.b}, bad.dims, bad.eps, dst, nil)
		if err == nil || len(got) != 1 {
			t.Errorf("Merge(ε %v, dims %d, %v): err %v, dst %v; want an error and dst unchanged", bad.eps, bad.dims, bad.b, err, got)
		}
	}
}

// sentLog is the test's own record of every subscription sent.
type sentLog []sentBox

func (l sentLog) covered(now, slack time.Duration, b world.Box, dims int) bool {
	for _, s := range l {
		if s.until-slack > now && s.box.Covers(b, dims) {
			return true
		}
	}
	return false
}

// TestSubCacheFilter runs seeded random sequences of subscription batches
// and checks, against a log of everything sent: a box is withheld if and
// only if a live subscription (sent before, or sent in the same batch)
// covers it — the cache never suppresses one that is not covered — and
// after each batch every box is covered by a live one.
func TestSubCacheFilter(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	var sent, withheld int
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 42))
		dims := 1 + r.IntN(3)
		slack := time.Duration(r.IntN(3)) * 50 * time.Millisecond
		c, err := NewSubCache(dims, slack)
		if err != nil {
			t.Fatal(err)
		}
		var log sentLog
		now := time.Duration(0)
		var prev []world.Box
		for step := range 100 {
			now += time.Duration(r.IntN(300)) * time.Millisecond
			ttl := slack + time.Duration(1+r.IntN(2000))*time.Millisecond
			boxes := randAggBoxes(r, r.IntN(8), dims)
			if len(prev) > 0 && r.IntN(2) == 0 { // shrunk or repeated earlier boxes: often covered
				for i := range boxes {
					b := prev[r.IntN(len(prev))]
					if r.IntN(2) == 0 {
						b = b.Expand(world.Point{-1, -1, -1, -1}, world.Point{-1, -1, -1, -1})
					}
					boxes[i] = b
				}
			}
			before := append(sentLog(nil), log...)
			out := c.Filter(now, boxes, ttl, nil)
			for _, b := range out {
				log = append(log, sentBox{box: b, until: now + ttl})
			}
			for i, b := range boxes {
				if b.Empty(dims) {
					continue
				}
				isSent := false
				for _, o := range out {
					if o == b {
						isSent = true
					}
				}
				coveredBefore := before.covered(now, slack, b, dims)
				coveredByBatch := false
				for _, o := range out {
					if o != b && o.Covers(b, dims) {
						coveredByBatch = true
					}
				}
				if !isSent && !coveredBefore && !coveredByBatch {
					t.Fatalf("seed %d step %d: box %d %v withheld but no live subscription covers it", seed, step, i, b)
				}
				if isSent && coveredBefore {
					t.Fatalf("seed %d step %d: box %d %v re-sent while a live subscription covers it", seed, step, i, b)
				}
				if !log.covered(now, slack, b, dims) {
					t.Fatalf("seed %d step %d: box %d %v not covered after Filter", seed, step, i, b)
				}
				if isSent {
					sent++
				} else {
					withheld++
				}
			}
			prev = boxes
			for i := range c.sent { // the cache holds only what was sent, with its expiry
				found := false
				for _, s := range log {
					if s == c.sent[i] {
						found = true
					}
				}
				if !found || c.sent[i].until-slack <= now {
					t.Fatalf("seed %d step %d: cache entry %v was not sent or is not live", seed, step, c.sent[i])
				}
			}
		}
	}
	t.Logf("%d boxes sent, %d withheld as covered", sent, withheld)
	if _, err := NewSubCache(0, 0); !errors.Is(err, ErrLocateConfig) {
		t.Errorf("NewSubCache(0 dims): %v", err)
	}
	if _, err := NewSubCache(2, -1); !errors.Is(err, ErrLocateConfig) {
		t.Errorf("NewSubCache(negative slack): %v", err)
	}
}

// TestAggregatorPlan runs a predictor and an aggregator over seeded random
// walks of a node's primaries and checks that after every frame each
// primary's need is covered by a live subscription sent, that nothing is
// sent when every need was already covered, and that merged batches are
// never larger than the uncovered needs.
func TestAggregatorPlan(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 20
	}
	var nFrames, sentFrames, boxesSent, needs int
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 43))
		pcfg := DefaultPredictConfig()
		pcfg.PredTime = time.Duration(200+r.IntN(2000)) * time.Millisecond
		p, _ := NewPredictor(pcfg)
		a, err := NewAggregator(2, 50*time.Millisecond, []float64{0, 0.3, 1}[r.IntN(3)])
		if err != nil {
			t.Fatal(err)
		}
		n, frames := 1+r.IntN(10), 100
		big := seed%10 == 9
		if big { // merged in batches; left out of the statistics
			n, frames = MaxMergeBatch+1+r.IntN(2*MaxMergeBatch), 20
		}
		w := newWalkers(n, seed)
		var log sentLog
		var need, pred, out []world.Box
		for frame := range frames {
			now := time.Duration(frame) * 100 * time.Millisecond
			w.step()
			need, pred = need[:0], pred[:0]
			for i := range n {
				id := world.ObjectID(i + 1)
				p.Observe(id, now, w.pos[i])
				in := []world.Box{w.interest(i)}
				need = p.Need(in, need)
				pred = p.Predict(id, world.Point{}, false, in, pred)
			}
			uncovered := 0
			for _, b := range need {
				if !log.covered(now, a.Cache.slack, b, 2) {
					uncovered++
				}
			}
			out, err = a.Plan(now, need, pred, p.TTL(), out[:0])
			if err != nil {
				t.Fatal(err)
			}
			if len(out) > uncovered || uncovered == 0 && len(out) > 0 {
				t.Fatalf("seed %d frame %d: sent %d boxes for %d uncovered needs", seed, frame, len(out), uncovered)
			}
			for _, b := range out {
				log = append(log, sentBox{box: b, until: now + p.TTL()})
			}
			for i, b := range need {
				if !log.covered(now, a.Cache.slack, b, 2) {
					t.Fatalf("seed %d frame %d: need %d %v not covered by a live subscription", seed, frame, i, b)
				}
			}
			if big {
				continue
			}
			nFrames++
			needs += len(need)
			boxesSent += len(out)
			if len(out) > 0 {
				sentFrames++
			}
		}
	}
	t.Logf("%d frames with 1-10 primaries: subscriptions sent in %d, %d boxes for %d needs (%.3f boxes per need per frame)",
		nFrames, sentFrames, boxesSent, needs, float64(boxesSent)/float64(needs))
	a, _ := NewAggregator(2, 0, 0)
	box := world.Box{Max: world.Point{1, 1}}
	for _, c := range [][2][]world.Box{
		{{box}, {}},
		{{box}, {{Max: world.Point{0.5, 0.5}}}},
		{{{Max: world.Point{math.NaN()}}}, {box}},
	} {
		if _, err := a.Plan(0, c[0], c[1], time.Second, nil); !errors.Is(err, ErrRendezvous) || a.Cache.Len() != 0 {
			t.Errorf("Plan(%v, %v): %v, cache %d; want ErrRendezvous and nothing cached", c[0], c[1], err, a.Cache.Len())
		}
	}
	if _, err := NewAggregator(2, 0, math.NaN()); !errors.Is(err, ErrLocateConfig) {
		t.Errorf("NewAggregator(ε NaN): %v", err)
	}
}

// naiveMerge is the greedy grouping written plainly: every round, scan
// all pairs of groups for the cheapest mergeable one (ties: lowest
// indexes), recomputing volumes from the members.
func naiveMerge(boxes []world.Box, dims int, eps float64) []world.Box {
	type grp struct {
		box     world.Box
		members []world.Box
	}
	var gs []*grp
	for _, b := range boxes {
		if !b.Empty(dims) {
			gs = append(gs, &grp{box: b, members: []world.Box{b}})
		}
	}
	for {
		bi, bj, best := -1, -1, math.Inf(1)
		for i := range gs {
			for j := i + 1; j < len(gs); j++ {
				a, b := gs[i], gs[j]
				var c float64
				if a.box.Covers(b.box, dims) || b.box.Covers(a.box, dims) {
					c = 0
				} else {
					u := a.box.Union(b.box)
					ok := true
					for d := range dims {
						if math.IsInf(u.Max[d]-u.Min[d], 0) && (a.box.Min[d] != b.box.Min[d] || a.box.Max[d] != b.box.Max[d]) {
							ok = false
						}
					}
					var sum float64
					for _, mb := range append(append([]world.Box(nil), a.members...), b.members...) {
						sum += maskedVolume(mb, u, dims)
					}
					v := maskedVolume(u, u, dims)
					switch {
					case !ok || math.IsInf(v, 0) || v > (1+eps)*sum:
						continue
					case sum == 0:
						c = 0
					default:
						c = v / sum
					}
				}
				if c < best {
					bi, bj, best = i, j, c
				}
			}
		}
		if bi < 0 {
			break
		}
		gs[bi].box = gs[bi].box.Union(gs[bj].box)
		gs[bi].members = append(gs[bi].members, gs[bj].members...)
		gs = append(gs[:bj], gs[bj+1:]...)
	}
	var out []world.Box
	for _, g := range gs {
		out = append(out, g.box)
	}
	return out
}

// TestMergeMatchesNaive checks the incremental bookkeeping of Merge (each
// group's cheapest partner, per-mask sums) against naiveMerge.
func TestMergeMatchesNaive(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 80
	}
	var m Merger
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 44))
		dims := 1 + r.IntN(3)
		eps := []float64{0, 0.1, 0.5, 1, 3}[r.IntN(5)]
		boxes := randAggBoxes(r, r.IntN(40), dims)
		got, _, err := m.Merge(boxes, dims, eps, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := naiveMerge(boxes, dims, eps); !equalish(got, want) {
			t.Fatalf("seed %d (ε %v, %d dims, %d boxes): Merge\n %v\nnaive\n %v", seed, eps, dims, len(boxes), got, want)
		}
	}
}
