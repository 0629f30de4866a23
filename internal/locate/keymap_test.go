package locate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/world"
)

func extentBox(w, h float64) world.Box {
	return world.Box{Min: world.Point{0, 0}, Max: world.Point{w, h}}
}

// TestHilbertBijective checks, for every order up to 7, that HilbertIndex
// numbers the 4^order cells 0 to 4^order-1 once each, that HilbertCell is
// its inverse, and that consecutive indexes are neighbouring cells.
func TestHilbertBijective(t *testing.T) {
	for order := 1; order <= 7; order++ {
		n := uint64(1) << order
		seen := make([]bool, n*n)
		for x := range n {
			for y := range n {
				d := HilbertIndex(order, x, y)
				if d >= n*n || seen[d] {
					t.Fatalf("order %d: cell (%d, %d) has index %d (out of range or repeated)", order, x, y, d)
				}
				seen[d] = true
				if cx, cy := HilbertCell(order, d); cx != x || cy != y {
					t.Fatalf("order %d: HilbertCell(%d) = (%d, %d), want (%d, %d)", order, d, cx, cy, x, y)
				}
			}
		}
		px, py := HilbertCell(order, 0)
		for d := uint64(1); d < n*n; d++ {
			x, y := HilbertCell(order, d)
			if dist := absDiff(x, px) + absDiff(y, py); dist != 1 {
				t.Fatalf("order %d: indexes %d and %d are %d cells apart", order, d-1, d, dist)
			}
			px, py = x, y
		}
	}
}

func absDiff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

// cellRect returns the box covering exactly cells [x0, x1] × [y0, y1] of a
// unit-cell grid (bounds inside the cells, not on their borders).
func cellRect(x0, x1, y0, y1 uint64) world.Box {
	return world.Box{Min: world.Point{float64(x0) + 0.25, float64(y0) + 0.25},
		Max: world.Point{float64(x1) + 0.75, float64(y1) + 0.75}}
}

// TestHilbertRangesExact compares, exhaustively over every cell rectangle
// of orders 1 to 4, the uncapped ranges with the set of the rectangle's
// cell indexes: the same indexes, and the minimal number of runs (sorted,
// disjoint, no two adjacent).
func TestHilbertRangesExact(t *testing.T) {
	for order := 1; order <= 4; order++ {
		n := uint64(1) << order
		m, err := NewHilbertMap(extentBox(float64(n), float64(n)), order, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		for x0 := range n {
			for x1 := x0; x1 < n; x1++ {
				for y0 := range n {
					for y1 := y0; y1 < n; y1++ {
						var want []uint64
						for x := x0; x <= x1; x++ {
							for y := y0; y <= y1; y++ {
								want = append(want, HilbertIndex(order, x, y))
							}
						}
						slices.Sort(want)
						runs := 1
						for i := 1; i < len(want); i++ {
							if want[i] != want[i-1]+1 {
								runs++
							}
						}
						got := m.CellRanges(cellRect(x0, x1, y0, y1), nil)
						var flat []uint64
						for i, r := range got {
							if i > 0 && r.Lo <= got[i-1].Hi+1 {
								t.Fatalf("order %d rect [%d,%d]x[%d,%d]: ranges %v not sorted and merged", order, x0, x1, y0, y1, got)
							}
							for k := r.Lo; k <= r.Hi; k++ {
								flat = append(flat, k)
							}
						}
						if !slices.Equal(flat, want) || len(got) != runs {
							t.Fatalf("order %d rect [%d,%d]x[%d,%d]: ranges %v, want indexes %v in %d runs", order, x0, x1, y0, y1, got, want, runs)
						}
					}
				}
			}
		}
	}
}

// TestHilbertCapCovers checks the coarsened ranges on random boxes: at most
// MaxRanges, sorted and disjoint, covering every exact range, and made by
// bridging the smallest gaps (the key span added is the smallest possible
// for that many ranges).
func TestHilbertCapCovers(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 11))
		order := 3 + r.IntN(6)
		n := float64(uint64(1) << order)
		cap := 1 + r.IntN(6)
		exact, _ := NewHilbertMap(extentBox(n, n), order, 1<<30)
		capped, _ := NewHilbertMap(extentBox(n, n), order, cap)
		b := randExtentBox(r, n, n)
		ex := exact.CellRanges(b, nil)
		got := capped.CellRanges(b, nil)
		if len(got) > cap || len(ex) > 0 && len(got) != min(cap, len(ex)) {
			t.Fatalf("seed %d: %d ranges with cap %d (exact %d)", seed, len(got), cap, len(ex))
		}
		for i, g := range got {
			if g.Lo > g.Hi || i > 0 && g.Lo <= got[i-1].Hi+1 {
				t.Fatalf("seed %d: ranges %v not sorted and disjoint", seed, got)
			}
		}
		for _, e := range ex {
			if !slices.ContainsFunc(got, func(g KeyRange) bool { return g.Lo <= e.Lo && e.Hi <= g.Hi }) {
				t.Fatalf("seed %d: exact range %v not covered by %v", seed, e, got)
			}
		}
		if len(ex) > cap { // the bridged gaps are the len(ex)-cap smallest
			var gaps []uint64
			for i := 1; i < len(ex); i++ {
				gaps = append(gaps, ex[i].Lo-ex[i-1].Hi-1)
			}
			slices.Sort(gaps)
			var want, span uint64
			for _, g := range gaps[:len(ex)-cap] {
				want += g
			}
			for i := range got {
				span += got[i].Hi - got[i].Lo + 1
			}
			for _, e := range ex {
				span -= e.Hi - e.Lo + 1
			}
			if span != want {
				t.Fatalf("seed %d: bridged %d extra indexes, want %d (the smallest gaps)", seed, span, want)
			}
		}
	}
}

