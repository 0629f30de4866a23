package harness

import (
	"errors"
	"fmt"
	"time"

	"github.com/overworld/overworld/wire"
)

// Faults: a World's nodes can crash and restart, and the network between
// them can be partitioned, now (between runs, or from a scheduled
// function) or at a game time (Schedule). The ground-truth observer
// follows: a crashed node's primaries stop being live objects, so no view
// expects them, until another node holds them as primaries (failover);
// a restarted node's view counts from its restart.

// nodeIndex returns the index of node id of the world, or an error naming it.
func (w *World) nodeIndex(id wire.NodeID) (int, error) {
	if id < 1 || int(id) > len(w.nodes) {
		return 0, fmt.Errorf("lab/harness: no node %d (the world's nodes are 1 to %d)", id, len(w.nodes))
	}
	return int(id) - 1, nil
}

// Crash crashes node id now (sim.Sim.Crash): it runs no more frames,
// sends nothing more, and packets in flight to it are lost. Its objects
// are gone with it: the ground truth stops counting its primaries as live
// objects (truth.Observer.Down). Call it between runs or from a function
// scheduled with Schedule. It rejects a node the world does not have and
// a node that is down, changing nothing.
func (w *World) Crash(id wire.NodeID) error {
	if _, err := w.nodeIndex(id); err != nil {
		return err
	}
	if err := w.sim.Crash(id); err != nil {
		return fmt.Errorf("lab/harness: crash: %w", err)
	}
	return w.truth.Down(id) // cannot fail: id ≥ 1
}

// Restart brings crashed node id back now as a new process (sim.Sim.Restart):
// a new node core with an Incarnation one higher than its previous run's
// (node.Config.Incarnation), the same discovery configuration as at New,
// and no objects (the game's spawns were its first incarnation's), at the
// same site, its first frame within a frame period. Packets sent to the
// crashed incarnation are not delivered to it. Nodes returns the new core
// from then on; Result's counters add up every incarnation's. Call it
// between runs or from a function scheduled with Schedule. It rejects a
// node the world does not have, a node that is up, and a node restarted
// 65535 times already, changing nothing.
func (w *World) Restart(id wire.NodeID) error {
	i, err := w.nodeIndex(id)
	if err != nil {
		return err
	}
	if w.sim.Up(id) {
		return fmt.Errorf("lab/harness: restart node %d: it is up (crash it first)", id)
	}
	if w.inc[i] == 1<<16-1 {
		return fmt.Errorf("lab/harness: restart node %d: incarnation %d is the last", id, w.inc[i])
	}
	n, disc, core, err := w.buildNode(i, w.inc[i]+1)
	if err != nil {
		return err
	}
	if err := w.sim.Restart(id, core); err != nil {
		return fmt.Errorf("lab/harness: restart: %w", err)
	}
	w.gone = append(w.gone, w.nodes[i])
	w.nodes[i], w.discs[i] = n, disc
	w.inc[i]++
	return nil
}

// Incarnation returns node id's incarnation: 0 for the run New started,
// one more for each Restart.
func (w *World) Incarnation(id wire.NodeID) (uint16, error) {
	i, err := w.nodeIndex(id)
	if err != nil {
		return 0, err
	}
	return w.inc[i], nil
}

// Partition cuts the network between the given sides of nodes now, until
// game time heal (0: until Heal), as sim.Sim.Partition does: packets from
// a node of one side to a node of another are lost; nodes on no side are
// unaffected. It returns the partition's ID for Heal. It rejects fewer
// than two sides, an empty side, a node on two sides or not of the world,
// and a heal time not after now, changing nothing.
func (w *World) Partition(heal time.Duration, sides ...[]wire.NodeID) (int, error) {
	for _, side := range sides {
		for _, id := range side {
			if _, err := w.nodeIndex(id); err != nil {
				return 0, err
			}
		}
	}
	p, err := w.sim.Partition(heal, sides...)
	if err != nil {
		return 0, fmt.Errorf("lab/harness: partition: %w", err)
	}
	return p, nil
}

// Heal ends partition p now. It rejects a partition that is not active.
func (w *World) Heal(p int) error {
	if err := w.sim.Heal(p); err != nil {
		return fmt.Errorf("lab/harness: heal: %w", err)
	}
	return nil
}

// Schedule runs fn at game time at (not before now), after the frames
// and deliveries due then: fn may call Crash, Restart, Partition and
// Heal, or act on the nodes. If fn returns an error, Run returns it (joined
// with any other) at the end of that second of game time. It rejects a
// nil fn and a time before now.
func (w *World) Schedule(at time.Duration, fn func(w *World) error) error {
	if fn == nil {
		return fmt.Errorf("lab/harness: schedule: nil function")
	}
	err := w.sim.Schedule(at, func(now time.Duration) {
		if err := fn(w); err != nil {
			w.failed = errors.Join(w.failed, fmt.Errorf("at %v: %w", now, err))
		}
	})
	if err != nil {
		return fmt.Errorf("lab/harness: schedule: %w", err)
	}
	return nil
}
