package control

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
	gw "github.com/overworld/overworld/world"
)

// randInstance draws an instance of 5 to 40 players, most of whom run a
// player host (node IDs from *next on), with random RTTs and uptimes.
func randInstance(rng *rand.Rand, id string, next *wire.NodeID) Instance {
	sizes := []int{5, 10, 20, 25, 40}
	n := sizes[rng.IntN(len(sizes))]
	if rng.IntN(3) == 0 {
		n = 1 + rng.IntN(6)
	}
	a := Instance{ID: id, Box: gw.Box{Max: gw.Point{10, 10}}, RTT: make([]float64, n*n)}
	for i := range n {
		p := InstancePlayer{ID: fmt.Sprintf("%s.p%d", id, i)}
		if rng.IntN(5) != 0 {
			*next++
			p.Host = *next
		}
		lo := rng.Float64() * 4
		p.Uptime = balance.Uptime{Min: lo, Max: lo + rng.Float64()}
		a.Players = append(a.Players, p)
	}
	for i := range n {
		for j := range i {
			v := float64(5 + rng.IntN(200))
			a.RTT[i*n+j], a.RTT[j*n+i] = v, v
		}
	}
	return a
}

// refHosts is the reference choice of host and replica: LL by a direct
// scan (least total RTT to the other present players, lowest index on
// ties), PD by the largest predicted minimum uptime.
func refHosts(a Instance, present []bool, crit balance.Criterion) (int, int) {
	n := len(a.Players)
	key := func(i int) float64 {
		if crit == balance.PD {
			return -a.Players[i].Uptime.Min
		}
		s := 0.0
		for j := range n {
			if j != i && present[j] {
				s += a.RTT[i*n+j]
			}
		}
		return s
	}
	best := func(skip int) int {
		b := -1
		for i := range n {
			if i == skip || !present[i] || a.Players[i].Host == 0 {
				continue
			}
			if b < 0 || key(i) < key(b) {
				b = i
			}
		}
		return b
	}
	s := best(-1)
	return s, best(s)
}

