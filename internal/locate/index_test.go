package locate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// randCoord returns a coordinate that is often on a cell border (a
// multiple of cell), sometimes far away, infinite or NaN.
func randCoord(r *rand.Rand, cell float64, wild bool) float64 {
	switch k := r.IntN(20); {
	case k < 6:
		return float64(r.IntN(21)-10) * cell // on a border
	case k < 8:
		return float64(r.IntN(21)-10)*cell + cell*0.5
	case wild && k == 8:
		return math.Inf(2*r.IntN(2) - 1)
	case wild && k == 9:
		return math.NaN()
	case k == 10:
		return (r.Float64() - 0.5) * 1e12
	}
	return (r.Float64() - 0.5) * 20 * cell
}

func randPoint(r *rand.Rand, cell float64, wild bool) world.Point {
	var p world.Point
	for d := range world.MaxDims {
		p[d] = randCoord(r, cell, wild)
	}
	return p
}

// randBox returns boxes of every shape: small, degenerate (a point or a
// line), empty, huge, unbounded in some dimensions, with NaN bounds.
func randBox(r *rand.Rand, cell float64) world.Box {
	var b world.Box
	for d := range world.MaxDims {
		lo := randCoord(r, cell, false)
		switch k := r.IntN(12); {
		case k < 5:
			b.Min[d], b.Max[d] = lo, lo+float64(r.IntN(4))*cell*0.5
		case k == 5:
			b.Min[d], b.Max[d] = lo, lo // degenerate
		case k == 6:
			b.Min[d], b.Max[d] = math.Inf(-1), math.Inf(1)
		case k == 7:
			b.Min[d], b.Max[d] = math.Inf(-1), lo
		case k == 8:
			b.Min[d], b.Max[d] = lo, lo-cell // empty
		case k == 9:
			b.Min[d], b.Max[d] = -1e15, 1e15
		case k == 10 && r.IntN(4) == 0:
			b.Min[d], b.Max[d] = math.NaN(), lo
		default:
			b.Min[d], b.Max[d] = lo, lo+r.Float64()*5*cell
		}
	}
	return b
}

// TestPointsMatchScan applies random inserts, moves, deletes and cell
// changes to a Points index and checks every query against a scan.
func TestPointsMatchScan(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 7))
		dims := 1 + r.IntN(world.MaxDims)
		cell := []float64{1, 4, 0.25, 16}[r.IntN(4)]
		x := NewPoints[int](dims, cell)
		ref := map[world.ObjectID]world.Point{}
		for step := range 400 {
			id := world.ObjectID(1 + r.IntN(60))
			switch k := r.IntN(10); {
			case k < 4:
				p := randPoint(r, cell, true)
				x.Set(id, p, step)
				ref[id] = p
			case k < 6:
				p := randPoint(r, cell, true)
				_, had := ref[id]
				if x.Move(id, p) != had {
					t.Fatalf("seed %d step %d: Move(%v) reported %v, indexed %v", seed, step, id, !had, had)
				}
				if had {
					ref[id] = p
				}
			case k < 8:
				_, had := ref[id]
				if x.Delete(id) != had {
					t.Fatalf("seed %d step %d: Delete(%v) disagrees with the reference", seed, step, id)
				}
				delete(ref, id)
			case k == 8:
				x.SetCell([]float64{1, 4, 0.25, 16, 3}[r.IntN(5)])
			}
			if x.Len() != len(ref) {
				t.Fatalf("seed %d step %d: Len %d, reference %d", seed, step, x.Len(), len(ref))
			}
			for range 3 {
				b := randBox(r, cell)
				got := x.Query(b, nil)
				var want []world.ObjectID
				for id, p := range ref {
					if b.Contains(p, dims) {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d (dims %d, cell %g): query %+v gave %v, scan %v", seed, step, dims, x.Cell(), b, got, want)
				}
				// QueryRefs: the same IDs, each with its position.
				refs := x.QueryRefs(b, nil)
				if len(refs) != len(want) {
					t.Fatalf("seed %d step %d: QueryRefs found %d points, Query %d", seed, step, len(refs), len(want))
				}
				for k, rf := range refs {
					id, loc, _ := x.At(int(rf.I))
					vloc, _ := x.ValueAt(rf.I)
					if rf.ID != want[k] || id != rf.ID || !samePoint(vloc, loc) {
						t.Fatalf("seed %d step %d: QueryRefs %d is %+v, point there %v, want %v", seed, step, k, rf, id, want[k])
					}
				}
			}
			if err := pointsCellsOK(x); err != "" {
				t.Fatalf("seed %d step %d: %s", seed, step, err)
			}
			for id, p := range ref {
				got, v, ok := x.Get(id)
				vloc, vp, vok := x.Value(id)
				if !ok || !samePoint(got, p) || !vok || !samePoint(vloc, got) || *vp != v {
					t.Fatalf("seed %d step %d: Get(%v) = %v %v, Value %v %v, want %v", seed, step, id, got, ok, vloc, vok, p)
				}
			}
			if _, vp, ok := x.Value(world.ObjectID(1 << 60)); ok || vp != nil {
				t.Fatalf("seed %d step %d: Value of an absent ID", seed, step)
			}
		}
	}
}

