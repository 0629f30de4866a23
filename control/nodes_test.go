package control

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

// TestRandomNodeSetChanges runs random joins, leaves and node additions
// and removals (drains) on planes with and without estimation, some
// starting from a single node, checking
// after every event that no step overfills a node, each player is on
// exactly one node that is up and the cost is the exact optimum.
func TestRandomNodeSetChanges(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 11))
		estimated := rng.IntN(2) == 0
		cfg, in := randomConfig(rng, estimated)
		if seed%4 == 0 {
			// A plane that starts from a single node (a live plane's
			// first enrolled game server) and grows.
			cfg.Nodes, in.nodes, in.access = cfg.Nodes[:1], in.nodes[:1], in.access[:1]
			if estimated {
				cfg.NodeRTT = [][]float64{{0}}
			}
		}
		p, err := New(cfg)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		w := newWorld(t, seed, cfg)
		pos := map[string][3]float64{}
		// node positions by ID, for RTTs of nodes added later
		npos := map[wire.NodeID]int{}
		for j, n := range cfg.Nodes {
			npos[n.ID] = j
		}
		nextNode := wire.NodeID(len(cfg.Nodes) + 1)
		now := time.Duration(0)
		rtt := func(id string, n wire.NodeID) time.Duration {
			q := pos[id]
			return time.Duration(in.rtt([2]float64{q[0], q[1]}, q[2], npos[n]) * float64(time.Millisecond))
		}
		for ev := range 120 {
			now += time.Millisecond
			cur := p.Config().Nodes
			var ds []Decision
			var name string
			switch k := rng.IntN(10); {
			case k < 5:
				id := fmt.Sprintf("q%d", ev)
				pos[id] = [3]float64{rng.Float64() * 100, rng.Float64() * 100, rng.Float64() * 10}
				var ss []Sample
				for j, n := range cur {
					if !estimated || j%2 == 0 {
						ss = append(ss, Sample{Node: n.ID, RTT: rtt(id, n.ID)})
					}
				}
				name = "join " + id
				ds, err = p.Join(now, id, ss)
				if errors.Is(err, ErrNoCapacity) {
					continue
				}
			case k < 7 && p.Len() > 0:
				ps := p.Players()
				id := ps[rng.IntN(len(ps))]
				name = "leave " + id
				ds, err = p.Leave(now, id)
				if err == nil {
					delete(w.at, id)
				}
			case k < 9:
				j := len(in.nodes)
				in.nodes = append(in.nodes, [2]float64{rng.Float64() * 100, rng.Float64() * 100})
				in.access = append(in.access, rng.Float64()*5)
				n := Node{ID: nextNode, Capacity: 1 + rng.IntN(6)}
				nextNode++
				npos[n.ID] = j
				var r []float64
				if estimated {
					for _, o := range cur {
						r = append(r, in.rtt(in.nodes[j], in.access[j], npos[o.ID]))
					}
				}
				name = fmt.Sprintf("add %d", n.ID)
				w.up[n.ID], w.cap[n.ID] = true, n.Capacity
				ds, err = p.AddNode(now, n, r)
			default:
				n := cur[rng.IntN(len(cur))].ID
				name = fmt.Sprintf("remove %d", n)
				ds, err = p.RemoveNode(now, n)
				if errors.Is(err, ErrNodeState) {
					continue
				}
				if err == nil {
					w.apply(name, ds)
					w.up[n] = false
					w.cfg.Nodes = p.Config().Nodes
					w.check(name, p)
					continue
				}
			}
			if err != nil {
				t.Fatalf("seed %d, event %d (%s): %v", seed, ev, name, err)
			}
			w.apply(name, ds)
			w.cfg.Nodes = p.Config().Nodes
			w.check(name, p)
			for _, d := range ds {
				if d.Kind != Probe && d.Kind != Admit {
					continue
				}
				for _, n := range d.Probe {
					more, err := p.Measure(now, d.Player, n, rtt(d.Player, n))
					if err != nil {
						t.Fatalf("seed %d, event %d (%s): probe: %v", seed, ev, name, err)
					}
					w.apply("probe", more)
					w.check("probe", p)
				}
			}
		}
		if math.IsNaN(p.TotalDelay()) {
			t.Fatalf("seed %d: total delay NaN", seed)
		}
	}
}

