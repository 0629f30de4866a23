// Package game is the game of tag written against overworld's game API
// (package world) alone: one schema (a player: position, velocity, whether
// it is "it", and score counters), one think function, and an interest
// that is the square a player sees. "It" chases the nearest player in sight
// and tags it by writing to its replica, the others flee from "it" or
// wander.
//
// What a runtime must do with it: build the Game with New on every node
// (the same size everywhere), register Game.Registry, and create each
// player once with Context.Create (or a node's spawn) and Game.Place.
package game

import (
	"fmt"
	"math"
	"time"

	"github.com/overworld/overworld/world"
)

// The rules of tag, in metres, metres per second and time.
const (
	// Sight is how far a player sees: its interest is the square of
	// half-width Sight around it.
	Sight = 15.0
	// TagRadius is how close "it" must come to tag a player.
	TagRadius = 1.0
	// RunSpeed and ChaseSpeed are the speeds of a runner and of "it"
	// (faster, so that it catches someone within seconds).
	RunSpeed   = 4.0
	ChaseSpeed = 6.0
	// SafeFor is how long a player that has just tagged someone cannot be
	// tagged back.
	SafeFor = 3 * time.Second
	// TurnEvery is how often, on average, a wandering player picks a new
	// direction.
	TurnEvery = 2 * time.Second
)

// Field indices of the player schema, in declaration order. The fields that
// change every frame come first, so a delta's change mask is one byte.
const (
	fX      = iota // m, the naming attributes x, y, z
	fY             //
	fVX            // m/s
	fVY            //
	fIt            // this player is "it"
	fSafe          // ms of game time until which it cannot be tagged
	fTags          // players it has tagged
	fCaught        // times it was tagged
	fZ             // always 0: the field is flat
)

// Game is the tag game on a square field: its one schema and the registry
// every node of a cluster builds identically.
type Game struct {
	// Size is the side of the square field in metres.
	Size float64
	// Player is the schema of a player.
	Player *world.Schema
	reg    *world.Registry
}

// New returns a game on a field of side size metres.
func New(size float64) (*Game, error) {
	if !(size > 2*TagRadius) || math.IsInf(size, 0) {
		return nil, fmt.Errorf("game: field size %v m: want a finite size above %v m", size, 2*TagRadius)
	}
	g := &Game{Size: size}
	pos := world.Field{Type: world.Float, Quantum: 1.0 / 16}
	vel := world.Field{Type: world.Float, Quantum: 1.0 / 8}
	field := func(f world.Field, name string) world.Field { f.Name = name; return f }
	var err error
	g.Player, err = world.NewSchema("tag.player", world.XYZ, []world.Field{
		field(pos, "x"), field(pos, "y"), field(vel, "vx"), field(vel, "vy"),
		{Name: "it", Type: world.Bool}, {Name: "safe", Type: world.Int},
		{Name: "tags", Type: world.Int}, {Name: "caught", Type: world.Int},
		field(pos, "z"),
	}, func(st *world.State) world.Object { return &Player{g: g, st: st} })
	if err != nil {
		return nil, err
	}
	if g.reg, err = world.NewRegistry(world.XYZ, g.Player); err != nil {
		return nil, err
	}
	return g, nil
}

// Registry returns the registry of the game's schemas.
func (g *Game) Registry() *world.Registry { return g.reg }

// Place initialises a new player's state at (x, y), "it" or not.
func (g *Game) Place(st *world.State, x, y float64, it bool) {
	st.SetLocation(world.Point{x, y, 0})
	st.SetBool(fIt, it)
}

// Player is one player. Its primary runs Think; its replicas are read by
// the players of other nodes.
type Player struct {
	g    *Game
	st   *world.State
	last time.Duration // the primary's previous frame
}

// State returns the player's replicated state.
func (p *Player) State() *world.State { return p.st }

// Interest is the square the player sees.
func (p *Player) Interest(dst []world.Box) []world.Box {
	return append(dst, world.BoxAround(p.st.Location(), world.Point{Sight, Sight, math.Inf(1)}))
}

// Velocity lets the node predict where the player is heading.
func (p *Player) Velocity() world.Point { return world.Point{p.st.Float(fVX), p.st.Float(fVY)} }

