package lab

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/node"
	osim "github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Archs lists the three baseline architectures (Colyseus §7.1) in the
// order the lab reports them.
func Archs() []discovery.Arch {
	return []discovery.Arch{discovery.ClientServer, discovery.Broadcast, discovery.Directory}
}

// SiteData names the latency data set a world runs over.
type SiteData string

// Latency data sets.
const (
	// SitesPlanetLab places nodes on distinct hosts of one PlanetLab time
	// slice (WorldConfig.Slice), drawn at random from the seed.
	SitesPlanetLab SiteData = "planetlab"
	// SitesWonder places node i in WorldConfig.Cities[i] (WonderNetwork).
	SitesWonder SiteData = "wonder"
)

// AutoKeyMap returns the key mapping discovery.AutoKeyMap picks for n
// players on a map of type m.
func AutoKeyMap(m arena.MapType, n int) string { return discovery.AutoKeyMap(arenaBounds(m, n)) }

// arenaBounds is the extent of the model game's map of type m for n
// players.
func arenaBounds(m arena.MapType, n int) world.Box {
	w, h := arena.Size(m, n)
	return world.Box{Max: world.Point{w, h}}
}

// ArenaSpace returns what discovery's presets need to know of the model
// game g.
func ArenaSpace(g *arena.Game) discovery.Space {
	return discovery.Space{Dims: g.Registry().Space().Dims(), Bounds: world.Box{Max: world.Point{g.Map.W, g.Map.H}},
		Interest: g.Config().Interest, Speed: arena.RunSpeed, Players: g.Config().Players()}
}

// WorldConfig is one run of the model game (package arena) on node cores
// (package node) inside the simulator (package sim). Start from
// DefaultWorldConfig; Validate fills the zero fields.
type WorldConfig struct {
	// Arch is the discovery architecture. Default directory.
	Arch discovery.Arch
	// Nodes is the number of player nodes (servers or player machines);
	// directory and client-server add one infrastructure node.
	Nodes int
	// PlayersPerNode is the number of bots per node: 1 is the paper's
	// peer-to-peer scenario, 8 its federated one. Default 8.
	PlayersPerNode int
	// Map is the map shape. Default rect.
	Map arena.MapType
	// Seed seeds the map, the spawns, the site draw, every node's random
	// source and the network. Any value.
	Seed uint64
	// Duration is the game time to simulate. Default 60 s.
	Duration time.Duration
	// Data, Slice and Cities choose the sites. Default PlanetLab slice 1.
	// With SitesWonder, Cities must name at least Nodes WonderNetwork
	// cities (node i is in Cities[i]).
	Data   SiteData
	Slice  int
	Cities []string
	// Jitter (mean of an exponential extra delay), Loss and Duplicate
	// configure the emulated WAN (osim.Config). Default none.
	Jitter          time.Duration
	Loss, Duplicate float64
	// StalenessEvery: every node samples the staleness of the replicas in
	// its interest every this many of its frames (default 10: once a
	// second), at most StalenessCap replicas per sample (default 16),
	// which keeps the number of samples bounded at 10,000 players.
	StalenessEvery int
	StalenessCap   int
	// WallFrameTimes records each node's Tick wall-clock time as the
	// summary's frame times. Off by default: wall-clock samples differ
	// between runs, and the summary is otherwise byte-identical for a seed.
	WallFrameTimes bool
	// Workers is how many goroutines run the simulation (osim.Config
	// Workers); 0 means one per CPU (GOMAXPROCS). The result is the same,
	// byte for byte, for any value.
	Workers int

	// The colyseus architecture's knobs (ignored by the others).
	// KeyMap is the key mapping: discovery.KeyMapHilbert, KeyMapLinear,
	// KeyMapRegions (dht, one region per player), or KeyMapAuto (the
	// default; Validate resolves it, see AutoKeyMap).
	KeyMap string
	// PredTime is the interest prediction horizon and subscription TTL;
	// negative means none (0). Default discovery.DefaultPredTime.
	PredTime time.Duration
	// Balance turns the ring's leave-join load balancing on.
	Balance bool
	// PaperRouting routes on the ring as the paper's Mercury does: no
	// route cache and the ring's default four long links, instead of
	// overworld's cache of 2·log2(n) routes and eight long links (Fig. 9
	// compares the two).
	PaperRouting bool
	// Prefetch (m) widens, in x and y, the view each node fetches and
	// keeps replicas for (node.Config.Prefetch), so that objects are
	// replicated before they enter an interest. Any architecture; 0 means
	// none, as in the paper.
	Prefetch float64
	// Zipf is the game's waypoint popularity exponent (arena.Config.Zipf;
	// 0: the game's default, 1): larger values crowd the bots onto fewer
	// hot spots, a skewed load for the ring's load balancing.
	Zipf float64
	// TileZipf is the game's tile popularity exponent
	// (arena.Config.TileZipf; default 0, every tile alike): a positive
	// value makes a few tiles hot spots of the whole map.
	TileZipf float64
	// NoProactive turns proactive replication off (attached objects,
	// missiles, are discovered like the rest).
	NoProactive bool

	// Warmup is the game time before the view measures (missing replicas,
	// discovery latency) start counting (osim.Config.Warmup): the first
	// second, in which every node's view fills from nothing, is a start-up
	// transient, not steady-state consistency (the paper's runs last
	// minutes). Default min(5 s, Duration/10); negative means none.
	Warmup time.Duration
}

