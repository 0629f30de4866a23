package arena

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/world"
)

// Quake III weapon and item values (see the package comment).
const (
	// MaxHealth is a bot's health at spawn.
	MaxHealth = 100
	// MissileSpeed is the rocket's speed: 900 units/s.
	MissileSpeed = 900.0 / UnitsPerMetre
	// MissileDamage is a rocket's direct-hit damage (100) and the most
	// its splash deals.
	MissileDamage = 100
	// SplashRadius is the rocket's splash radius: 120 units.
	SplashRadius = 120.0 / UnitsPerMetre
	// HitRadius is how close a rocket must pass to a bot's centre to hit
	// it directly: half the 32-unit player box.
	HitRadius = 0.5
	// MissileLife is how long a rocket flies before it expires (Quake
	// III: 15 s; the paper's missiles "exist only for a few seconds", and
	// on our maps a rocket meets a wall well within 3 s).
	MissileLife = 3 * time.Second
	// FireEvery is the rocket launcher's refire time: 800 ms.
	FireEvery = 800 * time.Millisecond
	// AimError is the standard deviation of a bot's aim (radians, about
	// 14°): most rockets miss, as in Quake.
	AimError = 0.25
	// RespawnDelay is how long a fragged bot stays dead.
	RespawnDelay = 2 * time.Second
	// HealthBonus is what a health item gives (Quake III's 25 health).
	HealthBonus = 25
	// pickupRadius is how close a bot must come to an item to take it.
	pickupRadius = 1.0
)

// Item kinds and their Quake III respawn times.
const (
	ItemHealth = iota
	ItemArmor
	ItemWeapon
	ItemAmmo
	numItemKinds
)

var itemRespawn = [numItemKinds]time.Duration{35 * time.Second, 25 * time.Second, 5 * time.Second, 40 * time.Second}

// Bot modes (field "mode").
const (
	ModeWalk   = 0 // following the path to its goal
	ModeLinger = 1 // standing at its goal until "until"
	ModeFight  = 2 // strafing along its edge towards "to", firing at "target"
	ModeDead   = 3 // fragged; respawns at "until" on waypoint "to", drawn at death
)

// Field indices of the bot schema. The fields that change every frame come
// first so that a delta's change mask fits in one byte (7 fields).
const (
	BotX      = iota // m, quantum 1/16
	BotY             // m, quantum 1/16
	BotVX            // m/s, quantum 1/8 (changes at turns)
	BotVY            // m/s
	BotMode          // ModeWalk, ...
	BotTo            // waypoint it walks towards (dead: where it will respawn)
	BotHealth        // 100 at spawn
	BotZ             // always 0: the arena is flat
	BotFrom          // waypoint it left (== To when standing on To)
	BotGoal          // destination waypoint
	BotUntil         // frame at which a linger, strafe or death ends
	BotTarget        // the opponent it fights
	BotDeaths        // times fragged
	BotHitBy         // owner of the last rocket that hurt it
)

// Field indices of the missile schema.
const (
	MissileX       = iota // m, quantum 1/16
	MissileY              // m
	MissileZ              // always 0
	MissileVX             // m/s, quantum 1/8 (constant)
	MissileVY             // m/s
	MissileOwner          // the shooter (AttachTo)
	MissileExpires        // frame at which it expires
)

// Field indices of the item schema.
const (
	ItemX        = iota // m, quantum 1/16
	ItemY               // m
	ItemZ               // always 0
	ItemKind            // ItemHealth, ...
	ItemTaken           // picked up, waiting to respawn
	ItemRespawn         // frame at which it respawns (0: not scheduled)
	ItemWaypoint        // the waypoint it stands on
)

const (
	posQuantum = 1.0 / 16
	velQuantum = 1.0 / 8
)

// Game is one model-workload game: its validated configuration, its map,
// its three schemas and their registry. Every node of a cluster builds the
// same Game from the same Config (New is deterministic).
type Game struct {
	cfg                Config
	Map                *Map
	Bot, Missile, Item *world.Schema
	reg                *world.Registry
	scanFrames         int64
	lingerFrames       int64
}

