package truth

import (
	"testing"
	"time"

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
