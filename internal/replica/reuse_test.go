package replica

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestApplyReusesCheck delivers random multi-frame packets (full states and
// deltas of a few objects, repeated entries, deletions and drops before
// and after the updates) to two stores: one begins every packet, so that
// Apply reuses what Check decoded and looked up; the other does not, so
// that Apply decodes everything again (the reference). After every packet
// both must hold the same objects at the same versions and states.
func TestApplyReusesCheck(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		fast, ref := newStore(t, 2, nil), newStore(t, 2, nil)
		const objs = 3
		var states [objs][]*world.State // versions 1.. of each object
		for k := range states {
			st := schema.NewState(world.MakeObjectID(1, uint32(k+1)))
			for range 6 {
				st.SetFloat(0, st.Float(0)+float64(r.IntN(5)))
				st.SetInt(2, r.Int64N(4))
				states[k] = append(states[k], st.Clone())
			}
		}
		for pk := range 30 {
			now := time.Duration(pk) * 100 * time.Millisecond
			b := wire.AppendHeader(nil)
			for range 1 + r.IntN(3) {
				switch r.IntN(4) {
				case 0:
					id := world.MakeObjectID(1, uint32(1+r.IntN(objs)))
					typ := []wire.Type{wire.TypeDelete, wire.TypeDrop}[r.IntN(2)]
					b = wire.AppendIDs(b, typ, &wire.IDs{IDs: []world.ObjectID{id}})
				default:
					var mark int
					b, mark = wire.BeginUpdates(b, now)
					for range 1 + r.IntN(4) {
						k := r.IntN(objs)
						v := 1 + r.IntN(len(states[k]))
						u := wire.Update{ID: states[k][0].ID(), Version: uint64(v)}
						var data []byte
						if base := r.IntN(v); base == 0 || r.IntN(3) == 0 {
							u.Kind = 1
							data = world.AppendDelta(nil, nil, states[k][v-1])
						} else {
							u.Base = uint64(base)
							data = world.AppendDelta(nil, states[k][base-1], states[k][v-1])
						}
						u.Data = data
						b = wire.AppendUpdateEntry(b, &u)
					}
					b = wire.EndUpdates(b, mark)
				}
			}
			for _, s := range []*Store{fast, ref} {
				if s == fast {
					s.BeginPacket()
				}
				if err := checkThenApply(s, now, 1, b); err != nil && !errors.Is(err, errRejected) {
					t.Fatalf("seed %d packet %d: %v", seed, pk, err)
				}
			}
			if err := sameObjects(fast, ref); err != nil {
				t.Fatalf("seed %d packet %d: with reuse and without: %v", seed, pk, err)
			}
			if fast.Stats() != ref.Stats() {
				t.Fatalf("seed %d packet %d: stats %+v with reuse, %+v without", seed, pk, fast.Stats(), ref.Stats())
			}
		}
	}
}

// TestBriefsMatchObjects: Briefs gives the fields of Objects, for every
// object, in the same order.
func TestBriefsMatchObjects(t *testing.T) {
	a, b := newStore(t, 1, nil), newStore(t, 2, nil)
	stores := map[wire.NodeID]*Store{1: a, 2: b}
	var oa, ob wire.Outbox
	for k := range 5 {
		st := schema.NewState(world.MakeObjectID(1, uint32(k+1)))
		st.SetFloat(0, float64(k))
		if err := a.AddPrimary(0, &obj{st}, 1); err != nil {
			t.Fatal(err)
		}
		b.Want(0, st.ID(), 1, time.Hour)
	}
	for f := range 4 {
		now := time.Duration(f) * 100 * time.Millisecond
		a.Commit(now)
		a.Flush(now, nil, &oa)
		b.Flush(now, []world.Box{world.Unbounded()}, &ob)
		deliver(t, now, &oa, 1, stores, nil)
		deliver(t, now, &ob, 2, stores, nil)
	}
	for _, s := range []*Store{a, b} {
		infos, briefs := s.Objects(nil), s.Briefs(nil)
		if len(infos) != 5 || len(briefs) != len(infos) {
			t.Fatalf("store %d: %d objects, %d briefs", s.cfg.Self, len(infos), len(briefs))
		}
		for i, in := range infos {
			if br := briefs[i]; br != (Brief{ID: in.ID, Kind: in.Kind, Version: in.Version, Produced: in.Produced, Primary: in.Primary, State: in.State}) {
				t.Fatalf("store %d: brief %+v, info %+v", s.cfg.Self, br, in)
			}
		}
	}
}

