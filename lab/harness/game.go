package harness

import (
	"fmt"
	"math"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/world"
)

// Game is what the harness needs of a world game: its schemas, the
// objects each node starts with, and the part of its world the
// ground-truth observer and the discovery presets read. Any game written
// against package world can fill it; ArenaGame fills it for the model
// game (package arena).
type Game struct {
	// Registry is the game's schemas, shared by every node (required).
	// The per-kind measures (World.KindViews) name each kind by its
	// schema's name.
	Registry *world.Registry
	// Spawns are the objects created before the first frame, in order.
	Spawns []Spawn
	// Avatar is the schema of the players' avatars among the Spawns
	// (optional): a placement (ArenaConfig.Placement) puts each player on
	// a node by moving its avatar.
	Avatar *world.Schema
	// Bounds is where the game's objects are, in x (dimension 0) and y
	// (dimension 1): the observer's grid covers it (objects outside
	// count in its edge cells) and the colyseus key mappings spread it
	// over the ring. Max must exceed Min in both.
	Bounds world.Box
	// Interest is the half-width (m) of a player's interest box (> 0):
	// the observer's grid cells are as wide as an interest box, and the
	// Hilbert key mapping's cells a quarter of it.
	Interest float64
	// Speed is how fast a player runs (m/s): the directory's subscription
	// margin and the publication jump derive from it (discovery.Space).
	Speed float64
	// Players is the number of players (the dht key mapping gives each a
	// region); 0 means one per spawn.
	Players int
	// Static lists the kinds whose objects stay where they are (the model
	// game's items); every other kind counts among the moving objects,
	// whose missing replicas the summary gives apart (Views.MissingMoving).
	// Each must be in the Registry. Nil: every kind moves.
	Static []*world.Schema
	// Labels are added to the summary's labels (sim.Summary.Labels): the
	// game's own settings, such as its map. The harness's own labels
	// (arch, nodes, sites, infra_node) win over a label of the same name.
	Labels map[string]string
}

// Spawn is one object created before the first frame: on player node Node
// (0 to Config.Nodes−1, the node with ID Node+1), of schema Schema, with
// Init setting its fields (may be nil).
type Spawn struct {
	Node   int
	Schema *world.Schema
	Init   func(*world.State)
}

// maxCells bounds the observer's grid: Bounds over cells of twice the
// interest.
const maxCells = 1 << 24

// validate checks the game for a run of nodes player nodes.
func (g *Game) validate(nodes int) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: game: %s", lab.ErrConfig, fmt.Sprintf(format, args...))
	}
	if g.Registry == nil {
		return bad("no Registry")
	}
	if !(g.Interest > 0) || math.IsInf(g.Interest, 0) {
		return bad("interest %v: want a positive half-width in m", g.Interest)
	}
	if !(g.Speed >= 0) || math.IsInf(g.Speed, 0) {
		return bad("speed %v: want finite and non-negative", g.Speed)
	}
	w, h := g.Bounds.Max[0]-g.Bounds.Min[0], g.Bounds.Max[1]-g.Bounds.Min[1]
	if !(w > 0 && h > 0) || math.IsInf(w, 0) || math.IsInf(h, 0) {
		return bad("bounds %v to %v: want Max above Min in x and y, finite", g.Bounds.Min, g.Bounds.Max)
	}
	if cells := math.Ceil(w/(2*g.Interest)) * math.Ceil(h/(2*g.Interest)); cells > maxCells {
		return bad("bounds %v × %v m over interest boxes %v m wide: %.0f observer cells, want at most %d", w, h, 2*g.Interest, cells, maxCells)
	}
	if g.Players < 0 {
		return bad("players %d: want 0 (one per spawn) or more", g.Players)
	}
	for _, sc := range g.Static {
		if sc == nil {
			return bad("a nil static schema")
		}
		if _, ok := g.Registry.Kind(sc); !ok {
			return bad("static schema %s is not in the registry", sc.Name())
		}
	}
	for i, sp := range g.Spawns {
		if sp.Node < 0 || sp.Node >= nodes {
			return bad("spawn %d on node index %d: want 0 to %d", i, sp.Node, nodes-1)
		}
		if sp.Schema == nil {
			return bad("spawn %d: no schema", i)
		}
		if _, ok := g.Registry.Kind(sp.Schema); !ok {
			return bad("spawn %d: schema %s is not in the registry", i, sp.Schema.Name())
		}
	}
	return nil
}

// space returns what discovery's presets need to know of the game.
func (g *Game) space() discovery.Space {
	players := g.Players
	if players == 0 {
		players = len(g.Spawns)
	}
	return discovery.Space{Dims: g.Registry.Space().Dims(), Bounds: g.Bounds, Interest: g.Interest, Speed: g.Speed, Players: players}
}
