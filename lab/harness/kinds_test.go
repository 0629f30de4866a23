package harness

import (
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab/cities"
)

// TestKindViewsSumToRecorder checks that the per-kind measures of a world
// add up exactly to the simulator's recorder's, which counts the same
// (report, object) pairs without kinds.
func TestKindViewsSumToRecorder(t *testing.T) {
	for _, a := range []discovery.Arch{discovery.Colyseus, discovery.Directory} {
		cfg := DefaultArenaConfig()
		cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Map = a, 6, 2, 8*time.Second, arena.Sqr
		w, err := NewArena(cfg)
		if err != nil {
			t.Fatal(err)
		}
		w.TrackKinds() // on already: changes nothing
		if err := w.Run(nil); err != nil {
			t.Fatal(err)
		}
		views := w.Result().Summary.Views
		kinds := w.KindViews()
		if len(kinds) != 3 || kinds[0].Kind != "arena.bot" || kinds[1].Kind != "arena.missile" || kinds[2].Kind != "arena.item" {
			t.Fatalf("%s: kinds %+v", a, kinds)
		}
		var interesting, held, found, abandoned uint64
		miss := make([]uint64, len(views.Missing))
		for _, k := range kinds {
			interesting += k.Interesting
			held += k.HeldOnEntry
			found += k.Found
			abandoned += k.Abandoned
			for g := range miss {
				miss[g] += k.Missing[g].Missing
			}
			if k.Direct > k.Updates || k.HeldOnEntry > k.Entries || k.Entries > k.Updates {
				t.Errorf("%s %s: inconsistent counts %+v", a, k.Kind, k)
			}
		}
		if interesting != views.Interesting || held != views.HeldOnEntry {
			t.Errorf("%s: per kind %d pairs, %d held on entry; recorder %d, %d", a, interesting, held, views.Interesting, views.HeldOnEntry)
		}
		if found != uint64(views.Discovery.Count) || abandoned != views.Abandoned || abandoned == 0 && a == discovery.Colyseus {
			t.Errorf("%s: per kind %d found, %d abandoned; recorder %d discoveries, %d abandoned", a, found, abandoned, views.Discovery.Count, views.Abandoned)
		}
		for g := range miss {
			if miss[g] != views.Missing[g].Missing {
				t.Errorf("%s: grace %v ms: per kind %d missing, recorder %d", a, views.Missing[g].GraceMs, miss[g], views.Missing[g].Missing)
			}
		}
		if kinds[0].Interesting == 0 || kinds[0].Updates == 0 {
			t.Errorf("%s: no bot in any view: %+v", a, kinds[0])
		}
		// Bots and missiles move, items stay: the moving objects' measures
		// are the first two kinds'.
		if !kinds[0].Moving || !kinds[1].Moving || kinds[2].Moving {
			t.Errorf("%s: moving kinds %v %v %v, want bot and missile", a, kinds[0].Moving, kinds[1].Moving, kinds[2].Moving)
		}
		mv := views.MissingMoving
		if views.InterestingMoving != kinds[0].Interesting+kinds[1].Interesting || len(mv) != len(views.Missing) {
			t.Fatalf("%s: %d moving pairs, bots and missiles %d", a, views.InterestingMoving, kinds[0].Interesting+kinds[1].Interesting)
		}
		for g := range mv {
			if m := kinds[0].Missing[g].Missing + kinds[1].Missing[g].Missing; mv[g].Missing != m {
				t.Errorf("%s: grace %v ms: %d moving missing, bots and missiles %d", a, mv[g].GraceMs, mv[g].Missing, m)
			}
		}
	}
}

// TestFloorBelowEveryProtocol checks the floor against what the protocols
// achieve: under every architecture, on a perfect network and under the
// emulated WAN (with reordering too), no kind's floor is above its
// missing pairs at any grace period and no kind's abandoned floor above
// its abandoned discoveries, for every seed; the summary's floor adds up
// the kinds'; and the missiles, created inside other nodes' interests,
// have a floor. A floor above what a protocol achieves would mean that
// something travels faster than the network's shortest delays.
func TestFloorBelowEveryProtocol(t *testing.T) {
	nets := map[string]geo.Network{"perfect": {}, "wan": geo.WAN()}
	reord := geo.WAN()
	reord.Reorder = 0.05
	nets["wan+reorder"] = reord
	archs := []discovery.Arch{discovery.Colyseus, discovery.Broadcast, discovery.Directory}
	seeds := []uint64{1, 2}
	if testing.Short() {
		archs, seeds = archs[:1], seeds[:1]
	}
	for _, a := range archs {
		for name, net := range nets {
			for _, seed := range seeds {
				cfg := DefaultArenaConfig()
				cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Map, cfg.Seed = a, 12, 1, 10*time.Second, arena.Sqr, seed
				cfg.Data, cfg.Cities = SitesWonder, cities.ForNodes(cfg.Nodes)
				cfg.SetNet(net)
				w, err := NewArena(cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := w.Run(nil); err != nil {
					t.Fatal(err)
				}
				views := w.Result().Summary.Views
				kinds := w.KindViews()
				var floor0, fab uint64
				for _, k := range kinds {
					for g := range k.Floor {
						if k.Floor[g].Missing > k.Missing[g].Missing {
							t.Errorf("%s %s seed %d: %s at %v ms: floor %d above the %d missing", a, name, seed, k.Kind, k.Floor[g].GraceMs, k.Floor[g].Missing, k.Missing[g].Missing)
						}
					}
					if k.FloorAbandoned > k.Abandoned {
						t.Errorf("%s %s seed %d: %s: %d abandoned at the floor, above the %d abandoned", a, name, seed, k.Kind, k.FloorAbandoned, k.Abandoned)
					}
					floor0 += k.Floor[0].Missing
					fab += k.FloorAbandoned
				}
				if len(views.Floor) != len(views.Missing) || views.Floor[0].Missing != floor0 || views.FloorAbandoned != fab {
					t.Errorf("%s %s seed %d: summary floor %+v, %d abandoned; kinds %d, %d", a, name, seed, views.Floor, views.FloorAbandoned, floor0, fab)
				}
				if kinds[1].Floor[0].Missing == 0 {
					t.Errorf("%s %s seed %d: the missiles have no floor: %+v", a, name, seed, kinds[1])
				}
			}
		}
	}
}
