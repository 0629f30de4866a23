package live

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// failoverCluster is k nodes of the test game with failover, over a
// MemNetwork, each with a mesh, a driver, an authority log and a slot for
// a drainer (what a daemon has), inside a synctest bubble.
type failoverCluster struct {
	net     *MemNetwork
	members []wire.NodeID
	meshes  []*Mesh
	drivers []*Driver
	nodes   []*node.Node
	alogs   []*authorityLog
	drains  []*drainer
	inspect []atomic.Pointer[func(wire.Packet)] // extra per-node packet inspection (tests)
	calls   []chan func(*node.Node)             // run on a node's driver goroutine (do)
	mute    []atomic.Bool                       // a muted node sends nothing (crashed)
	cancel  []context.CancelFunc
	done    []chan error
}

func newFailoverCluster(t *testing.T, k, walkers int) *failoverCluster {
	g := newTestGame()
	c := &failoverCluster{net: NewMemNetwork(), drains: make([]*drainer, k), inspect: make([]atomic.Pointer[func(wire.Packet)], k),
		mute: make([]atomic.Bool, k)}
	peers := map[wire.NodeID]string{}
	for i := range k {
		c.members = append(c.members, wire.NodeID(i+1))
		peers[wire.NodeID(i+1)] = addr(wire.NodeID(i + 1))
	}
	for i, id := range c.members {
		ep, err := c.net.Listen(id, addr(id))
		if err != nil {
			t.Fatal(err)
		}
		m, err := NewMesh(MeshConfig{Self: id, Peers: peers}, ep)
		if err != nil {
			t.Fatal(err)
		}
		m.Start()
		alog := newAuthorityLog(id, 1, true, slog.New(slog.DiscardHandler))
		others := slices.DeleteFunc(slices.Clone(c.members), func(p wire.NodeID) bool { return p == id })
		b, err := locate.NewBroadcast(id, c.members)
		if err != nil {
			t.Fatal(err)
		}
		n, err := node.New(node.Config{ID: id, Registry: g.registry, Discovery: b, Incarnation: 1,
			Rand:    rand.New(rand.NewPCG(1, uint64(id))),
			Replica: node.ReplicaConfig{Failover: true, OnEvent: alog.event, Peers: func() []wire.NodeID { return others }}})
		if err != nil {
			t.Fatal(err)
		}
		for w := range walkers {
			if _, err := n.Spawn(0, g.walker, func(st *world.State) {
				st.SetFloat(2, float64(10*w))
				st.SetFloat(3, float64(10*int(id)))
			}); err != nil {
				t.Fatal(err)
			}
		}
		d, err := NewDriver(DriverConfig{Node: n, Transport: mutable{m, &c.mute[i]}, Counters: m.Counters(), Inspect: func(now time.Duration, p wire.Packet) {
			if f := c.inspect[i].Load(); f != nil {
				(*f)(p)
			}
			if dr := c.drains[i]; dr != nil {
				dr.inspect(now, p)
			}
		}})
		if err != nil {
			t.Fatal(err)
		}
		d.AddHook(alog)
		calls := make(chan func(*node.Node), 1)
		c.calls = append(c.calls, calls)
		d.AddHook(FrameHookFunc(func(_ time.Duration, n *node.Node) {
			for len(calls) > 0 {
				(<-calls)(n)
			}
		}))
		c.meshes, c.drivers, c.nodes, c.alogs = append(c.meshes, m), append(c.drivers, d), append(c.nodes, n), append(c.alogs, alog)
	}
	for _, d := range c.drivers {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		c.cancel, c.done = append(c.cancel, cancel), append(c.done, done)
	}
	return c
}

// mutable is a transport that sends nothing once muted.
type mutable struct {
	*Mesh
	muted *atomic.Bool
}

func (m mutable) Send(p wire.Packet) {
	if !m.muted.Load() {
		m.Mesh.Send(p)
	}
}

// do runs f on running node i's driver goroutine, at its next frame.
func (c *failoverCluster) do(i int, f func(*node.Node)) {
	done := make(chan struct{})
	c.calls[i] <- func(n *node.Node) { f(n); close(done) }
	<-done
}

