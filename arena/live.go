package arena

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/world"
)

// PlayerGoal in a bot's "goal" field marks an avatar controlled by a
// player over the network (package live/player) instead of by the bot AI:
// its think function only applies the velocity its player set, collides
// with walls, picks up items, dies and respawns. Everything else (rockets
// hitting it, bots fighting it) treats it as any bot.
const PlayerGoal = -1

// Input is one player input of the arena game: the velocity the player
// wants (m/s; clamped to RunSpeed) and whether to fire a rocket in
// direction Aim (radians) this frame (honoured at most every FireEvery).
type Input struct {
	VX, VY float64
	Fire   bool
	Aim    float64
}

// InputLen is the length of an encoded Input.
const InputLen = 7

// ErrInput reports a malformed input.
var ErrInput = errors.New("arena: bad input")

// AppendInput encodes in: a flags byte (bit 0: fire), the velocity in
// 1/8 m/s as two big-endian int16, the aim as a big-endian uint16 in
// 1/65536 turns.
func AppendInput(b []byte, in Input) []byte {
	var flags byte
	if in.Fire {
		flags = 1
	}
	q := func(v float64) uint16 {
		return uint16(int16(max(-RunSpeed, min(RunSpeed, v)) / velQuantum))
	}
	turns := math.Mod(in.Aim/(2*math.Pi), 1)
	if turns < 0 {
		turns++
	}
	b = append(b, flags)
	b = binary.BigEndian.AppendUint16(b, q(in.VX))
	b = binary.BigEndian.AppendUint16(b, q(in.VY))
	return binary.BigEndian.AppendUint16(b, uint16(turns*65536))
}

// DecodeInput decodes an input (the velocity clamped to RunSpeed).
func DecodeInput(p []byte) (Input, error) {
	if len(p) != InputLen {
		return Input{}, fmt.Errorf("%w: %d bytes, want %d", ErrInput, len(p), InputLen)
	}
	if p[0]&^1 != 0 {
		return Input{}, fmt.Errorf("%w: unknown flags %#x", ErrInput, p[0])
	}
	in := Input{Fire: p[0] == 1,
		VX:  float64(int16(binary.BigEndian.Uint16(p[1:]))) * velQuantum,
		VY:  float64(int16(binary.BigEndian.Uint16(p[3:]))) * velQuantum,
		Aim: float64(binary.BigEndian.Uint16(p[5:])) / 65536 * 2 * math.Pi}
	if s := math.Hypot(in.VX, in.VY); s > RunSpeed {
		in.VX, in.VY = in.VX*RunSpeed/s, in.VY*RunSpeed/s
	}
	return in, nil
}

// Players plugs the arena game into a node's player gateway: it
// implements player.Controller. A joining player gets a bot avatar marked
// PlayerGoal at a waypoint drawn by popularity, steered by its inputs.
type Players struct {
	g *Game
}

var _ player.Controller = (*Players)(nil)

// Players returns the game's player controller.
func (g *Game) Players() *Players { return &Players{g: g} }

// Join spawns the player's avatar on n.
func (p *Players) Join(n *node.Node, _ player.PlayerID) (world.ObjectID, error) {
	g := p.g
	rng := n.Config().Rand
	wp := g.Map.DrawWaypoint(rng)
	obj, err := n.Spawn(n.Now(), g.Bot, func(st *world.State) {
		g.placeBot(st, wp, wp)
		st.SetInt(BotGoal, PlayerGoal)
	})
	if err != nil {
		return 0, err
	}
	return obj.State().ID(), nil
}

// Input applies one input to the avatar: its velocity, and a rocket if it
// fires, is alive and its launcher has reloaded.
func (p *Players) Input(n *node.Node, avatar world.ObjectID, b []byte) error {
	in, err := DecodeInput(b)
	if err != nil {
		return err
	}
	obj, primary, ok := n.Lookup(avatar)
	if !ok || !primary || obj.State().Schema() != p.g.Bot {
		return fmt.Errorf("%w: avatar %v is not a local bot primary", ErrInput, avatar)
	}
	st := obj.State()
	now := int64(n.Now() / Frame)
	dead := st.Int(BotMode) == ModeDead
	fire := in.Fire && !dead && now >= st.Int(BotUntil)
	if err := n.Write(avatar, func(s *world.State) {
		if dead {
			return
		}
		s.SetFloat(BotVX, in.VX)
		s.SetFloat(BotVY, in.VY)
		if fire {
			s.SetInt(BotUntil, now+framesOf(FireEvery))
		}
	}); err != nil {
		return err
	}
	if fire {
		x, y := st.Float(BotX), st.Float(BotY)
		vx, vy := MissileSpeed*math.Cos(in.Aim), MissileSpeed*math.Sin(in.Aim)
		if _, err := n.Spawn(n.Now(), p.g.Missile, func(m *world.State) {
			m.SetFloat(MissileX, x)
			m.SetFloat(MissileY, y)
			m.SetFloat(MissileVX, vx)
			m.SetFloat(MissileVY, vy)
			m.SetRef(MissileOwner, avatar)
			m.SetInt(MissileExpires, now+framesOf(MissileLife))
		}); err != nil {
			return err
		}
	}
	return nil
}

