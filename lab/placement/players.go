package placement

import (
	"container/heap"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/place/mcf"
	"github.com/overworld/overworld/wire"
)

// world is the data one experiment runs on: the server cities, their
// indices in the WonderNetwork set, and the population model.
type world struct {
	pop     *geo.Population
	pings   *geo.PingSet
	servers []int
	names   []string
}

// nodeRTT returns the server-to-server RTT matrix (NaN where unmeasured).
func (w *world) nodeRTT() [][]float64 {
	m := len(w.servers)
	out := make([][]float64, m)
	for i := range m {
		out[i] = make([]float64, m)
		for j := range m {
			if i == j {
				continue
			}
			v, ok := w.pings.PairRTT(w.servers[i], w.servers[j])
			if !ok {
				v = math.NaN()
			}
			out[i][j] = v
		}
	}
	return out
}

// trueRow returns a player's model RTT to every server.
func (w *world) trueRow(pl geo.Player) []float64 {
	row := make([]float64, len(w.servers))
	for j, s := range w.servers {
		row[j] = w.pop.RTT(pl, s)
	}
	return row
}

// ping is what a client measures: the least of 3 pings, each the true RTT
// plus an exponential queueing delay of mean jitter × RTT.
func ping(rng *rand.Rand, rtt, jitter float64) time.Duration {
	best := math.Inf(1)
	for range 3 {
		best = min(best, rtt*(1+jitter*rng.ExpFloat64()))
	}
	return time.Duration(best * float64(time.Millisecond))
}

// Snapshot is one moment of the players experiment.
type Snapshot struct {
	At      time.Duration
	Players int
	// Plane, Optimum and Static are mean true RTTs in ms: the control
	// plane's assignment, the exact optimum for the players online, and
	// static nearest-with-room admission.
	Plane, Optimum, Static float64
	// PlaneP95 and StaticP95 are 95th percentiles.
	PlaneP95, StaticP95 float64
	// Moves counts the players the plane moved since the last snapshot.
	Moves int
	// EstError is the median relative error of the plane's estimates of
	// the RTTs nobody measured, for the players online.
	EstError float64
}

// Gap is the plane's mean RTT over the optimum's, minus 1.
func (s Snapshot) Gap() float64 { return s.Plane/s.Optimum - 1 }

// Reduction is how much lower the plane's mean RTT is than static
// admission's: 1 − plane/static.
func (s Snapshot) Reduction() float64 { return 1 - s.Plane/s.Static }

// PlayersRun is one run of the players experiment at one headroom.
type PlayersRun struct {
	Headroom float64
	// Slack is the plane's ProbeSlack (negative: no Probe decisions).
	Slack float64
	// Capacity is each node's capacity.
	Capacity  int
	Snapshots []Snapshot
	// Joins, Rejected, Leaves, Measures count events; Moves the plane's
	// moves over the whole run.
	Joins, Rejected, Leaves, Measures, Moves, Reseats int
	// Measured is the mean number of nodes each player measured.
	Measured float64
}

// WorstGap and MinReduction summarise the snapshots.
func (r *PlayersRun) WorstGap() float64 {
	g := 0.0
	for _, s := range r.Snapshots {
		g = max(g, s.Gap())
	}
	return g
}

func (r *PlayersRun) MinReduction() float64 {
	x := math.Inf(1)
	for _, s := range r.Snapshots {
		x = min(x, s.Reduction())
	}
	return x
}

func (r *PlayersRun) MeanReduction() float64 {
	s := 0.0
	for _, sn := range r.Snapshots {
		s += sn.Reduction()
	}
	return s / float64(len(r.Snapshots))
}

type evKind uint8

const (
	evJoin evKind = iota
	evProbe
	evLeave
	evSnap
	evMeasure // the client measures a node
	evTick
)

type event struct {
	at   time.Duration
	seq  int
	kind evKind
	p    int // player index
	node int // evMeasure: the node index
}

// queue orders events by time, then by the order they were added.
type queue struct {
	items []event
	added int
}

func (q *queue) Len() int { return len(q.items) }
func (q *queue) Less(i, j int) bool {
	a, b := q.items[i], q.items[j]
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}
func (q *queue) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *queue) Push(x any)    { q.items = append(q.items, x.(event)) }
func (q *queue) Pop() any {
	x := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return x
}
func (q *queue) add(e event) { e.seq = q.added; q.added++; heap.Push(q, e) }
func (q *queue) next() event { return heap.Pop(q).(event) }

