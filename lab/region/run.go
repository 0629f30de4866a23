package region

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/estimate"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/place/core"
)

// Config configures the latency-estimation experiment (§6.3 of
// the region-migration paper, Figs. 6–8) on the embedded PlanetLab data
// and, with Wonder, on the embedded WonderNetwork data.
type Config struct {
	// Seed seeds everything (landmark and neighbour choice, jitter,
	// groups of the core-selection trials).
	Seed uint64
	// Configs are the estimators compared on slice 1 (Fig. 6).
	Configs []EstimateRun
	// Slices is the number of PlanetLab slices the time-variation run
	// walks through (1..18), carrying each estimator over.
	Slices int
	// Tracked are the labels of Configs carried across slices and used for
	// core selection (Figs. 7 and 8).
	Tracked []string
	// CoreNodes is the group size of a core-selection trial (the paper:
	// 100 PlanetLab nodes); MaxK the largest k (25); CoreTrials the number
	// of trials, one per slice 1..CoreTrials (the paper: one per day for 10
	// days).
	CoreNodes, MaxK, CoreTrials int
	// ScatterPoints is the number of pairs drawn for the Fig. 6 scatter.
	ScatterPoints int
	// Verified are the labels of tracked configurations whose core
	// selection is also run with verification (measure the chosen cores'
	// RTTs, re-select, until the chosen cores are all measured).
	Verified []string
	// NoiseRefs are calibration estimators for core selection: the
	// measured matrix itself with each pair multiplied by e^N(0, σ²), one
	// per σ. They show how much estimation error core selection tolerates.
	NoiseRefs []float64
	// Pooled are the labels of tracked configurations whose core
	// selection is also run with a verify pool per multiplier in Pools:
	// measure every player's RTT to the M = Pool·k most promising
	// candidates on the estimates, then solve on those measurements
	// (selectPool).
	Pooled []string
	Pools  []int
	// VerifyPools are pool multipliers for rows that measure the pool and
	// then verify (selectVerified starting with the pool measured).
	VerifyPools []int
	// Budgets are column-budget multipliers B: for each, the configurations
	// of Budgeted also run core selection that measures at most B·k
	// candidate columns (every player's RTT to a candidate) per (trial,
	// k), with the facility-location and with the paper's selection
	// (selectBudget).
	Budgets  []int
	Budgeted []string
	// Paper are the labels of tracked configurations whose core selection
	// is also run with the paper's own selection (core.KMinimum,
	// k-minimum-pairwise), scored against the same selection on the
	// measurements, the paper's definition of its hit ratio.
	Paper []string
	// Wonder also runs the tracked configurations on the embedded
	// WonderNetwork data (242 cities, one snapshot): their accuracy, and
	// WonderTrials core-selection trials, each on CoreNodes random cities
	// whose RTTs are all measured, with every core-selection row of the
	// PlanetLab run.
	Wonder       bool
	WonderTrials int
}

// EstimateRun is one estimator configuration of the experiment.
type EstimateRun struct {
	Label string
	Spec  estimate.Spec
}