// Spawn is one object to create at the start of a game: a primary of
// Schema on node Node, initialised by Init.
type Spawn struct {
	Node   int
	Schema *world.Schema
	Init   func(*world.State)
}

// New validates cfg and builds its game: the map from cfg.Seed, the
// schemas and the registry.
func New(cfg Config) (*Game, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	w, h := Size(cfg.Map, cfg.Players())
	m, err := newMap(w, h, cfg.Zipf, cfg.TileZipf, rand.New(rand.NewPCG(cfg.Seed, 0x6d6170))) // "map"
	if err != nil {
		return nil, err
	}
	g := &Game{cfg: cfg, Map: m,
		scanFrames:   int64(cfg.ScanEvery / Frame),
		lingerFrames: int64(cfg.Linger / Frame)}
	pos := func(name string) world.Field { return world.Field{Name: name, Type: world.Float, Quantum: posQuantum} }
	vel := func(name string) world.Field { return world.Field{Name: name, Type: world.Float, Quantum: velQuantum} }
	integer := func(name string) world.Field { return world.Field{Name: name, Type: world.Int} }
	ref := func(name string) world.Field { return world.Field{Name: name, Type: world.Ref} }
	g.Bot = world.MustSchema("arena.bot", world.XYZ, []world.Field{
		pos("x"), pos("y"), vel("vx"), vel("vy"), integer("mode"), integer("to"), integer("health"),
		pos("z"), integer("from"), integer("goal"), integer("until"), ref("target"), integer("deaths"), ref("hitby"),
	}, func(st *world.State) world.Object { return &Bot{g: g, st: st} })
	g.Missile = world.MustSchema("arena.missile", world.XYZ, []world.Field{
		pos("x"), pos("y"), pos("z"), vel("vx"), vel("vy"), ref("owner"), integer("expires"),
	}, func(st *world.State) world.Object { return &Missile{g: g, st: st} })
	g.Item = world.MustSchema("arena.item", world.XYZ, []world.Field{
		pos("x"), pos("y"), pos("z"), integer("kind"), {Name: "taken", Type: world.Bool}, integer("respawn"), integer("waypoint"),
	}, func(st *world.State) world.Object { return &Item{g: g, st: st} })
	if g.reg, err = world.NewRegistry(world.XYZ, g.Bot, g.Missile, g.Item); err != nil {
		return nil, fmt.Errorf("arena: %w", err)
	}
	return g, nil
}

// Config returns the game's validated configuration.
func (g *Game) Config() Config { return g.cfg }

// Registry returns the registry of the game's schemas (bot, missile, item,
// kinds 1, 2, 3), over world.XYZ.
func (g *Game) Registry() *world.Registry { return g.reg }

// Spawns returns the objects that start the game, deterministic from the
// seed: PlayersPerNode bots per node (bot k on node k/PlayersPerNode), at
// waypoints drawn by popularity, then round(ItemsPerPlayer × players) items
// dealt round-robin over the nodes.
func (g *Game) Spawns() []Spawn {
	rng := rand.New(rand.NewPCG(g.cfg.Seed, 0x7370776e)) // "spwn"
	var out []Spawn
	for k := range g.cfg.Players() {
		wp := g.Map.DrawWaypoint(rng)
		goal := g.Map.ChooseGoal(wp, rng)
		out = append(out, Spawn{Node: k / g.cfg.PlayersPerNode, Schema: g.Bot, Init: func(st *world.State) {
			g.placeBot(st, wp, goal)
		}})
	}
	nItems := int(math.Round(g.cfg.ItemsPerPlayer * float64(g.cfg.Players())))
	for k := range nItems {
		wp := g.Map.DrawWaypoint(rng)
		kind := rng.IntN(numItemKinds)
		out = append(out, Spawn{Node: k % g.cfg.Nodes, Schema: g.Item, Init: func(st *world.State) {
			p := g.Map.Waypoints[wp]
			st.SetFloat(ItemX, p.X)
			st.SetFloat(ItemY, p.Y)
			st.SetInt(ItemKind, int64(kind))
			st.SetInt(ItemWaypoint, int64(wp))
		}})
	}
	return out
}

