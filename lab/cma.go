package lab

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/overworld/overworld/geo/topo"
	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/cma"
)

// Scenario names one experiment of the CMA paper's §4.
type Scenario string

const (
	// ScenarioJoin is §4.1 (Figs. 4 and 5): players join one by one until
	// the system is full.
	ScenarioJoin Scenario = "join"
	// ScenarioLeave is §4.2 (Fig. 6): from the full system, every player
	// leaves in the order it joined.
	ScenarioLeave Scenario = "leave"
	// ScenarioDynamic is §4.3 (Fig. 7): populate by "two join, one random
	// player leaves", then random joins and leaves.
	ScenarioDynamic Scenario = "dynamic"
	// ScenarioSpeed is §4.4 (Fig. 8): the run time of join, leave and
	// dynamic with 5, 10 and 20 mirrors.
	ScenarioSpeed Scenario = "speed"
)

// Scenarios returns every scenario, in the paper's order.
func Scenarios() []Scenario {
	return []Scenario{ScenarioJoin, ScenarioLeave, ScenarioDynamic, ScenarioSpeed}
}

// ParseScenarios parses a comma-separated list of scenario names (join,
// leave, dynamic, speed; "all" for every one). The result is in the
// paper's order, without repeats.
func ParseScenarios(s string) ([]Scenario, error) {
	want := map[Scenario]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "all" {
			return Scenarios(), nil
		}
		if !slices.Contains(Scenarios(), Scenario(f)) {
			return nil, fmt.Errorf("%w: scenario %q: want a comma-separated list of join, leave, dynamic, speed (or all)", ErrConfig, f)
		}
		want[Scenario(f)] = true
	}
	var out []Scenario
	for _, sc := range Scenarios() {
		if want[sc] {
			out = append(out, sc)
		}
	}
	return out, nil
}

// CMAConfig configures CMA. Zero fields take the defaults of
// DefaultCMAConfig.
type CMAConfig struct {
	// Data is DataBRITE (default) or DataReal.
	Data Data
	// Seed is the first seed; the run uses seeds Seed, Seed+1, ...,
	// Seed+Seeds−1 (Seeds ≥ 1; default 1). Every seed is a new topology (or
	// player draw) and new random picks.
	Seed  uint64
	Seeds int
	// Scenarios to run (nil: all). The leave scenario starts from the state
	// the join scenario leaves, so it runs the joins too.
	Scenarios []Scenario
	// Topology is the BRITE-style topology for DataBRITE (default
	// topo.CMAPaper(): 50 Barabási–Albert ASes of 100 Waxman routers, links
	// uniform in [0, 25] ms).
	Topology topo.HierConfig
	// Servers are the WonderNetwork cities for DataReal, in order: an
	// m-mirror system uses the first m (default DefaultServers()). There
	// must be as many as the largest system run.
	Servers []string
	// JoinCapacities are the mirror capacities of the join and leave
	// scenarios (paper: 100, 150, 200, 250, 300); JoinPlayers players join
	// (default and paper: the total capacity, 1,000).
	JoinCapacities []int
	JoinPlayers    int
	// DynamicCapacities are the mirror capacities of the dynamic scenario
	// (paper: 50, 75, 100, 125, 150). The system is populated to
	// DynamicPopulate players (paper: 400) and then sees DynamicChurn joins
	// and as many leaves (paper: 500), so the client pool has
	// 2·DynamicPopulate + DynamicChurn clients (paper: 1,300).
	DynamicCapacities []int
	DynamicPopulate   int
	DynamicChurn      int
	// SpeedMirrors are the system sizes of the speed scenario (paper: 5, 10,
	// 20). The capacities of the join (dynamic) scenario are spread over them
	// keeping the total: each mirror's capacity is reduced proportionately.
	SpeedMirrors []int
	// SpeedRepeats is how many times each timed run is repeated (default 5);
	// the report gives the median.
	SpeedRepeats int
	// Bound is the delay requirement of the paper's Fig. 5 (default 100 ms).
	Bound float64
	// SkipVerify skips running cma.Optimal (re-solving from scratch after
	// every event) beside SA in the join, leave and dynamic scenarios.
	SkipVerify bool
}