// DefaultWorldConfig returns 16 nodes × 8 bots on a rect map for 60 s of
// game time under the directory architecture, on PlanetLab slice 1, seed 1.
func DefaultWorldConfig() WorldConfig {
	return WorldConfig{Arch: discovery.Directory, Nodes: 16, PlayersPerNode: 8, Map: arena.Rect, Seed: 1,
		Duration: 60 * time.Second, Data: SitesPlanetLab, Slice: 1, StalenessEvery: 10, StalenessCap: 16}
}

// maxWorldNodes bounds Nodes: one node per site of the largest data set
// (PlanetLab's 490 hosts) would be too few for the 10,000-player runs, so
// PlanetLab sites are shared when Nodes exceeds them (see buildSites).
const maxWorldNodes = 20_000

// Validate returns a copy of c with the zero fields set to their defaults,
// or an error wrapping ErrConfig that names the first bad field.
func (c WorldConfig) Validate() (WorldConfig, error) {
	d := DefaultWorldConfig()
	c.Cities = slices.Clone(c.Cities)
	if c.Arch == "" {
		c.Arch = d.Arch
	}
	if c.PlayersPerNode == 0 {
		c.PlayersPerNode = d.PlayersPerNode
	}
	if c.Map == 0 {
		c.Map = d.Map
	}
	if c.Duration == 0 {
		c.Duration = d.Duration
	}
	if c.Data == "" {
		c.Data = d.Data
	}
	if c.Data == SitesPlanetLab && c.Slice == 0 {
		c.Slice = d.Slice
	}
	if c.StalenessEvery == 0 {
		c.StalenessEvery = d.StalenessEvery
	}
	if c.StalenessCap == 0 {
		c.StalenessCap = d.StalenessCap
	}
	if c.KeyMap == "" || c.KeyMap == discovery.KeyMapAuto {
		c.KeyMap = AutoKeyMap(c.Map, c.Players())
	}
	if c.Warmup == 0 {
		c.Warmup = min(5*time.Second, c.Duration/10)
	}
	if c.PredTime == 0 {
		c.PredTime = discovery.DefaultPredTime
	}
	bad := func(format string, args ...any) (WorldConfig, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if _, err := discovery.ParseArch(string(c.Arch)); err != nil {
		return bad("architecture %q: want directory, broadcast, client-server or colyseus", c.Arch)
	}
	switch {
	case c.Nodes < 1 || c.Nodes > maxWorldNodes:
		return bad("nodes %d: want 1 to %d", c.Nodes, maxWorldNodes)
	case c.PlayersPerNode < 1 || c.PlayersPerNode > 1000:
		return bad("players per node %d: want 1 to 1000", c.PlayersPerNode)
	case c.Nodes*c.PlayersPerNode > arena.MaxPlayers:
		return bad("%d nodes × %d players: want at most %d players", c.Nodes, c.PlayersPerNode, arena.MaxPlayers)
	case c.Map != arena.Sqr && c.Map != arena.Rect:
		return bad("map %v: want sqr or rect", c.Map)
	case c.Duration < time.Second || c.Duration > 24*time.Hour:
		return bad("duration %v: want 1s to 24h", c.Duration)
	case c.Jitter < 0 || c.Jitter > 10*time.Second:
		return bad("jitter %v: want 0 to 10s", c.Jitter)
	case !(c.Loss >= 0 && c.Loss < 1):
		return bad("loss %v: want a probability in [0, 1)", c.Loss)
	case !(c.Duplicate >= 0 && c.Duplicate < 1):
		return bad("duplicate %v: want a probability in [0, 1)", c.Duplicate)
	case c.StalenessEvery < 1 || c.StalenessCap < 1:
		return bad("staleness sampling every %d frames, at most %d: want both ≥ 1", c.StalenessEvery, c.StalenessCap)
	case c.Workers < 0 || c.Workers > 256:
		return bad("workers %d: want 0 (one per CPU) to 256", c.Workers)
	case c.KeyMap != locate.KeyMapHilbert && c.KeyMap != locate.KeyMapLinear && c.KeyMap != locate.KeyMapRegions:
		return bad("key map %q: want %s, %s or %s", c.KeyMap, locate.KeyMapHilbert, locate.KeyMapLinear, locate.KeyMapRegions)
	case !(c.Prefetch >= 0) || c.Prefetch > 1e6:
		return bad("prefetch %v m: want 0 to 1e6", c.Prefetch)
	case c.Warmup >= c.Duration:
		return bad("warmup %v: want less than the duration %v", c.Warmup, c.Duration)
	case c.PredTime > time.Minute:
		return bad("prediction time %v: want at most 1m", c.PredTime)
	case !(c.TileZipf >= 0 && c.TileZipf <= arena.MaxZipf):
		return bad("tile popularity exponent %v: want 0 to %d", c.TileZipf, arena.MaxZipf)
	case !(c.Zipf == 0 || c.Zipf >= 0.1 && c.Zipf <= arena.MaxZipf):
		return bad("waypoint popularity exponent (zipf) %v: want 0 (the game's default) or 0.1 to %d", c.Zipf, arena.MaxZipf)
	}
	switch c.Data {
	case SitesPlanetLab:
		if c.Slice < 1 || c.Slice > 18 {
			return bad("PlanetLab slice %d: want 1 to 18", c.Slice)
		}
		if len(c.Cities) > 0 {
			return bad("cities are for WonderNetwork sites, not PlanetLab")
		}
	case SitesWonder:
		if len(c.Cities) < c.Nodes {
			return bad("%d WonderNetwork cities for %d nodes: want one city per node", len(c.Cities), c.Nodes)
		}
		seen := map[string]bool{}
		for _, city := range c.Cities {
			if seen[city] {
				return bad("city %q listed twice", city)
			}
			seen[city] = true
		}
	default:
		return bad("sites %q: want planetlab or wonder", c.Data)
	}
	return c, nil
}

// Players returns the number of bots.
func (c WorldConfig) Players() int { return c.Nodes * c.PlayersPerNode }

// World is one composed run: the simulator, the node cores, the game and
// the ground-truth observer. Build it with NewWorld, then Run it; tests use
// Sim, Nodes and SetCheck to look inside.
type World struct {
	cfg   WorldConfig
	game  *arena.Game
	sim   *osim.Sim
	nodes []*node.Node      // index = NodeID - 1; the infra node last
	mercs []*locate.Mercury // colyseus: each node's locator, by node
	infra wire.NodeID       // 0 for broadcast
	truth *truth
	snaps []snapPair // per node: as of its latest frames
	check func(ev osim.Event)
	warm  bool // the warm-up is over (the locator's histograms were reset)

	wallRun time.Duration
}

// NewWorld validates cfg and builds the run: the sites, the simulator,
// the game (one arena.Game shared by every node: it is immutable), one
// node core per player node plus the infrastructure node, the spawned
// objects on their nodes, and the ground-truth observer.
func NewWorld(cfg WorldConfig) (*World, error) { return newWorld(cfg, nil) }

// newWorld is NewWorld with an optional adapter around every node core
// (tests wrap cores to lose and duplicate packets they can later stop).
func newWorld(cfg WorldConfig, wrap func(*node.Node) osim.Core) (*World, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	game, err := arena.New(arena.Config{Map: cfg.Map, Nodes: cfg.Nodes, PlayersPerNode: cfg.PlayersPerNode, Seed: cfg.Seed, Zipf: cfg.Zipf, TileZipf: cfg.TileZipf})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sites, where, err := buildSites(cfg)
	if err != nil {
		return nil, err
	}
	sc := osim.DefaultConfig()
	sc.Seed, sc.Jitter, sc.Loss, sc.Duplicate = cfg.Seed, cfg.Jitter, cfg.Loss, cfg.Duplicate
	sc.Workers = cfg.Workers
	sc.Warmup = max(cfg.Warmup, 0)
	if sc.Workers == 0 {
		sc.Workers = min(runtime.GOMAXPROCS(0), 64)
	}
	s, err := osim.New(sc, sites)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	w := &World{cfg: cfg, game: game, sim: s}
	total := cfg.Nodes
	if cfg.Arch.HasInfra() {
		total++
		w.infra = wire.NodeID(total)
	}
	w.snaps = make([]snapPair, total)
	space := ArenaSpace(game)
	members := make([]wire.NodeID, cfg.Nodes)
	for i := range members {
		members[i] = wire.NodeID(i + 1)
	}
	for i := range total {
		id := wire.NodeID(i + 1)
		disc, err := discovery.New(discovery.Config{Arch: cfg.Arch, Self: id, Members: members, Infra: w.infra,
			Space: space, Seed: cfg.Seed, KeyMap: cfg.KeyMap, PredTime: cfg.PredTime, Balance: cfg.Balance,
			PaperRouting: cfg.PaperRouting, Prefetch: cfg.Prefetch})
		if err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrConfig, id, err)
		}
		if m, ok := disc.(*locate.Mercury); ok {
			w.mercs = append(w.mercs, m)
		}
		n, err := node.New(node.Config{ID: id, Registry: game.Registry(), Discovery: disc,
			Rand:    rand.New(rand.NewPCG(cfg.Seed, streamWorldNode^uint64(id))),
			Replica: replica.Config{NoAttach: cfg.NoProactive}, Prefetch: world.Point{cfg.Prefetch, cfg.Prefetch}})
		if err != nil {
			return nil, err
		}
		w.nodes = append(w.nodes, n)
		var core osim.Core = n
		if wrap != nil {
			core = wrap(n)
		}
		core = &snapCore{Core: core, n: n, snaps: &w.snaps[i], timed: cfg.WallFrameTimes}
		if err := s.AddNode(id, where[i], core); err != nil {
			return nil, err
		}
	}
	for _, sp := range game.Spawns() {
		n := w.nodes[sp.Node]
		if _, err := n.Spawn(0, sp.Schema, sp.Init); err != nil {
			return nil, fmt.Errorf("lab: spawn on node %d: %w", n.ID(), err)
		}
		if err := s.Flush(n.ID()); err != nil {
			return nil, err
		}
	}
	for i, n := range w.nodes {
		w.snaps[i].buf[0].take(n)
	}
	w.truth = newTruth(w)
	s.SetObserver(w.observe)
	s.ObserveOnly(osim.EventTick) // the ground truth needs the frames; Sim.Events counts the rest
	s.ObserveBehind(true)         // it reads only the snapshots, double-buffered
	return w, nil
}

