package replica

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// randomStore returns a store (node 2) holding random primaries (some of
// them created by node 3's players, so their IDs fall among the others),
// replicas from node 1, some of them requested, and the IDs of objects it
// does not hold (a few deleted) among them.
func randomStore(t *testing.T, r *rand.Rand) (s *Store, universe []world.ObjectID) {
	t.Helper()
	s = newStore(t, 2, nil)
	for k := range 1 + r.IntN(60) {
		origin := uint32(2)
		if r.IntN(3) == 0 {
			origin = 3
		}
		id := world.MakeObjectID(origin, uint32(k+1))
		universe = append(universe, id)
		if r.IntN(2) == 0 {
			continue
		}
		if err := s.AddPrimary(0, &obj{schema.NewState(id)}, wire.NodeID(1+r.IntN(4))); err != nil {
			t.Fatal(err)
		}
		if r.IntN(5) == 0 {
			if err := s.Delete(0, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k := range r.IntN(200) {
		id := world.MakeObjectID(1, uint32(k+1))
		universe = append(universe, id)
		if r.IntN(3) == 0 {
			continue
		}
		b, mark := wire.BeginUpdates(wire.AppendHeader(nil), 0)
		st := schema.NewState(id)
		st.SetFloat(0, r.Float64()*100)
		u := wire.Update{ID: id, Version: 1, Kind: 1, Data: world.AppendDelta(nil, nil, st)}
		b = wire.EndUpdates(wire.AppendUpdateEntry(b, &u), mark)
		s.BeginPacket()
		if err := checkThenApply(s, 0, 1, b); err != nil {
			t.Fatal(err)
		}
		if r.IntN(2) == 0 {
			s.Want(0, id, 1, time.Hour)
		}
	}
	slices.Sort(universe)
	return s, universe
}

// TestKnownWalk: a KnownWalk answers exactly what Known answers, over
// random stores and random increasing subsets of IDs held and not held,
// with Want called between the questions (as the node does) and now and
// then an ID not above the previous one.
func TestKnownWalk(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 31))
		s, universe := randomStore(t, r)
		keep := r.Float64()
		for range 3 {
			w := s.WalkKnown()
			for _, id := range universe {
				if r.Float64() > keep {
					continue
				}
				ask := id
				if r.IntN(20) == 0 { // out of order
					ask = universe[r.IntN(len(universe))]
				}
				loc, from, rep, wanted := w.Known(ask)
				wloc, wfrom, wrep, wwanted := s.Known(ask)
				if loc != wloc || from != wfrom || rep != wrep || wanted != wwanted {
					t.Fatalf("seed %d: Known(%v) walked = %v %v %v %v, looked up = %v %v %v %v", seed, ask, loc, from, rep, wanted, wloc, wfrom, wrep, wwanted)
				}
				if r.IntN(4) == 0 {
					s.Want(time.Second, ask, 1, time.Hour)
				}
			}
		}
	}
}

// TestPrimaryWalk: a PrimaryWalk answers exactly what Lookup and
// Controller answer, for the IDs of a frame's walk (the primaries' IDs
// taken first, with other IDs among them), while primaries are created
// and deleted between the questions (as think functions may).
func TestPrimaryWalk(t *testing.T) {
	for seed := uint64(1); seed <= 300; seed++ {
		r := rand.New(rand.NewPCG(seed, 37))
		s, universe := randomStore(t, r)
		seq := uint32(1000)
		for round := range 3 {
			ids := s.IDs(nil, true)
			for range r.IntN(5) {
				ids = append(ids, universe[r.IntN(len(universe))])
			}
			slices.Sort(ids)
			ids = slices.Compact(ids)
			w := s.WalkPrimaries()
			for _, id := range ids {
				o, ctl, ok := w.Primary(id)
				wo, primary, wok := s.Lookup(id)
				wctl, _ := s.Controller(id)
				if ok != (wok && primary) || ok && (o != wo || ctl != wctl) {
					t.Fatalf("seed %d round %d: Primary(%v) = controller %v, %v; Lookup %v (primary %v), Controller %v", seed, round, id, ctl, ok, wok, primary, wctl)
				}
				switch r.IntN(6) {
				case 0: // a new primary, below or above
					seq++
					origin := uint32(2 + r.IntN(2))
					nid := world.MakeObjectID(origin, seq)
					if err := s.AddPrimary(time.Second, &obj{schema.NewState(nid)}, 2); err != nil {
						t.Fatal(err)
					}
				case 1: // delete a random primary
					if p := s.IDs(nil, true); len(p) > 0 {
						if err := s.Delete(time.Second, p[r.IntN(len(p))]); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
		}
	}
}
