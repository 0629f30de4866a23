// Package arenaplay plugs the arena model game into live mode: the
// player.Controller that admits players into a node's game and applies
// their inputs (Controller), the headless player that plays it over the
// network (Brain), and the live.Game a node daemon runs for a node
// configuration (NodeGame).
//
// The game's rules stay in package arena (the input codec, PlacePlayer,
// SteerPlayer, and the think function of a player avatar); this package
// only ties them to the node core and the player endpoint, so that arena
// imports no driver.
//
// The caller must build the Controller and every Brain from the same
// arena.Config as the nodes' game (the map comes from the seed), hand the
// Controller to the node's player.Gateway (NodeGame does so in the
// live.Game it returns) and run each Brain with a player.Client.
package arenaplay

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/world"
)

// Controller admits players into the arena game on a node: it implements
// player.Controller. A joining player gets a bot avatar marked
// arena.PlayerGoal at a waypoint drawn by popularity, steered by its
// inputs.
type Controller struct {
	g *arena.Game
}

var _ player.Controller = (*Controller)(nil)

// NewController returns the player controller of game g.
func NewController(g *arena.Game) *Controller { return &Controller{g: g} }

// Join spawns the player's avatar on n.
func (c *Controller) Join(n *node.Node, _ player.PlayerID) (world.ObjectID, error) {
	wp := c.g.Map.DrawWaypoint(n.Config().Rand)
	obj, err := n.Spawn(n.Now(), c.g.Bot, func(st *world.State) { c.g.PlacePlayer(st, wp) })
	if err != nil {
		return 0, err
	}
	return obj.State().ID(), nil
}

// Input applies one input to the avatar (arena.Game.SteerPlayer): its
// velocity, and a rocket if it fires, is alive and its launcher has
// reloaded. A malformed input, or an avatar that is not a local bot
// primary, is an arena.ErrInput.
func (c *Controller) Input(n *node.Node, avatar world.ObjectID, b []byte) error {
	in, err := arena.DecodeInput(b)
	if err != nil {
		return err
	}
	obj, primary, ok := n.Lookup(avatar)
	if !ok || !primary || obj.State().Schema() != c.g.Bot {
		return fmt.Errorf("%w: avatar %v is not a local bot primary", arena.ErrInput, avatar)
	}
	now := int64(n.Now() / arena.Frame)
	var rocket func(*world.State)
	if err := n.Write(avatar, func(s *world.State) { rocket = c.g.SteerPlayer(s, in, now) }); err != nil {
		return err
	}
	if rocket != nil {
		if _, err := n.Spawn(n.Now(), c.g.Missile, rocket); err != nil {
			return err
		}
	}
	return nil
}

// Leave deletes the avatar.
func (c *Controller) Leave(n *node.Node, avatar world.ObjectID) { _ = n.Delete(n.Now(), avatar) }

// NodeGame builds the arena game a node configuration names and the
// live.Game a daemon runs for it: the registry, this node's spawns (the
// bots and items of its game.slot; only the items unless game.ai_bots),
// the game's world as discovery's presets see it (the same
// discovery.Space as the simulated world's, lab/harness.ArenaSpace) and
// the player controller. A bad game configuration is a live.ErrConfig.
func NodeGame(g live.GameConfig) (*arena.Game, live.Game, error) {
	m, err := arena.ParseMapType(g.Map)
	if err != nil {
		return nil, live.Game{}, fmt.Errorf("%w: game.map %q: want rect or sqr", live.ErrConfig, g.Map)
	}
	game, err := arena.New(arena.Config{Map: m, Nodes: g.Nodes, PlayersPerNode: g.PlayersPerNode, Seed: g.Seed})
	if err != nil {
		return nil, live.Game{}, fmt.Errorf("%w: game: %v", live.ErrConfig, err)
	}
	slot, aiBots := g.Slot, g.AIBots
	lg := live.Game{Registry: game.Registry(),
		Discovery: discovery.Space{Dims: game.Registry().Space().Dims(), Bounds: world.Box{Max: world.Point{game.Map.W, game.Map.H}},
			Interest: game.Config().Interest, Speed: arena.RunSpeed, Players: game.Config().Players()},
		Players: NewController(game),
		Spawn: func(now time.Duration, n *node.Node) error {
			for _, sp := range game.Spawns() {
				if sp.Node != slot-1 || (sp.Schema == game.Bot && !aiBots) {
					continue
				}
				if _, err := n.Spawn(now, sp.Schema, sp.Init); err != nil {
					return err
				}
			}
			return nil
		}}
	lg.Scene = Scene(game.Map)
	return game, lg, nil
}

