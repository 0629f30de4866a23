package truth

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestKindTrackerFloor drives the floor by hand: an object counts in the
// floor while the report's time is before its reach, at each grace
// period, and among the floor's abandoned when it leaves the view
// without having been reachable in any report.
func TestKindTrackerFloor(t *testing.T) {
	k := newKindTracker([]string{"a", "b"}, []bool{true, false}, []time.Duration{0, 100 * time.Millisecond}, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	if fv := (&Observer{kinds: k}).FloorView(); fv.On {
		t.Errorf("floor view without TrackFloor: %+v", fv)
	}
	// Every object reaches node 1 (index 0) 50 ms after its creation; the
	// times given to see below are creation times.
	k.delay = func(from, to wire.NodeID) time.Duration {
		if to != 1 {
			t.Errorf("delay to node %d, want node 1", to)
		}
		return 50 * time.Millisecond
	}
	// Object 2 (kind b, moving) is reachable from 150 ms: unreachable in
	// the reports at 0 and 100 ms (100 ms old at the second), missing at
	// both; reachable at 200 ms, and held.
	k.see(0, 2, 2, 1, false, ms(0), ms(100))
	k.done(0, 0)
	k.see(0, 2, 2, 1, false, ms(100), ms(100))
	k.done(0, 0)
	k.see(0, 2, 2, 2, true, ms(200), ms(100))
	// Object 1 (kind a, static) enters at 200 ms, reachable from 500 ms,
	// and leaves after the report at 300 ms: no protocol could have
	// brought it. Object 3 (kind a) is reachable at once (its creation
	// unknown: no bound).
	k.see(0, 1, 1, 1, false, ms(200), ms(450))
	k.see(0, 1, 3, 1, false, ms(200), -1)
	k.done(0, 0)
	k.see(0, 1, 1, 1, false, ms(300), ms(450))
	k.done(0, 0)
	k.done(0, 0) // all left
	v := k.views()
	a, b := v[0], v[1]
	if b.Floor[0].Missing != 2 || b.Floor[1].Missing != 1 || b.FloorAbandoned != 0 {
		t.Errorf("kind b floor %+v, abandoned %d; want 2 and 1 pairs, none abandoned", b.Floor, b.FloorAbandoned)
	}
	if a.Floor[0].Missing != 2 || a.Floor[1].Missing != 1 || a.FloorAbandoned != 1 || a.Abandoned != 2 {
		t.Errorf("kind a floor %+v, abandoned %d of %d; want 2 and 1 pairs, 1 of 2 abandoned", a.Floor, a.FloorAbandoned, a.Abandoned)
	}
	if got, want := b.Floor[0].Fraction, 2.0/3; got != want {
		t.Errorf("kind b floor share %v, want %v", got, want)
	}
	fv := (&Observer{kinds: k}).FloorView()
	// Reports: 0 ms {2}, 100 ms {2}, 200 ms {2, 1, 3}, 300 ms {1}: at 0 ms
	// the floor shares are 1, 1, 1/3, 1 (mean 5/6) over all objects, and
	// 1, 1, 0 over the moving ones (the reports with object 2).
	if !fv.On || fv.All[0].Missing != 4 || fv.All[1].Missing != 2 || fv.Moving[0].Missing != 2 || fv.Moving[1].Missing != 1 || fv.Abandoned != 1 ||
		fv.All[0].Fraction != 4.0/6 || fv.AllFrameMean[0] != (1+1+1.0/3+1)/4 || fv.MovingFrameMean[0] != 2.0/3 || fv.MovingFrameMean[1] != 1.0/3 {
		t.Errorf("floor view %+v", fv)
	}
	// The floor never exceeds the missing pairs where every unreachable
	// object is missing, as here.
	for g := range 2 {
		for _, kv := range v {
			if kv.Floor[g].Missing > kv.Missing[g].Missing {
				t.Errorf("kind %s grace %d: floor %d above missing %d", kv.Kind, g, kv.Floor[g].Missing, kv.Missing[g].Missing)
			}
		}
	}
	obs, err := New(Config{Dims: 2})
	if err != nil {
		t.Fatal(err)
	}
	delay := func(from, to wire.NodeID) time.Duration { return 0 }
	if err := obs.TrackFloor(delay); err == nil {
		t.Error("TrackFloor before TrackKinds: no error")
	}
	if err := obs.TrackKinds([]string{"a"}, nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := obs.TrackFloor(nil); err == nil {
		t.Error("TrackFloor(nil): no error")
	}
	if err := obs.TrackFloor(delay); err != nil {
		t.Fatal(err)
	}
	if err := obs.TrackFloor(delay); err == nil {
		t.Error("second TrackFloor: no error")
	}
}

// TestKindTrackerExact drives the per-kind tracker by hand and checks every
// counter against the definitions.
func TestKindTrackerExact(t *testing.T) {
	k := newKindTracker([]string{"a", "b"}, []bool{true, false}, []time.Duration{0, 100 * time.Millisecond}, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	// Frame 0: object 1 (kind a) enters held, object 2 (kind b) enters
	// missing.
	k.see(0, 1, 1, 5, true, ms(0), -1)
	k.see(0, 2, 2, 1, false, ms(0), -1)
	k.done(0, 0)
	// Frame 100: 1 updated (direct); 2 not updated, still missing (100 ms
	// old: missing at both graces).
	k.see(0, 1, 1, 6, true, ms(100), -1)
	k.see(0, 2, 2, 1, false, ms(100), -1)
	k.done(0, 0)
	// Frame 200: 1 left the view; 2 updated and now held.
	k.see(0, 2, 2, 2, true, ms(200), -1)
	k.done(0, 0)
	// Frame 300: 1 re-enters (an entry again), not held.
	k.see(0, 1, 1, 9, false, ms(300), -1)
	k.see(0, 3, 7, 1, true, ms(300), -1) // an unknown kind is ignored
	k.done(0, 0)
	// Frame 400: both left the view: 1 still missing (abandoned), 2 found.
	k.done(0, 0)
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

// TestKindResolution feeds one object missing over reports a frame apart,
// the second a little early (as a live node's frames come), to a tracker
// with the frame as its resolution and to one without: the first counts it
// at the 100 ms grace as exact frames would, the second does not.
func TestKindResolution(t *testing.T) {
	grace := []time.Duration{0, 100 * time.Millisecond}
	for _, c := range []struct {
		res  time.Duration
		want uint64
	}{{100 * time.Millisecond, 1}, {0, 0}} {
		k := newKindTracker([]string{"dot"}, nil, grace, 0)
		k.res = c.res
		for _, at := range []time.Duration{0, 99 * time.Millisecond} {
			k.see(0, 1, 7, 1, false, at, -1)
			k.done(0, 0)
		}
		if got := k.views()[0].Missing[1].Missing; got != c.want {
			t.Errorf("resolution %v: %d missing at 100 ms, want %d", c.res, got, c.want)
		}
	}
}

// TestTraceEpisodes drives one node's view over random reports of a few
// objects, each in the view or not, held or not, and checks the episodes
// against a reference that scans each object's reports: every stretch of
// consecutive reports it is in view and missing is one episode, from its
// first such report to the next report (held again, or out of view); and
// the reports the episodes cover add up to the missing pairs at grace 0.
// The seed is printed on failure.
func TestTraceEpisodes(t *testing.T) {
	const objs, reports = 5, 200
	for seed := range uint64(100) {
		rng := rand.New(rand.NewPCG(seed, 11))
		k := newKindTracker([]string{"a"}, nil, []time.Duration{0}, 0)
		var got []Episode
		k.episode = func(e Episode) { got = append(got, e) }
		in := make([][]bool, objs)
		held := make([][]bool, objs)
		at := func(r int) time.Duration { return time.Duration(r) * 100 * time.Millisecond }
		for o := range objs {
			in[o], held[o] = make([]bool, reports+1), make([]bool, reports+1)
		}
		for r := range reports {
			for o := range objs {
				// Objects stay in view, and held, for stretches.
				in[o][r] = r > 0 && in[o][r-1] != (rng.IntN(8) == 0) || r == 0 && rng.IntN(2) == 0
				held[o][r] = in[o][r] && (r > 0 && held[o][r-1] != (rng.IntN(4) == 0) || rng.IntN(3) == 0)
				if in[o][r] {
					k.see(0, 1, world.ObjectID(o+1), 1, held[o][r], at(r), -1)
				}
			}
			k.done(0, at(r))
		}
		k.done(0, at(reports)) // every object leaves
		// The reference.
		var want []Episode
		for o := range objs {
			entered, from, lost, found := time.Duration(-1), -1, false, false
			for r := 0; r <= reports; r++ {
				switch {
				case in[o][r] && entered < 0:
					entered, found = at(r), false
				case !in[o][r]:
					entered = -1
				}
				if from >= 0 && (!in[o][r] || held[o][r]) {
					want = append(want, Episode{Node: 1, Object: world.ObjectID(o + 1), Kind: "a", Entered: enteredAt(in[o], r-1, at),
						From: at(from), To: at(r), Held: in[o][r], Lost: lost, Reach: -1})
					from = -1
				}
				if in[o][r] && !held[o][r] && from < 0 {
					from, lost = r, found
				}
				found = found || held[o][r]
			}
		}
		key := func(e Episode) string { return fmt.Sprintf("%v %v", e.Object, e.From) }
		slices.SortFunc(got, func(a, b Episode) int { return strings.Compare(key(a), key(b)) })
		slices.SortFunc(want, func(a, b Episode) int { return strings.Compare(key(a), key(b)) })
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: episodes\n%v\nwant\n%v", seed, got, want)
		}
		var covered uint64
		for _, e := range got {
			covered += uint64((e.To - e.From) / (100 * time.Millisecond))
		}
		if m := k.views()[0].Missing[0].Missing; covered != m {
			t.Fatalf("seed %d: episodes cover %d reports, missing pairs %d", seed, covered, m)
		}
	}
}

// enteredAt returns the time of the first report of the stretch of
// reports in view that ends at report r.
func enteredAt(in []bool, r int, at func(int) time.Duration) time.Duration {
	for r > 0 && in[r-1] {
		r--
	}
	return at(r)
}

// TestTraceEpisodesRejected: no function, or no kind measures yet.
func TestTraceEpisodesRejected(t *testing.T) {
	obs, err := New(Config{Dims: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.TraceEpisodes(func(Episode) {}); err == nil {
		t.Error("TraceEpisodes before TrackKinds: no error")
	}
	if err := obs.TrackKinds([]string{"a"}, nil, nil, 0); err != nil {
		t.Fatal(err)
	}
	if err := obs.TraceEpisodes(nil); err == nil {
		t.Error("TraceEpisodes(nil): no error")
	}
}