// DefaultCMAConfig returns the paper's §4 configuration on BRITE-style data
// with seed 1.
func DefaultCMAConfig() CMAConfig {
	return CMAConfig{
		Data:              DataBRITE,
		Seed:              1,
		Seeds:             1,
		Scenarios:         Scenarios(),
		Topology:          topo.CMAPaper(),
		JoinCapacities:    []int{100, 150, 200, 250, 300},
		DynamicCapacities: []int{50, 75, 100, 125, 150},
		DynamicPopulate:   400,
		DynamicChurn:      500,
		SpeedMirrors:      []int{5, 10, 20},
		SpeedRepeats:      5,
		Bound:             100,
	}
}

// SmallCMAConfig returns a configuration a tenth of the paper's size (500
// nodes, 100 joining players, a dynamic pool of 130), for tests and quick
// looks. Its numbers are not comparable with the paper's.
func SmallCMAConfig() CMAConfig {
	c := DefaultCMAConfig()
	c.Topology.AS.N = 5
	c.JoinCapacities = []int{10, 15, 20, 25, 30}
	c.DynamicCapacities = []int{5, 8, 10, 13, 14}
	c.DynamicPopulate = 40
	c.DynamicChurn = 50
	c.SpeedMirrors = []int{5, 10}
	c.SpeedRepeats = 1
	return c
}