// DefaultConfig is the full experiment: the paper's two Vivaldi
// packet rates with 12 neighbours, Vivaldi with 4, 8 and 32
// neighbours, GNP, the Netvigator-style landmark estimator, and mf with 32
// and 16 neighbours, all on slice 1; vivaldi-32, landmark-32, gnp and mf
// carried across 18 slices;
// core selection for k = 1..25 on 100 nodes in 10 trials; the tracked
// configurations and core selection (10 trials) on WonderNetwork.
func DefaultConfig() Config {
	viv := func(label string, nb int, rate float64, d time.Duration) EstimateRun {
		s := estimate.DefaultSpec(estimate.MethodVivaldi)
		s.Probe.Neighbours, s.Probe.Rate, s.Probe.Duration = nb, rate, d
		return EstimateRun{label, s}
	}
	hi, lo := estimate.HighRateConfig(), estimate.LowRateConfig()
	mfRandom := estimate.DefaultSpec(estimate.MethodFactor)
	mfRandom.Probe.Near = 0
	// mf with 16 neighbours: 14 random and 2 added as the nearest, tuned on
	// slice 1 on held-out pairs (better than a quarter, 4: with 16 probes
	// the random ones cover more of the matrix).
	mf16 := estimate.DefaultSpec(estimate.MethodFactor)
	mf16.Probe.Neighbours, mf16.Probe.Near = 16, 2
	// mf-geo with the same budget: the nodes' positions known (WonderNetwork's
	// site table), 10 random peers drawn one per distance band (each the
	// band's least-probed peer), the 2 geographically nearest added in
	// two passes, then 4 disputed ones, one per pass, where its plain and
	// geographic models disagree most; in a pass, a pair one end adds is
	// not added by the other. PlanetLab has no positions: there it is mf-16
	// with its 2 nearest added in two passes, each pair once.
	geo16 := mf16
	geo16.Method = estimate.MethodFactorGeo
	geo16.Probe.NearPasses, geo16.Probe.Disputed = 2, 4
	geo16.Probe.Banded, geo16.Probe.PairOnce = true, true
	return Config{
		Seed: 1,
		Configs: []EstimateRun{
			viv("vivaldi-high-12", hi.Neighbours, hi.Rate, hi.Duration),
			viv("vivaldi-low-12", lo.Neighbours, lo.Rate, lo.Duration),
			viv("vivaldi-4", 4, 1, 2000*time.Second),
			viv("vivaldi-8", 8, 1, 2000*time.Second),
			viv("vivaldi-32", 32, 1, 2000*time.Second),
			{"gnp-15", estimate.DefaultSpec(estimate.MethodGNP)},
			{"landmark-32", estimate.DefaultSpec(estimate.MethodLandmark)},
			{"mf-32-random", mfRandom},
			{"mf-16", mf16},
			{"mf-geo-16", geo16},
			{"mf-32", estimate.DefaultSpec(estimate.MethodFactor)},
		},
		Slices:        18,
		Tracked:       []string{"vivaldi-32", "gnp-15", "landmark-32", "mf-32-random", "mf-16", "mf-geo-16", "mf-32"},
		NoiseRefs:     []float64{0.01, 0.03, 0.1},
		Verified:      []string{"landmark-32", "mf-32"},
		Pooled:        []string{"mf-32"},
		Pools:         []int{2, 4, 6},
		VerifyPools:   []int{2, 3, 4},
		Paper:         []string{"vivaldi-32", "gnp-15", "landmark-32", "mf-32"},
		Budgeted:      []string{"mf-32"},
		Budgets:       []int{2},
		CoreNodes:     100,
		MaxK:          25,
		CoreTrials:    10,
		ScatterPoints: 4000,
		Wonder:        true,
		WonderTrials:  10,
	}
}

// SmallConfig is a quick look (a few seconds): fewer
// configurations, rounds, slices and trials. Not comparable with the paper.
func SmallConfig() Config {
	c := DefaultConfig()
	for i := range c.Configs {
		c.Configs[i].Spec.Probe.Duration /= 10
	}
	c.Configs = slices.DeleteFunc(c.Configs, func(r EstimateRun) bool { return !slices.Contains(c.Tracked, r.Label) })
	c.Slices, c.CoreTrials, c.MaxK, c.CoreNodes, c.WonderTrials = 3, 2, 8, 40, 1
	c.Pooled, c.Pools, c.VerifyPools = []string{"mf-32"}, []int{3}, []int{2}
	c.Paper, c.Budgeted, c.Budgets = []string{"mf-32"}, []string{"mf-32"}, []int{2}
	return c
}