// TestInstancesRandom runs seeded random sequences of opens, leaves,
// closes and node deaths, and checks after every event: no server above
// its capacity; every open instance on exactly one up server or one
// present player's host, the replica another present player's host
// whenever two of them can host; an overflow only when no server had
// room; the host and replica of every overflow equal to the reference's.
func TestInstancesRandom(t *testing.T) {
	var total InstanceStats
	defer func() {
		if !t.Failed() && (total.Overflowed == 0 || total.Promoted == 0 || total.NewReplicas == 0 || total.Moved == 0 || total.Lost == 0) {
			t.Errorf("the runs exercised too little: %+v", total)
		}
	}()
	for seed := range uint64(40) {
		crit := []balance.Criterion{balance.LL, balance.PD}[seed%2]
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			var nodes []Node
			for i := range 2 + rng.IntN(4) {
				nodes = append(nodes, Node{ID: wire.NodeID(i + 1), Capacity: 20 + rng.IntN(60)})
			}
			x, err := NewInstances(InstanceConfig{Nodes: nodes, Criterion: crit})
			if err != nil {
				t.Fatal(err)
			}
			next := wire.NodeID(1000)
			open := map[string]Instance{}
			present := map[string][]bool{}
			now := time.Duration(0)
			// leftOnce checks the decisions ds of server n's removal or
			// death: every instance it ran (on) leaves it once, with
			// Failover when it was down (a later round's move may take it
			// on from elsewhere), and nothing else leaves it.
			leftOnce := func(n wire.NodeID, on map[string]bool, ds []Decision, failover bool, what string) {
				t.Helper()
				left := map[string]int{}
				for _, d := range ds {
					if d.From != n {
						continue
					}
					left[d.Instance]++
					if !on[d.Instance] || d.Failover != failover && d.Kind != LoseInstance {
						t.Fatalf("seed %d: %s: decision %v", seed, what, d)
					}
					if d.Kind == LoseInstance {
						delete(open, d.Instance)
					}
				}
				for id := range on {
					if left[id] != 1 {
						t.Fatalf("seed %d: %s: instance %s left it %d times: %v", seed, what, id, left[id], ds)
					}
				}
			}
			running := func(n wire.NodeID) map[string]bool {
				on := map[string]bool{}
				for _, id := range x.InstanceIDs() {
					if w, _ := x.Where(id); !w.Hosted && w.Node == n {
						on[id] = true
					}
				}
				return on
			}
			for step := range 300 {
				now += time.Second
				ids := x.InstanceIDs()
				var ds []Decision
				var what string
				switch r := rng.IntN(10); {
				case r < 4 || len(ids) == 0:
					a := randInstance(rng, fmt.Sprintf("i%d", step), &next)
					what = "open " + a.ID
					most := 0
					for _, n := range nodes {
						if x.Up(n.ID) {
							most = max(most, n.Capacity-x.Load(n.ID))
						}
					}
					ds, err = x.Open(now, a)
					if errors.Is(err, ErrNoCapacity) {
						continue
					}
					if err != nil {
						t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
					}
					open[a.ID] = a
					present[a.ID] = make([]bool, len(a.Players))
					for i := range present[a.ID] {
						present[a.ID][i] = true
					}
					if most >= len(a.Players) && (len(ds) != 1 || ds[0].Kind != PlaceInstance || nodes[slices.IndexFunc(nodes, func(n Node) bool { return n.ID == ds[0].To })].Capacity-x.Load(ds[0].To)+len(a.Players) != most) {
						t.Fatalf("seed %d step %d: %s fits (a server has %d seats free) but got %v", seed, step, what, most, ds)
					}
				case r < 8:
					id := ids[rng.IntN(len(ids))]
					a := open[id]
					var in []int
					for i, ok := range present[id] {
						if ok {
							in = append(in, i)
						}
					}
					i := in[rng.IntN(len(in))]
					if w, _ := x.Where(id); w.Hosted && rng.IntN(2) == 0 {
						i = slices.IndexFunc(a.Players, func(p InstancePlayer) bool { return p.ID == w.Player })
					}
					what = "leave " + a.Players[i].ID
					if a.Players[i].Host != 0 && rng.IntN(2) == 0 {
						what = fmt.Sprintf("down %d (%s)", a.Players[i].Host, what)
						ds, err = x.NodeDown(now, a.Players[i].Host)
					} else {
						ds, err = x.Leave(now, id, a.Players[i].ID)
					}
					if err != nil {
						t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
					}
					present[id][i] = false
				case r < 9:
					id := ids[rng.IntN(len(ids))]
					what = "close " + id
					if err := x.Close(now, id); err != nil {
						t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
					}
				case rng.IntN(3) == 0:
					// A game server enrolls, or one leaves for good.
					if len(nodes) > 1 && rng.IntN(2) == 0 {
						k := rng.IntN(len(nodes))
						n := nodes[k].ID
						wasUp := x.Up(n)
						what = fmt.Sprintf("server %d removed (up %v)", n, wasUp)
						on := running(n)
						ds, err = x.RemoveServer(now, n)
						if err != nil {
							t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
						}
						leftOnce(n, on, ds, !wasUp, what)
						nodes = slices.Delete(nodes, k, k+1)
						if x.Load(n) != 0 || x.Up(n) {
							t.Fatalf("seed %d step %d: %s: still a server", seed, step, what)
						}
					} else {
						n := Node{ID: wire.NodeID(100 + step), Capacity: 20 + rng.IntN(60)}
						what = fmt.Sprintf("server %d added", n.ID)
						if err = x.AddServer(now, n); err != nil {
							t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
						}
						nodes = append(nodes, n)
					}
				default:
					n := nodes[rng.IntN(len(nodes))].ID
					if x.Up(n) {
						what = fmt.Sprintf("server %d down", n)
						on := running(n)
						ds, err = x.NodeDown(now, n)
						if err == nil {
							leftOnce(n, on, ds, true, what)
						}
					} else {
						what = fmt.Sprintf("server %d up", n)
						err = x.NodeUp(now, n)
					}
					if err != nil {
						t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
					}
				}
				for _, d := range ds {
					if d.Kind == OverflowInstance || d.Kind == PromoteInstance || d.Kind == NewReplica {
						w, ok := x.Where(d.Instance)
						if !ok || !w.Hosted {
							continue
						}
						s, r := refHosts(open[d.Instance], present[d.Instance], crit)
						if d.Kind == OverflowInstance && (open[d.Instance].Players[s].Host != d.To || r >= 0 && open[d.Instance].Players[r].Host != d.Replica) {
							t.Fatalf("seed %d step %d: %s: %v, want host %d replica %d", seed, step, what, d, s, r)
						}
					}
				}
				checkInstances(t, seed, step, what, x, nodes, open, present)
			}
			st := x.Stats()
			total.Overflowed += st.Overflowed
			total.Promoted += st.Promoted
			total.NewReplicas += st.NewReplicas
			total.Moved += st.Moved
			total.Lost += st.Lost
		})
	}
}

