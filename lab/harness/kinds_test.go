package harness

import (
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
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
