package harness

import (
	"time"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/truth"
)

// frameSnap is a node's snapshot of one frame for the ground-truth
// observer (truth.Snapshot, taken right after the frame by the node's own
// adapter, snapCore) and, with Config.WallFrameTimes, the frame's
// wall-clock time. The simulator may run a window of events on parallel
// workers and call the observer after the window, or even while the next
// window runs (sim.Sim.ObserveBehind), when the node may have received
// more packets and run one more frame; the snapshot is the node as it was
// at its frame (kept in a snapPair, so that the next frame does not
// overwrite it), so the observer sees exactly what it would in a serial
// run.
type frameSnap struct {
	truth.Snapshot
	frame time.Duration
	timed bool
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
	snap.Take(c.n, now)
}
