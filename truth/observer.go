package truth

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Recorder receives the observer's measures: every report of a node's
// view (the objects in it whose primary is on another node, and whether
// the node holds each), from which it derives the missing replicas and
// the discovery latency, and the replica staleness samples. The
// simulator's recorder (sim.Recorder) implements it.
type Recorder interface {
	View(node wire.NodeID, now time.Duration, interest []uint64, held []bool) error
	Staleness(d time.Duration) error
}

// Config says what the observer watches and where it reports.
type Config struct {
	// Dims is the number of dimensions of the game's space (1 to
	// world.MaxDims): a view box contains a location when it does in
	// every one of them.
	Dims int
	// Bounds is where the game's objects are, in x and y, and Interest
	// the half-width of a player's interest box: the observer keeps the
	// primaries in a grid of cells as wide as an interest box over Bounds
	// (at most MaxCells; objects outside count in the edge cells), so a
	// view costs the cells it covers. Interest 0 (Bounds then ignored)
	// keeps them in a single cell: every view reads every primary, which
	// suits a few thousand objects.
	Bounds   world.Box
	Interest float64
	// Infra is the infrastructure node (a directory's rendezvous, a
	// central server), which has no view of its own and reports nothing;
	// 0 for none.
	Infra wire.NodeID
	// Recorder receives the reports and the staleness samples (nil:
	// none; the observer still counts the staleness samples, see
	// StalenessSamples).
	Recorder Recorder
	// StalenessEvery: a node samples the staleness of the replicas in
	// its view at every StalenessEvery-th report (0 or 1: at every
	// report), StalenessCap of them at most, spread evenly over the view
	// (0: all of them).
	StalenessEvery int
	StalenessCap   int
}

// Observer is the ground-truth observer of a cluster of nodes. It keeps
// every live primary of the cluster (as of its node's latest snapshot:
// primaries change only in their node's frame, so with a snapshot after
// every frame this is exact) in a uniform grid, and after a node's
// snapshot reports that node's view to the Recorder: the live objects,
// wherever their primary is, inside the node's view boxes, and whether it
// holds each. A node's own objects (its primaries, and under
// client-server the objects it created and handed off, whose
// world.ObjectID.Origin is the node) are left out: they can never be
// missing. The infrastructure node has no view of its own and reports
// nothing.
//
// It also samples replica staleness: the time since the primary moved
// past the replica's version (0 while the replica has the primary's
// newest version), from the commit times of each primary's last histLen
// versions as its snapshots showed them.
//
// Cost per snapshot of a node: its primaries, its primaries' grid moves,
// and the grid cells its view covers; nothing is proportional to the
// cluster size.
//
// An Observer is not safe for concurrent use.
type Observer struct {
	dims  int
	infra wire.NodeID
	rec   Recorder
	every int
	cap   int
	res   time.Duration // the per-kind measures' age resolution (SetResolution)

	objs  []tobj   // per slot: what the grid's moves and the kind measures read
	marks []uint32 // per slot of objs: the view query that last saw it (dedup)
	hist  []thist  // per slot of objs: the version history (from objs' head and n)
	free  []int32
	byID  map[world.ObjectID]int32
	// ghosts are the objects deleted during the current Sample, kept
	// until it ends (tobj.gone).
	ghosts []ownedRef

	gridSpec
	grid [][]gcell

	owned  [][]ownedRef    // per node index (ID − 1): its primaries at its previous snapshot
	ticks  []int           // per node index: reports so far
	sample []uint32        // per node index: the Sample that last listed it
	at     []time.Duration // per node index: its snapshot's time in the latest Sample that listed it
	serial uint32          // snapshots observed so far
	stamp  uint32          // view queries so far (dedup marks)
	nthSmp uint32          // Samples so far
	// moves holds, per slot of objs, the object's previous location and
	// the times of its owner's previous and latest snapshots, once Sample
	// is used (a live cluster's snapshots are up to a frame apart: a
	// viewer's report places each object at the viewer's time, see
	// placeAt); nil otherwise.
	moves []tmove // per slot of objs, like marks and hist

	newOwned []ownedRef
	view     []world.Box
	interest []uint64
	held     []bool
	scanned  bool // interest and held are in scan order (else in ID order)
	empty    Snapshot

	kinds *kindTracker // per-kind view measures, when on (TrackKinds)

	beyond   int64 // staleness samples older than the history (lower bounds)
	staleSum time.Duration
	staleN   int64
}

