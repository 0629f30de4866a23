package node

import (
	"errors"
	"fmt"
	"time"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// MaxID is the largest node ID a node accepts: an object's epoch names the
// node that began it in 15 bits.
const MaxID = replica.MaxNode

// Migrate hands local primary id, and the primaries attached to it
// (world.Attacher), to node to at time now: the state, the writers'
// progress and the replica holders move, the epoch rises by one, holders
// and the ID's home learn where it went, and this node forwards what
// still reaches it (see internal/replica's authority notes). The object
// thinks on node to from its first frame after the migration arrives.
// It returns the IDs migrated. The driver drains the node afterwards.
func (n *Node) Migrate(now time.Duration, id world.ObjectID, to wire.NodeID) ([]world.ObjectID, error) {
	n.advance(now)
	if n.handoff {
		return nil, fmt.Errorf("node: %v: a client of the client-server architecture holds no primaries", id)
	}
	ids, err := n.store.Migrate(n.now, id, to)
	if err != nil {
		return nil, n.objErr(err, id)
	}
	n.store.FlushAuthority(n.now, &n.out)
	for _, x := range ids {
		n.touch(x)
	}
	return ids, nil
}

// MigrateRegion migrates every local primary whose location lies in box
// (a region) to node to, with what is attached to them, and returns
// their IDs.
func (n *Node) MigrateRegion(now time.Duration, box world.Box, to wire.NodeID) ([]world.ObjectID, error) {
	n.advance(now)
	if err := box.Validate(n.dims); err != nil {
		return nil, fmt.Errorf("node: region: %w", err)
	}
	ids, err := n.store.MigrateBox(n.now, box, to)
	n.store.FlushAuthority(n.now, &n.out)
	for _, x := range ids {
		n.touch(x)
	}
	return ids, err
}

// WriteTo applies fn to a zero State of kind s and sends the change as a
// write to object id, wherever its primary is: numeric fields add, Bool
// and Ref fields are set (world.Context.WriteTo). On a local object it is
// Write. The write is applied exactly once, and resent until the primary
// acknowledges it.
func (n *Node) WriteTo(id world.ObjectID, s *world.Schema, fn func(*world.State)) error {
	if _, _, ok := n.store.Lookup(id); ok {
		return n.Write(id, fn)
	}
	if s == nil {
		return fmt.Errorf("node: write to %v: nil schema", id)
	}
	if _, ok := n.cfg.Registry.Kind(s); !ok {
		return fmt.Errorf("%w (%q)", world.ErrUnregistered, s.Name())
	}
	zero, st := s.NewState(id), s.NewState(id)
	fn(st)
	if !world.Changed(zero, st) {
		return nil
	}
	return n.objErr(n.store.WriteTo(id, world.AppendWrite(nil, zero, st)), id)
}

func (n *Node) objErr(err error, id world.ObjectID) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, replica.ErrUnknown):
		return fmt.Errorf("%w: %v", world.ErrUnknownObject, id)
	case errors.Is(err, replica.ErrNotPrimary):
		return fmt.Errorf("%w: %v", world.ErrNotPrimary, id)
	}
	return err
}

// Epoch returns the epoch of local object id as this node knows it
// (raised by one at every migration and failover), and whether id is
// held here.
func (n *Node) Epoch(id world.ObjectID) (uint32, bool) { return n.store.Epoch(id) }

// BackupOf returns the node that backs local primary id up, if any
// (ReplicaConfig.Failover).
func (n *Node) BackupOf(id world.ObjectID) (wire.NodeID, bool) { return n.store.BackupOf(id) }

// BackedUp appends the IDs of the objects this node keeps a backup of.
func (n *Node) BackedUp(dst []world.ObjectID) []world.ObjectID { return n.store.BackedUp(dst) }

// Dead appends the nodes this node's failure detector has declared dead
// and not heard from since, in increasing order.
func (n *Node) Dead(dst []wire.NodeID) []wire.NodeID { return n.store.Dead(dst) }

// DeclareDead declares node id dead at now, as if the failure detector
// had: its primaries this node backs up are promoted here. A driver calls
// it for a node it knows is gone (stopped by its operator).
func (n *Node) DeclareDead(now time.Duration, id wire.NodeID) {
	n.advance(now)
	n.store.DeclareDead(n.now, id)
}

// Incarnation returns the node's incarnation (Config.Incarnation).
func (n *Node) Incarnation() uint16 { return n.cfg.Incarnation }

// Home returns the node whose name service binds id: the node that
// created it (ObjectID.Origin's low 16 bits when incarnations are used).
func Home(id world.ObjectID) wire.NodeID { return replica.Home(id) }

// AuthorityEvent is one event of an object's authority (a migration, a
// promotion, a write applied or acknowledged, a death), reported to
// ReplicaConfig.OnEvent.
type AuthorityEvent = replica.Event

// BackupChoice is what a BackupPolicy chooses a backup from.
type BackupChoice = replica.BackupChoice

// ErrMigrating is returned by Migrate for an object already on its way
// to a node: its migration waits for its old backup to give its copy up
// (and is aborted, the object staying here, if that does not come
// within two seconds). A caller that must see the object leave asks
// again later.
var ErrMigrating = replica.ErrMigrating

// BackupPolicy chooses the node that backs a primary up.
type BackupPolicy = replica.BackupPolicy

// Backup policies: LeastLatency (the default; the region-migration
// paper's LL) and LongestUp (the hybrid paper's uptime criterion).
var (
	LeastLatency BackupPolicy = replica.LeastLatency
	LongestUp    BackupPolicy = replica.LongestUp
)

// AuthorityEventKind names an AuthorityEvent.
type AuthorityEventKind = replica.EventKind

// The kinds of AuthorityEvent.
const (
	EvMigrated       = replica.EvMigrated       // this node handed ID (Version) to Node at Epoch
	EvInstalled      = replica.EvInstalled      // this node took ID over from Node at Epoch
	EvPromoted       = replica.EvPromoted       // this node promoted its backup of ID at Epoch (Base: the backup's version); Node died
	EvSteppedDown    = replica.EvSteppedDown    // this node's primary of ID stepped down for Node's Epoch
	EvWriteApplied   = replica.EvWriteApplied   // the primary applied write Seq of Writer (Inc) to ID at Epoch, in Version
	EvWriteAcked     = replica.EvWriteAcked     // the writer learnt its writes to ID up to Seq are applied and safe
	EvWriteAbandoned = replica.EvWriteAbandoned // the writer gave write Seq to ID up
	EvDead           = replica.EvDead           // this node declared Node dead
	EvBackup         = replica.EvBackup         // this node chose Node as the backup of ID at Epoch
)

// ForkGap is how far a promoted primary's versions jump past its backup's.
const ForkGap = replica.ForkGap