// checkInstances checks the invariants of TestInstancesRandom.
func checkInstances(t *testing.T, seed uint64, step int, what string, x *Instances, nodes []Node, open map[string]Instance, present map[string][]bool) {
	t.Helper()
	load := map[wire.NodeID]int{}
	for _, id := range x.InstanceIDs() {
		a, pres := open[id], present[id]
		w, _ := x.Where(id)
		n := 0
		for _, ok := range pres {
			if ok {
				n++
			}
		}
		if w.Players != n {
			t.Fatalf("seed %d step %d: %s: instance %s has %d players, want %d", seed, step, what, id, w.Players, n)
		}
		if !w.Hosted {
			if !slices.ContainsFunc(nodes, func(m Node) bool { return m.ID == w.Node }) {
				t.Fatalf("seed %d step %d: %s: instance %s on %d, not a server", seed, step, what, id, w.Node)
			}
			if !x.Up(w.Node) {
				t.Fatalf("seed %d step %d: %s: instance %s on dead server %d", seed, step, what, id, w.Node)
			}
			load[w.Node] += n
			continue
		}
		hostable := 0
		at := func(h wire.NodeID) int {
			return slices.IndexFunc(a.Players, func(p InstancePlayer) bool { return p.Host == h && h != 0 })
		}
		for i, p := range a.Players {
			if pres[i] && p.Host != 0 {
				hostable++
			}
		}
		if i := at(w.Node); i < 0 || !pres[i] {
			t.Fatalf("seed %d step %d: %s: instance %s hosted on %d, not a present player's host", seed, step, what, id, w.Node)
		}
		switch {
		case hostable >= 2 && (w.Replica == 0 || w.Replica == w.Node || at(w.Replica) < 0 || !pres[at(w.Replica)]):
			t.Fatalf("seed %d step %d: %s: instance %s (%d players can host) has replica %d beside host %d", seed, step, what, id, hostable, w.Replica, w.Node)
		case hostable < 2 && w.Replica != 0:
			t.Fatalf("seed %d step %d: %s: instance %s has a replica with %d hosts", seed, step, what, id, hostable)
		}
	}
	for _, n := range nodes {
		if load[n.ID] != x.Load(n.ID) || load[n.ID] > n.Capacity {
			t.Fatalf("seed %d step %d: %s: server %d runs %d players (plane says %d), capacity %d", seed, step, what, n.ID, load[n.ID], x.Load(n.ID), n.Capacity)
		}
	}
}

// Up reports whether a server is up (tests).
func (x *Instances) Up(n wire.NodeID) bool {
	j, ok := x.index[n]
	return ok && x.up[j]
}

