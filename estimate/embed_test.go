package estimate

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The embedding alone (EmbedWeight 1) completes a Euclidean matrix with
// heights from 10 neighbours per node, where the low-rank model alone
// (EmbedWeight 0) errs more: the metric structure is what it adds.
func TestEmbeddingCompletesMetric(t *testing.T) {
	seeds := uint64(3)
	if testing.Short() {
		seeds = 1
	}
	for seed := uint64(1); seed <= seeds; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		_, d := points(rng, 80, 3, 10)
		tr, _ := NewTruth(names(80), d)
		acc := map[float64]Accuracy{}
		for _, w := range []float64{0, 1} {
			spec := DefaultSpec(MethodFactor)
			spec.Probe = ProbeConfig{Neighbours: 10, Rate: 1, Duration: 40 * time.Second}
			spec.Factor.Detour, spec.Factor.EmbedWeight, spec.Factor.Local = 0, w, 0
			s, err := NewSession(spec, tr, rand.New(rand.NewPCG(seed, 32)))
			if err != nil {
				t.Fatal(err)
			}
			acc[w] = Evaluate(s.Estimator(), tr, s.EverMeasured)
		}
		e, m := acc[1], acc[0]
		if e.MedianAbs > 0.03 || e.Within15 < 0.95 {
			t.Errorf("seed %d: embedding on held-out pairs of a metric: median %.4f, within 15%% %.3f", seed, e.MedianAbs, e.Within15)
		}
		if e.MedianAbs >= m.MedianAbs {
			t.Errorf("seed %d: embedding median %.4f not below the low-rank model's %.4f", seed, e.MedianAbs, m.MedianAbs)
		}
	}
}

// A node that leaves and returns starts afresh in the embedding too, and
// estimates stay finite and positive through churn.
func TestEmbeddingChurn(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	_, d := points(rng, 40, 2, 5)
	tr, _ := NewTruth(names(40), d)
	spec := DefaultSpec(MethodFactor)
	spec.Probe = ProbeConfig{Neighbours: 8, Near: 2, NearProfile: true, Rate: 1, Duration: 60 * time.Second, Churn: 0.3, Downtime: 10 * time.Second}
	s, err := NewSession(spec, tr, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Advance(nil, 0); err != nil {
		t.Fatal(err)
	}
	e := s.Estimator()
	f := e.(*Factor)
	if f.emb.cache == nil {
		t.Fatal("no table of embedding estimates after a fit")
	}
	for i := range 40 {
		for j := range 40 {
			if v := e.Estimate(i, j); math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (i != j && v == 0) {
				t.Fatalf("estimate(%d,%d) = %v", i, j, v)
			}
			// The table agrees with the model, also for nodes that
			// returned since the last fit.
			if l, _, _ := f.emb.logModel(f.emb.x, i, j); i != j && math.Abs(f.emb.log(i, j)-l) > 1e-12 {
				t.Fatalf("embedding table (%d,%d) = %v, model %v", i, j, f.emb.log(i, j), l)
			}
		}
	}
}

// A session spends its budget of Neighbours peers per node over the whole
// run: the near passes add peers and drop none, every pair with samples
// is outside the held-out set, and each node ends with exactly its budget.
func TestSessionBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	_, d := points(rng, 60, 2, 5)
	tr, _ := NewTruth(names(60), d)
	spec := DefaultSpec(MethodFactor)
	spec.Probe = ProbeConfig{Neighbours: 6, Near: 3, NearPasses: 3, NearProfile: true, Rate: 1, Duration: 40 * time.Second}
	s, err := NewSession(spec, tr, rand.New(rand.NewPCG(9, 10)))
	if err != nil {
		t.Fatal(err)
	}
	checkBudget(t, s)
	f := s.Estimator().(*Factor)
	for _, o := range f.obs {
		if !s.EverMeasured(o.i, o.j) || !s.Measured(o.i, o.j) {
			t.Fatalf("pair %d,%d has samples but is not a neighbour pair", o.i, o.j)
		}
	}
	for i := range 60 {
		if nb := s.Process().Neighbours(i); len(nb) != 6 {
			t.Fatalf("node %d probes %d peers, want 6", i, len(nb))
		}
	}
	// A budget shorter than the near passes still adds every near peer.
	spec.Probe.Duration = 2 * time.Second
	if s, err = NewSession(spec, tr, rand.New(rand.NewPCG(9, 11))); err != nil {
		t.Fatalf("2 rounds, 3 near passes: %v", err)
	}
	checkBudget(t, s)
	for i := range 60 {
		if nb := s.Process().Neighbours(i); len(nb) != 6 {
			t.Fatalf("2 rounds: node %d probes %d peers, want 6", i, len(nb))
		}
	}
	spec = DefaultSpec(MethodVivaldi)
	spec.Probe.Near = 2
	if _, err := NewSession(spec, tr, rand.New(rand.NewPCG(9, 10))); !errors.Is(err, ErrConfig) {
		t.Errorf("vivaldi with near neighbours: %v, want ErrConfig", err)
	}
}