// randExtentBox returns a box over a w × h map: mostly inside, some
// crossing the edge or outside it, some unbounded, degenerate or empty.
func randExtentBox(r *rand.Rand, w, h float64) world.Box {
	var b world.Box
	for d, s := range []float64{w, h} {
		lo := (r.Float64()*1.2 - 0.1) * s
		switch k := r.IntN(10); {
		case k == 0:
			b.Min[d], b.Max[d] = math.Inf(-1), lo
		case k == 1:
			b.Min[d], b.Max[d] = lo, math.Inf(1)
		case k == 2:
			b.Min[d], b.Max[d] = lo, lo
		case k == 3:
			b.Min[d], b.Max[d] = math.Floor(lo), math.Floor(lo)+float64(r.IntN(4)) // on cell borders
		default:
			b.Min[d], b.Max[d] = lo, lo+r.Float64()*s*0.3
		}
	}
	return b
}

// pointIn returns a point of b: a corner, a point on an edge or inside.
func pointIn(r *rand.Rand, b world.Box) world.Point {
	var p world.Point
	for d := range 2 {
		lo, hi := b.Min[d], b.Max[d]
		lo, hi = max(lo, -1e6), min(hi, 1e6)
		switch r.IntN(4) {
		case 0:
			p[d] = lo
		case 1:
			p[d] = hi
		default:
			p[d] = lo + r.Float64()*(hi-lo)
		}
	}
	return p
}

func inRanges(k uint64, rs []KeyRange) bool {
	return slices.ContainsFunc(rs, func(r KeyRange) bool { return r.Contains(k) })
}

func testMaps(t *testing.T, w, h float64, r *rand.Rand) []KeyMap {
	t.Helper()
	lin, err := NewLinearMap(extentBox(w, h))
	if err != nil {
		t.Fatal(err)
	}
	hil, err := NewHilbertMap(extentBox(w, h), 1+r.IntN(12), 1+r.IntN(10))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := NewRegionMap(extentBox(w, h), 1+r.IntN(500))
	if err != nil {
		t.Fatal(err)
	}
	return []KeyMap{lin, hil, reg}
}