// It reports whether the player is "it".
func (p *Player) It() bool { return p.st.Bool(fIt) }

// Tags returns how many players it has tagged.
func (p *Player) Tags() int64 { return p.st.Int(fTags) }

// Caught returns how many times it was tagged.
func (p *Player) Caught() int64 { return p.st.Int(fCaught) }

// Think runs one frame: "it" chases the nearest player it may tag and tags
// it when close enough; the others flee from the nearest "it" they see;
// anyone with nothing to chase or flee wanders.
func (p *Player) Think(ctx world.Context) {
	now := ctx.Now()
	dt := (now - p.last).Seconds()
	if p.last == 0 {
		dt = 0
	}
	p.last = now
	switch {
	case p.It() && p.chase(ctx, now):
	case !p.It() && p.flee(ctx):
	case ctx.Rand().Float64() < dt/TurnEvery.Seconds() || p.Velocity() == (world.Point{}):
		a := 2 * math.Pi * ctx.Rand().Float64()
		p.head(math.Cos(a), math.Sin(a), RunSpeed/2)
	}
	p.move(dt)
}

// chase moves "it" towards the nearest player that is not safe, and tags it
// when within TagRadius. The tag is a write to the other player's replica,
// which the node forwards to its primary: "it" is set there, and "caught"
// adds up even if two players tag the same one at once. It reports whether
// there was a player to chase.
func (p *Player) chase(ctx world.Context, now time.Duration) bool {
	prey := p.nearest(ctx, func(o *Player) bool { return !o.It() && o.st.Int(fSafe) <= now.Milliseconds() })
	if prey == nil {
		return false
	}
	dx, dy := prey.st.Float(fX)-p.st.Float(fX), prey.st.Float(fY)-p.st.Float(fY)
	if math.Hypot(dx, dy) > TagRadius {
		p.head(dx, dy, ChaseSpeed)
		return true
	}
	err := ctx.Write(prey.st.ID(), func(st *world.State) {
		st.SetBool(fIt, true)
		st.SetInt(fCaught, st.Int(fCaught)+1)
	})
	if err == nil {
		p.st.SetBool(fIt, false)
		p.st.SetInt(fTags, p.Tags()+1)
		p.st.SetInt(fSafe, (now + SafeFor).Milliseconds())
	}
	return true
}

// flee turns a runner away from the nearest "it" in sight; it reports
// whether there was one.
func (p *Player) flee(ctx world.Context) bool {
	it := p.nearest(ctx, func(o *Player) bool { return o.It() })
	if it == nil {
		return false
	}
	p.head(p.st.Float(fX)-it.st.Float(fX), p.st.Float(fY)-it.st.Float(fY), RunSpeed)
	return true
}

// nearest returns the closest other player in sight for which ok holds.
func (p *Player) nearest(ctx world.Context, ok func(*Player) bool) *Player {
	var best *Player
	bestD := math.Inf(1)
	me := p.st.Location()
	ctx.Each(p.Interest(nil)[0], func(obj world.Object, _ bool) bool {
		o, isPlayer := obj.(*Player)
		if !isPlayer || o.st.ID() == p.st.ID() || !ok(o) {
			return true
		}
		at := o.st.Location()
		if d := math.Hypot(at[0]-me[0], at[1]-me[1]); d < bestD {
			best, bestD = o, d
		}
		return true
	})
	return best
}

// head sets the velocity to speed along (dx, dy) (unchanged if zero).
func (p *Player) head(dx, dy, speed float64) {
	if n := math.Hypot(dx, dy); n > 0 {
		p.st.SetFloat(fVX, speed*dx/n)
		p.st.SetFloat(fVY, speed*dy/n)
	}
}

// move advances the player by dt seconds, bouncing off the field's edges.
func (p *Player) move(dt float64) {
	for _, f := range [2][2]int{{fX, fVX}, {fY, fVY}} {
		x, v := p.st.Float(f[0])+p.st.Float(f[1])*dt, p.st.Float(f[1])
		if x < 0 || x > p.g.Size {
			x, v = math.Min(math.Max(x, 0), p.g.Size), -v
		}
		p.st.SetFloat(f[0], x)
		p.st.SetFloat(f[1], v)
	}
}