// TestRecycledRings delivers random packets of full states, deltas, drops
// and deletions (objects leave and come back) to two stores: one reuses
// the rings of removed entries for new ones, the other allocates every
// ring (the reference). After every packet both must hold the same
// objects, versions, states and synced states (and every version held as a
// delta base), and every state must carry its object's ID.
func TestRecycledRings(t *testing.T) {
	reused := 0
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		fast, ref := newStore(t, 2, nil), newStore(t, 2, nil)
		ref.noRecycle = true
		const objs = 6
		var states [objs][]*world.State // versions 1.. of each object
		for k := range states {
			st := schema.NewState(world.MakeObjectID(1, uint32(k+1)))
			for range 10 {
				st.SetFloat(0, st.Float(0)+float64(r.IntN(5)))
				st.SetFloat(1, st.Float(1)-float64(r.IntN(3)))
				st.SetInt(2, r.Int64N(4))
				states[k] = append(states[k], st.Clone())
			}
		}
		for pk := range 60 {
			now := time.Duration(pk) * 100 * time.Millisecond
			b := wire.AppendHeader(nil)
			for range 1 + r.IntN(3) {
				if r.IntN(3) == 0 {
					id := world.MakeObjectID(1, uint32(1+r.IntN(objs)))
					typ := wire.TypeDrop
					if r.IntN(8) == 0 {
						typ = wire.TypeDelete
					}
					b = wire.AppendIDs(b, typ, &wire.IDs{IDs: []world.ObjectID{id}})
					continue
				}
				var mark int
				b, mark = wire.BeginUpdates(b, now)
				for range 1 + r.IntN(4) {
					k := r.IntN(objs)
					v := 1 + r.IntN(len(states[k]))
					u := wire.Update{ID: states[k][0].ID(), Version: uint64(v)}
					if base := r.IntN(v); base == 0 || r.IntN(4) == 0 {
						u.Kind = 1
						u.Data = world.AppendDelta(nil, nil, states[k][v-1])
					} else {
						u.Base = uint64(base)
						u.Data = world.AppendDelta(nil, states[k][base-1], states[k][v-1])
					}
					b = wire.AppendUpdateEntry(b, &u)
				}
				b = wire.EndUpdates(b, mark)
			}
			for _, s := range []*Store{fast, ref} {
				s.BeginPacket()
				if err := checkThenApply(s, now, 1, b); err != nil {
					t.Fatalf("seed %d packet %d: %v", seed, pk, err)
				}
			}
			if err := sameObjects(fast, ref); err != nil {
				t.Fatalf("seed %d packet %d: recycling and not: %v", seed, pk, err)
			}
			if fast.Stats() != ref.Stats() {
				t.Fatalf("seed %d packet %d: stats %+v recycling, %+v not", seed, pk, fast.Stats(), ref.Stats())
			}
			// Every version held, not only the newest: the delta bases.
			for i, e := range fast.ents {
				f := ref.ents[i]
				if e.hist.n != f.hist.n {
					t.Fatalf("seed %d packet %d: object %v holds %d versions recycling, %d not", seed, pk, e.id, e.hist.n, f.hist.n)
				}
				for k, j := int32(0), int(f.hist.head); k < f.hist.n; k++ {
					v := f.hist.slots[j].v
					if st := e.hist.find(v); st == nil || !st.Equal(f.hist.slots[j].st) {
						t.Fatalf("seed %d packet %d: object %v version %d differs recycling", seed, pk, e.id, v)
					}
					if j--; j < 0 {
						j = len(f.hist.slots) - 1
					}
				}
			}
		}
		reused += fast.reused
		if ref.reused != 0 {
			t.Fatalf("seed %d: the reference reused %d rings", seed, ref.reused)
		}
	}
	if reused < 1000 {
		t.Fatalf("only %d rings reused: the test hardly exercises recycling", reused)
	}
	t.Logf("%d rings reused", reused)
}

