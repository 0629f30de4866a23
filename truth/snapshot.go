package truth

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Snapshot is one node as of one of its frames: what the observer reads
// of it. A driver fills it either from a node core it runs in-process
// (Take) or object by object (Reset, then Add in ID order, and View).
// Reusing a Snapshot reuses its buffers.
type Snapshot struct {
	// Node is the node's ID (not 0).
	Node wire.NodeID
	// At is the node's time of the frame: the time of the view report.
	At time.Duration
	// View is the node's view (node.View): the interest boxes of its
	// primaries, as the node computed them.
	View []world.Box
	// Interest is the node's interest as the observer computes it from
	// the game's own definition, independently of the node: the Interest
	// of an object built by its schema (world.Schema.NewObject) around
	// the State of each of the node's primaries (under client-server, of
	// its own objects), as Take and Add with a State record it. When
	// OwnInterest is set the observer measures the node against Interest,
	// so a node whose view is wrong (too small) is caught, not trusted;
	// otherwise (a driver that cannot read the objects' States, such as
	// a live cluster's /debug/world) against View.
	Interest    []world.Box
	OwnInterest bool

	prims []prim   // the primaries, in ID order
	objs  []obj    // every local object, in ID order
	prim  []uint64 // bit k: objs[k] is a primary
}

// Object is one local object of a node as Add records it. Produced, Loc
// and Kind are read for primaries only.
type Object struct {
	ID      world.ObjectID
	Version uint64
	Primary bool
	// Produced is when the primary made Version (its commit time, on the
	// clock of every snapshot's At).
	Produced time.Duration
	// Loc is the primary's location.
	Loc world.Point
	// Kind is the primary's schema in the game's registry (0: unknown;
	// the per-kind measures leave it out).
	Kind world.Kind
	// State, when not nil, is the object's state (read during Add only):
	// the observer adds the Interest its schema's object has around it to
	// the snapshot's Interest (and sets OwnInterest), for a primary, or
	// for an object of the node's own (Own) whose primary is elsewhere
	// (a client's avatar under client-server).
	State *world.State
	// Own marks an object whose interest is the node's although the node
	// does not hold its primary (see State).
	Own bool
}

type prim struct {
	id       world.ObjectID
	version  uint64
	produced time.Duration
	loc      world.Point
	kind     world.Kind
}

// obj is one local object (16 bytes: whether it is a primary is in
// Snapshot.prim).
type obj struct {
	id      world.ObjectID
	version uint64
}

// Reset empties s for node id's frame at time at, keeping its buffers.
func (s *Snapshot) Reset(id wire.NodeID, at time.Duration) {
	s.Node, s.At = id, at
	s.View, s.Interest, s.OwnInterest = s.View[:0], s.Interest[:0], false
	s.prims, s.objs, s.prim = s.prims[:0], s.objs[:0], s.prim[:0]
}

// addInterest appends the interest of the game's object around st, as
// the game defines it (Schema.NewObject, then Interest), keeping the
// valid, non-empty boxes.
func (s *Snapshot) addInterest(st *world.State) {
	dims := st.Schema().Space().Dims()
	start := len(s.Interest)
	boxes := st.Schema().NewObject(st).Interest(s.Interest)
	kept := boxes[:start]
	for _, b := range boxes[start:] {
		if b.Validate(dims) == nil && !b.Empty(dims) {
			kept = append(kept, b)
		}
	}
	s.Interest, s.OwnInterest = kept, true
}

// Add records one local object; objects must come in increasing ID order
// (a node lists them so). It rejects an ID not above the previous one,
// changing nothing.
func (s *Snapshot) Add(o Object) error {
	if n := len(s.objs); n > 0 && o.ID <= s.objs[n-1].id {
		return fmt.Errorf("truth: snapshot of node %d: object %v after %v (want increasing IDs)", s.Node, o.ID, s.objs[n-1].id)
	}
	k := len(s.objs)
	if k%64 == 0 {
		s.prim = append(s.prim, 0)
	}
	s.objs = append(s.objs, obj{id: o.ID, version: o.Version})
	if o.Primary {
		s.prim[k/64] |= 1 << (k % 64)
		s.prims = append(s.prims, prim{id: o.ID, version: o.Version, produced: o.Produced, loc: o.Loc, kind: o.Kind})
	}
	if o.State != nil && (o.Primary || o.Own) {
		s.addInterest(o.State)
	}
	return nil
}

// briefScratch holds the buffers Take reads a node's Briefs into: one
// per worker at a time, still in its caches from the previous take,
// instead of one per snapshot (thousands of nodes' worth, each read once
// per frame and evicted by the next).
var briefScratch = sync.Pool{New: func() any { return new([]node.ObjectBrief) }}

// hoster is a discovery that hands a node's objects to a server
// (client-server's, as node reads it).
type hoster interface{ Host() (wire.NodeID, bool) }

// Take records node core n as it is now, at its frame of time at: its
// objects, its own view (View), and its interest as the game defines it
// (Interest, OwnInterest): the interests of its primaries, or under
// client-server, where the server holds every primary, of the objects
// this incarnation of the node created.
func (s *Snapshot) Take(n *node.Node, at time.Duration) {
	buf := briefScratch.Get().(*[]node.ObjectBrief)
	infos := n.Briefs((*buf)[:0])
	s.Node, s.At = n.ID(), at
	s.prims, s.objs = s.prims[:0], s.objs[:0]
	s.Interest, s.OwnInterest = s.Interest[:0], true
	handoff := false
	if h, ok := n.Config().Discovery.(hoster); ok {
		_, handoff = h.Host()
	}
	// The objects this incarnation of the node created (world.ObjectID's
	// origin: the incarnation above the node ID).
	origin := uint32(n.Config().Incarnation)<<16 | uint32(n.ID())
	s.prim = slices.Grow(s.prim[:0], (len(infos)+63)/64)[:(len(infos)+63)/64]
	clear(s.prim)
	for k := range infos {
		in := &infos[k]
		s.objs = append(s.objs, obj{id: in.ID, version: in.Version})
		if in.Primary {
			s.prim[k/64] |= 1 << (k % 64)
			s.prims = append(s.prims, prim{id: in.ID, version: in.Version, produced: in.Produced, loc: in.State.Location(), kind: in.Kind})
		}
		if handoff && in.ID.Origin() == origin || !handoff && in.Primary {
			s.addInterest(in.State)
		}
	}
	clear(infos) // drop State references
	*buf = infos
	briefScratch.Put(buf)
	s.View = n.View(s.View[:0])
}

// Len returns the number of local objects recorded.
func (s *Snapshot) Len() int { return len(s.objs) }

// Object returns the version of local object id, whether the node holds
// its primary, and whether it holds it at all.
func (s *Snapshot) Object(id world.ObjectID) (version uint64, primary, ok bool) {
	o, primary, ok := s.object(id)
	return o.version, primary, ok
}

func (s *Snapshot) object(id world.ObjectID) (o obj, primary, ok bool) {
	// A binary search written out: the observer asks about every object of
	// every view, and slices.BinarySearchFunc calls its comparator.
	i, j := 0, len(s.objs)
	for i < j {
		m := int(uint(i+j) >> 1)
		if s.objs[m].id < id {
			i = m + 1
		} else {
			j = m
		}
	}
	if i < len(s.objs) && s.objs[i].id == id {
		return s.objs[i], s.prim[i/64]&(1<<(i%64)) != 0, true
	}
	return obj{}, false, false
}