// TestInstancesInput checks that bad input is refused without a change.
func TestInstancesInput(t *testing.T) {
	// No server yet: opens fail until one is added.
	x0, err := NewInstances(InstanceConfig{})
	if err != nil {
		t.Fatalf("no nodes: %v", err)
	}
	one := Instance{ID: "a", Box: gw.Box{Max: gw.Point{1, 1}}, Players: []InstancePlayer{{ID: "p"}}}
	if _, err := x0.Open(0, one); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("open with no server: %v", err)
	}
	if err := x0.AddServer(0, Node{ID: 9, Capacity: 2}); err != nil {
		t.Fatal(err)
	}
	if ds, err := x0.Open(0, one); err != nil || len(ds) != 1 || ds[0].To != 9 {
		t.Fatalf("open on the added server: %v %v", ds, err)
	}
	for _, bad := range []Node{{ID: 9, Capacity: 2}, {ID: 0, Capacity: 2}, {ID: 10, Capacity: 0}} {
		if err := x0.AddServer(0, bad); err == nil {
			t.Errorf("AddServer %+v: accepted", bad)
		}
	}
	if _, err := x0.RemoveServer(0, 10); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("RemoveServer of a node that is not a server: %v", err)
	}
	// The last server leaves: its instance, with no player host, is lost.
	if ds, err := x0.RemoveServer(1, 9); err != nil || len(ds) != 1 || ds[0].Kind != LoseInstance {
		t.Fatalf("the last server removed: %v %v", ds, err)
	}
	if err := x0.AddServer(0, Node{ID: 11, Capacity: 2}); !errors.Is(err, ErrTime) {
		t.Errorf("AddServer before the last event: %v", err)
	}
	if _, err := NewInstances(InstanceConfig{Nodes: []Node{{ID: 1, Capacity: 5}}, Margin: math.NaN()}); !errors.Is(err, ErrConfig) {
		t.Fatalf("NaN margin: %v", err)
	}
	x, err := NewInstances(InstanceConfig{Nodes: []Node{{ID: 1, Capacity: 10}, {ID: 2, Capacity: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	p := func(id string, h wire.NodeID) InstancePlayer { return InstancePlayer{ID: id, Host: h} }
	bad := []Instance{
		{},
		{ID: "a"},
		{ID: "a", Players: []InstancePlayer{p("x", 0), p("x", 0)}},
		{ID: "a", Players: []InstancePlayer{p("x", 7), p("y", 7)}},
		{ID: "a", Players: []InstancePlayer{p("x", 1)}},
		{ID: "a", Players: []InstancePlayer{p("x", 0), p("y", 0)}, RTT: []float64{0, 1, 1}},
		{ID: "a", Players: []InstancePlayer{p("x", 0), p("y", 0)}, RTT: []float64{0, math.NaN(), 1, 0}},
		{ID: "a", Players: []InstancePlayer{p("x", 0)}, Box: gw.Box{Min: gw.Point{1}, Max: gw.Point{0}}},
	}
	for i, a := range bad {
		if _, err := x.Open(time.Second, a); !errors.Is(err, ErrBadInstance) {
			t.Errorf("bad instance %d: %v", i, err)
		}
	}
	if len(x.InstanceIDs()) != 0 || x.Load(1)+x.Load(2) != 0 {
		t.Fatal("a refused open changed the plane")
	}
	// Full servers, and an instance nobody can host: refused.
	for i := range 2 {
		var ps []InstancePlayer
		for k := range 10 {
			ps = append(ps, p(fmt.Sprintf("f%d.%d", i, k), 0))
		}
		if _, err := x.Open(time.Second, Instance{ID: fmt.Sprint("f", i), Players: ps}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := x.Open(time.Second, Instance{ID: "z", Players: []InstancePlayer{p("z", 0)}}); !errors.Is(err, ErrNoCapacity) {
		t.Fatalf("full: %v", err)
	}
	ds, err := x.Open(2*time.Second, Instance{ID: "h", Players: []InstancePlayer{p("h1", 101), p("h2", 102), p("h3", 0)}, RTT: []float64{0, 10, 50, 10, 0, 5, 50, 5, 0}})
	if err != nil || len(ds) != 1 || ds[0].String() != "overflow-instance h →h2@102 replica=h1@101" {
		t.Fatalf("overflow: %v %v", ds, err)
	}
	if _, err := x.Open(time.Second, Instance{ID: "t", Players: []InstancePlayer{p("t", 0)}}); !errors.Is(err, ErrTime) {
		t.Fatalf("time: %v", err)
	}
	if _, err := x.Leave(3*time.Second, "h", "nobody"); !errors.Is(err, ErrUnknownPlayer) {
		t.Fatalf("leave: %v", err)
	}
	if _, err := x.NodeDown(3*time.Second, 55); !errors.Is(err, ErrUnknownNode) {
		t.Fatalf("down: %v", err)
	}
	ds, err = x.NodeDown(3*time.Second, 102)
	if err != nil || len(ds) != 1 || ds[0].String() != "promote-instance h 102→h1@101 no-replica" {
		t.Fatalf("host down: %v %v", ds, err)
	}
	ds, err = x.Leave(4*time.Second, "h", "h1")
	if err != nil || len(ds) != 1 || ds[0].String() != "lose-instance h 101→" {
		t.Fatalf("last host leaves: %v %v", ds, err)
	}
}
