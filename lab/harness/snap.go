package harness

import (
	"slices"
	"sync"
	"time"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/world"
)

// frameSnap is what the ground-truth observer needs of one node, taken
// right after the node's frame by the node's own adapter (snapCore). The
// simulator may run a window of events on parallel workers and call the
// observer after the window, or even while the next window runs
// (sim.Sim.ObserveBehind), when the node may have received more packets
// and run one more frame; the snapshot is the node as it was at its frame
// (kept in a snapPair, so that the next frame does not overwrite it), so
// the observer sees exactly what it would in a serial run.
type frameSnap struct {
	prims []snapPrim  // the node's primaries, in ID order
	objs  []snapObj   // every local object, in ID order
	prim  []uint64    // bit k: objs[k] is a primary
	view  []world.Box // node.View
	frame time.Duration
	timed bool
}

type snapPrim struct {
	id       world.ObjectID
	version  uint64
	produced time.Duration
	loc      world.Point
	kind     world.Kind
}

// snapObj is one local object (16 bytes: whether it is a primary is in
// frameSnap.prim).
type snapObj struct {
	id      world.ObjectID
	version uint64
}

// briefScratch holds the buffers take reads a node's Briefs into: one
// per worker at a time, still in its caches from the previous take,
// instead of one per snapshot (thousands of nodes' worth, each read once
// per frame and evicted by the next).
var briefScratch = sync.Pool{New: func() any { return new([]replica.Brief) }}

// take records n as it is now.
func (f *frameSnap) take(n *node.Node) {
	buf := briefScratch.Get().(*[]replica.Brief)
	infos := n.Briefs((*buf)[:0])
	f.prims, f.objs = f.prims[:0], f.objs[:0]
	f.prim = slices.Grow(f.prim[:0], (len(infos)+63)/64)[:(len(infos)+63)/64]
	clear(f.prim)
	for k := range infos {
		in := &infos[k]
		f.objs = append(f.objs, snapObj{id: in.ID, version: in.Version})
		if in.Primary {
			f.prim[k/64] |= 1 << (k % 64)
			f.prims = append(f.prims, snapPrim{id: in.ID, version: in.Version, produced: in.Produced, loc: in.State.Location(), kind: in.Kind})
		}
	}
	clear(infos) // drop State references
	*buf = infos
	briefScratch.Put(buf)
	f.view = n.View(f.view[:0])
}

// object returns what the snapshot holds of id, and whether it is a
// primary.
func (f *frameSnap) object(id world.ObjectID) (o snapObj, primary, ok bool) {
	// A binary search written out: the observer asks about every object of
	// every view, and slices.BinarySearchFunc calls its comparator.
	i, j := 0, len(f.objs)
	for i < j {
		m := int(uint(i+j) >> 1)
		if f.objs[m].id < id {
			i = m + 1
		} else {
			j = m
		}
	}
	if i < len(f.objs) && f.objs[i].id == id {
		return f.objs[i], f.prim[i/64]&(1<<(i%64)) != 0, true
	}
	return snapObj{}, false, false
}

// snapPair is a node's last two frame snapshots: the simulator observes a
// parallel window while the next one runs (sim.Sim.ObserveBehind), in
// which the node may take one more snapshot, but not two. Snapshot k (0:
// the one taken before the first frame, k: after the node's k-th frame)
// is buf[k%2]; the observer's k-th tick of the node reads it.
type snapPair struct {
	buf   [2]frameSnap
	taken int // frames snapshotted
	seen  int // frames observed
}

// next returns the snapshot of the next frame observed.
func (p *snapPair) next() *frameSnap {
	p.seen++
	return &p.buf[p.seen%2]
}

// cur returns the snapshot of the latest frame observed.
func (p *snapPair) cur() *frameSnap { return &p.buf[p.seen%2] }

// snapCore adapts a node core to the simulator and snapshots its node
// after every frame (and, with timed, the frame's wall-clock time).
type snapCore struct {
	sim.Core
	n     *node.Node
	snaps *snapPair
	timed bool
}

// Unwrap returns the core snapCore wraps, which the simulator steps and
// drains directly (sim.Wrapper).
func (c *snapCore) Unwrap() sim.Core { return c.Core }

func (c *snapCore) Tick(now time.Duration) {
	var start time.Time
	if c.timed {
		start = time.Now()
	}
	c.Core.Tick(now)
	c.snaps.taken++
	snap := &c.snaps.buf[c.snaps.taken%2]
	if c.timed {
		snap.frame, snap.timed = time.Since(start), true
	}
	snap.take(c.n)
}