// Validate checks c and returns a copy.
func (c Config) Validate() (Config, error) {
	switch {
	case len(c.Configs) == 0:
		return c, fmt.Errorf("%w: no estimator configurations", lab.ErrConfig)
	case c.Slices < 1 || c.Slices > geo.PlanetLabSlices:
		return c, fmt.Errorf("%w: %d slices, want 1..%d", lab.ErrConfig, c.Slices, geo.PlanetLabSlices)
	case c.CoreTrials < 0 || c.CoreTrials > c.Slices:
		return c, fmt.Errorf("%w: %d core-selection trials, want 0..%d (one per slice)", lab.ErrConfig, c.CoreTrials, c.Slices)
	case c.CoreTrials > 0 && (c.CoreNodes < 2 || c.CoreNodes > 490):
		return c, fmt.Errorf("%w: %d core nodes, want 2..490", lab.ErrConfig, c.CoreNodes)
	case c.CoreTrials > 0 && (c.MaxK < 1 || c.MaxK > c.CoreNodes):
		return c, fmt.Errorf("%w: max k %d, want 1..%d", lab.ErrConfig, c.MaxK, c.CoreNodes)
	case slices.ContainsFunc(c.NoiseRefs, func(s float64) bool { return !(s > 0 && s < 10) }):
		return c, fmt.Errorf("%w: noise references %v, want each in (0, 10)", lab.ErrConfig, c.NoiseRefs)
	case c.WonderTrials < 0 || c.WonderTrials > 100 || c.WonderTrials > 0 && !c.Wonder:
		return c, fmt.Errorf("%w: %d WonderNetwork core-selection trials, want 0..100 (and Wonder set)", lab.ErrConfig, c.WonderTrials)
	case c.WonderTrials > 0 && (c.CoreNodes < 2 || c.CoreNodes > 200 || c.MaxK < 1 || c.MaxK > c.CoreNodes):
		return c, fmt.Errorf("%w: %d core nodes and max k %d on WonderNetwork, want 2..200 nodes and k ≤ nodes", lab.ErrConfig, c.CoreNodes, c.MaxK)
	case c.ScatterPoints < 0:
		return c, fmt.Errorf("%w: %d scatter points", lab.ErrConfig, c.ScatterPoints)
	}
	c.Configs = slices.Clone(c.Configs)
	seen := map[string]bool{}
	for _, r := range c.Configs {
		if r.Label == "" || seen[r.Label] {
			return c, fmt.Errorf("%w: configuration label %q empty or repeated", lab.ErrConfig, r.Label)
		}
		seen[r.Label] = true
		if _, err := estimate.ParseMethod(string(r.Spec.Method)); err != nil {
			return c, fmt.Errorf("%w: %s: %v", lab.ErrConfig, r.Label, err)
		}
		if _, err := r.Spec.Probe.Validate(); err != nil {
			return c, fmt.Errorf("%w: %s: %v", lab.ErrConfig, r.Label, err)
		}
	}
	for _, l := range c.Tracked {
		if !seen[l] {
			return c, fmt.Errorf("%w: tracked %q is not a configuration", lab.ErrConfig, l)
		}
	}
	for _, l := range c.Verified {
		if !slices.Contains(c.Tracked, l) {
			return c, fmt.Errorf("%w: verified %q is not a tracked configuration", lab.ErrConfig, l)
		}
	}
	for _, l := range c.Pooled {
		if !slices.Contains(c.Tracked, l) {
			return c, fmt.Errorf("%w: pooled %q is not a tracked configuration", lab.ErrConfig, l)
		}
	}
	for _, l := range c.Budgeted {
		if !slices.Contains(c.Tracked, l) {
			return c, fmt.Errorf("%w: budgeted %q is not a tracked configuration", lab.ErrConfig, l)
		}
	}
	if slices.ContainsFunc(c.Budgets, func(b int) bool { return b < 1 || b > 100 }) {
		return c, fmt.Errorf("%w: column budgets %v, want each in 1..100", lab.ErrConfig, c.Budgets)
	}
	for _, l := range c.Paper {
		if !slices.Contains(c.Tracked, l) {
			return c, fmt.Errorf("%w: paper-selection %q is not a tracked configuration", lab.ErrConfig, l)
		}
	}
	if slices.ContainsFunc(append(slices.Clone(c.Pools), c.VerifyPools...), func(m int) bool { return m < 1 || m > 100 }) {
		return c, fmt.Errorf("%w: pool multipliers %v and %v, want each in 1..100", lab.ErrConfig, c.Pools, c.VerifyPools)
	}
	return c, nil
}

// Report holds the experiment's results.
type Report struct {
	Config Config
	// Accuracy on slice 1 per configuration (Fig. 6), over all pairs and
	// over the held-out pairs (never measured at any point of the run).
	Accuracy []AccuracyRow
	// Slices: accuracy of each tracked configuration on slices 1..Slices,
	// carried over (time variation).
	Slices []SliceRow
	// Core: core selection on estimates per tracked configuration.
	Core []CoreResult
	// Refs describes the reference (the proven optimum on measurements)
	// per trial and k.
	Refs []RefRow
	// Scatter: measured RTT and directed relative error of random pairs,
	// per configuration (Fig. 6's scatter).
	Scatter map[string][][2]float64
	// Wonder is the WonderNetwork run (Config.Wonder): Accuracy of the
	// tracked configurations, Core and Refs of its WonderTrials trials;
	// its Config has CoreTrials = WonderTrials and Slices = 1. Nil when not
	// run.
	Wonder *Report
}

// AccuracyRow is one configuration's accuracy on slice 1.
type AccuracyRow struct {
	Label   string
	Method  estimate.Method
	PerNode int // neighbours or landmarks
	Rounds  int // probe rounds (0 for landmark methods)
	All     estimate.Accuracy
	// Unmeasured is the accuracy on the held-out pairs: pairs the method
	// never measured at any point of the run (Session.EverMeasured).
	Unmeasured estimate.Accuracy
}

// SliceRow is the accuracy of a tracked configuration on one slice: over
// all pairs, and over the held-out pairs (never measured at any point of
// the run, Session.EverMeasured).
type SliceRow struct {
	Label   string
	Slice   int
	Acc     estimate.Accuracy
	HeldOut estimate.Accuracy
}