// placeBot (re)spawns a bot standing on waypoint wp, heading for goal.
func (g *Game) placeBot(st *world.State, wp, goal int) {
	p := g.Map.Waypoints[wp]
	st.SetFloat(BotX, p.X)
	st.SetFloat(BotY, p.Y)
	st.SetFloat(BotVX, 0)
	st.SetFloat(BotVY, 0)
	st.SetInt(BotMode, ModeWalk)
	st.SetInt(BotFrom, int64(wp))
	st.SetInt(BotTo, int64(wp))
	st.SetInt(BotGoal, int64(goal))
	st.SetInt(BotHealth, MaxHealth)
	st.SetInt(BotUntil, 0)
	st.SetRef(BotTarget, 0)
}

// frame returns the frame number of a context's time.
func frameOf(ctx world.Context) int64 { return int64(ctx.Now() / Frame) }

func framesOf(d time.Duration) int64 { return int64((d + Frame - 1) / Frame) }

// Bot is a player avatar driven by the model's mobility and fight logic.
// It implements world.Object and world.Mover.
type Bot struct {
	g  *Game
	st *world.State
	// path caches the waypoints after pathAt on the way to pathGoal; it is
	// a cache only (rebuilt from the State when it does not match), so a
	// primary rebuilt from its State behaves identically.
	path             []int32
	pathAt, pathGoal int64
	scanner          *botScan // scan's and pickUp's scratch, made at the first
}

// State returns the bot's state.
func (b *Bot) State() *world.State { return b.st }

// Velocity returns the bot's velocity (m/s).
func (b *Bot) Velocity() world.Point {
	return world.Point{b.st.Float(BotVX), b.st.Float(BotVY), 0}
}

// Interest appends the box of half-width Config.Interest around the bot
// (unbounded in z).
func (b *Bot) Interest(dst []world.Box) []world.Box {
	h := b.g.cfg.Interest
	return append(dst, world.BoxAround(b.st.Location(), world.Point{h, h, math.Inf(1)}))
}

// Anticipate implements world.Anticipator: a dead bot will need, when it
// respawns, the interest box around the waypoint it respawns on (drawn at
// its death, RespawnDelay ahead), so its node replicates what is there
// before the teleport instead of after it.
func (b *Bot) Anticipate(dst []world.Box) []world.Box {
	if b.st.Int(BotMode) != ModeDead {
		return dst
	}
	wp := b.st.Int(BotTo)
	if wp < 0 || wp >= int64(len(b.g.Map.Waypoints)) {
		return dst
	}
	h, p := b.g.cfg.Interest, b.g.Map.Waypoints[wp]
	return append(dst, world.BoxAround(world.Point{p.X, p.Y, b.st.Float(BotZ)}, world.Point{h, h, math.Inf(1)}))
}

// kill makes st dead for RespawnDelay and draws the waypoint it will
// respawn on (kept in BotTo, so that its interest can cover it).
func (g *Game) kill(st *world.State, now int64, rng *rand.Rand) {
	st.SetInt(BotMode, ModeDead)
	st.SetInt(BotDeaths, st.Int(BotDeaths)+1)
	st.SetInt(BotUntil, now+framesOf(RespawnDelay))
	st.SetFloat(BotVX, 0)
	st.SetFloat(BotVY, 0)
	st.SetRef(BotTarget, 0)
	st.SetInt(BotTo, int64(g.Map.DrawWaypoint(rng)))
}

// respawnPoint returns the waypoint a dead bot respawns on: the one drawn
// at its death (waypoint 0 if a replica's write left it out of range).
func (g *Game) respawnPoint(st *world.State) int {
	if wp := st.Int(BotTo); wp >= 0 && wp < int64(len(g.Map.Waypoints)) {
		return int(wp)
	}
	return 0
}

