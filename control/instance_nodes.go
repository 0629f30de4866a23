package control

import (
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
)

// AddServer adds server node n with n.Capacity instance seats, up (a game
// server that enrolled at run time): instances open on it, and Algorithm
// 1 may move running ones to it, from the next Open on; none moves now.
// An ID of 0 or already a server's, the host node of a player of an open
// instance, a capacity out of 1…2³⁰, more than 1,000 servers or a time
// before the last is an error, and changes nothing.
func (x *Instances) AddServer(now time.Duration, n Node) error {
	if err := x.checkTime(now); err != nil {
		return err
	}
	switch _, dup := x.index[n.ID]; {
	case n.ID == 0:
		return fmt.Errorf("%w: server node ID 0", ErrConfig)
	case dup:
		return fmt.Errorf("%w: node %d is a server already", ErrNodeState, n.ID)
	case len(x.hosts[n.ID]) > 0:
		return fmt.Errorf("%w: node %d is the player host of instance %q", ErrNodeState, n.ID, x.hosts[n.ID][0])
	case n.Capacity < 1 || n.Capacity > 1<<30:
		return fmt.Errorf("%w: server node %d has instance capacity %d, want 1…%d", ErrConfig, n.ID, n.Capacity, 1<<30)
	case len(x.cfg.Nodes) >= maxNodes:
		return fmt.Errorf("%w: %d server nodes already, at most %d", ErrConfig, len(x.cfg.Nodes), maxNodes)
	}
	x.now = now
	x.index[n.ID] = len(x.cfg.Nodes)
	x.cfg.Nodes = append(slices.Clip(x.cfg.Nodes), n)
	x.up = append(x.up, true)
	x.load = append(x.load, 0)
	return nil
}

// RemoveServer takes server n out for good (an enrolled game server
// revoked, drained or long gone). Its instances are re-placed first,
// largest first, as a dead server's are (NodeDown), from n: when n is up
// it still runs them, so the decisions (MoveInstance, OverflowInstance)
// carry no Failover, and the box migrates from it; an instance that fits
// nowhere and cannot overflow is lost (LoseInstance): with the last
// server gone, every instance it ran. A node that is not a server or a
// time before the last is an error, and changes nothing.
func (x *Instances) RemoveServer(now time.Duration, n wire.NodeID) ([]Decision, error) {
	if err := x.checkTime(now); err != nil {
		return nil, err
	}
	j, ok := x.index[n]
	if !ok {
		return nil, fmt.Errorf("%w: node %d is not a server", ErrUnknownNode, n)
	}
	x.now = now
	wasUp := x.up[j]
	x.up[j] = false
	out := x.replaceAll(j, n, !wasUp)
	// Forget it: the servers after it shift down by one.
	x.cfg.Nodes = slices.Delete(slices.Clone(x.cfg.Nodes), j, j+1)
	x.up = slices.Delete(x.up, j, j+1)
	x.load = slices.Delete(x.load, j, j+1)
	delete(x.index, n)
	for id, k := range x.index {
		if k > j {
			x.index[id] = k - 1
		}
	}
	for _, in := range x.insts {
		if in.server > j {
			in.server--
		}
	}
	return out, nil
}

// replaceAll re-places every instance of server j (node n, no longer up),
// largest first, from n (failover: n died) and returns the decisions; an
// instance that fits nowhere and cannot overflow is lost (LoseInstance).
// All of them leave the cluster before the first round, so that no round
// sheds one that is still to be re-placed.
func (x *Instances) replaceAll(j int, n wire.NodeID, failover bool) []Decision {
	var gone []*inst
	for _, id := range x.InstanceIDs() {
		if in := x.insts[id]; in.server == j {
			gone = append(gone, in)
		}
	}
	slices.SortStableFunc(gone, func(a, b *inst) int { return b.n - a.n })
	for _, in := range gone {
		x.remove(in)
		in.server = balance.Hosted
	}
	var out []Decision
	for _, in := range gone {
		ds, err := x.place(in, n, failover)
		if err != nil {
			x.stats.Lost++
			out = append(out, Decision{Kind: LoseInstance, Instance: in.id, From: n})
			continue
		}
		out = append(out, ds...)
	}
	return out
}