// TestNodeSetBadInput checks that bad AddNode and RemoveNode calls are
// errors that change nothing.
func TestNodeSetBadInput(t *testing.T) {
	p, err := New(Config{Nodes: []Node{{ID: 1, Capacity: 2}, {ID: 2, Capacity: 2}}, NodeRTT: [][]float64{{0, 10}, {10, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n   Node
		rtt []float64
	}{
		{Node{ID: 0, Capacity: 1}, []float64{1, 1}},
		{Node{ID: 1, Capacity: 1}, []float64{1, 1}},
		{Node{ID: 3, Capacity: 0}, []float64{1, 1}},
		{Node{ID: 3, Capacity: 1}, []float64{1}},
		{Node{ID: 3, Capacity: 1}, []float64{-1, 1}},
		{Node{ID: 3, Capacity: 1}, []float64{math.Inf(1), 1}},
	} {
		if _, err := p.AddNode(0, tc.n, tc.rtt); err == nil {
			t.Fatalf("AddNode(%+v, %v) accepted", tc.n, tc.rtt)
		}
	}
	if _, err := p.RemoveNode(0, 9); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("RemoveNode of an unknown node: %v", err)
	}
	if _, err := p.RemoveNode(0, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RemoveNode(0, 2); !errors.Is(err, ErrNodeState) {
		t.Fatalf("RemoveNode of the last node: %v", err)
	}
	if len(p.Config().Nodes) != 1 {
		t.Fatalf("nodes %v", p.Config().Nodes)
	}
}

// TestGrowFromOneNode: a plane with estimation that starts from one node
// places the nodes added later where their RTTs say: a player who measured
// the first node only is estimated near the truth to a node between the
// first two (the second node refits the pair; fitted to a lone node's
// coordinate, every node would sit on it).
func TestGrowFromOneNode(t *testing.T) {
	p, err := New(Config{Nodes: []Node{{ID: 1, Capacity: 4}}, NodeRTT: [][]float64{{0}}, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Join(0, "a", []Sample{{Node: 1, RTT: 10 * time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddNode(1, Node{ID: 2, Capacity: 4}, []float64{100}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddNode(2, Node{ID: 3, Capacity: 4}, []float64{50, 50}); err != nil {
		t.Fatal(err)
	}
	row := p.row([]float64{10, math.NaN(), math.NaN()})
	// The truth: 90 to 110 ms to node 2, 40 to 60 to node 3 (the fit's
	// heights pull both down a little; fitted on node 1, node 3 would be
	// estimated at 10).
	if row[1] < 75 || row[1] > 130 || row[2] < 25 || row[2] > 70 {
		t.Errorf("estimated RTTs %v to nodes 1…3, want about [10 100 50]", row)
	}
	if n, _ := p.NodeOf("a"); n != 1 {
		t.Errorf("a on node %d, want 1", n)
	}
}

// TestSetNodeRTT: the table the plane starts from puts node C far from
// A, B and D, where it is not; the matrix the nodes measure (SetNodeRTT)
// refits them: a player next to C who measured A, B and D only is
// estimated closer to the truth to C, exactly as by a plane built on the
// measured matrix, and sits where that plane seats it. Bad input changes
// nothing.
func TestSetNodeRTT(t *testing.T) {
	pos := [][2]float64{{0, 0}, {50, 0}, {25, -40}, {25, 40}} // A, B, D, C
	wrong := slices.Clone(pos)
	wrong[3] = [2]float64{200, 200}
	d := func(x, y [2]float64) float64 { return 2*math.Hypot(x[0]-y[0], x[1]-y[1]) + 1 }
	matrix := func(ps [][2]float64) [][]float64 {
		m := make([][]float64, len(ps))
		for i := range ps {
			m[i] = make([]float64, len(ps))
			for j := range ps {
				if i != j {
					m[i][j] = d(ps[i], ps[j])
				}
			}
		}
		return m
	}
	truth := matrix(pos)
	var nodes []Node
	for i := range pos {
		nodes = append(nodes, Node{ID: wire.NodeID(i + 1), Capacity: 4})
	}
	p, err := New(Config{Nodes: nodes, NodeRTT: matrix(wrong), Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	player := [2]float64{25, 45} // 5 from C
	var ss []Sample
	for j := range 3 {
		ss = append(ss, Sample{Node: wire.NodeID(j + 1), RTT: time.Duration(d(player, pos[j]) * float64(time.Millisecond))})
	}
	if _, err := p.Join(2, "a", ss); err != nil {
		t.Fatal(err)
	}
	before, _ := p.Delays("a")
	was := p.Assignment()
	stats := p.Stats()
	for _, bad := range []struct {
		name string
		now  time.Duration
		rtt  [][]float64
	}{
		{"time before the last", 1, truth},
		{"three rows", 3, truth[:3]},
		{"short row", 3, [][]float64{truth[0], truth[1][:3], truth[2], truth[3]}},
		{"negative", 3, [][]float64{{0, -1, 1, 1}, truth[1], truth[2], truth[3]}},
		{"infinite", 3, [][]float64{{0, math.Inf(1), 1, 1}, truth[1], truth[2], truth[3]}},
		{"over MaxRTT", 3, [][]float64{{0, 1e9, 1, 1}, truth[1], truth[2], truth[3]}},
	} {
		if _, err := p.SetNodeRTT(bad.now, bad.rtt); err == nil {
			t.Errorf("%s: accepted", bad.name)
		}
		if row, _ := p.Delays("a"); !slices.Equal(row, before) || !maps.Equal(p.Assignment(), was) || p.Stats() != stats {
			t.Fatalf("%s: changed the plane", bad.name)
		}
	}
	ds, err := p.SetNodeRTT(3, truth)
	if err != nil {
		t.Fatal(err)
	}
	row, _ := p.Delays("a")
	if want := d(player, pos[3]); math.Abs(row[3]-want) >= math.Abs(before[3]-want)/2 {
		t.Errorf("estimated RTT to C %.1f on the table, %.1f on the measured matrix; truth %.1f", before[3], row[3], want)
	}
	// The same as a plane built on the measured matrix.
	ref, err := New(Config{Nodes: nodes, NodeRTT: truth, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ref.Join(0, "a", ss); err != nil {
		t.Fatal(err)
	}
	if want, _ := ref.Delays("a"); !slices.Equal(row, want) || !maps.Equal(p.Assignment(), ref.Assignment()) {
		t.Errorf("after SetNodeRTT: %v on %v; a plane built on the matrix: %v on %v", row, p.Assignment(), want, ref.Assignment())
	}
	if len(ds) != 0 && !slices.ContainsFunc(ds, func(x Decision) bool { return x.Kind == Move && x.Player == "a" }) {
		t.Errorf("decisions %v", ds)
	}
	if st := p.Stats(); st.NodeRTTs != 1 {
		t.Errorf("stats %+v, want 1 node RTT matrix", st)
	}
	noEst, err := New(Config{Nodes: []Node{{ID: 1, Capacity: 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noEst.SetNodeRTT(0, [][]float64{{0}}); !errors.Is(err, ErrBadRTT) {
		t.Errorf("a plane without estimation: %v, want ErrBadRTT", err)
	}
}

// TestUnknownNode: a node with no RTT to any other (a site the table does
// not know) is not placed in the coordinates: a player's RTT to it counts
// as MaxRTT until the player measures it, a player who measured only it
// is estimated at MaxRTT to the others, and the matrix the nodes measure
// (SetNodeRTT) places it. AddNode takes such a node too.
func TestUnknownNode(t *testing.T) {
	pos := [][2]float64{{0, 0}, {50, 0}, {25, -40}, {25, 40}}
	d := func(x, y [2]float64) float64 { return 2*math.Hypot(x[0]-y[0], x[1]-y[1]) + 1 }
	truth := make([][]float64, 4)
	table := make([][]float64, 4)
	for i := range 4 {
		truth[i], table[i] = make([]float64, 4), make([]float64, 4)
		for j := range 4 {
			if i != j {
				truth[i][j] = d(pos[i], pos[j])
				table[i][j] = truth[i][j]
				if i == 3 || j == 3 {
					table[i][j] = math.NaN()
				}
			}
		}
	}
	var nodes []Node
	for i := range pos {
		nodes = append(nodes, Node{ID: wire.NodeID(i + 1), Capacity: 4})
	}
	p, err := New(Config{Nodes: nodes, NodeRTT: table, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	sample := func(at [2]float64, j int) Sample {
		return Sample{Node: wire.NodeID(j + 1), RTT: time.Duration(d(at, pos[j]) * float64(time.Millisecond))}
	}
	near := [2]float64{25, 45}
	if _, err := p.Join(0, "a", []Sample{sample(near, 0), sample(near, 1), sample(near, 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Join(0, "b", []Sample{sample(near, 3)}); err != nil {
		t.Fatal(err)
	}
	ra, _ := p.Delays("a")
	rb, _ := p.Delays("b")
	if ra[3] != ms(MaxRTT) || ra[0] >= ms(MaxRTT) || rb[0] != ms(MaxRTT) || rb[3] != d(near, pos[3]) {
		t.Fatalf("before the measured matrix: a %v, b %v; want a at MaxRTT to node 4 only, b measured to 4 and at MaxRTT to the rest", ra, rb)
	}
	if n, _ := p.NodeOf("b"); n != 4 {
		t.Errorf("b on node %d, want 4 (the only node it measured)", n)
	}
	if _, err := p.SetNodeRTT(1, truth); err != nil {
		t.Fatal(err)
	}
	ra, _ = p.Delays("a")
	rb, _ = p.Delays("b")
	if ra[3] >= ms(MaxRTT) || rb[0] >= ms(MaxRTT) {
		t.Errorf("after the measured matrix: a %v, b %v; want every RTT estimated", ra, rb)
	}
	if _, err := p.AddNode(2, Node{ID: 5, Capacity: 4}, []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN()}); err != nil {
		t.Fatal(err)
	}
	if ra, _ = p.Delays("a"); ra[4] != ms(MaxRTT) {
		t.Errorf("a node added with no RTT: a's RTT to it %v, want MaxRTT", ra[4])
	}
}
