package harness

import (
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// truth is the ground-truth observer of a world run. It keeps every live
// primary of the cluster (as of its node's latest frame: primaries change
// only in their node's Tick, so this is exact) in a uniform grid, and after
// each node's frame reports that node's view to the simulator's Recorder:
// the live objects, wherever their primary is, inside the union of its
// primaries' interests (node.View), and whether it holds each. A node's own
// objects (its primaries, and under client-server the objects it created
// and handed off) are left out: they can never be missing. The infrastructure
// node (rendezvous, central server) has no view of its own and reports
// nothing.
//
// It also samples replica staleness: the time since the primary moved past
// the replica's version (0 while the replica has the primary's newest
// version), from the commit times of each primary's last histLen versions.
//
// Cost per frame of a node: its Primaries, its primaries' grid moves, and the
// grid cells its view covers; nothing is proportional to the cluster size.
type truth struct {
	w    *World
	dims int

	objs  []tobj   // per slot: what the grid's moves and the kind measures read
	marks []uint32 // per slot of objs: the view query that last saw it (dedup)
	hist  []thist  // per slot of objs: the version history (from objs' head and n)
	free  []int32
	byID  map[world.ObjectID]int32

	gridSpec
	grid [][]gcell

	owned  [][]ownedRef // per node: its primaries at its previous frame
	ticks  []int        // per node: frames observed
	serial uint32       // frame observations so far
	stamp  uint32       // view queries so far (dedup marks)

	newOwned []ownedRef
	view     []world.Box
	interest []uint64
	held     []bool
	scanned  bool // interest and held are in scan order (else in ID order)

	kinds *kindTracker // per-kind view measures, when on (trackKinds)

	beyond int64            // staleness samples older than the history (lower bounds)
	added  map[string]int64 // counters already given to the recorder
}

type ownedRef struct {
	slot int32
	id   world.ObjectID
}

// histLen is how many versions of each primary the observer remembers for
// staleness (1.6 s of changes at one version per frame).
const histLen = 16

// tobj is one observed primary (48 bytes): the first three coordinates of
// its location are in its grid cell entry, its version history in thist
// (the newest version, the ring's head and length here, in the line the
// frame's observation writes anyway), its dedup mark in truth.marks.
type tobj struct {
	id      world.ObjectID
	w       float64 // the fourth coordinate (read in a space of four dimensions only)
	version uint64  // newest version seen
	owner   wire.NodeID
	cell    int32
	pos     int32 // index in grid[cell]
	seen    uint32
	kind    world.Kind
	head, n uint8 // the newest version's index in thist, and how many it holds
}

// gcell is one object in a grid cell's list: its slot in objs and copies
// of its owner, ID and first three coordinates, so that a view query reads
// a cell's list in order and, per object, only its dedup mark (a dense
// array) besides: the objects' own records stay out of the scan (40 bytes a
// cell entry; in a space of four dimensions the query reads the location
// from the record).
type gcell struct {
	slot    int32
	owner   wire.NodeID
	id      world.ObjectID
	x, y, z float64
}

// in reports whether box b contains the object of g, as b.Contains does
// with its location (report writes it out for three dimensions, the
// model game's space).
func (t *truth) in(b *world.Box, g *gcell) bool {
	switch {
	case t.dims == 3:
		return g.x >= b.Min[0] && g.x <= b.Max[0] && g.y >= b.Min[1] && g.y <= b.Max[1] && g.z >= b.Min[2] && g.z <= b.Max[2]
	case t.dims > 3:
		return b.Contains(world.Point{g.x, g.y, g.z, t.objs[g.slot].w}, t.dims)
	}
	return b.Contains(world.Point{g.x, g.y, g.z}, t.dims)
}

// thist is an object's recent versions and their commit times, a ring
// (tobj.head, tobj.n): a version and its time share a cache line. Entries
// past n are never read, so a reused slot's history is not cleared.
type thist [histLen]struct {
	v  uint64
	at time.Duration // commit time of v
}

func newTruth(w *World) *truth {
	t := &truth{w: w, dims: w.reg.Space().Dims(), byID: map[world.ObjectID]int32{}, gridSpec: w.grid,
		owned: make([][]ownedRef, len(w.nodes)), ticks: make([]int, len(w.nodes)), added: map[string]int64{}}
	t.grid = make([][]gcell, t.cols*t.rows)
	// The spawned primaries, before any frame.
	for _, n := range w.nodes {
		t.observe(n.ID())
	}
	return t
}

// gridSpec is the observer's uniform grid over the game's bounds (x and
// y): cells as wide as a player's interest box, so that a view box covers
// at most 2 × 2 of them; locations outside the bounds fall in the edge
// cells.
type gridSpec struct {
	x0, y0     float64 // the bounds' lower corner
	cell       float64
	cols, rows int
}

func newGridSpec(b world.Box, interest float64) gridSpec {
	g := gridSpec{x0: b.Min[0], y0: b.Min[1], cell: 2 * interest}
	g.cols = max(1, int(math.Ceil((b.Max[0]-b.Min[0])/g.cell)))
	g.rows = max(1, int(math.Ceil((b.Max[1]-b.Min[1])/g.cell)))
	return g
}

func (g *gridSpec) col(x float64) int {
	c := int(math.Floor((x - g.x0) / g.cell))
	return min(max(c, 0), g.cols-1)
}

func (g *gridSpec) row(y float64) int {
	r := int(math.Floor((y - g.y0) / g.cell))
	return min(max(r, 0), g.rows-1)
}

func (g *gridSpec) cellOf(p world.Point) int32 { return int32(g.row(p[1])*g.cols + g.col(p[0])) }

func (t *truth) gridAdd(s int32, loc world.Point) {
	o := &t.objs[s]
	c := &t.grid[o.cell]
	o.pos = int32(len(*c))
	*c = append(*c, gcell{slot: s, owner: o.owner, id: o.id, x: loc[0], y: loc[1], z: loc[2]})
}

// locOf returns the location of the object in slot s.
func (t *truth) locOf(s int32) world.Point {
	o := &t.objs[s]
	g := &t.grid[o.cell][o.pos]
	return world.Point{g.x, g.y, g.z, o.w}
}

func (t *truth) gridRemove(s int32) {
	o := &t.objs[s]
	c := t.grid[o.cell]
	last := c[len(c)-1]
	c[o.pos] = last
	t.objs[last.slot].pos = o.pos
	t.grid[o.cell] = c[:len(c)-1]
}

// tick observes node id right after its frame at now and reports its view,
// from the snapshot the node's adapter took at the end of that frame.
func (t *truth) tick(id wire.NodeID, now time.Duration) {
	t.observe(id)
	if id == t.w.infra {
		return
	}
	t.report(int(id)-1, id, now)
}

// observe records node id's primaries: new ones, moves, and the ones it no
// longer has.
func (t *truth) observe(id wire.NodeID) {
	i := int(id) - 1
	snap := t.w.snaps[i].cur()
	t.serial++
	t.newOwned = t.newOwned[:0]
	// Both the snapshot's primaries and the node's previous ones (owned)
	// are in ID order: most primaries stay, and are found by a merge
	// instead of a map lookup (checked against the slot's ID: a slot is
	// reused only after its object is gone).
	prev, j := t.owned[i], 0
	for k := range snap.prims {
		in := &snap.prims[k]
		for j < len(prev) && prev[j].id < in.id {
			j++
		}
		var s int32
		var ok bool
		if j < len(prev) && prev[j].id == in.id && t.objs[prev[j].slot].id == in.id {
			s, ok = prev[j].slot, true
		} else {
			s, ok = t.byID[in.id]
		}
		loc := in.loc
		if !ok {
			if f := len(t.free); f > 0 {
				s = t.free[f-1]
				t.free = t.free[:f-1]
			} else {
				s = int32(len(t.objs))
				t.objs = append(t.objs, tobj{})
				t.marks = append(t.marks, 0)
				t.hist = append(t.hist, thist{})
			}
			t.objs[s] = tobj{id: in.id, owner: id, w: loc[3], cell: t.cellOf(loc), kind: in.kind}
			t.byID[in.id] = s
			t.gridAdd(s, loc)
		} else {
			o := &t.objs[s]
			o.owner = id
			o.w = loc[3]
			if c := t.cellOf(loc); c != o.cell {
				t.gridRemove(s)
				o.cell = c
				t.gridAdd(s, loc)
			} else {
				g := &t.grid[c][o.pos]
				g.owner, g.x, g.y, g.z = id, loc[0], loc[1], loc[2]
			}
		}
		o := &t.objs[s]
		o.seen = t.serial
		t.commit(s, in.version, in.produced)
		t.newOwned = append(t.newOwned, ownedRef{s, in.id})
	}
	// Primaries this node had at its previous frame and no longer has were
	// deleted (or, under client-server, are now another node's).
	for _, r := range t.owned[i] {
		o := &t.objs[r.slot]
		if o.id == r.id && o.owner == id && o.seen != t.serial {
			t.gridRemove(r.slot)
			delete(t.byID, r.id)
			*o = tobj{}
			t.marks[r.slot] = 0
			t.free = append(t.free, r.slot)
		}
	}
	t.owned[i] = append(t.owned[i][:0], t.newOwned...)
}

// report gives the recorder node id's view and samples staleness.
//
// The recorder takes a view in any order (it sorts it by ID), but the
// staleness samples are drawn from the held objects in the order of the
// grid scan. So on the frames that sample staleness (and when the kind
// measures are on) the view is listed in scan order, and each object
// looked up in the snapshot; on the others it is sorted by ID here, which
// spares the recorder its sort, and the held flags come from one merge
// with the snapshot's objects (in ID order too).
func (t *truth) report(i int, id wire.NodeID, now time.Duration) {
	snap := t.w.snaps[i].cur()
	t.view = append(t.view[:0], snap.view...)
	t.interest, t.held = t.interest[:0], t.held[:0]
	t.stamp++
	ordered := t.kinds != nil || (t.ticks[i]+1)%t.w.cfg.StalenessEvery == 0
	d3 := t.dims == 3
	for v := range t.view {
		b := &t.view[v]
		c0, c1 := t.col(b.Min[0]), t.col(b.Max[0])
		r0, r1 := t.row(b.Min[1]), t.row(b.Max[1])
		for r := r0; r <= r1; r++ {
			for c := c0; c <= c1; c++ {
				cell := t.grid[r*t.cols+c]
				for k := range cell {
					g := &cell[k]
					if d3 {
						if !(g.x >= b.Min[0] && g.x <= b.Max[0] && g.y >= b.Min[1] && g.y <= b.Max[1] && g.z >= b.Min[2] && g.z <= b.Max[2]) {
							continue
						}
					} else if !t.in(b, g) {
						continue
					}
					if t.marks[g.slot] == t.stamp {
						continue
					}
					t.marks[g.slot] = t.stamp
					if g.owner == id || g.id.Origin() == uint32(id) {
						continue
					}
					t.interest = append(t.interest, uint64(g.id))
					if !ordered {
						continue
					}
					_, _, ok := snap.object(g.id)
					t.held = append(t.held, ok)
					if t.kinds != nil {
						t.kinds.see(i, t.objs[g.slot].kind, g.id, t.objs[g.slot].version, ok, now)
					}
				}
			}
		}
	}
	if t.kinds != nil {
		t.kinds.done(i)
	}
	t.scanned = ordered
	if !ordered {
		slices.Sort(t.interest)
		objs, o := snap.objs, 0
		for _, oid := range t.interest {
			for o < len(objs) && uint64(objs[o].id) < oid {
				o++
			}
			t.held = append(t.held, o < len(objs) && uint64(objs[o].id) == oid)
		}
	}
	rec := t.w.sim.Recorder()
	_ = rec.View(id, now, t.interest, t.held) // the node is up and time is the sim's: cannot fail
	t.ticks[i]++
	if t.ticks[i]%t.w.cfg.StalenessEvery != 0 {
		return
	}
	held := 0
	for _, h := range t.held {
		if h {
			held++
		}
	}
	step := max(1, (held+t.w.cfg.StalenessCap-1)/t.w.cfg.StalenessCap)
	k := 0
	for j, oid := range t.interest {
		if !t.held[j] {
			continue
		}
		k++
		if (k-1)%step != 0 {
			continue
		}
		in, primary, ok := snap.object(world.ObjectID(oid))
		if !ok || primary || in.version == 0 {
			continue
		}
		if d, ok := t.staleness(world.ObjectID(oid), in.version, now); ok {
			_ = rec.Staleness(d)
		}
	}
}

// commit records that the object in slot s has version v, committed at
// at (nothing if it already had v or a newer one).
func (t *truth) commit(s int32, v uint64, at time.Duration) {
	o := &t.objs[s]
	if v <= o.version {
		return
	}
	o.version = v
	o.head = (o.head + 1) % histLen
	h := &t.hist[s][o.head]
	h.v, h.at = v, at
	o.n = min(o.n+1, histLen)
}

// staleness returns how long ago the primary of id moved past version v
// (0 if v is its newest version). When v is older than the remembered
// history, the oldest remembered commit gives a lower bound (counted in
// beyond).
func (t *truth) staleness(id world.ObjectID, v uint64, now time.Duration) (time.Duration, bool) {
	s, ok := t.byID[id]
	if !ok {
		return 0, false // deleted since: not a replica of a live object
	}
	o, h := &t.objs[s], &t.hist[s]
	if v >= o.version || o.n == 0 {
		return 0, true
	}
	// Walk from the newest back to the first version after v.
	at := h[o.head].at
	for k := 0; k < int(o.n); k++ {
		j := (int(o.head) - k + histLen) % histLen
		if h[j].v <= v {
			return max(0, now-at), true
		}
		at = h[j].at
	}
	t.beyond++
	return max(0, now-at), true
}