// streamWorldNode and streamWorldSites are the random streams of a world
// run (see the stream constants in instance.go).
const (
	streamWorldNode  = 0x6e6f6465 // "node"
	streamWorldSites = 0x73697465 // "site"
)

// buildSites returns the latency table and the site of every node (the
// player nodes, then the infrastructure node). PlanetLab: the player nodes
// go to distinct hosts drawn from the seed (hosts are reused, in a fresh
// random order, once all 490 are taken). The infrastructure node goes to
// the site with the least mean one-way delay to the player nodes (the
// 1-median: where an operator would put a central server).
func buildSites(cfg WorldConfig) (*osim.Sites, []string, error) {
	var sites *osim.Sites
	var where []string
	var err error
	switch cfg.Data {
	case SitesPlanetLab:
		if sites, err = osim.PlanetLabSites(cfg.Slice); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, streamWorldSites))
		for len(where) < cfg.Nodes {
			for _, k := range rng.Perm(sites.Len()) {
				if len(where) == cfg.Nodes {
					break
				}
				where = append(where, sites.Name(k))
			}
		}
	case SitesWonder:
		if sites, err = osim.WonderNetworkSites(cfg.Cities[:cfg.Nodes]); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		where = slices.Clone(cfg.Cities[:cfg.Nodes])
	}
	if cfg.Arch.HasInfra() {
		idx := make([]int, len(where))
		for i, name := range where {
			idx[i], _ = sites.Index(name)
		}
		best, bestSum := 0, math.Inf(1)
		for k := range sites.Len() {
			var sum time.Duration
			for _, j := range idx {
				sum += sites.OneWay(j, k)
			}
			if f := float64(sum); f < bestSum {
				best, bestSum = k, f
			}
		}
		where = append(where, sites.Name(best))
	}
	return sites, where, nil
}

