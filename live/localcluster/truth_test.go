package localcluster

import (
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/wire"
)

// viewLog records the views a Truth reports.
type viewLog struct {
	reports, interesting, missing int
	nodes                         []wire.NodeID
}

func (l *viewLog) View(node wire.NodeID, _ time.Duration, interest []uint64, held []bool) error {
	l.reports++
	l.nodes = append(l.nodes, node)
	l.interesting += len(interest)
	for _, h := range held {
		if !h {
			l.missing++
		}
	}
	return nil
}

// TestTruthCounts checks the cluster's ground truth on hand-made
// snapshots: objects in a node's view whose primary is elsewhere count,
// held or missing; a node's own primaries, objects outside its view and
// the rendezvous's snapshot do not; a replica behind its primary is stale
// by its age minus a frame.
func TestTruthCounts(t *testing.T) {
	var log viewLog
	tc := NewTruth(&log)
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
	tc.Add(snaps, 9, 100*time.Millisecond)
	// In views: node 1 sees 3 (missing); node 2 sees 1 (held); node 4
	// sees 1 and 3 (both missing). 3 of 4 missing.
	if log.reports != 3 || log.interesting != 4 || log.missing != 3 {
		t.Errorf("reports %d (nodes %v), interesting %d, missing %d; want 3, 4, 3", log.reports, log.nodes, log.interesting, log.missing)
	}
	if sum, n := tc.Staleness(); n != 1 || sum != 200*time.Millisecond {
		t.Errorf("staleness: %d samples summing %v, want 1 of 200ms (300ms old, less a frame)", n, sum)
	}
	if !inBoxes([]float64{10, 0}, box) || inBoxes([]float64{10.01, 0}, box) || inBoxes([]float64{1}, box) {
		t.Error("inBoxes: bounds are inclusive, and a point of another dimension is outside")
	}
	if got := ReplicasOf(snaps[1], 0); got != 1 {
		t.Errorf("node 2 holds %d replicas of node 0's objects, want 1", got)
	}
	if ReplicasOf(nil, 1) != 0 || ReplicasOf(snaps[0], 0) != 0 {
		t.Error("a primary or a missing snapshot counted as a replica")
	}
}

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader("# HELP x y\n# TYPE x counter\nx 3\ny{a=\"b c\"} 1.5e3\n\n"))
	if err != nil || m["x"] != 3 || m[`y{a="b c"}`] != 1500 {
		t.Fatalf("%v %v", m, err)
	}
	if _, err := ParseMetrics(strings.NewReader("x notanumber\n")); err == nil {
		t.Error("a bad value was accepted")
	}
	if _, err := ParseMetrics(strings.NewReader("novalue\n")); err == nil {
		t.Error("a line without a value was accepted")
	}
}

// TestFiguresOf reads a node's figures from a scrape: bandwidth per class
// with 28 B of header per packet, per second.
func TestFiguresOf(t *testing.T) {
	m := map[string]float64{
		`overworld_bytes_total{class="update",dir="out"}`:      1000,
		`overworld_messages_total{class="update",dir="out"}`:   10,
		`overworld_bytes_total{class="discovery",dir="in"}`:    72,
		`overworld_messages_total{class="discovery",dir="in"}`: 1,
		`overworld_objects{role="primary"}`:                    4,
		"overworld_player_state_bytes_total":                   300,
		"overworld_queue_drops_total":                          1,
		"overworld_inbox_drops_total":                          2,
	}
	f := FiguresOf(m, 2)
	if f.Out[wire.ClassUpdate] != (1000+10*28)/2.0 || f.In[wire.ClassDiscovery] != 50 || f.Total() != 690 {
		t.Errorf("bandwidth: update out %v, discovery in %v, total %v; want 640, 50, 690", f.Out[wire.ClassUpdate], f.In[wire.ClassDiscovery], f.Total())
	}
	if f.Primaries != 4 || f.PlayerBytes != 150 || f.Drops != 3 {
		t.Errorf("figures %+v", f)
	}
}
