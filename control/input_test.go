package control

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

func ms2(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// smallPlane is three nodes with estimation on and two players.
func smallPlane(t *testing.T) *Plane {
	t.Helper()
	cfg := Config{
		Nodes:   []Node{{ID: 1, Capacity: 2}, {ID: 2, Capacity: 2}, {ID: 3, Capacity: 1}},
		NodeRTT: [][]float64{{0, 30, 60}, {30, 0, 40}, {60, 40, 0}},
		Grid:    Grid{Width: 10, Height: 10, Cols: 2, Rows: 2},
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		if _, err := p.Join(time.Second, id, []Sample{{Node: 1, RTT: ms2(10)}}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

type planeState struct {
	Assignment map[string]wire.NodeID
	Stats      Stats
	Total      float64
	Up         []bool
	Regions    []RegionState
	Reports    []Report
}

func stateOf(p *Plane) planeState {
	s := planeState{Assignment: p.Assignment(), Stats: p.Stats(), Total: p.TotalDelay(), Reports: p.Snapshot()}
	for _, n := range p.Config().Nodes {
		s.Up = append(s.Up, p.Up(n.ID))
	}
	for r := range p.Regions() {
		st, _ := p.State(r)
		s.Regions = append(s.Regions, st)
	}
	return s
}

// TestBadInput checks that every bad call returns the right error and
// changes nothing.
func TestBadInput(t *testing.T) {
	sec := time.Second
	cases := []struct {
		name string
		call func(p *Plane) error
		want error
	}{
		{"join empty ID", func(p *Plane) error { _, err := p.Join(2*sec, "", []Sample{{1, ms2(5)}}); return err }, ErrBadPlayer},
		{"join reserved ID", func(p *Plane) error { _, err := p.Join(2*sec, phantomPrefix+"x", []Sample{{1, ms2(5)}}); return err }, ErrBadPlayer},
		{"join twice", func(p *Plane) error { _, err := p.Join(2*sec, "a", []Sample{{1, ms2(5)}}); return err }, ErrDuplicatePlayer},
		{"join no sample", func(p *Plane) error { _, err := p.Join(2*sec, "c", nil); return err }, ErrBadRTT},
		{"join negative RTT", func(p *Plane) error { _, err := p.Join(2*sec, "c", []Sample{{1, -ms2(5)}}); return err }, ErrBadRTT},
		{"join huge RTT", func(p *Plane) error { _, err := p.Join(2*sec, "c", []Sample{{1, MaxRTT + 1}}); return err }, ErrBadRTT},
		{"join same node twice", func(p *Plane) error {
			_, err := p.Join(2*sec, "c", []Sample{{1, ms2(5)}, {1, ms2(6)}})
			return err
		}, ErrBadRTT},
		{"join unknown node", func(p *Plane) error { _, err := p.Join(2*sec, "c", []Sample{{9, ms2(5)}}); return err }, ErrUnknownNode},
		{"join in the past", func(p *Plane) error { _, err := p.Join(0, "c", []Sample{{1, ms2(5)}}); return err }, ErrTime},
		{"leave unknown", func(p *Plane) error { _, err := p.Leave(2*sec, "zz"); return err }, ErrUnknownPlayer},
		{"measure unknown player", func(p *Plane) error { _, err := p.Measure(2*sec, "zz", 1, ms2(5)); return err }, ErrUnknownPlayer},
		{"measure unknown node", func(p *Plane) error { _, err := p.Measure(2*sec, "a", 7, ms2(5)); return err }, ErrUnknownNode},
		{"measure bad RTT", func(p *Plane) error { _, err := p.Measure(2*sec, "a", 2, -1); return err }, ErrBadRTT},
		{"locate NaN", func(p *Plane) error { return p.Locate(2*sec, "a", math.NaN(), 1) }, ErrBadPosition},
		{"locate unknown", func(p *Plane) error { return p.Locate(2*sec, "zz", 1, 1) }, ErrUnknownPlayer},
		{"down unknown", func(p *Plane) error { _, err := p.NodeDown(2*sec, 9); return err }, ErrUnknownNode},
		{"up while up", func(p *Plane) error { _, err := p.NodeUp(2*sec, 1); return err }, ErrNodeState},
		{"tick in the past", func(p *Plane) error { _, err := p.Tick(0); return err }, ErrTime},
		{"rebuild a used plane", func(p *Plane) error { _, err := p.Rebuild(2*sec, p.Snapshot()); return err }, ErrRebuild},
	}
	for _, c := range cases {
		p := smallPlane(t)
		before := stateOf(p)
		err := c.call(p)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
			continue
		}
		if after := stateOf(p); !reflect.DeepEqual(before, after) {
			t.Errorf("%s: state changed:\nbefore %+v\nafter  %+v", c.name, before, after)
		}
	}
}

func TestFullAndLastNode(t *testing.T) {
	p := smallPlane(t)
	for _, id := range []string{"c", "d", "e"} {
		if _, err := p.Join(2*time.Second, id, []Sample{{Node: 2, RTT: ms2(10)}}); err != nil {
			t.Fatal(err)
		}
	}
	before := stateOf(p)
	if _, err := p.Join(3*time.Second, "f", []Sample{{Node: 2, RTT: ms2(10)}}); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("join when full: %v, want ErrNoCapacity", err)
	}
	if !reflect.DeepEqual(before, stateOf(p)) {
		t.Fatal("a refused join changed the state")
	}
	// Node 3 (1 seat) down: 5 players on 4 seats, one is dropped.
	ds, err := p.NodeDown(4*time.Second, 3)
	if err != nil {
		t.Fatal(err)
	}
	drops := 0
	for _, d := range ds {
		if d.Kind == Drop {
			drops++
		}
	}
	if drops != 1 || p.Len() != 4 || p.Load(1) != 2 || p.Load(2) != 2 {
		t.Fatalf("after node 3 dies: %v; %d players, loads %d %d", ds, p.Len(), p.Load(1), p.Load(2))
	}
	if _, err := p.NodeDown(5*time.Second, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.NodeDown(6*time.Second, 2); !errors.Is(err, ErrNodeState) {
		t.Fatalf("the last node down: %v, want ErrNodeState", err)
	}
}

func TestRebuildErrors(t *testing.T) {
	cfg := smallPlane(t).Config()
	s := []Sample{{Node: 1, RTT: ms2(10)}}
	for _, c := range []struct {
		name string
		reps []Report
		want error
	}{
		{"none", nil, ErrRebuild},
		{"node twice", []Report{{Node: 1}, {Node: 1}}, ErrRebuild},
		{"unknown node", []Report{{Node: 8}}, ErrUnknownNode},
		{"player twice", []Report{{Node: 1, Players: []Held{{ID: "a", Samples: s}}}, {Node: 2, Players: []Held{{ID: "a", Samples: s}}}}, ErrRebuild},
		{"region twice", []Report{{Node: 1, Regions: []int{0}}, {Node: 2, Regions: []int{0}}}, ErrRebuild},
		{"region out of range", []Report{{Node: 1, Regions: []int{4}}}, ErrRebuild},
		{"bad position", []Report{{Node: 1, Players: []Held{{ID: "a", Samples: s, Located: true, X: math.Inf(1)}}}}, ErrBadPosition},
		{"no samples", []Report{{Node: 1, Players: []Held{{ID: "a"}}}}, ErrBadRTT},
	} {
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		before := stateOf(p)
		if _, err := p.Rebuild(time.Second, c.reps); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if !reflect.DeepEqual(before, stateOf(p)) {
			t.Errorf("%s: state changed", c.name)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	good := func() Config {
		return Config{Nodes: []Node{{ID: 1, Capacity: 1}, {ID: 2, Capacity: 1}}, NodeRTT: [][]float64{{0, 10}, {10, 0}}}
	}
	for name, mut := range map[string]func(*Config){
		"no nodes":         func(c *Config) { c.Nodes = nil },
		"duplicate node":   func(c *Config) { c.Nodes[1].ID = 1 },
		"zero capacity":    func(c *Config) { c.Nodes[0].Capacity = 0 },
		"ragged RTTs":      func(c *Config) { c.NodeRTT[1] = []float64{1} },
		"negative RTT":     func(c *Config) { c.NodeRTT[0][1] = -1 },
		"RTT rows":         func(c *Config) { c.NodeRTT = c.NodeRTT[:1] },
		"hysteresis":       func(c *Config) { c.Hysteresis = math.NaN() },
		"grid size":        func(c *Config) { c.Grid = Grid{Cols: 2, Rows: 2} },
		"grid count":       func(c *Config) { c.Grid = Grid{Cols: -1, Rows: 2, Width: 1, Height: 1} },
		"region home":      func(c *Config) { c.RegionHome = 7 },
		"migration cost":   func(c *Config) { c.MigrationCost = math.Inf(1) },
		"probe slack":      func(c *Config) { c.ProbeSlack = 1 },
		"region slack":     func(c *Config) { c.RegionSlack = math.NaN() },
		"estimate margin":  func(c *Config) { c.EstimateMargin = -0.5 },
		"one node, 2 RTTs": func(c *Config) { c.Nodes = c.Nodes[:1] },
	} {
		c := good()
		mut(&c)
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	if _, err := New(good()); err != nil {
		t.Fatal(err)
	}
	// A single node with its 1×1 matrix is a plane (it grows by AddNode).
	one := good()
	one.Nodes, one.NodeRTT, one.RegionHome = one.Nodes[:1], [][]float64{{0}}, 0
	if _, err := New(one); err != nil {
		t.Fatalf("one node with RTTs: %v", err)
	}
}

func TestPolicies(t *testing.T) {
	s := time.Second
	st := RegionState{Players: 10, Churn: 5, Arrivals: []time.Duration{1 * s, 8 * s, 9 * s, 10 * s}, CoreLoad: 0.5, LastSelection: 2 * s, Selected: true}
	for _, c := range []struct {
		p    Policy
		now  time.Duration
		want bool
	}{
		{Churn{Events: 5}, 10 * s, true},
		{Churn{Events: 6}, 10 * s, false},
		{ArrivalRate{Window: 4 * s, PerSecond: 0.75}, 10 * s, true}, // 3 in the last 4 s
		{ArrivalRate{Window: 4 * s, PerSecond: 1}, 10 * s, false},
		{ArrivalRate{}, 10 * s, false},
		{Load{Low: 0.6, High: 0.9}, 10 * s, true},
		{Load{Low: 0.4, High: 0.9}, 10 * s, false},
		{Load{Low: 0.6, High: 0.9, Every: 10 * s}, 10 * s, false},
		{Periodic{Every: 8 * s}, 10 * s, true},
		{Periodic{Every: 9 * s}, 10 * s, false},
	} {
		if got := c.p.Due(c.now, st); got != c.want {
			t.Errorf("%s %+v at %v: due %v, want %v", c.p.Name(), c.p, c.now, got, c.want)
		}
	}
	if !(Periodic{Every: time.Hour}).Due(0, RegionState{}) {
		t.Error("periodic: a region never selected is due")
	}
}

// TestProbeDecisions: a player measured only its nearest node is asked,
// on Admit and then by Tick, to ping the nodes that could beat it.
func TestProbeDecisions(t *testing.T) {
	p := smallPlane(t)
	ds, err := p.Join(2*time.Second, "c", []Sample{{Node: 3, RTT: ms2(12)}})
	if err != nil {
		t.Fatal(err)
	}
	admit := ds[len(ds)-1]
	if admit.Kind != Admit || admit.To != 3 || len(admit.Probe) != 2 {
		t.Fatalf("admit %v: want c on node 3 asked to ping the 2 other nodes", admit)
	}
	// Node 1 is full (a and b measured 10 ms to it): c's estimated RTT to
	// it only matters through the price of a seat there.
	ds, err = p.Tick(3 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ds {
		if d.Kind != Probe || len(d.Probe) == 0 {
			t.Fatalf("tick: %v, want only probe decisions", d)
		}
	}
	again, _ := p.Tick(4 * time.Second)
	if len(again) != 0 {
		t.Fatalf("second tick asks again: %v", again)
	}
}

// TestRegionProbeDecisions: with a policy, a Tick asks each region's
// players to ping the current core and the nodes whose aggregate RTT,
// on what the plane knows, is within RegionSlack of the least, where
// they have only an estimate; once per player and node, and none with a
// negative slack.
func TestRegionProbeDecisions(t *testing.T) {
	rtt := [][]float64{{0, 20, 90, 150}, {20, 0, 80, 140}, {90, 80, 0, 70}, {150, 140, 70, 0}}
	for _, slack := range []float64{0.1, 0.5, -1} {
		p, err := New(Config{Nodes: []Node{{ID: 1, Capacity: 9}, {ID: 2, Capacity: 9}, {ID: 3, Capacity: 9}, {ID: 4, Capacity: 9}},
			NodeRTT: rtt, Grid: Grid{Width: 1, Height: 1, Cols: 1, Rows: 1}, RegionHome: 4, Policy: Periodic{Every: time.Hour},
			Probes: -1, ProbeSlack: -1, RegionSlack: slack})
		if err != nil {
			t.Fatal(err)
		}
		for i, at := range []float64{12, 25, 31, 18} {
			id := string(rune('a' + i))
			if _, err := p.Join(time.Second, id, []Sample{{Node: 1, RTT: ms2(at)}, {Node: 2, RTT: ms2(at + 15)}}); err != nil {
				t.Fatal(err)
			}
			if err := p.Locate(time.Second, id, 0.5, 0.5); err != nil {
				t.Fatal(err)
			}
		}
		// What the plane knows, summed over the region's players.
		sum := make([]float64, 4)
		for _, id := range p.RegionPlayers(0) {
			for j, v := range p.players[id].row {
				sum[j] += v
			}
		}
		least := slices.Min(sum)
		core := p.regions[0].core
		want := map[string][]wire.NodeID{}
		for _, id := range p.RegionPlayers(0) {
			for j := range 4 {
				if slack > 0 && math.IsNaN(p.players[id].meas[j]) && (j == core || sum[j]*(1-slack) <= least) {
					want[id] = append(want[id], wire.NodeID(j+1))
				}
			}
		}
		ds, err := p.Tick(2 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]wire.NodeID{}
		for _, d := range ds {
			if d.Kind == Probe {
				got[d.Player] = append(got[d.Player], d.Probe...)
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("slack %v: probes %v, want %v (sums %v)", slack, got, want, sum)
		}
		if slack > 0 && len(want["a"]) == 0 {
			t.Fatalf("slack %v: the current core, node 4, unmeasured, was not asked for", slack)
		}
		again, _ := p.Tick(3 * time.Second)
		for _, d := range again {
			if d.Kind == Probe {
				t.Fatalf("slack %v: asked again: %v", slack, d)
			}
		}
	}
}
