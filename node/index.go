package node

import (
	"cmp"
	"math"
	mbits "math/bits"
	"slices"

	"github.com/overworld/overworld/internal/locate"

	"github.com/overworld/overworld/world"
)

// The location index. Context.Each must visit the local objects whose
// location lies in a box, in ID order; scanning every object made a frame
// of n thinking objects O(n²). The node keeps every local object in a grid
// (locate.Points) keyed by its location, kept exact as follows:
//
//   - at the start of each Tick's think phase, the objects the store added,
//     removed or changed since the last Tick (received updates and writes,
//     Spawn, Node.Write: replica.Store.Members) are inserted, dropped or
//     re-indexed at their current location;
//   - during a think, the objects it changes — the thinking object, the
//     objects it creates and deletes and those it changes with Write — are
//     "touched": Each checks them at their live location instead of their
//     indexed one, and they are re-indexed when the think returns.
//
// So Each answers exactly what a scan of every object would, as long as a
// think function changes other objects only through Context.Write (as the
// world.Context contract asks, and as arena.Local, the reference Context,
// also assumes). An object changed directly through its State by another
// object's think, or by the driver outside the Node's API, is found at its
// new location after its own next think (a primary) or within fullEvery
// frames (a replica): every fullEvery-th sync also re-indexes every object
// (one pass over the index's dense array).

// syncIndex brings the index up to date with the store: the objects it
// added or removed since the last sync (replicas that arrived or left,
// spawns, handoffs, deletions) are inserted or dropped, and every indexed
// object is moved to its current location (one pass over a dense array).
// It also adapts the cell size to the width of recent frames' Each boxes.
func (n *Node) syncIndex() {
	if n.linear {
		n.store.Members(nil)
		return
	}
	if n.qn > 0 {
		// A moving average over frames: the mix of Each boxes differs from
		// frame to frame (a bot scans every few frames), and a per-frame
		// mean flipped the cell size, re-bucketing the whole index.
		m := n.qsum / float64(n.qn)
		if n.qavg == 0 {
			n.qavg = m
		} else {
			n.qavg += (m - n.qavg) / 16
		}
		n.idx.SetCell(locate.AutoCell(n.qavg, n.idx.Cell()))
		n.qsum, n.qn = 0, 0
	}
	n.applyMembers()
	if n.stats.Ticks%fullEvery == 0 {
		for i := range n.idx.Len() {
			_, loc, v := n.idx.At(i)
			if l := v.obj.State().Location(); l != loc {
				n.idx.MoveAt(i, l)
			}
		}
	}
	n.touched = n.touched[:0]
}

// fullEvery is how often (in frames) syncIndex re-indexes every object,
// not only those the store reports changed: a safety net for game code
// that changes a State outside the API.
const fullEvery = 16

// applyMembers applies the store's record of the objects it added,
// removed and changed, in order, each at the location it had then. It runs
// before the node re-indexes what a think touched, so that a record never
// overrides a newer location.
func (n *Node) applyMembers() {
	n.members = n.store.Members(n.members[:0])
	if n.linear {
		clear(n.members)
		return
	}
	for i := range n.members {
		if c := &n.members[i]; c.Obj != nil {
			n.idx.Set(c.ID, c.Loc, indexed{c.Obj, c.Primary})
		} else {
			n.idx.Delete(c.ID)
		}
	}
	clear(n.members)
}

// reindex puts local object id at its current location, or drops it from
// the index if it is gone.
func (n *Node) reindex(id world.ObjectID) {
	if obj, primary, ok := n.store.Lookup(id); ok {
		n.idx.Set(id, obj.State().Location(), indexed{obj, primary})
	} else {
		n.idx.Delete(id)
	}
}

// touch records that the current think may change object id.
func (n *Node) touch(id world.ObjectID) {
	if n.inThink && !n.linear {
		n.touched = append(n.touched, id)
	}
}

