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
	// Servers (≥ 2) and Players (≥ 1) are the instance's size.
	Servers, Players int
	// Side is the side of the square plane, in ms of latency; 0 means 200.
	Side float64
	// LinksPerNode is the Waxman M of the Internet graph; 0 means 2,
	// BRITE's default.
	LinksPerNode int
	// Provisioning is the fraction by which overlay links are faster than
	// the Internet path between their servers (§IV: 0.3); 0 means 0.3, and
	// a negative value means none.
	Provisioning float64
}

// Generate draws a session. An Internet graph of Servers + Players nodes
// (Waxman, geo/topo's BRITE-style incremental model, link latency the
// Euclidean length) is drawn; the first Servers nodes are servers. A
// player's latency to a server is their shortest-path latency in that
// graph; the overlay links every pair of servers (the abstract's "the
// latency on a link between two servers is the latency of the Internet
// path connecting them") with that latency times 1 − Provisioning. The
// same configuration and rng state give the same instance.
func Generate(cfg GenConfig, rng *rand.Rand) (*Instance, error) {
	if cfg.Side == 0 {
		cfg.Side = 200
	}
	if cfg.LinksPerNode == 0 {
		cfg.LinksPerNode = 2
	}
	switch {
	case cfg.Provisioning == 0:
		cfg.Provisioning = 0.3
	case cfg.Provisioning < 0:
		cfg.Provisioning = 0
	}
	if cfg.Servers < 2 || cfg.Players < 1 || cfg.Servers+cfg.Players <= cfg.LinksPerNode || !(cfg.Side > 0) ||
		math.IsInf(cfg.Side, 1) || cfg.Provisioning >= 1 || rng == nil {
		return nil, fmt.Errorf("%w: generate: %+v (want ≥ 2 servers, ≥ 1 player, more nodes than LinksPerNode, a positive side, provisioning < 1, an rng)", ErrInput, cfg)
	}
	wc := topo.DefaultWaxmanConfig()
	wc.N, wc.M, wc.Side = cfg.Servers+cfg.Players, cfg.LinksPerNode, cfg.Side
	wc.Delay = topo.DistanceDelay(1)
	g, err := topo.Waxman(wc, rng)
	if err != nil {
		return nil, fmt.Errorf("%w: generate: %v", ErrInput, err)
	}
	n := cfg.Servers
	servers := make([]string, n)
	for i := range servers {
		servers[i] = fmt.Sprintf("s%02d", i)
	}
	from := make([][]float64, n)
	for s := range from {
		from[s] = topo.ShortestFrom(g, s)
	}
	var links []Link
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			links = append(links, Link{A: servers[a], B: servers[b], Ms: from[a][b] * (1 - cfg.Provisioning)})
		}
	}
	players := make([]string, cfg.Players)
	lat := make([][]float64, cfg.Players)
	for i := range players {
		players[i] = fmt.Sprintf("p%03d", i)
		lat[i] = make([]float64, n)
		for s := range lat[i] {
			lat[i][s] = from[s][n+i]
		}
	}
	return NewInstance(servers, links, players, lat)
}
