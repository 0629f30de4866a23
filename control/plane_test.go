package control

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/place/mcf"
	"github.com/overworld/overworld/wire"
)

var debug = false

// world is a test's model of the nodes: which player is where, kept only
// from the decisions the plane returns.
type world struct {
	t     *testing.T
	seed  uint64
	cfg   Config
	up    map[wire.NodeID]bool
	at    map[string]wire.NodeID
	cap   map[wire.NodeID]int
	cores map[int]wire.NodeID
}

func newWorld(t *testing.T, seed uint64, cfg Config) *world {
	w := &world{t: t, seed: seed, cfg: cfg, up: map[wire.NodeID]bool{}, at: map[string]wire.NodeID{}, cap: map[wire.NodeID]int{}, cores: map[int]wire.NodeID{}}
	for _, n := range cfg.Nodes {
		w.up[n.ID] = true
		w.cap[n.ID] = n.Capacity
	}
	return w
}

func (w *world) load(n wire.NodeID) int {
	c := 0
	for _, at := range w.at {
		if at == n {
			c++
		}
	}
	return c
}

// apply carries out decisions one by one, checking that no step puts a
// node over capacity or moves a player from where it is not.
func (w *world) apply(ev string, ds []Decision) {
	w.t.Helper()
	if debug {
		w.t.Logf("%s: %v", ev, ds)
	}
	for _, d := range ds {
		switch d.Kind {
		case Admit:
			if _, ok := w.at[d.Player]; ok {
				w.t.Fatalf("seed %d, %s: admit of %s, already on %d", w.seed, ev, d.Player, w.at[d.Player])
			}
			w.at[d.Player] = d.To
		case Move, Readmit:
			if w.at[d.Player] != d.From {
				w.t.Fatalf("seed %d, %s: %v but the player is on %d", w.seed, ev, d, w.at[d.Player])
			}
			if d.Kind == Readmit && w.up[d.From] {
				w.t.Fatalf("seed %d, %s: %v from a node that is up", w.seed, ev, d)
			}
			if d.Kind == Move && !w.up[d.From] {
				w.t.Fatalf("seed %d, %s: %v from a node that is down (want readmit)", w.seed, ev, d)
			}
			w.at[d.Player] = d.To
		case Drop:
			if w.at[d.Player] != d.From {
				w.t.Fatalf("seed %d, %s: %v but the player is on %d", w.seed, ev, d, w.at[d.Player])
			}
			delete(w.at, d.Player)
		case MigrateRegion:
			w.cores[d.Region] = d.To
			if !w.up[d.To] {
				w.t.Fatalf("seed %d, %s: %v to a node that is down", w.seed, ev, d)
			}
			continue
		}
		if d.To != 0 && (d.Kind == Admit || d.Kind == Move || d.Kind == Readmit) {
			if !w.up[d.To] {
				w.t.Fatalf("seed %d, %s: %v to a node that is down", w.seed, ev, d)
			}
			if l := w.load(d.To); l > w.cap[d.To] && !d.Swap {
				w.t.Fatalf("seed %d, %s: %v puts node %d at %d players, capacity %d", w.seed, ev, d, d.To, l, w.cap[d.To])
			}
		}
	}
}

