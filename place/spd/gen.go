package spd

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/overworld/overworld/geo/topo"
)

// GenConfig configures Generate: a random session in the style of §IV,
// where the paper says only that networks of 20, 25 or 30 servers and 30 to
// 120 clients are "randomly generated" with overlay latencies "reduced by
// 30% to represent the well-provisioned network".
type GenConfig struct {
	// Servers (≥ 3) and Players (≥ 1) are the instance's size.
	Servers, Players int
	// Side is the side of the square plane, in ms of latency; 0 means 200.
	Side float64
	// LinksPerServer is the Waxman M (links each new server adds); 0 means
	// 2, BRITE's default.
	LinksPerServer int
	// Provisioning is the fraction by which overlay links are faster than
	// the plane distance (§IV: 0.3); 0 means 0.3, and a negative value
	// means none.
	Provisioning float64
}

// Generate draws a session: servers placed uniformly in the plane and
// joined by a Waxman overlay (geo/topo, BRITE's incremental model) whose
// link latency is the Euclidean length times 1 − Provisioning; players
// placed uniformly in the plane with a latency to each server equal to
// the Euclidean distance (an unprovisioned Internet path). The same
// configuration and rng state give the same instance.
func Generate(cfg GenConfig, rng *rand.Rand) (*Instance, error) {
	if cfg.Side == 0 {
		cfg.Side = 200
	}
	if cfg.LinksPerServer == 0 {
		cfg.LinksPerServer = 2
	}
	switch {
	case cfg.Provisioning == 0:
		cfg.Provisioning = 0.3
	case cfg.Provisioning < 0:
		cfg.Provisioning = 0
	}
	if cfg.Servers < 3 || cfg.Servers <= cfg.LinksPerServer || cfg.Players < 1 || !(cfg.Side > 0) ||
		math.IsInf(cfg.Side, 1) || cfg.Provisioning >= 1 || rng == nil {
		return nil, fmt.Errorf("%w: generate: %+v (want ≥ 3 servers, more than LinksPerServer, ≥ 1 player, a positive side, provisioning < 1, an rng)", ErrInput, cfg)
	}
	wc := topo.DefaultWaxmanConfig()
	wc.N, wc.M, wc.Side = cfg.Servers, cfg.LinksPerServer, cfg.Side
	wc.Delay = topo.DistanceDelay(1 - cfg.Provisioning)
	g, err := topo.Waxman(wc, rng)
	if err != nil {
		return nil, fmt.Errorf("%w: generate: %v", ErrInput, err)
	}
	servers := make([]string, cfg.Servers)
	for i := range servers {
		servers[i] = fmt.Sprintf("s%02d", i)
	}
	var links []Link
	for _, e := range g.Edges() {
		links = append(links, Link{A: servers[e.U], B: servers[e.V], Ms: e.Delay})
	}
	xy := g.Coords()
	players := make([]string, cfg.Players)
	lat := make([][]float64, cfg.Players)
	for i := range players {
		players[i] = fmt.Sprintf("p%03d", i)
		p := topo.Point{X: rng.Float64() * cfg.Side, Y: rng.Float64() * cfg.Side}
		lat[i] = make([]float64, cfg.Servers)
		for j := range lat[i] {
			lat[i][j] = p.Dist(xy[j])
		}
	}
	return NewInstance(servers, links, players, lat)
}