// TestBoxesMatchScan applies random adds, removals, resets and cell
// changes to a Boxes index and checks every point query against a scan.
func TestBoxesMatchScan(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 60
	}
	type ownedBox struct {
		owner wire.NodeID
		b     world.Box
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 8))
		dims := 1 + r.IntN(world.MaxDims)
		cell := []float64{1, 4, 0.25, 16}[r.IntN(4)]
		x := NewBoxes(dims, cell)
		var ref []ownedBox
		for step := range 300 {
			owner := wire.NodeID(1 + r.IntN(12))
			switch k := r.IntN(20); {
			case k < 10:
				b := randBox(r, cell)
				x.Add(owner, b)
				ref = append(ref, ownedBox{owner, b})
			case k < 15:
				x.Remove(owner)
				ref = slices.DeleteFunc(ref, func(o ownedBox) bool { return o.owner == owner })
			case k == 15:
				x.SetCell([]float64{1, 4, 0.25, 16, 3}[r.IntN(5)])
			case k == 16 && r.IntN(2) == 0:
				x.Reset()
				ref = ref[:0]
			case k >= 17:
				// Replace with a mix of the owner's boxes (some kept,
				// some listed twice, shuffled) and new ones.
				var boxes []world.Box
				for _, o := range ref {
					if o.owner == owner && r.IntN(3) > 0 {
						b := o.b
						if r.IntN(3) == 0 {
							// Moved a little: often within the same cells.
							for d := range dims {
								s := (r.Float64() - 0.5) * cell / 4
								b.Min[d] += s
								b.Max[d] += s
							}
						}
						boxes = append(boxes, b)
						if r.IntN(5) == 0 {
							boxes = append(boxes, o.b)
						}
					}
				}
				for range r.IntN(4) {
					boxes = append(boxes, randBox(r, cell))
				}
				r.Shuffle(len(boxes), func(i, j int) { boxes[i], boxes[j] = boxes[j], boxes[i] })
				x.Replace(owner, boxes)
				ref = slices.DeleteFunc(ref, func(o ownedBox) bool { return o.owner == owner })
				for _, b := range boxes {
					ref = append(ref, ownedBox{owner, b})
				}
			}
			if err := boxesCellsOK(x); err != "" {
				t.Fatalf("seed %d step %d: %s", seed, step, err)
			}
			if x.Len() != len(ref) {
				t.Fatalf("seed %d step %d: Len %d, reference %d", seed, step, x.Len(), len(ref))
			}
			for range 4 {
				p := randPoint(r, cell, true)
				got := x.Owners(p, nil)
				var want []wire.NodeID
				for _, o := range ref {
					if o.b.Contains(p, dims) {
						want = append(want, o.owner)
					}
				}
				slices.Sort(want)
				want = slices.Compact(want)
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d (dims %d, cell %g): owners at %v: %v, scan %v", seed, step, dims, x.Cell(), p, got, want)
				}
				if x.Any(p) != (len(want) > 0) {
					t.Fatalf("seed %d step %d: Any(%v) = %v, scan found %v", seed, step, p, x.Any(p), want)
				}
				q := randBox(r, cell)
				cov := false
				for _, o := range ref {
					cov = cov || o.b.Covers(q, dims)
				}
				if x.Covers(q) != cov {
					t.Fatalf("seed %d step %d (dims %d): Covers(%+v) = %v, scan %v", seed, step, dims, q, !cov, cov)
				}
				want = want[:0]
				for _, o := range ref {
					if o.b.Validate(dims) == nil && !o.b.Empty(dims) && q.Validate(dims) == nil && !q.Empty(dims) && o.b.Intersects(q, dims) {
						want = append(want, o.owner)
					}
				}
				slices.Sort(want)
				want = slices.Compact(want)
				if got := x.Meeting(q, nil); !slices.Equal(got, want) {
					t.Fatalf("seed %d step %d (dims %d, cell %g): meeting %+v: %v, scan %v", seed, step, dims, x.Cell(), q, got, want)
				}
			}
		}
	}
}

