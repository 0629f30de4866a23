package arena

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/world"
)

// Local runs a world's objects in one process, frame by frame, and
// implements world.Context for their think functions: a reference
// implementation of the Context semantics without a network, used to
// validate the game and to measure it.
//
// Every object lives once, on the node that created it (Spawn names the
// node; Create inherits the thinking object's node). A think function sees
// every object: those on its own node as primaries, the others as replicas
// that are always up to date (zero latency). Writes to an object of another
// node go through the tentative-write codec (world.AppendWrite, then
// world.ApplyWrite on the object's state), exactly what a primary receives
// from a replica; deleting another node's object fails with
// world.ErrNotPrimary.
//
// Semantics, frame by frame (Step): the objects that existed when the frame
// began think once each, in increasing ID order; an object created during
// the frame is visible to Lookup and Each at once and thinks from the next
// frame on; a deleted object vanishes at once (it does not think if its turn
// had not come). Each visits objects in increasing ID order; the index is
// updated after every think and write, so it always reflects current
// locations. Local is deterministic: the same spawns and seed give the same
// states, frame after frame. It is not safe for concurrent use.
type Local struct {
	reg   *world.Registry
	dims  int
	rng   *rand.Rand
	frame int64
	nodes int
	objs  map[world.ObjectID]*entry
	order []*entry // by ID; may hold deleted entries until the next Step
	born  []*entry // created since the last Step began, in creation order
	seq   []uint32
	cells map[[2]int32][]*entry
	bufs  [][]*entry // scratch for nested Each calls
	wbuf  []byte
	wtmp  *world.State

	measure bool
	stats   []KindStats // by Kind-1
	dbuf    []byte
}

type entry struct {
	obj   world.Object
	id    world.ObjectID
	kind  world.Kind
	node  int
	born  int64 // frame of creation; thinks from born+1 (spawned: from the first frame)
	dead  bool
	cell  [2]int32
	loc   world.Point // location at the last (re)index
	slot  int
	prev  *world.State // last frame's state, when measuring deltas
	fresh bool         // created since the last measurement
}

// localCell is the side of the index's cells (m).
const localCell = 16.0

// KindStats counts one kind's updates (deltas between successive frames)
// and tentative writes in a Local run with delta measurement on.
type KindStats struct {
	Kind world.Kind
	Name string
	// ObjectFrames counts (object, frame) pairs: how many updates there
	// would be if every object changed every frame.
	ObjectFrames int64
	// Updates counts the frames in which an object changed; DeltaBytes
	// sums their world.AppendDelta sizes (the payload; a runtime adds its
	// own header); MaxDelta is the largest.
	Updates, DeltaBytes int64
	MaxDelta            int
	// Created counts creations, FullBytes the sizes of their full states
	// (AppendDelta against nil), sent once to each new replica.
	Created, FullBytes int64
	// Writes counts tentative writes, WriteBytes their encoded size.
	Writes, WriteBytes int64
}

// MeanDelta returns DeltaBytes / Updates (0 without updates).
func (k KindStats) MeanDelta() float64 {
	if k.Updates == 0 {
		return 0
	}
	return float64(k.DeltaBytes) / float64(k.Updates)
}

// NewLocal returns an empty Local for the registry's schemas with the given
// number of nodes (1 to MaxUint32) and a seeded random source.
func NewLocal(reg *world.Registry, nodes int, seed uint64) (*Local, error) {
	if reg == nil {
		return nil, errors.New("arena: NewLocal: nil registry")
	}
	if nodes < 1 || nodes > math.MaxUint32 {
		return nil, fmt.Errorf("arena: NewLocal: %d nodes, want 1 to %d", nodes, uint32(math.MaxUint32))
	}
	l := &Local{reg: reg, dims: reg.Space().Dims(), rng: rand.New(rand.NewPCG(seed, 0x6c6f636c)), // "locl"
		nodes: nodes, objs: map[world.ObjectID]*entry{}, seq: make([]uint32, nodes),
		cells: map[[2]int32][]*entry{}, stats: make([]KindStats, reg.Len())}
	for k := range l.stats {
		l.stats[k].Kind = world.Kind(k + 1)
		l.stats[k].Name = reg.Schema(world.Kind(k + 1)).Name()
	}
	return l, nil
}