// settle re-indexes the objects the finished think touched.
func (n *Node) settle() {
	n.applyMembers()
	for _, id := range n.touched {
		n.reindex(id)
	}
	n.touched = n.touched[:0]

}

// indexed is what the location index keeps of a local object: the
// object, and whether it is a primary here (fixed while it is held).
type indexed struct {
	obj     world.Object
	primary bool
}

// eachIndexed is Context.Each over the index: the indexed objects in box
// that the current think has not touched, and the touched ones whose live
// location is in box, visited in ID order if they still exist when their
// turn comes (the objects in box when Each is called: what fn changes does
// not change the walk, as in arena.Local, the reference Context). An
// untouched object is read from the index, which holds it as the store
// does, without looking it up in the store (a table probe and its entry's
// line: most objects a bot's scan visits are items and rockets that it
// rejects by type at once); once fn has touched anything, the rest are
// looked up, as fn may have deleted them.
func (n *Node) eachIndexed(box world.Box, fn func(world.Object, bool) bool) {
	if w, ok := boxWidth(&box, n.dims); ok {
		n.qsum += w
		n.qn++
	}
	start := len(n.erefs)
	defer func() { n.erefs = n.erefs[:start] }()
	n.erefs = n.idx.QueryRefs(box, n.erefs)
	if len(n.touched) > 0 {
		t := append(n.tsort[:0], n.touched...)
		slices.Sort(t)
		t = slices.Compact(t)
		n.tsort = t
		kept := n.erefs[:start]
		j := 0
		for _, r := range n.erefs[start:] {
			for j < len(t) && t[j] < r.ID {
				j++
			}
			if j == len(t) || t[j] != r.ID {
				kept = append(kept, r)
			}
		}
		n.erefs = kept
		for _, id := range t {
			if obj, _, ok := n.store.Lookup(id); ok && box.Contains(obj.State().Location(), n.dims) {
				n.erefs = append(n.erefs, locate.PointRef{ID: id, I: -1}) // looked up below
			}
		}
		slices.SortFunc(n.erefs[start:], func(a, b locate.PointRef) int { return cmp.Compare(a.ID, b.ID) })
	}
	refs := n.erefs[start:]
	t0 := len(n.touched)
	for _, r := range refs {
		var obj world.Object
		var primary, ok bool
		if r.I >= 0 && len(n.touched) == t0 {
			_, v := n.idx.ValueAt(r.I)
			obj, primary, ok = v.obj, v.primary, true
		} else {
			obj, primary, ok = n.store.Lookup(r.ID)
		}
		if !ok {
			continue
		}
		if !fn(obj, primary) {
			return
		}
	}
}

// boxWidth returns b's larger extent over the first two dimensions, when
// finite.
func boxWidth(b *world.Box, dims int) (float64, bool) {
	w := b.Max[0] - b.Min[0]
	if dims > 1 {
		w = max(w, b.Max[1]-b.Min[1])
	}
	return w, w >= 0 && w < 1e300
}

// viewIndex holds the frame's view in a grid, so that "is this location
// in the view" (for every discovered object and every replica, each
// frame) costs a cell lookup instead of a scan of the view's boxes: a
// node with many primaries has as many view boxes. A view of at most
// smallView boxes (a server's few players, a peer's one) is scanned
// instead: that is cheaper than hashing a cell, and the grid is not built.
// A scanned view also keeps a coarse map of where its boxes lie (cells):
// a point is tested against the boxes that overlap its cell only, and
// most of the points asked about (discoveries outside the view) against
// none.
type viewIndex struct {
	boxes *locate.Boxes
	small []world.Box // the view, when it has at most smallView boxes
	dims  int
	grid  bool // the view is in boxes

	// The map: maskSide × maskSide cells over lo..lo+maskSide·side of the
	// first two dimensions (one, in a 1-dimensional space); bit i of
	// cells[row·maskSide+col] is set when small[i] overlaps the cell. Off
	// (masked false) when the boxes' extent is not finite.
	masked bool
	lo     [2]float64
	inv    [2]float64 // 1 / cell side
	cells  [maskSide * maskSide]uint16
}

