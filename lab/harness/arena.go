package harness

import (
	"fmt"
	"strconv"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/world"
)

// The model game (package arena) is one user of the harness: ArenaGame
// turns its game into a Game, and ArenaConfig adds the game's settings to
// a run's Config. The adapter lives here, beside the runtime, because the
// harness's own tests exercise the observer on the model game from inside
// the package, and because every user of an arena world (the demo, the
// Colyseus experiments, the live cluster's simulated twin, the live
// daemon's discovery) then shares one adapter without depending on a
// paper's package.

// ArenaConfig is one run of the model game on the harness: the run
// (Config, whose Seed also seeds the game's map, spawns and bots) and the
// game's settings. Start from DefaultArenaConfig; Validate fills the zero
// fields.
type ArenaConfig struct {
	Config
	// PlayersPerNode is the number of bots per node: 1 is Colyseus'
	// peer-to-peer scenario, 8 its federated one. Default 8.
	PlayersPerNode int
	// Map is the map shape. Default rect.
	Map arena.MapType
	// Zipf is the game's waypoint popularity exponent (arena.Config.Zipf;
	// 0: the game's default, 1): larger values crowd the bots onto fewer
	// hot spots, a skewed load for the ring's load balancing.
	Zipf float64
	// TileZipf is the game's tile popularity exponent
	// (arena.Config.TileZipf; default 0, every tile alike): a positive
	// value makes a few tiles hot spots of the whole map.
	TileZipf float64
	// Placement puts the players on the nodes (the zero value: none, the
	// game's own split; the world demo's default is PlaceCMA with game
	// servers). Only WonderNetwork runs (the world demo) place players.
	Placement PlacementConfig
}

// DefaultArenaConfig returns 16 nodes × 8 bots on a rect map for 60 s of
// game time under the directory architecture, on PlanetLab slice 1, seed
// 1.
func DefaultArenaConfig() ArenaConfig {
	return ArenaConfig{Config: DefaultConfig(), PlayersPerNode: 8, Map: arena.Rect}
}

// Players returns the number of bots.
func (c ArenaConfig) Players() int { return c.Nodes * c.PlayersPerNode }

// Validate returns a copy of c with the zero fields set to their defaults
// and the key mapping resolved (AutoKeyMap for KeyMapAuto), or an error
// wrapping lab.ErrConfig that names the first bad field.
func (c ArenaConfig) Validate() (ArenaConfig, error) {
	d := DefaultArenaConfig()
	if c.PlayersPerNode == 0 {
		c.PlayersPerNode = d.PlayersPerNode
	}
	if c.Map == 0 {
		c.Map = d.Map
	}
	var err error
	if c.Config, err = c.Config.Validate(); err != nil {
		return c, err
	}
	bad := func(format string, args ...any) (ArenaConfig, error) {
		return c, fmt.Errorf("%w: %s", lab.ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.PlayersPerNode < 1 || c.PlayersPerNode > 1000:
		return bad("players per node %d: want 1 to 1000", c.PlayersPerNode)
	case c.Nodes*c.PlayersPerNode > arena.MaxPlayers:
		return bad("%d nodes × %d players: want at most %d players", c.Nodes, c.PlayersPerNode, arena.MaxPlayers)
	case c.Map != arena.Sqr && c.Map != arena.Rect:
		return bad("map %v: want sqr or rect", c.Map)
	case !(c.TileZipf >= 0 && c.TileZipf <= arena.MaxZipf):
		return bad("tile popularity exponent %v: want 0 to %d", c.TileZipf, arena.MaxZipf)
	case !(c.Zipf == 0 || c.Zipf >= 0.1 && c.Zipf <= arena.MaxZipf):
		return bad("waypoint popularity exponent (zipf) %v: want 0 (the game's default) or 0.1 to %d", c.Zipf, arena.MaxZipf)
	}
	if c.KeyMap == discovery.KeyMapAuto {
		c.KeyMap = AutoKeyMap(c.Map, c.Players())
	}
	if c.Placement, err = c.Placement.validate(c); err != nil {
		return c, err
	}
	return c, nil
}

// AutoKeyMap returns the key mapping discovery.AutoKeyMap picks for the
// model game's map of type m for n players: rangedht-x on rect maps of 32
// players and more, the Hilbert curve on the others.
func AutoKeyMap(m arena.MapType, n int) string { return discovery.AutoKeyMap(arenaBounds(m, n)) }

// arenaBounds is the extent of the model game's map of type m for n
// players.
func arenaBounds(m arena.MapType, n int) world.Box {
	w, h := arena.Size(m, n)
	return world.Box{Max: world.Point{w, h}}
}

// ArenaSpace returns what discovery's presets need to know of the model
// game g: its space, its map, its bots' interest and run speed, and its
// number of players.
func ArenaSpace(g *arena.Game) discovery.Space {
	return discovery.Space{Dims: g.Registry().Space().Dims(), Bounds: world.Box{Max: world.Point{g.Map.W, g.Map.H}},
		Interest: g.Config().Interest, Speed: arena.RunSpeed, Players: g.Config().Players()}
}

// ArenaGame builds the model game for c (validate it first) and returns it
// as a harness Game: its registry, its spawns (each node's bots, the items
// spread over the nodes), its map as the bounds, and the labels map,
// players_per_node and players.
func ArenaGame(c ArenaConfig) (Game, *arena.Game, error) {
	g, err := arena.New(arena.Config{Map: c.Map, Nodes: c.Nodes, PlayersPerNode: c.PlayersPerNode, Seed: c.Seed,
		Zipf: c.Zipf, TileZipf: c.TileZipf})
	if err != nil {
		return Game{}, nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	sp := ArenaSpace(g)
	hg := Game{Registry: g.Registry(), Avatar: g.Bot, Static: []*world.Schema{g.Item}, Bounds: sp.Bounds, Interest: sp.Interest, Speed: sp.Speed, Players: sp.Players,
		Labels: map[string]string{"players_per_node": strconv.Itoa(c.PlayersPerNode), "players": strconv.Itoa(c.Players()),
			"map": c.Map.String()}}
	for _, s := range g.Spawns() {
		hg.Spawns = append(hg.Spawns, Spawn{Node: s.Node, Schema: s.Schema, Init: s.Init})
	}
	return hg, g, nil
}

// NewArena validates c and builds a world of the model game (New).
func NewArena(c ArenaConfig) (*World, error) {
	c, err := c.Validate()
	if err != nil {
		return nil, err
	}
	g, _, err := ArenaGame(c)
	if err != nil {
		return nil, err
	}
	if c.Placement.Mode == PlaceNone {
		return New(c.Config, g)
	}
	pl, err := newPlacer(c, &g)
	if err != nil {
		return nil, err
	}
	w, err := New(c.Config, g)
	if err != nil {
		return nil, err
	}
	w.placer = pl
	return w, pl.attach(w, &g)
}

// RunArena builds and runs one world of the model game and returns its
// result; progress may be nil.
func RunArena(c ArenaConfig, progress func(Progress)) (*Result, error) {
	w, err := NewArena(c)
	if err != nil {
		return nil, err
	}
	if err := w.Run(progress); err != nil {
		return nil, err
	}
	return w.Result(), nil
}
