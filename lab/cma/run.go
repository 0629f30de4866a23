package cma

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"time"

	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/cma"
)

// Report is the outcome of Run.
type Report struct {
	// Config is the configuration run, defaults filled in.
	Config Config
	// Runs holds one run per seed, in seed order.
	Runs []SeedRun
}

// SeedRun is the outcome of one seed. Scenarios not run are nil.
type SeedRun struct {
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

// Run runs the CMA paper's §4 as cfg says, one seed after another, calling
// progress (if not nil) with the number of join and leave events processed
// so far and the total.
func Run(cfg Config, progress func(done, total int)) (*Report, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	mt := &meter{total: cfg.Seeds * eventsPerSeed(&cfg), fn: progress}
	rep := &Report{Config: cfg}
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

func runSeed(cfg *Config, src source, seed uint64, mt *meter) (*SeedRun, error) {
	run := &SeedRun{Seed: seed}
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
func runJoinLeave(cfg *Config, in *instance, mt *meter) (join, leave *ScenarioResult, err error) {
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
func runDynamic(cfg *Config, in *instance, script []event, mt *meter) (*ScenarioResult, error) {
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
func runSpeed(cfg *Config, join, dyn *instance, dynScript []event, mt *meter) (*SpeedResult, error) {
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
func eventsPerSeed(cfg *Config) int {
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