// CoreResult is core selection on one configuration's estimates.
type CoreResult struct {
	Label string
	// Noise is σ for a calibration row (the truth with e^N(0, σ²) noise),
	// 0 for an estimator.
	Noise float64
	// Verify marks selection with verification (selectVerified); Probed
	// then holds, per trial and k, the number of candidates whose RTT to
	// every player was measured.
	Verify bool
	Probed []int
	// Pool is the verify-pool multiplier of a pooled row (selectPool), 0
	// otherwise; Probed then holds the pool sizes.
	Pool int
	// Paper marks the paper's own selection (core.KMinimum) on both sides:
	// on the estimates, and as the reference on the measurements. Hit is
	// then the paper's hit ratio; HitTie equals Hit (the ties are those of
	// the facility-location optimum); CostGap is the rise of the paper's
	// objective (the chosen cores' summed measured totals).
	Paper bool
	// Budget is the column-budget multiplier of a budgeted row
	// (selectBudget), 0 otherwise; Probed then holds the columns measured.
	Budget int
	ranks  [][]int // the current trial's candidate ranking (poolRanks)
	// Hit[k-1] is the mean over trials of |cores on estimates ∩ cores on
	// measurements| / k (the paper's hit ratio, Fig. 7a).
	Hit []float64
	// HitTie[k-1] is the hit ratio when a chosen core that can replace an
	// optimal one within 0.1% of the measured optimum (an interchangeable
	// node) counts as a hit: the size of a largest matching of chosen to
	// optimal cores over "equal or interchangeable", over k.
	HitTie []float64
	// MinErr holds, for every core chosen on estimates (all trials and k),
	// the measured RTT to the nearest optimal core (0 = a hit), ms
	// (Fig. 7b "min"); MaxErr the largest of those per (trial, k) ("ecc").
	MinErr, MaxErr []float64
	// EccErr holds, per (trial, k), the directed relative error of the
	// eccentricity the estimates report for their cores against the
	// measured eccentricity of the same cores (Fig. 8).
	EccErr []float64
	// CostGap holds, per trial and k (MaxK values per trial), the relative excess of the measured
	// k-median cost of the cores chosen on estimates over the optimum's.
	CostGap []float64
	// TotalGap holds, per trial and k, the relative excess of the
	// measured total latency (players to their nearest chosen core, the
	// facility-location k-median sum) of the cores chosen over the
	// facility-location optimum's, for every row (= CostGap but for Paper
	// rows): the cost of a selection as players see it.
	TotalGap []float64
}