// TestPrimariesList: the store's list of primaries is always its entries
// that are primaries, in ID order, and its arrays of IDs are always those
// of its entries and primaries, through random additions and deletions of
// primaries and arrivals and drops of replicas.
func TestPrimariesList(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 13))
		s := newStore(t, 2, nil)
		var seq uint32
		for op := range 300 {
			now := time.Duration(op) * time.Millisecond
			switch r.IntN(4) {
			case 0: // a new primary
				seq++
				st := schema.NewState(world.MakeObjectID(2, seq))
				if err := s.AddPrimary(now, &obj{st}, 2); err != nil {
					t.Fatal(err)
				}
			case 1: // delete a random primary
				if ids := s.IDs(nil, true); len(ids) > 0 {
					if err := s.Delete(now, ids[r.IntN(len(ids))]); err != nil {
						t.Fatal(err)
					}
				}
			default: // a replica arrives from node 1, or is dropped by it
				id := world.MakeObjectID(1, uint32(1+r.IntN(20)))
				b := wire.AppendHeader(nil)
				if r.IntN(3) == 0 {
					b = wire.AppendIDs(b, wire.TypeDrop, &wire.IDs{IDs: []world.ObjectID{id}})
				} else {
					var mark int
					b, mark = wire.BeginUpdates(b, now)
					u := wire.Update{ID: id, Version: uint64(1 + op), Kind: 1, Data: world.AppendDelta(nil, nil, schema.NewState(id))}
					b = wire.AppendUpdateEntry(b, &u)
					b = wire.EndUpdates(b, mark)
				}
				s.BeginPacket()
				if err := checkThenApply(s, now, 1, b); err != nil {
					t.Fatal(err)
				}
			}
			var want []*entry
			for _, e := range s.ents {
				if e.primary {
					want = append(want, e)
				}
			}
			if !slices.Equal(s.prims, want) {
				t.Fatalf("seed %d op %d: %d primaries listed, %d among the entries", seed, op, len(s.prims), len(want))
			}
			for _, l := range []struct {
				ents []*entry
				ids  []world.ObjectID
			}{{s.ents, s.entIDs}, {s.prims, s.primIDs}} {
				ids := make([]world.ObjectID, len(l.ents))
				for i, e := range l.ents {
					ids[i] = e.id
				}
				if !slices.Equal(l.ids, ids) || !slices.IsSorted(ids) {
					t.Fatalf("seed %d op %d: IDs %v listed, entries of %v", seed, op, l.ids, ids)
				}
			}
		}
	}
}

// TestAcksReuseCheck delivers random packets of one to three acks frames
// (and registrations) to two stores holding the same primaries: one begins
// every packet, so that Apply reuses the acks Check decoded, the other
// does not (the reference, decoding again). Their holders must agree after
// every packet.
func TestAcksReuseCheck(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 17))
		fast, ref := newStore(t, 2, nil), newStore(t, 2, nil)
		const objs = 4
		for _, s := range []*Store{fast, ref} {
			for k := range objs {
				st := schema.NewState(world.MakeObjectID(2, uint32(k+1)))
				if err := s.AddPrimary(0, &obj{st}, 2); err != nil {
					t.Fatal(err)
				}
				for v := range 5 {
					st.SetInt(2, int64(v+1))
					s.Commit(time.Duration(v+1) * time.Millisecond)
				}
			}
		}
		for pk := range 40 {
			now := time.Duration(10+pk) * time.Millisecond
			from := wire.NodeID(1 + r.IntN(3))
			b := wire.AppendHeader(nil)
			for range 1 + r.IntN(3) {
				if r.IntN(3) == 0 {
					typ := wire.TypeRegister
					if r.IntN(3) == 0 {
						typ = wire.TypeDrop
					}
					b = wire.AppendIDs(b, typ, &wire.IDs{IDs: []world.ObjectID{world.MakeObjectID(2, uint32(1+r.IntN(objs)))}})
					continue
				}
				var a wire.Acks
				for range 1 + r.IntN(4) {
					a.Entries = append(a.Entries, wire.Ack{ID: world.MakeObjectID(2, uint32(1+r.IntN(objs+1))), Version: uint64(r.IntN(8))})
				}
				b = wire.AppendAcks(b, &a)
			}
			for _, s := range []*Store{fast, ref} {
				if s == fast {
					s.BeginPacket()
				}
				for pass := range 2 {
					fr, err := wire.OpenFrames(b)
					if err != nil {
						t.Fatal(err)
					}
					for {
						typ, body, more := fr.Next()
						if !more {
							break
						}
						if pass == 0 {
							err = s.Check(from, typ, body)
						} else {
							err = s.Apply(now, from, typ, body)
						}
						if err != nil {
							t.Fatalf("seed %d packet %d: %v", seed, pk, err)
						}
					}
				}
			}
			if r.IntN(5) == 0 { // holders whose registration lapsed leave
				var o wire.Outbox
				at := now + time.Duration(r.IntN(3))*fast.cfg.RegistrationTTL
				for _, s := range []*Store{fast, ref} {
					s.Flush(at, nil, &o)
				}
			}
			for k := range fast.prims {
				if !slices.Equal(fast.prims[k].holders, ref.prims[k].holders) {
					t.Fatalf("seed %d packet %d: holders of %v %+v reusing, %+v not", seed, pk, fast.prims[k].id, fast.prims[k].holders, ref.prims[k].holders)
				}
				for _, e := range []*entry{fast.prims[k], ref.prims[k]} {
					var nodes []wire.NodeID
					for _, h := range e.holders {
						nodes = append(nodes, h.node)
					}
					if !slices.Equal(e.hnodes, nodes) || !slices.IsSorted(nodes) {
						t.Fatalf("seed %d packet %d: holder nodes %v, holders of %v", seed, pk, e.hnodes, nodes)
					}
				}
			}
			if fast.Stats() != ref.Stats() {
				t.Fatalf("seed %d packet %d: stats %+v reusing, %+v not", seed, pk, fast.Stats(), ref.Stats())
			}
		}
	}
}