// Config returns the validated configuration.
func (w *World) Config() WorldConfig { return w.cfg }

// Sim returns the simulator.
func (w *World) Sim() *osim.Sim { return w.sim }

// Nodes returns the node cores: the player nodes (IDs 1..Nodes), then the
// infrastructure node if the architecture has one.
func (w *World) Nodes() []*node.Node { return slices.Clone(w.nodes) }

// Infra returns the infrastructure node's ID (the directory's rendezvous
// or the central server), 0 under broadcast.
func (w *World) Infra() wire.NodeID { return w.infra }

// Game returns the game.
func (w *World) Game() *arena.Game { return w.game }

// SetCheck sets a function run after every simulated event, after the
// ground-truth observer (tests check invariants with it). It makes the
// simulation serial, so that f sees the cores right after each event.
func (w *World) SetCheck(f func(ev osim.Event)) {
	w.check = f
	_ = w.sim.SetWorkers(1) // only fails inside Run, where the World is not reachable
	if f != nil {
		w.sim.ObserveOnly() // every kind
	} else {
		w.sim.ObserveOnly(osim.EventTick)
	}
	w.sim.ObserveBehind(f == nil) // f may read the cores
}

// Events returns the number of simulated events so far.
func (w *World) Events() uint64 { return w.sim.Events() }