// ErrConfig is wrapped by New's errors.
var ErrConfig = errors.New("truth: bad configuration")

// New validates cfg and returns an observer that has seen nothing yet.
func New(cfg Config) (*Observer, error) {
	bad := func(format string, args ...any) (*Observer, error) {
		return nil, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case cfg.Dims < 1 || cfg.Dims > world.MaxDims:
		return bad("%d dimensions: want 1 to %d", cfg.Dims, world.MaxDims)
	case !(cfg.Interest >= 0) || math.IsInf(cfg.Interest, 0):
		return bad("interest %v: want a finite half-width ≥ 0", cfg.Interest)
	case cfg.StalenessEvery < 0 || cfg.StalenessCap < 0:
		return bad("staleness sampling every %d reports, at most %d: want both ≥ 0", cfg.StalenessEvery, cfg.StalenessCap)
	}
	if cfg.Interest > 0 {
		w, h := cfg.Bounds.Max[0]-cfg.Bounds.Min[0], cfg.Bounds.Max[1]-cfg.Bounds.Min[1]
		if cfg.Dims == 1 {
			h = 2 * cfg.Interest // one row
		}
		if !(w > 0 && h > 0) || math.IsInf(w, 0) || math.IsInf(h, 0) {
			return bad("bounds %v to %v: want Max above Min in x and y, finite", cfg.Bounds.Min, cfg.Bounds.Max)
		}
		if cells := math.Ceil(w/(2*cfg.Interest)) * math.Ceil(h/(2*cfg.Interest)); cells > MaxCells {
			return bad("bounds %v × %v m over interest boxes %v m wide: %.0f cells, want at most %d", w, h, 2*cfg.Interest, cells, MaxCells)
		}
	}
	t := &Observer{dims: cfg.Dims, infra: cfg.Infra, rec: cfg.Recorder, every: max(cfg.StalenessEvery, 1), cap: cfg.StalenessCap,
		byID: map[world.ObjectID]int32{}, gridSpec: newGridSpec(cfg.Dims, cfg.Bounds, cfg.Interest)}
	t.grid = make([][]gcell, t.cols*t.rows)
	return t, nil
}

// Dims returns the number of dimensions of the game's space.
func (t *Observer) Dims() int { return t.dims }

// Infra returns the infrastructure node, which reports nothing (0: none).
func (t *Observer) Infra() wire.NodeID { return t.infra }

type ownedRef struct {
	slot int32
	id   world.ObjectID
}

// histLen is how many versions of each primary the observer remembers for
// staleness (1.6 s of changes at one version per 100 ms frame).
const histLen = 16

// tobj is one observed primary (48 bytes): the first three coordinates of
// its location are in its grid cell entry, its version history in thist
// (the newest version, the ring's head and length here, in the line the
// snapshot's observation writes anyway), its dedup mark in
// Observer.marks.
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
	// born is the Sample that first listed the object (0: none, it was
	// first seen by Observe or Report): a viewer whose snapshot of that
	// Sample is older cannot be expected to hold it (Sample). created is
	// its creation time when the first snapshot that listed it showed its
	// first version (else -1): the floor's reach counts from it
	// (TrackFloor).
	born    uint32
	created time.Duration
	// gone, in a Sample, is the time of the owner's snapshot that no
	// longer listed the object (ghost): it stays in the grid until the
	// Sample ends, in the view of the viewers whose snapshots are older,
	// as the simulator's observer, seeing the owner as of its frame
	// before, would have it there.
	gone  time.Duration
	ghost bool
}