// TestRecycledEntries runs two stores through the same random mix of
// primaries created, changed and deleted, holders registering and
// dropping, and replicas arriving, dropped and deleted: one recycles the
// entries of removed objects (their rings, spare States and holder lists)
// for new ones, primaries and replicas alike, the other allocates every
// entry (the reference). After every step both must send the same packets
// and hold the same objects, versions, states, holders and counters.
func TestRecycledEntries(t *testing.T) {
	reused := 0
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 23))
		fast, ref := newStore(t, 2, nil), newStore(t, 2, nil)
		ref.noRecycle = true
		stores := []*Store{fast, ref}
		var prims []world.ObjectID
		sts := map[world.ObjectID][2]*world.State{}
		nextID := uint32(1)
		const remote = 5 // replicas' IDs, of node 1
		for step := range 150 {
			now := time.Duration(step) * 50 * time.Millisecond
			switch op := r.IntN(6); {
			case op == 0 || len(prims) == 0:
				id := world.MakeObjectID(2, nextID)
				nextID++
				var pair [2]*world.State
				x := float64(r.IntN(100))
				for i, s := range stores {
					pair[i] = schema.NewState(id)
					pair[i].SetFloat(0, x)
					if err := s.AddPrimary(now, &obj{pair[i]}, 2); err != nil {
						t.Fatalf("seed %d step %d: %v", seed, step, err)
					}
				}
				prims, sts[id] = append(prims, id), pair
			case op == 1:
				k := r.IntN(len(prims))
				for _, s := range stores {
					if err := s.Delete(now, prims[k]); err != nil {
						t.Fatalf("seed %d step %d: %v", seed, step, err)
					}
				}
				delete(sts, prims[k])
				prims = slices.Delete(prims, k, k+1)
			case op == 2:
				id := prims[r.IntN(len(prims))]
				x, hp := float64(r.IntN(100)), r.Int64N(9)
				for _, st := range sts[id] {
					st.SetFloat(1, x)
					st.SetInt(2, hp)
				}
			default:
				b := wire.AppendHeader(nil)
				from := wire.NodeID(3 + r.IntN(3))
				switch r.IntN(3) {
				case 0: // a holder registers or drops
					typ := wire.TypeRegister
					if r.IntN(3) == 0 {
						typ = wire.TypeDrop
					}
					b = wire.AppendIDs(b, typ, &wire.IDs{IDs: []world.ObjectID{prims[r.IntN(len(prims))]}})
				case 1: // a replica arrives, in full
					from = 1
					st := schema.NewState(world.MakeObjectID(1, uint32(1+r.IntN(remote))))
					st.SetFloat(0, float64(r.IntN(100)))
					var mark int
					b, mark = wire.BeginUpdates(b, now)
					b = wire.AppendUpdateEntry(b, &wire.Update{ID: st.ID(), Version: uint64(1 + step), Kind: 1, Data: world.AppendDelta(nil, nil, st)})
					b = wire.EndUpdates(b, mark)
				default: // a replica is dropped or deleted by its primary
					from = 1
					typ := wire.TypeDrop
					if r.IntN(4) == 0 {
						typ = wire.TypeDelete
					}
					b = wire.AppendIDs(b, typ, &wire.IDs{IDs: []world.ObjectID{world.MakeObjectID(1, uint32(1+r.IntN(remote)))}})
				}
				for _, s := range stores {
					s.BeginPacket()
					if err := checkThenApply(s, now, from, b); err != nil {
						t.Fatalf("seed %d step %d: %v", seed, step, err)
					}
				}
			}
			var out [2][]wire.Packet
			for i, s := range stores {
				var o wire.Outbox
				s.Commit(now)
				s.Flush(now, []world.Box{world.Unbounded()}, &o)
				o.Release(now + time.Hour)
				out[i] = o.Packets(2, nil)
			}
			if len(out[0]) != len(out[1]) {
				t.Fatalf("seed %d step %d: %d packets recycling, %d not", seed, step, len(out[0]), len(out[1]))
			}
			for k := range out[0] {
				if a, c := out[0][k], out[1][k]; a.To != c.To || !slices.Equal(a.Payload, c.Payload) {
					t.Fatalf("seed %d step %d: packet %d differs recycling", seed, step, k)
				}
			}
			if err := sameObjects(fast, ref); err != nil {
				t.Fatalf("seed %d step %d: recycling and not: %v", seed, step, err)
			}
			for k := range fast.prims {
				if !slices.Equal(fast.prims[k].holders, ref.prims[k].holders) || !slices.Equal(fast.prims[k].hnodes, ref.prims[k].hnodes) {
					t.Fatalf("seed %d step %d: holders of %v %+v recycling, %+v not", seed, step, fast.prims[k].id, fast.prims[k].holders, ref.prims[k].holders)
				}
			}
			if fast.Stats() != ref.Stats() {
				t.Fatalf("seed %d step %d: stats %+v recycling, %+v not", seed, step, fast.Stats(), ref.Stats())
			}
		}
		reused += fast.reused
	}
	if reused < 1000 {
		t.Fatalf("only %d entries reused: the test hardly exercises recycling", reused)
	}
	t.Logf("%d entries reused", reused)
}