func (w *World) observe(ev osim.Event) {
	if ev.Kind == osim.EventTick {
		snap := w.snaps[ev.Node-1].next()
		if snap.timed {
			_ = w.sim.Recorder().FrameTime(ev.Node, snap.frame) // the node is up: cannot fail
			snap.timed = false
		}
		w.truth.tick(ev.Node, ev.At)
	}
	if w.check != nil {
		w.check(ev)
	}
}

// WorldProgress is what a run reports once per second of game time.
type WorldProgress struct {
	Virtual, Total time.Duration
	Wall           time.Duration // since the run started
	Events         uint64
}

// Run simulates until the configured duration, reporting progress (may be
// nil) after every second of game time.
func (w *World) Run(progress func(WorldProgress)) error {
	start := time.Now()
	total := w.cfg.Duration
	for w.sim.Now() < total {
		step := min(time.Second, total-w.sim.Now())
		if now := w.sim.Now(); now < w.cfg.Warmup {
			step = min(step, w.cfg.Warmup-now)
		}
		if err := w.sim.RunFor(step); err != nil {
			return err
		}
		if !w.warm && w.cfg.Warmup > 0 && w.sim.Now() >= w.cfg.Warmup {
			// The locator's latency and hop histograms leave the warm-up
			// out, as the view measures do (RingResult).
			w.warm = true
			for _, m := range w.mercs {
				m.ResetHists()
			}
		}
		w.wallRun = time.Since(start)
		if progress != nil {
			progress(WorldProgress{Virtual: w.sim.Now(), Total: total, Wall: w.wallRun, Events: w.sim.Events()})
		}
	}
	return nil
}