// Think runs one frame: death and respawn, a scan for opponents every
// ScanEvery (staggered by ID), firing, and moving.
func (b *Bot) Think(ctx world.Context) {
	if b.st.Int(BotGoal) == PlayerGoal { // steered by a player (player.go)
		b.thinkPlayer(ctx)
		return
	}
	st, g := b.st, b.g
	now := frameOf(ctx)
	rng := ctx.Rand()
	if st.Int(BotMode) == ModeDead {
		if now >= st.Int(BotUntil) {
			wp := g.respawnPoint(st)
			g.placeBot(st, wp, g.Map.ChooseGoal(wp, rng))
		}
		return
	}
	if st.Int(BotHealth) <= 0 {
		g.kill(st, now, rng)
		return
	}
	if (now+int64(st.ID().Seq()))%g.scanFrames == 0 {
		b.scan(ctx, now, rng)
	}
	if st.Int(BotMode) == ModeFight && (now+int64(st.ID().Seq()))%framesOf(FireEvery) == 0 {
		b.fire(ctx, now, rng)
	}
	switch st.Int(BotMode) {
	case ModeLinger:
		if now < st.Int(BotUntil) {
			return
		}
		st.SetInt(BotMode, ModeWalk)
		fallthrough
	case ModeWalk:
		b.walk(ctx, now, rng)
	case ModeFight:
		b.strafe(now, rng)
	}
}

// opponent returns the fight-worthy state of obj: a live bot other than b
// within FightRange and in sight.
func (b *Bot) opponent(obj world.Object) (*world.State, bool) {
	// Only a *Bot has the bot schema (Schema.NewObject builds every object):
	// the interface's type rejects rockets and items without reading them.
	ob, isBot := obj.(*Bot)
	if !isBot {
		return nil, false
	}
	o := ob.st
	if o.Schema() != b.g.Bot || o.ID() == b.st.ID() || o.Int(BotMode) == ModeDead || o.Int(BotHealth) <= 0 {
		return nil, false
	}
	x, y := b.st.Float(BotX), b.st.Float(BotY)
	ox, oy := o.Float(BotX), o.Float(BotY)
	if math.Hypot(ox-x, oy-y) > b.g.cfg.FightRange || !b.g.Map.Visible(x, y, ox, oy) {
		return nil, false
	}
	return o, true
}

// scan keeps or drops the current fight, or looks for an opponent.
func (b *Bot) scan(ctx world.Context, now int64, rng *rand.Rand) {
	st := b.st
	if st.Int(BotMode) == ModeFight {
		obj, _, ok := ctx.Lookup(st.Ref(BotTarget))
		if ok {
			_, ok = b.opponent(obj)
		}
		if !ok || rng.Float64() < b.g.cfg.PDisengage {
			st.SetInt(BotMode, ModeWalk)
			st.SetRef(BotTarget, 0)
		}
		return
	}
	r := b.g.cfg.FightRange
	sc := b.scan0()
	sc.x, sc.y, sc.best, sc.bestD = st.Float(BotX), st.Float(BotY), 0, math.Inf(1)
	ctx.Each(world.BoxAround(st.Location(), world.Point{r, r, math.Inf(1)}), sc.fn)
	if best := sc.best; best != 0 && rng.Float64() < b.g.cfg.PEngage {
		st.SetInt(BotMode, ModeFight)
		st.SetRef(BotTarget, best)
		st.SetInt(BotUntil, now+4+rng.Int64N(9))
	}
}

// botScan is a bot's search for the nearest opponent (scan) and for items
// to pick up (pickUp), kept with the bot with their Each callbacks: a
// closure made at every call would be allocated on the heap (Each is an
// interface method), every frame of every bot.
type botScan struct {
	b      *Bot
	fn     func(world.Object, bool) bool // visit, bound once
	pickFn func(world.Object, bool) bool // pick, bound once
	x, y   float64
	best   world.ObjectID
	bestD  float64
	ctx    world.Context // pickUp's, during the call
}

// scan0 returns the bot's scratch for its Each calls, made at the first.
func (b *Bot) scan0() *botScan {
	if b.scanner == nil {
		sc := &botScan{b: b}
		sc.fn, sc.pickFn = sc.visit, sc.pick
		b.scanner = sc
	}
	return b.scanner
}

