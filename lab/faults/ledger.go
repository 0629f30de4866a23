package faults

import (
	"fmt"
	"slices"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// ledger follows every write by ID through the nodes' authority events:
// which writes each lineage of an object applied, and which writes their
// writers were told are safe. Every epoch of an object is a lineage; a
// migration (EvMigrated: Prev, the epoch it leaves, and Version, the
// state it hands over) or a failover (EvPromoted: Prev, and Base, the
// backup's version the new primary starts from) begins a lineage that
// inherits what its parent applied up to that version. Two failovers of
// one epoch (or a migration and a failover) make two children of one
// parent; at the end the lineage of each object's live primary is walked
// up to its root, and only what it inherited counts.
type ledger struct {
	applied map[world.ObjectID]map[uint32][]applied // by object and epoch
	parent  map[lineage]inherit
	acked   map[writeKey]world.ObjectID
}

type lineage struct {
	id    world.ObjectID
	epoch uint32
}

// inherit is a lineage's parent epoch and the parent's version it took.
type inherit struct {
	epoch uint32
	upTo  uint64
}

type writeKey struct {
	writer wire.NodeID
	inc    uint16
	seq    uint32
}

type applied struct {
	writeKey
	ver uint64
}

func newLedger() *ledger {
	return &ledger{applied: map[world.ObjectID]map[uint32][]applied{}, parent: map[lineage]inherit{}, acked: map[writeKey]world.ObjectID{}}
}

// event records one authority event.
func (l *ledger) event(ev node.AuthorityEvent) {
	switch ev.Kind {
	case node.EvWriteApplied:
		m := l.applied[ev.ID]
		if m == nil {
			m = map[uint32][]applied{}
			l.applied[ev.ID] = m
		}
		m[ev.Epoch] = append(m[ev.Epoch], applied{writeKey{ev.Writer, ev.Inc, ev.Seq}, ev.Version})
	case node.EvPromoted:
		l.parent[lineage{ev.ID, ev.Epoch}] = inherit{ev.Prev, ev.Base}
	case node.EvMigrated:
		l.parent[lineage{ev.ID, ev.Epoch}] = inherit{ev.Prev, ev.Version}
	case node.EvWriteAcked:
		l.acked[writeKey{ev.Writer, ev.Inc, ev.Seq}] = ev.ID
	}
}

// surviving returns the writes lineage (id, epoch) holds: its own, and
// its ancestors' up to the version each child took.
func (l *ledger) surviving(id world.ObjectID, epoch uint32) []applied {
	out := append([]applied(nil), l.applied[id][epoch]...)
	seen := map[uint32]bool{epoch: true}
	for {
		in, ok := l.parent[lineage{id, epoch}]
		if !ok || seen[in.epoch] {
			return out
		}
		seen[in.epoch] = true
		for _, a := range l.applied[id][in.epoch] {
			if a.ver <= in.upTo {
				out = append(out, a)
			}
		}
		epoch = in.epoch
	}
}

// check returns, for the objects with a live primary (final: object →
// its epoch), the writes applied twice in its lineage and the
// acknowledged writes missing from it, each as a sorted description.
func (l *ledger) check(final map[world.ObjectID]uint32) (twice, ackedLost []string) {
	holds := map[world.ObjectID]map[writeKey]bool{}
	for id, ep := range final {
		seen := map[writeKey]bool{}
		for _, a := range l.surviving(id, ep) {
			if seen[a.writeKey] {
				twice = append(twice, fmt.Sprintf("%v: write %d/%d#%d", id, a.writer, a.inc, a.seq))
			}
			seen[a.writeKey] = true
		}
		holds[id] = seen
	}
	for k, id := range l.acked {
		if h, ok := holds[id]; ok && !h[k] {
			ackedLost = append(ackedLost, fmt.Sprintf("%v: write %d/%d#%d", id, k.writer, k.inc, k.seq))
		}
	}
	slices.Sort(twice)
	slices.Sort(ackedLost)
	return twice, ackedLost
}
