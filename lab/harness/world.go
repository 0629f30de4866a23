package harness

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// World is one composed run: the simulator, the node cores with their
// discovery, the game's initial objects and the ground-truth observer.
// Build it with New, then Run it; tests use Sim, Nodes and SetCheck to
// look inside.
type World struct {
	cfg   Config
	sim   *sim.Sim
	nodes []*node.Node     // index = NodeID - 1; the infra node last
	discs []node.Discovery // by node, as nodes
	infra wire.NodeID      // 0 without an infrastructure node
	reg   *world.Registry  // the game's schemas
	// static[k−1]: the game's Kind k stays where it is (Game.Static)
	static []bool
	extra  map[string]string // the game's summary labels
	truth  *truth.Observer
	snaps  []snapPair       // per node: as of its latest frames
	added  map[string]int64 // counters already given to the recorder
	check  func(ev sim.Event)
	warm   bool // the warm-up is over (the locators' histograms were reset)
	// onEvent receives every node's authority events (SetOnEvent).
	onEvent func(node.AuthorityEvent)
	// sites and site: the latency table, and every node's site in it
	// (Delay).
	sites    *geo.Sites
	site     []int
	sameSite time.Duration

	// What Restart needs to build a node again (see faults.go).
	space   discovery.Space
	members []wire.NodeID
	wrap    func(*node.Node) sim.Core
	inc     []uint16     // per node: its incarnation (node.Config.Incarnation)
	gone    []*node.Node // earlier incarnations of restarted nodes, for their Stats
	failed  error        // what the scheduled functions returned (Schedule)

	wallRun time.Duration
	// spawned are the IDs of the game's Spawns, in order.
	spawned []world.ObjectID
	// placer drives the control plane (ArenaConfig.Placement), if any.
	placer *placer
	// standby is the directory's standby rendezvous: the player nodes
	// nearest the others (standbys).
	standby []wire.NodeID
	// watch: a function Run calls between steps (SetWatch); frames: every
	// node's frame times observed (watch.go).
	watch  watcher
	frames []FrameTime
}

// New validates cfg and g and builds the run: the sites, the simulator,
// one node core per player node plus the infrastructure node (each with
// its discovery from discovery.New), the game's spawned objects on their
// nodes, and the ground-truth observer. The game's Registry is shared by
// every node, so its schemas must not change during the run.
func New(cfg Config, g Game) (*World, error) { return newWorld(cfg, g, nil) }