// TestReplicaKeepsNewestOnly: a replica keeps only the newest version it
// received. A delta against an older one (a reordered packet behind a
// resync) cannot be applied: it is counted stale, the replica asks for a
// resync from its newest version, and the primary's next update brings it
// up to date. A primary keeps Config.HistoryLen versions.
func TestReplicaKeepsNewestOnly(t *testing.T) {
	p := newReplicaPair(t)
	a, b, st, states := p.a, p.b, p.st, &p.states
	for f := range 5 {
		p.frame(f)
	}
	e := b.objs.Get(st.ID())
	if e == nil || e.version < 3 {
		t.Fatalf("replica not at version 3 or later: %+v", e)
	}
	if got := len(e.hist.slots); got != replicaHistory {
		t.Fatalf("replica ring holds %d versions, want %d", got, replicaHistory)
	}
	if got, want := len(a.objs.Get(st.ID()).hist.slots), a.cfg.HistoryLen; got != want {
		t.Fatalf("primary ring holds %d versions, want %d", got, want)
	}
	// A delta from the version before the replica's newest.
	v := e.version
	stale := b.Stats().Stale
	pk := wire.AppendHeader(nil)
	pk, mark := wire.BeginUpdates(pk, 500*time.Millisecond)
	pk = wire.AppendUpdateEntry(pk, &wire.Update{ID: st.ID(), Version: v + 1, Base: v - 1,
		Data: world.AppendDelta(nil, (*states)[v-2], (*states)[v-1])})
	pk = wire.EndUpdates(pk, mark)
	if err := checkThenApply(b, 500*time.Millisecond, 1, pk); err != nil {
		t.Fatal(err)
	}
	if b.Stats().Stale != stale+1 || e.version != v || !e.ackDue {
		t.Fatalf("delta from an old version: stale %d (was %d), version %d (was %d), resync asked %v",
			b.Stats().Stale, stale, e.version, v, e.ackDue)
	}
	// The resync request names the replica's newest version, which may
	// already be behind again when it arrives (one more round).
	for f := 5; f < 10; f++ {
		p.frame(f)
	}
	want := a.objs.Get(st.ID())
	if e.version != want.version || !e.st.Equal(want.st) {
		t.Fatalf("replica at version %d after the resync, primary at %d", e.version, want.version)
	}
}

