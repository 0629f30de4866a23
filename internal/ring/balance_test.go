package ring_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

// skewedKeys draws keys as the Zipf-like popularity of map regions does
// (Colyseus §2): 80% of the load goes to 5 hotspots, each 0.5% of the key
// space wide, with weights 1, 1/2, ..., 1/5; the rest is uniform.
func skewedKeys(r *rand.Rand) func() uint64 {
	centres := make([]float64, 5)
	for i := range centres {
		centres[i] = r.Float64()
	}
	var cum []float64
	s := 0.0
	for i := range centres {
		s += 1 / float64(i+1)
		cum = append(cum, s)
	}
	return func() uint64 {
		if r.Float64() < 0.2 {
			return r.Uint64()
		}
		u := r.Float64() * s
		i, _ := slices.BinarySearch(cum, u)
		x := math.Mod(centres[i]+(r.Float64()-0.5)*0.005+1, 1)
		return uint64(math.Ldexp(x, 64))
	}
}

// loadSpread runs n nodes under a skewed routed load of rate messages per
// second for d and returns max/mean and the coefficient of variation of the
// per-node delivered load over the last 30 s, and the nodes' moves.
func loadSpread(t *testing.T, seed uint64, n int, balance bool, rate int, d time.Duration) (maxMean, cv float64, moves uint64) {
	c := newCluster(t, seed, func(id wire.NodeID, r *rand.Rand) ring.Config {
		cfg := ring.DefaultConfig(id, r)
		cfg.Balance = balance
		return cfg
	})
	c.grow(n, 20*time.Millisecond, 3*time.Second)
	if _, err := c.settle(4, time.Minute); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	// The upper layer reports each publication or subscription it gets.
	c.onDeliver = func(nd *ring.Node, e ring.Event) { nd.AddLoad(c.now, e.Range.Lo, 1) }
	key := skewedKeys(c.rng)
	got := map[wire.NodeID]int{}
	end := c.now + d
	tick := time.Second / time.Duration(rate)
	for c.now < end {
		ms := c.members()
		from := ms[c.rng.IntN(len(ms))]
		_ = from.Route(c.now, key(), wire.ClassDiscovery, []byte{1})
		c.flush(from.ID())
		c.run(c.now + tick)
		if c.now > end-30*time.Second {
			c.onDeliver = func(nd *ring.Node, e ring.Event) {
				nd.AddLoad(c.now, e.Range.Lo, 1)
				got[nd.ID()]++
			}
		}
	}
	ms := c.members()
	loads := make([]float64, 0, len(ms))
	for _, m := range ms {
		loads = append(loads, float64(got[m.ID()]))
		moves += m.Stats().Moves
	}
	mean, sd, mx := 0.0, 0.0, 0.0
	for _, l := range loads {
		mean += l
		mx = max(mx, l)
	}
	mean /= float64(len(loads))
	for _, l := range loads {
		sd += (l - mean) * (l - mean)
	}
	sd = math.Sqrt(sd / float64(len(loads)))
	// With the traffic stopped, loads fall under MinLoad within a window
	// and nodes stop moving; then the ring must be exact.
	c.run(c.now + 40*time.Second)
	if _, err := c.settle(4, time.Minute); err != nil {
		t.Fatalf("seed %d balance %v: after the run: %v", seed, balance, err)
	}
	if _, err := c.routeCheck(200, func(int) uint64 { return c.rng.Uint64() }, time.Second); err != nil {
		t.Fatalf("seed %d balance %v: after the run: %v", seed, balance, err)
	}
	return mx / mean, sd / mean, moves
}

// TestBalance runs the same skewed load with leave-join load balancing off
// and on and checks that balancing moves nodes and cuts the max/mean load.
func TestBalance(t *testing.T) {
	d, seeds := 6*time.Minute, uint64(2)
	if testing.Short() {
		d, seeds = 4*time.Minute, 1
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		offMax, offCV, _ := loadSpread(t, seed, 64, false, 200, d)
		onMax, onCV, moves := loadSpread(t, seed, 64, true, 200, d)
		t.Logf("seed %d, 64 nodes, %v: max/mean load %.2f → %.2f, CV %.2f → %.2f with balancing (%d moves)",
			seed, d, offMax, onMax, offCV, onCV, moves)
		if moves == 0 || onMax > 0.7*offMax {
			t.Errorf("seed %d: balancing made %d moves and max/mean %.2f → %.2f; want moves and at least 30%% less",
				seed, moves, offMax, onMax)
		}
	}
}