// Validate checks the configuration and returns a copy with the defaults
// filled in; errors wrap ErrConfig.
func (c CMAConfig) Validate() (CMAConfig, error) {
	d := DefaultCMAConfig()
	c.Scenarios = slices.Clone(c.Scenarios)
	c.Servers = slices.Clone(c.Servers)
	c.JoinCapacities = slices.Clone(c.JoinCapacities)
	c.DynamicCapacities = slices.Clone(c.DynamicCapacities)
	c.SpeedMirrors = slices.Clone(c.SpeedMirrors)
	if c.Data == "" {
		c.Data = d.Data
	}
	if _, err := ParseData(string(c.Data)); err != nil {
		return c, err
	}
	if c.Seeds == 0 {
		c.Seeds = 1
	}
	if c.Seeds < 0 {
		return c, fmt.Errorf("%w: Seeds %d: want at least 1", ErrConfig, c.Seeds)
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = Scenarios()
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios(), s) {
			return c, fmt.Errorf("%w: unknown scenario %q", ErrConfig, s)
		}
	}
	if c.Topology == (topo.HierConfig{}) {
		c.Topology = d.Topology
	}
	if c.Data == DataBRITE {
		if err := c.Topology.Validate(); err != nil {
			return c, fmt.Errorf("%w: topology: %w", ErrConfig, err)
		}
		if len(c.Servers) > 0 {
			return c, fmt.Errorf("%w: Servers apply to real data; BRITE mirrors are random nodes", ErrConfig)
		}
	}
	if c.Data == DataReal && len(c.Servers) == 0 {
		c.Servers = DefaultServers()
	}
	if len(c.JoinCapacities) == 0 {
		c.JoinCapacities = d.JoinCapacities
	}
	if len(c.DynamicCapacities) == 0 {
		c.DynamicCapacities = d.DynamicCapacities
	}
	for _, caps := range [][]int{c.JoinCapacities, c.DynamicCapacities} {
		for _, k := range caps {
			if k < 1 {
				return c, fmt.Errorf("%w: capacity %d: every mirror needs at least 1 seat", ErrConfig, k)
			}
		}
	}
	joinCap := report.Sum(c.JoinCapacities)
	if c.JoinPlayers == 0 {
		c.JoinPlayers = joinCap
	}
	if c.JoinPlayers < 1 || c.JoinPlayers > joinCap {
		return c, fmt.Errorf("%w: JoinPlayers %d: want 1..%d (the total capacity)", ErrConfig, c.JoinPlayers, joinCap)
	}
	if c.DynamicPopulate == 0 {
		c.DynamicPopulate = d.DynamicPopulate
	}
	if c.DynamicChurn == 0 {
		c.DynamicChurn = d.DynamicChurn
	}
	if c.DynamicPopulate < 1 || c.DynamicChurn < 0 {
		return c, fmt.Errorf("%w: DynamicPopulate %d, DynamicChurn %d: want ≥ 1 and ≥ 0", ErrConfig, c.DynamicPopulate, c.DynamicChurn)
	}
	if dc := report.Sum(c.DynamicCapacities); dc < c.DynamicPopulate+1 {
		return c, fmt.Errorf("%w: dynamic capacity %d cannot hold the %d+1 players of the last populate step", ErrConfig, dc, c.DynamicPopulate)
	}
	if len(c.SpeedMirrors) == 0 {
		c.SpeedMirrors = d.SpeedMirrors
	}
	for _, m := range c.SpeedMirrors {
		if m < 1 || m > 1000 {
			return c, fmt.Errorf("%w: SpeedMirrors %d: want 1..1000", ErrConfig, m)
		}
		for _, caps := range [][]int{c.JoinCapacities, c.DynamicCapacities} {
			if _, err := apportion(caps, m, report.Sum(caps)); err != nil {
				return c, fmt.Errorf("SpeedMirrors %d: %w", m, err)
			}
		}
	}
	if c.SpeedRepeats == 0 {
		c.SpeedRepeats = d.SpeedRepeats
	}
	if c.SpeedRepeats < 1 {
		return c, fmt.Errorf("%w: SpeedRepeats %d: want at least 1", ErrConfig, c.SpeedRepeats)
	}
	if c.Bound == 0 {
		c.Bound = d.Bound
	}
	if !(c.Bound > 0) {
		return c, fmt.Errorf("%w: Bound %v: want a positive delay in ms", ErrConfig, c.Bound)
	}
	if c.Data == DataReal && len(c.Servers) < c.mirrorPool() {
		return c, fmt.Errorf("%w: %d server cities given, the largest system needs %d", ErrConfig, len(c.Servers), c.mirrorPool())
	}
	return c, nil
}

func (c *CMAConfig) has(s Scenario) bool { return slices.Contains(c.Scenarios, s) }

// mirrorPool is the number of mirror locations an instance has: enough for
// every system the configuration runs. On BRITE data the mirrors are drawn
// with the clients, so the pool does not depend on the scenarios chosen
// (running fewer scenarios must not change the others' input); real players
// are drawn independently of the servers.
func (c *CMAConfig) mirrorPool() int {
	n := max(len(c.JoinCapacities), len(c.DynamicCapacities))
	if c.Data == DataBRITE || c.has(ScenarioSpeed) {
		n = max(n, slices.Max(c.SpeedMirrors))
	}
	return n
}

// dynamicPool is the number of clients the dynamic scenario uses.
func (c *CMAConfig) dynamicPool() int { return 2*c.DynamicPopulate + c.DynamicChurn }

// CMAReport is the outcome of CMA.
type CMAReport struct {
	// Config is the configuration run, defaults filled in.
	Config CMAConfig
	// Runs holds one run per seed, in seed order.
	Runs []CMARun
}

// CMARun is the outcome of one seed. Scenarios not run are nil.
type CMARun struct {
	// Seed is the seed this run drew its topology (or players) and events
	// from.
	Seed    uint64
	Join    *ScenarioResult
	Leave   *ScenarioResult
	Dynamic *ScenarioResult
	Speed   *SpeedResult
}