// TestSharedDeltas: a primary encodes one delta per base for all its
// holders (flushPrimary); every update it sends, over random holders whose
// acknowledged versions differ (resync requests, fresh holders, keepalives),
// must still decode from its base to the primary's newest state.
func TestSharedDeltas(t *testing.T) {
	checked, older := 0, 0
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 11))
		a := newStore(t, 1, nil)
		const objs = 3
		var past [objs]map[uint64]*world.State
		var sts [objs]*world.State
		for k := range sts {
			sts[k] = schema.NewState(world.MakeObjectID(1, uint32(k+1)))
			if err := a.AddPrimary(0, &obj{sts[k]}, 1); err != nil {
				t.Fatal(err)
			}
			past[k] = map[uint64]*world.State{1: sts[k].Clone()}
		}
		var o wire.Outbox
		for f := 1; f <= 12; f++ {
			now := time.Duration(f) * 100 * time.Millisecond
			for k := range sts {
				if r.IntN(3) > 0 {
					_ = a.Write(sts[k].ID(), func(s *world.State) { s.SetFloat(0, float64(r.IntN(50))) })
				}
				if r.IntN(2) == 0 {
					_ = a.Write(sts[k].ID(), func(s *world.State) { s.SetInt(2, r.Int64N(9)) })
				}
			}
			a.Commit(now)
			for k := range sts {
				e := a.objs.Get(sts[k].ID())
				past[k][e.version] = sts[k].Clone()
				for node := wire.NodeID(2); node <= 6; node++ {
					switch r.IntN(4) {
					case 0: // a registration
						h := e.holder(node, true)
						h.regUntil = now + time.Hour
					case 1: // a resync request from a random version it may have
						if h := e.holder(node, false); h != nil {
							h.acked = uint64(r.Int64N(int64(e.version) + 1))
							h.fresh = h.acked == 0
						}
					}
				}
			}
			o.Reset()
			a.Flush(now, nil, &o)
			o.Release(now + time.Hour)
			eachFrame(t, &o, 1, func(_ wire.Packet, typ wire.Type, body []byte) {
				if typ != wire.TypeUpdates {
					return
				}
				var ups wire.Updates
				if err := ups.Decode(body); err != nil {
					t.Fatal(err)
				}
				for _, u := range ups.Entries {
					k := int(u.ID.Seq()) - 1
					var base *world.State
					if u.Base != 0 {
						if base = past[k][u.Base]; base == nil {
							t.Fatalf("seed %d frame %d: %v delta from unknown version %d", seed, f, u.ID, u.Base)
						}
					}
					got := schema.NewState(u.ID)
					if _, err := world.ApplyDelta(got, base, u.Data); err != nil {
						t.Fatalf("seed %d frame %d: %v from %d: %v", seed, f, u.ID, u.Base, err)
					}
					if want := past[k][u.Version]; !got.Equal(want) {
						t.Fatalf("seed %d frame %d: %v from %d to %d decodes to another state", seed, f, u.ID, u.Base, u.Version)
					}
					checked++
					if u.Base != 0 && u.Base+1 < u.Version {
						older++
					}
				}
			})
		}
	}
	t.Logf("%d updates checked, %d from before the previous version", checked, older)
	if checked < 1000 || older < 100 {
		t.Fatalf("only %d updates checked, %d of them from a version before the previous", checked, older)
	}
}

// TestReplicaWriteKeepsBase: a tentative write changes a replica's State
// at once, while the newest version stays the base of the primary's next
// delta and what Info.Synced reports; the next version overwrites the
// write.
func TestReplicaWriteKeepsBase(t *testing.T) {
	p := newReplicaPair(t)
	a, b, st := p.a, p.b, p.st
	for f := range 3 {
		p.frame(f)
	}
	in, ok := b.Object(st.ID())
	if !ok || !in.State.Equal(st) || in.Synced != in.State {
		t.Fatalf("replica before the write: %+v", in)
	}
	synced := in.State.Clone()
	if err := b.Write(st.ID(), func(s *world.State) { s.SetInt(2, 42) }); err != nil {
		t.Fatal(err)
	}
	in, _ = b.Object(st.ID())
	if in.State.Int(2) != 42 || in.Synced == in.State || !in.Synced.Equal(synced) {
		t.Fatalf("after the write: state hp %d, synced %v (want the version before the write)", in.State.Int(2), in.Synced)
	}
	// The primary moves on (its next delta is from the version the
	// replica had before the write); the write reaches it too.
	p.frame(3)
	p.frame(4)
	in, _ = b.Object(st.ID())
	want, _ := a.Object(st.ID())
	if in.Version != want.Version || !in.State.Equal(want.State) || in.Synced != in.State {
		t.Fatalf("replica v%d %v, primary v%d %v", in.Version, in.State, want.Version, want.State)
	}
	if want.State.Int(2) != 42 {
		t.Fatalf("the tentative write did not reach the primary: hp %d", want.State.Int(2))
	}
}

