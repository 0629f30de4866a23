package live

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// The node's discovery follows the peer set (peerset.go), under every
// architecture, so that a node membership gossip introduces takes part in
// discovery as a static peer does:
//
//   - broadcast: the node pushes its primaries to every peer in the set
//     that the failure detector has not declared dead or that the mesh
//     is connected to; a peer that leaves (after its drain) or dies stops
//     being a target within a frame of the set's change, or of its
//     declaration with its connection closed, and one the mesh reaches
//     again (a healed partition) is a target again;
//   - colyseus: a node that is in no ring (DaemonConfig.JoinsRing: it
//     bootstraps none) joins the running ring through a peer of the set,
//     retried through the next peer every joinEvery until it is a member;
//     the same holds for a member the ring found isolated. With gossip,
//     a node leaves the ring after its drain (leaveRing): its key range
//     and the soft state stored for it go to its successor. A member that
//     dies is repaired around by the ring's probes, and the owners' next
//     publications and subscriptions rebuild the soft state it held;
//   - directory: nothing to follow (the rendezvous learns of the nodes
//     from their publications).

// peerFollower is the frame hook that keeps the discovery's members in
// step with the peer set (the driver's goroutine only).
type peerFollower struct {
	self  wire.NodeID
	peers *PeerSet
	disc  node.Discovery
	log   *slog.Logger
	// connected reports whether the mesh is connected to a peer (nil:
	// never): a peer declared dead is a broadcast target again once the
	// mesh reaches it (a healed partition), until it is heard from.
	connected func(wire.NodeID) bool

	dead     []wire.NodeID
	targets  []wire.NodeID // the broadcast targets last set (nil: the configuration's)
	set      bool          // targets were set once
	left     bool          // the node left its ring (no rejoin)
	nextJoin time.Duration // the earliest next join attempt
	tries    int           // join attempts (picks the seed)
	member   bool          // a ring member at the last frame
	inRing   atomic.Bool   // member, for Ready (any goroutine)
}

// joinEvery is how often a colyseus node in no ring tries to join it
// again through the next peer (locate.JoinRetry, the locator's own).
const joinEvery = 2 * time.Second

// Frame implements FrameHook.
func (f *peerFollower) Frame(now time.Duration, n *node.Node) {
	ids := f.peers.IDs()
	f.dead = n.Dead(f.dead[:0])
	if member, joining, ring := discovery.RingState(f.disc); ring {
		f.followRing(now, ids, member, joining)
		return
	}
	targets := make([]wire.NodeID, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(f.dead, id) || f.connected != nil && f.connected(id) {
			targets = append(targets, id)
		}
	}
	if f.set && slices.Equal(targets, f.targets) {
		return
	}
	if err := discovery.SetMembers(f.disc, targets); err != nil {
		f.log.Error("discovery members", "err", err) // cannot happen: the set's IDs are distinct
		return
	}
	if f.set {
		f.log.Info("discovery members changed", "members", targets)
	}
	f.targets, f.set = targets, true
}

// followRing joins the ring through a live peer when the node is in none.
func (f *peerFollower) followRing(now time.Duration, ids []wire.NodeID, member, joining bool) {
	f.inRing.Store(member)
	if member != f.member {
		f.member = member
		if member {
			f.log.Info("colyseus: a member of the ring")
		} else if !f.left {
			f.log.Warn("colyseus: out of the ring")
		}
	}
	if member || joining || f.left || now < f.nextJoin {
		return
	}
	live := make([]wire.NodeID, 0, len(ids))
	for _, id := range ids {
		if !slices.Contains(f.dead, id) {
			live = append(live, id)
		}
	}
	if len(live) == 0 {
		return
	}
	seed := live[f.tries%len(live)]
	f.tries++
	f.nextJoin = now + joinEvery
	if err := discovery.JoinRing(f.disc, now, seed); err != nil {
		f.log.Warn("colyseus: joining the ring", "through", seed, "err", err)
		return
	}
	f.log.Info("colyseus: joining the ring", "through", seed)
}

// leaveRing makes a colyseus node that is a ring member leave the ring
// (after its drain, Run's goroutine, the driver stopped): the leave's
// frames go out with a few more frames.
func (d *Daemon) leaveRing() {
	if member, _, ring := discovery.RingState(d.follow.disc); !ring || !member {
		return
	}
	d.follow.left = true
	if err := discovery.LeaveRing(d.follow.disc, d.node.Now()); err != nil {
		d.log.Warn("colyseus: leaving the ring", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*d.cfg.FramePeriod())
	defer cancel()
	d.driver.Run(ctx)
	d.log.Info("colyseus: left the ring")
}
