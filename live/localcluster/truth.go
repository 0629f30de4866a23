package localcluster

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// The ground truth of a live cluster is the observer of package truth,
// the simulator's own: Observe decodes every node's /debug/world answer
// into a truth.Snapshot (DecodeWorld) and gives them to a truth.Observer,
// every frame of every node in the order of their times (Observer.Frame,
// through a timeline), or, sampling less often than every frame, a
// sample of all the nodes at a time (Observer.Sample). The observer
// reports every player node's view to its Recorder (the simulator's,
// sim.Recorder, for the simulator's definitions of missing replicas and
// discovery latency) and samples the staleness of the replicas in view
// from the versions and their production times the primaries' snapshots
// show.

// DecodeWorld records a node's /debug/world answer s in dst (reusing its
// buffers) for the ground-truth observer of a space of dims dimensions:
// its ID, time, view boxes, and objects (primaries with their locations,
// versions and production times; replicas with their versions). It
// rejects a node 0, a box or a primary's location of another dimension,
// and an object listed twice, leaving dst unspecified.
func DecodeWorld(s *live.WorldSnapshot, dims int, dst *truth.Snapshot) error {
	return DecodeWorldKinds(s, dims, nil, dst)
}

// DecodeWorldKinds is DecodeWorld that also gives each primary its kind,
// kinds[name] for the schema name the snapshot lists (an unknown or
// missing name: kind 0, unknown), for the observer's per-kind measures
// (truth.Observer.TrackKinds).
func DecodeWorldKinds(s *live.WorldSnapshot, dims int, kinds map[string]world.Kind, dst *truth.Snapshot) error {
	if s.Node == 0 {
		return fmt.Errorf("localcluster: world snapshot of node 0")
	}
	dst.Reset(wire.NodeID(s.Node), time.Duration(s.NowNs))
	for _, b := range s.View {
		if len(b[0]) != dims || len(b[1]) != dims {
			return fmt.Errorf("localcluster: node %d: a view box of %d and %d dimensions in a space of %d", s.Node, len(b[0]), len(b[1]), dims)
		}
		var box world.Box
		copy(box.Min[:], b[0])
		copy(box.Max[:], b[1])
		dst.View = append(dst.View, box)
	}
	objs := s.Objects
	if !slices.IsSortedFunc(objs, func(a, b live.SnapObject) int { return cmp.Compare(a.ID, b.ID) }) {
		objs = slices.Clone(objs)
		slices.SortFunc(objs, func(a, b live.SnapObject) int { return cmp.Compare(a.ID, b.ID) })
	}
	for _, o := range objs {
		in := truth.Object{ID: world.ObjectID(o.ID), Version: o.Version, Primary: o.Primary, Produced: time.Duration(o.ProducedNs)}
		if o.Primary {
			if len(o.Loc) != dims {
				return fmt.Errorf("localcluster: node %d: primary %v at a location of %d dimensions in a space of %d", s.Node, in.ID, len(o.Loc), dims)
			}
			copy(in.Loc[:], o.Loc)
			in.Kind = kinds[o.Kind]
		}
		if err := dst.Add(in); err != nil {
			return fmt.Errorf("localcluster: %w", err)
		}
	}
	return nil
}

// ReplicasOf counts the replicas in a snapshot whose primary is on node
// id, as the snapshot's node knows it (SnapObject.From; for a snapshot
// without it, the node that created the object, node.Home) (0 for nil).
func ReplicasOf(s *live.WorldSnapshot, id wire.NodeID) int {
	n := 0
	if s == nil {
		return 0
	}
	for _, o := range s.Objects {
		if o.Primary {
			continue
		}
		from := wire.NodeID(o.From)
		if from == 0 {
			from = node.Home(world.ObjectID(o.ID))
		}
		if from == id {
			n++
		}
	}
	return n
}
