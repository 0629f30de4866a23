package harness

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/world"
)

// still is an object that stays where it is and sees nothing.
type still struct{ st *world.State }

func (s *still) State() *world.State                  { return s.st }
func (s *still) Interest(dst []world.Box) []world.Box { return dst }
func (s *still) Think(world.Context)                  {}

func TestGameValidate(t *testing.T) {
	fields := []world.Field{{Name: "x", Type: world.Float, Quantum: 1}, {Name: "y", Type: world.Float, Quantum: 1}}
	newStill := func(st *world.State) world.Object { return &still{st} }
	dot := world.MustSchema("dot", world.MustSpace("x", "y"), fields, newStill)
	other := world.MustSchema("other", world.MustSpace("x", "y"), fields, newStill)
	reg, err := world.NewRegistry(dot.Space(), dot)
	if err != nil {
		t.Fatal(err)
	}
	ok := Game{Registry: reg, Bounds: world.Box{Min: world.Point{-50, 10}, Max: world.Point{50, 60}}, Interest: 5, Speed: 2,
		Spawns: []Spawn{{Node: 1, Schema: dot}}}
	if err := ok.validate(2); err != nil {
		t.Fatal(err)
	}
	if sp := ok.space(); sp.Dims != 2 || sp.Players != 1 || sp.Speed != 2 || sp.Interest != 5 {
		t.Errorf("space %+v", sp)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Game)
		want string
	}{
		{"registry", func(g *Game) { g.Registry = nil }, "Registry"},
		{"interest", func(g *Game) { g.Interest = 0 }, "interest"},
		{"interest inf", func(g *Game) { g.Interest = math.Inf(1) }, "interest"},
		{"speed", func(g *Game) { g.Speed = math.NaN() }, "speed"},
		{"bounds", func(g *Game) { g.Bounds.Max[1] = g.Bounds.Min[1] }, "bounds"},
		{"grid", func(g *Game) { g.Bounds.Max[0], g.Interest = 1e9, 1e-3 }, "observer cells"},
		{"players", func(g *Game) { g.Players = -1 }, "players"},
		{"node", func(g *Game) { g.Spawns[0].Node = 2 }, "node index 2"},
		{"no schema", func(g *Game) { g.Spawns[0].Schema = nil }, "no schema"},
		{"schema", func(g *Game) { g.Spawns[0].Schema = other }, "other"},
	} {
		g := ok
		g.Spawns = append([]Spawn(nil), ok.Spawns...)
		tc.mod(&g)
		if err := g.validate(2); !errors.Is(err, lab.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an lab.ErrConfig naming %q", tc.name, err, tc.want)
		}
		if _, err := New(Config{Nodes: 2}, g); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%s: New: %v", tc.name, err)
		}
	}
}