// WorldResult is the outcome of a run: the simulator's summary (labelled,
// with the nodes' counters) and the measures derived from it.
type WorldResult struct {
	Config  WorldConfig
	Summary *osim.Summary
	// Players is the mean per-node bandwidth over the player nodes (B/s,
	// in, out and in + out), with the mean over nodes of each node's 95th
	// percentile of 1 s bursts, and the mean split by traffic class
	// (in + out).
	Players NodeGroupBandwidth
	// Infra is the infrastructure node's bandwidth (zero under broadcast).
	Infra NodeGroupBandwidth
	// Aggregate is the bytes sent by all nodes per second (B/s): the
	// network's total load.
	Aggregate float64
	// BytesPerUpdate is all update-class bytes on the wire (payloads,
	// IPv4/UDP headers and the registrations, drops and resync requests
	// that travel in the update class) per object update entry sent.
	BytesPerUpdate float64
	// FrameBytesPerUpdate is the bytes of updates frames (entries and
	// their share of the frame header, no packet header) per update entry.
	FrameBytesPerUpdate float64
	// UpdatesPerS is object update entries sent per second, all nodes.
	UpdatesPerS float64
	// Events is the number of simulated events; Wall the wall-clock time
	// of Run (not part of the summary).
	Events uint64
	Wall   time.Duration

	sim *osim.Sim // for WriteFiles
}

// NodeGroupBandwidth is the bandwidth of a group of nodes (B/s).
type NodeGroupBandwidth struct {
	Nodes   int
	Mean    osim.Rate
	P95     osim.Rate
	ByClass []osim.ClassRate
}

// SpeedFactor is game time per wall-clock time.
func (r *WorldResult) SpeedFactor() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Config.Duration) / float64(r.Wall)
}

// EventsPerS is simulated events per wall-clock second.
func (r *WorldResult) EventsPerS() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Events) / r.Wall.Seconds()
}

