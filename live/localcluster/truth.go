package localcluster

import (
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// ViewRecorder receives each node's view: the simulator's Recorder
// (sim.Recorder.View) implements it, so that the live cluster's missing
// replicas and discovery latency have the simulator's definitions.
type ViewRecorder interface {
	View(node wire.NodeID, now time.Duration, interest []uint64, held []bool) error
}

// Truth accumulates ground-truth measures over samples of every node's
// snapshot: missing replicas and discovery latency through a
// ViewRecorder (the same definitions as the simulator's, reported once per
// node per sample instead of once per frame), and replica staleness.
type Truth struct {
	rec      ViewRecorder
	staleSum time.Duration
	staleN   int
	ids      []uint64
	held     []bool
}

// NewTruth returns a Truth that reports the views to rec (nil: staleness
// only).
func NewTruth(rec ViewRecorder) *Truth { return &Truth{rec: rec} }

// Add reports, for each player node's snapshot of one sample (taken
// within a frame of each other; nil for a node that did not answer), the
// objects inside its view whose primary is on another node and whether
// it holds a copy; the rendezvous infra (0: none) has no view. For each
// replica in view it samples its staleness: 0 when it has its primary's
// version, else the time since the primary moved past it, estimated as
// its age minus one frame (the primary's next version, for an object that
// changes every frame).
func (t *Truth) Add(snaps []*live.WorldSnapshot, infra wire.NodeID, frame time.Duration) {
	type obj struct {
		owner   uint32
		loc     []float64
		version uint64
	}
	prims := map[uint64]obj{}
	for _, s := range snaps {
		if s == nil {
			continue
		}
		for _, o := range s.Objects {
			if o.Primary {
				prims[o.ID] = obj{s.Node, o.Loc, o.Version}
			}
		}
	}
	for _, s := range snaps {
		if s == nil || wire.NodeID(s.Node) == infra {
			continue
		}
		held := map[uint64]live.SnapObject{}
		for _, o := range s.Objects {
			held[o.ID] = o
		}
		t.ids, t.held = t.ids[:0], t.held[:0]
		for id, o := range prims {
			if o.owner == s.Node || !inBoxes(o.loc, s.View) {
				continue
			}
			r, ok := held[id]
			t.ids, t.held = append(t.ids, id), append(t.held, ok)
			if !ok {
				continue
			}
			t.staleN++
			if r.Version < o.version {
				t.staleSum += max(0, time.Duration(s.NowNs-r.ProducedNs)-frame)
			}
		}
		if t.rec != nil {
			// A snapshot older than the node's previous one cannot happen
			// (each answers at its next frame); the error is ignored.
			_ = t.rec.View(wire.NodeID(s.Node), time.Duration(s.NowNs), t.ids, t.held)
		}
	}
}

// Staleness returns the sum of the staleness samples and their count.
func (t *Truth) Staleness() (sum time.Duration, n int) { return t.staleSum, t.staleN }

func inBoxes(p []float64, boxes [][2][]float64) bool {
	for _, b := range boxes {
		in := len(b[0]) == len(p)
		for d := 0; in && d < len(p); d++ {
			in = b[0][d] <= p[d] && p[d] <= b[1][d]
		}
		if in {
			return true
		}
	}
	return false
}

// ReplicasOf counts the replicas of the objects node id created
// (world.ObjectID.Origin) in a snapshot (0 for nil).
func ReplicasOf(s *live.WorldSnapshot, id wire.NodeID) int {
	n := 0
	if s == nil {
		return 0
	}
	for _, o := range s.Objects {
		if !o.Primary && wire.NodeID(world.ObjectID(o.ID).Origin()) == id {
			n++
		}
	}
	return n
}