// halt stops node i's frames (its driver's Run returns).
func (c *failoverCluster) halt(t *testing.T, i int) {
	c.cancel[i]()
	if err := <-c.done[i]; err != nil {
		t.Errorf("node %d: Run: %v", i+1, err)
	}
}

// drain runs node i's drain (its frames halted) as the daemon does.
func (c *failoverCluster) drain(i int, timeout time.Duration) DrainReport {
	dc := drainConfig{self: c.members[i], peers: c.members, connected: c.meshes[i].Connected, timeout: timeout,
		log: slog.New(slog.DiscardHandler)}
	return runDrain(c.drivers[i], c.nodes[i], c.alogs[i], dc, func(dr *drainer) { c.drains[i] = dr })
}

func (c *failoverCluster) closeMesh(i int) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	c.meshes[i].Close(ctx)
}

// primariesOf maps every object created by node home (node.Home) to the
// versions of its primaries on the running nodes, by node.
func (c *failoverCluster) primariesOf(home wire.NodeID, running []int) map[world.ObjectID]map[wire.NodeID]uint64 {
	m := map[world.ObjectID]map[wire.NodeID]uint64{}
	for _, i := range running {
		c.do(i, func(n *node.Node) {
			for _, info := range n.Primaries(nil) {
				if node.Home(info.ID) == home {
					if m[info.ID] == nil {
						m[info.ID] = map[wire.NodeID]uint64{}
					}
					m[info.ID][c.members[i]] = info.Version
				}
			}
		})
	}
	return m
}

// TestDrainMigratesEverything: node 1 of three drains its 9 walkers: all
// are migrated, spread over nodes 2 and 3 (4 or 5 each), acknowledged
// within a few frames, and each is then a primary on exactly one of them,
// thinking there (its version rises).
func TestDrainMigratesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFailoverCluster(t, 3, 9)
		time.Sleep(3 * time.Second) // backups chosen, replicas everywhere
		c.halt(t, 0)
		r := c.drain(0, 5*time.Second)
		if r.Primaries != 9 || r.Migrated != 9 || r.NotMigrated+r.Unconfirmed+r.Deleted != 0 || r.TimedOut || r.Reason != "" {
			t.Errorf("drain report %+v: want 9 of 9 migrated", r)
		}
		if n2, n3 := r.ByTarget[2], r.ByTarget[3]; n2+n3 != 9 || n2 < 4 || n3 < 4 {
			t.Errorf("migrated %v: want 9 spread over nodes 2 and 3", r.ByTarget)
		}
		if r.ElapsedMs > 1000 {
			t.Errorf("the drain took %v ms, want a few frames", r.ElapsedMs)
		}
		if len(c.nodes[0].Primaries(nil)) != 0 {
			t.Error("node 1 still holds primaries")
		}
		c.closeMesh(0)
		before := c.primariesOf(1, []int{1, 2})
		time.Sleep(2 * time.Second)
		got := c.primariesOf(1, []int{1, 2})
		if len(got) != 9 {
			t.Errorf("nodes 2 and 3 hold %d of node 1's 9 walkers as primaries", len(got))
		}
		for id, on := range got {
			if len(on) != 1 {
				t.Errorf("walker %v is a primary on nodes %v", id, on)
				continue
			}
			for n, v := range on {
				if v <= before[id][n] {
					t.Errorf("walker %v on node %d does not think: version %d, %d before", id, n, v, before[id][n])
				}
			}
		}
		for _, i := range []int{1, 2} {
			c.halt(t, i)
			c.closeMesh(i)
		}
	})
}