// newWorld is New with an optional adapter around every node core (tests
// wrap cores to lose and duplicate packets they can later stop).
func newWorld(cfg Config, g Game, wrap func(*node.Node) sim.Core) (*World, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	if err := g.validate(cfg.Nodes); err != nil {
		return nil, err
	}
	space := g.space()
	if cfg.KeyMap == discovery.KeyMapAuto {
		cfg.KeyMap = discovery.AutoKeyMap(g.Bounds)
	}
	sites, where, err := buildSites(cfg)
	if err != nil {
		return nil, err
	}
	sc := sim.DefaultConfig()
	sc.Seed, sc.Jitter, sc.Loss, sc.Duplicate, sc.Reorder = cfg.Seed, cfg.Jitter, cfg.Loss, cfg.Duplicate, cfg.Reorder
	sc.Workers = cfg.Workers
	sc.Warmup = max(cfg.Warmup, 0)
	if sc.Workers == 0 {
		sc.Workers = min(runtime.GOMAXPROCS(0), 64)
	}
	s, err := sim.New(sc, sites)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	static := make([]bool, g.Registry.Len())
	for _, sc := range g.Static {
		k, _ := g.Registry.Kind(sc) // validated
		static[k-1] = true
	}
	w := &World{cfg: cfg, sim: s, reg: g.Registry, static: static, extra: maps.Clone(g.Labels), added: map[string]int64{}, space: space, wrap: wrap,
		sites: sites, sameSite: s.Config().SameSite}
	for _, name := range where {
		k, _ := sites.Index(name) // buildSites names sites of the table
		w.site = append(w.site, k)
	}
	total := cfg.Nodes
	if cfg.Arch.HasInfra() {
		total++
		w.infra = wire.NodeID(total)
	}
	w.snaps = make([]snapPair, total)
	w.frames = make([]FrameTime, total)
	w.inc = make([]uint16, total)
	w.members = make([]wire.NodeID, cfg.Nodes)
	for i := range w.members {
		w.members[i] = wire.NodeID(i + 1)
	}
	if cfg.Arch == discovery.Directory {
		w.standby = standbys(sites, where[:cfg.Nodes], discovery.Standbys)
	}
	for i := range total {
		n, disc, core, err := w.buildNode(i, 0)
		if err != nil {
			return nil, err
		}
		w.nodes = append(w.nodes, n)
		w.discs = append(w.discs, disc)
		if err := s.AddNode(n.ID(), where[i], core); err != nil {
			return nil, err
		}
	}
	for _, sp := range g.Spawns {
		n := w.nodes[sp.Node]
		obj, err := n.Spawn(0, sp.Schema, sp.Init)
		if err != nil {
			return nil, fmt.Errorf("lab/harness: spawn on node %d: %w", n.ID(), err)
		}
		w.spawned = append(w.spawned, obj.State().ID())
		if err := s.Flush(n.ID()); err != nil {
			return nil, err
		}
	}
	// The ground-truth observer, and the spawned primaries before any
	// frame.
	w.truth, err = truth.New(truth.Config{Dims: space.Dims, Bounds: g.Bounds, Interest: g.Interest, Infra: w.infra,
		Recorder: s.Recorder(), StalenessEvery: cfg.StalenessEvery, StalenessCap: cfg.StalenessCap})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	for i, n := range w.nodes {
		snap := &w.snaps[i].buf[0].Snapshot
		snap.Take(n, 0)
		if err := w.truth.Observe(snap); err != nil {
			return nil, err
		}
	}
	// The per-kind measures, and with them the moving objects' missing
	// replicas (Result's Views.MissingMoving), are on in every run.
	w.TrackKinds()
	// With them, their floor: what no protocol could have delivered yet.
	if err := w.trackFloor(total); err != nil {
		return nil, err
	}
	s.SetObserver(w.observe)
	s.ObserveOnly(sim.EventTick) // the ground truth needs the frames; Sim.Events counts the rest
	s.ObserveBehind(true)        // it reads only the snapshots, double-buffered
	return w, nil
}

// buildNode builds incarnation inc of the node of index i (ID i+1): its
// discovery from discovery.New, the node core, and the core the simulator
// drives (the test adapter, if any, in the snapshotting adapter). Every
// incarnation has the same discovery configuration; its random source is
// the node's stream of the seed, another for each incarnation.
func (w *World) buildNode(i int, inc uint16) (*node.Node, node.Discovery, sim.Core, error) {
	cfg := w.cfg
	id := wire.NodeID(i + 1)
	disc, err := discovery.New(discovery.Config{Arch: cfg.Arch, Self: id, Members: w.members, Infra: w.infra, Standby: w.standby,
		Space: w.space, Seed: cfg.Seed, KeyMap: cfg.KeyMap, PredTime: cfg.PredTime, Balance: cfg.Balance,
		PaperRouting: cfg.PaperRouting, Prefetch: cfg.Prefetch})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: node %d: %w", lab.ErrConfig, id, err)
	}
	rc := replica.Config{NoAttach: cfg.NoProactive, OnEvent: w.authorityEvent}
	if cfg.Failover {
		members := w.members
		rc.Failover, rc.Peers, rc.Delay = true, func() []wire.NodeID { return members }, w.Delay
	}
	n, err := node.New(node.Config{ID: id, Registry: w.reg, Discovery: disc, Incarnation: inc,
		Rand:    rand.New(rand.NewPCG(cfg.Seed, streamNode^uint64(id)^uint64(inc)<<32)),
		Replica: rc, Prefetch: world.Point{cfg.Prefetch, cfg.Prefetch}, FarMargin: world.Point{cfg.FarMargin, cfg.FarMargin},
		PushMutual: cfg.PushMutual, FetchAhead: cfg.FetchAhead})
	if err != nil {
		return nil, nil, nil, err
	}
	var core sim.Core = n
	if w.wrap != nil {
		core = w.wrap(n)
	}
	return n, disc, &snapCore{Core: core, n: n, snaps: &w.snaps[i], timed: cfg.WallFrameTimes}, nil
}

// streamNode and streamSites are the random streams of a world run, from
// Config.Seed.
const (
	streamNode  = 0x6e6f6465 // "node"
	streamSites = 0x73697465 // "site"
)

