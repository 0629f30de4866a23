package localcluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// viewLog records the views and staleness samples an observer reports.
type viewLog struct {
	reports, interesting, missing int
	nodes                         []wire.NodeID
	stale                         []time.Duration
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

func (l *viewLog) Staleness(d time.Duration) error {
	l.stale = append(l.stale, d)
	return nil
}

// sampleOf decodes one sample of live snapshots for obs, as Observe does.
func sampleOf(t *testing.T, obs *truth.Observer, snaps []*live.WorldSnapshot) []*truth.Snapshot {
	t.Helper()
	out := make([]*truth.Snapshot, len(snaps))
	for i, s := range snaps {
		if s == nil {
			continue
		}
		out[i] = &truth.Snapshot{}
		if err := DecodeWorld(s, obs.Dims(), out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestTruthCounts checks the cluster's ground truth on hand-made
// snapshots decoded as Observe decodes them: objects in a node's view
// whose primary is elsewhere count, held or missing; a node's own
// primaries, objects outside its view and the rendezvous's snapshot do
// not; a replica's staleness is the time since its primary moved past
// its version, as the primary's snapshots showed it.
func TestTruthCounts(t *testing.T) {
	var log viewLog
	obs, err := truth.New(truth.Config{Dims: 2, Infra: 9, Recorder: &log})
	if err != nil {
		t.Fatal(err)
	}
	box := [][2][]float64{{{0, 0}, {10, 10}}}
	const ms = int64(time.Millisecond)
	snaps := []*live.WorldSnapshot{
		{Node: 1, NowNs: 1000 * ms, View: box, Objects: []live.SnapObject{
			{ID: 1, Primary: true, Loc: []float64{5, 5}, Version: 7, ProducedNs: 990 * ms},
			{ID: 2, Primary: true, Loc: []float64{50, 50}, Version: 1},
		}},
		// Node 2 sees object 1 and holds it at version 7, its primary's.
		{Node: 2, NowNs: 1000 * ms, View: box, Objects: []live.SnapObject{
			{ID: 1, Loc: []float64{5, 5}, Version: 7, ProducedNs: 990 * ms},
			{ID: 3, Primary: true, Loc: []float64{1, 1}, Version: 1},
		}},
		// Node 4 sees objects 1 and 3 and holds neither; object 2 is out of view.
		{Node: 4, NowNs: 1000 * ms, View: box},
		// The rendezvous reports nothing.
		{Node: 9, NowNs: 1000 * ms, View: [][2][]float64{{{-1e9, -1e9}, {1e9, 1e9}}}},
		nil, // a node that did not answer
	}
	if err := obs.Sample(sampleOf(t, obs, snaps)); err != nil {
		t.Fatal(err)
	}
	// In views: node 1 sees 3 (missing); node 2 sees 1 (held); node 4
	// sees 1 and 3 (both missing). 3 of 4 missing.
	if log.reports != 3 || log.interesting != 4 || log.missing != 3 {
		t.Errorf("reports %d (nodes %v), interesting %d, missing %d; want 3, 4, 3", log.reports, log.nodes, log.interesting, log.missing)
	}
	// Two more samples: object 1's primary made version 8 at 1050 ms and
	// 9 at 1090 ms while node 2 still holds version 7, stale since version
	// 8: 10 ms at the sample of 1060 ms, 50 ms at the one of 1100 ms (where
	// nodes 4 and 9 do not answer).
	snaps[0].NowNs, snaps[0].Objects[0].Version, snaps[0].Objects[0].ProducedNs = 1060*ms, 8, 1050*ms
	for _, s := range snaps[1:4] {
		s.NowNs = 1060 * ms
	}
	if err := obs.Sample(sampleOf(t, obs, snaps)); err != nil {
		t.Fatal(err)
	}
	snaps[0].NowNs, snaps[0].Objects[0].Version, snaps[0].Objects[0].ProducedNs = 1100*ms, 9, 1090*ms
	snaps[1].NowNs = 1100 * ms
	if err := obs.Sample(sampleOf(t, obs, snaps[:2])); err != nil {
		t.Fatal(err)
	}
	if sum, n := obs.StalenessSamples(); n != 3 || sum != 10*time.Millisecond+50*time.Millisecond || !slices.Equal(log.stale, []time.Duration{0, 10 * time.Millisecond, 50 * time.Millisecond}) {
		t.Errorf("staleness: %d samples summing %v (%v), want 0, 10 and 50 ms", n, sum, log.stale)
	}
	if got := ReplicasOf(snaps[1], 0); got != 1 {
		t.Errorf("node 2 holds %d replicas of node 0's objects, want 1", got)
	}
	if ReplicasOf(nil, 1) != 0 || ReplicasOf(snaps[0], 0) != 0 {
		t.Error("a primary or a missing snapshot counted as a replica")
	}
}

// TestDecodeWorld: a live snapshot becomes the observer's, objects in ID
// order whatever their order in the answer, boxes and locations in the
// space's dimensions; a node 0, another dimension, or an object twice is
// rejected.
func TestDecodeWorld(t *testing.T) {
	s := &live.WorldSnapshot{Node: 3, NowNs: 5, View: [][2][]float64{{{0, 1, 2}, {3, 4, 5}}}, Objects: []live.SnapObject{
		{ID: 9, Version: 2},
		{ID: 4, Primary: true, Loc: []float64{1, 2, 3}, Version: 6, ProducedNs: 4},
	}}
	var dst truth.Snapshot
	if err := DecodeWorld(s, 3, &dst); err != nil {
		t.Fatal(err)
	}
	if dst.Node != 3 || dst.At != 5 || len(dst.View) != 1 || dst.View[0].Min != (world.Point{0, 1, 2}) || dst.View[0].Max != (world.Point{3, 4, 5}) || dst.Len() != 2 {
		t.Errorf("decoded %+v", dst)
	}
	if v, primary, ok := dst.Object(4); !ok || !primary || v != 6 {
		t.Errorf("object 4: version %d primary %v present %v", v, primary, ok)
	}
	if v, primary, ok := dst.Object(9); !ok || primary || v != 2 {
		t.Errorf("object 9: version %d primary %v present %v", v, primary, ok)
	}
	if s.Objects[0].ID != 9 {
		t.Error("DecodeWorld reordered the answer's objects")
	}
	for name, bad := range map[string]*live.WorldSnapshot{
		"node 0":          {View: s.View},
		"a 2-D box":       {Node: 3, View: [][2][]float64{{{0, 1}, {3, 4}}}},
		"a 2-D location":  {Node: 3, Objects: []live.SnapObject{{ID: 4, Primary: true, Loc: []float64{1, 2}}}},
		"an object twice": {Node: 3, Objects: []live.SnapObject{{ID: 4}, {ID: 4}}},
	} {
		if err := DecodeWorld(bad, 3, &dst); err == nil {
			t.Errorf("%s accepted", name)
		}
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
