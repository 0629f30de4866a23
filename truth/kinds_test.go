package truth

import (
	"testing"
	"time"
)

// TestKindTrackerExact drives the per-kind tracker by hand and checks every
// counter against the definitions.
func TestKindTrackerExact(t *testing.T) {
	k := newKindTracker([]string{"a", "b"}, []bool{true, false}, []time.Duration{0, 100 * time.Millisecond}, 0)
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
	// Frame 400: both left the view: 1 still missing (abandoned), 2 found.
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
	// Kind a is static, b moves: its pairs are the moving objects' (frames 0, 100,
	// 200: missing at 0 ms in the first two, at 100 ms in the second).
	if a.Moving || !b.Moving {
		t.Errorf("moving: a %v, b %v; want b only", a.Moving, b.Moving)
	}
	obs := &Observer{kinds: k}
	mv := obs.MovingView()
	if mv.Interesting != 3 || mv.Missing[0].Missing != 2 || mv.Missing[1].Missing != 1 ||
		mv.FrameMean[0] != 2.0/3 || mv.FrameMean[1] != 1.0/3 {
		t.Errorf("moving objects: %+v", mv)
	}
	if a.Found != 0 || a.Abandoned != 1 || b.Found != 1 || b.Abandoned != 0 || a.AbandonedShare() != 1 || b.AbandonedShare() != 0 {
		t.Errorf("found/abandoned: a %d/%d, b %d/%d", a.Found, a.Abandoned, b.Found, b.Abandoned)
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
