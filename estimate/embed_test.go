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
			spec.Factor.Detour, spec.Factor.EmbedWeight = 0, w
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
	spec.Probe = ProbeConfig{Neighbours: 8, Near: 2, NearProfile: true, KeepReplaced: true, Rate: 1, Duration: 60 * time.Second, Churn: 0.3, Downtime: 10 * time.Second}
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

// KeepReplaced keeps fitting the samples of the neighbours a reselection
// replaced, and those pairs stay out of the held-out set; without it they
// are dropped. Either way the nodes probe Neighbours peers at a time.
func TestKeepReplaced(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	_, d := points(rng, 60, 2, 5)
	tr, _ := NewTruth(names(60), d)
	count := map[bool]int{}
	for _, keep := range []bool{false, true} {
		spec := DefaultSpec(MethodFactor)
		spec.Probe = ProbeConfig{Neighbours: 6, Near: 3, NearProfile: true, KeepReplaced: keep, Rate: 1, Duration: 40 * time.Second}
		s, err := NewSession(spec, tr, rand.New(rand.NewPCG(9, 10)))
		if err != nil {
			t.Fatal(err)
		}
		f := s.Estimator().(*Factor)
		for k := range f.obs {
			o := f.obs[k]
			if !o.live {
				continue
			}
			count[keep]++
			if !s.EverMeasured(o.i, o.j) {
				t.Fatalf("keep %v: pair %d,%d has samples but counts as held out", keep, o.i, o.j)
			}
			if !keep && !s.Measured(o.i, o.j) {
				t.Fatalf("pair %d,%d was replaced but keeps its samples", o.i, o.j)
			}
		}
		for i := range 60 {
			if nb := s.Process().Neighbours(i); len(nb) != 6 {
				t.Fatalf("keep %v: node %d probes %d peers", keep, i, len(nb))
			}
		}
	}
	if count[true] <= count[false] {
		t.Errorf("kept %d pairs with KeepReplaced, %d without", count[true], count[false])
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