func (sc *botScan) visit(obj world.Object, _ bool) bool {
	if o, ok := sc.b.opponent(obj); ok {
		if d := math.Hypot(o.Float(BotX)-sc.x, o.Float(BotY)-sc.y); d < sc.bestD {
			sc.best, sc.bestD = o.ID(), d
		}
	}
	return true
}

// fire launches a rocket at the target's predicted position, with aim
// error.
func (b *Bot) fire(ctx world.Context, now int64, rng *rand.Rand) {
	st := b.st
	obj, _, ok := ctx.Lookup(st.Ref(BotTarget))
	if !ok {
		return
	}
	o, ok := b.opponent(obj)
	if !ok {
		return
	}
	x, y := st.Float(BotX), st.Float(BotY)
	tx, ty := o.Float(BotX), o.Float(BotY)
	tof := math.Hypot(tx-x, ty-y) / MissileSpeed
	tx += o.Float(BotVX) * tof
	ty += o.Float(BotVY) * tof
	a := math.Atan2(ty-y, tx-x) + rng.NormFloat64()*AimError
	vx, vy := MissileSpeed*math.Cos(a), MissileSpeed*math.Sin(a)
	owner := st.ID()
	_, _ = ctx.Create(b.g.Missile, func(m *world.State) {
		m.SetFloat(MissileX, x)
		m.SetFloat(MissileY, y)
		m.SetFloat(MissileVX, vx)
		m.SetFloat(MissileVY, vy)
		m.SetRef(MissileOwner, owner)
		m.SetInt(MissileExpires, now+framesOf(MissileLife))
	})
}

// nextHop returns the waypoint after cur on the way to goal.
func (b *Bot) nextHop(cur, goal int64) int64 {
	if cur == goal {
		return int64(b.g.Map.Neighbours(int(cur))[0])
	}
	if b.pathGoal != goal || b.pathAt != cur || len(b.path) == 0 {
		b.path = b.g.Map.Path(b.path[:0], int(cur), int(goal))
		b.pathAt, b.pathGoal = cur, goal
	}
	next := int64(b.path[0])
	b.path = b.path[1:]
	b.pathAt = next
	return next
}

// setHeading sets the velocity to RunSpeed along from→to (0 if they are
// the same waypoint).
func (b *Bot) setHeading(from, to int64) {
	p, q := b.g.Map.Waypoints[from], b.g.Map.Waypoints[to]
	dx, dy := q.X-p.X, q.Y-p.Y
	d := math.Hypot(dx, dy)
	if d == 0 {
		b.st.SetFloat(BotVX, 0)
		b.st.SetFloat(BotVY, 0)
		return
	}
	b.st.SetFloat(BotVX, RunSpeed*dx/d)
	b.st.SetFloat(BotVY, RunSpeed*dy/d)
}

// walk moves the bot RunSpeed × Frame along its path, through waypoints,
// picking up items on the waypoints it reaches and lingering at its goal.
func (b *Bot) walk(ctx world.Context, now int64, rng *rand.Rand) {
	st, m := b.st, b.g.Map
	budget := RunSpeed * Frame.Seconds()
	for range 8 {
		from, to := st.Int(BotFrom), st.Int(BotTo)
		if from == to { // standing on a waypoint
			goal := st.Int(BotGoal)
			if to == goal {
				goal = int64(m.ChooseGoal(int(to), rng))
				st.SetInt(BotGoal, goal)
				if rng.Float64() < b.g.cfg.PLinger && b.g.lingerFrames > 0 {
					st.SetInt(BotMode, ModeLinger)
					st.SetInt(BotUntil, now+1+rng.Int64N(b.g.lingerFrames))
					st.SetFloat(BotVX, 0)
					st.SetFloat(BotVY, 0)
					return
				}
			}
			to = b.nextHop(to, goal)
			st.SetInt(BotTo, to)
			b.setHeading(from, to)
		}
		if budget <= 0 {
			return
		}
		rest, reached := b.advance(from, to, budget)
		if !reached {
			return
		}
		st.SetInt(BotFrom, to)
		budget = rest
		b.pickUp(ctx)
	}
}