// TestBalanceUnderChurn runs leave-join balancing under a skewed load of
// point and range routes while nodes join, leave and crash (one event
// every 3 s), then checks the ring is exact and routes reach their owners.
func TestBalanceUnderChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs without -short")
	}
	for seed := uint64(1); seed <= 3; seed++ {
		c := newCluster(t, seed, func(id wire.NodeID, r *rand.Rand) ring.Config {
			cfg := ring.DefaultConfig(id, r)
			cfg.Balance = true
			return cfg
		})
		c.grow(64, 20*time.Millisecond, 3*time.Second)
		if _, err := c.settle(4, time.Minute); err != nil {
			t.Fatal(err)
		}
		c.onDeliver = func(nd *ring.Node, e ring.Event) { nd.AddLoad(c.now, e.Range.Lo, 1) }
		key := skewedKeys(c.rng)
		end := c.now + 4*time.Minute
		next := c.now
		for c.now < end {
			ms := c.members()
			from := ms[c.rng.IntN(len(ms))]
			_ = from.Route(c.now, key(), wire.ClassDiscovery, []byte{1})
			c.flush(from.ID())
			if lo := key(); c.rng.IntN(10) == 0 {
				_ = from.RouteRange(c.now, lo, lo+1<<58, wire.ClassDiscovery, []byte{2})
				c.flush(from.ID())
			}
			c.run(c.now + 5*time.Millisecond)
			if c.now >= next {
				next = c.now + 3*time.Second
				ms := c.members()
				switch c.rng.IntN(3) {
				case 0:
					c.joinOne()
				case 1:
					n := ms[c.rng.IntN(len(ms))]
					_ = n.Leave(c.now)
					c.flush(n.ID())
				case 2:
					c.alive[ms[c.rng.IntN(len(ms))].ID()] = false
				}
			}
		}
		c.onDeliver = nil
		c.run(c.now + 40*time.Second)
		took, err := c.settleRing(4, 2*time.Minute)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if _, err := c.routeCheck(300, func(int) uint64 { return c.rng.Uint64() }, time.Second); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		moves := uint64(0)
		for _, n := range c.nodes {
			moves += n.Stats().Moves
		}
		t.Logf("seed %d: ok after %v, %d members, %d moves", seed, took, len(c.members()), moves)
	}
}

// TestBalanceMovesIntoHeaviest checks the leave-join rule on a crafted
// load: every node reports 20/s except one light node (0/s) and two of its
// successors (80/s and 120/s), both above twice the mean it samples. The
// light node moves into the range of the heavier one (other nodes may move
// too: a 20/s node that samples both heavy ones sees a mean above 40/s).
func TestBalanceMovesIntoHeaviest(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		c := newCluster(t, seed, func(id wire.NodeID, r *rand.Rand) ring.Config {
			cfg := ring.DefaultConfig(id, r)
			cfg.Balance = true
			return cfg
		})
		c.grow(16, 20*time.Millisecond, 3*time.Second)
		if _, err := c.settle(4, time.Minute); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		ms := c.members()
		light := ms[c.rng.IntN(len(ms))]
		succs := light.Succs(nil)
		heavy, second := succs[2].ID, succs[1].ID
		var heavyRange ring.Range
		rate := map[wire.NodeID]int{light.ID(): 0, heavy: 120, second: 80}
		end := c.now + 3*time.Minute
		for c.now < end && light.Stats().Moves == 0 {
			for _, m := range c.members() {
				r, ok := rate[m.ID()]
				if !ok {
					r = 20
				}
				m.AddLoad(c.now, m.Key(), r)
				if m.ID() == heavy {
					heavyRange, _ = m.Range()
				}
			}
			c.run(c.now + time.Second)
		}
		if light.Stats().Moves != 1 {
			t.Fatalf("seed %d: the light node %d made %d moves in 3 minutes, want 1", seed, light.ID(), light.Stats().Moves)
		}
		if k := light.Key(); !heavyRange.Contains(k) {
			t.Errorf("seed %d: the light node moved to key %x, outside the heaviest node's range %+v", seed, k, heavyRange)
		}
	}
}