// runPlayers runs the players experiment at one headroom. tick is called
// after every event.
func runPlayers(cfg *Config, w *world, headroom, slack float64, tick func()) (*PlayersRun, error) {
	m := len(w.servers)
	capacity := int(math.Ceil(float64(cfg.Players) * headroom / float64(m)))
	run := &PlayersRun{Headroom: headroom, Slack: slack, Capacity: capacity}
	nodes := make([]control.Node, m)
	for j := range nodes {
		nodes[j] = control.Node{ID: wire.NodeID(j + 1), Site: w.names[j], Capacity: capacity}
	}
	plane, err := control.New(control.Config{Nodes: nodes, NodeRTT: w.nodeRTT(), Probes: cfg.Probes, ProbeSlack: slack, Seed: cfg.Seed})
	if err != nil {
		return nil, fmt.Errorf("lab/placement: %w", err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x706c))
	// Arrivals: Players at once (spread over the first minute, the
	// stationary population), then a Poisson process.
	var q queue
	var players []geo.Player
	var rows [][]float64
	addPlayer := func(at time.Duration) {
		pl := w.pop.Draw(1, rng)[0]
		pl.ID = fmt.Sprintf("p%06d", len(players))
		players = append(players, pl)
		rows = append(rows, w.trueRow(pl))
		q.add(event{at: at, kind: evJoin, p: len(players) - 1})
	}
	for range cfg.Players {
		addPlayer(time.Duration(rng.Float64() * float64(time.Minute)))
	}
	rate := float64(cfg.Players) / cfg.Session.Seconds()
	for t := time.Duration(rng.ExpFloat64() / rate * float64(time.Second)); t < cfg.Duration; t += time.Duration(rng.ExpFloat64() / rate * float64(time.Second)) {
		addPlayer(t)
	}
	for k := 1; k <= cfg.Snapshots; k++ {
		q.add(event{at: cfg.Duration * time.Duration(k) / time.Duration(cfg.Snapshots), kind: evSnap})
	}
	for t := cfg.Tick; t <= cfg.Duration; t += cfg.Tick {
		q.add(event{at: t, kind: evTick})
	}

	online := map[int]bool{}
	staticAt := make([]int, len(players))
	staticLoad := make([]int, m)
	measured := make([][]bool, len(players))
	probe := make([][]wire.NodeID, len(players))
	movesSince := 0
	totalMeasured := 0
	index := map[string]int{}
	for p, pl := range players {
		index[pl.ID] = p
	}
	// apply counts moves and has a client put on a node it never measured
	// measure it once connected.
	apply := func(at time.Duration, ds []control.Decision) {
		for _, d := range ds {
			switch d.Kind {
			case control.Move, control.Readmit:
				movesSince++
				run.Moves++
			case control.Admit:
			case control.Probe:
				for _, n := range d.Probe {
					q.add(event{at: at + cfg.ProbeDelay, kind: evMeasure, p: index[d.Player], node: int(n) - 1})
				}
				continue
			default:
				continue
			}
			p, j := index[d.Player], int(d.To)-1
			if d.Kind != control.Admit && !measured[p][j] {
				q.add(event{at: at + cfg.ProbeDelay, kind: evMeasure, p: p, node: j})
			}
		}
	}
	for q.Len() > 0 {
		ev := q.next()
		switch ev.kind {
		case evJoin:
			p := ev.p
			measured[p] = make([]bool, m)
			var ss []control.Sample
			for j := range cfg.JoinProbes {
				ss = append(ss, control.Sample{Node: wire.NodeID(j + 1), RTT: ping(rng, rows[p][j], cfg.Jitter)})
				measured[p][j] = true
			}
			ds, err := plane.Join(ev.at, players[p].ID, ss)
			if errors.Is(err, control.ErrNoCapacity) {
				run.Rejected++
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("lab/placement: %w", err)
			}
			run.Joins++
			apply(ev.at, ds)
			online[p] = true
			probe[p] = ds[len(ds)-1].Probe
			if len(probe[p]) > 0 {
				q.add(event{at: ev.at + cfg.ProbeDelay, kind: evProbe, p: p})
			}
			q.add(event{at: ev.at + time.Duration(rng.ExpFloat64()*float64(cfg.Session)), kind: evLeave, p: p})
			// Static: the nearest node with room, on true RTTs.
			best := -1
			for j := range m {
				if staticLoad[j] < capacity && (best < 0 || rows[p][j] < rows[p][best]) {
					best = j
				}
			}
			staticAt[p] = best
			staticLoad[best]++
		case evProbe:
			if !online[ev.p] {
				continue
			}
			for _, n := range probe[ev.p] {
				j := int(n) - 1
				ds, err := plane.Measure(ev.at, players[ev.p].ID, n, ping(rng, rows[ev.p][j], cfg.Jitter))
				if err != nil {
					return nil, fmt.Errorf("lab/placement: %w", err)
				}
				measured[ev.p][j] = true
				run.Measures++
				apply(ev.at, ds)
			}
		case evTick:
			ds, err := plane.Tick(ev.at)
			if err != nil {
				return nil, fmt.Errorf("lab/placement: %w", err)
			}
			apply(ev.at, ds)
		case evMeasure:
			if !online[ev.p] || measured[ev.p][ev.node] {
				continue
			}
			ds, err := plane.Measure(ev.at, players[ev.p].ID, wire.NodeID(ev.node+1), ping(rng, rows[ev.p][ev.node], cfg.Jitter))
			if err != nil {
				return nil, fmt.Errorf("lab/placement: %w", err)
			}
			measured[ev.p][ev.node] = true
			run.Measures++
			apply(ev.at, ds)
		case evLeave:
			if !online[ev.p] {
				continue
			}
			ds, err := plane.Leave(ev.at, players[ev.p].ID)
			if err != nil {
				return nil, fmt.Errorf("lab/placement: %w", err)
			}
			apply(ev.at, ds)
			delete(online, ev.p)
			staticLoad[staticAt[ev.p]]--
			run.Leaves++
		case evSnap:
			sn, err := snapshot(plane, players, rows, online, staticAt, measured, capacity, m)
			if err != nil {
				return nil, err
			}
			sn.At, sn.Moves = ev.at, movesSince
			movesSince = 0
			run.Snapshots = append(run.Snapshots, sn)
		}
		if tick != nil {
			tick()
		}
	}
	for p := range measured {
		for _, ok := range measured[p] {
			if ok {
				totalMeasured++
			}
		}
	}
	run.Measured = float64(totalMeasured) / float64(max(1, run.Joins))
	run.Reseats = plane.Stats().Reseats
	return run, nil
}

