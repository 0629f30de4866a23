package lab

import (
	"cmp"
	"slices"
	"time"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/node"
	osim "github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/world"
)

// frameSnap is what the ground-truth observer needs of one node, taken
// right after the node's frame by the node's own adapter (snapCore). The
// simulator may run a window of events on parallel workers and call the
// observer after the window, when the node may have received more packets;
// the snapshot is the node as it was at its frame, so the observer sees
// exactly what it would in a serial run.
type frameSnap struct {
	prims []snapPrim     // the node's primaries, in ID order
	objs  []snapObj      // every local object, in ID order
	view  []world.Box    // node.View
	infos []replica.Info // scratch
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

type snapObj struct {
	id      world.ObjectID
	version uint64
	primary bool
}

// take records n as it is now.
func (f *frameSnap) take(n *node.Node) {
	f.infos = n.Objects(f.infos[:0])
	f.prims, f.objs = f.prims[:0], f.objs[:0]
	for k := range f.infos {
		in := &f.infos[k]
		f.objs = append(f.objs, snapObj{id: in.ID, version: in.Version, primary: in.Primary})
		if in.Primary {
			f.prims = append(f.prims, snapPrim{id: in.ID, version: in.Version, produced: in.Produced, loc: in.State.Location(), kind: in.Kind})
		}
	}
	clear(f.infos) // drop State references
	f.view = n.View(f.view[:0])
}

// object returns what the snapshot holds of id.
func (f *frameSnap) object(id world.ObjectID) (snapObj, bool) {
	k, ok := slices.BinarySearchFunc(f.objs, id, func(o snapObj, id world.ObjectID) int { return cmp.Compare(o.id, id) })
	if !ok {
		return snapObj{}, false
	}
	return f.objs[k], true
}

// snapCore adapts a node core to the simulator and snapshots its node
// after every frame (and, with timed, the frame's wall-clock time).
type snapCore struct {
	osim.Core
	n     *node.Node
	snap  *frameSnap
	timed bool
}

func (c *snapCore) Tick(now time.Duration) {
	var start time.Time
	if c.timed {
		start = time.Now()
	}
	c.Core.Tick(now)
	if c.timed {
		c.snap.frame, c.snap.timed = time.Since(start), true
	}
	c.snap.take(c.n)
}