// tmove is an object's previous location (the first three coordinates)
// and the times of its owner's snapshots that showed it there and where
// it is now (Observer.moves).
type tmove struct {
	px, py, pz float64
	prev, cur  time.Duration
	has        bool // prev is known
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
func (t *Observer) in(b *world.Box, g *gcell) bool {
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

func (t *Observer) gridAdd(s int32, loc world.Point) {
	o := &t.objs[s]
	c := &t.grid[o.cell]
	o.pos = int32(len(*c))
	*c = append(*c, gcell{slot: s, owner: o.owner, id: o.id, x: loc[0], y: loc[1], z: loc[2]})
}

// locOf returns the location of the object in slot s.
func (t *Observer) locOf(s int32) world.Point {
	o := &t.objs[s]
	g := &t.grid[o.cell][o.pos]
	return world.Point{g.x, g.y, g.z, o.w}
}

func (t *Observer) gridRemove(s int32) {
	o := &t.objs[s]
	c := t.grid[o.cell]
	last := c[len(c)-1]
	c[o.pos] = last
	t.objs[last.slot].pos = o.pos
	t.grid[o.cell] = c[:len(c)-1]
}

// nodeIndex returns the per-node index of id (ID − 1), growing the
// per-node state to hold it.
func (t *Observer) nodeIndex(id wire.NodeID) (int, error) {
	if id == 0 {
		return 0, fmt.Errorf("truth: a snapshot of node 0 (want a node ID ≥ 1)")
	}
	i := int(id) - 1
	if i >= len(t.owned) {
		n := i + 1
		t.owned = append(t.owned, make([][]ownedRef, n-len(t.owned))...)
		t.ticks = append(t.ticks, make([]int, n-len(t.ticks))...)
		t.sample = append(t.sample, make([]uint32, n-len(t.sample))...)
		t.at = append(t.at, make([]time.Duration, n-len(t.at))...)
	}
	return i, nil
}

// Observe records the primaries of s's node (new ones, moves, and the ones
// it no longer has) without reporting its view: the snapshots of every
// node before the first frame. It rejects a snapshot of node 0.
func (t *Observer) Observe(s *Snapshot) error {
	i, err := t.nodeIndex(s.Node)
	if err != nil {
		return err
	}
	t.observe(i, s)
	return nil
}

// Frame observes the snapshot s of a node taken right after its frame and
// reports its view at s.At (unless it is the infrastructure node). It
// rejects a snapshot of node 0, and returns the Recorder's error.
func (t *Observer) Frame(s *Snapshot) error {
	i, err := t.nodeIndex(s.Node)
	if err != nil {
		return err
	}
	t.observe(i, s)
	if s.Node == t.infra {
		return nil
	}
	return t.report(i, s)
}

// Down records that node went down (it crashed, or left): its primaries,
// as of its latest snapshot, are no longer live objects, so no view
// expects them from then on (they count again if another node's snapshot
// lists them as its primaries: a failover), and its own view starts
// afresh. A node that comes back (a restart, a new incarnation) is fed
// as before, Frame after each of its frames, and its first report counts
// from then: every object in it enters its view at that report. Down
// also has the Recorder forget the node's interest state, if it can
// (a Recorder with a Forget(wire.NodeID) method, as sim.Recorder has; a
// simulator's forgets by itself when the node crashes). It rejects node
// 0, changing nothing.
func (t *Observer) Down(node wire.NodeID) error {
	i, err := t.nodeIndex(node)
	if err != nil {
		return err
	}
	t.empty.Reset(node, 0)
	t.observe(i, &t.empty)
	if t.kinds != nil {
		clear(t.kinds.node(i).pairs)
	}
	if f, ok := t.rec.(forgetter); ok {
		f.Forget(node)
	}
	return nil
}

// forgetter is a Recorder that can drop a node's interest state.
type forgetter interface{ Forget(node wire.NodeID) }

// Sample observes the snapshots of every node taken at about the same
// time (nil for a node that did not answer), then reports each node's
// view: a node's report sees the primaries of every snapshot of the
// sample, as they were at the viewer's time: an object is placed along
// its path at that time, left out if it was created after it, and kept
// if its owner's snapshot, later than the viewer's, no longer lists it
// (unborn, placeAt, tobj.gone). A node the observer knows that has no
// snapshot in the sample is taken to hold no primary (its objects are
// gone from the truth until it answers again). The error joins the rejected snapshots (node 0, a
// node twice; the others are still observed) and the Recorder's errors.
func (t *Observer) Sample(snaps []*Snapshot) error {
	t.nthSmp++
	var errs []error
	ok := snaps[:0:0]
	for _, s := range snaps {
		if s == nil {
			continue
		}
		i, err := t.nodeIndex(s.Node)
		if err == nil && t.sample[i] == t.nthSmp {
			err = fmt.Errorf("truth: two snapshots of node %d in one sample", s.Node)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		t.sample[i], t.at[i] = t.nthSmp, s.At
		ok = append(ok, s)
	}
	if t.moves == nil {
		t.moves = make([]tmove, len(t.objs))
	}
	for i := range t.owned {
		if t.sample[i] != t.nthSmp && len(t.owned[i]) > 0 {
			t.empty.Reset(wire.NodeID(i+1), 0)
			t.observe(i, &t.empty)
		}
	}
	for _, s := range ok {
		t.observe(int(s.Node)-1, s)
	}
	for _, s := range ok {
		if s.Node == t.infra {
			continue
		}
		if err := t.report(int(s.Node)-1, s); err != nil {
			errs = append(errs, err)
		}
	}
	t.buryGhosts()
	return errors.Join(errs...)
}

// unborn reports whether the object of grid entry g may not have existed
// at a viewer's time now: it was created after now, in whichever Sample
// the viewer's snapshot comes; or the Sample that first listed it took
// its owner's snapshot after now, and its creation time is unknown. A
// live cluster's snapshots of one Sample are up to a frame apart (each
// node answers at its next frame), so a viewer's snapshot may even be
// older than an owner's that the Sample before took; the simulator's observer
// sees, at a node's frame, the others' primaries as of then, so such an
// object is left out of that viewer's interest, as it would be there.
func (t *Observer) unborn(g *gcell, now time.Duration) bool {
	o := &t.objs[g.slot]
	if o.born == 0 {
		return false // not from a Sample: the simulator's time order
	}
	if o.created >= 0 && o.created > now {
		return true
	}
	if o.born != t.nthSmp {
		return false
	}
	j := int(g.owner) - 1
	if j < 0 || j >= len(t.at) || t.sample[j] != t.nthSmp || t.at[j] <= now {
		return false
	}
	return o.created < 0 || o.created > now
}

// placeAt reports whether the object of grid entry g is to be placed at
// the viewer's time now rather than where its owner's latest snapshot
// shows it (moved), and if so whether box b contains it there (in). A
// live cluster's snapshots of one Sample are up to a frame apart (each
// node answers at its next frame); an object's location is taken along
// the line from its owner's previous snapshot to its latest one, at now
// (at most one interval beyond either end), as the simulator's observer,
// which sees every object at the viewer's frame, would place it.
// Without a previous location, or when the owner's snapshot is the
// viewer's time, the location stands.
func (t *Observer) placeAt(g *gcell, b *world.Box, now time.Duration) (moved, in bool) {
	m := &t.moves[g.slot]
	if !m.has || m.cur == now || m.cur <= m.prev || t.dims > 3 {
		return false, false
	}
	f := float64(now-m.cur) / float64(m.cur-m.prev)
	f = min(max(f, -1), 1)
	p := world.Point{g.x + f*(g.x-m.px), g.y + f*(g.y-m.py), g.z + f*(g.z-m.pz)}
	return true, b.Contains(p, t.dims)
}

// observe records the primaries of node index i from its snapshot snap.
func (t *Observer) observe(i int, snap *Snapshot) {
	id := snap.Node
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
				if t.moves != nil {
					t.moves = append(t.moves, tmove{})
				}
			}
			if t.moves != nil {
				t.moves[s] = tmove{cur: snap.At}
			}
			t.objs[s] = tobj{id: in.id, owner: id, w: loc[3], cell: t.cellOf(loc), kind: in.kind, created: -1}
			if in.version == 1 {
				t.objs[s].created = in.produced
			}
			if t.sample[i] == t.nthSmp && t.nthSmp > 0 {
				t.objs[s].born = t.nthSmp
			}
			t.byID[in.id] = s
			t.gridAdd(s, loc)
		} else {
			if t.moves != nil {
				if m := &t.moves[s]; snap.At > m.cur {
					g := &t.grid[t.objs[s].cell][t.objs[s].pos]
					*m = tmove{px: g.x, py: g.y, pz: g.z, prev: m.cur, cur: snap.At, has: true}
				}
			}
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
		o.seen, o.ghost = t.serial, false
		t.commit(s, in.version, in.produced)
		t.newOwned = append(t.newOwned, ownedRef{s, in.id})
	}
	// Primaries this node had at its previous snapshot and no longer has
	// were deleted (or, under client-server, are now another node's). In
	// a Sample they stay as ghosts until it ends (tobj.gone).
	for _, r := range t.owned[i] {
		o := &t.objs[r.slot]
		if o.id == r.id && o.owner == id && o.seen != t.serial {
			if t.nthSmp > 0 && t.sample[i] == t.nthSmp {
				o.ghost, o.gone = true, snap.At
				t.ghosts = append(t.ghosts, ownedRef{r.slot, r.id})
				continue
			}
			t.remove(r.slot, r.id)
		}
	}
	t.owned[i] = append(t.owned[i][:0], t.newOwned...)
}

// remove forgets the object id in slot s.
func (t *Observer) remove(s int32, id world.ObjectID) {
	t.gridRemove(s)
	delete(t.byID, id)
	t.objs[s] = tobj{}
	t.marks[s] = 0
	t.free = append(t.free, s)
}

// buryGhosts removes the ghosts of the Sample that ends, but those that
// another node listed since (handed over: no longer ghosts).
func (t *Observer) buryGhosts() {
	for _, r := range t.ghosts {
		if o := &t.objs[r.slot]; o.id == r.id && o.ghost {
			t.remove(r.slot, r.id)
		}
	}
	t.ghosts = t.ghosts[:0]
}

// report gives the recorder the view of node index i from its snapshot
// snap, and samples staleness.
//
// The recorder takes a view in any order (it sorts it by ID), but the
// staleness samples are drawn from the held objects in the order of the
// grid scan. So on the reports that sample staleness the view is listed
// in scan order, and each object looked up in the snapshot; on the others
// it is sorted by ID here, which spares the recorder its sort, and the
// held flags come from one merge with the snapshot's objects (in ID order
// too). The kind measures, when on, look each object up during the scan.
func (t *Observer) report(i int, snap *Snapshot) error {
	id, now := snap.Node, snap.At
	if snap.OwnInterest {
		t.view = append(t.view[:0], snap.Interest...)
	} else {
		t.view = append(t.view[:0], snap.View...)
	}
	t.interest, t.held = t.interest[:0], t.held[:0]
	t.stamp++
	ordered := (t.ticks[i]+1)%t.every == 0
	d3 := t.dims == 3
	for v := range t.view {
		b := &t.view[v]
		c0, c1 := t.col(b.Min[0]), t.col(b.Max[0])
		r0, r1 := t.row(b.Min[1]), t.row(b.Max[1])
		if t.moves != nil {
			// An object placed at the viewer's time may lie a little
			// outside its cell.
			c0, c1, r0, r1 = max(c0-1, 0), min(c1+1, t.cols-1), max(r0-1, 0), min(r1+1, t.rows-1)
		}
		for r := r0; r <= r1; r++ {
			for c := c0; c <= c1; c++ {
				cell := t.grid[r*t.cols+c]
				for k := range cell {
					g := &cell[k]
					if t.moves != nil {
						if moved, in := t.placeAt(g, b, now); moved {
							if !in {
								continue
							}
							goto inside
						}
					}
					if d3 {
						if !(g.x >= b.Min[0] && g.x <= b.Max[0] && g.y >= b.Min[1] && g.y <= b.Max[1] && g.z >= b.Min[2] && g.z <= b.Max[2]) {
							continue
						}
					} else if !t.in(b, g) {
						continue
					}
				inside:
					if t.marks[g.slot] == t.stamp {
						continue
					}
					t.marks[g.slot] = t.stamp
					if g.owner == id || node.Home(g.id) == id {
						continue
					}
					if t.unborn(g, now) {
						continue
					}
					if o := &t.objs[g.slot]; o.ghost && now >= o.gone {
						continue // deleted before the viewer's time
					}
					t.interest = append(t.interest, uint64(g.id))
					if !ordered && t.kinds == nil {
						continue
					}
					_, _, ok := snap.object(g.id)
					if ordered {
						t.held = append(t.held, ok)
					}
					if t.kinds != nil {
						o := &t.objs[g.slot]
						t.kinds.see(i, o.kind, g.id, o.version, ok, now, o.created)
					}
				}
			}
		}
	}
	if t.kinds != nil {
		t.kinds.done(i, now)
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
	var err error
	if t.rec != nil {
		err = t.rec.View(id, now, t.interest, t.held)
	}
	t.ticks[i]++
	if t.ticks[i]%t.every != 0 {
		return err
	}
	held := 0
	for _, h := range t.held {
		if h {
			held++
		}
	}
	step := 1
	if t.cap > 0 {
		step = max(1, (held+t.cap-1)/t.cap)
	}
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
		if d, ok := t.StalenessOf(world.ObjectID(oid), in.version, now); ok {
			t.staleSum += d
			t.staleN++
			if t.rec != nil {
				err = errors.Join(err, t.rec.Staleness(d))
			}
		}
	}
	return err
}

// commit records that the object in slot s has version v, committed at
// at (nothing if it already had v or a newer one).
func (t *Observer) commit(s int32, v uint64, at time.Duration) {
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

// StalenessOf returns how long before now the primary of id moved past
// version v (0 if v is its newest version), and false if id has no live
// primary. When v is older than the remembered history, the oldest
// remembered commit gives a lower bound (counted in BeyondHistory).
func (t *Observer) StalenessOf(id world.ObjectID, v uint64, now time.Duration) (time.Duration, bool) {
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

// BeyondHistory returns how many staleness figures were lower bounds: the
// replica's version was older than every remembered version of its
// primary.
func (t *Observer) BeyondHistory() int64 { return t.beyond }

// StalenessSamples returns the sum and the number of the staleness
// samples taken so far (each also given to the Recorder).
func (t *Observer) StalenessSamples() (sum time.Duration, n int64) { return t.staleSum, t.staleN }

// LastReport returns the latest report of a node's view, the slices the
// Recorder received (valid until the next report): the objects in the
// view and whether the node held each; scanOrder says whether they are in
// the order of the grid scan (a report that samples staleness) rather
// than in ID order.
func (t *Observer) LastReport() (interest []uint64, held []bool, scanOrder bool) {
	return t.interest, t.held, t.scanned
}