// check compares the model with the plane and the plane's cost with the
// exact transportation optimum on the delays it knows.
func (w *world) check(ev string, p *Plane) {
	w.t.Helper()
	got := p.Assignment()
	if len(got) != len(w.at) {
		w.t.Fatalf("seed %d, %s: plane has %d players, the decisions placed %d", w.seed, ev, len(got), len(w.at))
	}
	for id, n := range got {
		if w.at[id] != n {
			w.t.Fatalf("seed %d, %s: plane has %s on %d, the decisions put it on %d", w.seed, ev, id, n, w.at[id])
		}
		if !w.up[n] {
			w.t.Fatalf("seed %d, %s: %s on node %d, which is down", w.seed, ev, id, n)
		}
	}
	var caps []int
	var cols []int
	for j, n := range w.cfg.Nodes {
		if w.up[n.ID] {
			caps = append(caps, n.Capacity)
			cols = append(cols, j)
		}
		if l := p.Load(n.ID); w.up[n.ID] && l > n.Capacity {
			w.t.Fatalf("seed %d, %s: node %d holds %d, capacity %d", w.seed, ev, n.ID, l, n.Capacity)
		}
	}
	var rows [][]float64
	for _, id := range p.Players() {
		d, _ := p.Delays(id)
		r := make([]float64, len(cols))
		for k, j := range cols {
			r[k] = d[j]
		}
		rows = append(rows, r)
	}
	_, opt, err := mcf.Transport(rows, caps)
	if err != nil {
		w.t.Fatalf("seed %d, %s: optimum: %v", w.seed, ev, err)
	}
	if got := p.TotalDelay(); math.Abs(got-opt) > 1e-6*math.Max(1, opt) {
		w.t.Fatalf("seed %d, %s: total delay %.9f, optimum %.9f", w.seed, ev, got, opt)
	}
	for r := range p.Regions() {
		c, _ := p.Core(r)
		if !w.up[c] {
			w.t.Fatalf("seed %d, %s: region %d on node %d, which is down", w.seed, ev, r, c)
		}
		if want, ok := w.cores[r]; ok && want != c {
			w.t.Fatalf("seed %d, %s: region %d on %d, the decisions put it on %d", w.seed, ev, r, c, want)
		}
	}
}

// instance is a random world: nodes at random points of a plane, players
// too; RTT is twice the distance plus an access delay.
type instance struct {
	nodes  [][2]float64
	access []float64
	rng    *rand.Rand
}

func (in *instance) rtt(pos [2]float64, acc float64, j int) float64 {
	return 2*math.Hypot(pos[0]-in.nodes[j][0], pos[1]-in.nodes[j][1]) + acc + in.access[j]
}

func randomConfig(rng *rand.Rand, estimated bool) (Config, *instance) {
	m := 2 + rng.IntN(6)
	in := &instance{rng: rng}
	cfg := Config{Grid: Grid{Width: 100, Height: 100, Cols: 2, Rows: 2}, MigrationCost: 50, Seed: rng.Uint64()}
	for j := range m {
		in.nodes = append(in.nodes, [2]float64{rng.Float64() * 100, rng.Float64() * 100})
		in.access = append(in.access, rng.Float64()*5)
		cfg.Nodes = append(cfg.Nodes, Node{ID: wire.NodeID(j + 1), Capacity: 1 + rng.IntN(6)})
	}
	if estimated {
		cfg.NodeRTT = make([][]float64, m)
		// Sometimes a node the table does not know: no RTT to any other.
		unknown := -1
		if m > 2 && rng.IntN(4) == 0 {
			unknown = rng.IntN(m)
		}
		for i := range m {
			cfg.NodeRTT[i] = make([]float64, m)
			for j := range m {
				switch {
				case i == j:
				case i == unknown || j == unknown:
					cfg.NodeRTT[i][j] = math.NaN()
				default:
					cfg.NodeRTT[i][j] = in.rtt(in.nodes[i], in.access[i], j)
				}
			}
		}
	}
	switch rng.IntN(3) {
	case 0:
		cfg.Policy = Churn{Events: 1 + rng.IntN(4)}
	case 1:
		cfg.Policy = Periodic{Every: time.Second}
	default:
		cfg.Policy = Load{Low: 0.3, High: 0.8}
	}
	return cfg, in
}