// buildSites returns the latency table and the site of every node (the
// player nodes, then the infrastructure node). PlanetLab: the player nodes
// go to distinct hosts drawn from the seed (hosts are reused, in a fresh
// random order, once all 490 are taken). The infrastructure node goes to
// the site with the least mean one-way delay to the player nodes (the
// 1-median: where an operator would put a central server).
func buildSites(cfg Config) (*geo.Sites, []string, error) {
	var sites *geo.Sites
	var where []string
	var err error
	switch cfg.Data {
	case SitesPlanetLab:
		if sites, err = geo.PlanetLabSites(cfg.Slice); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
		}
		rng := rand.New(rand.NewPCG(cfg.Seed, streamSites))
		for len(where) < cfg.Nodes {
			for _, k := range rng.Perm(sites.Len()) {
				if len(where) == cfg.Nodes {
					break
				}
				where = append(where, sites.Name(k))
			}
		}
	case SitesWonder:
		if sites, err = geo.WonderNetworkSites(cfg.Cities[:cfg.Nodes]); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
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

// standbys returns the directory's standby rendezvous among the player
// nodes (node i+1 at site where[i]): the k of least mean one-way delay to
// the other player nodes, nearest first (lower ID on a tie), where a
// rendezvous costs the cluster least after the infrastructure node's
// 1-median site.
func standbys(sites *geo.Sites, where []string, k int) []wire.NodeID {
	idx := make([]int, len(where))
	for i, name := range where {
		idx[i], _ = sites.Index(name)
	}
	sum := make([]time.Duration, len(where))
	ids := make([]wire.NodeID, len(where))
	for i, a := range idx {
		ids[i] = wire.NodeID(i + 1)
		for j, b := range idx {
			if j != i {
				sum[i] += sites.OneWay(a, b)
			}
		}
	}
	slices.SortStableFunc(ids, func(a, b wire.NodeID) int { return cmp.Compare(sum[a-1], sum[b-1]) })
	return ids[:min(k, len(ids)):min(k, len(ids))]
}

// Standby returns the directory's standby rendezvous, in order (nil under
// the other architectures).
func (w *World) Standby() []wire.NodeID { return slices.Clone(w.standby) }

// Spawned returns the IDs of the objects the game's Spawns created, in
// the order of Game.Spawns.
func (w *World) Spawned() []world.ObjectID { return slices.Clone(w.spawned) }

// Config returns the validated configuration (with the key mapping
// resolved).
func (w *World) Config() Config { return w.cfg }

// Sim returns the simulator.
func (w *World) Sim() *sim.Sim { return w.sim }

// Nodes returns the node cores: the player nodes (IDs 1..Nodes), then the
// infrastructure node if the architecture has one; of a restarted node,
// its latest incarnation.
func (w *World) Nodes() []*node.Node { return slices.Clone(w.nodes) }

// Discoveries returns every node's discovery, in the order of Nodes.
func (w *World) Discoveries() []node.Discovery { return slices.Clone(w.discs) }

// Infra returns the infrastructure node's ID (the directory's rendezvous
// or the central server), 0 under broadcast and colyseus.
func (w *World) Infra() wire.NodeID { return w.infra }

// SetCheck sets a function run after every simulated event, after the
// ground-truth observer (tests check invariants with it). It makes the
// simulation serial, so that f sees the cores right after each event.
func (w *World) SetCheck(f func(ev sim.Event)) {
	w.check = f
	_ = w.sim.SetWorkers(1) // only fails inside Run, where the World is not reachable
	if f != nil {
		w.sim.ObserveOnly() // every kind
	} else {
		w.sim.ObserveOnly(sim.EventTick)
	}
	w.sim.ObserveBehind(f == nil) // f may read the cores
}

// SetOnEvent sets a function that receives every node's authority events
// (node.AuthorityEvent: migrations, promotions, writes applied and
// acknowledged, deaths; Self names the node), as they happen, nil to stop.
// Like SetCheck it makes the simulation serial, so that f sees the events
// in the run's order, deterministically, and may read the cores. f must
// not call into the node that reports the event.
func (w *World) SetOnEvent(f func(node.AuthorityEvent)) {
	w.onEvent = f
	if f != nil {
		_ = w.sim.SetWorkers(1) // only fails inside Run, where the World is not reachable
	}
}

func (w *World) authorityEvent(ev node.AuthorityEvent) {
	if w.onEvent != nil {
		w.onEvent(ev)
	}
}

// Delay returns the emulated one-way delay from node a to node b: the
// latency table's between their sites, or the simulator's same-site delay
// (0 for a node the world does not have). It is the delay estimate
// Config.Failover gives every node; jitter comes on top.
func (w *World) Delay(a, b wire.NodeID) time.Duration {
	if a < 1 || b < 1 || int(a) > len(w.site) || int(b) > len(w.site) {
		return 0
	}
	sa, sb := w.site[a-1], w.site[b-1]
	if sa == sb {
		return w.sameSite
	}
	return w.sites.OneWay(sa, sb)
}

// Events returns the number of simulated events so far.
func (w *World) Events() uint64 { return w.sim.Events() }

func (w *World) observe(ev sim.Event) {
	if ev.Kind == sim.EventTick {
		snap := w.snaps[ev.Node-1].next()
		if snap.timed {
			_ = w.sim.Recorder().FrameTime(ev.Node, snap.frame) // the node is up: cannot fail
			w.frames[ev.Node-1].add(snap.frame)
			snap.timed = false
		}
		_ = w.truth.Frame(&snap.Snapshot) // the node is up and time is the sim's: cannot fail
	}
	if w.check != nil {
		w.check(ev)
	}
}

// Progress is what a run reports once per second of game time.
type Progress struct {
	Virtual, Total time.Duration
	Wall           time.Duration // since the run started
	Events         uint64
}

// histResetter is a discovery whose latency histograms can leave the
// warm-up out (the colyseus locator's).
type histResetter interface{ ResetHists() }

// Run simulates until the configured duration, reporting progress (may be
// nil) after every second of game time. It stops early with the error of
// a function scheduled with Schedule, at the end of that second.
func (w *World) Run(progress func(Progress)) error {
	start := time.Now()
	total := w.cfg.Duration
	w.watch.at(w.sim.Now(), false)
	for w.sim.Now() < total {
		step := min(time.Second, total-w.sim.Now())
		if now := w.sim.Now(); now < w.cfg.Warmup {
			step = min(step, w.cfg.Warmup-now)
		}
		step = w.watch.clip(w.sim.Now(), step)
		if err := w.sim.RunFor(step); err != nil {
			return err
		}
		if w.failed != nil {
			return w.failed
		}
		w.watch.at(w.sim.Now(), w.sim.Now() >= total)
		if !w.warm && w.cfg.Warmup > 0 && w.sim.Now() >= w.cfg.Warmup {
			// The locators' latency and hop histograms leave the warm-up
			// out, as the view measures do.
			w.warm = true
			for _, d := range w.discs {
				if r, ok := d.(histResetter); ok {
					r.ResetHists()
				}
			}
		}
		w.wallRun = time.Since(start)
		if progress != nil && !w.watch.within(w.sim.Now(), total, w.cfg.Warmup) {
			progress(Progress{Virtual: w.sim.Now(), Total: total, Wall: w.wallRun, Events: w.sim.Events()})
		}
	}
	return nil
}

// Result is the outcome of a run: the simulator's summary (labelled, with
// the nodes' counters) and the measures derived from it.
type Result struct {
	Config  Config
	Summary *sim.Summary
	// Players is the mean per-node bandwidth over the player nodes (B/s,
	// in, out and in + out), with the mean over nodes of each node's 95th
	// percentile of 1 s bursts, and the mean split by traffic class
	// (in + out).
	Players NodeGroupBandwidth
	// Infra is the infrastructure node's bandwidth (zero without one).
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
	// Placement is what the placement of the players measured (nil
	// without one: ArenaConfig.Placement).
	Placement *PlacementReport
	// Events is the number of simulated events; Wall the wall-clock time
	// of Run (not part of the summary).
	Events uint64
	Wall   time.Duration

	sim   *sim.Sim   // for WriteFiles; nil after DropSeries
	kinds []KindView // the per-kind measures, for WriteFiles (kinds.csv)
}

// Kinds returns the per-kind view measures of the run (World.KindViews).
func (r *Result) Kinds() []KindView { return slices.Clone(r.kinds) }

// NodeGroupBandwidth is the bandwidth of a group of nodes (B/s).
type NodeGroupBandwidth struct {
	Nodes   int
	Mean    sim.Rate
	P95     sim.Rate
	ByClass []sim.ClassRate
}

// SpeedFactor is game time per wall-clock time.
func (r *Result) SpeedFactor() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Config.Duration) / float64(r.Wall)
}