// ScenarioResult is one scenario of one seed: every method's trace through
// the same events.
type ScenarioResult struct {
	Scenario Scenario
	// Mirrors are the mirrors (location name and capacity).
	Mirrors []cma.Mirror
	// Events is the number of events; PopulateEvents of them (dynamic
	// only) are the populate phase.
	Events, PopulateEvents int
	// Traces lists the compared methods, in the paper's order.
	Traces []Trace
	// Optimum is cma.Optimal's trace through the same events (nil with
	// SkipVerify), and Check compares it with the SA trace.
	Optimum *Trace
	Check   Check
	// Nearest (join only) holds every player's delay to its nearest
	// mirror, capacity ignored, ascending: what no assignment can beat, a
	// property of the topology and the mirror picks alone.
	Nearest []float64
}

// Trace is one method's run through a scenario.
type Trace struct {
	// Label is the paper's name of the method ("J-SA", "L-greedy",
	// "J-greedy/L-ignore", ...).
	Label  string
	Method cma.Method
	// Mean and Max are the players' average and maximum delay in ms after
	// each event (index 0 is after the first event); 0 with no players.
	Mean, Max []float64
	// Final holds every player's delay after the last event, ascending.
	Final []float64
	// Moves counts reassignments of connected players (the joining or
	// leaving player not included).
	Moves int
	// FirstFull is the number of the first event (counting from 1) after
	// which some mirror was full; 0 if none ever was.
	FirstFull int
	// Elapsed is the time spent inside Join and Leave.
	Elapsed time.Duration
}

// Check compares SA with the optimum after every event.
type Check struct {
	// Events is the number of events compared.
	Events int
	// TotalDiffers counts events where SA's total delay is not the
	// optimum's (relative tolerance 1e-9): the claim under test, 0 if SA
	// is exact.
	TotalDiffers int
	// MaxDiffers counts events where the maximum delay differs; optimal
	// assignments can differ in their maximum when total delays tie.
	MaxDiffers int
	// WorstRel is the largest relative difference of total delay seen.
	WorstRel float64
}

// SpeedResult is §4.4 for one seed.
type SpeedResult struct {
	// Mirrors are the system sizes, ascending as configured.
	Mirrors []int
	// Rows lists one row per scenario, method and system size.
	Rows []SpeedRow
}

// SpeedRow is the run time of one method through one scenario.
type SpeedRow struct {
	Scenario Scenario // join, leave or dynamic
	Label    string   // the paper's name of the method
	Method   cma.Method
	Mirrors  int
	Events   int
	// Millis is the time inside Join and Leave over the whole scenario, in
	// ms, once per repeat; Median is their median.
	Millis []float64
	Median float64
	// Moves counts reassignments of connected players in one run.
	Moves int
}

// MovesPerEvent returns the players moved per join or leave.
func (r SpeedRow) MovesPerEvent() float64 { return float64(r.Moves) / float64(max(1, r.Events)) }

// CMA runs the CMA paper's §4 as cfg says, one seed after another, calling
// progress (if not nil) with the number of join and leave events processed
// so far and the total.
func CMA(cfg CMAConfig, progress func(done, total int)) (*CMAReport, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	mt := &meter{total: cfg.Seeds * eventsPerSeed(&cfg), fn: progress}
	rep := &CMAReport{Config: cfg}
	var real *realSource
	if cfg.Data == DataReal {
		if real, err = newRealSource(cfg.Servers); err != nil {
			return nil, err
		}
	}
	for i := range cfg.Seeds {
		seed := cfg.Seed + uint64(i)
		var src source = real
		if cfg.Data == DataBRITE {
			b, err := newBriteSource(cfg.Topology, seed)
			if err != nil {
				return nil, err
			}
			src = b
		}
		run, err := runSeed(&cfg, src, seed, mt)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", seed, err)
		}
		rep.Runs = append(rep.Runs, *run)
	}
	mt.finish()
	return rep, nil
}

