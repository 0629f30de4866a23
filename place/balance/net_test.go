package balance

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/overworld/overworld/geo"
)

func TestGeoNet(t *testing.T) {
	pings, err := geo.WonderNetwork()
	if err != nil {
		t.Fatal(err)
	}
	cities, err := geo.GeoNamesCities()
	if err != nil {
		t.Fatal(err)
	}
	cfg := geo.DefaultPopulationConfig()
	pop, err := geo.NewPopulation(cities, pings, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fra, ok := pings.CityIndex("Frankfurt")
	if !ok {
		t.Fatal("no Frankfurt")
	}
	const n, home = 300, 10.0
	net, err := NewGeoNet(pop, pings, fra, n, home, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	// the same draw, to compare with geo's model directly
	ps := pop.Draw(n, rand.New(rand.NewPCG(3, 3)))
	for a := range n {
		if d := net.ClusterRTT(a) - (pop.RTT(ps[a], fra) + home); math.Abs(d) > 1e-9 {
			t.Fatalf("player %d: cluster RTT off by %g", a, d)
		}
		for b := range n {
			v := net.RTT(a, b)
			if v != net.RTT(b, a) || !(v >= 0) || (a == b) != (v == 0) {
				t.Fatalf("RTT(%d,%d) = %g, RTT(%d,%d) = %g", a, b, v, b, a, net.RTT(b, a))
			}
			if a == b {
				continue
			}
			if _, ok := pings.PairRTT(ps[a].Anchor, ps[b].Anchor); !ok && ps[a].Anchor != ps[b].Anchor {
				continue // unmeasured pair (18 of 29,161): a stand-in anchor, see GeoNet
			}
			// player b standing in as a server at its anchor, reached over
			// its own access path (both directions averaged)
			ab := pop.RTT(ps[a], ps[b].Anchor) + cfg.AccessMs(ps[b].AccessKm)
			ba := pop.RTT(ps[b], ps[a].Anchor) + cfg.AccessMs(ps[a].AccessKm)
			if d := v - ((ab+ba)/2 + 2*home); math.Abs(d) > 1e-6 {
				t.Fatalf("RTT(%d,%d) = %g, population model %g / %g", a, b, v, ab, ba)
			}
		}
	}
	if _, err := NewGeoNet(pop, pings, -1, n, home, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("bad cluster index accepted")
	}
	if _, err := NewGeoNet(pop, pings, fra, n, math.NaN(), rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("NaN home accepted")
	}
}
