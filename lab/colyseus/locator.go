package colyseus

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/wire"
)

// The experiments of Run, each a figure or table of Colyseus §5–§7
// (Bharambe et al., NSDI 2006).
const (
	// ExpFig7b: share of updates that bypass discovery, per object kind.
	ExpFig7b = "fig7b"
	// ExpTable1: missing missiles with proactive replication on and off.
	ExpTable1 = "table1"
	// ExpFig8: the PredTime sweep: bandwidth and missing player replicas.
	ExpFig8 = "fig8"
	// ExpFig9: per-node outbound locator bandwidth (routing, matching,
	// maintenance) against node count, per key mapping and map shape.
	ExpFig9 = "fig9"
	// ExpFig10: discovery latency (median; routing and matching).
	ExpFig10 = "fig10"
	// ExpFig11: missing replicas with 0, 100 and 400 ms of grace.
	ExpFig11 = "fig11"
	// ExpTable2: load balancing: per-node bandwidth spread and maximum.
	ExpTable2 = "table2"
	// ExpFig12: per-node bandwidth of colyseus, broadcast and
	// client-server, with colyseus' aggregate.
	ExpFig12 = "fig12"
)

// Experiments lists the experiments in the order Run runs
// and reports them.
func Experiments() []string {
	return []string{ExpFig7b, ExpTable1, ExpFig8, ExpFig9, ExpFig10, ExpFig11, ExpTable2, ExpFig12}
}

// Config is the reproduction of Colyseus' evaluation of its
// distributed object locator (§5 Fig. 7(b) and Table 1, §6 Figs. 8–11 and
// Table 2, §7.1 Fig. 12(a)) with the colyseus architecture (locate.Mercury
// on internal/ring) in simulated worlds over PlanetLab latencies.
//
// Two kinds of worlds are run. The scale sweep is peer-to-peer (one bot per
// node) for every node count, map shape and key mapping; it feeds Figs.
// 7(b), 9, 10, 11 and 12(a) (which adds broadcast and client-server runs on
// rect maps). The federated runs (FedPlayers bots per node, rect maps) are
// Table 1 (proactive replication on and off), Fig. 8 (PredTime) and Table 2
// (load balancing).
type Config struct {
	// Only selects experiments (Experiments); empty runs them all.
	Only []string
	// Seed is the seed of every run; Slice the PlanetLab time slice.
	Seed  uint64
	Slice int

	// ScaleNodes, ScaleMaps and KeyMaps span the scale sweep, each run
	// ScaleDuration of game time. KeyMaps[0] is the key mapping of Fig.
	// 7(b), Fig. 12(a), Table 1 and Fig. 8.
	ScaleNodes    []int
	ScaleMaps     []arena.MapType
	KeyMaps       []string
	ScaleDuration time.Duration

	// FedPlayers is the bots per node of the federated runs, each
	// FedDuration of game time.
	FedPlayers  int
	FedDuration time.Duration
	// ProactiveNodes are Table 1's node counts.
	ProactiveNodes []int
	// PredNodes and PredTimes are Fig. 8's node count and prediction times
	// (0: no prediction).
	PredNodes int
	PredTimes []time.Duration
	// BalanceNodes and BalanceDuration are Table 2's node count and game
	// time (load balancing acts on a 30 s window: give it time).
	BalanceNodes    int
	BalanceDuration time.Duration

	// PaperRouting adds the paper's routing to Fig. 9: the scale sweep
	// again with harness.ArenaConfig.PaperRouting (no route cache, four long
	// links, as in Mercury), beside overworld's ring (a cache of 2·log2(n)
	// routes, eight long links). The ranking of the key mappings depends
	// on it (README, "overworld lab colyseus").
	PaperRouting bool
	// BalanceTileZipf adds a hot-spot workload to Table 2: its five
	// settings again with tile popularity exponent BalanceTileZipf
	// (harness.ArenaConfig.TileZipf; the model game has every tile alike), so that
	// load is skewed enough for leave-join balancing to act. 0 leaves it
	// out.
	BalanceTileZipf float64

	// Prefetch (m) adds overworld's own series to Fig. 11: the scale
	// sweep on sqr maps with the first key mapping, replicas fetched for
	// the view widened by Prefetch (harness.ArenaConfig.Prefetch), with
	// mutual pushes and the fetch-ahead of colyseus's default fetching
	// (discovery.DefaultFetching; anticipation and jump publication are
	// on in every run). 0 leaves the series out.
	Prefetch float64

	// Workers is the simulator's goroutines per run (0: one per CPU); the
	// results are the same for any value.
	Workers int
	// Net is the network every run emulates (geo.WAN, or the zero
	// Network: the latency table's delays alone, the default).
	Net geo.Network
}