func runSeed(cfg *CMAConfig, src source, seed uint64, mt *meter) (*CMARun, error) {
	run := &CMARun{Seed: seed}
	pool := cfg.mirrorPool()
	join, err := src.instance(cfg.JoinPlayers, pool, rand.New(rand.NewPCG(seed, streamJoin)))
	if err != nil {
		return nil, err
	}
	dyn, err := src.instance(cfg.dynamicPool(), pool, rand.New(rand.NewPCG(seed, streamDynamic)))
	if err != nil {
		return nil, err
	}
	dynScript, err := dynamicScript(cfg.DynamicPopulate, cfg.DynamicChurn, report.Sum(cfg.DynamicCapacities), rand.New(rand.NewPCG(seed, streamScript)))
	if err != nil {
		return nil, err
	}
	if cfg.has(ScenarioJoin) || cfg.has(ScenarioLeave) {
		j, l, err := runJoinLeave(cfg, join, mt)
		if err != nil {
			return nil, err
		}
		if cfg.has(ScenarioJoin) {
			run.Join = j
		}
		run.Leave = l
	}
	if cfg.has(ScenarioDynamic) {
		if run.Dynamic, err = runDynamic(cfg, dyn, dynScript, mt); err != nil {
			return nil, err
		}
	}
	if cfg.has(ScenarioSpeed) {
		if run.Speed, err = runSpeed(cfg, join, dyn, dynScript, mt); err != nil {
			return nil, err
		}
	}
	return run, nil
}

// runJoinLeave runs §4.1 and, if asked, §4.2: J-greedy and J-SA fill the
// system; L-ignore and L-greedy empty the J-greedy system, L-SA the J-SA one.
func runJoinLeave(cfg *CMAConfig, in *instance, mt *meter) (join, leave *ScenarioResult, err error) {
	mirrors := in.mirrorsFor(cfg.JoinCapacities)
	js, ls := joinScript(cfg.JoinPlayers), leaveScript(cfg.JoinPlayers)
	withLeave := cfg.has(ScenarioLeave)
	type arm struct {
		method              cma.Method
		joinLabel, leaveLbl string
	}
	arms := []arm{{cma.Greedy, "J-greedy", "L-greedy"}, {cma.SA, "J-SA", "L-SA"}}
	if withLeave {
		arms = []arm{{cma.Ignore, "", "L-ignore"}, {cma.Greedy, "J-greedy", "L-greedy"}, {cma.SA, "J-SA", "L-SA"}}
	}
	if !cfg.SkipVerify {
		arms = append(arms, arm{cma.Optimal, "optimum", "optimum"})
	}
	join = &ScenarioResult{Scenario: ScenarioJoin, Mirrors: mirrors, Events: len(js)}
	for c := range cfg.JoinPlayers {
		join.Nearest = append(join.Nearest, slices.Min(in.delay[c][:len(mirrors)]))
	}
	slices.Sort(join.Nearest)
	leave = &ScenarioResult{Scenario: ScenarioLeave, Mirrors: mirrors, Events: len(ls)}
	for _, a := range arms {
		s, err := newSim(in, mirrors, a.method, mt)
		if err != nil {
			return nil, nil, err
		}
		jt := Trace{Label: a.joinLabel, Method: a.method}
		if err := s.run(js, &jt, true, nil); err != nil {
			return nil, nil, err
		}
		switch {
		case a.method == cma.Optimal:
			join.Optimum = &jt
		case a.joinLabel != "":
			join.Traces = append(join.Traces, jt)
		}
		if !withLeave {
			continue
		}
		lt := Trace{Label: a.leaveLbl, Method: a.method}
		if err := s.run(ls, &lt, true, nil); err != nil {
			return nil, nil, err
		}
		if a.method == cma.Optimal {
			leave.Optimum = &lt
		} else {
			leave.Traces = append(leave.Traces, lt)
		}
	}
	join.check()
	if !withLeave {
		return join, nil, nil
	}
	leave.check()
	return join, leave, nil
}