// EventsPerS is simulated events per wall-clock second.
func (r *Result) EventsPerS() float64 {
	if r.Wall <= 0 {
		return 0
	}
	return float64(r.Events) / r.Wall.Seconds()
}

// Sim returns the simulator the result came from (its per-second series
// and parallel windows), or nil after DropSeries.
func (r *Result) Sim() *sim.Sim { return r.sim }

// DropSeries lets go of the simulator, and with it the per-second series
// WriteFiles writes, so that a sweep of many runs keeps only their
// summaries.
func (r *Result) DropSeries() { r.sim = nil }

// Result summarises the run so far: the sim summary with the run's labels
// and the nodes' counters added, and the derived measures.
func (w *World) Result() *Result {
	rec := w.sim.Recorder()
	var st node.Stats
	var rs struct{ updates, full, keepalives, bytes, acks, writes, applied, stale, timeouts, dropped int64 }
	for _, n := range slices.Concat(w.gone, w.nodes) {
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
		"staleness_beyond_history": w.truth.BeyondHistory(),
	} {
		_ = rec.Add(name, v-w.added[name])
		w.added[name] = v
	}
	sum := w.sim.Summary()
	c := w.cfg
	sum.Labels = maps.Clone(w.extra)
	if sum.Labels == nil {
		sum.Labels = map[string]string{}
	}
	maps.Copy(sum.Labels, map[string]string{"arch": string(c.Arch), "nodes": strconv.Itoa(c.Nodes), "sites": w.sitesLabel(),
		"infra_node": strconv.Itoa(int(w.infra))})
	if c.Failover {
		sum.Labels["failover"] = "on"
	}
	if w.placer != nil {
		sum.Labels["placement"] = string(w.placer.cfg.Mode)
	}
	mv := w.truth.MovingView()
	sum.Views.InterestingMoving = mv.Interesting
	sum.Views.MissingMoving = make([]sim.Missing, len(mv.Missing))
	for g, m := range mv.Missing {
		sum.Views.MissingMoving[g] = sim.Missing{GraceMs: m.GraceMs, Fraction: m.Fraction, FrameMean: mv.FrameMean[g], Missing: m.Missing}
	}
	if fv := w.truth.FloorView(); fv.On {
		sum.Views.Floor = make([]sim.Missing, len(fv.All))
		sum.Views.FloorMoving = make([]sim.Missing, len(fv.Moving))
		for g, m := range fv.All {
			sum.Views.Floor[g] = sim.Missing{GraceMs: m.GraceMs, Fraction: m.Fraction, FrameMean: fv.AllFrameMean[g], Missing: m.Missing}
		}
		for g, m := range fv.Moving {
			sum.Views.FloorMoving[g] = sim.Missing{GraceMs: m.GraceMs, Fraction: m.Fraction, FrameMean: fv.MovingFrameMean[g], Missing: m.Missing}
		}
		sum.Views.FloorAbandoned = fv.Abandoned
	}
	res := &Result{Config: c, Summary: sum, Events: w.sim.Events(), Wall: w.wallRun, sim: w.sim, kinds: w.KindViews()}
	if w.placer != nil {
		res.Placement = w.placer.report()
	}
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
func groupBandwidth(nodes []sim.NodeSummary) NodeGroupBandwidth {
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
		g.ByClass = append(g.ByClass, sim.ClassRate{Class: wire.Class(c).String(), Rate: sim.Rate{Total: classes[c]}})
	}
	return g
}

func addRate(a, b sim.Rate) sim.Rate {
	return sim.Rate{In: a.In + b.In, Out: a.Out + b.Out, Total: a.Total + b.Total}
}
func scaleRate(a sim.Rate, f float64) sim.Rate {
	return sim.Rate{In: a.In * f, Out: a.Out * f, Total: a.Total * f}
}

// Run builds and runs one world and returns its result; progress may be
// nil.
func Run(cfg Config, g Game, progress func(Progress)) (*Result, error) {
	w, err := New(cfg, g)
	if err != nil {
		return nil, err
	}
	if err := w.Run(progress); err != nil {
		return nil, err
	}
	return w.Result(), nil
}
