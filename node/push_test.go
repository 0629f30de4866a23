package node

import (
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestPushMutual: with Config.PushMutual, an object created inside the
// interest of a walker whose replica its node holds reaches the walker's
// node one one-way delay after the creating node's next frame, well
// before discovery (publication, match, request, state: four delays)
// brings it; a node whose known walker's interest does not contain it
// gets nothing pushed. Without PushMutual it comes by discovery alone.
func TestPushMutual(t *testing.T) {
	const latency = 100 * time.Millisecond
	for _, push := range []bool{false, true} {
		g := newGame(100)
		g.frozen = true
		c := newCluster(t, g, clusterOpts{nodes: 4, arch: "directory", latency: latency, seed: 1, prefetch: 2, push: push})
		spawn := func(n *Node, x, r float64) world.ObjectID {
			o, err := n.Spawn(c.now, g.walker, func(st *world.State) {
				st.SetFloat(wX, x)
				st.SetFloat(wY, 10)
				st.SetFloat(wRange, r)
			})
			if err != nil {
				t.Fatal(err)
			}
			return o.State().ID()
		}
		// Node 3's walkers see node 2's (x 10) and node 4's (x 40), so
		// node 3 holds both; their interests are x in [5, 15] and [35, 45].
		seer := spawn(c.node(2), 10, 5)
		spawn(c.node(3), 13, 5)
		other := spawn(c.node(4), 40, 5)
		spawn(c.node(3), 38, 5)
		c.run(3 * time.Second)
		for _, id := range []world.ObjectID{seer, other} {
			if _, ok := c.node(3).Object(id); !ok {
				t.Fatalf("push %v: node 3 does not hold %v after 3 s", push, id)
			}
		}
		created := c.now
		item := spawn(c.node(3), 11, 0) // inside node 2's walker's interest only
		by := created + c.period + latency + 10*time.Millisecond
		c.run(by)
		_, at2 := c.node(2).Object(item)
		if at2 != push {
			t.Errorf("push %v: node 2 holds the new object %v after %v: %v", push, item, by-created, at2)
		}
		c.run(created + time.Second)
		if _, ok := c.node(4).Object(item); ok {
			t.Errorf("push %v: node 4, whose walker's interest is far from it, holds the new object", push)
		}
		if _, ok := c.node(2).Object(item); !ok {
			t.Errorf("push %v: node 2 does not hold the new object 1 s after it was made", push)
		}
	}
}

// TestFetchAhead: a discovered object is fetched when the location it is
// predicted at, now or (moving, with Config.FetchAhead) that far ahead,
// lies in the view the node fetches for.
func TestFetchAhead(t *testing.T) {
	g := newGame(100)
	g.frozen = true
	for _, ahead := range []time.Duration{0, 500 * time.Millisecond} {
		d, err := locate.NewBroadcast(1, []wire.NodeID{1})
		if err != nil {
			t.Fatal(err)
		}
		n, err := New(Config{ID: 1, Registry: g.registry, Discovery: d, FetchAhead: ahead})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Spawn(0, g.walker, func(st *world.State) {
			st.SetFloat(wX, 10)
			st.SetFloat(wY, 10)
			st.SetFloat(wRange, 5) // the view: [5, 15] × [5, 15]
		}); err != nil {
			t.Fatal(err)
		}
		now := time.Second
		n.Tick(now)
		for _, c := range []struct {
			name     string
			loc, vel world.Point
			until    time.Duration
			want     bool // with a fetch-ahead
		}{
			{"still, in view", world.Point{12, 10}, world.Point{}, 2 * time.Second, true},
			{"still, outside", world.Point{20, 10}, world.Point{}, 2 * time.Second, false},
			{"moving in, 0.4 s away", world.Point{19, 10}, world.Point{-10, 0}, 2 * time.Second, true},
			{"moving in, 1 s away", world.Point{25, 10}, world.Point{-10, 0}, 2 * time.Second, false},
			{"moving away", world.Point{17, 10}, world.Point{10, 0}, 2 * time.Second, false},
			{"moving in, its publication ends first", world.Point{19, 10}, world.Point{-10, 0}, now + 100*time.Millisecond, false},
		} {
			f := locate.Found{ID: world.MakeObjectID(2, 1), Node: 2, Loc: c.loc, Vel: c.vel, Heard: now, Until: c.until}
			want := c.want
			if ahead == 0 {
				want = c.name == "still, in view"
			}
			if got := n.fetches(&f, now); got != want {
				t.Errorf("fetch-ahead %v, %s: fetched %v, want %v", ahead, c.name, got, want)
			}
		}
	}
}

// TestFetchAheadRejected: a fetch-ahead beyond the replicas' linger (a
// replica fetched that early would be dropped before it enters) or below
// zero is refused.
func TestFetchAheadRejected(t *testing.T) {
	g := newGame(100)
	d, err := locate.NewBroadcast(1, []wire.NodeID{1})
	if err != nil {
		t.Fatal(err)
	}
	for _, ahead := range []time.Duration{-time.Millisecond, 2 * time.Second} {
		if _, err := New(Config{ID: 1, Registry: g.registry, Discovery: d, FetchAhead: ahead}); err == nil {
			t.Errorf("FetchAhead %v accepted", ahead)
		}
	}
}