// runDynamic runs §4.3 with the paper's three combinations.
func runDynamic(cfg *CMAConfig, in *instance, script []event, mt *meter) (*ScenarioResult, error) {
	mirrors := in.mirrorsFor(cfg.DynamicCapacities)
	res := &ScenarioResult{Scenario: ScenarioDynamic, Mirrors: mirrors, Events: len(script), PopulateEvents: 3 * cfg.DynamicPopulate}
	methods := []cma.Method{cma.SA, cma.Greedy, cma.Ignore}
	if !cfg.SkipVerify {
		methods = append(methods, cma.Optimal)
	}
	for _, m := range methods {
		s, err := newSim(in, mirrors, m, mt)
		if err != nil {
			return nil, err
		}
		t := Trace{Label: comboLabel(m), Method: m}
		if err := s.run(script, &t, true, nil); err != nil {
			return nil, err
		}
		if m == cma.Optimal {
			res.Optimum = &t
		} else {
			res.Traces = append(res.Traces, t)
		}
	}
	res.check()
	return res, nil
}

// comboLabel is the paper's name of a method as a join/leave combination.
func comboLabel(m cma.Method) string {
	switch m {
	case cma.SA, cma.SARebuild:
		return "J-SA/L-SA"
	case cma.Greedy:
		return "J-greedy/L-greedy"
	case cma.Ignore:
		return "J-greedy/L-ignore"
	}
	return "optimum"
}

// check compares the SA trace with the optimum's after every event.
func (r *ScenarioResult) check() {
	if r.Optimum == nil {
		return
	}
	var sa *Trace
	for i := range r.Traces {
		if r.Traces[i].Method == cma.SA {
			sa = &r.Traces[i]
		}
	}
	if sa == nil {
		return
	}
	c := Check{Events: len(sa.Mean)}
	for i, m := range sa.Mean {
		o := r.Optimum.Mean[i]
		rel := abs(m-o) / max(1, abs(o))
		c.WorstRel = max(c.WorstRel, rel)
		if rel > 1e-9 {
			c.TotalDiffers++
		}
		if sa.Max[i] != r.Optimum.Max[i] {
			c.MaxDiffers++
		}
	}
	r.Check = c
}

// speedArm is one timed method of the speed scenario.
type speedArm struct {
	method cma.Method
	join   string // label of its join row ("" when it has none)
	leave  string
}

var speedArms = []speedArm{
	{cma.Ignore, "", "L-ignore"},
	{cma.Greedy, "J-greedy", "L-greedy"},
	{cma.SARebuild, "J-SA", "L-SA"},
	{cma.SA, "J-SA", "L-SA"},
}

