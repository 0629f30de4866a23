package harness

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/place/mcf"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// The control plane in the simulated world. With a PlacementConfig whose
// Mode is PlaceCMA, a run's players are real-world players (GeoNames
// cities drawn by population, their RTT to each node's WonderNetwork
// city modelled by geo.Population), and package control decides which
// node each plays on: every player joins through the plane, which admits
// it to the node CMA picks, and the world follows the plane's decisions —
// a player moved by the plane has its avatar's primary migrated to the
// new node (node.Migrate: its state, writers' progress and replica
// holders move, and it thinks there from its first frame),
// make-before-break: the avatar's node first tells the new node what the
// avatar sees (node.Expect), and the avatar migrates once the new node
// had Lead to fetch it. Each
// region of the world's grid holds its objects (the game's spawned
// objects that are not avatars) on the region's core node, which the
// plane moves toward the region's players (MigrateRegion, carried out by
// migrating those objects). PlaceStatic admits each player to the node
// with the least RTT that has a free seat and never moves it.
//
// Churn replaces the player behind an avatar: the game keeps its avatars
// (the model game's bots), and a leaving player's avatar is taken over by
// a newly arrived one from another city — a Leave and a Join for the
// plane, and the new player's avatar migrates to the node it is admitted
// to. Both placements see the same players and the same churn in a run:
// whichever the world follows, the other is kept beside it (the plane's
// assignment, or the static one), so that the report compares them on the
// same events. The plane runs at node 1's site: its decisions reach a node
// after the emulated delay from there.
//
// Pings are modelled as lab/placement models them: a joining client pings
// the first JoinProbes nodes (the least of 3 pings, each the true RTT
// plus an exponential queueing delay of mean Jitter × RTT), then the
// nodes the plane names (Admit and Probe decisions, and the node a player
// is put on) ProbeDelay later.

// PlacementMode chooses how a world's players are put on its nodes.
type PlacementMode string

// The placement modes.
const (
	// PlaceNone is the game's own split (the model game: bot k on node
	// k/PlayersPerNode): each player node hosts its own players, as in
	// a peer-to-peer game where every player's machine is a node.
	PlaceNone PlacementMode = "none"
	// PlaceStatic admits each player to the node with the least RTT that
	// has a free seat, and never moves it.
	PlaceStatic PlacementMode = "static"
	// PlaceCMA runs the control plane (package control): CMA on every
	// join and leave, moves, and regions relocated toward their players.
	PlaceCMA PlacementMode = "cma"
)

// ParsePlacementMode returns the mode named s (none, static, cma).
func ParsePlacementMode(s string) (PlacementMode, error) {
	switch m := PlacementMode(s); m {
	case PlaceNone, PlaceStatic, PlaceCMA:
		return m, nil
	}
	return "", fmt.Errorf("%w: placement %q: want none, static or cma", lab.ErrConfig, s)
}

// RegionPolicies lists the activation policies PlacementConfig.Policy
// names (control.PolicyNamed).
var RegionPolicies = control.PolicyNames