// Scene is the arena's static world for the browser game
// (/play/scene.json): its size and walls, in metres.
func Scene(m *arena.Map) []byte {
	walls := make([][4]float64, len(m.Obstacles))
	for i, o := range m.Obstacles {
		walls[i] = [4]float64{o.MinX, o.MinY, o.MaxX, o.MaxY}
	}
	b, err := json.Marshal(struct {
		W         float64      `json:"w"`
		H         float64      `json:"h"`
		Obstacles [][4]float64 `json:"obstacles"`
	}{m.W, m.H, walls})
	if err != nil { // cannot happen: the map's numbers are finite
		return nil
	}
	return b
}

// Brain is a headless player of the arena game over the network
// (player.Brain): it walks between waypoints of the map chosen like the
// bot AI's goals, along shortest paths, and fires at the nearest live bot
// it sees within the game's FightRange, every arena.FireEvery, leading the
// target by its velocity. Build it from the same arena.Config as the
// node's game: the map comes from the seed.
type Brain struct {
	g        *arena.Game
	fight    float64 // the game's FightRange
	rng      *rand.Rand
	path     []int32
	lastFire time.Duration
	lastX    float64
	lastY    float64
	still    int
	checked  bool
	ok       bool
	buf      []byte
}

var _ player.Brain = (*Brain)(nil)

// NewBrain returns a brain for game g drawing its choices from seed.
func NewBrain(g *arena.Game, seed uint64) *Brain {
	return &Brain{g: g, fight: g.Config().FightRange, rng: rand.New(rand.NewPCG(seed, 0x627261696e)), lastFire: -arena.FireEvery}
}

// compatible reports whether the node's bot schema is this game's.
func (p *Brain) compatible(s *world.Schema) bool {
	if p.checked {
		return p.ok
	}
	p.checked = true
	if s.Name() != p.g.Bot.Name() || s.NumFields() != p.g.Bot.NumFields() {
		return false
	}
	for i := range s.NumFields() {
		if s.FieldAt(i) != p.g.Bot.FieldAt(i) {
			return false
		}
	}
	p.ok = true
	return true
}

// Input decides the next input from the player's view.
func (p *Brain) Input(w player.Welcome, v *player.View, now time.Duration) []byte {
	me, ok := v.Lookup(w.Avatar)
	if !ok || !p.compatible(me.Schema()) {
		return nil
	}
	if me.Int(arena.BotMode) == arena.ModeDead {
		p.path = p.path[:0]
		return arena.AppendInput(p.buf[:0], arena.Input{})
	}
	m := p.g.Map
	x, y := me.Float(arena.BotX), me.Float(arena.BotY)
	if math.Hypot(x-p.lastX, y-p.lastY) < 0.05 {
		p.still++
	} else {
		p.still = 0
	}
	p.lastX, p.lastY = x, y
	if len(p.path) == 0 || p.still > 5 {
		cur := m.NearestWaypoint(x, y)
		p.path = append(p.path[:0], int32(cur))
		p.path = m.Path(p.path, cur, m.ChooseGoal(cur, p.rng))
		p.still = 0
	}
	for len(p.path) > 0 {
		q := m.Waypoints[p.path[0]]
		if math.Hypot(q.X-x, q.Y-y) > 0.25 {
			break
		}
		p.path = p.path[1:]
	}
	var in arena.Input
	if len(p.path) > 0 {
		q := m.Waypoints[p.path[0]]
		dx, dy := q.X-x, q.Y-y
		d := math.Hypot(dx, dy)
		s := min(arena.RunSpeed, d/arena.Frame.Seconds())
		in.VX, in.VY = s*dx/d, s*dy/d
	}
	if now-p.lastFire >= arena.FireEvery {
		var best *world.State
		bestD := p.fight
		for _, o := range v.Objects() {
			s := o.State
			if o.ID == w.Avatar || s.Schema().Name() != p.g.Bot.Name() || s.Int(arena.BotMode) == arena.ModeDead {
				continue
			}
			ox, oy := s.Float(arena.BotX), s.Float(arena.BotY)
			if d := math.Hypot(ox-x, oy-y); d < bestD && m.Visible(x, y, ox, oy) {
				best, bestD = s, d
			}
		}
		if best != nil {
			tof := bestD / arena.MissileSpeed
			tx := best.Float(arena.BotX) + best.Float(arena.BotVX)*tof
			ty := best.Float(arena.BotY) + best.Float(arena.BotVY)*tof
			in.Fire, in.Aim = true, math.Atan2(ty-y, tx-x)+p.rng.NormFloat64()*arena.AimError
			p.lastFire = now
		}
	}
	p.buf = arena.AppendInput(p.buf[:0], in)
	return p.buf
}
