package control

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
)

// modelInst is an instance as the nodes running it know it: the test
// carries the plane's decisions out on this model, and the reports a
// returning plane rebuilds from are the model's, not the plane's.
type modelInst struct {
	a       Instance
	present []bool
	at      wire.NodeID // the node running it
	replica string
}

// applyInstances carries decisions out on the model.
func applyInstances(m map[string]*modelInst, ds []Decision) error {
	for _, d := range ds {
		in := m[d.Instance]
		if in == nil {
			return fmt.Errorf("%v: unknown instance", d)
		}
		switch d.Kind {
		case PlaceInstance, MoveInstance:
			in.at, in.replica = d.To, ""
		case OverflowInstance, PromoteInstance:
			in.at, in.replica = d.To, d.ReplicaPlayer
		case NewReplica:
			if d.To != in.at {
				return fmt.Errorf("%v: the host is %d", d, in.at)
			}
			in.replica = d.ReplicaPlayer
		case LoseInstance, EndInstance:
			delete(m, d.Instance)
		default:
			return fmt.Errorf("%v: not an instance decision", d)
		}
	}
	return nil
}

// modelReports returns what the live nodes report: every up server, and
// every player host running an instance.
func modelReports(m map[string]*modelInst, servers []Node, up map[wire.NodeID]bool) []InstanceReport {
	by := map[wire.NodeID]*InstanceReport{}
	var order []wire.NodeID
	add := func(n wire.NodeID) *InstanceReport {
		if by[n] == nil {
			by[n] = &InstanceReport{Node: n}
			order = append(order, n)
		}
		return by[n]
	}
	for _, s := range servers {
		if up[s.ID] {
			add(s.ID)
		}
	}
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		in := m[id]
		ri := RunningInstance{Instance: in.a, Replica: in.replica}
		for i, p := range in.a.Players {
			if !in.present[i] {
				ri.Left = append(ri.Left, p.ID)
			}
		}
		r := add(in.at)
		r.Instances = append(r.Instances, ri)
	}
	slices.Sort(order)
	out := make([]InstanceReport, 0, len(order))
	for _, n := range order {
		out = append(out, *by[n])
	}
	return out
}