// DefaultConfig is the full reproduction: the scale sweep over
// 16 to 128 peer-to-peer nodes, sqr and rect maps, dht, rangedht-x and
// rangedht-hilbert, 60 s each; Table 1 at 28, 50 and 96 federated nodes;
// Fig. 8 at 50 federated nodes over PredTime 0 to 4 s; Table 2 at 96
// federated nodes for 90 s, on the model workload and on a hot-spot one
// (tile popularity exponent BalanceTileZipf); Fig. 9 with overworld's and
// the paper's routing. About ten minutes on 2 cores.
func DefaultConfig() Config {
	return Config{Seed: 1, Slice: 1,
		ScaleNodes: []int{16, 32, 64, 96, 128}, ScaleMaps: []arena.MapType{arena.Sqr, arena.Rect},
		KeyMaps:       []string{locate.KeyMapHilbert, locate.KeyMapLinear, locate.KeyMapRegions},
		ScaleDuration: 60 * time.Second,
		FedPlayers:    8, FedDuration: 60 * time.Second,
		ProactiveNodes: []int{28, 50, 96},
		PredNodes:      50,
		PredTimes:      []time.Duration{0, 250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second},
		BalanceNodes:   96, BalanceDuration: 90 * time.Second, Prefetch: 15,
		PaperRouting: true, BalanceTileZipf: defaultBalanceTileZipf}
}

// QuickConfig is a CI-sized run of every experiment (about
// half a minute on 2 cores): 9, 16 and 32 peer-to-peer nodes for 20 s with
// rangedht-hilbert and dht, and 16 federated nodes for 20 s (Table 2: 40 s).
func QuickConfig() Config {
	c := DefaultConfig()
	c.ScaleNodes = []int{9, 16, 32}
	c.KeyMaps = []string{locate.KeyMapHilbert, locate.KeyMapRegions}
	c.ScaleDuration = 20 * time.Second
	c.FedDuration = 20 * time.Second
	c.ProactiveNodes = []int{16}
	c.PredNodes = 16
	c.PredTimes = []time.Duration{0, time.Second, 4 * time.Second}
	c.BalanceNodes, c.BalanceDuration = 16, 40*time.Second
	return c
}

// defaultBalanceTileZipf is the tile popularity exponent of Table 2's
// hot-spot workload (README, "overworld lab colyseus").
const defaultBalanceTileZipf = 1