// TestKeyMapSound checks every mapping on seeded random boxes and points
// in them (corners and edges included): the point's key lies in one of the
// box's ranges, and the ranges are sorted, disjoint and not adjacent.
func TestKeyMapSound(t *testing.T) {
	seeds := 400
	if testing.Short() {
		seeds = 80
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 12))
		w, h := 10+r.Float64()*5000, 10+r.Float64()*5000
		for _, m := range testMaps(t, w, h, r) {
			for range 50 {
				b := randExtentBox(r, w, h)
				rs := m.BoxRanges(b, nil)
				for i := 1; i < len(rs); i++ {
					if rs[i].Lo <= rs[i-1].Hi+1 || rs[i].Lo > rs[i].Hi {
						t.Fatalf("seed %d %T: ranges %v not sorted and merged", seed, m, rs)
					}
				}
				if b.Empty(2) {
					continue
				}
				for range 20 {
					p := pointIn(r, b)
					if !b.Contains(p, 2) {
						continue
					}
					if k := m.PointKey(p); !inRanges(k, rs) {
						t.Fatalf("seed %d %T: point %v in box %v has key %#x outside %v", seed, m, p, b, k, rs)
					}
				}
			}
		}
	}
}

// TestKeyMapSoundExhaustive checks soundness over every cell rectangle of
// a small grid and every cell centre, corner and border point in it, for
// the Hilbert mapping at the grid's order with caps 1 to 4 and unbounded,
// and for the other two mappings over the same map.
func TestKeyMapSoundExhaustive(t *testing.T) {
	const order = 3
	n := uint64(1) << order
	var maps []KeyMap
	for _, cap := range []int{1, 2, 3, 4, 1 << 30} {
		m, _ := NewHilbertMap(extentBox(float64(n), float64(n)), order, cap)
		maps = append(maps, m)
	}
	lin, _ := NewLinearMap(extentBox(float64(n), float64(n)))
	reg, _ := NewRegionMap(extentBox(float64(n), float64(n)), 10)
	maps = append(maps, lin, reg)
	for _, m := range maps {
		for x0 := range n {
			for x1 := x0; x1 < n; x1++ {
				for y0 := range n {
					for y1 := y0; y1 < n; y1++ {
						b := world.Box{Min: world.Point{float64(x0), float64(y0)}, Max: world.Point{float64(x1 + 1), float64(y1 + 1)}}
						rs := m.BoxRanges(b, nil)
						for x := x0; x <= x1+1; x++ {
							for y := y0; y <= y1+1; y++ {
								for _, off := range []float64{0, 0.5} {
									p := world.Point{float64(x) + off, float64(y) + off}
									if !b.Contains(p, 2) {
										continue
									}
									if k := m.PointKey(p); !inRanges(k, rs) {
										t.Fatalf("%T: point %v in %v has key %#x outside %v", m, p, b, k, rs)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestKeyMapEdges checks clamping and degenerate input: points and boxes
// beyond the extent, infinite and NaN coordinates.
func TestKeyMapEdges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, m := range testMaps(t, 100, 50, r) {
		nan := world.Box{Min: world.Point{math.NaN(), 0}, Max: world.Point{10, 10}}
		if rs := m.BoxRanges(nan, nil); len(rs) != 0 {
			t.Errorf("%T: NaN box has ranges %v", m, rs)
		}
		empty := world.Box{Min: world.Point{5, 5}, Max: world.Point{4, 6}}
		if rs := m.BoxRanges(empty, nil); len(rs) != 0 {
			t.Errorf("%T: empty box has ranges %v", m, rs)
		}
		all := m.BoxRanges(world.Unbounded(), nil)
		for _, p := range []world.Point{{math.Inf(-1), math.Inf(1)}, {1e300, -1e300}, {-5, 60}, {100, 50}, {0, 0}} {
			if k := m.PointKey(p); !inRanges(k, all) {
				t.Errorf("%T: point %v key %#x outside the unbounded box's %v", m, p, k, all)
			}
		}
		m.PointKey(world.Point{math.NaN(), math.NaN()}) // must not panic
		dst := []KeyRange{{1, 2}}
		if rs := m.BoxRanges(world.Box{Max: world.Point{1, 1}}, dst); rs[0] != (KeyRange{1, 2}) || len(rs) < 2 {
			t.Errorf("%T: BoxRanges did not append to dst: %v", m, rs)
		}
	}
	lin, _ := NewLinearMap(extentBox(100, 50))
	if lin.PointKey(world.Point{0}) != 0 || lin.PointKey(world.Point{100}) != math.MaxUint64 {
		t.Errorf("linear map does not span the circle: %#x..%#x", lin.PointKey(world.Point{0}), lin.PointKey(world.Point{100}))
	}
	if rs := lin.BoxRanges(world.Unbounded(), nil); len(rs) != 1 || rs[0] != (KeyRange{0, math.MaxUint64}) {
		t.Errorf("linear map: unbounded box %v", rs)
	}
	hil, _ := NewHilbertMap(extentBox(100, 50), MaxHilbertOrder, 4)
	if rs := hil.BoxRanges(world.Unbounded(), nil); len(rs) != 1 || rs[0] != (KeyRange{0, math.MaxUint64}) {
		t.Errorf("Hilbert map at order %d: unbounded box %v", MaxHilbertOrder, rs)
	}
	// A large unaligned box at order 31 (2^31 cells a side): bounded work,
	// still sound.
	exact, _ := NewHilbertMap(extentBox(100, 50), MaxHilbertOrder, 1<<30)
	big := world.Box{Min: world.Point{0.123, 0.456}, Max: world.Point{99.87, 49.9}}
	rs := exact.CellRanges(big, nil)
	if len(rs) > 16*hilbertDetail*MaxHilbertOrder {
		t.Errorf("order %d, large box: %d ranges", MaxHilbertOrder, len(rs))
	}
	krs := exact.BoxRanges(big, nil)
	for range 1000 {
		if p := pointIn(r, big); !inRanges(exact.PointKey(p), krs) {
			t.Fatalf("order %d, large box: point %v outside its ranges", MaxHilbertOrder, p)
		}
	}
}

// TestKeyMapConfig rejects bad configurations with an error naming them.
func TestKeyMapConfig(t *testing.T) {
	good := extentBox(100, 100)
	for _, c := range []KeyMapConfig{
		{Kind: "chord", Extent: good},
		{Kind: KeyMapLinear, Extent: world.Box{Max: world.Point{0, 1}}},
		{Kind: KeyMapLinear, Extent: world.Box{Min: world.Point{math.Inf(-1)}, Max: world.Point{1, 1}}},
		{Kind: KeyMapHilbert, Extent: world.Box{Max: world.Point{1, math.NaN()}}},
		{Kind: KeyMapHilbert, Extent: good, Order: 32},
		{Kind: KeyMapHilbert, Extent: good, Order: -1},
		{Kind: KeyMapHilbert, Extent: good, MaxRanges: -3},
		{Kind: KeyMapRegions, Extent: good},
		{Kind: KeyMapRegions, Extent: good, Regions: 1 << 25},
		{Kind: KeyMapLinear, Extent: world.Box{Min: world.Point{-1e308}, Max: world.Point{1e308, 1}}},
		{Kind: KeyMapHilbert, Extent: good, Cell: -1},
		{Kind: KeyMapHilbert, Extent: good, Cell: math.NaN()},
	} {
		if m, err := NewKeyMap(c); err == nil || !errors.Is(err, ErrLocateConfig) || m != nil {
			t.Errorf("%+v: got %v, %v; want ErrLocateConfig", c, m, err)
		}
	}
	for _, c := range []KeyMapConfig{{Kind: KeyMapLinear, Extent: good}, {Kind: KeyMapHilbert, Extent: good},
		{Kind: KeyMapRegions, Extent: good, Regions: 64}} {
		if _, err := NewKeyMap(c); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if m, err := NewKeyMap(KeyMapConfig{Kind: KeyMapHilbert, Extent: extentBox(1024, 512), Cell: 10}); err != nil || m.(*HilbertMap).Order() != 7 {
		t.Errorf("Hilbert map fitted to 10-unit cells on 1024 units: %v, %v; want order 7", m, err)
	}
	reg, _ := NewRegionMap(extentBox(400, 100), 64)
	if c, r := reg.Grid(); c*r < 64 || c != 16 || r != 4 {
		t.Errorf("64 regions on a 4:1 map: grid %d x %d, want 16 x 4", c, r)
	}
}

// TestKeyMapRangeCounts reports how many ranges (ring lookups or range
// forwards) a 40 m × 40 m interest box costs at the model game's density
// (1,024 m² per player), and how much key span the Hilbert cap adds, at
// the default order and at the order HilbertOrderFor fits to 10 m cells.
func TestKeyMapRangeCounts(t *testing.T) {
	for _, players := range []int{64, 1000, 8000} {
		side := math.Sqrt(float64(players) * benchArea)
		r := rand.New(rand.NewPCG(uint64(players), 3))
		maps := map[string]KeyMap{}
		maps["x"], _ = NewLinearMap(extentBox(side, side))
		maps["dht"], _ = NewRegionMap(extentBox(side, side), players)
		for _, c := range []int{1, 4, 8} {
			maps[fmt.Sprintf("hilbert-cap%d", c)], _ = NewHilbertMap(extentBox(side, side), DefaultHilbertOrder, c)
		}
		maps["hilbert-exact"], _ = NewHilbertMap(extentBox(side, side), DefaultHilbertOrder, 1<<30)
		fit := HilbertOrderFor(extentBox(side, side), 2*benchInterest/4)
		maps["fit-cap8"], _ = NewHilbertMap(extentBox(side, side), fit, 8)
		maps["fit-exact"], _ = NewHilbertMap(extentBox(side, side), fit, 1<<30)
		for _, name := range []string{"x", "dht", "hilbert-cap1", "hilbert-cap4", "hilbert-cap8", "hilbert-exact", "fit-cap8", "fit-exact"} {
			m := maps[name]
			var sum, most int
			var span float64
			const boxes = 500
			for range boxes {
				c := world.Point{r.Float64() * side, r.Float64() * side}
				rs := m.BoxRanges(world.BoxAround(c, world.Point{benchInterest, benchInterest}), nil)
				sum += len(rs)
				most = max(most, len(rs))
				for _, k := range rs {
					span += float64(k.Hi-k.Lo) + 1
				}
			}
			t.Logf("%5d players, %5.0f m map, %-13s ranges/box mean %5.2f max %3d, key span %.4f%% of the circle",
				players, side, name, float64(sum)/boxes, most, 100*span/boxes/two64)
		}
	}
}

// TestHilbertOrderFor checks the order chosen for a cell size.
func TestHilbertOrderFor(t *testing.T) {
	for _, c := range []struct {
		side, cell float64
		want       int
	}{{1024, 10, 7}, {1024, 8, 7}, {1024, 7.9, 8}, {1000, 1000, 1}, {1000, 1e-300, MaxHilbertOrder},
		{1000, 0, DefaultHilbertOrder}, {1000, math.NaN(), DefaultHilbertOrder}, {math.Inf(1), 1, DefaultHilbertOrder}} {
		if got := HilbertOrderFor(extentBox(c.side, c.side/2), c.cell); got != c.want {
			t.Errorf("HilbertOrderFor(side %v, cell %v) = %d, want %d", c.side, c.cell, got, c.want)
		}
	}
}
