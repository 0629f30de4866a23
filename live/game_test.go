package live

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// A tiny test game: walkers circle around their spawn point and are
// interested in a box around themselves.

type testGame struct {
	walker   *world.Schema
	registry *world.Registry
}

func newTestGame() *testGame {
	g := &testGame{}
	g.walker = world.MustSchema("walker", world.MustSpace("x", "y"), []world.Field{
		{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float},
		{Name: "cx", Type: world.Float}, {Name: "cy", Type: world.Float},
		{Name: "age", Type: world.Int},
	}, func(st *world.State) world.Object { return &walker{st: st} })
	var err error
	if g.registry, err = world.NewRegistry(world.MustSpace("x", "y"), g.walker); err != nil {
		panic(err)
	}
	return g
}

type walker struct{ st *world.State }

func (w *walker) State() *world.State { return w.st }
func (w *walker) Interest(dst []world.Box) []world.Box {
	return append(dst, world.BoxAround(w.st.Location(), world.Point{50, 50}))
}
func (w *walker) Think(world.Context) {
	a := w.st.Int(4) + 1
	w.st.SetInt(4, a)
	w.st.SetFloat(0, w.st.Float(2)+5*math.Cos(float64(a)/10))
	w.st.SetFloat(1, w.st.Float(3)+5*math.Sin(float64(a)/10))
}

// newTestNode builds node id of a broadcast cluster of members with k
// walkers near the origin.
func newTestNode(t testing.TB, g *testGame, id wire.NodeID, members []wire.NodeID, k int) *node.Node {
	t.Helper()
	b, err := locate.NewBroadcast(id, members)
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{ID: id, Registry: g.registry, Discovery: b, Rand: rand.New(rand.NewPCG(1, uint64(id)))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range k {
		if _, err := n.Spawn(0, g.walker, func(st *world.State) {
			st.SetFloat(2, float64(10*i))
			st.SetFloat(3, float64(10*int(id)))
		}); err != nil {
			t.Fatal(err)
		}
	}
	return n
}