// Validate checks the configuration on a copy (Only sorted into
// Experiments' order, node lists ascending); errors wrap lab.ErrConfig.
func (c Config) Validate() (Config, error) {
	c.Only, c.ScaleNodes, c.ScaleMaps = slices.Clone(c.Only), slices.Clone(c.ScaleNodes), slices.Clone(c.ScaleMaps)
	c.KeyMaps, c.ProactiveNodes, c.PredTimes = slices.Clone(c.KeyMaps), slices.Clone(c.ProactiveNodes), slices.Clone(c.PredTimes)
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", lab.ErrConfig, fmt.Sprintf(format, args...))
	}
	all := Experiments()
	for i, e := range c.Only {
		if !slices.Contains(all, e) {
			return bad("experiment %q: want one of %s", e, strings.Join(all, ", "))
		}
		if slices.Contains(c.Only[:i], e) {
			return bad("experiment %s listed twice", e)
		}
	}
	if len(c.Only) == 0 {
		c.Only = all
	}
	slices.SortFunc(c.Only, func(a, b string) int { return slices.Index(all, a) - slices.Index(all, b) })
	ints := func(name string, v []int) error {
		if len(v) == 0 || len(v) > 50 {
			return fmt.Errorf("%w: %d %s: want 1 to 50", lab.ErrConfig, len(v), name)
		}
		slices.Sort(v)
		for i, n := range v {
			if n < 2 {
				return fmt.Errorf("%w: %s: %d nodes: want at least 2 (a ring)", lab.ErrConfig, name, n)
			}
			if i > 0 && n == v[i-1] {
				return fmt.Errorf("%w: %s: %d listed twice", lab.ErrConfig, name, n)
			}
		}
		return nil
	}
	dur := func(name string, d time.Duration) error {
		if d < time.Second || d > time.Hour {
			return fmt.Errorf("%w: %s %v: want 1s to 1h", lab.ErrConfig, name, d)
		}
		return nil
	}
	for _, err := range []error{ints("scale node counts", c.ScaleNodes), ints("proactive node counts", c.ProactiveNodes),
		dur("scale duration", c.ScaleDuration), dur("federated duration", c.FedDuration), dur("balance duration", c.BalanceDuration)} {
		if err != nil {
			return c, err
		}
	}
	switch {
	case c.Slice < 1 || c.Slice > 18:
		return bad("PlanetLab slice %d: want 1 to 18", c.Slice)
	case len(c.ScaleMaps) == 0 || len(c.ScaleMaps) > 2:
		return bad("%d map shapes: want sqr, rect or both", len(c.ScaleMaps))
	case len(c.KeyMaps) == 0 || len(c.KeyMaps) > 3:
		return bad("%d key mappings: want 1 to 3", len(c.KeyMaps))
	case c.FedPlayers < 1 || c.FedPlayers > 64:
		return bad("federated players per node %d: want 1 to 64", c.FedPlayers)
	case c.PredNodes < 2:
		return bad("PredTime sweep on %d nodes: want at least 2", c.PredNodes)
	case c.BalanceNodes < 2:
		return bad("load balancing on %d nodes: want at least 2", c.BalanceNodes)
	case len(c.PredTimes) == 0 || len(c.PredTimes) > 20:
		return bad("%d prediction times: want 1 to 20", len(c.PredTimes))
	case !(c.BalanceTileZipf >= 0 && c.BalanceTileZipf <= arena.MaxZipf):
		return bad("hot-spot tile popularity exponent %v: want 0 (no hot-spot runs) to %d", c.BalanceTileZipf, arena.MaxZipf)
	case !(c.Prefetch >= 0 && c.Prefetch <= 1000):
		return bad("prefetch %v m: want 0 to 1000", c.Prefetch)
	case c.Workers < 0 || c.Workers > 256:
		return bad("workers %d: want 0 (one per CPU) to 256", c.Workers)
	}
	for i, m := range c.ScaleMaps {
		if m != arena.Sqr && m != arena.Rect {
			return bad("map %v: want sqr or rect", m)
		}
		if slices.Contains(c.ScaleMaps[:i], m) {
			return bad("map %v listed twice", m)
		}
	}
	for i, k := range c.KeyMaps {
		if k != locate.KeyMapHilbert && k != locate.KeyMapLinear && k != locate.KeyMapRegions {
			return bad("key map %q: want %s, %s or %s", k, locate.KeyMapHilbert, locate.KeyMapLinear, locate.KeyMapRegions)
		}
		if slices.Contains(c.KeyMaps[:i], k) {
			return bad("key map %s listed twice", k)
		}
	}
	slices.Sort(c.PredTimes)
	for i, p := range c.PredTimes {
		if p < 0 || p > time.Minute {
			return bad("prediction time %v: want 0 to 1m", p)
		}
		if i > 0 && p == c.PredTimes[i-1] {
			return bad("prediction time %v listed twice", p)
		}
	}
	for _, s := range c.plan() {
		if _, err := s.cfg.Validate(); err != nil {
			return c, fmt.Errorf("%s run, %d nodes × %d: %w", s.group, s.cfg.Nodes, s.cfg.PlayersPerNode, err)
		}
	}
	return c, nil
}

func (c Config) has(exp ...string) bool {
	for _, e := range exp {
		if slices.Contains(c.Only, e) {
			return true
		}
	}
	return false
}

