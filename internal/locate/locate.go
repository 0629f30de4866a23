package locate

import (
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Primary is one local primary as discovery sees it.
type Primary struct {
	ID         world.ObjectID
	Loc        world.Point
	Controller wire.NodeID // the node whose player controls it (client-server); else the node itself
	Interest   []world.Box // its interest this frame (aliases the caller's buffer)
	// Anticipated are the boxes it expects to need soon (world.Anticipator;
	// aliases the caller's buffer): discovered and fetched like the
	// interest, not part of the view.
	Anticipated []world.Box
	New         bool // created since the previous frame
	// Vel is the object's own velocity prediction (world.Mover), valid
	// when HasVel: interest prediction uses it instead of the observed
	// moving average.
	Vel    world.Point
	HasVel bool
}

// Frame is what a node tells its locator once per frame.
type Frame struct {
	Now       time.Duration
	Self      wire.NodeID
	Dims      int         // dimensions of the world's space
	Primaries []Primary   // in ID order
	View      []world.Box // the union of the node's interests
	// Anticipated is the union of the primaries' anticipated boxes: the
	// locator discovers what is in them as it does for the view.
	Anticipated []world.Box
	// Holders, if set, appends to dst the nodes that hold a replica of
	// local primary id (its primary sends them updates): a locator need
	// not introduce the object to them again.
	Holders func(id world.ObjectID, dst []wire.NodeID) []wire.NodeID
	// Dead lists, in increasing order, the nodes this node's failure
	// detector has declared dead and not heard from since (see Out.Watch):
	// a locator stops sending to them and moves what they served (a
	// rendezvous) elsewhere.
	Dead []wire.NodeID
}

// Found says that object ID, whose primary is on node Node, was at Loc; the
// information is valid until Until.
type Found struct {
	ID   world.ObjectID
	Node wire.NodeID
	Loc  world.Point
	// Vel is the object's velocity at publication (units/s; zero if the
	// locator does not know it) and Heard when the finding arrived here
	// (on this node's clock): the object is about Loc + Vel × (now −
	// Heard) later, until Until (Where).
	Vel   world.Point
	Heard time.Duration
	Until time.Duration
	// At is when Node published the location, on Node's clock, if the
	// locator knows (zero otherwise): of two findings of one object from
	// the same node, the later At is the newer.
	At time.Duration
}

// Where returns where the object is expected at now: Loc moved at Vel for
// the time since Heard, at most until Until (a rendezvous sends the
// publication again before then if the object leaves that line).
func (f *Found) Where(now time.Duration, dims int) world.Point {
	if f.Vel == (world.Point{}) || now <= f.Heard || f.Until <= f.Heard {
		return f.Loc
	}
	t := (min(now, f.Until) - f.Heard).Seconds()
	p := f.Loc
	for d := range min(dims, world.MaxDims) {
		p[d] += f.Vel[d] * t
	}
	return p
}

// Newer reports whether f is strictly newer than g (news of the same
// object): by publication time when both come from the same node and carry
// one (a publication that lives longer, such as an idle object's, may be
// the older), else by expiry.
func (f Found) Newer(g Found) bool {
	if f.Node == g.Node && f.At != g.At && f.At > 0 && g.At > 0 {
		return f.At > g.At
	}
	return f.Until > g.Until
}

// Push says that node To must hold a replica of local primary ID.
type Push struct {
	ID world.ObjectID
	To wire.NodeID
}

// Out collects a locator's outputs. Outbox must be set by the caller.
type Out struct {
	Outbox *wire.Outbox
	Found  []Found
	Push   []Push
	// Watch lists nodes the locator depends on (a rendezvous): the node's
	// failure detector heartbeats them and reports their death in
	// Frame.Dead. A locator sets it in every Tick; it is kept until the
	// next.
	Watch []wire.NodeID
}

// Reset empties Found and Push (Watch is kept: the locator sets it).
func (o *Out) Reset() { o.Found, o.Push = o.Found[:0], o.Push[:0] }

// inAny reports whether p lies in one of boxes.
func inAny(p world.Point, boxes []world.Box, dims int) bool {
	for i := range boxes {
		if boxes[i].Contains(p, dims) {
			return true
		}
	}
	return false
}

// Check decodes a discovery frame without acting on it, so a node can
// validate a whole packet before any of it changes state.
func Check(t wire.Type, body []byte, scratch *Scratch) error {
	switch t {
	case wire.TypePublish, wire.TypeMatch:
		return scratch.pubs.Decode(body)
	case wire.TypeSubscribe:
		return scratch.sub.Decode(body)
	}
	return nil
}

// Scratch holds decode buffers for Check.
type Scratch struct {
	pubs wire.Pubs
	sub  wire.Subscribe
}

// Handles reports whether frames of type t belong to discovery.
func Handles(t wire.Type) bool {
	return t == wire.TypePublish || t == wire.TypeSubscribe || t == wire.TypeMatch
}