// TestSortSendsByTo: for updates queued in object order, as a Flush queues
// them, the stable sort by destination gives sortSends' order.
func TestSortSendsByTo(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 13))
		s := newStore(t, 1, nil)
		var sends []send
		for obj := range 1 + r.IntN(20) {
			e := &entry{id: world.MakeObjectID(uint32(1+r.IntN(3)), uint32(obj+1))}
			nodes := r.Perm(12)[:r.IntN(8)]
			slices.Sort(nodes)
			for _, n := range nodes {
				sends = append(sends, send{to: wire.NodeID(n + 2), e: e, base: uint64(r.IntN(5))})
			}
		}
		slices.SortStableFunc(sends, func(a, b send) int { return cmp.Compare(a.e.id, b.e.id) })
		s.sends = append(s.sends[:0], sends...)
		s.sortSendsByTo()
		got := slices.Clone(s.sends)
		s.sends = append(s.sends[:0], sends...)
		s.sortSends()
		if !slices.Equal(got, s.sends) {
			t.Fatalf("seed %d: sortSendsByTo and sortSends differ", seed)
		}
	}
}

// replicaPair is a store with one primary (node 1) and a store that wants
// a replica of it (node 2). frame runs frame f of both, at f × 100 ms: the
// primary moves its object and commits, both flush, and their packets are
// delivered. states holds the primary's versions (version v at v-1).
type replicaPair struct {
	a, b   *Store
	st     *world.State
	states []*world.State
	frame  func(f int)
}

func newReplicaPair(t *testing.T) *replicaPair {
	p := &replicaPair{a: newStore(t, 1, nil), b: newStore(t, 2, nil), st: schema.NewState(world.MakeObjectID(1, 1))}
	stores := map[wire.NodeID]*Store{1: p.a, 2: p.b}
	var oa, ob wire.Outbox
	if err := p.a.AddPrimary(0, &obj{p.st}, 1); err != nil {
		t.Fatal(err)
	}
	p.b.Want(0, p.st.ID(), 1, time.Hour)
	p.frame = func(f int) {
		now := time.Duration(f) * 100 * time.Millisecond
		if err := p.a.Write(p.st.ID(), func(s *world.State) { s.SetFloat(0, float64(f)) }); err != nil {
			t.Fatal(err)
		}
		p.a.Commit(now)
		for len(p.states) < int(p.a.objs.Get(p.st.ID()).version) {
			p.states = append(p.states, p.st.Clone())
		}
		p.a.Flush(now, nil, &oa)
		p.b.Flush(now, []world.Box{world.Unbounded()}, &ob)
		deliver(t, now, &oa, 1, stores, nil)
		deliver(t, now, &ob, 2, stores, nil)
	}
	return p
}

// sameObjects reports how two stores' objects differ: IDs, versions, States
// and synced States (Info.Synced), in order; and whether each State carries
// its object's ID.
func sameObjects(a, b *Store) error {
	x, y := a.Objects(nil), b.Objects(nil)
	if len(x) != len(y) {
		return fmt.Errorf("%d objects against %d", len(x), len(y))
	}
	for i := range x {
		p, q := x[i], y[i]
		if p.ID != q.ID || p.Version != q.Version || !p.State.Equal(q.State) ||
			(p.Synced == nil) != (q.Synced == nil) || p.Synced != nil && !p.Synced.Equal(q.Synced) {
			return fmt.Errorf("object %v v%d against %v v%d", p.ID, p.Version, q.ID, q.Version)
		}
		for _, in := range []Info{p, q} {
			if in.State.ID() != in.ID {
				return fmt.Errorf("object %v has the State of %v", in.ID, in.State.ID())
			}
			if in.Synced != nil && in.Synced.ID() != in.ID {
				return fmt.Errorf("object %v has the synced State of %v", in.ID, in.Synced.ID())
			}
		}
	}
	return nil
}