// The run groups of the plan (the CSV's group column).
const (
	groupScale     = "scale"
	groupBaseline  = "baseline"
	groupProactive = "proactive"
	groupPredTime  = "predtime"
	groupBalance   = "balance"
	groupRouting   = "paperrouting"
	groupOverworld = "overworld"
)

// runSpec is one planned world.
type runSpec struct {
	group string
	cfg   harness.ArenaConfig
}

// world returns a colyseus world of n nodes × ppn bots on map m.
func (c Config) world(n, ppn int, m arena.MapType, km string, d time.Duration) harness.ArenaConfig {
	w := harness.DefaultArenaConfig()
	w.Arch, w.Nodes, w.PlayersPerNode, w.Map, w.KeyMap, w.Duration = discovery.Colyseus, n, ppn, m, km, d
	w.Seed, w.Slice, w.Workers = c.Seed, c.Slice, c.Workers
	w.SetNet(c.Net)
	return w
}

// predTime maps a sweep value to harness.ArenaConfig.PredTime (whose 0 means the
// default: no prediction is negative).
func predTime(p time.Duration) time.Duration {
	if p == 0 {
		return -1
	}
	return p
}

// plan lists the worlds the selected experiments need, each once, in run
// order.
func (c Config) plan() []runSpec {
	var out []runSpec
	add := func(group string, w harness.ArenaConfig) {
		for _, s := range out {
			if sameWorld(s.cfg, w) {
				return
			}
		}
		out = append(out, runSpec{group, w})
	}
	if c.has(ExpFig7b, ExpFig9, ExpFig10, ExpFig11, ExpFig12) {
		for _, m := range c.ScaleMaps {
			for _, km := range c.KeyMaps {
				for _, n := range c.ScaleNodes {
					add(groupScale, c.world(n, 1, m, km, c.ScaleDuration))
				}
			}
		}
	}
	if c.has(ExpFig9) && c.PaperRouting {
		for _, m := range c.ScaleMaps {
			for _, km := range c.KeyMaps {
				for _, n := range c.ScaleNodes {
					w := c.world(n, 1, m, km, c.ScaleDuration)
					w.PaperRouting = true
					add(groupRouting, w)
				}
			}
		}
	}
	if c.has(ExpFig11) && c.Prefetch > 0 && slices.Contains(c.ScaleMaps, arena.Sqr) {
		for _, n := range c.ScaleNodes {
			w := c.world(n, 1, arena.Sqr, c.KeyMaps[0], c.ScaleDuration)
			def := discovery.DefaultFetching(discovery.Colyseus)
			w.Prefetch, w.PushMutual, w.FetchAhead = c.Prefetch, def.PushMutual, def.FetchAhead
			add(groupOverworld, w)
		}
	}
	if c.has(ExpFig12) {
		for _, n := range c.ScaleNodes {
			add(groupBaseline, c.world(n, 1, arena.Rect, harness.AutoKeyMap(arena.Rect, n), c.ScaleDuration))
			for _, a := range []discovery.Arch{discovery.ClientServer, discovery.Broadcast} {
				w := c.world(n, 1, arena.Rect, "", c.ScaleDuration)
				w.Arch = a
				add(groupBaseline, w)
			}
		}
	}
	if c.has(ExpTable1) {
		for _, n := range c.ProactiveNodes {
			for _, off := range []bool{false, true} {
				w := c.world(n, c.FedPlayers, arena.Rect, c.KeyMaps[0], c.FedDuration)
				w.NoProactive = off
				add(groupProactive, w)
			}
		}
	}
	if c.has(ExpFig8) {
		for _, p := range c.PredTimes {
			w := c.world(c.PredNodes, c.FedPlayers, arena.Rect, c.KeyMaps[0], c.FedDuration)
			w.PredTime = predTime(p)
			add(groupPredTime, w)
		}
	}
	if c.has(ExpTable2) {
		for _, z := range c.balanceTiles() {
			for _, b := range balanceRuns {
				w := c.world(c.BalanceNodes, c.FedPlayers, arena.Rect, b.keyMap, c.BalanceDuration)
				w.Balance, w.TileZipf = b.balance, z
				add(groupBalance, w)
			}
		}
	}
	return out
}