// Result summarises the run so far: the sim summary with the run's labels
// and the nodes' counters added, and the derived measures.
func (w *World) Result() *WorldResult {
	rec := w.sim.Recorder()
	var st node.Stats
	var rs struct{ updates, full, keepalives, bytes, acks, writes, applied, stale, timeouts, dropped int64 }
	for _, n := range w.nodes {
		s := n.Stats()
		st.Ticks += s.Ticks
		st.Thinks += s.Thinks
		st.Created += s.Created
		st.Deleted += s.Deleted
		st.Malformed += s.Malformed
		r := n.ReplicaStats()
		rs.updates += r.UpdatesSent
		rs.full += r.FullSent
		rs.keepalives += r.KeepalivesSent
		rs.bytes += r.UpdateBytes
		rs.acks += r.AcksSent
		rs.writes += r.WritesSent
		rs.applied += r.Applied
		rs.stale += r.Stale
		rs.timeouts += r.Timeouts
		rs.dropped += r.Dropped
	}
	// Counters are totals over the run: reset and re-add, so Result may be
	// called more than once.
	for name, v := range map[string]int64{
		"node_ticks": st.Ticks, "node_thinks": st.Thinks, "objects_created": st.Created, "objects_deleted": st.Deleted,
		"packets_malformed": st.Malformed, "updates_sent": rs.updates, "full_states_sent": rs.full,
		"keepalives_sent": rs.keepalives, "update_frame_bytes": rs.bytes, "acks_sent": rs.acks,
		"writes_sent": rs.writes, "updates_applied": rs.applied, "updates_stale": rs.stale,
		"replica_timeouts": rs.timeouts, "replicas_dropped": rs.dropped,
		"staleness_beyond_history": w.truth.beyond,
	} {
		_ = rec.Add(name, v-w.truth.added[name])
		w.truth.added[name] = v
	}
	sum := w.sim.Summary()
	c := w.cfg
	sum.Labels = map[string]string{
		"arch": string(c.Arch), "nodes": strconv.Itoa(c.Nodes), "players_per_node": strconv.Itoa(c.PlayersPerNode),
		"players": strconv.Itoa(c.Players()), "map": c.Map.String(), "sites": w.sitesLabel(),
		"infra_node": strconv.Itoa(int(w.infra)),
	}
	res := &WorldResult{Config: c, Summary: sum, Events: w.sim.Events(), Wall: w.wallRun, sim: w.sim}
	res.Players = groupBandwidth(sum.PerNode[:c.Nodes])
	if w.infra != 0 {
		res.Infra = groupBandwidth(sum.PerNode[c.Nodes:])
	}
	if sum.DurationS > 0 {
		res.Aggregate = float64(sum.Traffic.Sent.Bytes) / sum.DurationS
		res.UpdatesPerS = float64(rs.updates) / sum.DurationS
	}
	if rs.updates > 0 {
		res.BytesPerUpdate = float64(sum.Traffic.ByClass[wire.ClassUpdate].Bytes) / float64(rs.updates)
		res.FrameBytesPerUpdate = float64(rs.bytes) / float64(rs.updates)
	}
	return res
}

func (w *World) sitesLabel() string {
	if w.cfg.Data == SitesPlanetLab {
		return fmt.Sprintf("planetlab:%d", w.cfg.Slice)
	}
	return "wonder:" + strings.Join(w.cfg.Cities[:w.cfg.Nodes], ",")
}

// groupBandwidth averages per-node bandwidth over a group of nodes.
func groupBandwidth(nodes []osim.NodeSummary) NodeGroupBandwidth {
	g := NodeGroupBandwidth{Nodes: len(nodes)}
	classes := make([]float64, wire.NumClasses)
	for _, n := range nodes {
		g.Mean = addRate(g.Mean, n.Mean)
		g.P95 = addRate(g.P95, n.P95)
		if n.UpS > 0 {
			for c := range wire.NumClasses {
				name := wire.Class(c).String()
				classes[c] += float64(n.InByClass[name].Bytes+n.OutByClass[name].Bytes) / n.UpS
			}
		}
	}
	if k := float64(len(nodes)); k > 0 {
		g.Mean = scaleRate(g.Mean, 1/k)
		g.P95 = scaleRate(g.P95, 1/k)
		for c := range classes {
			classes[c] /= k
		}
	}
	for c := range wire.NumClasses {
		g.ByClass = append(g.ByClass, osim.ClassRate{Class: wire.Class(c).String(), Rate: osim.Rate{Total: classes[c]}})
	}
	return g
}

func addRate(a, b osim.Rate) osim.Rate {
	return osim.Rate{In: a.In + b.In, Out: a.Out + b.Out, Total: a.Total + b.Total}
}
func scaleRate(a osim.Rate, f float64) osim.Rate {
	return osim.Rate{In: a.In * f, Out: a.Out * f, Total: a.Total * f}
}

// RunWorld builds and runs one world and returns its result.
func RunWorld(cfg WorldConfig, progress func(WorldProgress)) (*WorldResult, error) {
	w, err := NewWorld(cfg)
	if err != nil {
		return nil, err
	}
	if err := w.Run(progress); err != nil {
		return nil, err
	}
	return w.Result(), nil
}