// advance moves the bot step metres along the edge from→to, from the
// projection of its position on the edge (so that rounding to the position
// quantum never accumulates off the edge). It reports whether it reached
// "to" and the distance left over.
func (b *Bot) advance(from, to int64, step float64) (rest float64, reached bool) {
	st, m := b.st, b.g.Map
	p, q := m.Waypoints[from], m.Waypoints[to]
	t, _ := closest(p.X, p.Y, q.X, q.Y, st.Float(BotX), st.Float(BotY))
	length := math.Hypot(q.X-p.X, q.Y-p.Y)
	left := (1 - t) * length
	if left > step {
		t += step / length
		st.SetFloat(BotX, p.X+(q.X-p.X)*t)
		st.SetFloat(BotY, p.Y+(q.Y-p.Y)*t)
		return 0, false
	}
	st.SetFloat(BotX, q.X)
	st.SetFloat(BotY, q.Y)
	return step - left, true
}

// strafe moves the bot along its current edge, towards "to", reversing at
// the edge's ends and when "until" passes.
func (b *Bot) strafe(now int64, rng *rand.Rand) {
	st := b.st
	from, to := st.Int(BotFrom), st.Int(BotTo)
	if from == to { // on a waypoint: strafe along the edge to the next hop
		to = b.nextHop(to, st.Int(BotGoal))
		if to == from {
			return
		}
		st.SetInt(BotTo, to)
	}
	if now >= st.Int(BotUntil) {
		from, to = to, from
		st.SetInt(BotFrom, from)
		st.SetInt(BotTo, to)
		st.SetInt(BotUntil, now+4+rng.Int64N(9))
		b.path = b.path[:0] // the path cache no longer starts at "to"
	}
	b.setHeading(from, to)
	if _, reached := b.advance(from, to, RunSpeed*Frame.Seconds()); !reached {
		return
	}
	// Reached the end of the edge: turn back along it.
	st.SetInt(BotFrom, to)
	st.SetInt(BotTo, from)
	b.path = b.path[:0]
	b.setHeading(to, from)
}

// pickUp takes the items lying where the bot stands (a tentative write on
// an item whose primary is elsewhere); health items heal it.
func (b *Bot) pickUp(ctx world.Context) {
	st := b.st
	sc := b.scan0()
	sc.ctx = ctx
	ctx.Each(world.BoxAround(st.Location(), world.Point{pickupRadius, pickupRadius, math.Inf(1)}), sc.pickFn)
	sc.ctx = nil
}

// pick is pickUp's Each callback.
func (sc *botScan) pick(obj world.Object, _ bool) bool {
	ob, isItem := obj.(*Item) // only an *Item has the item schema (see opponent)
	if !isItem {
		return true
	}
	it, st := ob.st, sc.b.st
	if it.Schema() != sc.b.g.Item || it.Bool(ItemTaken) {
		return true
	}
	if sc.ctx.Write(it.ID(), takeItem) == nil && it.Int(ItemKind) == ItemHealth {
		st.SetInt(BotHealth, min(MaxHealth, st.Int(BotHealth)+HealthBonus))
	}
	return true
}

// takeItem marks an item taken (pickUp's write).
func takeItem(s *world.State) { s.SetBool(ItemTaken, true) }

// Missile is a rocket: it flies straight, hits the first bot (other than
// its shooter) it passes within HitRadius of, explodes on walls, splashes
// bots within SplashRadius, and expires after MissileLife. It implements
// world.Object, world.Attacher (to its shooter) and world.Mover.
type Missile struct {
	g       *Game
	st      *world.State
	scanner *missileScan // Think's and explode's scratch, made at the first Think
}

// State returns the missile's state.
func (m *Missile) State() *world.State { return m.st }

// AttachTo returns the shooter: the missile is replicated wherever its
// shooter is.
func (m *Missile) AttachTo() world.ObjectID { return m.st.Ref(MissileOwner) }

