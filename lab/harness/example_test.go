package harness_test

import (
	"fmt"
	"math"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/world"
)

// A small game written against package world alone: walkers roam a
// square at a walking pace, turning now and then, each interested in what
// is within 25 m.
const (
	side     = 300.0 // m
	speed    = 1.5   // m/s
	interest = 25.0  // m, half the width of a walker's interest box
)

var walkerSchema = world.MustSchema("walker", world.MustSpace("x", "y"), []world.Field{
	{Name: "x", Type: world.Float, Quantum: 0.01}, {Name: "y", Type: world.Float, Quantum: 0.01},
	{Name: "heading", Type: world.Float, Quantum: 0.001},
}, func(st *world.State) world.Object { return &walker{st} })

type walker struct{ st *world.State }

func (w *walker) State() *world.State { return w.st }

func (w *walker) Interest(dst []world.Box) []world.Box {
	return append(dst, world.BoxAround(w.st.Location(), world.Point{interest, interest}))
}

// Think walks one 100 ms frame, turning at random one frame in 50 and
// bouncing off the edges.
func (w *walker) Think(ctx world.Context) {
	h := w.st.Float(2)
	if ctx.Rand().IntN(50) == 0 {
		h = 2 * math.Pi * ctx.Rand().Float64()
	}
	x, y := w.st.Float(0)+0.1*speed*math.Cos(h), w.st.Float(1)+0.1*speed*math.Sin(h)
	if x < 0 || x > side || y < 0 || y > side {
		h += math.Pi
		x, y = min(max(x, 0), side), min(max(y, 0), side)
	}
	w.st.SetFloat(0, x)
	w.st.SetFloat(1, y)
	w.st.SetFloat(2, h)
}

// The game runs on 8 simulated nodes (8 walkers each) under the colyseus
// architecture for 30 s of game time over PlanetLab latencies, and the
// ground-truth observer reports how many of the walkers in each node's
// interest the node did not hold a replica of.
func Example() {
	reg, err := world.NewRegistry(walkerSchema.Space(), walkerSchema)
	if err != nil {
		panic(err)
	}
	game := harness.Game{Registry: reg, Bounds: world.Box{Max: world.Point{side, side}}, Interest: interest, Speed: speed}
	for i := range 64 {
		x, y := 20+float64(i%8)*side/8, 20+float64(i/8)*side/8
		game.Spawns = append(game.Spawns, harness.Spawn{Node: i % 8, Schema: walkerSchema, Init: func(st *world.State) {
			st.SetFloat(0, x)
			st.SetFloat(1, y)
		}})
	}
	cfg := harness.DefaultConfig()
	cfg.Arch, cfg.Nodes, cfg.Duration = discovery.Colyseus, 8, 30*time.Second
	res, err := harness.Run(cfg, game, nil)
	if err != nil {
		panic(err)
	}
	v := res.Summary.Views
	fmt.Printf("%d nodes reported their views %d times\n", len(res.Summary.PerNode), v.Reports)
	for _, m := range v.Missing {
		fmt.Printf("missing replicas after %3.0f ms in view: under 10%%: %v\n", m.GraceMs, m.Fraction < 0.1)
	}
	// Output:
	// 8 nodes reported their views 2160 times
	// missing replicas after   0 ms in view: under 10%: true
	// missing replicas after 100 ms in view: under 10%: true
	// missing replicas after 400 ms in view: under 10%: true
}