// TestInstancesRebuildRandom runs two instance planes on the same seeded
// random events (opens, leaves, closes, player hosts' and servers'
// deaths and returns): one never goes down; the other, at random steps,
// loses its state and is rebuilt from the reports of a model of the
// nodes that carries the decisions out. After every event both decide
// the same, place every instance the same way, and the rebuilt one keeps
// TestInstancesRandom's invariants; its snapshot equals the nodes'
// reports. A rebuild from contradicting reports fails and changes
// nothing.
func TestInstancesRebuildRandom(t *testing.T) {
	rebuilds, after := 0, 0
	var kinds [EndInstance + 1]int
	for seed := range uint64(30) {
		crit := balance.Criteria()[int(seed)%len(balance.Criteria())]
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			var servers []Node
			up := map[wire.NodeID]bool{}
			for i := range 2 + rng.IntN(3) {
				servers = append(servers, Node{ID: wire.NodeID(i + 1), Capacity: 15 + rng.IntN(40)})
				up[wire.NodeID(i+1)] = true
			}
			cfg := InstanceConfig{Nodes: servers, Criterion: crit}
			ref, err := NewInstances(cfg)
			if err != nil {
				t.Fatal(err)
			}
			x, _ := NewInstances(cfg)
			model := map[string]*modelInst{}
			open := map[string]Instance{}
			present := map[string][]bool{}
			next := wire.NodeID(1000)
			now := time.Duration(0)
			rebuilt := false
			for step := range 250 {
				now += time.Second
				if step > 0 && rng.IntN(8) == 0 {
					reps := modelReports(model, servers, up)
					if snap := ref.InstanceSnapshot(); !reflect.DeepEqual(snap, reps) {
						t.Fatalf("seed %d step %d: the plane's snapshot\n%+v\ndiffers from the nodes' reports\n%+v", seed, step, snap, reps)
					}
					x, _ = NewInstances(cfg)
					if len(reps) > 0 {
						// A node reported twice: refused, nothing changes.
						bad := append(slices.Clone(reps), reps[0])
						if err := x.RebuildInstances(now, bad); !errors.Is(err, ErrRebuild) {
							t.Fatalf("seed %d step %d: a node reported twice: %v", seed, step, err)
						}
						if len(x.InstanceIDs()) != 0 || !reflect.DeepEqual(x.up, slices.Repeat([]bool{true}, len(servers))) {
							t.Fatalf("seed %d step %d: a refused rebuild changed the plane", seed, step)
						}
					}
					if err := x.RebuildInstances(now, reps); err != nil {
						t.Fatalf("seed %d step %d: rebuild: %v", seed, step, err)
					}
					if err := x.RebuildInstances(now, reps); (len(x.InstanceIDs()) > 0 || slices.Contains(x.up, false)) != errors.Is(err, ErrRebuild) {
						t.Fatalf("seed %d step %d: a second rebuild: %v", seed, step, err)
					}
					rebuilds++
					rebuilt = true
					compareInstances(t, seed, step, "rebuild", ref, x, servers)
				}
				ids := ref.InstanceIDs()
				var what string
				var dr, dx []Decision
				var er, ex error
				switch r := rng.IntN(10); {
				case r < 4 || len(ids) == 0:
					a := randInstance(rng, fmt.Sprintf("i%d", step), &next)
					what = "open " + a.ID
					dr, er = ref.Open(now, a)
					dx, ex = x.Open(now, a)
					if er == nil {
						open[a.ID] = a
						present[a.ID] = slices.Repeat([]bool{true}, len(a.Players))
						model[a.ID] = &modelInst{a: a, present: slices.Clone(present[a.ID])}
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
					if w, _ := ref.Where(id); w.Hosted && rng.IntN(2) == 0 {
						i = slices.IndexFunc(a.Players, func(p InstancePlayer) bool { return p.ID == w.Player })
					}
					what = "leave " + a.Players[i].ID
					if h := a.Players[i].Host; h != 0 && rng.IntN(2) == 0 {
						what = fmt.Sprintf("down %d (%s)", h, what)
						dr, er = ref.NodeDown(now, h)
						dx, ex = x.NodeDown(now, h)
					} else {
						dr, er = ref.Leave(now, id, a.Players[i].ID)
						dx, ex = x.Leave(now, id, a.Players[i].ID)
					}
					present[id][i] = false
					model[id].present[i] = false
				case r < 9:
					id := ids[rng.IntN(len(ids))]
					what = "close " + id
					er, ex = ref.Close(now, id), x.Close(now, id)
					delete(model, id)
				default:
					n := servers[rng.IntN(len(servers))].ID
					if up[n] {
						what = fmt.Sprintf("server %d down", n)
						dr, er = ref.NodeDown(now, n)
						dx, ex = x.NodeDown(now, n)
					} else {
						what = fmt.Sprintf("server %d up", n)
						er, ex = ref.NodeUp(now, n), x.NodeUp(now, n)
					}
					if er == nil {
						up[n] = !up[n]
					}
				}
				if fmt.Sprint(er) != fmt.Sprint(ex) || fmt.Sprint(dr) != fmt.Sprint(dx) {
					t.Fatalf("seed %d step %d: %s: the plane that never went down decided %v (%v), the rebuilt one %v (%v)", seed, step, what, dr, er, dx, ex)
				}
				if er != nil && !errors.Is(er, ErrNoCapacity) {
					t.Fatalf("seed %d step %d: %s: %v", seed, step, what, er)
				}
				if err := applyInstances(model, dr); err != nil {
					t.Fatalf("seed %d step %d: %s: %v", seed, step, what, err)
				}
				if rebuilt {
					after += len(dr)
					for _, d := range dr {
						kinds[d.Kind]++
					}
				}
				compareInstances(t, seed, step, what, ref, x, servers)
				checkInstances(t, seed, step, what, x, servers, open, present)
			}
		})
	}
	if !t.Failed() {
		t.Logf("%d rebuilds, %d decisions after one", rebuilds, after)
		for _, k := range []Kind{PlaceInstance, MoveInstance, OverflowInstance, PromoteInstance, NewReplica, LoseInstance, EndInstance} {
			if kinds[k] == 0 {
				t.Errorf("no %v decision after a rebuild: the runs exercised too little", k)
			}
		}
	}
}

// compareInstances checks that two instance planes hold the same
// placement.
func compareInstances(t *testing.T, seed uint64, step int, what string, ref, x *Instances, servers []Node) {
	t.Helper()
	if a, b := ref.InstanceIDs(), x.InstanceIDs(); !slices.Equal(a, b) {
		t.Fatalf("seed %d step %d: %s: instances %v, rebuilt %v", seed, step, what, a, b)
	}
	for _, id := range ref.InstanceIDs() {
		wa, _ := ref.Where(id)
		wb, _ := x.Where(id)
		if wa != wb || ref.Successor(id) != x.Successor(id) {
			t.Fatalf("seed %d step %d: %s: instance %s at %+v (successor %d), rebuilt %+v (%d)", seed, step, what, id, wa, ref.Successor(id), wb, x.Successor(id))
		}
	}
	for _, n := range servers {
		if ref.Load(n.ID) != x.Load(n.ID) || ref.Up(n.ID) != x.Up(n.ID) {
			t.Fatalf("seed %d step %d: %s: server %d load %d up %v, rebuilt %d %v", seed, step, what, n.ID, ref.Load(n.ID), ref.Up(n.ID), x.Load(n.ID), x.Up(n.ID))
		}
	}
}