// Run builds a Local for game g (one node per configured node), spawns
// g.Spawns() and returns it, ready for Step. The seed drives the think
// functions' random choices.
func Run(g *Game, seed uint64) (*Local, error) {
	l, err := NewLocal(g.Registry(), g.Config().Nodes, seed)
	if err != nil {
		return nil, err
	}
	for _, s := range g.Spawns() {
		if _, err := l.Spawn(s.Node, s.Schema, s.Init); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// MeasureDeltas turns on delta and write accounting (Stats) from the next
// frame on.
func (l *Local) MeasureDeltas(on bool) {
	l.measure = on
	for _, e := range l.objs {
		e.prev = nil
		e.fresh = false
	}
}

// Stats returns the per-kind accounting (zero unless MeasureDeltas is on).
func (l *Local) Stats() []KindStats { return slices.Clone(l.stats) }

// Frame returns the number of frames run.
func (l *Local) Frame() int64 { return l.frame }

// Now returns the virtual time of the next frame.
func (l *Local) Now() time.Duration { return time.Duration(l.frame) * Frame }

// Len returns the number of live objects.
func (l *Local) Len() int { return len(l.objs) }

// Spawn creates a primary of kind s on node, outside any frame (it thinks
// from the next Step), and returns its ID.
func (l *Local) Spawn(node int, s *world.Schema, init func(*world.State)) (world.ObjectID, error) {
	if node < 0 || node >= l.nodes {
		return 0, fmt.Errorf("arena: Spawn: node %d, want 0 to %d", node, l.nodes-1)
	}
	e, err := l.create(node, s, init)
	if err != nil {
		return 0, err
	}
	e.born = l.frame - 1
	return e.id, nil
}

func (l *Local) create(node int, s *world.Schema, init func(*world.State)) (*entry, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: nil schema", world.ErrUnregistered)
	}
	kind, ok := l.reg.Kind(s)
	if !ok {
		return nil, fmt.Errorf("%w: %q", world.ErrUnregistered, s.Name())
	}
	if l.seq[node] == math.MaxUint32 {
		return nil, fmt.Errorf("arena: node %d has created %d objects, the most an ObjectID can number", node, uint32(math.MaxUint32))
	}
	l.seq[node]++
	id := world.MakeObjectID(uint32(node), l.seq[node])
	st := s.NewState(id)
	if init != nil {
		init(st)
	}
	obj := s.NewObject(st)
	if obj == nil || obj.State() != st {
		return nil, fmt.Errorf("arena: the constructor of schema %q did not build its object around the given State", s.Name())
	}
	e := &entry{obj: obj, id: id, kind: kind, node: node, born: l.frame, fresh: true}
	l.objs[id] = e
	l.born = append(l.born, e)
	e.loc = st.Location()
	e.cell = cellOf(e.loc)
	l.insert(e)
	return e, nil
}

func cellOf(p world.Point) [2]int32 {
	return [2]int32{cellCoord(p[0]), cellCoord(p[1])}
}

// cellCoord returns the index cell of coordinate v, clamped to int32 (an
// infinite bound clamps too).
func cellCoord(v float64) int32 {
	return int32(min(max(math.Floor(v/localCell), math.MinInt32), math.MaxInt32))
}

func (l *Local) insert(e *entry) {
	s := l.cells[e.cell]
	e.slot = len(s)
	l.cells[e.cell] = append(s, e)
}

func (l *Local) remove(e *entry) {
	s := l.cells[e.cell]
	last := s[len(s)-1]
	s[e.slot], last.slot = last, e.slot
	s[len(s)-1] = nil
	s = s[:len(s)-1]
	if len(s) == 0 {
		delete(l.cells, e.cell)
	} else {
		l.cells[e.cell] = s
	}
}

func (l *Local) reindex(e *entry) {
	e.loc = e.obj.State().Location()
	if c := cellOf(e.loc); c != e.cell {
		l.remove(e)
		e.cell = c
		l.insert(e)
	}
}

// Step runs one frame: every object that existed when it began thinks once,
// in increasing ID order. With delta measurement on it then accounts each
// object's change since the previous frame.
func (l *Local) Step() {
	l.merge()
	n := len(l.order)
	for i := 0; i < n; i++ {
		e := l.order[i]
		if e.dead || e.born >= l.frame {
			continue
		}
		ctx := localCtx{l: l, node: e.node}
		e.obj.Think(ctx)
		if !e.dead {
			l.reindex(e)
		}
	}
	if l.measure {
		l.account()
	}
	l.frame++
}

// merge brings the objects created since the last merge into the ID order
// and drops deleted ones: O(objects + new log new).
func (l *Local) merge() {
	if len(l.born) == 0 && len(l.order) <= 2*len(l.objs)+16 {
		return
	}
	slices.SortFunc(l.born, func(a, b *entry) int { return cmp.Compare(a.id, b.id) })
	out := make([]*entry, 0, len(l.objs))
	i, j := 0, 0
	for i < len(l.order) || j < len(l.born) {
		var e *entry
		if j == len(l.born) || (i < len(l.order) && l.order[i].id < l.born[j].id) {
			e, i = l.order[i], i+1
		} else {
			e, j = l.born[j], j+1
		}
		if !e.dead {
			out = append(out, e)
		}
	}
	clear(l.born)
	l.order, l.born = out, l.born[:0]
}

func (l *Local) account() {
	for _, e := range l.order {
		if e.dead {
			continue
		}
		st := e.obj.State()
		ks := &l.stats[e.kind-1]
		ks.ObjectFrames++
		switch {
		case e.fresh:
			l.dbuf = world.AppendDelta(l.dbuf[:0], nil, st)
			ks.Created++
			ks.FullBytes += int64(len(l.dbuf))
			e.fresh = false
		case e.prev != nil && world.Changed(e.prev, st):
			l.dbuf = world.AppendDelta(l.dbuf[:0], e.prev, st)
			ks.Updates++
			ks.DeltaBytes += int64(len(l.dbuf))
			ks.MaxDelta = max(ks.MaxDelta, len(l.dbuf))
		}
		if e.prev == nil {
			e.prev = st.Clone()
		} else {
			e.prev.CopyFrom(st)
		}
	}
}

// Lookup returns the object with the given ID and the node it lives on.
func (l *Local) Lookup(id world.ObjectID) (obj world.Object, node int, ok bool) {
	e, ok := l.objs[id]
	if !ok {
		return nil, 0, false
	}
	return e.obj, e.node, true
}

// Range calls fn for every live object in increasing ID order, with its
// node, until fn returns false. fn must not create or delete objects.
func (l *Local) Range(fn func(obj world.Object, node int) bool) {
	l.merge()
	for _, e := range l.order {
		if !e.dead && !fn(e.obj, e.node) {
			return
		}
	}
}

// each collects the live entries whose location lies in box, by ID, and
// calls fn on them (skipping those deleted meanwhile).
func (l *Local) each(box world.Box, fn func(e *entry) bool) {
	if box.Validate(l.dims) != nil || box.Empty(l.dims) {
		return
	}
	var buf []*entry
	if k := len(l.bufs); k > 0 {
		buf, l.bufs = l.bufs[k-1][:0], l.bufs[:k-1]
	}
	cx0, cx1 := cellCoord(box.Min[0]), cellCoord(box.Max[0])
	cy0, cy1 := int32(math.MinInt32), int32(math.MaxInt32)
	if l.dims > 1 {
		cy0, cy1 = cellCoord(box.Min[1]), cellCoord(box.Max[1])
	}
	if cells := (float64(cx1) - float64(cx0) + 1) * (float64(cy1) - float64(cy0) + 1); cells > float64(len(l.cells)) {
		for _, es := range [][]*entry{l.order, l.born} { // the box spans more cells than are occupied
			for _, e := range es {
				if !e.dead && box.Contains(e.loc, l.dims) {
					buf = append(buf, e)
				}
			}
		}
		slices.SortFunc(buf, func(a, b *entry) int { return cmp.Compare(a.id, b.id) })
	} else {
		for cy := int64(cy0); cy <= int64(cy1); cy++ {
			for cx := int64(cx0); cx <= int64(cx1); cx++ {
				for _, e := range l.cells[[2]int32{int32(cx), int32(cy)}] {
					if box.Contains(e.loc, l.dims) {
						buf = append(buf, e)
					}
				}
			}
		}
		slices.SortFunc(buf, func(a, b *entry) int { return cmp.Compare(a.id, b.id) })
	}
	for _, e := range buf {
		if !e.dead && !fn(e) {
			break
		}
	}
	clear(buf)
	l.bufs = append(l.bufs, buf[:0])
}

// localCtx is the world.Context of one think call on node.
type localCtx struct {
	l    *Local
	node int
}

func (c localCtx) Now() time.Duration { return time.Duration(c.l.frame) * Frame }

func (c localCtx) Rand() *rand.Rand { return c.l.rng }

func (c localCtx) Lookup(id world.ObjectID) (world.Object, bool, bool) {
	e, ok := c.l.objs[id]
	if !ok {
		return nil, false, false
	}
	return e.obj, e.node == c.node, true
}

func (c localCtx) Each(box world.Box, fn func(obj world.Object, primary bool) bool) {
	c.l.each(box, func(e *entry) bool { return fn(e.obj, e.node == c.node) })
}

func (c localCtx) Create(s *world.Schema, init func(*world.State)) (world.Object, error) {
	e, err := c.l.create(c.node, s, init)
	if err != nil {
		return nil, err
	}
	return e.obj, nil
}

func (c localCtx) Delete(id world.ObjectID) error {
	e, ok := c.l.objs[id]
	if !ok {
		return fmt.Errorf("%w: %v", world.ErrUnknownObject, id)
	}
	if e.node != c.node {
		return fmt.Errorf("%w: %v lives on node %d, not %d", world.ErrNotPrimary, id, e.node, c.node)
	}
	e.dead = true
	delete(c.l.objs, id)
	c.l.remove(e)
	return nil
}

func (c localCtx) Write(id world.ObjectID, fn func(*world.State)) error {
	l := c.l
	e, ok := l.objs[id]
	if !ok {
		return fmt.Errorf("%w: %v", world.ErrUnknownObject, id)
	}
	st := e.obj.State()
	if e.node == c.node {
		fn(st)
	} else {
		// A replica's tentative write, as its primary receives it.
		if l.wtmp == nil || l.wtmp.Schema() != st.Schema() {
			l.wtmp = st.Clone()
		} else {
			l.wtmp.CopyFrom(st)
		}
		fn(l.wtmp)
		l.wbuf = world.AppendWrite(l.wbuf[:0], st, l.wtmp)
		if _, err := world.ApplyWrite(st, l.wbuf); err != nil {
			return fmt.Errorf("arena: tentative write to %v: %w", id, err)
		}
		if l.measure {
			ks := &l.stats[e.kind-1]
			ks.Writes++
			ks.WriteBytes += int64(len(l.wbuf))
		}
	}
	l.reindex(e)
	return nil
}

// WriteTo is Write: every object of a Local world is known to every node.
// Its kind must be the object's.
func (c localCtx) WriteTo(id world.ObjectID, s *world.Schema, fn func(*world.State)) error {
	if e, ok := c.l.objs[id]; ok && e.obj.State().Schema() != s {
		return fmt.Errorf("arena: write to %v as kind %q, which is kind %q", id, s.Name(), e.obj.State().Schema().Name())
	}
	return c.Write(id, fn)
}
