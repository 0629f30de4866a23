package replica

import (
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestOnlyThePrimary: a node takes an object's states, deltas, deletions
// and news of its primary only from that primary, as its epochs name it.
// Node 2 holds a replica of 1.1 from its primary, node 1; node 3, a
// member of the cluster but not the primary, sends node 2 a full state, a
// delta, a deletion, news that it holds the primary at an epoch that
// names node 1 (and one at an epoch that names node 3), a migration
// whose epoch names another node, and a full state of an object node 2
// asked node 1 for. Every one is refused; the replica keeps following
// node 1.
func TestOnlyThePrimary(t *testing.T) {
	a, b, stores, st := newPair(t, nil)
	id := st.ID()
	send := func(now time.Duration, from wire.NodeID, frames []byte) error {
		return checkThenApply(b, now, from, append(wire.AppendHeader(nil), frames...))
	}
	// Node 1 answers node 2's registration: a replica at version 1.
	now := 100 * time.Millisecond
	var oa wire.Outbox
	st.SetFloat(schema.MustField("x"), 5)
	a.Commit(now)
	regs := wire.AppendIDs(nil, wire.TypeRegister, &wire.IDs{IDs: []world.ObjectID{id}})
	if err := checkThenApply(a, now, 2, append(wire.AppendHeader(nil), regs...)); err != nil {
		t.Fatal(err)
	}
	a.Flush(now, nil, &oa)
	deliver(t, now, &oa, 1, stores, nil)
	e := b.objs.Get(id)
	if e == nil || e.primary || e.from != 1 {
		t.Fatalf("node 2 holds no replica of %v from node 1", id)
	}
	version := e.version

	forged := schema.NewState(id)
	forged.SetFloat(schema.MustField("x"), 99)
	full := wire.AppendUpdates(nil, &wire.Updates{Entries: []wire.Update{{ID: id, Kind: 1, Version: version + 10, Data: world.AppendDelta(nil, nil, forged)}}})
	delta := wire.AppendUpdates(nil, &wire.Updates{Entries: []wire.Update{{ID: id, Version: version + 1, Base: version, Data: world.AppendDelta(nil, e.st, forged)}}})
	del := wire.AppendIDs(nil, wire.TypeDelete, &wire.IDs{IDs: []world.ObjectID{id}})
	// Epoch 1<<16 | 1 names node 1: news that node 3 holds it is forged.
	lie := wire.AppendWhere(nil, &wire.Where{Entries: []wire.Location{{ID: id, Epoch: 1<<16 | 1, Node: 3}}})
	mig := wire.AppendMigrate(nil, &wire.Migrate{Entries: []wire.Migration{{ID: world.MakeObjectID(1, 7), Kind: 1,
		Epoch: nextEpoch(0, 3, false), Version: 1, Data: world.AppendDelta(nil, nil, schema.NewState(world.MakeObjectID(1, 7)))}}})
	asked := world.MakeObjectID(1, 9)
	b.Want(now, asked, 1, time.Hour)
	other := wire.AppendUpdates(nil, &wire.Updates{Entries: []wire.Update{{ID: asked, Kind: 1, Version: 3, Data: world.AppendDelta(nil, nil, schema.NewState(asked))}}})
	before := b.Stats()
	for i, f := range [][]byte{full, delta, del, lie, mig, other} {
		if err := send(now+time.Duration(i+1)*time.Millisecond, 3, f); err != nil {
			t.Fatalf("frame %d from node 3: %v", i, err)
		}
	}
	e = b.objs.Get(id)
	if e == nil || e.from != 1 || e.version != version || e.st.Float(schema.MustField("x")) != 5 {
		t.Fatalf("after node 3's messages the replica is %+v, want node 1's version %d with x = 5", e, version)
	}
	if b.objs.Get(world.MakeObjectID(1, 7)) != nil || b.objs.Get(asked) != nil {
		t.Fatal("node 3 created an object at node 2")
	}
	got := b.Stats()
	if n := got.NotPrimary - before.NotPrimary; n != 3 {
		t.Errorf("%d messages counted as not from the primary, want 3 (the forged news, the migration, the asked-for state)", n)
	}
	if got.Stale-before.Stale < 2 || got.Ignored-before.Ignored < 1 {
		t.Errorf("the state and delta count %d stale, the deletion %d ignored; want ≥ 2 and ≥ 1",
			got.Stale-before.Stale, got.Ignored-before.Ignored)
	}
	// The genuine primary still updates the replica.
	now = time.Second
	st.SetFloat(schema.MustField("x"), 6)
	a.Commit(now)
	a.Flush(now, nil, &oa)
	deliver(t, now, &oa, 1, stores, nil)
	if e := b.objs.Get(id); e == nil || e.st.Float(schema.MustField("x")) != 6 {
		t.Fatal("the primary's next update did not apply")
	}
}