// smallView is the most boxes a view may have to be scanned (at most 16:
// the bits of a cell of the map).
const smallView = 16

// maskSide is the side of a small view's mask, in cells.
const maskSide = 16

func (v *viewIndex) build(view []world.Box, linear bool) {
	v.small = v.small[:0]
	v.masked = false
	if v.grid {
		v.boxes.Reset()
		v.grid = false
	}
	if linear {
		return
	}
	if len(view) <= smallView {
		v.small = append(v.small, view...)
		v.buildMask()
		return
	}
	v.grid = true
	for _, b := range view {
		v.boxes.Add(0, b)
	}
	if c := locate.AutoCell(v.boxes.MeanWidth(), v.boxes.Cell()); c != v.boxes.Cell() {
		v.boxes.SetCell(c)
	}
}

// buildMask maps where small's boxes lie. A point maps to the cell
// floor((p - lo) · inv) in each mapped dimension (clamped to the map): as
// that is monotonic in p, a box's points map to cells between those of its
// corners, which the box marks; so a box that does not mark a point's
// cell does not hold the point.
func (v *viewIndex) buildMask() {
	clear(v.cells[:])
	if len(v.small) == 0 {
		v.masked = true // nothing is in the view
		return
	}
	md := min(v.dims, 2)
	var hi [2]float64
	for d := range md {
		v.lo[d], hi[d] = math.Inf(1), math.Inf(-1)
		for i := range v.small {
			b := &v.small[i]
			if b.Min[d] > b.Max[d] || math.IsNaN(b.Min[d]) || math.IsNaN(b.Max[d]) {
				continue // contains nothing
			}
			v.lo[d] = min(v.lo[d], b.Min[d])
			hi[d] = max(hi[d], b.Max[d])
		}
		w := hi[d] - v.lo[d]
		if math.IsInf(v.lo[d], 0) || math.IsInf(hi[d], 0) || math.IsNaN(w) {
			if v.lo[d] > hi[d] { // every box is empty
				v.masked = true
				return
			}
			return // unbounded: scan
		}
		v.inv[d] = 0
		if w > 0 {
			v.inv[d] = maskSide / w
		}
	}
	for i := range v.small {
		b := &v.small[i]
		bit := uint16(1) << i
		var c0, c1 [2]int
		empty := false
		for d := range md {
			if !(b.Min[d] <= b.Max[d]) {
				empty = true
				break
			}
			c0[d], c1[d] = v.cell(d, b.Min[d]), v.cell(d, b.Max[d])
		}
		if empty {
			continue
		}
		for r := c0[1]; r <= c1[1]; r++ {
			for c := c0[0]; c <= c1[0]; c++ {
				v.cells[r*maskSide+c] |= bit
			}
		}
	}
	v.masked = true
}

// cell returns the mask column (d = 0) or row (d = 1) of coordinate x.
func (v *viewIndex) cell(d int, x float64) int {
	f := (x - v.lo[d]) * v.inv[d]
	switch {
	case !(f >= 0): // below, or NaN
		return 0
	case f >= maskSide-1:
		return maskSide - 1
	}
	return int(f)
}

// Contains reports whether p lies in the view (replica.View).
func (v *viewIndex) Contains(p world.Point) bool {
	if v.grid {
		return v.boxes.Any(p)
	}
	if v.masked {
		var c [2]int
		for d := range min(v.dims, 2) {
			c[d] = v.cell(d, p[d])
		}
		for bits := v.cells[c[1]*maskSide+c[0]]; bits != 0; bits &= bits - 1 {
			if v.small[mbits.TrailingZeros16(bits)].Contains(p, v.dims) {
				return true
			}
		}
		return false
	}
	for i := range v.small {
		if v.small[i].Contains(p, v.dims) {
			return true
		}
	}
	return false
}