// TestAutoCell checks the cell-size rule.
func TestAutoCell(t *testing.T) {
	for _, c := range []struct{ mean, cur, want float64 }{
		{40, 16, 40}, {20, 16, 16}, {8, 16, 16}, {7, 16, 7}, {33, 16, 33}, {0, 16, 16}, {math.NaN(), 16, 16},
		{math.Inf(1), 16, 16}, {-3, 16, 16}, {1e-12, 16, 1e-6}, {5, 0, 5},
	} {
		if got := AutoCell(c.mean, c.cur); got != c.want {
			t.Errorf("AutoCell(%g, %g) = %g, want %g", c.mean, c.cur, got, c.want)
		}
	}
}

// samePoint compares points bit for bit (NaN equals NaN).
func samePoint(a, b world.Point) bool {
	for d := range a {
		if math.Float64bits(a[d]) != math.Float64bits(b[d]) {
			return false
		}
	}
	return true
}

// pointsCellsOK checks a Points index's cells against its points: each
// point is listed once, where its key and position say, with its location
// and ID, and no cell is held with an empty list.
func pointsCellsOK[V any](x *Points[V]) string {
	listed := 0
	for j := range x.cells.slots {
		s := &x.cells.slots[j]
		if s.l == nil {
			continue
		}
		if len(s.l) == 0 {
			return fmt.Sprintf("cell %v held with an empty list", s.key)
		}
		listed += len(s.l)
		for p, c := range s.l {
			e := &x.ents[c.ent]
			if e.key != s.key || int(e.pos) != p || e.id != c.id || !samePoint(e.loc, c.loc) {
				return fmt.Sprintf("cell %v lists %+v at %d, the point is %+v", s.key, c, p, *e)
			}
		}
	}
	if listed != len(x.ents) {
		return fmt.Sprintf("%d points listed, %d indexed", listed, len(x.ents))
	}
	for i := range x.ents {
		e := &x.ents[i]
		if k := pointCell(&e.loc, x.dims, x.cell); k != e.key {
			return fmt.Sprintf("point %v in cell %v, belongs in %v", e.id, e.key, k)
		}
		if l := x.cells.get(e.key); int(e.pos) >= len(l) || l[e.pos].ent != int32(i) {
			return fmt.Sprintf("point %v not found in its cell %v", e.id, e.key)
		}
	}
	return ""
}

// boxesCellsOK checks a Boxes index's cells against its boxes: each box
// listed in cells is in each cell of its range once, and in no other.
func boxesCellsOK(x *Boxes) string {
	want := map[cellKey]map[int32]bool{}
	for i := range x.ents {
		e := &x.ents[i]
		if !e.live || !e.cells {
			continue
		}
		for cy := int64(e.lo.y); cy <= int64(e.hi.y); cy++ {
			for cx := int64(e.lo.x); cx <= int64(e.hi.x); cx++ {
				k := cellKey{int32(cx), int32(cy)}
				if want[k] == nil {
					want[k] = map[int32]bool{}
				}
				want[k][int32(i)] = true
			}
		}
	}
	for j := range x.cells.slots {
		s := &x.cells.slots[j]
		if s.l == nil {
			continue
		}
		if len(s.l) != len(want[s.key]) {
			return fmt.Sprintf("cell %v lists %v, want %v", s.key, s.l, want[s.key])
		}
		for _, i := range s.l {
			if !want[s.key][i] {
				return fmt.Sprintf("cell %v lists box %d, outside it", s.key, i)
			}
		}
		delete(want, s.key)
	}
	if len(want) > 0 {
		return fmt.Sprintf("cells %v not held", want)
	}
	return ""
}
