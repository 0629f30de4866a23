package node

import (
	"fmt"
	"slices"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Preferred backups: an instance overflowed to a player host keeps its
// warm backups on the replicated host the control plane chose
// (control.Instances), not on whichever node the BackupPolicy would
// pick. PreferBackup names, for the primaries whose location lies in a
// box, the nodes to back them up on, in order of preference; the node's
// BackupPolicy (ReplicaConfig.Backup) chooses for every other primary,
// and for a pinned one when no preferred node is a candidate (a live
// holder of a replica, or a live peer).
//
// A preference applies whenever a primary chooses its backup: when it is
// created or promoted (failover), and when its backup dies. It does not
// displace a live backup: a primary that arrives by migration keeps the
// node it came from as its first backup, so a driver that moves running
// objects to a player host with their backup on the replicated host
// migrates them through the replicated host (server → replica → host).
// The order lists the successors too: after a promotion the new primary,
// skipping itself, takes the next node of the order.

type backupPin struct {
	box   world.Box
	order []wire.NodeID
}

// PreferBackup makes the nodes of order (at most 16, none 0) the
// preferred backups, in order, of the primaries whose location lies in
// box, replacing any preference for the same box; an empty order removes
// it. It rejects a bad box or order, changing nothing.
func (n *Node) PreferBackup(box world.Box, order []wire.NodeID) error {
	if err := box.Validate(n.dims); err != nil {
		return fmt.Errorf("node: preferred backups: %w", err)
	}
	if len(order) > 16 {
		return fmt.Errorf("node: preferred backups: %d nodes, want at most 16", len(order))
	}
	if slices.Contains(order, 0) {
		return fmt.Errorf("node: preferred backups: node 0 in %v", order)
	}
	n.pins = slices.DeleteFunc(n.pins, func(p backupPin) bool { return p.box == box })
	if len(order) > 0 {
		n.pins = append(n.pins, backupPin{box: box, order: slices.Clone(order)})
	}
	return nil
}

// PreferredBackups returns the preferred backups of the primaries at
// location p (the latest preference whose box holds p), or nil.
func (n *Node) PreferredBackups(p world.Point) []wire.NodeID {
	for i := len(n.pins) - 1; i >= 0; i-- {
		if n.pins[i].box.Contains(p, n.dims) {
			return slices.Clone(n.pins[i].order)
		}
	}
	return nil
}

// pinnedPolicy wraps the configured backup policy with the preferences.
func (n *Node) pinnedPolicy(base replica.BackupPolicy) replica.BackupPolicy {
	if base == nil {
		base = replica.LeastLatency
	}
	return func(c replica.BackupChoice) (wire.NodeID, bool) {
		if len(n.pins) > 0 {
			if obj, _, ok := n.store.Lookup(c.Object); ok {
				loc := obj.State().Location()
				for i := len(n.pins) - 1; i >= 0; i-- {
					if !n.pins[i].box.Contains(loc, n.dims) {
						continue
					}
					for _, x := range n.pins[i].order {
						if x != c.Self && (slices.Contains(c.Holders, x) || slices.Contains(c.Peers, x)) {
							return x, true
						}
					}
					break
				}
			}
		}
		return base(c)
	}
}
