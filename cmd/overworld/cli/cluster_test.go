package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	osim "github.com/overworld/overworld/sim"
)

// TestTruthCounts checks the cluster's ground truth on hand-made
// snapshots: objects in a node's view whose primary is elsewhere count,
// held or missing; a node's own primaries, objects outside its view and
// the rendezvous's snapshot do not; a replica behind its primary is stale
// by its age minus a frame.
func TestTruthCounts(t *testing.T) {
	rec, err := osim.NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := truthCounts{rec: rec}
	box := [][2][]float64{{{0, 0}, {10, 10}}}
	const ms = int64(time.Millisecond)
	snaps := []*live.WorldSnapshot{
		{Node: 1, NowNs: 1000 * ms, View: box, Objects: []live.SnapObject{
			{ID: 1, Primary: true, Loc: []float64{5, 5}, Version: 7, ProducedNs: 990 * ms},
			{ID: 2, Primary: true, Loc: []float64{50, 50}, Version: 1},
		}},
		// Node 2 sees object 1 and holds it two versions behind.
		{Node: 2, NowNs: 1000 * ms, View: box, Objects: []live.SnapObject{
			{ID: 1, Loc: []float64{5, 5}, Version: 5, ProducedNs: 700 * ms},
			{ID: 3, Primary: true, Loc: []float64{1, 1}, Version: 1},
		}},
		// Node 4 sees objects 1 and 3 and holds neither; object 2 is out of view.
		{Node: 4, NowNs: 1000 * ms, View: box},
		// The rendezvous reports nothing.
		{Node: 9, NowNs: 1000 * ms, View: [][2][]float64{{{-1e9, -1e9}, {1e9, 1e9}}}},
		nil, // a node that did not answer
	}
	tc.add(snaps, 9, 100*time.Millisecond)
	v := rec.Views()
	// In views: node 1 sees 3 (missing); node 2 sees 1 (held); node 4
	// sees 1 and 3 (both missing). 3 of 4 missing.
	if v.Reports != 3 || v.Interesting != 4 || v.Missing[0].Missing != 3 {
		t.Errorf("reports %d, interesting %d, missing %d; want 3, 4, 3", v.Reports, v.Interesting, v.Missing[0].Missing)
	}
	if tc.staleN != 1 || tc.staleSum != 200*time.Millisecond {
		t.Errorf("staleness: %d samples summing %v, want 1 of 200ms (300ms old, less a frame)", tc.staleN, tc.staleSum)
	}
	if !inBoxes([]float64{10, 0}, box) || inBoxes([]float64{10.01, 0}, box) || inBoxes([]float64{1}, box) {
		t.Error("inBoxes: bounds are inclusive, and a point of another dimension is outside")
	}
}

func TestParseMetrics(t *testing.T) {
	m, err := parseMetrics(strings.NewReader("# HELP x y\n# TYPE x counter\nx 3\ny{a=\"b c\"} 1.5e3\n\n"))
	if err != nil || m["x"] != 3 || m[`y{a="b c"}`] != 1500 {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := parseMetrics(strings.NewReader("x notanumber\n")); err == nil {
		t.Error("a bad value was accepted")
	}
}