// Velocity returns the missile's velocity (m/s).
func (m *Missile) Velocity() world.Point {
	return world.Point{m.st.Float(MissileVX), m.st.Float(MissileVY), 0}
}

// Interest appends the box the missile can reach or splash next frame.
func (m *Missile) Interest(dst []world.Box) []world.Box {
	r := MissileSpeed*Frame.Seconds() + SplashRadius
	return append(dst, world.BoxAround(m.st.Location(), world.Point{r, r, math.Inf(1)}))
}

// Think moves the missile one frame, or makes it hit, explode or expire
// (deleting it).
func (m *Missile) Think(ctx world.Context) {
	st, g := m.st, m.g
	if frameOf(ctx) >= st.Int(MissileExpires) {
		_ = ctx.Delete(st.ID())
		return
	}
	x, y := st.Float(MissileX), st.Float(MissileY)
	dt := Frame.Seconds()
	nx, ny := x+st.Float(MissileVX)*dt, y+st.Float(MissileVY)*dt
	owner := st.Ref(MissileOwner)
	// The first bot whose centre the segment passes within HitRadius of.
	sc := m.scan0()
	sc.owner, sc.x, sc.y, sc.nx, sc.ny, sc.hit, sc.hitT = owner, x, y, nx, ny, 0, math.Inf(1)
	box := world.Box{Min: world.Point{min(x, nx) - HitRadius, min(y, ny) - HitRadius, math.Inf(-1)},
		Max: world.Point{max(x, nx) + HitRadius, max(y, ny) + HitRadius, math.Inf(1)}}
	ctx.Each(box, sc.fn)
	hit, hitT := sc.hit, sc.hitT
	switch {
	case hit != 0 && g.Map.Visible(x, y, x+(nx-x)*hitT, y+(ny-y)*hitT):
		ex, ey := x+(nx-x)*hitT, y+(ny-y)*hitT
		m.damage(ctx, hit, MissileDamage)
		m.explode(ctx, ex, ey, hit)
	case !g.Map.Inside(nx, ny) || !g.Map.Visible(x, y, nx, ny):
		m.explode(ctx, x, y, 0)
	default:
		st.SetFloat(MissileX, nx)
		st.SetFloat(MissileY, ny)
		return
	}
	_ = ctx.Delete(st.ID())
}

// missileScan is a missile's search for the bot it hits this frame (Think)
// and for the bots its explosion splashes (explode), kept with the missile
// with its Each callback: a closure made at every call would be allocated
// on the heap (Each is an interface method), every frame of every missile.
type missileScan struct {
	g            *Game
	fn           func(world.Object, bool) bool // visit, bound once
	splash       bool                          // explode's scan, not Think's
	owner        world.ObjectID
	x, y, nx, ny float64
	hit          world.ObjectID
	hitT         float64
	direct       world.ObjectID // explode: the bot hit directly
	hurt         []world.ObjectID
	dmg          []int64
}

// scan0 returns the missile's scratch for its Each calls, made at the first.
func (m *Missile) scan0() *missileScan {
	if m.scanner == nil {
		sc := &missileScan{g: m.g}
		sc.fn = sc.visit
		m.scanner = sc
	}
	return m.scanner
}

func (sc *missileScan) visit(obj world.Object, _ bool) bool {
	ob, isBot := obj.(*Bot) // only a *Bot has the bot schema (see opponent)
	if !isBot {
		return true
	}
	if sc.splash {
		return sc.splashVisit(ob)
	}
	o := ob.st
	if o.Schema() != sc.g.Bot || o.ID() == sc.owner || o.Int(BotMode) == ModeDead {
		return true
	}
	t, d := closest(sc.x, sc.y, sc.nx, sc.ny, o.Float(BotX), o.Float(BotY))
	if d <= HitRadius && t < sc.hitT {
		sc.hit, sc.hitT = o.ID(), t
	}
	return true
}