// Leave deletes the avatar.
func (p *Players) Leave(n *node.Node, avatar world.ObjectID) { _ = n.Delete(n.Now(), avatar) }

// thinkPlayer runs a player avatar's frame: death and respawn as for a bot,
// otherwise a move by its velocity that slides along walls, and pick-ups.
func (b *Bot) thinkPlayer(ctx world.Context) {
	st, g := b.st, b.g
	now := frameOf(ctx)
	if st.Int(BotMode) == ModeDead {
		if now >= st.Int(BotUntil) {
			wp := g.respawnPoint(st)
			g.placeBot(st, wp, wp)
			st.SetInt(BotGoal, PlayerGoal)
		}
		return
	}
	if st.Int(BotHealth) <= 0 {
		g.kill(st, now, ctx.Rand())
		return
	}
	dt := Frame.Seconds()
	x, y := st.Float(BotX), st.Float(BotY)
	dx, dy := st.Float(BotVX)*dt, st.Float(BotVY)*dt
	if dx == 0 && dy == 0 {
		return
	}
	m := g.Map
	ok := func(nx, ny float64) bool {
		return m.free(nx, ny, BotRadius) && m.Clear(x, y, nx, ny)
	}
	switch {
	case ok(x+dx, y+dy):
		x, y = x+dx, y+dy
	case dx != 0 && ok(x+dx, y):
		x += dx
	case dy != 0 && ok(x, y+dy):
		y += dy
	default:
		return
	}
	st.SetFloat(BotX, x)
	st.SetFloat(BotY, y)
	b.pickUp(ctx)
}

// PlayerBrain is a headless player of the arena game over the network
// (player.Brain): it walks between waypoints of the map chosen like the
// bot AI's goals, along shortest paths, and fires at the nearest live bot
// it sees within FightRange, every FireEvery, leading the target by its
// velocity. Build it from the same Config as the node's game: the map
// comes from the seed.
type PlayerBrain struct {
	g        *Game
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

var _ player.Brain = (*PlayerBrain)(nil)

// NewPlayerBrain returns a brain for game g drawing its choices from seed.
func NewPlayerBrain(g *Game, seed uint64) *PlayerBrain {
	return &PlayerBrain{g: g, rng: rand.New(rand.NewPCG(seed, 0x627261696e)), lastFire: -FireEvery}
}

// compatible reports whether the node's bot schema is this game's.
func (p *PlayerBrain) compatible(s *world.Schema) bool {
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
func (p *PlayerBrain) Input(w player.Welcome, v *player.View, now time.Duration) []byte {
	me, ok := v.Lookup(w.Avatar)
	if !ok || !p.compatible(me.Schema()) {
		return nil
	}
	if me.Int(BotMode) == ModeDead {
		p.path = p.path[:0]
		return AppendInput(p.buf[:0], Input{})
	}
	m := p.g.Map
	x, y := me.Float(BotX), me.Float(BotY)
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
	var in Input
	if len(p.path) > 0 {
		q := m.Waypoints[p.path[0]]
		dx, dy := q.X-x, q.Y-y
		d := math.Hypot(dx, dy)
		s := min(RunSpeed, d/Frame.Seconds())
		in.VX, in.VY = s*dx/d, s*dy/d
	}
	if now-p.lastFire >= FireEvery {
		var best *world.State
		bestD := p.g.cfg.FightRange
		for _, o := range v.Objects() {
			s := o.State
			if o.ID == w.Avatar || s.Schema().Name() != p.g.Bot.Name() || s.Int(BotMode) == ModeDead {
				continue
			}
			ox, oy := s.Float(BotX), s.Float(BotY)
			if d := math.Hypot(ox-x, oy-y); d < bestD && m.Visible(x, y, ox, oy) {
				best, bestD = s, d
			}
		}
		if best != nil {
			tof := bestD / MissileSpeed
			tx := best.Float(BotX) + best.Float(BotVX)*tof
			ty := best.Float(BotY) + best.Float(BotVY)*tof
			in.Fire, in.Aim = true, math.Atan2(ty-y, tx-x)+p.rng.NormFloat64()*AimError
			p.lastFire = now
		}
	}
	p.buf = AppendInput(p.buf[:0], in)
	return p.buf
}