// randomRun runs events on a plane, checking every invariant after each;
// stop (when ≥ 0) is the event at which the plane is dropped and rebuilt
// after idle events during which the nodes admit newcomers by
// themselves. It returns the plane's final cost.
func randomRun(t *testing.T, seed uint64, events, stop, idle int) float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	estimated := rng.IntN(2) == 0
	cfg, in := randomConfig(rng, estimated)
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	w := newWorld(t, seed, cfg)
	type pinfo struct {
		pos [2]float64
		acc float64
	}
	info := map[string]pinfo{}
	measured := map[string]map[int]bool{} // what each client measured
	next := 0
	now := time.Duration(0)
	ids := func() []string {
		out := make([]string, 0, len(w.at))
		for id := range w.at {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	sample := func(id string, j int) Sample {
		pi := info[id]
		return Sample{Node: cfg.Nodes[j].ID, RTT: time.Duration(in.rtt(pi.pos, pi.acc, j) * float64(time.Millisecond))}
	}
	for ev := 0; ev < events; ev++ {
		now += time.Duration(rng.IntN(500)) * time.Millisecond
		if ev == stop && p.Len() > 0 {
			// The plane is gone; the nodes admit joins to the closest
			// node with room and forget leaves.
			irng := rand.New(rand.NewPCG(seed, 8))
			for k := range idle {
				if irng.IntN(2) == 0 && len(w.at) > 0 {
					list := ids()
					delete(w.at, list[irng.IntN(len(list))])
					continue
				}
				id := fmt.Sprintf("idle%d", k)
				info[id] = pinfo{pos: [2]float64{irng.Float64() * 100, irng.Float64() * 100}, acc: irng.Float64() * 10}
				best := wire.NodeID(0)
				bd := math.Inf(1)
				for j, n := range cfg.Nodes {
					if d := in.rtt(info[id].pos, info[id].acc, j); w.up[n.ID] && w.load(n.ID) < n.Capacity && d < bd {
						best, bd = n.ID, d
					}
				}
				if best != 0 {
					w.at[id] = best
				}
			}
			var reps []Report
			for _, n := range cfg.Nodes {
				if !w.up[n.ID] {
					continue
				}
				rep := Report{Node: n.ID}
				for r, c := range w.cores {
					if c == n.ID {
						rep.Regions = append(rep.Regions, r)
					}
				}
				for _, id := range ids() {
					if w.at[id] != n.ID {
						continue
					}
					h := Held{ID: id, Located: true, X: info[id].pos[0], Y: info[id].pos[1]}
					for j := range cfg.Nodes {
						if !estimated || j%2 == 0 || measured[id][j] {
							h.Samples = append(h.Samples, sample(id, j))
						}
					}
					rep.Players = append(rep.Players, h)
				}
				reps = append(reps, rep)
			}
			fresh, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := fresh.Rebuild(now, reps)
			if err != nil {
				t.Fatalf("seed %d: rebuild: %v", seed, err)
			}
			p = fresh
			w.apply("rebuild", ds)
			w.check("rebuild", p)
		}
		var ds []Decision
		var name string
		list := ids()
		switch k := rng.IntN(20); {
		case k < 8 || len(list) == 0:
			id := fmt.Sprintf("q%d", next)
			next++
			info[id] = pinfo{pos: [2]float64{rng.Float64() * 100, rng.Float64() * 100}, acc: rng.Float64() * 10}
			var ss []Sample
			for j := range cfg.Nodes {
				if !estimated || j%2 == 0 {
					ss = append(ss, sample(id, j))
				}
			}
			name = "join " + id
			ds, err = p.Join(now, id, ss)
			if errors.Is(err, ErrNoCapacity) {
				continue
			}
			if err == nil {
				err = p.Locate(now, id, info[id].pos[0], info[id].pos[1])
			}
		case k < 14:
			id := list[rng.IntN(len(list))]
			name = "leave " + id
			ds, err = p.Leave(now, id)
			if err == nil {
				delete(w.at, id)
			}
		case k < 16 && estimated:
			id := list[rng.IntN(len(list))]
			j := rng.IntN(len(cfg.Nodes))
			s := sample(id, j)
			if measured[id] == nil {
				measured[id] = map[int]bool{}
			}
			measured[id][j] = true
			name = fmt.Sprintf("measure %s %d", id, s.Node)
			ds, err = p.Measure(now, id, s.Node, s.RTT)
		case k < 17:
			n := cfg.Nodes[rng.IntN(len(cfg.Nodes))].ID
			if w.up[n] {
				name = fmt.Sprintf("down %d", n)
				ds, err = p.NodeDown(now, n)
				if errors.Is(err, ErrNodeState) {
					continue // the last node up
				}
				if err == nil {
					w.up[n] = false
				}
			} else {
				name = fmt.Sprintf("up %d", n)
				w.up[n] = true
				ds, err = p.NodeUp(now, n)
			}
		case k == 18 && rng.IntN(2) == 0:
			// A node's capacity changes (it enrolled again).
			j := rng.IntN(len(cfg.Nodes))
			n, c := cfg.Nodes[j].ID, 1+rng.IntN(6)
			name = fmt.Sprintf("capacity %d → %d", n, c)
			ds, err = p.SetCapacity(now, n, c)
			if errors.Is(err, ErrNodeState) || errors.Is(err, ErrNoCapacity) {
				continue // down, or too few seats left: refused, nothing changed
			}
			if err == nil {
				cfg.Nodes = slices.Clone(cfg.Nodes)
				cfg.Nodes[j].Capacity = c
				w.cfg.Nodes = cfg.Nodes
				w.cap[n] = c
			}
		case k == 17 && estimated:
			// The nodes measure their RTTs anew: off the table by up to
			// 30%, some pairs unmeasured.
			m := len(cfg.Nodes)
			rtt := make([][]float64, m)
			for i := range m {
				rtt[i] = make([]float64, m)
				for j := range m {
					switch {
					case i == j:
					case rng.IntN(10) == 0:
						rtt[i][j] = math.NaN()
					default:
						rtt[i][j] = in.rtt(in.nodes[i], in.access[i], j) * (0.7 + 0.6*rng.Float64())
					}
				}
			}
			name = "node RTTs"
			ds, err = p.SetNodeRTT(now, rtt)
			if err == nil {
				// A plane rebuilt later starts from what the nodes
				// measure (the live plane gets it from their reports).
				cfg.NodeRTT = rtt
			}
		default:
			name = "tick"
			ds, err = p.Tick(now)
		}
		if err != nil {
			t.Fatalf("seed %d, event %d (%s): %v", seed, ev, name, err)
		}
		w.apply(name, ds)
		w.check(name, p)
		// Clients ping what the plane asks for, at once.
		for _, d := range ds {
			if d.Kind != Probe && d.Kind != Admit {
				continue
			}
			for _, n := range d.Probe {
				j := int(n) - 1
				if measured[d.Player] == nil {
					measured[d.Player] = map[int]bool{}
				}
				measured[d.Player][j] = true
				s := sample(d.Player, j)
				more, err := p.Measure(now, d.Player, s.Node, s.RTT)
				if err != nil {
					t.Fatalf("seed %d, event %d (%s): probe: %v", seed, ev, name, err)
				}
				w.apply("probe after "+name, more)
				w.check("probe after "+name, p)
			}
		}
	}
	return p.TotalDelay()
}

func TestRandomRunsStayOptimal(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 40
	}
	for seed := range uint64(seeds) {
		randomRun(t, seed, 150, -1, 0)
	}
}

// TestRebuildKeepsTheCost drops the plane in the middle of random runs;
// while it is down the nodes admit newcomers to the closest node with
// room. After Rebuild, and at the end of the run, the cost is the optimum,
// and a run rebuilt without idle events ends with the same cost as one
// never interrupted.
func TestRebuildKeepsTheCost(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 30
	}
	for seed := range uint64(seeds) {
		whole := randomRun(t, seed, 120, -1, 0)
		rebuilt := randomRun(t, seed, 120, 60, 0)
		if math.Abs(whole-rebuilt) > 1e-6*math.Max(1, whole) {
			t.Fatalf("seed %d: uninterrupted run ends at total delay %.6f, rebuilt one at %.6f", seed, whole, rebuilt)
		}
		randomRun(t, seed, 120, 60, 10) // checks invariants
	}
}
