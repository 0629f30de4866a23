package ring_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

// churn applies a seeded random schedule of joins, graceful leaves and
// crashes, one every gap on average, for d, keeping at least minLive
// members, while routing traffic. It returns the counts of each.
func (c *cluster) churn(d, gap time.Duration, minLive int) (joins, leaves, crashes int) {
	end := c.now + d
	for c.now < end {
		ms := c.members()
		switch op := c.rng.IntN(10); {
		case op < 4:
			c.joinOne()
			joins++
		case op < 7 && len(ms) > minLive:
			n := ms[c.rng.IntN(len(ms))]
			if err := n.Leave(c.now); err != nil {
				c.t.Fatalf("seed %d: %v", c.seed, err)
			}
			c.flush(n.ID())
			leaves++
		case len(ms) > minLive:
			n := ms[c.rng.IntN(len(ms))]
			c.alive[n.ID()] = false
			crashes++
		}
		// Background traffic (not checked: owners move under churn).
		for range 5 {
			ms := c.members()
			n := ms[c.rng.IntN(len(ms))]
			_ = n.Route(c.now, c.rng.Uint64(), wire.ClassDiscovery, []byte("x"))
			c.flush(n.ID())
		}
		c.run(c.now + time.Duration(c.rng.Int64N(int64(2*gap))))
		if c.debug != nil {
			c.debug()
		}
	}
	return
}

// TestChurn runs seeded random schedules of joins, leaves and crashes on a
// ring, then stops the churn and checks, once the ring is stable: every
// member knows its true predecessor and successors, every key is owned by
// exactly one live node, and no routed message (point or range) is lost or
// misdelivered.
func TestChurn(t *testing.T) {
	type plan struct {
		seeds      uint64
		n, minLive int
		gap        time.Duration
		contacts   bool // the driver hands members random contacts (AddContact)
	}
	// Heavy churn on a small ring (10 to 60 nodes): a join, leave or crash
	// every 400 ms on average with the ring healing on its own, and every
	// 200 ms with the driver's contacts; without -short, also steady churn
	// on a large ring (an event every 100 ms among 150 to 400 nodes).
	plans := []plan{{6, 40, 10, 400 * time.Millisecond, false}, {6, 40, 10, 200 * time.Millisecond, true}}
	if testing.Short() {
		plans[0].seeds, plans[1].seeds = 2, 2
	} else {
		plans = append(plans, plan{2, 300, 150, 100 * time.Millisecond, true})
	}
	for _, p := range plans {
		for seed := uint64(1); seed <= p.seeds; seed++ {
			churnOnce(t, seed, p.n, p.minLive, p.gap, p.contacts)
		}
	}
}

func churnOnce(t *testing.T, seed uint64, size, minLive int, gap time.Duration, contacts bool) {
	{
		c := newCluster(t, seed, nil)
		if !contacts {
			c.contactEvery = 0
		}
		c.grow(size, 20*time.Millisecond, 3*time.Second)
		if _, err := c.settle(4, time.Minute); err != nil {
			t.Fatalf("seed %d: before churn: %v", seed, err)
		}
		j, l, x := c.churn(60*time.Second, gap, minLive)
		// Stable: crashes detected (FailAfter) and cache entries for
		// crashed owners expired (CacheTTL).
		c.run(c.now + 5*time.Second)
		ringTook, err := c.settleRing(4, 2*time.Minute)
		if err != nil {
			t.Fatalf("seed %d: after %d joins, %d leaves, %d crashes: %v", seed, j, l, x, err)
		}
		took, err := c.settle(4, 2*time.Minute)
		if err != nil {
			t.Fatalf("seed %d: after %d joins, %d leaves, %d crashes: %v", seed, j, l, x, err)
		}
		if _, err := c.routeCheck(300, func(int) uint64 { return c.rng.Uint64() }, time.Second); err != nil {
			t.Fatalf("seed %d: after churn: %v", seed, err)
		}
		for range 5 {
			lo := c.rng.Uint64()
			if err := c.rangeCheck(lo, lo+c.rng.Uint64()>>2); err != nil {
				t.Fatalf("seed %d: after churn: %v", seed, err)
			}
		}
		failed, joinFailed := 0, 0
		for _, e := range c.log {
			switch e.e.Kind {
			case ring.EventPeerFailed:
				failed++
			case ring.EventJoinFailed:
				joinFailed++
			}
		}
		t.Logf("n=%d gap %v contacts %v seed %d: %d joins, %d leaves, %d crashes in 60 s; ring stable %v (+5 s) after, joins settled %v later; %d members; %d peer-failed, %d join-failed events",
			size, gap, contacts, seed, j, l, x, ringTook, took, len(c.members()), failed, joinFailed)
	}
}

// TestProbesSparedAndCrashDetected checks the implicit heartbeat: on a
// stable ring most probes are spared (peers are heard from between probes),
// yet no live node points at a crashed node (predecessor, successor list)
// for longer than Probe + FailAfter + Probe plus a few stabilisation rounds,
// although only the predecessor and the successor are probed every period:
// the farther successors learn of the crash from stabilisation, and a node
// that declared a peer failed does not take it back from a stabilisation
// reply for FailAfter. (Probing every successor every period took 3.9 to
// 6.55 s on these seeds; this, 4.7 to 5.2 s; without the tombstones, up
// to 9.3 s.)
func TestProbesSparedAndCrashDetected(t *testing.T) {
	cfg, err := ring.DefaultConfig(0, rand.New(rand.NewPCG(1, 1))).Validate()
	if err != nil {
		t.Fatal(err)
	}
	bound := 2*cfg.Probe + cfg.FailAfter + 4*cfg.Stabilize
	for seed := uint64(1); seed <= 6; seed++ {
		c := newCluster(t, seed, nil)
		c.grow(24, 30*time.Millisecond, 10*time.Second)
		var spared uint64
		for _, n := range c.members() {
			spared += n.Stats().ProbesSpared
		}
		if spared == 0 {
			t.Fatalf("seed %d: no probe spared on a stable ring", seed)
		}
		ms := c.members()
		victim := ms[c.rng.IntN(len(ms))].ID()
		c.alive[victim] = false
		crashed := c.now
		points := func() bool {
			for _, n := range c.members() {
				if p, ok := n.Pred(); ok && p.ID == victim {
					return true
				}
				for _, s := range n.Succs(nil) {
					if s.ID == victim {
						return true
					}
				}
			}
			return false
		}
		for points() {
			if c.now-crashed > bound {
				t.Fatalf("seed %d: crashed node %d still referenced %v after the crash (bound %v)", seed, victim, c.now-crashed, bound)
			}
			c.run(c.now + 50*time.Millisecond)
		}
		t.Logf("seed %d: crash of node %d forgotten after %v", seed, victim, c.now-crashed)
	}
}
