package ring_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

// TestRouteLatency measures how long routes take on PlanetLab latencies
// (slice 1, half the RTT per hop) at 64 nodes, for the locator's local
// pattern, with and without the route cache, beside the one-way latency
// straight from origin to owner. The discovery target is a median
// under 200 ms at 64 nodes (routing plus matching); the routing part must
// leave room for the matching hop.
func TestRouteLatency(t *testing.T) {
	pl, err := geo.PlanetLab(1)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range variants[1:] {
		c := newCluster(t, 21, func(id wire.NodeID, r *rand.Rand) ring.Config {
			cfg := ring.DefaultConfig(id, r)
			cfg.Links, cfg.CacheSize = v.links, v.cache
			return cfg
		})
		c.usePlanetLab(pl)
		c.grow(64, 20*time.Millisecond, 5*time.Second)
		if _, err := c.settle(4, time.Minute); err != nil {
			t.Fatal(err)
		}
		hops, err := c.routeCheck(1000, localKeys(c.rng, 64, 0.01), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		mean, p99 := hopStats(hops)
		p50 := quantile(c.lastLat, 0.5)
		t.Logf("n=64 %-14s hops mean %.2f p99 %d | latency p50 %v p90 %v p99 %v | direct p50 %v p90 %v",
			v.name, mean, p99, p50.Round(time.Millisecond), quantile(c.lastLat, 0.9).Round(time.Millisecond),
			quantile(c.lastLat, 0.99).Round(time.Millisecond), quantile(c.lastDirect, 0.5).Round(time.Millisecond),
			quantile(c.lastDirect, 0.9).Round(time.Millisecond))
		if v.cache == 0 && p50 > 150*time.Millisecond {
			t.Errorf("%s: median route latency %v, want at most 150 ms (discovery's 200 ms less a matching hop)", v.name, p50)
		}
	}
}