// snapshot measures the three placements on the true RTTs of the players
// online.
func snapshot(plane *control.Plane, players []geo.Player, rows [][]float64, online map[int]bool, staticAt []int, measured [][]bool, capacity, m int) (Snapshot, error) {
	var ps []int
	for p := range players {
		if online[p] {
			ps = append(ps, p)
		}
	}
	sn := Snapshot{Players: len(ps)}
	if len(ps) == 0 {
		return sn, nil
	}
	var planeDs, staticDs, errs []float64
	tr := make([][]float64, len(ps))
	for i, p := range ps {
		n, ok := plane.NodeOf(players[p].ID)
		if !ok {
			return sn, fmt.Errorf("lab/placement: internal error: %s online but not placed", players[p].ID)
		}
		planeDs = append(planeDs, rows[p][int(n)-1])
		staticDs = append(staticDs, rows[p][staticAt[p]])
		tr[i] = rows[p]
		est, _ := plane.Delays(players[p].ID)
		for j := range m {
			if !measured[p][j] {
				errs = append(errs, math.Abs(est[j]-rows[p][j])/rows[p][j])
			}
		}
	}
	caps := make([]int, m)
	for j := range caps {
		caps[j] = capacity
	}
	_, total, err := mcf.Transport(tr, caps)
	if err != nil {
		return sn, fmt.Errorf("lab/placement: optimum: %w", err)
	}
	sn.Optimum = total / float64(len(ps))
	sn.Plane, sn.PlaneP95 = meanP95(planeDs)
	sn.Static, sn.StaticP95 = meanP95(staticDs)
	if len(errs) > 0 {
		_, sn.EstError = medianOf(errs)
	}
	return sn, nil
}
