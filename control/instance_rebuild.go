package control

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
)

// Rebuilding the instance plane. The nodes that run instances know all
// of the plane's state: a server knows the instances it runs, a player
// host the instance it hosts, and each of them the instance as it was
// opened (its players, box and RTTs: the driver hands them over with the
// placement) and which of its players left (it served them). A returning
// plane asks every live node (servers and player hosts) for an
// InstanceReport and calls Rebuild; a server that sends none is down.
// The counters (Stats) start again from zero.

// InstanceReport is what a live node tells a returning plane of the
// instances it runs: a server every instance on it (possibly none), a
// player host the instances it hosts.
type InstanceReport struct {
	Node      wire.NodeID
	Instances []RunningInstance
}

// RunningInstance is an open instance as the node running it knows it.
type RunningInstance struct {
	// Instance is the instance as it was opened: every player, those who
	// left too, in the order Open was given them.
	Instance
	// Left names the players who left.
	Left []string
	// Replica, on a player host, names the player whose machine keeps
	// the replica ("" for none).
	Replica string
}

// InstanceSnapshot returns the reports the live nodes would send for the
// current state, as RebuildInstances takes them: one per up server
// (possibly with no instances) and one per hosting player host, in node
// order, their instances in ID order.
func (x *Instances) InstanceSnapshot() []InstanceReport {
	by := map[wire.NodeID]*InstanceReport{}
	for j, n := range x.cfg.Nodes {
		if x.up[j] {
			by[n.ID] = &InstanceReport{Node: n.ID}
		}
	}
	for _, id := range x.InstanceIDs() {
		in := x.insts[id]
		ri := RunningInstance{Instance: Instance{ID: in.id, Box: in.box, Players: slices.Clone(in.players), RTT: slices.Clone(in.group.RTT)}}
		for i, p := range in.players {
			if !in.present[i] {
				ri.Left = append(ri.Left, p.ID)
			}
		}
		var at wire.NodeID
		if in.server >= 0 {
			at = x.cfg.Nodes[in.server].ID
		} else {
			at = in.players[in.hosting.Server].Host
			if r := in.hosting.Replica; r >= 0 {
				ri.Replica = in.players[r].ID
			}
		}
		rep := by[at]
		if rep == nil {
			rep = &InstanceReport{Node: at}
			by[at] = rep
		}
		rep.Instances = append(rep.Instances, ri)
	}
	out := make([]InstanceReport, 0, len(by))
	for _, r := range by {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b InstanceReport) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// RebuildInstances rebuilds a new instance plane's state from the
// reports of every live node (see InstanceReport): a server that sends no
// report is down; each reported instance runs where its node says, with
// the players who left gone, the host of a hosted instance being the
// player whose host node reports it. The plane then decides as one that
// never went down: the same events give the same decisions. The plane
// must be new (no instances, every server up). No report at all means
// every server is down and no instance runs. Reports that contradict
// each other (a node or an instance reported twice, a server above its
// capacity, a hosted instance whose node is none of its present players'
// hosts, a replica that is not another present player's host, an
// instance with no player left, or one Open would refuse) are an error
// wrapping ErrRebuild (or ErrBadInstance) and change nothing.
func (x *Instances) RebuildInstances(now time.Duration, reports []InstanceReport) error {
	if err := x.checkTime(now); err != nil {
		return err
	}
	if len(x.insts) > 0 || slices.Contains(x.up, false) {
		return fmt.Errorf("%w: the instance plane already holds state (%d instances)", ErrRebuild, len(x.insts))
	}
	// Build into a new plane, and take its state only if every report is
	// consistent.
	y, err := NewInstances(x.cfg)
	if err != nil {
		return fmt.Errorf("control: internal error: %w", err)
	}
	type item struct {
		node   wire.NodeID
		server int // -1: a player host
		ri     *RunningInstance
	}
	var items []item
	reported := map[wire.NodeID]bool{}
	for k := range reports {
		r := &reports[k]
		if r.Node == 0 {
			return fmt.Errorf("%w: a report from node 0", ErrRebuild)
		}
		if reported[r.Node] {
			return fmt.Errorf("%w: node %d reported twice", ErrRebuild, r.Node)
		}
		reported[r.Node] = true
		j, server := y.index[r.Node]
		if !server {
			j = -1
			if len(r.Instances) == 0 {
				return fmt.Errorf("%w: player host %d reports no instance", ErrRebuild, r.Node)
			}
		}
		for i := range r.Instances {
			items = append(items, item{node: r.Node, server: j, ri: &r.Instances[i]})
		}
	}
	for j, n := range y.cfg.Nodes {
		y.up[j] = reported[n.ID]
	}
	slices.SortStableFunc(items, func(a, b item) int { return cmp.Compare(a.ri.ID, b.ri.ID) })
	for _, it := range items {
		ri := it.ri
		in, err := y.check(ri.Instance)
		if err != nil {
			return fmt.Errorf("%w (reported by node %d)", err, it.node)
		}
		for _, p := range ri.Left {
			i := slices.IndexFunc(in.players, func(q InstancePlayer) bool { return q.ID == p })
			if i < 0 || !in.present[i] {
				return fmt.Errorf("%w: node %d reports %q left instance %q: not a present player of it", ErrRebuild, it.node, p, ri.ID)
			}
			in.present[i] = false
			in.n--
		}
		if in.n == 0 {
			return fmt.Errorf("%w: node %d reports instance %q with no player left", ErrRebuild, it.node, ri.ID)
		}
		if it.server >= 0 {
			if ri.Replica != "" {
				return fmt.Errorf("%w: server %d reports a replica for instance %q", ErrRebuild, it.node, ri.ID)
			}
			in.server = it.server
			y.load[it.server] += in.n
			if y.load[it.server] > y.cfg.Nodes[it.server].Capacity {
				return fmt.Errorf("%w: server %d reports %d instance players, above its capacity %d", ErrRebuild, it.node, y.load[it.server], y.cfg.Nodes[it.server].Capacity)
			}
		} else {
			h := slices.IndexFunc(in.players, func(q InstancePlayer) bool { return q.Host == it.node })
			if h < 0 || !in.present[h] {
				return fmt.Errorf("%w: node %d reports hosting instance %q, but runs no present player's host", ErrRebuild, it.node, ri.ID)
			}
			in.server = balance.Hosted
			in.hosting = balance.Hosting{Server: h, Replica: -1}
			if ri.Replica != "" {
				r := slices.IndexFunc(in.players, func(q InstancePlayer) bool { return q.ID == ri.Replica })
				if r < 0 || r == h || !in.present[r] || in.players[r].Host == 0 {
					return fmt.Errorf("%w: instance %q's replica %q is not another present player with a player host", ErrRebuild, ri.ID, ri.Replica)
				}
				in.hosting.Replica = r
			}
		}
		y.insts[in.id] = in
		for _, p := range in.players {
			if p.Host != 0 {
				y.hosts[p.Host] = append(y.hosts[p.Host], in.id)
			}
		}
	}
	x.up, x.load, x.insts, x.hosts = y.up, y.load, y.insts, y.hosts
	x.stats = InstanceStats{}
	x.now = now
	return nil
}
