package region

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/overworld/overworld/estimate"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/report"
)

func TestEstimateSmall(t *testing.T) {
	t.Parallel()
	cfg := SmallConfig()
	rep, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + buf.String())
	for _, want := range []string{"Fig. 6", "Figs. 7–8", "Time variation", "mf-32", "Netvigator", "WonderNetwork core selection"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	dir := t.TempDir()
	files, err := report.WriteFiles(rep, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	// Invariants: the reference on measurements is proven optimal, so no
	// core set chosen on estimates beats it; tie-aware hits are at least
	// the strict ones.
	if rep.Wonder == nil || len(rep.Wonder.Accuracy) != len(cfg.Tracked) || len(rep.Wonder.Core) != len(rep.Core) {
		t.Fatalf("WonderNetwork run: %+v", rep.Wonder)
	}
	for _, f := range append(slices.Clone(rep.Refs), rep.Wonder.Refs...) {
		if !f.Optimal || f.Bound > f.Sum || f.SelectSum < f.Sum*(1-1e-9) {
			t.Errorf("reference trial %d k=%d: %+v", f.Trial, f.K, f)
		}
	}
	for _, c := range append(slices.Clone(rep.Core), rep.Wonder.Core...) {
		for _, g := range append(slices.Clone(c.CostGap), c.TotalGap...) {
			if g < -1e-9 {
				t.Errorf("%s: cores on estimates beat the optimum by %g", c.Label, -g)
			}
		}
		if c.Budget > 0 {
			for i, p := range c.Probed {
				if k := i%cfg.MaxK + 1; p > c.Budget*k || p < k {
					t.Errorf("%s: %d columns measured at k = %d, budget %d", c.Label, p, k, c.Budget*k)
				}
			}
		}
		if c.Paper && len(c.TotalGap) != len(c.CostGap) {
			t.Errorf("%s: %d total gaps, %d cost gaps", c.Label, len(c.TotalGap), len(c.CostGap))
		}
		for k, h := range c.Hit {
			if h < 0 || h > 1 || c.HitTie[k] < h || c.HitTie[k] > 1 {
				t.Errorf("%s: hit ratio %g, tie-aware %g at k=%d", c.Label, h, c.HitTie[k], k+1)
			}
		}
	}
}

// TestEstimateDeterministic: two runs of one configuration give the same
// report. The run is smaller than SmallConfig's (two estimators, a tenth
// of its probing to 8 neighbours, 20 core nodes) but takes every path of
// Run: a landmark and an mf session carried over two slices, pooled,
// verified, budgeted and paper rows, noise references and a WonderNetwork
// trial.
func TestEstimateDeterministic(t *testing.T) {
	t.Parallel()
	cfg := SmallConfig()
	cfg.Configs = cfg.Configs[2:4] // landmark-32, mf-32-random
	for i := range cfg.Configs {
		cfg.Configs[i].Spec.Probe.Duration /= 10
		cfg.Configs[i].Spec.Probe.Neighbours = 8
	}
	cfg.CoreNodes = 20
	cfg.Tracked = []string{cfg.Configs[0].Label, cfg.Configs[1].Label}
	cfg.Verified = []string{cfg.Configs[1].Label}
	cfg.Pooled, cfg.Pools = []string{cfg.Configs[0].Label}, []int{2}
	cfg.Paper = []string{cfg.Configs[1].Label}
	cfg.Budgeted, cfg.Budgets = []string{cfg.Configs[0].Label}, []int{2}
	cfg.Slices, cfg.CoreTrials, cfg.MaxK, cfg.NoiseRefs, cfg.ScatterPoints = 2, 1, 4, []float64{0.05}, 50
	cfg.WonderTrials = 1
	a, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []*Report{a, b, a.Wonder, b.Wonder} { // everything but the timing
		for i := range r.Refs {
			r.Refs[i].PaperTime, r.Refs[i].SelectTime, r.Refs[i].ProveTime = 0, 0, 0
		}
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("two runs with one configuration differ")
	}
}

func TestEstimateConfigErrors(t *testing.T) {
	for name, mut := range map[string]func(*Config){
		"no configs":     func(c *Config) { c.Configs = nil },
		"slices":         func(c *Config) { c.Slices = 19 },
		"trials":         func(c *Config) { c.CoreTrials = c.Slices + 1 },
		"core nodes":     func(c *Config) { c.CoreNodes = 1 },
		"max k":          func(c *Config) { c.MaxK = c.CoreNodes + 1 },
		"duplicate":      func(c *Config) { c.Configs = append(c.Configs, c.Configs[0]) },
		"tracked":        func(c *Config) { c.Tracked = []string{"nope"} },
		"verified":       func(c *Config) { c.Verified = []string{"vivaldi-4"} },
		"noise":          func(c *Config) { c.NoiseRefs = []float64{0} },
		"pooled":         func(c *Config) { c.Pooled = []string{"vivaldi-4"} },
		"pool size":      func(c *Config) { c.Pools = []int{0} },
		"paper":          func(c *Config) { c.Paper = []string{"vivaldi-4"} },
		"budgeted":       func(c *Config) { c.Budgeted = []string{"vivaldi-4"} },
		"budget":         func(c *Config) { c.Budgets = []int{0} },
		"bad probe":      func(c *Config) { c.Configs[0].Spec.Probe.Rate = 0 },
		"unknown method": func(c *Config) { c.Configs[0].Spec.Method = "ping" },
	} {
		cfg := DefaultConfig()
		cfg.Configs = slices.Clone(cfg.Configs)
		mut(&cfg)
		if _, err := Run(cfg, nil); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%s: %v, want lab.ErrConfig", name, err)
		}
	}
}

// WonderNetwork groups have every pair measured (the data set has 18 pairs
// measured in neither direction), are distinct cities, and a Config that
// asks for WonderNetwork trials without the WonderNetwork run is rejected.
func TestWonderGroups(t *testing.T) {
	wt, err := estimate.WonderNetwork()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := wonderGroups(wt, 20, 100, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups {
		if len(g) != 100 || !slices.IsSorted(g) || len(slices.Compact(slices.Clone(g))) != 100 {
			t.Fatalf("group %v", g)
		}
		for a, i := range g {
			for _, j := range g[a+1:] {
				if _, ok := wt.Value(i, j); !ok {
					t.Fatalf("group holds %s–%s, measured in neither direction", wt.Name(i), wt.Name(j))
				}
			}
		}
	}
	cfg := SmallConfig()
	cfg.Wonder = false
	if _, err := cfg.Validate(); !errors.Is(err, lab.ErrConfig) {
		t.Errorf("WonderNetwork trials without the run: %v", err)
	}
	cfg.Wonder, cfg.WonderTrials = true, -1
	if _, err := cfg.Validate(); !errors.Is(err, lab.ErrConfig) {
		t.Errorf("negative WonderNetwork trials: %v", err)
	}
}
