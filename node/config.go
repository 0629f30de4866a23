package node

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Discovery finds the replicas a node needs and the nodes its primaries
// must update. Package discovery builds one (discovery.New) from an
// architecture name; the implementations (Directory, Broadcast,
// ClientServer, and Mercury, the distributed locator on the ring) are
// internal. A Discovery serves one node. One whose frames locate.Check does
// not validate implements Check(t, body) error as well; one whose Check
// keeps what it decoded implements StepChecked too (checkedStepper).
type Discovery interface {
	// Tick is called once per frame after the think functions ran.
	Tick(f *DiscoveryFrame, out *DiscoveryOut)
	// Handles reports whether frames of type t are discovery messages this
	// architecture accepts.
	Handles(t wire.Type) bool
	// Step handles one received discovery frame (already validated).
	Step(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *DiscoveryOut) error
}

// checker is implemented by architectures whose frames locate.Check does
// not know (the distributed locator's ring and locator frames): the node
// validates a packet's discovery frames with it.
type checker interface {
	Check(t wire.Type, body []byte) error
}

// checkedStepper is implemented by architectures whose Check keeps what
// it decoded (the directory): the node steps the last discovery frame of
// a packet it checked with StepChecked, which does not decode it again.
type checkedStepper interface {
	checker
	StepChecked(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *DiscoveryOut) error
}

// hoster is implemented by architectures in which some nodes may not hold
// primaries (client-server): new objects are handed off to the host.
type hoster interface {
	Host() (host wire.NodeID, handoff bool)
}

// Config configures a Node.
type Config struct {
	ID        wire.NodeID     // this node
	Registry  *world.Registry // the game's schemas, identical on every node
	Discovery Discovery       // this node's locator (required)
	// Rand is the node's random source, handed to think functions. Nil
	// means a PCG seeded with the node ID (deterministic, but the same
	// for every run: seed it from the run's seed).
	Rand *rand.Rand
	// Replica tunes replica management; Self and Registry are filled in.
	Replica ReplicaConfig
	// Prefetch widens the view the node fetches and keeps replicas for by
	// this much on each side, per dimension: an object the locator found
	// within it is replicated before it enters an interest (at the cost of
	// replicas of objects near it). Zero fetches for the view itself, as
	// Colyseus does. Components must be finite and non-negative.
	Prefetch world.Point
	// FarMargin, when not zero, slows the updates this node's primaries
	// send a holder while the object is far from what the holder needs:
	// outside the interests and anticipated boxes of the holder's
	// primaries this node holds replicas of, widened by FarMargin, now and
	// over the next FarEvery at the object's velocity (world.Mover). Such
	// a holder (most often one that prefetches the object, see Prefetch)
	// gets an update every FarEvery instead of every frame, and every
	// frame again as soon as the object comes near. A holder whose
	// primaries this node holds no replica of gets every frame.
	// Components must be finite and non-negative.
	FarMargin world.Point
	// PushMutual makes the node push each of its primaries, every frame,
	// to the nodes whose primaries need it as far as this node knows: the
	// nodes of the replicas it holds whose interests, widened by Prefetch,
	// contain the primary's location. Interest is mostly mutual: a node
	// holds replicas of the objects near its own primaries, so the nodes
	// near this node's primaries are known here. Such a node gets the
	// object one one-way delay after it comes near, as discovery's
	// publication, match and request would take several; a push lasts
	// Replica.PushTTL after the last frame that made it (a missile created
	// in a bystander's view, a bot walking or respawning into one).
	// Discovery still finds every object; the push only comes first.
	PushMutual bool
	// FetchAhead: a discovered moving object is fetched as soon as the
	// location its velocity predicts FetchAhead from now lies in the view
	// the node fetches for (widened by Prefetch), not only once the
	// location it predicts now does, so that a fast object (a missile)
	// arriving from afar is held when it enters. Zero: only now. At most
	// Replica.ReplicaLinger (a replica fetched ahead is dropped after that
	// long out of the view).
	FetchAhead time.Duration
	// FarEvery is the period of the far holders' updates (FarMargin):
	// 0 means 400 ms; at most 1 s (and below the primaries' history,
	// Replica.HistoryLen frames, or far holders get full states).
	FarEvery time.Duration
	// Incarnation numbers this run of node ID: a node that restarts
	// (after a crash, an upgrade) must get a higher Incarnation than any
	// earlier run of its ID, so that the object IDs it creates and its
	// writers' sequence numbers never repeat an earlier run's. Object IDs
	// carry it: their origin (world.ObjectID.Origin) is Incarnation<<16 |
	// ID, so with a non-zero Incarnation the ID must be below 65536. Zero
	// is the first run.
	Incarnation uint16
	// MaxPayload is the largest packet payload the node makes (frames that
	// are larger on their own travel alone). 0 means wire.DefaultMaxPayload.
	MaxPayload int
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("node: bad config")

// Validate returns c with defaults filled in, or an error naming the
// problem. It works on a copy.
func (c Config) Validate() (Config, error) {
	if c.Registry == nil {
		return c, fmt.Errorf("%w: no Registry", ErrConfig)
	}
	if c.Discovery == nil {
		return c, fmt.Errorf("%w: no Discovery (build one with discovery.New)", ErrConfig)
	}
	if c.Rand == nil {
		c.Rand = rand.New(rand.NewPCG(uint64(c.ID), 0x6f766572))
	}
	for d, m := range c.Prefetch {
		if !(m >= 0) || m > 1e12 {
			return c, fmt.Errorf("%w: Prefetch %v in dimension %d (want finite, non-negative)", ErrConfig, m, d)
		}
	}
	for d, m := range c.FarMargin {
		if !(m >= 0) || m > 1e12 {
			return c, fmt.Errorf("%w: FarMargin %v in dimension %d (want finite, non-negative)", ErrConfig, m, d)
		}
	}
	if c.FarEvery == 0 {
		c.FarEvery = 400 * time.Millisecond
	}
	if c.FarEvery < 0 || c.FarEvery > time.Second {
		return c, fmt.Errorf("%w: FarEvery %v (want 0 for 400ms, or up to 1s)", ErrConfig, c.FarEvery)
	}
	if c.Incarnation != 0 && c.ID >= 1<<16 {
		return c, fmt.Errorf("%w: node ID %d with Incarnation %d (incarnations need IDs below 65536)", ErrConfig, c.ID, c.Incarnation)
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = wire.DefaultMaxPayload
	}
	if c.MaxPayload < 64 {
		return c, fmt.Errorf("%w: MaxPayload %d (want at least 64)", ErrConfig, c.MaxPayload)
	}
	c.Replica.Self, c.Replica.Registry, c.Replica.Inc = c.ID, c.Registry, c.Incarnation
	if c.Replica.MaxFrame == 0 {
		c.Replica.MaxFrame = c.MaxPayload - 40
	}
	r, err := c.Replica.Validate()
	if err != nil {
		return c, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	c.Replica = r
	if c.FetchAhead < 0 || c.FetchAhead > r.ReplicaLinger {
		return c, fmt.Errorf("%w: FetchAhead %v (want 0 to Replica.ReplicaLinger, %v)", ErrConfig, c.FetchAhead, r.ReplicaLinger)
	}
	return c, nil
}
