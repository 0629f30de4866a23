package replica

import (
	"slices"
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

// TestDroppedBackInView: node 2 drops its replica of 1.1 once the object
// has been out of its view for ReplicaLinger; a full state the primary
// sent before the drop reached it then comes in. Out of the view, it is
// ignored (an orphan nobody would update); once the object is back in
// the view, node 2 takes it at once, as a replica it wants, and registers
// again with the primary, rather than wait for the locator to find the
// object again. Both Flush and FlushView carry the view.
func TestDroppedBackInView(t *testing.T) {
	for _, viewIndex := range []bool{false, true} {
		a, b, stores, st := newPair(t, func(c *Config) { c.ReplicaLinger = 200 * time.Millisecond })
		id := st.ID()
		x, y := schema.MustField("x"), schema.MustField("y")
		near := []world.Box{{Min: world.Point{0, 0}, Max: world.Point{10, 10}}}
		far := []world.Box{{Min: world.Point{50, 50}, Max: world.Point{60, 60}}}
		var oa, ob wire.Outbox
		flushB := func(now time.Duration, view []world.Box) {
			if viewIndex {
				b.FlushView(now, boxView(view), &ob)
			} else {
				b.Flush(now, view, &ob)
			}
		}
		// Node 2 registers (newPair's Want) and gets the replica at (5, 5).
		st.SetFloat(x, 5)
		st.SetFloat(y, 5)
		a.Commit(0)
		flushB(0, near)
		deliver(t, 0, &ob, 2, stores, nil)
		a.Flush(0, nil, &oa)
		deliver(t, 0, &oa, 1, stores, nil)
		if b.objs.Get(id) == nil {
			t.Fatal("node 2 holds no replica")
		}
		// Out of the view, past the linger: dropped (the drop is kept in
		// flight: node 1 still counts node 2 as a holder).
		flushB(100*time.Millisecond, far)
		flushB(400*time.Millisecond, far)
		if b.objs.Get(id) != nil {
			t.Fatal("node 2 kept the replica out of its view past the linger")
		}
		ob = wire.Outbox{}
		full := wire.AppendUpdates(nil, &wire.Updates{Entries: []wire.Update{{ID: id, Kind: 1, Version: 7,
			Data: world.AppendDelta(nil, nil, st)}}})
		send := func(now time.Duration) {
			t.Helper()
			if err := checkThenApply(b, now, 1, append(wire.AppendHeader(nil), full...)); err != nil {
				t.Fatal(err)
			}
		}
		// Still out of the view: ignored.
		before := b.Stats()
		send(450 * time.Millisecond)
		if b.objs.Get(id) != nil || b.Stats().Ignored != before.Ignored+1 {
			t.Fatalf("view index %v: a dropped replica's full state out of the view was taken (ignored %d → %d)",
				viewIndex, before.Ignored, b.Stats().Ignored)
		}
		// Back in the view: taken, wanted, registered again at once.
		flushB(500*time.Millisecond, near)
		send(550 * time.Millisecond)
		e := b.objs.Get(id)
		if e == nil || !e.requested || e.version != 7 || b.Stats().Reclaimed != 1 {
			t.Fatalf("view index %v: back in the view, the full state gave %+v (reclaimed %d), want a requested replica at version 7",
				viewIndex, e, b.Stats().Reclaimed)
		}
		flushB(600*time.Millisecond, near)
		registered := false
		eachFrame(t, &ob, 2, func(p wire.Packet, typ wire.Type, body []byte) {
			var ids wire.IDs
			if typ == wire.TypeRegister && p.To == 1 && ids.Decode(body) == nil && slices.Contains(ids.IDs, id) {
				registered = true
			}
		})
		if !registered {
			t.Errorf("view index %v: node 2 did not register %v with node 1 again", viewIndex, id)
		}
	}
}

// boxView is a View over boxes.
type boxView []world.Box

func (v boxView) Contains(p world.Point) bool {
	for _, b := range v {
		if b.Contains(p, 2) {
			return true
		}
	}
	return false
}

// TestRequestAtOnce: a replica wanted between two flushes is asked for by
// Request at once (its registration and its resync from version 0, to
// the primary's node); a request already sent is not sent again before
// its retry, which only Flush makes; with nothing new, Request sends
// nothing.
func TestRequestAtOnce(t *testing.T) {
	b := newStore(t, 2, nil)
	frames := func(o *wire.Outbox) (regs, acks int) {
		t.Helper()
		eachFrame(t, o, 2, func(p wire.Packet, typ wire.Type, _ []byte) {
			if p.To != 1 {
				t.Errorf("a %v frame to node %d, want node 1", typ, p.To)
			}
			switch typ {
			case wire.TypeRegister:
				regs++
			case wire.TypeAcks:
				acks++
			}
		})
		return regs, acks
	}
	var o wire.Outbox
	b.Request(0, &o)
	if r, a := frames(&o); r+a != 0 {
		t.Fatalf("Request with nothing wanted sent %d registrations, %d acknowledgements", r, a)
	}
	id := world.MakeObjectID(1, 1)
	b.Want(10*time.Millisecond, id, 1, time.Hour)
	b.Request(10*time.Millisecond, &o)
	if r, a := frames(&o); r != 1 || a != 1 {
		t.Fatalf("Request after Want: %d registrations, %d acknowledgements; want 1 and 1", r, a)
	}
	b.Want(20*time.Millisecond, id, 1, time.Hour)
	b.Request(20*time.Millisecond, &o)
	if r, a := frames(&o); r+a != 0 {
		t.Fatalf("Request of a request already sent: %d registrations, %d acknowledgements", r, a)
	}
	b.Flush(50*time.Millisecond, nil, &o)
	if r, _ := frames(&o); r != 0 {
		t.Fatalf("Flush before the retry is due sent %d registrations", r)
	}
	b.Flush(10*time.Millisecond+b.cfg.RequestRetry, nil, &o)
	if r, _ := frames(&o); r != 1 {
		t.Fatalf("Flush at the retry sent %d registrations, want 1", r)
	}
}

// TestWantOutlivesUntilForItsAnswer: a replica asked for with a finding
// about to expire (a rendezvous may send a publication with milliseconds
// left) is still a requested replica when its full state arrives after
// the expiry, within RequestRetry of the registration: before, it was a
// replica nobody asked for, not registered again, while the primary
// counted the node as a holder. A registration past the expiry is not
// retried, and an answer later than RequestRetry is not taken as asked for.
func TestWantOutlivesUntilForItsAnswer(t *testing.T) {
	for _, late := range []time.Duration{100 * time.Millisecond, 600 * time.Millisecond} {
		a, b, stores, st := newPair(t, nil)
		id := st.ID()
		b.want = map[world.ObjectID]request{}
		b.Want(0, id, 1, 30*time.Millisecond)
		var oa, ob wire.Outbox
		a.Commit(0)
		b.Flush(0, nil, &ob)
		deliver(t, 0, &ob, 2, stores, nil) // the registration reaches node 1
		b.Flush(50*time.Millisecond, nil, &ob)
		if ob.Len() != 0 {
			t.Fatalf("late %v: node 2 sent %d more frames after the want expired", late, ob.Len())
		}
		a.Flush(late, nil, &oa)
		b.Flush(late, nil, &ob) // the want is forgotten after RequestRetry
		deliver(t, late, &oa, 1, stores, nil)
		e := b.objs.Get(id)
		want := late < b.cfg.RequestRetry
		if e == nil || e.requested != want {
			t.Fatalf("late %v: the answer made replica %+v, want requested %v", late, e, want)
		}
	}
}