// closest returns the parameter t in [0,1] of the point of segment
// (x0,y0)-(x1,y1) closest to (px,py), and the distance to it.
func closest(x0, y0, x1, y1, px, py float64) (t, d float64) {
	dx, dy := x1-x0, y1-y0
	if l2 := dx*dx + dy*dy; l2 > 0 {
		t = min(1, max(0, ((px-x0)*dx+(py-y0)*dy)/l2))
	}
	return t, math.Hypot(x0+t*dx-px, y0+t*dy-py)
}

// explode deals splash damage, falling off linearly with distance, to the
// bots within SplashRadius of (x, y) and in sight of it, except the shooter
// (no self-damage) and the bot hit directly.
func (m *Missile) explode(ctx world.Context, x, y float64, direct world.ObjectID) {
	sc := m.scan0()
	sc.splash, sc.owner, sc.x, sc.y, sc.direct = true, m.st.Ref(MissileOwner), x, y, direct
	sc.hurt, sc.dmg = sc.hurt[:0], sc.dmg[:0]
	ctx.Each(world.BoxAround(world.Point{x, y}, world.Point{SplashRadius, SplashRadius, math.Inf(1)}), sc.fn)
	sc.splash = false
	for i, id := range sc.hurt { // not inside Each: writes may change the index
		m.damage(ctx, id, sc.dmg[i])
	}
}

// splashVisit is explode's Each callback, for a bot.
func (sc *missileScan) splashVisit(ob *Bot) bool {
	o := ob.st
	if o.Schema() != sc.g.Bot || o.ID() == sc.owner || o.ID() == sc.direct || o.Int(BotMode) == ModeDead {
		return true
	}
	x, y := sc.x, sc.y
	ox, oy := o.Float(BotX), o.Float(BotY)
	d := math.Hypot(ox-x, oy-y)
	if d < SplashRadius && sc.g.Map.Visible(x, y, ox, oy) {
		if n := int64(MissileDamage * (1 - d/SplashRadius)); n > 0 {
			sc.hurt, sc.dmg = append(sc.hurt, o.ID()), append(sc.dmg, n)
		}
	}
	return true
}

// damage takes n health from bot id by a write to it: a tentative write
// forwarded to its primary when the bot is a replica here.
func (m *Missile) damage(ctx world.Context, id world.ObjectID, n int64) {
	owner := m.st.Ref(MissileOwner)
	_ = ctx.Write(id, func(s *world.State) {
		s.SetInt(BotHealth, s.Int(BotHealth)-n)
		s.SetRef(BotHitBy, owner)
	})
}

// Item is a pick-up standing on a waypoint. A bot takes it (a write
// setting "taken"); its primary schedules the respawn, and on respawn it
// moves to another waypoint with probability PRelocate. It implements
// world.Object; it reads nothing, so its interest is empty.
type Item struct {
	g  *Game
	st *world.State
}

// State returns the item's state.
func (it *Item) State() *world.State { return it.st }

// Interest appends nothing: an item reads no other object.
func (it *Item) Interest(dst []world.Box) []world.Box { return dst }

// Think schedules and performs the item's respawn.
func (it *Item) Think(ctx world.Context) {
	st := it.st
	if !st.Bool(ItemTaken) {
		return
	}
	now := frameOf(ctx)
	switch r := st.Int(ItemRespawn); {
	case r == 0:
		kind := min(max(st.Int(ItemKind), 0), numItemKinds-1)
		st.SetInt(ItemRespawn, now+framesOf(itemRespawn[kind]))
	case now >= r:
		st.SetBool(ItemTaken, false)
		st.SetInt(ItemRespawn, 0)
		rng := ctx.Rand()
		if rng.Float64() < it.g.cfg.PRelocate {
			wp := it.g.Map.ChooseGoal(int(min(max(st.Int(ItemWaypoint), 0), int64(len(it.g.Map.Waypoints)-1))), rng)
			p := it.g.Map.Waypoints[wp]
			st.SetFloat(ItemX, p.X)
			st.SetFloat(ItemY, p.Y)
			st.SetInt(ItemWaypoint, int64(wp))
		}
	}
}