// balanceTiles are Table 2's workloads (tile popularity exponents): the
// model game's (0) and, with BalanceTileZipf, the hot-spot one.
func (c Config) balanceTiles() []float64 {
	if c.BalanceTileZipf > 0 {
		return []float64{0, c.BalanceTileZipf}
	}
	return []float64{0}
}

// balanceRuns are Table 2's columns: the paper's dht and load-balanced
// rangedht (x), and ours beside them.
var balanceRuns = []struct {
	keyMap  string
	balance bool
}{
	{locate.KeyMapRegions, false},
	{locate.KeyMapLinear, false},
	{locate.KeyMapLinear, true},
	{locate.KeyMapHilbert, false},
	{locate.KeyMapHilbert, true},
}

// sameWorld reports whether two planned worlds are the same run.
func sameWorld(a, b harness.ArenaConfig) bool {
	if a.Arch != discovery.Colyseus || b.Arch != discovery.Colyseus {
		a.KeyMap, b.KeyMap = "", ""
	}
	return a.Arch == b.Arch && a.Nodes == b.Nodes && a.PlayersPerNode == b.PlayersPerNode && a.Map == b.Map &&
		a.KeyMap == b.KeyMap && a.Duration == b.Duration && a.PredTime == b.PredTime && a.Balance == b.Balance &&
		a.NoProactive == b.NoProactive && a.Seed == b.Seed && a.Slice == b.Slice && a.Prefetch == b.Prefetch &&
		a.PushMutual == b.PushMutual && a.FetchAhead == b.FetchAhead &&
		a.PaperRouting == b.PaperRouting && a.Zipf == b.Zipf && a.TileZipf == b.TileZipf
}

// WorldRun is one world of Run with the measures its
// experiments read.
type WorldRun struct {
	// Group is the part of the plan that asked for the run first: scale,
	// paperrouting, baseline, proactive, predtime or balance.
	Group  string
	Result *harness.Result
	// Ring is the colyseus locators' counters (zero for the baselines);
	// Moves the load-balancing leave-joins made.
	Ring  RingResult
	Moves uint64
	// Kinds is the per-kind view measures (harness.KindView), by kind.
	Kinds []harness.KindView
	// Out is the mean over player nodes of their outbound bandwidth (B/s),
	// by traffic class (wire.Class order).
	Out      []float64
	OutTotal float64
	// Total and Matching are the spread over player nodes of the per-node
	// bandwidth, in + out: all classes, and the matching class only.
	Total, Matching Spread
	// MissingNodes is the spread over player nodes of their missing
	// fraction at 0 ms of grace.
	MissingNodes Spread
	// LoadBefore and LoadAfter are the spread over nodes of the ring's
	// load (publications and subscriptions routed to a node per second
	// over the 30 s window, ring.Node.Load) when the window first fills,
	// before load balancing can move a node, and at the end of the run
	// (zero when the run is not longer than the window).
	LoadBefore, LoadAfter Spread

	cfg harness.ArenaConfig // validated
}

// Spread is a distribution over nodes: mean, population standard
// deviation and maximum.
type Spread struct {
	Mean, Std, Max float64
}

// Norm returns the standard deviation and the maximum over the mean (0
// when the mean is 0), as Colyseus Table 2 normalises them.
func (s Spread) Norm() (std, mx float64) {
	if s.Mean <= 0 {
		return 0, 0
	}
	return s.Std / s.Mean, s.Max / s.Mean
}