// Run runs the experiment. progress, when not nil, is called with
// (done, total) steps.
func Run(cfg Config, progress func(done, total int)) (*Report, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg, Scatter: map[string][][2]float64{}}
	total := len(cfg.Configs) + len(cfg.Tracked)*(cfg.Slices-1)
	done := 0
	step := func() {
		done++
		if progress != nil {
			progress(done, total)
		}
	}
	truths := make([]*estimate.Truth, cfg.Slices+1)
	for s := 1; s <= cfg.Slices; s++ {
		if truths[s], err = estimate.PlanetLab(s); err != nil {
			return nil, err
		}
	}
	groups := make([][]int, cfg.CoreTrials)
	grng := rand.New(rand.NewPCG(cfg.Seed, 0x6c6162))
	for t := range groups {
		groups[t] = grng.Perm(truths[1].Len())[:cfg.CoreNodes]
		slices.Sort(groups[t])
	}
	optimal := make([][]coreRef, cfg.CoreTrials) // per trial, per k
	for t := range groups {
		var rows []RefRow
		if optimal[t], rows, err = references(truths[t+1], groups[t], t+1, cfg); err != nil {
			return nil, err
		}
		rep.Refs = append(rep.Refs, rows...)
	}
	for ci, run := range cfg.Configs {
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(ci)+1))
		sess, err := estimate.NewSession(run.Spec, truths[1], rng)
		if err != nil {
			return nil, fmt.Errorf("lab/region: %s: %w", run.Label, err)
		}
		row := AccuracyRow{Label: run.Label, Method: run.Spec.Method, PerNode: run.Spec.PerNode()}
		if run.Spec.Method == estimate.MethodVivaldi || run.Spec.Method == estimate.MethodFactor || run.Spec.Method == estimate.MethodFactorGeo {
			row.Rounds = run.Spec.Probe.Rounds()
		}
		row.All = estimate.Evaluate(sess.Estimator(), truths[1], nil)
		row.Unmeasured = estimate.Evaluate(sess.Estimator(), truths[1], sess.EverMeasured)
		rep.Accuracy = append(rep.Accuracy, row)
		rep.Scatter[run.Label] = scatter(sess.Estimator(), truths[1], cfg.ScatterPoints, cfg.Seed)
		step()
		if !slices.Contains(cfg.Tracked, run.Label) {
			continue
		}
		cr, extra := cfg.coreRows(run.Label)
		for s := 1; s <= cfg.Slices; s++ {
			if s > 1 {
				if err := sess.Advance(truths[s], 0); err != nil {
					return nil, fmt.Errorf("lab/region: %s slice %d: %w", run.Label, s, err)
				}
				step()
			}
			rep.Slices = append(rep.Slices, SliceRow{run.Label, s, estimate.Evaluate(sess.Estimator(), truths[s], nil),
				estimate.Evaluate(sess.Estimator(), truths[s], sess.EverMeasured)})
			if t := s - 1; t < cfg.CoreTrials {
				if err := cfg.trialRows(&cr, extra, run.Label, ci, t, sess.Estimator(), truths[s], groups[t], optimal[t]); err != nil {
					return nil, fmt.Errorf("lab/region: %s slice %d: %w", run.Label, s, err)
				}
			}
		}
		rep.Core = append(rep.Core, finish(cr, extra, cfg.CoreTrials)...)
	}
	for ni, sigma := range cfg.NoiseRefs {
		cr := CoreResult{Label: fmt.Sprintf("truth±%g%%", 100*sigma), Noise: sigma, Hit: make([]float64, cfg.MaxK), HitTie: make([]float64, cfg.MaxK)}
		for t := range cfg.CoreTrials {
			e := newNoisy(truths[t+1], sigma, rand.New(rand.NewPCG(cfg.Seed, 0x6e6f697365+uint64(ni*100+t))))
			if err := coreTrial(&cr, e, truths[t+1], groups[t], optimal[t], cfg); err != nil {
				return nil, err
			}
		}
		cr.average(cfg.CoreTrials)
		rep.Core = append(rep.Core, cr)
	}
	if cfg.Wonder {
		if rep.Wonder, err = runWonder(cfg); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// coreRows returns the core-selection rows of a tracked configuration: the
// plain selection on estimates, and the verified, paper, budgeted and
// pooled rows the configuration asks for.
func (cfg Config) coreRows(label string) (CoreResult, []*CoreResult) {
	row := func(l string) *CoreResult {
		return &CoreResult{Label: l, Hit: make([]float64, cfg.MaxK), HitTie: make([]float64, cfg.MaxK)}
	}
	cr := *row(label)
	var extra []*CoreResult
	if slices.Contains(cfg.Verified, label) {
		r := row(label + "+verify")
		r.Verify = true
		extra = append(extra, r)
	}
	if slices.Contains(cfg.Paper, label) {
		r := row(label + " paper")
		r.Paper = true
		extra = append(extra, r)
	}
	if slices.Contains(cfg.Budgeted, label) {
		for _, b := range cfg.Budgets {
			f, p := row(fmt.Sprintf("%s+verify≤%dk", label, b)), row(fmt.Sprintf("%s paper+verify≤%dk", label, b))
			f.Budget, p.Budget, p.Paper = b, b, true
			extra = append(extra, f, p)
		}
	}
	if slices.Contains(cfg.Pooled, label) {
		for _, m := range cfg.Pools {
			r := row(fmt.Sprintf("%s+pool%dk", label, m))
			r.Pool = m
			extra = append(extra, r)
		}
		for _, m := range cfg.VerifyPools {
			r := row(fmt.Sprintf("%s+pool%dk+verify", label, m))
			r.Pool, r.Verify = m, true
			extra = append(extra, r)
		}
	}
	return cr, extra
}

// trialRows runs one core-selection trial (trial t of configuration ci)
// for a configuration's rows on estimator e.
func (cfg Config) trialRows(cr *CoreResult, extra []*CoreResult, label string, ci, t int, e estimate.Estimator, truth *estimate.Truth, group []int, refs []coreRef) error {
	if err := coreTrial(cr, e, truth, group, refs, cfg); err != nil {
		return err
	}
	var ranks [][]int
	if slices.Contains(cfg.Pooled, label) {
		prng := rand.New(rand.NewPCG(cfg.Seed, 0x706f6f6c+uint64(ci*100+t)))
		var err error
		if ranks, err = poolRanks(e, truth, group, cfg, prng); err != nil {
			return err
		}
	}
	for _, vr := range extra {
		vr.ranks = ranks
		if err := coreTrial(vr, e, truth, group, refs, cfg); err != nil {
			return err
		}
	}
	return nil
}

// finish averages a configuration's rows over the trials.
func finish(cr CoreResult, extra []*CoreResult, trials int) []CoreResult {
	cr.average(trials)
	out := []CoreResult{cr}
	for _, vr := range extra {
		vr.average(trials)
		vr.ranks = nil
		out = append(out, *vr)
	}
	return out
}

// wonderGroups draws trials groups of size cities of t whose pairs are all
// measured (in at least one direction), so that core selection has a
// complete reference matrix.
func wonderGroups(t *estimate.Truth, trials, size int, rng *rand.Rand) ([][]int, error) {
	var groups [][]int
	for tries := 0; len(groups) < trials; tries++ {
		if tries > 1000*trials {
			return nil, fmt.Errorf("%w: no group of %d WonderNetwork cities with every pair measured", lab.ErrConfig, size)
		}
		g := rng.Perm(t.Len())[:size]
		complete := true
		for a, i := range g {
			for _, j := range g[a+1:] {
				if _, ok := t.Value(i, j); !ok {
					complete = false
				}
			}
		}
		if complete {
			slices.Sort(g)
			groups = append(groups, g)
		}
	}
	return groups, nil
}

// runWonder runs the tracked configurations on the WonderNetwork data:
// accuracy over all and held-out pairs, and core selection.
func runWonder(cfg Config) (*Report, error) {
	wt, err := estimate.WonderNetwork()
	if err != nil {
		return nil, err
	}
	wc := cfg
	wc.CoreTrials, wc.Slices = cfg.WonderTrials, 1
	rep := &Report{Config: wc, Scatter: map[string][][2]float64{}}
	groups, err := wonderGroups(wt, wc.CoreTrials, cfg.CoreNodes, rand.New(rand.NewPCG(cfg.Seed, 0x776f6e646572)))
	if err != nil {
		return nil, err
	}
	optimal := make([][]coreRef, len(groups))
	for t, g := range groups {
		var rows []RefRow
		if optimal[t], rows, err = references(wt, g, t+1, wc); err != nil {
			return nil, err
		}
		rep.Refs = append(rep.Refs, rows...)
	}
	for ci, run := range cfg.Configs {
		if !slices.Contains(cfg.Tracked, run.Label) {
			continue
		}
		sess, err := estimate.NewSession(run.Spec, wt, rand.New(rand.NewPCG(cfg.Seed, 0x776e00+uint64(ci))))
		if err != nil {
			return nil, fmt.Errorf("lab/region: WonderNetwork %s: %w", run.Label, err)
		}
		row := AccuracyRow{Label: run.Label, Method: run.Spec.Method, PerNode: run.Spec.PerNode(),
			All: estimate.Evaluate(sess.Estimator(), wt, nil), Unmeasured: estimate.Evaluate(sess.Estimator(), wt, sess.EverMeasured)}
		if run.Spec.Method == estimate.MethodVivaldi || run.Spec.Method == estimate.MethodFactor || run.Spec.Method == estimate.MethodFactorGeo {
			row.Rounds = run.Spec.Probe.Rounds()
		}
		rep.Accuracy = append(rep.Accuracy, row)
		if wc.CoreTrials == 0 {
			continue
		}
		cr, extra := wc.coreRows(run.Label)
		for t, g := range groups {
			if err := wc.trialRows(&cr, extra, run.Label, ci, t, sess.Estimator(), wt, g, optimal[t]); err != nil {
				return nil, fmt.Errorf("lab/region: WonderNetwork %s trial %d: %w", run.Label, t+1, err)
			}
		}
		rep.Core = append(rep.Core, finish(cr, extra, wc.CoreTrials)...)
	}
	for ni, sigma := range cfg.NoiseRefs {
		if wc.CoreTrials == 0 {
			break
		}
		cr := CoreResult{Label: fmt.Sprintf("truth±%g%%", 100*sigma), Noise: sigma, Hit: make([]float64, cfg.MaxK), HitTie: make([]float64, cfg.MaxK)}
		for t, g := range groups {
			e := newNoisy(wt, sigma, rand.New(rand.NewPCG(cfg.Seed, 0x776e6f+uint64(ni*100+t))))
			if err := coreTrial(&cr, e, wt, g, optimal[t], wc); err != nil {
				return nil, err
			}
		}
		cr.average(wc.CoreTrials)
		rep.Core = append(rep.Core, cr)
	}
	return rep, nil
}

// average turns the hit sums over trials into means.
func (cr *CoreResult) average(trials int) {
	for k := range cr.Hit {
		cr.Hit[k] /= float64(max(1, trials))
		cr.HitTie[k] /= float64(max(1, trials))
	}
}

// noisy is the measured matrix with every pair multiplied by e^N(0, σ²):
// a calibration estimator with a known, unstructured error.
type noisy struct {
	t     *estimate.Truth
	noise []float64 // n×n, symmetric
}

func newNoisy(t *estimate.Truth, sigma float64, rng *rand.Rand) noisy {
	n := t.Len()
	e := noisy{t, make([]float64, n*n)}
	for i := range n {
		for j := i + 1; j < n; j++ {
			v, _ := t.Value(i, j)
			x := v * math.Exp(sigma*rng.NormFloat64())
			e.noise[i*n+j], e.noise[j*n+i] = x, x
		}
	}
	return e
}

func (e noisy) Len() int                  { return e.t.Len() }
func (e noisy) Estimate(i, j int) float64 { return e.noise[i*e.t.Len()+j] }

// truthEstimator reads a Truth's values (the measured matrix; the
// embedded PlanetLab slices have no holes).
type truthEstimator struct{ t *estimate.Truth }

func (e truthEstimator) Len() int { return e.t.Len() }
func (e truthEstimator) Estimate(i, j int) float64 {
	v, _ := e.t.Value(i, j)
	return v
}

// selectAll runs k-median core selection for k = 1..MaxK with the group as
// players and candidates, on the estimator's latencies.
func selectAll(e estimate.Estimator, t *estimate.Truth, group []int, cfg Config, out []core.Solution) ([]core.Solution, error) {
	m, err := estimate.Matrix(e, t.Names(), group, group)
	if err != nil {
		return nil, err
	}
	for k := 1; k <= cfg.MaxK; k++ {
		sol, err := core.Select(core.Problem{PlayerCore: m, CoreCore: m, K: k, Objective: core.KMedian}, rand.New(rand.NewPCG(cfg.Seed, uint64(k))))
		if err != nil {
			return nil, err
		}
		out = append(out, sol)
	}
	return out, nil
}

// selectPaper runs the paper's own selection (core.KMinimum,
// k-minimum-pairwise) for k = 1..MaxK on the estimator's latencies.
func selectPaper(e estimate.Estimator, t *estimate.Truth, group []int, cfg Config) ([]core.Solution, error) {
	m, err := estimate.Matrix(e, t.Names(), group, group)
	if err != nil {
		return nil, err
	}
	var out []core.Solution
	for k := 1; k <= cfg.MaxK; k++ {
		sol, err := core.KMinimum(core.Problem{PlayerCore: m, CoreCore: m, K: k, Objective: core.KMedian})
		if err != nil {
			return nil, err
		}
		out = append(out, sol)
	}
	return out, nil
}

// selectVerified is core selection on estimates with verification: select
// on the estimates, measure the RTT from every player to each chosen core
// that is not yet measured (its column, and by symmetry its row), select
// again on the corrected matrix, and stop when every chosen core is
// measured. It removes the winner's curse of selecting on estimates (the
// cores chosen are those whose distances happen to be underestimated) at a
// cost of a few candidates' columns instead of all of them; the number of
// columns measured goes to cr.Probed. With cr.Pool > 0 (a pool+verify row)
// the top cr.Pool·k candidates of cr.ranks are measured first, and a
// selection with no unmeasured core is confirmed by core.Prove (local
// search can stop short of the optimum) before it is accepted.
func selectVerified(e estimate.Estimator, t *estimate.Truth, group []int, cfg Config, cr *CoreResult) ([]core.Solution, error) {
	n := len(group)
	names := make([]string, n)
	base := make([][]float64, n)
	for a, i := range group {
		names[a] = t.Name(i)
		base[a] = make([]float64, n)
		for b, j := range group {
			if i != j {
				base[a][b] = e.Estimate(i, j)
			}
		}
	}
	var out []core.Solution
	for k := 1; k <= cfg.MaxK; k++ {
		data := make([][]float64, n)
		for a := range data {
			data[a] = slices.Clone(base[a])
		}
		measured := make([]bool, n)
		probed := 0
		measure := func(c int) {
			measured[c] = true
			probed++
			for a := range n {
				v, _ := t.Value(group[a], group[c])
				if a == c {
					v = 0
				}
				data[a][c], data[c][a] = v, v
			}
		}
		if cr.Pool > 0 { // a verify pool first (selectPool's ranking)
			for _, c := range cr.ranks[k-1][:min(n, cr.Pool*k)] {
				measure(c)
			}
		}
		for {
			m, err := geo.NewMatrix(names, names, data)
			if err != nil {
				return nil, err
			}
			sol, err := core.Select(core.Problem{PlayerCore: m, CoreCore: m, K: k, Objective: core.KMedian}, rand.New(rand.NewPCG(cfg.Seed, uint64(k))))
			if err != nil {
				return nil, err
			}
			fresh := false
			for _, c := range sol.Cores {
				if measured[c] {
					continue
				}
				measure(c)
				fresh = true
			}
			if !fresh && cr.Pool > 0 {
				// Local search may stop short of the optimum on the
				// corrected matrix: confirm with a proven optimum, and
				// go on verifying if it names unmeasured cores.
				pr, err := core.Prove(core.Problem{PlayerCore: m, CoreCore: m, K: k, Objective: core.KMedian}, rand.New(rand.NewPCG(cfg.Seed, uint64(k))), core.ProveOptions{})
				if err != nil {
					return nil, err
				}
				if pr.Solution.Sum < sol.Sum {
					sol = pr.Solution
				}
				for _, c := range sol.Cores {
					if !measured[c] {
						measure(c)
						fresh = true
					}
				}
			}
			if !fresh {
				out = append(out, sol)
				break
			}
		}
		cr.Probed = append(cr.Probed, probed)
	}
	return out, nil
}

// coreTrial scores core selection on e's estimates against the optimum on
// the measurements, for every k, and accumulates into cr.
func coreTrial(cr *CoreResult, e estimate.Estimator, t *estimate.Truth, group []int, refs []coreRef, cfg Config) error {
	var est []core.Solution
	var err error
	switch {
	case cr.Budget > 0:
		est, err = selectBudget(e, t, group, cfg, cr)
	case cr.Paper:
		est, err = selectPaper(e, t, group, cfg)
	case cr.Verify:
		est, err = selectVerified(e, t, group, cfg, cr)
	case cr.Pool > 0:
		est, err = selectPool(e, t, group, cfg, cr.ranks, cr)
	default:
		est, err = selectAll(e, t, group, cfg, nil)
	}
	if err != nil {
		return err
	}
	meas, err := estimate.Matrix(truthEstimator{t}, t.Names(), group, group)
	if err != nil {
		return err
	}
	for k := 1; k <= cfg.MaxK; k++ {
		o, s := refs[k-1].opt, est[k-1]
		fl := o
		if cr.Paper {
			o = refs[k-1].paper
		}
		hits := 0
		worst := 0.0
		for _, c := range s.Cores {
			if slices.Contains(o.Cores, c) {
				hits++
			}
			d := math.Inf(1)
			for _, oc := range o.Cores {
				d = min(d, meas.At(c, oc))
			}
			cr.MinErr = append(cr.MinErr, d)
			worst = max(worst, d)
		}
		cr.MaxErr = append(cr.MaxErr, worst)
		cr.Hit[k-1] += float64(hits) / float64(k)
		if cr.Paper {
			cr.HitTie[k-1] += float64(hits) / float64(k)
		} else {
			cr.HitTie[k-1] += float64(tieHits(refs[k-1], s.Cores)) / float64(k)
		}
		real, err := core.Evaluate(core.Problem{PlayerCore: meas, K: k}, s.Cores)
		if err != nil {
			return err
		}
		if real.Max > 0 {
			cr.EccErr = append(cr.EccErr, (s.Max-real.Max)/real.Max)
		}
		if fl.Sum > 0 {
			cr.TotalGap = append(cr.TotalGap, (real.Sum-fl.Sum)/fl.Sum)
		}
		switch {
		case cr.Paper:
			costs, err := core.CandidateCosts(core.Problem{PlayerCore: meas, K: k})
			if err != nil {
				return err
			}
			var got, best float64
			for i := range k {
				got += costs[s.Cores[i]]
				best += costs[o.Cores[i]]
			}
			if best > 0 {
				cr.CostGap = append(cr.CostGap, (got-best)/best)
			}
		case o.Sum > 0:
			cr.CostGap = append(cr.CostGap, (real.Sum-o.Sum)/o.Sum)
		}
	}
	return nil
}

// scatter draws n random pairs' (measured RTT, directed relative error).
func scatter(e estimate.Estimator, t *estimate.Truth, n int, seed uint64) [][2]float64 {
	rng := rand.New(rand.NewPCG(seed, 0x736361))
	out := make([][2]float64, 0, n)
	for len(out) < n {
		i, j := rng.IntN(t.Len()), rng.IntN(t.Len())
		if i == j {
			continue
		}
		m, ok := t.Value(i, j)
		if !ok {
			continue
		}
		out = append(out, [2]float64{m, (e.Estimate(i, j) - m) / m})
	}
	return out
}

// Within returns the share of xs with |x| ≤ bound.
func Within(xs []float64, bound float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	c := 0
	for _, x := range xs {
		if math.Abs(x) <= bound {
			c++
		}
	}
	return float64(c) / float64(len(xs))
}