// TestDrainTargetDies: node 3 takes the first migration it receives and
// dies at once, before it can acknowledge anything. Node 1's drain waits
// for the failure detector (node 2 witnessing), which declares node 3
// dead; node 1 takes back what node 3 did not acknowledge (and promotes
// node 3's walkers it backed up) and hands it all to node 2, where the
// walkers of both nodes end up.
func TestDrainTargetDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFailoverCluster(t, 3, 6)
		time.Sleep(3 * time.Second)
		crash := func(p wire.Packet) {
			fr, err := wire.OpenFrames(p.Payload)
			if err != nil {
				return
			}
			for {
				ty, _, ok := fr.Next()
				if !ok {
					return
				}
				if ty == wire.TypeMigrate && p.From == 1 && c.inspect[2].Load() != nil {
					c.inspect[2].Store(nil)
					c.mute[2].Store(true) // it takes the packet, says nothing
					c.net.SetDown(addr(3), true)
					c.cancel[2]() // its frames stop after this packet
					return
				}
			}
		}
		c.inspect[2].Store(&crash)
		c.halt(t, 0)
		r := c.drain(0, 5*time.Second)
		// Node 1 also promoted the walkers of node 3 it backed up, and
		// drained them too.
		if r.Primaries < 6 || r.Migrated != r.Primaries || r.ByTarget[2] != r.Primaries || r.NotMigrated+r.Unconfirmed != 0 {
			t.Errorf("drain report %+v: want all migrated to node 2", r)
		}
		if dead := c.nodes[0].Dead(nil); !slices.Equal(dead, []wire.NodeID{3}) {
			t.Errorf("node 1 declared %v dead, want [3]", dead)
		}
		if n := c.alogs[0].counts[node.EvPromoted].Load(); n == 0 {
			t.Error("node 1 promoted nothing back from node 3")
		}
		c.closeMesh(0)
		if err := <-c.done[2]; err != nil {
			t.Error(err)
		}
		c.closeMesh(2)
		time.Sleep(time.Second)
		for _, home := range []wire.NodeID{1, 3} {
			if got := c.primariesOf(home, []int{1}); len(got) != 6 {
				t.Errorf("node 2 holds %d of node %d's 6 walkers as primaries", len(got), home)
			}
		}
		c.halt(t, 1)
		c.closeMesh(1)
	})
}

// TestDrainNoPeer: a node whose only peer is gone (declared dead: the
// node promoted the walkers it backed up) ends its drain at once,
// reporting its 6 primaries not migrated and lost.
func TestDrainNoPeer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFailoverCluster(t, 2, 3)
		time.Sleep(2 * time.Second)
		c.halt(t, 1)
		c.closeMesh(1)
		c.net.SetDown(addr(2), true)
		time.Sleep(2 * time.Second) // node 1 declares node 2 dead
		c.halt(t, 0)
		r := c.drain(0, 5*time.Second)
		if r.Primaries != 6 || r.NotMigrated != 6 || r.Lost() != 6 || r.Reason != "no live peer" || r.ElapsedMs > 200 {
			t.Errorf("drain report %+v: want 6 not migrated at once, no live peer", r)
		}
		c.closeMesh(0)
	})
}

// TestDrainTwoAtOnce: nodes 1 and 2 of three drain at the same time. A
// node that receives objects from the other takes it to be draining and
// sends it nothing more, so every walker of both ends up a primary on
// node 3, within a second, none lost.
func TestDrainTwoAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newFailoverCluster(t, 3, 5)
		time.Sleep(3 * time.Second)
		c.halt(t, 0)
		c.halt(t, 1)
		reports := make([]DrainReport, 2)
		done := make(chan int, 2)
		for i := range 2 {
			go func() { reports[i] = c.drain(i, 5*time.Second); done <- i }()
		}
		<-done
		<-done
		for i, r := range reports {
			if r.Migrated != r.Primaries || r.NotMigrated+r.Unconfirmed != 0 || r.ElapsedMs > 1000 || r.ByTarget[3] == 0 {
				t.Errorf("node %d: drain report %+v: want all migrated, mostly to node 3, within a second", i+1, r)
			}
		}
		c.closeMesh(0)
		c.closeMesh(1)
		time.Sleep(time.Second)
		for _, home := range []wire.NodeID{1, 2} {
			got := c.primariesOf(home, []int{2})
			if len(got) != 5 {
				t.Errorf("node 3 holds %d of node %d's 5 walkers as primaries", len(got), home)
			}
		}
		c.halt(t, 2)
		c.closeMesh(2)
	})
}
