package world

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Object is a game object as the runtime sees it. The same type serves as a
// primary (its node runs Think) and as a replica (built by the runtime with
// Schema.NewObject around a State it keeps in sync; Think is never called).
// A game builds its objects with Context.Create, never directly.
type Object interface {
	// State returns the object's replicated state. It must return the State
	// the object was built around, for the object's whole life.
	State() *State
	// Interest appends the object's area of interest (range queries over the
	// Space) to dst and returns it. Nil or empty means "interested in
	// nothing". Called on primaries once per frame, after Think.
	Interest(dst []Box) []Box
	// Think runs one frame of the object's behaviour on its primary.
	Think(ctx Context)
}

// Attacher is implemented by objects that should be replicated wherever
// another object is (Colyseus' AttachTo: a missile attached to its
// shooter is replicated on every node that replicates the shooter, skipping
// discovery).
type Attacher interface {
	// AttachTo returns the object this one is attached to, or 0.
	AttachTo() ObjectID
}

// Mover is implemented by objects that predict their own motion; interest
// prediction uses it instead of a moving average of observed positions.
type Mover interface {
	// Velocity returns the predicted velocity in attribute units per second.
	Velocity() Point
}

// Anticipator is implemented by objects that know where they will need
// to see soon, beyond their interest: a dead avatar knows where it will
// respawn, a player about to use a teleporter knows where it leads. The
// node discovers, fetches and keeps replicas in these boxes as it does for
// the interest, so that they are already there when the object arrives,
// but the boxes are not part of the object's interest (nor of the node's
// view, which is what consistency is measured against).
type Anticipator interface {
	// Anticipate appends the boxes the object expects to enter soon.
	Anticipate(dst []Box) []Box
}

// Errors a Context returns.
var (
	ErrUnknownObject = errors.New("world: no such object on this node")
	ErrNotPrimary    = errors.New("world: object is a replica here; only its primary's node may delete it")
	ErrUnregistered  = errors.New("world: schema is not registered with this node")
)

// DefaultFrame is the time between two frames (two Think calls of a
// primary) when the driver running the game is not told another: 100 ms,
// 10 frames per second, the server rate of Quake II and of the model
// workload Colyseus measures. It is the game API's because it is a
// property of the game being run, the rate its speeds and timers are
// written against. The simulator and the live daemon both default to it,
// and the node's protocol defaults that count in frames (8 frames of delta
// history, a 5-frame velocity window for interest prediction) are tuned
// for it. A game that thinks at another rate gives its driver that period.
const DefaultFrame = 100 * time.Millisecond

// Context is what a think function may do. The runtime (package node)
// implements it; it is valid only during the Think call it was passed to.
type Context interface {
	// Now returns the frame's virtual time.
	Now() time.Duration
	// Rand returns the node's seeded random source (deterministic under
	// the simulator).
	Rand() *rand.Rand
	// Lookup returns the local primary or replica with the given ID.
	Lookup(id ObjectID) (obj Object, primary bool, ok bool)
	// Each calls fn for every local primary and replica whose location lies
	// in box, in increasing ID order, until fn returns false.
	Each(box Box, fn func(obj Object, primary bool) bool)
	// Create makes a new primary of kind s on this node, calls init on its
	// zero State (with its new cluster-unique ID) and returns it. The object
	// thinks from the next frame on.
	Create(s *Schema, init func(*State)) (Object, error)
	// Delete removes a local primary; its replicas are deleted everywhere.
	Delete(id ObjectID) error
	// Write applies fn to a local object's state. On a replica the change is
	// applied locally at once and forwarded to the primary as a tentative
	// update (numeric fields add, Bool and Ref fields are set); the primary's
	// next update overrides the local tentative value.
	Write(id ObjectID, fn func(*State)) error
	// WriteTo applies fn to a zero State of kind s and sends the change as
	// a tentative write to object id, which this node need not hold: it
	// reaches the primary wherever it is (through the name service),
	// exactly once (numeric fields add, Bool and Ref fields are set). On
	// an object this node holds it is Write.
	WriteTo(id ObjectID, s *Schema, fn func(*State)) error
}