// regionPolicy returns the control.Policy named s.
func regionPolicy(s string) (control.Policy, error) {
	p, err := control.PolicyNamed(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	return p, nil
}

// PlacementConfig configures the placement of a world's players
// (ArenaConfig.Placement). The zero value is PlaceNone.
type PlacementConfig struct {
	// Mode is the placement; "" is PlaceNone.
	Mode PlacementMode
	// Headroom is the seats of each node over its share of the players:
	// each node seats ⌈PlayersPerNode × Headroom⌉ (default 1.25).
	Headroom float64
	// Session is the mean time a player stays (exponential) before
	// another takes its avatar over (default 2 min; negative: no churn).
	Session time.Duration
	// Cols and Rows divide the map into regions (default 2 × 2; both 0
	// with NoRegions: no regions, the spawned objects stay where the game
	// puts them).
	Cols, Rows int
	NoRegions  bool
	// Policy names the regions' activation policy (RegionPolicies;
	// default periodic: every 10 s).
	Policy string
	// MigrationCost is the plane's (ms summed over a region's players;
	// default control's, 1,000).
	MigrationCost float64
	// Tick is the interval of the plane's ticks, of the players' position
	// reports and of the measures (default 1 s).
	Tick time.Duration
	// Lead is how long the node a player is handed to fetches what the
	// player's avatar sees (node.Expect) before the avatar migrates
	// there, after hearing of the handoff from the avatar's node (default
	// 600 ms; negative: the avatar migrates at once).
	Lead time.Duration
	// JoinProbes, ProbeDelay and Jitter model the clients' pings
	// (defaults 4, 2 s, 0.05).
	JoinProbes int
	ProbeDelay time.Duration
	Jitter     float64
}

// validate returns a copy with the defaults filled in.
func (p PlacementConfig) validate(c ArenaConfig) (PlacementConfig, error) {
	if p.Mode == "" {
		p.Mode = PlaceNone
	}
	if _, err := ParsePlacementMode(string(p.Mode)); err != nil {
		return p, err
	}
	if p.Mode == PlaceNone {
		return p, nil
	}
	bad := func(format string, args ...any) (PlacementConfig, error) {
		return p, fmt.Errorf("%w: placement: %s", lab.ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.Data != SitesWonder {
		return bad("players are placed on WonderNetwork cities (the world demo), not on %q", c.Data)
	}
	if c.Arch == discovery.ClientServer {
		return bad("%s places players on the nodes that hold their avatars, and the client-server architecture's central server holds them all", p.Mode)
	}
	if c.PlayersPerNode < 2 {
		return bad("%s needs game servers: %d player per node is a peer-to-peer game, each player its own node (want --players-per-node 2 or more, or placement none)", p.Mode, c.PlayersPerNode)
	}
	if p.Headroom == 0 {
		p.Headroom = 1.25
	}
	if p.Session == 0 {
		p.Session = 2 * time.Minute
	}
	if !p.NoRegions && p.Cols == 0 && p.Rows == 0 {
		p.Cols, p.Rows = 2, 2
	}
	if p.Policy == "" {
		p.Policy = "periodic"
	}
	if p.Tick == 0 {
		p.Tick = time.Second
	}
	if p.Lead == 0 {
		p.Lead = 600 * time.Millisecond
	}
	if p.JoinProbes == 0 {
		p.JoinProbes = 4
	}
	if p.ProbeDelay == 0 {
		p.ProbeDelay = 2 * time.Second
	}
	if p.Jitter == 0 {
		p.Jitter = 0.05
	}
	switch {
	case !(p.Headroom >= 1 && p.Headroom <= 10):
		return bad("headroom %v: want 1 to 10 (seats per node over its share of the players)", p.Headroom)
	case p.Session > 0 && p.Session < time.Second:
		return bad("session %v: want at least 1s (or negative: no churn)", p.Session)
	case p.NoRegions && (p.Cols != 0 || p.Rows != 0):
		return bad("no regions, but a %d × %d grid", p.Cols, p.Rows)
	case !p.NoRegions && (p.Cols < 1 || p.Rows < 1 || p.Cols*p.Rows > 64):
		return bad("region grid %d × %d: want 1 to 64 regions", p.Cols, p.Rows)
	case p.MigrationCost < 0 || math.IsNaN(p.MigrationCost) || math.IsInf(p.MigrationCost, 0):
		return bad("migration cost %v: want finite and ≥ 0", p.MigrationCost)
	case p.Tick < 100*time.Millisecond || p.Tick > time.Minute:
		return bad("tick %v: want 100ms to 1m", p.Tick)
	case p.Lead > 10*time.Second:
		return bad("lead %v: want at most 10s", p.Lead)
	case p.JoinProbes < 1:
		return bad("join probes %d: want at least 1", p.JoinProbes)
	case p.ProbeDelay < 0 || p.ProbeDelay > time.Minute:
		return bad("probe delay %v: want 0 to 1m", p.ProbeDelay)
	case !(p.Jitter >= 0 && p.Jitter <= 1):
		return bad("ping jitter %v: want 0 to 1", p.Jitter)
	}
	if _, err := regionPolicy(p.Policy); err != nil {
		return p, err
	}
	return p, nil
}

// PlacementReport is what the placement of a run's players measured.
type PlacementReport struct {
	Mode PlacementMode
	// Capacity is each node's seats; Players the avatars (players online
	// at every moment).
	Capacity, Players int
	// World is the RTT (ms) of every player to the node holding its
	// avatar's primary, sampled every Tick over the whole run: where the
	// players actually played. Plane is the control plane's assignment
	// and Static static admission's, on the same players; Optimum the
	// exact optimum for the players online, at the first Tick and every
	// tenth after it.
	World, Plane, Static RTTStats
	Optimum              float64
	// WorstGap is the most the plane's mean RTT exceeded the optimum's,
	// over the snapshots, as a share.
	WorstGap float64
	// Replacements counts players that left and were replaced (churn);
	// Moves the plane's Move and Readmit decisions; Handoffs the avatar
	// migrations the world completed for them (and for replacements),
	// HandoffRetries the attempts that found the avatar in flight and
	// tried again.
	Replacements, Moves, Handoffs, HandoffRetries int
	// Regions is the number of regions; RegionMigrations the plane's
	// MigrateRegion decisions carried out; ObjectsMoved the objects they
	// migrated.
	Regions, RegionMigrations, ObjectsMoved int
	// Policy names the regions' activation policy.
	Policy string
	// Measures counts the RTT samples clients reported to the plane.
	Measures int
	// Duration is the run's game time.
	Duration time.Duration
}

// RTTStats are the mean and 95th percentile of RTT samples (ms).
type RTTStats struct{ Mean, P95 float64 }

// MovesPerMinute is the plane's moves per minute of game time.
func (r *PlacementReport) MovesPerMinute() float64 {
	return float64(r.Moves) / max(r.Duration.Minutes(), 1e-9)
}

// placer drives the control plane in a simulated world.
type placer struct {
	w      *World
	cfg    PlacementConfig
	plane  *control.Plane
	rng    *rand.Rand // the players: who arrives, and when they leave
	pings  *rand.Rand // the clients' ping noise
	pop    *geo.Population
	nodes  int
	seats  int
	speed  float64 // how fast an avatar moves (m/s), for Expect's margin
	follow bool    // the world follows the plane (else static admission)
	// servers are the nodes' cities' indices in the WonderNetwork set.
	servers []int

	players  []geo.Player // every player that ever joined
	rows     [][]float64  // by player: true RTT to each node (ms)
	measured [][]bool     // by player: the node's RTT was reported
	who      []int        // by avatar: the player behind it
	byID     map[string]int
	avatar   []world.ObjectID // by avatar
	isAvatar map[world.ObjectID]int
	regional []world.ObjectID // the spawned objects that are not avatars
	target   []wire.NodeID    // by avatar: the node the placement wants it on
	at       []wire.NodeID    // by avatar: the node last seen holding its primary
	static   []int            // by avatar: static admission's node index
	load     []int            // by node index: static admission's seats taken
	pending  []pendingMeasure // pings asked for before the game starts

	world, plane_, static_ []float64
	optimum, gapSum        []float64
	rep                    PlacementReport
	ticks                  int
	// since is, by avatar, when its target last changed.
	since []time.Duration
	// check, if set (tests), runs after every event of the plane.
	check func(now time.Duration)
}

type pendingMeasure struct{ player, node int }

// streamPlacement is the random stream of the placed players.
const streamPlacement = 0x706c6163 // "plac"

// streamPings is the random stream of the clients' ping noise.
const streamPings = 0x70696e67 // "ping"

// newPlacer draws the players, admits them (placing the game's avatar
// spawns on the nodes they are admitted to, and the other spawns on the
// first region home) and returns the placer; attach starts it on the
// built world.
func newPlacer(c ArenaConfig, g *Game) (*placer, error) {
	p := c.Placement
	pop, pings, err := cities.Population()
	if err != nil {
		return nil, err
	}
	servers, err := cities.Indices(pings, c.Cities[:c.Nodes])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	pl := &placer{cfg: p, pop: pop, nodes: c.Nodes, servers: servers, follow: p.Mode == PlaceCMA, byID: map[string]int{},
		isAvatar: map[world.ObjectID]int{}, rng: rand.New(rand.NewPCG(c.Seed, streamPlacement)),
		pings: rand.New(rand.NewPCG(c.Seed, streamPings))}
	pl.seats = int(math.Ceil(float64(c.PlayersPerNode) * p.Headroom))
	pl.speed = g.Speed
	nodes := make([]control.Node, c.Nodes)
	rtt := make([][]float64, c.Nodes)
	for i := range nodes {
		nodes[i] = control.Node{ID: wire.NodeID(i + 1), Site: c.Cities[i], Capacity: pl.seats}
		rtt[i] = make([]float64, c.Nodes)
		for j := range rtt[i] {
			if v, ok := pings.PairRTT(servers[i], servers[j]); ok || i == j {
				rtt[i][j] = v
			} else {
				rtt[i][j] = math.NaN()
			}
		}
	}
	cc := control.Config{Nodes: nodes, NodeRTT: rtt, MigrationCost: p.MigrationCost, Seed: c.Seed}

	if !p.NoRegions {
		cc.Grid = control.Grid{X0: g.Bounds.Min[0], Y0: g.Bounds.Min[1], Width: g.Bounds.Max[0] - g.Bounds.Min[0],
			Height: g.Bounds.Max[1] - g.Bounds.Min[1], Cols: p.Cols, Rows: p.Rows}
		if cc.Policy, err = regionPolicy(p.Policy); err != nil {
			return nil, err
		}
	}
	if nodes[0].Capacity < 1 || c.Nodes < 2 {
		return nil, fmt.Errorf("%w: placement needs at least 2 nodes", lab.ErrConfig)
	}
	if pl.plane, err = control.New(cc); err != nil {
		return nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	pl.load = make([]int, c.Nodes)
	// The avatars are the spawns of the game's avatar schema, in order.
	var avatarSpawns []int
	for i, s := range g.Spawns {
		if s.Schema == g.Avatar {
			avatarSpawns = append(avatarSpawns, i)
		}
	}
	if g.Avatar == nil || len(avatarSpawns) == 0 {
		return nil, fmt.Errorf("%w: placement: the game names no avatar spawns", lab.ErrConfig)
	}
	n := len(avatarSpawns)
	pl.who, pl.target, pl.at, pl.static = make([]int, n), make([]wire.NodeID, n), make([]wire.NodeID, n), make([]int, n)
	pl.since = make([]time.Duration, n)
	for k := range n {
		ds, err := pl.join(0, k)
		if err != nil {
			return nil, err
		}
		pl.apply(0, ds)
	}
	// The lobby: the clients report the pings the plane asks for, and
	// the plane's ticks ask for more, until it asks for none.
	for len(pl.pending) > 0 {
		for len(pl.pending) > 0 {
			m := pl.pending[0]
			pl.pending = pl.pending[1:]
			if pl.measured[m.player][m.node] {
				continue
			}
			pl.measured[m.player][m.node] = true
			pl.rep.Measures++
			ds, err := pl.plane.Measure(0, pl.players[m.player].ID, wire.NodeID(m.node+1), pl.ping(pl.rows[m.player][m.node]))
			if err != nil {
				return nil, fmt.Errorf("lab/harness: placement: %w", err)
			}
			pl.apply(0, ds)
		}
		ds, err := pl.plane.Tick(0)
		if err != nil {
			return nil, fmt.Errorf("lab/harness: placement: %w", err)
		}
		for _, d := range ds {
			if d.Kind == control.MigrateRegion {
				// No player is located in the lobby, so no region has
				// players to migrate toward.
				return nil, fmt.Errorf("lab/harness: placement: internal error: a region migrates in the lobby: %v", d)
			}
		}
		pl.apply(0, ds)
	}
	for k, i := range avatarSpawns {
		home := pl.static[k]
		if pl.follow {
			home = int(pl.target[k]) - 1
		}
		g.Spawns[i].Node = home
		pl.target[k] = wire.NodeID(home + 1)
		pl.at[k] = pl.target[k]
	}
	if !p.NoRegions {
		home := int(pl.plane.Config().RegionHome) - 1
		for i := range g.Spawns {
			if g.Spawns[i].Schema != g.Avatar {
				g.Spawns[i].Node = home
			}
		}
	}
	pl.rep.Mode, pl.rep.Capacity, pl.rep.Players, pl.rep.Regions, pl.rep.Duration = p.Mode, pl.seats, n, pl.plane.Regions(), c.Duration
	if !p.NoRegions {
		pl.rep.Policy = p.Policy
	}
	return pl, nil
}

// join draws a new player for avatar k, admits it on the plane and by
// static admission, and returns the plane's decisions.
func (pl *placer) join(now time.Duration, k int) ([]control.Decision, error) {
	pp := pl.pop.Draw(1, pl.rng)[0]
	idx := len(pl.players)
	pp.ID = fmt.Sprintf("p%06d", idx)
	row := make([]float64, pl.nodes)
	for j, s := range pl.servers {
		row[j] = pl.pop.RTT(pp, s)
	}
	pl.players = append(pl.players, pp)
	pl.rows = append(pl.rows, row)
	pl.measured = append(pl.measured, make([]bool, pl.nodes))
	pl.byID[pp.ID] = k
	pl.who[k] = idx
	var ss []control.Sample
	for j := range min(pl.cfg.JoinProbes, pl.nodes) {
		ss = append(ss, control.Sample{Node: wire.NodeID(j + 1), RTT: pl.ping(row[j])})
		pl.measured[idx][j] = true
	}
	ds, err := pl.plane.Join(now, pp.ID, ss)
	if err != nil {
		return nil, fmt.Errorf("lab/harness: placement: join %s: %w", pp.ID, err)
	}
	best := -1
	for j := range pl.nodes {
		if pl.load[j] < pl.seats && (best < 0 || row[j] < row[best]) {
			best = j
		}
	}
	pl.static[k] = best
	pl.load[best]++
	return ds, nil
}

// ping is what a client measures: the least of 3 pings.
func (pl *placer) ping(rtt float64) time.Duration {
	best := math.Inf(1)
	for range 3 {
		best = min(best, rtt*(1+pl.cfg.Jitter*pl.pings.ExpFloat64()))
	}
	return time.Duration(best * float64(time.Millisecond))
}

// apply carries the plane's decisions out: it records where each player
// should be, starts the handoffs the world follows, schedules the pings
// the plane asked for and migrates regions.
func (pl *placer) apply(now time.Duration, ds []control.Decision) {
	for _, d := range ds {
		k, ok := pl.byID[d.Player]
		switch d.Kind {
		case control.Admit, control.Move, control.Readmit:
			if !ok {
				continue
			}
			if d.Kind != control.Admit && pl.w != nil {
				pl.rep.Moves++
			}
			p := pl.who[k]
			if j := int(d.To) - 1; d.Kind != control.Admit && !pl.measured[p][j] {
				pl.measure(now+pl.cfg.ProbeDelay, p, j)
			}
			if d.Kind == control.Admit {
				for _, n := range d.Probe {
					pl.measure(now+pl.cfg.ProbeDelay, p, int(n)-1)
				}
			}
			if pl.follow && pl.target[k] != d.To {
				pl.target[k], pl.since[k] = d.To, now
				pl.handoff(now, k)
			}
		case control.Probe:
			if ok {
				for _, n := range d.Probe {
					pl.measure(now+pl.cfg.ProbeDelay, pl.who[k], int(n)-1)
				}
			}
		case control.MigrateRegion:
			pl.migrateRegion(now, d)
		}
	}
	if pl.check != nil {
		pl.check(now)
	}
}

// measure has player p's client report its RTT to node index j at time
// at, once.
func (pl *placer) measure(at time.Duration, p, j int) {
	if pl.w == nil {
		// Before the game starts, the players wait in the lobby: their
		// clients report the pings at once.
		pl.pending = append(pl.pending, pendingMeasure{player: p, node: j})
		return
	}
	pl.schedule(at, func(now time.Duration) error {
		k, online := pl.byID[pl.players[p].ID]
		if !online || pl.who[k] != p || pl.measured[p][j] {
			return nil
		}
		pl.measured[p][j] = true
		pl.rep.Measures++
		ds, err := pl.plane.Measure(now, pl.players[p].ID, wire.NodeID(j+1), pl.ping(pl.rows[p][j]))
		if err != nil {
			return fmt.Errorf("lab/harness: placement: %w", err)
		}
		pl.apply(now, ds)
		return nil
	})
}

// schedule runs fn at game time at (now at the latest).
func (pl *placer) schedule(at time.Duration, fn func(now time.Duration) error) {
	if now := pl.w.sim.Now(); at < now {
		at = now
	}
	// Schedule fails only for a nil function or a past time.
	_ = pl.w.Schedule(at, func(w *World) error { return fn(w.sim.Now()) })
}

// handoffRetry is how long a handoff that found the avatar in flight
// waits before it tries again.
const handoffRetry = 200 * time.Millisecond

// handoff migrates avatar k's primary toward its target: the plane's
// command reaches the node holding it after the emulated delay from the
// plane (at node 1).
func (pl *placer) handoff(now time.Duration, k int) {
	if pl.w == nil {
		return // before the world: the spawns go to the target
	}
	from, to := pl.at[k], pl.target[k]
	pl.schedule(now+pl.w.Delay(1, from), func(now time.Duration) error {
		if pl.cfg.Lead < 0 || pl.target[k] != to {
			return pl.tryHandoff(now, k, to)
		}
		// Make-before-break for the nodes: the avatar's node tells the
		// target what the avatar sees, the target fetches it, and the
		// avatar migrates Lead after the target heard.
		from := pl.holder(pl.avatar[k])
		if from == 0 || from == to {
			return pl.tryHandoff(now, k, to)
		}
		obj, _, _ := pl.w.nodes[from-1].Lookup(pl.avatar[k])
		d := pl.w.Delay(from, to)
		reach := pl.speed * (d + pl.cfg.Lead + time.Second).Seconds()
		boxes := obj.Interest(nil)
		pl.schedule(now+d, func(at time.Duration) error {
			for _, b := range boxes {
				b = b.Expand(world.Point{reach, reach}, world.Point{reach, reach})
				if err := pl.w.nodes[to-1].Expect(at, b, at+pl.cfg.Lead+time.Second); err != nil {
					return fmt.Errorf("lab/harness: placement: %w", err)
				}
			}
			return nil
		})
		pl.schedule(now+d+pl.cfg.Lead, func(now time.Duration) error { return pl.tryHandoff(now, k, to) })
		return nil
	})
}

func (pl *placer) tryHandoff(now time.Duration, k int, to wire.NodeID) error {
	if pl.target[k] != to {
		return nil // superseded by a later decision
	}
	id := pl.avatar[k]
	holder := pl.holder(id)
	switch {
	case holder == to:
		return nil
	case holder == 0:
		pl.rep.HandoffRetries++
		pl.schedule(now+handoffRetry, func(now time.Duration) error { return pl.tryHandoff(now, k, to) })
		return nil
	}
	if _, err := pl.w.nodes[holder-1].Migrate(now, id, to); err != nil {
		pl.rep.HandoffRetries++
		pl.schedule(now+handoffRetry, func(now time.Duration) error { return pl.tryHandoff(now, k, to) })
		return nil
	}
	if err := pl.w.sim.Flush(holder); err != nil {
		return err
	}
	pl.rep.Handoffs++
	return nil
}

// holder returns the node holding object id's primary, 0 while it is in
// flight.
func (pl *placer) holder(id world.ObjectID) wire.NodeID {
	for i, n := range pl.w.nodes[:pl.nodes] {
		if _, primary, ok := n.Lookup(id); ok && primary {
			return wire.NodeID(i + 1)
		}
	}
	return 0
}

// migrateRegion moves the region's objects to its new core: each node
// holding some migrates them.
func (pl *placer) migrateRegion(now time.Duration, d control.Decision) {
	if pl.w == nil || !pl.follow {
		return
	}
	pl.rep.RegionMigrations++
	g := pl.plane.Config().Grid
	for i := range pl.nodes {
		from := wire.NodeID(i + 1)
		if from == d.To {
			continue
		}
		pl.schedule(now+pl.w.Delay(1, from), func(now time.Duration) error {
			n := pl.w.nodes[i]
			moved := 0
			for _, id := range pl.regional {
				obj, primary, ok := n.Lookup(id)
				if !ok || !primary {
					continue
				}
				loc := obj.State().Location()
				if g.RegionOf(loc[0], loc[1]) != d.Region {
					continue
				}
				if _, err := n.Migrate(now, id, d.To); err == nil {
					moved++
				}
			}
			pl.rep.ObjectsMoved += moved
			if moved > 0 {
				return pl.w.sim.Flush(from)
			}
			return nil
		})
	}
}

// attach starts the placer on the built world: it learns the avatars'
// and the regional objects' IDs and schedules the ticks, the churn and
// the measures decided at the joins.
func (pl *placer) attach(w *World, g *Game) error {
	pl.w = w
	spawned := w.Spawned()
	for i, s := range g.Spawns {
		if s.Schema == g.Avatar {
			pl.isAvatar[spawned[i]] = len(pl.avatar)
			pl.avatar = append(pl.avatar, spawned[i])
		} else {
			pl.regional = append(pl.regional, spawned[i])
		}
	}
	for at := pl.cfg.Tick; at <= w.cfg.Duration; at += pl.cfg.Tick {
		pl.schedule(at, pl.tick)
	}
	if pl.cfg.Session > 0 {
		for k := range pl.avatar {
			pl.scheduleLeave(0, k)
		}
	}
	return nil
}

// scheduleLeave draws when the player behind avatar k leaves.
func (pl *placer) scheduleLeave(now time.Duration, k int) {
	at := now + time.Duration(pl.rng.ExpFloat64()*float64(pl.cfg.Session))
	if at >= pl.w.cfg.Duration {
		return
	}
	p := pl.who[k]
	pl.schedule(at, func(now time.Duration) error {
		if pl.who[k] != p {
			return nil
		}
		old := pl.players[p].ID
		ds, err := pl.plane.Leave(now, old)
		if err != nil {
			return fmt.Errorf("lab/harness: placement: leave %s: %w", old, err)
		}
		delete(pl.byID, old)
		pl.load[pl.static[k]]--
		joined, err := pl.join(now, k)
		if err != nil {
			return err
		}
		pl.rep.Replacements++
		if to := wire.NodeID(pl.static[k] + 1); !pl.follow && pl.target[k] != to {
			pl.target[k], pl.since[k] = to, now
			pl.handoff(now, k)
		}
		pl.apply(now, append(ds, joined...))
		pl.scheduleLeave(now, k)
		return nil
	})
}

// tick samples where every player plays, reports the players' positions
// to the plane and runs its Tick.
func (pl *placer) tick(now time.Duration) error {
	pl.ticks++
	var tr [][]float64
	snap := pl.ticks%10 == 1
	var planeSum float64
	for k, id := range pl.avatar {
		p := pl.who[k]
		if h := pl.holder(id); h != 0 {
			pl.at[k] = h
		}
		pl.world = append(pl.world, pl.rows[p][pl.at[k]-1])
		pl.static_ = append(pl.static_, pl.rows[p][pl.static[k]])
		n, ok := pl.plane.NodeOf(pl.players[p].ID)
		if !ok {
			return fmt.Errorf("lab/harness: placement: internal error: %s online but not placed", pl.players[p].ID)
		}
		pl.plane_ = append(pl.plane_, pl.rows[p][n-1])
		planeSum += pl.rows[p][n-1]
		if snap {
			tr = append(tr, pl.rows[p])
		}
		if pl.plane.Regions() > 0 {
			if obj, _, ok := pl.w.nodes[pl.at[k]-1].Lookup(id); ok {
				loc := obj.State().Location()
				if err := pl.plane.Locate(now, pl.players[p].ID, loc[0], loc[1]); err != nil {
					return fmt.Errorf("lab/harness: placement: %w", err)
				}
			}
		}
	}
	if snap {
		caps := make([]int, pl.nodes)
		for j := range caps {
			caps[j] = pl.seats
		}
		_, total, err := mcf.Transport(tr, caps)
		if err != nil {
			return fmt.Errorf("lab/harness: placement: optimum: %w", err)
		}
		opt := total / float64(len(tr))
		pl.optimum = append(pl.optimum, opt)
		pl.gapSum = append(pl.gapSum, planeSum/float64(len(tr))/opt-1)
	}
	ds, err := pl.plane.Tick(now)
	if err != nil {
		return fmt.Errorf("lab/harness: placement: %w", err)
	}
	pl.apply(now, ds)
	return nil
}

// report finishes the measures.
func (pl *placer) report() *PlacementReport {
	r := pl.rep
	r.World, r.Plane, r.Static = RTTOf(pl.world), RTTOf(pl.plane_), RTTOf(pl.static_)
	if len(pl.optimum) > 0 {
		s := 0.0
		for _, x := range pl.optimum {
			s += x
		}
		r.Optimum = s / float64(len(pl.optimum))
		r.WorstGap = slices.Max(pl.gapSum)
	} else {
		r.Optimum, r.WorstGap = math.NaN(), math.NaN()
	}
	return &r
}

// RTTOf returns the mean and 95th percentile of RTT samples (ms), NaN
// for none; xs is not changed.
func RTTOf(xs []float64) RTTStats {
	if len(xs) == 0 {
		return RTTStats{math.NaN(), math.NaN()}
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	s := 0.0
	for _, x := range ys {
		s += x
	}
	return RTTStats{Mean: s / float64(len(ys)), P95: ys[max(0, int(math.Ceil(0.95*float64(len(ys))))-1)]}
}

// writeLines prints the placement's lines of the demo's table.
func (r *PlacementReport) writeLines(w io.Writer) {
	other, oname := r.Static, "static nearest-with-room admission"
	if r.Mode == PlaceStatic {
		other, oname = r.Plane, "the control plane (CMA)"
	}
	fmt.Fprintf(w, "players: drawn from GeoNames cities by population, placed by %s, %d seats per node;\n", placementName(r.Mode), r.Capacity)
	fmt.Fprintf(w, "         player-to-node RTT where they played: mean %.1f ms, p95 %.1f ms (modelled, geo.Population)\n", r.World.Mean, r.World.P95)
	fmt.Fprintf(w, "         %s on the same players: mean %.1f ms, p95 %.1f ms (%+.1f%% mean)\n", oname, other.Mean, other.P95, 100*(other.Mean/r.World.Mean-1))
	fmt.Fprintf(w, "         exact optimum: mean %.1f ms; the plane's assignment at most %.1f%% above it\n", r.Optimum, 100*r.WorstGap)
	fmt.Fprintf(w, "         churn: %d players replaced; plane: %d moves (%.1f/min), %d handoffs carried out, %d pings reported\n",
		r.Replacements, r.Moves, r.MovesPerMinute(), r.Handoffs, r.Measures)
	if r.Regions > 0 {
		fmt.Fprintf(w, "regions: %d, %s activation policy: %d migrated (%d objects moved)\n",
			r.Regions, r.Policy, r.RegionMigrations, r.ObjectsMoved)
	}
	fmt.Fprintln(w)
}

func placementName(m PlacementMode) string {
	if m == PlaceCMA {
		return "the control plane (CMA on every join and leave)"
	}
	return "static nearest-with-room admission"
}

// PlacedPlayers returns the RTT (ms) of each of a placed run's first
// players — the ones who join before the game starts, one per avatar in
// the order of the game's avatar spawns — to each node, as the run draws
// them (the same seed and stream): what a live cluster's bots use so
// that its players are the simulator's. c must be a valid configuration
// with a placement other than PlaceNone.
func PlacedPlayers(c ArenaConfig) ([][]float64, error) {
	c, err := c.Validate()
	if err != nil {
		return nil, err
	}
	if c.Placement.Mode == PlaceNone {
		return nil, fmt.Errorf("%w: placement none: the players have no cities", lab.ErrConfig)
	}
	g, _, err := ArenaGame(c)
	if err != nil {
		return nil, err
	}
	pl, err := newPlacer(c, &g)
	if err != nil {
		return nil, err
	}
	return pl.rows[:pl.rep.Players], nil
}
