package locate

import (
	"cmp"
	"math"
	"slices"

	"github.com/overworld/overworld/internal/idtab"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Spatial indexes: uniform grids (bucket hashes) over the first two
// dimensions of a space, so that "which points lie in this box" and "which
// boxes contain this point" cost the size of the neighbourhood instead of
// the size of the world. They answer exactly what a linear scan with
// world.Box.Contains answers, in a deterministic order (by ID, by owner);
// the grid only narrows the candidates, every candidate is checked with
// Contains over all the index's dimensions.
//
// Cells are square, of side Cell; a coordinate v lies in cell
// floor(v/Cell), clamped to the int32 range (so infinite bounds and huge
// coordinates still map to a cell, and the mapping stays monotone). NaN
// coordinates lie in cell 0: no box contains them. AutoCell chooses a side
// from the typical box width, and SetCell re-buckets an index.

// DefaultCell is the cell side an index starts with until its owner
// chooses one (16 units: 16 m in the model game, half its interest box).
const DefaultCell = 16.0

// maxBoxCells: a box spanning more cells than this is kept in a list of
// wide boxes that every point query checks, instead of in every cell.
const maxBoxCells = 64

type cellKey struct{ x, y int32 }

func cellCoord(v, cell float64) int32 {
	c := math.Floor(v / cell)
	switch {
	case c != c: // NaN
		return 0
	case c <= math.MinInt32:
		return math.MinInt32
	case c >= math.MaxInt32:
		return math.MaxInt32
	}
	return int32(c)
}

// cellRange returns the cells box b spans in the first dims dimensions
// (row 0 only, for a one-dimensional space), the number
// of cells, and false when b can contain no point (empty, or a NaN bound).
func cellRange(b *world.Box, dims int, cell float64) (lo, hi cellKey, n float64, ok bool) {
	if b.Validate(dims) != nil || b.Empty(dims) {
		return lo, hi, 0, false
	}
	lo.x, hi.x = cellCoord(b.Min[0], cell), cellCoord(b.Max[0], cell)
	if dims > 1 { // else every point lies in cell row 0
		lo.y, hi.y = cellCoord(b.Min[1], cell), cellCoord(b.Max[1], cell)
	}
	n = (float64(hi.x) - float64(lo.x) + 1) * (float64(hi.y) - float64(lo.y) + 1)
	return lo, hi, n, true
}

func pointCell(p *world.Point, dims int, cell float64) cellKey {
	k := cellKey{x: cellCoord(p[0], cell)}
	if dims > 1 {
		k.y = cellCoord(p[1], cell)
	}
	return k
}

// AutoCell returns the cell side for boxes of mean width mean (the mean,
// over boxes with finite bounds, of their larger extent in the first two
// dimensions) given the current side cur: cur while mean is within a
// factor of two of it, else mean (at least 1e-6). A side close to the
// typical box makes a box span about 2 × 2 cells.
func AutoCell(mean, cur float64) float64 {
	if !(mean > 0) || math.IsInf(mean, 0) {
		return cur
	}
	mean = max(mean, 1e-6)
	if cur > 0 && mean <= 2*cur && mean >= cur/2 {
		return cur
	}
	return mean
}

// boxWidth returns b's larger extent in the first two of dims dimensions,
// or false when it is not finite and positive-or-zero.
func boxWidth(b *world.Box, dims int) (float64, bool) {
	w := b.Max[0] - b.Min[0]
	if dims > 1 {
		w = max(w, b.Max[1]-b.Min[1])
	}
	return w, w >= 0 && !math.IsInf(w, 0)
}

type pointEnt[V any] struct {
	id  world.ObjectID
	loc world.Point
	key cellKey
	pos int32 // position in its cell's list
	val V
}

// cellEnt is a point as its cell lists it: the location is copied here so
// that a query reads each cell's points from one contiguous list.
type cellEnt struct {
	loc world.Point
	id  world.ObjectID
	ent int32 // index into ents
}

// Points indexes points keyed by object ID, each with a value V. The zero
// value is not usable; build it with NewPoints. It is not safe for
// concurrent use.
type Points[V any] struct {
	dims  int
	cell  float64
	ents  []pointEnt[V]      // dense; order changes on Delete
	byID  idtab.Table[int32] // position in ents + 1
	cells cellTab[cellEnt]   // no empty lists
	spare [][]cellEnt
}

// NewPoints returns an empty index of points of a dims-dimensional space
// (1 to world.MaxDims) with cells of side cell (> 0; DefaultCell if not).
func NewPoints[V any](dims int, cell float64) *Points[V] {
	if !(cell > 0) || math.IsInf(cell, 0) {
		cell = DefaultCell
	}
	return &Points[V]{dims: min(max(dims, 1), world.MaxDims), cell: cell}
}

// Dims returns the dimensions the index compares.
func (x *Points[V]) Dims() int { return x.dims }

// Cell returns the side of the cells.
func (x *Points[V]) Cell() float64 { return x.cell }

// Len returns the number of points.
func (x *Points[V]) Len() int { return len(x.ents) }

// At returns the i-th point (0 <= i < Len) in the index's internal order,
// which Set of a new ID and Delete change.
func (x *Points[V]) At(i int) (id world.ObjectID, loc world.Point, v V) {
	e := &x.ents[i]
	return e.id, e.loc, e.val
}

// pos returns id's position in ents.
func (x *Points[V]) pos(id world.ObjectID) (int32, bool) {
	p := x.byID.Get(id)
	return p - 1, p != 0
}

// Get returns the location and value of id.
func (x *Points[V]) Get(id world.ObjectID) (loc world.Point, v V, ok bool) {
	i, ok := x.pos(id)
	if !ok {
		return loc, v, false
	}
	return x.ents[i].loc, x.ents[i].val, true
}

// Value returns id's location and a pointer to its value, which the
// caller may change in place (not the location: Move does that); the
// pointer is valid until the next Set of a new ID or Delete. It reads only
// the value's lines that the caller touches, where Get copies it whole.
func (x *Points[V]) Value(id world.ObjectID) (loc world.Point, v *V, ok bool) {
	i, ok := x.pos(id)
	if !ok {
		return loc, nil, false
	}
	e := &x.ents[i]
	return e.loc, &e.val, true
}

// PointRef names a point found by QueryRefs: its ID and its position in
// the internal order (At's i).
type PointRef struct {
	ID world.ObjectID
	I  int32
}

// ValueAt returns the location of the i-th point of the internal order
// and a pointer to its value (as Value).
func (x *Points[V]) ValueAt(i int32) (loc world.Point, v *V) {
	e := &x.ents[i]
	return e.loc, &e.val
}

// QueryRefs is Query with each point's position beside its ID (sorted by
// ID), so that the caller reads the points with ValueAt instead of looking
// each ID up again.
func (x *Points[V]) QueryRefs(box world.Box, dst []PointRef) []PointRef {
	start := len(dst)
	x.inBox(&box, func(id world.ObjectID, i int32, _ *world.Point) { dst = append(dst, PointRef{id, i}) })
	slices.SortFunc(dst[start:], cmpPointRef)
	return dst
}

func cmpPointRef(a, b PointRef) int { return cmp.Compare(a.ID, b.ID) }

// Set inserts id at loc with value v, or moves it there and replaces its
// value.
func (x *Points[V]) Set(id world.ObjectID, loc world.Point, v V) {
	if i, ok := x.pos(id); ok {
		x.ents[i].val = v
		x.move(i, loc)
		return
	}
	i := int32(len(x.ents))
	x.ents = append(x.ents, pointEnt[V]{id: id, loc: loc, val: v})
	x.byID.Put(id, i+1)
	x.link(i, pointCell(&loc, x.dims, x.cell))
}

// Move moves id to loc (keeping its value) and reports whether id is
// indexed.
func (x *Points[V]) Move(id world.ObjectID, loc world.Point) bool {
	i, ok := x.pos(id)
	if ok {
		x.move(i, loc)
	}
	return ok
}

func (x *Points[V]) move(i int32, loc world.Point) {
	e := &x.ents[i]
	if e.loc == loc {
		return
	}
	e.loc = loc
	if k := pointCell(&loc, x.dims, x.cell); k != e.key {
		x.unlink(i)
		x.link(i, k)
	} else {
		x.cells.get(k)[e.pos].loc = loc
	}
}

// MoveAt moves the i-th point of the internal order (0 <= i < Len) to
// loc; it does not change the internal order.
func (x *Points[V]) MoveAt(i int, loc world.Point) { x.move(int32(i), loc) }

// Delete removes id and reports whether it was indexed. The last point of
// the internal order takes its place.
func (x *Points[V]) Delete(id world.ObjectID) bool {
	i, ok := x.pos(id)
	if !ok {
		return false
	}
	x.unlink(i)
	x.byID.Delete(id)
	last := int32(len(x.ents) - 1)
	if i != last {
		x.ents[i] = x.ents[last]
		e := &x.ents[i]
		x.byID.Put(e.id, i+1)
		x.cells.get(e.key)[e.pos].ent = i
	}
	x.ents[last] = pointEnt[V]{}
	x.ents = x.ents[:last]
	return true
}

func (x *Points[V]) link(i int32, k cellKey) {
	s := x.cells.ref(k)
	if s.l == nil {
		if n := len(x.spare); n > 0 {
			s.l, x.spare = x.spare[n-1], x.spare[:n-1]
		}
	}
	e := &x.ents[i]
	e.key, e.pos = k, int32(len(s.l))
	s.l = append(s.l, cellEnt{loc: e.loc, id: e.id, ent: i})
}

func (x *Points[V]) unlink(i int32) {
	e := &x.ents[i]
	c := x.cells.find(e.key)
	s := &x.cells.slots[c]
	l := s.l
	last := l[len(l)-1]
	l[e.pos] = last
	x.ents[last.ent].pos = e.pos
	l = l[:len(l)-1]
	if len(l) == 0 {
		x.spare = append(x.spare, l)
		x.cells.delAt(c)
	} else {
		s.l = l
	}
}

// SetCell re-buckets the index with cells of side cell (ignored unless
// finite and positive).
func (x *Points[V]) SetCell(cell float64) {
	if !(cell > 0) || math.IsInf(cell, 0) || cell == x.cell {
		return
	}
	x.cell = cell
	x.spareAll()
	for i := range x.ents {
		x.link(int32(i), pointCell(&x.ents[i].loc, x.dims, cell))
	}
}

// spareAll empties the cells, keeping their lists for the next links.
func (x *Points[V]) spareAll() {
	for j := range x.cells.slots {
		if l := x.cells.slots[j].l; l != nil {
			x.spare = append(x.spare, l[:0])
		}
	}
	x.cells.clear()
}

// Query appends to dst the IDs of the points that box contains (in the
// index's dimensions), in increasing order.
func (x *Points[V]) Query(box world.Box, dst []world.ObjectID) []world.ObjectID {
	start := len(dst)
	x.inBox(&box, func(id world.ObjectID, _ int32, _ *world.Point) { dst = append(dst, id) })
	slices.Sort(dst[start:])
	return dst
}

// inBox calls f with the ID, position and location of every point box
// contains, in no particular order.
func (x *Points[V]) inBox(box *world.Box, f func(id world.ObjectID, i int32, loc *world.Point)) {
	lo, hi, n, ok := cellRange(box, x.dims, x.cell)
	if !ok {
		return
	}
	if n > float64(x.cells.len()) {
		// The box spans more cells than are occupied: scan the points.
		for i := range x.ents {
			if box.Contains(x.ents[i].loc, x.dims) {
				f(x.ents[i].id, int32(i), &x.ents[i].loc)
			}
		}
		return
	}
	for cy := int64(lo.y); cy <= int64(hi.y); cy++ {
		for cx := int64(lo.x); cx <= int64(hi.x); cx++ {
			l := x.cells.get(cellKey{int32(cx), int32(cy)})
			for j := range l {
				if box.Contains(l[j].loc, x.dims) {
					f(l[j].id, l[j].ent, &l[j].loc)
				}
			}
		}
	}
}

// boxEnt is one indexed box; free slots have owner 0 and live false.
type boxEnt struct {
	owner wire.NodeID
	box   world.Box
	lo    cellKey
	hi    cellKey
	live  bool
	wide  bool
	cells bool // listed in cells (else: contains nothing, or wide)
}

// Boxes indexes boxes, each belonging to an owner node (an owner may have
// many), to answer which owners have a box containing a point. The zero
// value is not usable; build it with NewBoxes. It is not safe for
// concurrent use.
type Boxes struct {
	dims   int
	cell   float64
	ents   []boxEnt
	free   []int32
	owners map[wire.NodeID][]int32 // box slots of each owner (may be empty)
	cells  cellTab[int32]          // may hold empty lists after Reset
	wide   []int32
	spare  [][]int32
	gone   []cellKey // Reset's scratch
	used   []bool    // Replace's scratch
	moved  []int32   // Replace's scratch
	hits   []wire.NodeID
	sum    float64 // of finite widths, for MeanWidth
	nsum   int
}

// NewBoxes returns an empty index of boxes over a dims-dimensional space
// (1 to world.MaxDims) with cells of side cell (> 0; DefaultCell if not).
func NewBoxes(dims int, cell float64) *Boxes {
	if !(cell > 0) || math.IsInf(cell, 0) {
		cell = DefaultCell
	}
	return &Boxes{dims: min(max(dims, 1), world.MaxDims), cell: cell,
		owners: map[wire.NodeID][]int32{}}
}

// Dims returns the dimensions the index compares.
func (x *Boxes) Dims() int { return x.dims }

// Cell returns the side of the cells.
func (x *Boxes) Cell() float64 { return x.cell }

// Len returns the number of boxes.
func (x *Boxes) Len() int { return len(x.ents) - len(x.free) }

// MeanWidth returns the mean larger extent (first two dimensions) of the
// boxes with finite bounds, or 0 when there are none.
func (x *Boxes) MeanWidth() float64 {
	if x.nsum == 0 {
		return 0
	}
	return x.sum / float64(x.nsum)
}

// Add indexes box b of owner.
func (x *Boxes) Add(owner wire.NodeID, b world.Box) {
	var i int32
	if n := len(x.free); n > 0 {
		i, x.free = x.free[n-1], x.free[:n-1]
	} else {
		i = int32(len(x.ents))
		x.ents = append(x.ents, boxEnt{})
	}
	x.ents[i] = boxEnt{owner: owner, box: b, live: true}
	x.owners[owner] = append(x.owners[owner], i)
	if w, ok := boxWidth(&b, x.dims); ok {
		x.sum += w
		x.nsum++
	}
	x.place(i)
}

func (x *Boxes) place(i int32) {
	e := &x.ents[i]
	lo, hi, n, ok := cellRange(&e.box, x.dims, x.cell)
	e.wide, e.cells = false, false
	switch {
	case !ok:
	case n > maxBoxCells:
		e.wide = true
		x.wide = append(x.wide, i)
	default:
		e.cells, e.lo, e.hi = true, lo, hi
		for cy := lo.y; ; cy++ {
			for cx := lo.x; ; cx++ {
				s := x.cells.ref(cellKey{cx, cy})
				if s.l == nil {
					if m := len(x.spare); m > 0 {
						s.l, x.spare = x.spare[m-1], x.spare[:m-1]
					}
				}
				s.l = append(s.l, i)
				if cx == hi.x {
					break
				}
			}
			if cy == hi.y {
				break
			}
		}
	}
}

func (x *Boxes) unplace(i int32) {
	e := &x.ents[i]
	if e.wide {
		x.wide = deleteSlot(x.wide, i)
	}
	if !e.cells {
		return
	}
	for cy := e.lo.y; ; cy++ {
		for cx := e.lo.x; ; cx++ {
			c := x.cells.find(cellKey{cx, cy})
			s := &x.cells.slots[c]
			if l := deleteSlot(s.l, i); len(l) == 0 {
				x.spare = append(x.spare, l)
				x.cells.delAt(c)
			} else {
				s.l = l
			}
			if cx == e.hi.x {
				break
			}
		}
		if cy == e.hi.y {
			break
		}
	}
}

func deleteSlot(l []int32, i int32) []int32 {
	for j, v := range l {
		if v == i {
			l[j] = l[len(l)-1]
			return l[:len(l)-1]
		}
	}
	return l
}

// Remove removes every box of owner.
func (x *Boxes) Remove(owner wire.NodeID) {
	slots := x.owners[owner]
	for _, i := range slots {
		x.drop(i)
	}
	x.owners[owner] = slots[:0] // kept for the owner's next boxes
	if x.nsum == 0 {
		x.sum = 0 // no drift
	}
}

// drop removes the box in slot i from the cells and frees the slot (not
// from its owner's list).
func (x *Boxes) drop(i int32) {
	x.unplace(i)
	if w, ok := boxWidth(&x.ents[i].box, x.dims); ok {
		x.sum -= w
		x.nsum--
	}
	x.ents[i] = boxEnt{}
	x.free = append(x.free, i)
}

// Replace makes owner's boxes exactly boxes (as Remove and then Add of each
// would): a box owner has that boxes lists too (equal bounds, once per
// listing) stays where it is, the others are removed and the rest of boxes
// are added, so that a subscription whose boxes mostly stay costs only the
// boxes that changed.
func (x *Boxes) Replace(owner wire.NodeID, boxes []world.Box) {
	slots := x.owners[owner]
	used := x.used[:0]
	for range boxes {
		used = append(used, false)
	}
	x.used = used
	kept := slots[:0] // written behind the walk
	gone := x.moved[:0]
	for _, i := range slots {
		b := &x.ents[i].box
		j := 0
		for ; j < len(boxes); j++ {
			if !used[j] && boxes[j] == *b {
				break
			}
		}
		if j < len(boxes) {
			used[j] = true
			kept = append(kept, i)
		} else {
			gone = append(gone, i) // moved or removed below
		}
	}
	// A moved box that spans the same cells as a removed one takes its
	// slot: only the bounds change, the cell lists stay.
	for _, i := range gone {
		e := &x.ents[i]
		if e.cells {
			j := 0
			for ; j < len(boxes); j++ {
				if !used[j] {
					lo, hi, n, ok := cellRange(&boxes[j], x.dims, x.cell)
					if ok && n <= maxBoxCells && lo == e.lo && hi == e.hi {
						break
					}
				}
			}
			if j < len(boxes) {
				used[j] = true
				if w, ok := boxWidth(&e.box, x.dims); ok {
					x.sum -= w
					x.nsum--
				}
				e.box = boxes[j]
				if w, ok := boxWidth(&e.box, x.dims); ok {
					x.sum += w
					x.nsum++
				}
				kept = append(kept, i)
				continue
			}
		}
		x.drop(i)
	}
	x.moved = gone[:0]
	if slots != nil || len(boxes) > 0 {
		x.owners[owner] = kept
	}
	for j := range boxes {
		if !used[j] {
			x.Add(owner, boxes[j])
		}
	}
	if x.nsum == 0 {
		x.sum = 0 // no drift
	}
}

// Reset removes every box, keeping the memory: a cell keeps its list
// (empty) for the next boxes, unless it was already empty.
func (x *Boxes) Reset() {
	x.gone = x.gone[:0]
	for j := range x.cells.slots {
		s := &x.cells.slots[j]
		switch {
		case s.l == nil:
		case len(s.l) == 0:
			x.gone = append(x.gone, s.key)
		default:
			s.l = s.l[:0]
		}
	}
	for _, k := range x.gone { // after the walk: a deletion moves slots
		c := x.cells.find(k)
		x.spare = append(x.spare, x.cells.slots[c].l)
		x.cells.delAt(c)
	}
	for o, l := range x.owners {
		if len(l) == 0 {
			delete(x.owners, o) // idle since the last Reset
		} else {
			x.owners[o] = l[:0]
		}
	}
	x.ents, x.free, x.wide = x.ents[:0], x.free[:0], x.wide[:0]
	x.sum, x.nsum = 0, 0
}

// SetCell re-buckets the index with cells of side cell (ignored unless
// finite and positive).
func (x *Boxes) SetCell(cell float64) {
	if !(cell > 0) || math.IsInf(cell, 0) || cell == x.cell {
		return
	}
	x.cell = cell
	for j := range x.cells.slots {
		if l := x.cells.slots[j].l; l != nil {
			x.spare = append(x.spare, l[:0])
		}
	}
	x.cells.clear()
	x.wide = x.wide[:0]
	for i := range x.ents {
		if x.ents[i].live {
			x.place(int32(i))
		}
	}
}

// Any reports whether a box contains p (in the index's dimensions).
func (x *Boxes) Any(p world.Point) bool {
	for _, i := range x.cells.get(pointCell(&p, x.dims, x.cell)) {
		if x.ents[i].box.Contains(p, x.dims) {
			return true
		}
	}
	for _, i := range x.wide {
		if x.ents[i].box.Contains(p, x.dims) {
			return true
		}
	}
	return false
}

// Covers reports whether a box covers b (world.Box.Covers, in the index's
// dimensions). A box that covers b contains b.Min, so only the boxes of
// b.Min's cell and the wide ones are candidates (an empty or NaN b is
// checked against every box: Covers compares bounds, not points).
func (x *Boxes) Covers(b world.Box) bool {
	if b.Validate(x.dims) != nil || b.Empty(x.dims) {
		for i := range x.ents {
			if x.ents[i].live && x.ents[i].box.Covers(b, x.dims) {
				return true
			}
		}
		return false
	}
	for _, i := range x.cells.get(pointCell(&b.Min, x.dims, x.cell)) {
		if x.ents[i].box.Covers(b, x.dims) {
			return true
		}
	}
	for _, i := range x.wide {
		if x.ents[i].box.Covers(b, x.dims) {
			return true
		}
	}
	return false
}

// Meeting appends to dst, in increasing order and once each, the owners
// with a box that shares a point with b (world.Box.Intersects, in the
// index's dimensions; empty boxes, b included, meet nothing).
func (x *Boxes) Meeting(b world.Box, dst []wire.NodeID) []wire.NodeID {
	start := len(dst)
	lo, hi, n, ok := cellRange(&b, x.dims, x.cell)
	if !ok {
		return dst
	}
	if n > maxBoxCells {
		for i := range x.ents {
			if e := &x.ents[i]; (e.cells || e.wide) && e.box.Intersects(b, x.dims) {
				dst = append(dst, e.owner)
			}
		}
	} else {
		for cy := lo.y; ; cy++ {
			for cx := lo.x; ; cx++ {
				for _, i := range x.cells.get(cellKey{cx, cy}) {
					if e := &x.ents[i]; e.box.Intersects(b, x.dims) {
						dst = append(dst, e.owner)
					}
				}
				if cx == hi.x {
					break
				}
			}
			if cy == hi.y {
				break
			}
		}
		for _, i := range x.wide {
			if e := &x.ents[i]; e.box.Intersects(b, x.dims) {
				dst = append(dst, e.owner)
			}
		}
	}
	return sortOnce(dst, start)
}

// Owners appends to dst, in increasing order and once each, the owners
// with a box containing p (in the index's dimensions).
func (x *Boxes) Owners(p world.Point, dst []wire.NodeID) []wire.NodeID {
	start := len(dst)
	for _, i := range x.cells.get(pointCell(&p, x.dims, x.cell)) {
		if e := &x.ents[i]; e.box.Contains(p, x.dims) {
			dst = append(dst, e.owner)
		}
	}
	for _, i := range x.wide {
		if e := &x.ents[i]; e.box.Contains(p, x.dims) {
			dst = append(dst, e.owner)
		}
	}
	return sortOnce(dst, start)
}

// sortOnce sorts dst[start:] and leaves each owner in it once.
func sortOnce(dst []wire.NodeID, start int) []wire.NodeID {
	if len(dst)-start > 1 {
		slices.Sort(dst[start:])
		dst = dst[:start+len(slices.Compact(dst[start:]))]
	}
	return dst
}