// The local correction of an unmeasured pair equals its definition
// computed from scratch (the weighted mean of the blend's log residuals on
// both ends' measured peers, weighted by the peer's nearness to the other
// end), measured pairs keep their measurement, and Local 0 leaves the
// models' estimate.
func TestFactorLocalCorrection(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 31))
	_, d := points(rng, 50, 3, 10)
	tr, _ := NewTruth(names(50), d)
	spec := DefaultSpec(MethodFactor)
	spec.Probe = ProbeConfig{Neighbours: 6, Near: 1, NearProfile: true, Rate: 1, Duration: 40 * time.Second, Jitter: 0.05}
	spec.Factor.Detour = 0
	s, err := NewSession(spec, tr, rand.New(rand.NewPCG(3, 32)))
	if err != nil {
		t.Fatal(err)
	}
	f := s.Estimator().(*Factor)
	n, c := 50, f.cfg
	changed := 0
	for a := range n {
		for b := range n {
			if a == b {
				continue
			}
			if m := f.meas[a*n+b]; m == m {
				if f.Estimate(a, b) != m {
					t.Fatalf("measured pair %d,%d: %v, measurement %v", a, b, f.Estimate(a, b), m)
				}
				continue
			}
			m := f.blend(a, b)
			sw, sr := 0.0, 0.0
			for _, e := range [][2]int{{a, b}, {b, a}} {
				for x := range n {
					if mx := f.meas[e[0]*n+x]; mx == mx && x != e[1] {
						w := math.Exp(-f.blend(x, e[1]) / (m * c.LocalWidth))
						sw += w
						sr += w * (math.Log(mx) - math.Log(f.blend(e[0], x)))
					}
				}
			}
			want := m * math.Exp(c.Local*sr/(sw+localPrior))
			if got := f.Estimate(a, b); math.Abs(got/want-1) > 1e-9 {
				t.Fatalf("pair %d,%d: %v, from scratch %v", a, b, got, want)
			}
			if math.Abs(want/m-1) > 1e-6 {
				changed++
			}
		}
	}
	if changed == 0 {
		t.Fatal("the correction changed no estimate; the test shows nothing")
	}
	f.cfg.Local = 0
	if err := f.Fit(); err != nil {
		t.Fatal(err)
	}
	for a := range n {
		for b := range n {
			if m := f.meas[a*n+b]; a != b && m != m && f.Estimate(a, b) != f.blend(a, b) {
				t.Fatalf("Local 0: pair %d,%d answers %v, blend %v", a, b, f.Estimate(a, b), f.blend(a, b))
			}
		}
	}
}

func TestEmbedConfigErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []func(*FactorConfig){
		func(c *FactorConfig) { c.Embed = -1 },
		func(c *FactorConfig) { c.Embed = 51 },
		func(c *FactorConfig) { c.EmbedWeight = -0.1 },
		func(c *FactorConfig) { c.EmbedWeight = 1.5 },
		func(c *FactorConfig) { c.EmbedWeight = math.NaN() },
		func(c *FactorConfig) { c.Local = -0.1 },
		func(c *FactorConfig) { c.Local = math.NaN() },
		func(c *FactorConfig) { c.Local, c.LocalWidth = 0.5, 0 },
	} {
		cfg := DefaultFactorConfig()
		c(&cfg)
		if _, err := NewFactor(5, cfg, rng); !errors.Is(err, ErrConfig) {
			t.Errorf("Factor %+v: %v", cfg, err)
		}
	}
}

// The embedded WonderNetwork set as a Truth: 242 cities, the pairs missing
// in both directions left out, the one-direction pairs answered.
func TestWonderNetworkTruth(t *testing.T) {
	tr, err := WonderNetwork()
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 242 {
		t.Fatalf("%d endpoints", tr.Len())
	}
	none, one := 0, 0
	for i := range tr.Len() {
		for j := i + 1; j < tr.Len(); j++ {
			_, a := tr.RTT(i, j)
			_, b := tr.RTT(j, i)
			switch {
			case !a && !b:
				none++
			case a != b:
				one++
			}
		}
	}
	if none != 18 || one != 479 {
		t.Errorf("%d pairs measured in neither direction (want 18), %d in one (want 479)", none, one)
	}
}
