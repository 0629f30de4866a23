package arena

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/overworld/overworld/world"
)

// PlayerGoal in a bot's "goal" field marks an avatar controlled by a
// player's inputs (PlacePlayer, SteerPlayer) instead of by the bot AI:
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

// PlacePlayer initialises st as a player avatar standing on waypoint wp:
// a bot at rest, at full health, marked PlayerGoal. A driver that admits a
// player draws wp by popularity (Map.DrawWaypoint) and spawns a Bot with
// this initialisation; the avatar respawns the same way.
func (g *Game) PlacePlayer(st *world.State, wp int) {
	g.placeBot(st, wp, wp)
	st.SetInt(BotGoal, PlayerGoal)
}

// SteerPlayer applies one input to player avatar st (its primary's state,
// at frame now): unless the avatar is dead, it takes the input's velocity,
// and if the input fires and the launcher has reloaded (FireEvery since the
// last shot) it fires: the launcher reloads and SteerPlayer returns the
// initialisation of the rocket to create (a Missile leaving the avatar's
// position in direction in.Aim). Otherwise it returns nil.
func (g *Game) SteerPlayer(st *world.State, in Input, now int64) (rocket func(*world.State)) {
	if st.Int(BotMode) == ModeDead {
		return nil
	}
	fire := in.Fire && now >= st.Int(BotUntil)
	st.SetFloat(BotVX, in.VX)
	st.SetFloat(BotVY, in.VY)
	if !fire {
		return nil
	}
	st.SetInt(BotUntil, now+framesOf(FireEvery))
	x, y, owner := st.Float(BotX), st.Float(BotY), st.ID()
	vx, vy := MissileSpeed*math.Cos(in.Aim), MissileSpeed*math.Sin(in.Aim)
	return func(m *world.State) {
		m.SetFloat(MissileX, x)
		m.SetFloat(MissileY, y)
		m.SetFloat(MissileVX, vx)
		m.SetFloat(MissileVY, vy)
		m.SetRef(MissileOwner, owner)
		m.SetInt(MissileExpires, now+framesOf(MissileLife))
	}
}

// thinkPlayer runs a player avatar's frame: death and respawn as for a bot,
// otherwise a move by its velocity that slides along walls, and pick-ups.
func (b *Bot) thinkPlayer(ctx world.Context) {
	st, g := b.st, b.g
	now := frameOf(ctx)
	if st.Int(BotMode) == ModeDead {
		if now >= st.Int(BotUntil) {
			g.PlacePlayer(st, g.respawnPoint(st))
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
