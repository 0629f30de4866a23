package harness

import (
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/world"
)

// TestKindTrackerExact drives the per-kind tracker by hand and checks every
// counter against the definitions.
func TestKindTrackerExact(t *testing.T) {
	k := &kindTracker{grace: []time.Duration{0, 100 * time.Millisecond}, names: []string{"a", "b"},
		counts: []kindCount{{missing: make([]uint64, 2)}, {missing: make([]uint64, 2)}},
		nodes:  []kindNode{{gen: 1, pairs: map[world.ObjectID]kindPair{}}}}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Frame 0: object 1 (kind a) enters held, object 2 (kind b) enters
	// missing.
	k.see(0, 1, 1, 5, true, ms(0))
	k.see(0, 2, 2, 1, false, ms(0))
	k.done(0)
	// Frame 100: 1 updated (direct); 2 not updated, still missing (100 ms
	// old: missing at both graces).
	k.see(0, 1, 1, 6, true, ms(100))
	k.see(0, 2, 2, 1, false, ms(100))
	k.done(0)
	// Frame 200: 1 left the view; 2 updated and now held.
	k.see(0, 2, 2, 2, true, ms(200))
	k.done(0)
	// Frame 300: 1 re-enters (an entry again), not held.
	k.see(0, 1, 1, 9, false, ms(300))
	k.see(0, 3, 7, 1, true, ms(300)) // an unknown kind is ignored
	k.done(0)
	v := k.views()
	a, b := v[0], v[1]
	if a.Kind != "a" || a.Interesting != 3 || a.Entries != 2 || a.HeldOnEntry != 1 || a.Updates != 3 || a.Direct != 1 ||
		a.Missing[0].Missing != 1 || a.Missing[1].Missing != 0 {
		t.Errorf("kind a: %+v", a)
	}
	if b.Interesting != 3 || b.Entries != 1 || b.HeldOnEntry != 0 || b.Updates != 2 || b.Direct != 1 ||
		b.Missing[0].Missing != 2 || b.Missing[1].Missing != 1 {
		t.Errorf("kind b: %+v", b)
	}
	if got := a.DirectShare(); got != 1.0/3 {
		t.Errorf("direct share %v, want 1/3", got)
	}
	if got := b.MissingAt(0); got != 2.0/3 {
		t.Errorf("missing %v, want 2/3", got)
	}
	if b.MissingAt(5) != 0 || (KindView{}).HeldOnEntryShare() != 0 {
		t.Error("out-of-range grace or empty view not 0")
	}
}

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
		if w.KindViews() != nil {
			t.Fatal("kind views before TrackKinds")
		}
		w.TrackKinds()
		if err := w.Run(nil); err != nil {
			t.Fatal(err)
		}
		views := w.Result().Summary.Views
		kinds := w.KindViews()
		if len(kinds) != 3 || kinds[0].Kind != "arena.bot" || kinds[1].Kind != "arena.missile" || kinds[2].Kind != "arena.item" {
			t.Fatalf("%s: kinds %+v", a, kinds)
		}
		var interesting, held uint64
		miss := make([]uint64, len(views.Missing))
		for _, k := range kinds {
			interesting += k.Interesting
			held += k.HeldOnEntry
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
		for g := range miss {
			if miss[g] != views.Missing[g].Missing {
				t.Errorf("%s: grace %v ms: per kind %d missing, recorder %d", a, views.Missing[g].GraceMs, miss[g], views.Missing[g].Missing)
			}
		}
		if kinds[0].Interesting == 0 || kinds[0].Updates == 0 {
			t.Errorf("%s: no bot in any view: %+v", a, kinds[0])
		}
	}
}
