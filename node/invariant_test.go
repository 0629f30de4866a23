package node

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// randomRun builds a cluster of walkers (some firing missiles) under one
// architecture, with per-pair latencies of 10–80 ms, jitter and loss, and
// random spawns and deletions; checkInvariants runs after every event.
func randomRun(t *testing.T, arch string, seed uint64, loss float64, dur time.Duration) *cluster {
	g := newGame(100)
	r := rand.New(rand.NewPCG(seed, 5))
	nodes := 3 + r.IntN(4)
	c := newCluster(t, g, clusterOpts{nodes: nodes, arch: arch, latency: 10 * time.Millisecond,
		spread: 70 * time.Millisecond, loss: loss, jitter: 30 * time.Millisecond, seed: seed, margin: 3})
	c.check = true
	spawn := func() {
		n := c.nodes[r.IntN(nodes)]
		if arch == "client-server" && n.ID() == 1 && r.IntN(2) == 0 {
			n = c.nodes[nodes-1]
		}
		fire := int64(0)
		if r.IntN(3) == 0 {
			fire = 5 + r.Int64N(10)
		}
		_, err := n.Spawn(c.now, g.walker, func(st *world.State) {
			st.SetFloat(wX, r.Float64()*100)
			st.SetFloat(wY, r.Float64()*100)
			st.SetFloat(wVX, (r.Float64()-0.5)*30)
			st.SetFloat(wVY, (r.Float64()-0.5)*30)
			st.SetFloat(wRange, 10+r.Float64()*20)
			st.SetInt(wHP, 100)
			st.SetInt(wFire, fire)
		})
		if err != nil {
			t.Fatalf("seed %d: spawn: %v", seed, err)
		}
		c.send(n.Drain(nil))
	}
	for range nodes * 3 {
		spawn()
	}
	step := 500 * time.Millisecond
	for c.now < dur {
		c.run(c.now + step)
		switch r.IntN(4) {
		case 0:
			spawn()
		case 1: // delete a random walker primary
			n := c.nodes[r.IntN(nodes)]
			for _, in := range n.Objects(nil) {
				if in.Primary && in.State.Schema() == g.walker && r.IntN(3) == 0 {
					if n.Deleted(in.ID) {
						t.Fatalf("seed %d: %v known deleted before its deletion", seed, in.ID)
					}
					if err := n.Delete(c.now, in.ID); err != nil {
						t.Fatalf("seed %d: delete: %v", seed, err)
					}
					if !n.Deleted(in.ID) {
						t.Fatalf("seed %d: %v not known deleted after its deletion", seed, in.ID)
					}
					c.send(n.Drain(nil))
					break
				}
			}
		}
	}
	return c
}

// TestInvariants runs seeded random games under each architecture with
// loss and jitter and checks after every event: one primary per live
// object; every replica's synced state is a past state of its primary; no
// replica outlives its object by more than the replica timeout (plus a
// frame and a delivery). Then the game freezes and the network turns
// perfect: every replica must converge to its primary, and (directory)
// every object inside a node's view must be replicated there.
func TestInvariants(t *testing.T) {
	seeds := 4
	dur := 20 * time.Second
	if testing.Short() {
		seeds, dur = 1, 8*time.Second
	}
	for _, arch := range []string{"directory", "broadcast", "client-server"} {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", arch, seed), func(t *testing.T) {
				c := randomRun(t, arch, seed, 0.1, dur)
				c.g.frozen = true
				c.loss, c.jitter = 0, 0
				c.run(c.now + 6*time.Second)
				c.checkConverged()
				if arch != "client-server" {
					c.checkNoneMissing()
				}
				if minEvents := int(50 * dur.Seconds()); c.events < minEvents || c.seenRep == 0 || len(c.deleted) == 0 {
					t.Fatalf("a weak run: %d events, %d replica observations, %d deletions", c.events, c.seenRep, len(c.deleted))
				}
			})
		}
	}
}

// checkNoneMissing checks that every object inside a node's view (other
// than its own primaries) is replicated on that node.
func (c *cluster) checkNoneMissing() {
	c.tb.Helper()
	type obj struct {
		loc  world.Point
		node wire.NodeID
	}
	all := map[world.ObjectID]obj{}
	for _, n := range c.nodes {
		for _, in := range n.Objects(nil) {
			if in.Primary {
				all[in.ID] = obj{in.State.Location(), n.ID()}
			}
		}
	}
	for _, n := range c.nodes {
		view := n.View(nil)
		for id, o := range all {
			if o.node == n.ID() {
				continue
			}
			for _, b := range view {
				if b.Contains(o.loc, 2) {
					if _, ok := n.Object(id); !ok {
						c.fail("node %d: object %v at %v is in its view but not replicated", n.ID(), id, o.loc)
					}
					break
				}
			}
		}
	}
}

// TestDeterminism: the same seed gives byte-identical packets and states.
func TestDeterminism(t *testing.T) {
	run := func() string {
		var b strings.Builder
		c := randomRun(t, "directory", 7, 0.05, 4*time.Second)
		c.dump(&b)
		c.stats(&b)
		return b.String()
	}
	if a, b := run(), run(); a != b {
		t.Fatalf("two runs with seed 7 differ:\n%s", firstDiff(a, b))
	}
}

// TestMalformedPacketsChangeNothing feeds truncated, bit-flipped and random
// packets (and the hand-made garbage of the scenarios) to nodes in a running
// game: a packet counted as malformed must leave the node's objects exactly
// as they were, and the hand-made ones must all be counted.
func TestMalformedPacketsChangeNothing(t *testing.T) {
	c := randomRun(t, "directory", 3, 0, 3*time.Second)
	r := rand.New(rand.NewPCG(3, 3))
	var sample []wire.Packet
	for _, n := range c.nodes {
		n.Tick(c.now + time.Millisecond)
		sample = append(sample, n.Drain(nil)...)
	}
	if len(sample) == 0 {
		t.Fatal("no packets to mutate")
	}
	rejected := 0
	for i := range 3000 {
		p := sample[r.IntN(len(sample))]
		q := wire.Packet{From: p.From, To: p.To, Class: p.Class, Payload: append([]byte(nil), p.Payload...)}
		switch i % 3 {
		case 0:
			q.Payload = q.Payload[:r.IntN(len(q.Payload))]
		case 1:
			q.Payload[r.IntN(len(q.Payload))] ^= byte(1 + r.IntN(255))
		case 2:
			q.Payload = make([]byte, 1+r.IntN(40))
			for j := range q.Payload {
				q.Payload[j] = byte(r.Uint32())
			}
			q.Payload[0] = wire.Version
		}
		n := c.node(q.To)
		before := dumpNode(n)
		m := n.Stats().Malformed
		n.Step(c.now, q)
		if n.Stats().Malformed > m {
			rejected++
			if after := dumpNode(n); after != before {
				t.Fatalf("packet %d (%x) was counted malformed but changed node %d:\n%s", i, q.Payload, n.ID(), firstDiff(after, before))
			}
		}
		n.Drain(nil)
	}
	if rejected < 1000 {
		t.Fatalf("only %d of 3000 mutated packets rejected", rejected)
	}
	n := c.node(1)
	m := n.Stats().Malformed
	for _, p := range garbagePackets(1) {
		n.Step(c.now, p)
	}
	if got := n.Stats().Malformed - m; got != int64(len(garbagePackets(1))) {
		t.Fatalf("%d of %d garbage packets rejected", got, len(garbagePackets(1)))
	}
}
