package discovery

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// Run-time membership: a cluster whose nodes come and go while it runs
// (package live's membership gossip) tells each node's discovery of the
// changes through these functions, called on the goroutine that drives
// the node (between its Tick and Step calls). The directory needs none of
// them (the nodes find the rendezvous, which learns of them from their
// publications); a broadcast node's targets are its members (SetMembers);
// a colyseus node joins and leaves the ring (JoinRing, LeaveRing), whose
// protocol moves the key ranges and their soft state, and repairs itself
// around a member that dies.

// SetMembers replaces the members a broadcast node pushes its primaries
// to (self may be among them), from its next frame. Under the other
// architectures it does nothing: their members are found by their
// protocols. It refuses a list naming a node twice, changing nothing.
func SetMembers(d node.Discovery, members []wire.NodeID) error {
	if b, ok := d.(*locate.Broadcast); ok {
		if err := b.SetMembers(members); err != nil {
			return fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	return nil
}

// Members appends the nodes a broadcast node pushes to (not itself) to
// dst, in ID order; under the other architectures it appends nothing.
func Members(d node.Discovery, dst []wire.NodeID) []wire.NodeID {
	if b, ok := d.(*locate.Broadcast); ok {
		return b.Members(dst)
	}
	return dst
}

// RingState reports a colyseus node's place in its ring: a member, or
// joining it; ok is false under the other architectures.
func RingState(d node.Discovery) (member, joining, ok bool) {
	m, ok := d.(*locate.Mercury)
	if !ok {
		return false, false, false
	}
	return m.Ring().Member(), m.Ring().Joining(), true
}

// JoinRing makes a colyseus node that is in no ring (built with
// Config.Joins, or after LeaveRing) join the running ring through seed,
// any member, which gives it half of its own key range (split at its load
// median); the soft state of that range follows. The node is a member
// once the seed's owner answers (RingState); should the join fail, the
// node tries again through seed on its own. It refuses another
// architecture, a node that is a member or joining, and seed = the node
// itself.
func JoinRing(d node.Discovery, now time.Duration, seed wire.NodeID) error {
	m, ok := d.(*locate.Mercury)
	if !ok {
		return fmt.Errorf("%w: join a ring: the architecture has no ring", ErrConfig)
	}
	if err := m.Join(now, seed); err != nil {
		return fmt.Errorf("discovery: join the ring through node %d: %w", seed, err)
	}
	return nil
}

// LeaveRing makes a colyseus node leave its ring gracefully: its key
// range and the publications and subscriptions it stores for it go to its
// successor, and its neighbours forget it at once. The frames go out with
// the node's next Tick, which the caller must run before it stops the
// node. It refuses another architecture and a node that is not a member.
func LeaveRing(d node.Discovery, now time.Duration) error {
	m, ok := d.(*locate.Mercury)
	if !ok {
		return fmt.Errorf("%w: leave a ring: the architecture has no ring", ErrConfig)
	}
	if err := m.Ring().Leave(now); err != nil {
		return fmt.Errorf("discovery: leave the ring: %w", err)
	}
	return nil
}
