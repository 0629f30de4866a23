package faults

import (
	"fmt"
	"slices"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// ledger follows every write by ID through the nodes' authority events:
// which writes each object's surviving lineage applied, and which writes
// their writers were told are safe. A failover drops from the lineage
// what the old primary applied after the version its backup held (the
// promoted primary starts from the backup's state: EvPromoted's Base,
// after epoch Prev), and a primary of an older epoch than the lineage's
// newest (one cut off by a partition, or that has not heard of its
// successor yet) applies writes outside it.
type ledger struct {
	applied map[world.ObjectID][]applied
	epoch   map[world.ObjectID]uint32
	acked   map[writeKey]world.ObjectID
}

type writeKey struct {
	writer wire.NodeID
	inc    uint16
	seq    uint32
}

type applied struct {
	writeKey
	epoch uint32
	ver   uint64
}

func newLedger() *ledger {
	return &ledger{applied: map[world.ObjectID][]applied{}, epoch: map[world.ObjectID]uint32{}, acked: map[writeKey]world.ObjectID{}}
}

// event records one authority event.
func (l *ledger) event(ev node.AuthorityEvent) {
	switch ev.Kind {
	case node.EvWriteApplied:
		if ev.Epoch < l.epoch[ev.ID] {
			return // a stale primary's: not in the lineage
		}
		l.applied[ev.ID] = append(l.applied[ev.ID], applied{writeKey{ev.Writer, ev.Inc, ev.Seq}, ev.Epoch, ev.Version})
	case node.EvPromoted:
		l.epoch[ev.ID] = max(l.epoch[ev.ID], ev.Epoch)
		kept := l.applied[ev.ID][:0]
		for _, a := range l.applied[ev.ID] {
			if a.epoch != ev.Prev || a.ver <= ev.Base {
				kept = append(kept, a)
			}
		}
		l.applied[ev.ID] = kept
	case node.EvInstalled:
		l.epoch[ev.ID] = max(l.epoch[ev.ID], ev.Epoch)
	case node.EvWriteAcked:
		l.acked[writeKey{ev.Writer, ev.Inc, ev.Seq}] = ev.ID
	}
}

// check returns the writes applied twice in a lineage and the
// acknowledged writes missing from theirs (the objects in skip left out:
// lost objects, counted on their own), each as a sorted description.
func (l *ledger) check(skip map[world.ObjectID]bool) (twice, ackedLost []string) {
	for id, as := range l.applied {
		seen := make(map[writeKey]bool, len(as))
		for _, a := range as {
			if seen[a.writeKey] {
				twice = append(twice, fmt.Sprintf("%v: write %d/%d#%d", id, a.writer, a.inc, a.seq))
			}
			seen[a.writeKey] = true
		}
	}
	for k, id := range l.acked {
		if skip[id] {
			continue
		}
		if !slices.ContainsFunc(l.applied[id], func(a applied) bool { return a.writeKey == k }) {
			ackedLost = append(ackedLost, fmt.Sprintf("%v: write %d/%d#%d", id, k.writer, k.inc, k.seq))
		}
	}
	slices.Sort(twice)
	slices.Sort(ackedLost)
	return twice, ackedLost
}
