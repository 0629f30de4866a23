package topo_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/overworld/overworld/geo/topo"
)

// The CMA paper's evaluation network: 5,000 routers, 1,300 players and 20
// mirrors picked at random, and the players × mirrors delay matrix the
// assignment algorithms take.
func Example_cmaPaper() {
	r := rand.New(rand.NewPCG(2024, 0)) // the seed names the topology
	g, err := topo.Hierarchical(topo.CMAPaper(), r)
	if err != nil {
		panic(err)
	}
	nodes := r.Perm(g.N())
	players, mirrors := nodes[:1300], nodes[1300:1320]
	m, err := topo.DelayMatrix(g, players, mirrors)
	if err != nil {
		panic(err)
	}
	fmt.Println(g.N(), "nodes in", g.NumAS(), "ASes, connected:", g.Connected())
	fmt.Println(m.Rows(), "players ×", m.Cols(), "mirrors")
	// Output:
	// 5000 nodes in 50 ASes, connected: true
	// 1300 players × 20 mirrors
}

// The core-selection paper's network: a flat 1,000-node Waxman topology in
// a square world of side 200 ms, where a link's delay is its length.
func ExampleCoreSelectionPaper() {
	g, err := topo.Waxman(topo.CoreSelectionPaper(), rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		panic(err)
	}
	e := g.Edges()[0]
	a, _ := g.Coord(e.U)
	b, _ := g.Coord(e.V)
	fmt.Println(g.N(), "nodes; first link delay equals its length:", e.Delay == a.Dist(b))
	// Output:
	// 1000 nodes; first link delay equals its length: true
}