// TestInstancesRebuildInput checks that contradicting reports are
// refused without a change.
func TestInstancesRebuildInput(t *testing.T) {
	cfg := InstanceConfig{Nodes: []Node{{ID: 1, Capacity: 4}, {ID: 2, Capacity: 4}}}
	p := func(id string, h wire.NodeID) InstancePlayer { return InstancePlayer{ID: id, Host: h} }
	a := Instance{ID: "a", Players: []InstancePlayer{p("x", 101), p("y", 102), p("z", 0)}}
	big := Instance{ID: "b", Players: []InstancePlayer{p("u", 0), p("v", 0), p("w", 0), p("s", 0), p("t", 0)}}
	run := func(in Instance, left []string, replica string) RunningInstance {
		return RunningInstance{Instance: in, Left: left, Replica: replica}
	}
	bad := []struct {
		name string
		reps []InstanceReport
		want error
	}{
		{"node 0", []InstanceReport{{Node: 0}}, ErrRebuild},
		{"a node twice", []InstanceReport{{Node: 1}, {Node: 1}}, ErrRebuild},
		{"a server with a replica", []InstanceReport{{Node: 1, Instances: []RunningInstance{run(a, nil, "x")}}}, ErrRebuild},
		{"a server above its capacity", []InstanceReport{{Node: 1, Instances: []RunningInstance{run(big, nil, "")}}}, ErrRebuild},
		{"an instance twice", []InstanceReport{{Node: 1, Instances: []RunningInstance{run(a, nil, "")}}, {Node: 2, Instances: []RunningInstance{run(a, nil, "")}}}, ErrBadInstance},
		{"hosted by a stranger", []InstanceReport{{Node: 1}, {Node: 2}, {Node: 103, Instances: []RunningInstance{run(a, nil, "")}}}, ErrRebuild},
		{"hosted by a player who left", []InstanceReport{{Node: 101, Instances: []RunningInstance{run(a, []string{"x"}, "y")}}}, ErrRebuild},
		{"a replica with no host", []InstanceReport{{Node: 101, Instances: []RunningInstance{run(a, nil, "z")}}}, ErrRebuild},
		{"the host as its own replica", []InstanceReport{{Node: 101, Instances: []RunningInstance{run(a, nil, "x")}}}, ErrRebuild},
		{"an unknown player left", []InstanceReport{{Node: 1, Instances: []RunningInstance{run(a, []string{"q"}, "")}}}, ErrRebuild},
		{"a player left twice", []InstanceReport{{Node: 1, Instances: []RunningInstance{run(a, []string{"z", "z"}, "")}}}, ErrRebuild},
		{"every player left", []InstanceReport{{Node: 1, Instances: []RunningInstance{run(a, []string{"x", "y", "z"}, "")}}}, ErrRebuild},
		{"a player host with nothing", []InstanceReport{{Node: 1}, {Node: 55}}, ErrRebuild},
		{"a malformed instance", []InstanceReport{{Node: 1, Instances: []RunningInstance{run(Instance{ID: "e"}, nil, "")}}}, ErrBadInstance},
	}
	x, err := NewInstances(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Open(5*time.Second, Instance{ID: "t", Players: []InstancePlayer{p("t", 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := x.RebuildInstances(5*time.Second, nil); !errors.Is(err, ErrRebuild) {
		t.Fatalf("rebuild of a used plane: %v", err)
	}
	x, _ = NewInstances(cfg)
	for _, c := range bad {
		if err := x.RebuildInstances(time.Second, c.reps); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if len(x.InstanceIDs()) != 0 || !x.Up(1) || !x.Up(2) || x.Load(1)+x.Load(2) != 0 {
			t.Fatalf("%s: a refused rebuild changed the plane", c.name)
		}
	}
	// Server 2 is down (no report); a is hosted by x with its replica on y.
	if err := x.RebuildInstances(time.Second, []InstanceReport{{Node: 1}, {Node: 101, Instances: []RunningInstance{run(a, nil, "y")}}}); err != nil {
		t.Fatal(err)
	}
	if w, _ := x.Where("a"); !w.Hosted || w.Node != 101 || w.Replica != 102 || x.Up(2) {
		t.Fatalf("rebuilt: %+v, server 2 up %v", w, x.Up(2))
	}
	if err := x.RebuildInstances(0, nil); !errors.Is(err, ErrTime) {
		t.Fatalf("time: %v", err)
	}
	ds, err := x.NodeDown(2*time.Second, 101)
	if err != nil || fmt.Sprint(ds) != "[promote-instance a 101→y@102 no-replica]" {
		t.Fatalf("host down after the rebuild: %v %v", ds, err)
	}
}