// runSpeed runs §4.4: every scenario, method and system size, timed
// SpeedRepeats times. Each repeat starts from a fresh assigner after a
// garbage collection; only the time inside Join and Leave counts.
func runSpeed(cfg *CMAConfig, join, dyn *instance, dynScript []event, mt *meter) (*SpeedResult, error) {
	res := &SpeedResult{Mirrors: slices.Clone(cfg.SpeedMirrors)}
	js, ls := joinScript(cfg.JoinPlayers), leaveScript(cfg.JoinPlayers)
	for _, m := range cfg.SpeedMirrors {
		jcaps, err := apportion(cfg.JoinCapacities, m, report.Sum(cfg.JoinCapacities))
		if err != nil {
			return nil, err
		}
		dcaps, err := apportion(cfg.DynamicCapacities, m, report.Sum(cfg.DynamicCapacities))
		if err != nil {
			return nil, err
		}
		jm, dm := join.mirrorsFor(jcaps), dyn.mirrorsFor(dcaps)
		for _, a := range speedArms {
			jr := SpeedRow{Scenario: ScenarioJoin, Label: a.join, Method: a.method, Mirrors: m, Events: len(js)}
			lr := SpeedRow{Scenario: ScenarioLeave, Label: a.leave, Method: a.method, Mirrors: m, Events: len(ls)}
			dr := SpeedRow{Scenario: ScenarioDynamic, Label: comboLabel(a.method), Method: a.method, Mirrors: m, Events: len(dynScript)}
			for range cfg.SpeedRepeats {
				s, err := newSim(join, jm, a.method, mt)
				if err != nil {
					return nil, err
				}
				var t Trace
				runtime.GC()
				if err := s.run(js, &t, false, nil); err != nil {
					return nil, err
				}
				jr.Millis, jr.Moves = append(jr.Millis, report.Ms(t.Elapsed)), t.Moves
				t = Trace{}
				runtime.GC()
				if err := s.run(ls, &t, false, nil); err != nil {
					return nil, err
				}
				lr.Millis, lr.Moves = append(lr.Millis, report.Ms(t.Elapsed)), t.Moves
				if s, err = newSim(dyn, dm, a.method, mt); err != nil {
					return nil, err
				}
				t = Trace{}
				runtime.GC()
				if err := s.run(dynScript, &t, false, nil); err != nil {
					return nil, err
				}
				dr.Millis, dr.Moves = append(dr.Millis, report.Ms(t.Elapsed)), t.Moves
			}
			for _, r := range []*SpeedRow{&jr, &lr, &dr} {
				r.Median = report.Median(r.Millis)
			}
			if a.join != "" {
				res.Rows = append(res.Rows, jr)
			}
			res.Rows = append(res.Rows, lr, dr)
		}
	}
	order := map[Scenario]int{ScenarioJoin: 0, ScenarioLeave: 1, ScenarioDynamic: 2}
	sort.SliceStable(res.Rows, func(i, j int) bool { return order[res.Rows[i].Scenario] < order[res.Rows[j].Scenario] })
	return res, nil
}

// eventsPerSeed counts the Join and Leave calls of one seed, for progress.
func eventsPerSeed(cfg *CMAConfig) int {
	n := cfg.JoinPlayers
	dyn := 3*cfg.DynamicPopulate + 2*cfg.DynamicChurn
	verify := 0
	if !cfg.SkipVerify {
		verify = 1
	}
	total := 0
	switch {
	case cfg.has(ScenarioLeave):
		total += (3 + verify) * 2 * n
	case cfg.has(ScenarioJoin):
		total += (2 + verify) * n
	}
	if cfg.has(ScenarioDynamic) {
		total += (3 + verify) * dyn
	}
	if cfg.has(ScenarioSpeed) {
		total += len(cfg.SpeedMirrors) * cfg.SpeedRepeats * len(speedArms) * (2*n + dyn)
	}
	return total
}

// meter reports progress in about 200 steps.
type meter struct {
	done, total, next int
	fn                func(done, total int)
}

func (m *meter) add(n int) {
	m.done += n
	if m.fn != nil && m.done >= m.next {
		m.fn(m.done, m.total)
		m.next = m.done + max(1, m.total/200)
	}
}

func (m *meter) finish() {
	if m.fn != nil {
		m.fn(m.done, m.total)
	}
}

// sim drives one Assigner through scripts and keeps its own view of the
// assignment, built only from the Decisions returned, so every event also
// checks that the Decision is complete.
type sim struct {
	a       *cma.Assigner
	mirrors []cma.Mirror
	in      *instance
	rows    [][]float64 // client → delays to the system's mirrors
	at      []int       // client → mirror index, −1 when not connected
	byID    map[string]int
	mirror  map[string]int
	mt      *meter
}

