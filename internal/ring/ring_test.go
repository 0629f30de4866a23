package ring_test

import (
	"encoding/binary"
	"reflect"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
	"testing"
	"time"
)

// TestJoinAndRoute grows rings of several sizes, checks every node's
// predecessor and successor list against the sorted list of keys, and that
// every routed key reaches its true owner exactly once.
func TestJoinAndRoute(t *testing.T) {
	sizes := []int{1, 2, 3, 16, 100}
	if !testing.Short() {
		sizes = append(sizes, 300)
	}
	for _, n := range sizes {
		for seed := uint64(1); seed <= 3; seed++ {
			c := newCluster(t, seed, nil)
			c.grow(n, 30*time.Millisecond, 10*time.Second)
			if err := c.checkRing(4); err != nil {
				t.Fatalf("n=%d seed %d: %v", n, seed, err)
			}
			if _, err := c.routeCheck(300, func(int) uint64 { return c.rng.Uint64() }, time.Second); err != nil {
				t.Fatalf("n=%d seed %d: %v", n, seed, err)
			}
		}
	}
}

// TestRangeRoute checks range routing: a message for [lo, hi] reaches
// exactly the nodes whose ranges intersect it, once each, for ranges inside
// one node, over several, wrapping past the top of the key space, and the
// whole ring.
func TestRangeRoute(t *testing.T) {
	for _, n := range []int{1, 2, 5, 40} {
		for seed := uint64(1); seed <= 3; seed++ {
			c := newCluster(t, seed, nil)
			c.grow(n, 30*time.Millisecond, 3*time.Second)
			if _, err := c.settle(4, time.Minute); err != nil {
				t.Fatalf("n=%d seed %d: %v", n, seed, err)
			}
			tr := c.truth()
			cases := [][2]uint64{{0, ^uint64(0)}, {5, 4}, {^uint64(0) - 1000, 1000}}
			for range 30 {
				lo := c.rng.Uint64()
				w := c.rng.Uint64() >> c.rng.IntN(64)
				cases = append(cases, [2]uint64{lo, lo + w})
			}
			// Ranges that start or end exactly on node keys.
			k := tr.keys[c.rng.IntN(len(tr.keys))]
			cases = append(cases, [2]uint64{k, k}, [2]uint64{k + 1, k}, [2]uint64{k, k + 1}, [2]uint64{k - 1, k})
			for _, q := range cases {
				if err := c.rangeCheck(q[0], q[1]); err != nil {
					t.Fatalf("n=%d seed %d: %v", n, seed, err)
				}
			}
		}
	}
}

// TestSmallRings shrinks rings of 2 to 5 nodes one graceful leave or crash
// at a time down to a single node, checking the ring and routing after
// each step; a node left alone by a leave owns every key and gets no
// EventIsolated.
func TestSmallRings(t *testing.T) {
	for n := 2; n <= 5; n++ {
		for _, crash := range []bool{false, true} {
			c := newCluster(t, uint64(n), nil)
			c.grow(n, 30*time.Millisecond, 3*time.Second)
			for len(c.members()) > 1 {
				ms := c.members()
				v := ms[c.rng.IntN(len(ms))]
				if crash {
					c.alive[v.ID()] = false
				} else if err := v.Leave(c.now); err != nil {
					t.Fatal(err)
				}
				c.flush(v.ID())
				if _, err := c.settle(4, 20*time.Second); err != nil {
					t.Fatalf("n=%d crash %v, %d left: %v", n, crash, len(c.members()), err)
				}
				if _, err := c.routeCheck(50, func(int) uint64 { return c.rng.Uint64() }, 0); err != nil {
					t.Fatalf("n=%d crash %v, %d left: %v", n, crash, len(c.members()), err)
				}
			}
			last := c.members()[0]
			if rg, ok := last.Range(); !ok || rg.Size() != ^uint64(0) {
				t.Fatalf("n=%d: the last node's range %v %v, want the whole ring", n, rg, ok)
			}
			for _, l := range c.log {
				if l.e.Kind == ring.EventIsolated && !crash {
					t.Fatalf("n=%d: %d isolated after graceful leaves", n, l.node)
				}
			}
		}
	}
}

// TestRangeWalkBackfill routes a range while a node has just joined
// between two members and the first does not know it yet: the walk goes
// from the first straight to the second, which sends a copy back to the
// joiner, so all three get the message once.
func TestRangeWalkBackfill(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		c := newCluster(t, seed, nil)
		var members []ring.Peer
		for range 16 {
			members = append(members, ring.Peer{ID: c.add(), Key: c.rng.Uint64()})
		}
		for _, m := range members {
			if err := c.nodes[m.ID].Bootstrap(c.now, members); err != nil {
				t.Fatal(err)
			}
			c.flush(m.ID)
		}
		c.run(c.now + 5*time.Second)
		tr := c.truth()
		i := c.rng.IntN(len(tr.ids) - 1)
		s, y := c.nodes[tr.ids[i]], c.nodes[tr.ids[i+1]]
		j := c.add()
		jkey := s.Key() + (y.Key()-s.Key())/2
		if err := c.nodes[j].Join(c.now, y.ID(), jkey); err != nil {
			t.Fatal(err)
		}
		c.flush(j)
		for p, _ := y.Pred(); p.ID != j; p, _ = y.Pred() {
			c.run(c.now + time.Millisecond)
		}
		if s.Succs(nil)[0].ID != y.ID() {
			t.Fatalf("seed %d: the first node already knows the joiner", seed)
		}
		id := uint64(1 << 50)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], id)
		if err := s.RouteRange(c.now, s.Key(), y.Key(), wire.ClassDiscovery, b[:]); err != nil {
			t.Fatal(err)
		}
		c.flush(s.ID())
		c.run(c.now + 3*time.Second)
		got := map[wire.NodeID]int{}
		for _, d := range c.delivered[id] {
			got[d.node]++
		}
		want := map[wire.NodeID]int{s.ID(): 1, j: 1, y.ID(): 1}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: delivered %v, want %v", seed, got, want)
		}
	}
}