func spreadOf(xs []float64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	var s Spread
	for _, x := range xs {
		s.Mean += x
		s.Max = max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	for _, x := range xs {
		s.Std += (x - s.Mean) * (x - s.Mean)
	}
	s.Std = math.Sqrt(s.Std / float64(len(xs)))
	return s
}

// Config returns the run's world configuration, validated.
func (r *WorldRun) Config() harness.ArenaConfig { return r.cfg }

// Kind returns the measures of the kind named name ("arena.bot"), and
// whether there is one.
func (r *WorldRun) Kind(name string) (harness.KindView, bool) {
	for _, k := range r.Kinds {
		if k.Kind == name {
			return k, true
		}
	}
	return harness.KindView{}, false
}

// Report is the outcome of Run: every run, in plan
// order.
type Report struct {
	Config  Config
	Runs    []*WorldRun
	Elapsed time.Duration
}

// Run runs the worlds the selected experiments need, one after
// another (each simulation runs on Config.Workers goroutines). progress
// (may be nil) is called with the bot-seconds simulated so far and in all.
func Run(cfg Config, progress func(done, total int)) (*Report, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	plan := cfg.plan()
	weight := func(w harness.ArenaConfig) int {
		return w.Players() * int((w.Duration+time.Second-1)/time.Second)
	}
	total := 0
	for _, s := range plan {
		total += weight(s.cfg)
	}
	done := 0
	rep := &Report{Config: cfg}
	for _, s := range plan {
		base, per := done, s.cfg.Players()
		run, err := runColyseusWorld(s, func(p harness.Progress) {
			if progress != nil {
				progress(base+per*int(p.Virtual/time.Second), total)
			}
		})
		if err != nil {
			return nil, fmt.Errorf("lab colyseus: %s run, %s %s %d nodes × %d: %w", s.group, s.cfg.Arch, s.cfg.Map,
				s.cfg.Nodes, s.cfg.PlayersPerNode, err)
		}
		rep.Runs = append(rep.Runs, run)
		done = base + weight(s.cfg)
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// runColyseusWorld runs one planned world with the per-kind measures on.
func runColyseusWorld(s runSpec, progress func(harness.Progress)) (*WorldRun, error) {
	cfg, err := s.cfg.Validate()
	if err != nil {
		return nil, err
	}
	w, err := harness.NewArena(cfg)
	if err != nil {
		return nil, err
	}
	w.TrackKinds()
	mercs := mercuries(w)
	var before, after Spread
	window := ring.DefaultConfig(0, nil).LoadWindow
	loads := func(now time.Duration) Spread {
		var xs []float64
		for _, m := range mercs {
			xs = append(xs, m.Ring().Load(now))
		}
		return spreadOf(xs)
	}
	err = w.Run(func(p harness.Progress) {
		// Between two seconds of simulation: the rings are at rest.
		if len(mercs) > 0 && p.Total > window {
			if p.Virtual == window {
				before = loads(p.Virtual)
			}
			if p.Virtual == p.Total {
				after = loads(p.Virtual)
			}
		}
		if progress != nil {
			progress(p)
		}
	})
	if err != nil {
		return nil, err
	}
	res := w.Result()
	res.DropSeries() // keep the summary only
	run := &WorldRun{Group: s.group, Result: res, Ring: ringResult(w), Kinds: w.KindViews(), LoadBefore: before, LoadAfter: after,
		cfg: cfg}
	for _, m := range mercs {
		run.Moves += m.Ring().Stats().Moves
	}
	players := res.Summary.PerNode[:res.Config.Nodes]
	run.Out = make([]float64, wire.NumClasses)
	var totals, matching, missing []float64
	match := wire.ClassMatching.String()
	for _, n := range players {
		totals = append(totals, n.Mean.Total)
		run.OutTotal += n.Mean.Out
		if n.UpS > 0 {
			for c := range wire.NumClasses {
				run.Out[c] += float64(n.OutByClass[wire.Class(c).String()].Bytes) / n.UpS
			}
			matching = append(matching, float64(n.InByClass[match].Bytes+n.OutByClass[match].Bytes)/n.UpS)
		}
		if len(n.Missing) > 0 {
			missing = append(missing, n.Missing[0].Fraction)
		}
	}
	if k := float64(len(players)); k > 0 {
		run.OutTotal /= k
		for c := range run.Out {
			run.Out[c] /= k
		}
	}
	run.Total, run.Matching, run.MissingNodes = spreadOf(totals), spreadOf(matching), spreadOf(missing)
	return run, nil
}

// find returns the first run whose configuration satisfies ok, or nil.
func (r *Report) find(ok func(harness.ArenaConfig) bool) *WorldRun {
	for _, run := range r.Runs {
		if ok(run.cfg) {
			return run
		}
	}
	return nil
}

// scale returns the scale sweep's colyseus run of (m, km, n), or nil.
func (r *Report) scale(m arena.MapType, km string, n int) *WorldRun {
	return r.scaleRouting(m, km, n, false)
}

// scaleRouting returns the scale sweep's colyseus run of (m, km, n) with
// the paper's routing or overworld's, or nil.
func (r *Report) scaleRouting(m arena.MapType, km string, n int, paper bool) *WorldRun {
	c := r.Config
	return r.find(func(w harness.ArenaConfig) bool {
		return w.Arch == discovery.Colyseus && w.PlayersPerNode == 1 && w.Map == m && w.KeyMap == km && w.Nodes == n &&
			w.Duration == c.ScaleDuration && !w.Balance && !w.NoProactive && w.PredTime == discovery.DefaultPredTime && w.Prefetch == 0 &&
			w.PaperRouting == paper && w.Zipf == 0 && w.TileZipf == 0
	})
}

// overworld returns the run of overworld's Fig. 11 series at n nodes
// (Prefetch on sqr maps), or nil.
func (r *Report) overworld(n int) *WorldRun {
	c := r.Config
	if c.Prefetch <= 0 {
		return nil
	}
	return r.find(func(w harness.ArenaConfig) bool {
		return w.Arch == discovery.Colyseus && w.PlayersPerNode == 1 && w.Map == arena.Sqr && w.KeyMap == c.KeyMaps[0] &&
			w.Nodes == n && w.Duration == c.ScaleDuration && w.Prefetch == c.Prefetch && w.PushMutual && !w.Balance && !w.NoProactive &&
			!w.PaperRouting && w.Zipf == 0 && w.TileZipf == 0
	})
}

// baseline returns the Fig. 12(a) run of architecture a at n nodes.
func (r *Report) baseline(a discovery.Arch, n int) *WorldRun {
	if a == discovery.Colyseus {
		// The product's choice: the key mapping the map's shape picks.
		return r.scale(arena.Rect, harness.AutoKeyMap(arena.Rect, n), n)
	}
	return r.find(func(w harness.ArenaConfig) bool {
		return w.Arch == a && w.PlayersPerNode == 1 && w.Map == arena.Rect && w.Nodes == n && w.Prefetch == 0 && w.Zipf == 0 && w.TileZipf == 0
	})
}

// fed returns a federated colyseus run on n nodes, on the model workload.
func (r *Report) fed(n int, km string, d, pred time.Duration, balance, noProactive bool) *WorldRun {
	return r.fedTiles(n, km, d, pred, balance, noProactive, 0)
}

// fedTiles returns a federated colyseus run on n nodes with tile
// popularity exponent tiles (harness.ArenaConfig.TileZipf).
func (r *Report) fedTiles(n int, km string, d, pred time.Duration, balance, noProactive bool, tiles float64) *WorldRun {
	c := r.Config
	return r.find(func(w harness.ArenaConfig) bool {
		return w.Arch == discovery.Colyseus && w.PlayersPerNode == c.FedPlayers && w.Map == arena.Rect && w.Nodes == n &&
			w.KeyMap == km && w.Duration == d && w.PredTime == pred && w.Balance == balance && w.NoProactive == noProactive &&
			w.Prefetch == 0 && !w.PaperRouting && w.Zipf == 0 && w.TileZipf == tiles
	})
}

// fig7bMap is the map of Fig. 7(b)'s runs: rect if swept (the paper's
// 96-fed-rect), else the first.
func (c Config) fig7bMap() arena.MapType {
	if slices.Contains(c.ScaleMaps, arena.Rect) {
		return arena.Rect
	}
	return c.ScaleMaps[0]
}

// headlineNodes returns the node count of nodes closest to want.
func headlineNodes(nodes []int, want int) int {
	best := nodes[0]
	for _, n := range nodes {
		if absInt(n-want) < absInt(best-want) {
			best = n
		}
	}
	return best
}

func absInt(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// The game's kinds, as harness.KindView names them.
const (
	kindBot     = "arena.bot"
	kindMissile = "arena.missile"
	kindItem    = "arena.item"
)