func newSim(in *instance, mirrors []cma.Mirror, method cma.Method, mt *meter) (*sim, error) {
	a, err := cma.New(mirrors, method)
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	s := &sim{a: a, mirrors: mirrors, in: in, rows: make([][]float64, len(in.clients)), at: make([]int, len(in.clients)),
		byID: make(map[string]int, len(in.clients)), mirror: make(map[string]int, len(mirrors)), mt: mt}
	for i, id := range in.clients {
		s.rows[i] = in.delay[i][:len(mirrors)]
		s.at[i] = -1
		s.byID[id] = i
	}
	for j, m := range mirrors {
		s.mirror[m.ID] = j
	}
	return s, nil
}

// run plays script, adding to t's moves and elapsed time; with record it
// appends the mean and max delay after every event and sets t.Final. Each
// event's duration is appended to durs when it is not nil.
func (s *sim) run(script []event, t *Trace, record bool, durs *[]time.Duration) error {
	if record {
		t.Mean = slices.Grow(t.Mean, len(script))
		t.Max = slices.Grow(t.Max, len(script))
	}
	for i, ev := range script {
		id := s.in.clients[ev.client]
		var d cma.Decision
		var err error
		t0 := time.Now()
		if ev.join {
			d, err = s.a.Join(id, s.rows[ev.client])
		} else {
			d, err = s.a.Leave(id)
		}
		dt := time.Since(t0)
		if err != nil {
			return fmt.Errorf("lab: %v, event %d: %w", s.a.Method(), i, err)
		}
		t.Elapsed += dt
		if durs != nil {
			*durs = append(*durs, dt)
		}
		if err := s.apply(ev, d); err != nil {
			return fmt.Errorf("lab: %v, event %d: %w", s.a.Method(), i, err)
		}
		t.Moves += len(d.Moves)
		if record {
			mean, mx := s.delays()
			t.Mean = append(t.Mean, mean)
			t.Max = append(t.Max, mx)
			if t.FirstFull == 0 && s.anyFull() {
				t.FirstFull = len(t.Mean)
			}
		}
		s.mt.add(1)
	}
	if record {
		t.Final = s.final()
		got, want := 0.0, s.a.TotalDelay()
		for _, d := range t.Final {
			got += d
		}
		if abs(got-want) > 1e-9*max(1, want) {
			return fmt.Errorf("lab: %v: the decisions add up to a total delay of %v ms, the assigner reports %v", s.a.Method(), got, want)
		}
	}
	return nil
}

// apply updates the view with a decision.
func (s *sim) apply(ev event, d cma.Decision) error {
	j, ok := s.mirror[d.Mirror]
	if !ok {
		return fmt.Errorf("decision names unknown mirror %q", d.Mirror)
	}
	if ev.join {
		s.at[ev.client] = j
	} else {
		if s.at[ev.client] != j {
			return fmt.Errorf("leave of %s reports mirror %s", s.in.clients[ev.client], d.Mirror)
		}
		s.at[ev.client] = -1
	}
	for _, mv := range d.Moves {
		c, ok := s.byID[mv.Player]
		if !ok || s.at[c] < 0 {
			return fmt.Errorf("move of unknown player %q", mv.Player)
		}
		to, ok := s.mirror[mv.To]
		if !ok {
			return fmt.Errorf("move to unknown mirror %q", mv.To)
		}
		s.at[c] = to
	}
	return nil
}

// anyFull reports whether some mirror is full.
func (s *sim) anyFull() bool {
	for j, m := range s.mirrors {
		if s.a.Load(j) >= m.Capacity {
			return true
		}
	}
	return false
}

// delays returns the mean and max delay of the connected clients.
func (s *sim) delays() (mean, mx float64) {
	total, n := 0.0, 0
	for c, j := range s.at {
		if j >= 0 {
			d := s.rows[c][j]
			total += d
			mx = max(mx, d)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return total / float64(n), mx
}

// final returns the connected clients' delays, ascending.
func (s *sim) final() []float64 {
	var ds []float64
	for c, j := range s.at {
		if j >= 0 {
			ds = append(ds, s.rows[c][j])
		}
	}
	slices.Sort(ds)
	return ds
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
