package estimate

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
)

// geoTruth is n nodes at random places on Earth whose RTTs are a
// geographic base times a per-node access factor: the structure mf-geo
// assumes.
func geoTruth(t *testing.T, n int, seed uint64) *Truth {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed))
	lat, lon, acc := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range n {
		lat[i], lon[i], acc[i] = rng.Float64()*120-60, rng.Float64()*360-180, 1+rng.Float64()*0.3
	}
	rows := make([][]float64, n)
	for i := range n {
		rows[i] = make([]float64, n)
		for j := range n {
			if i != j {
				rows[i][j] = (3 + 0.02*geo.GreatCircleKm(lat[i], lon[i], lat[j], lon[j])) * acc[i] * acc[j]
			}
		}
	}
	tr, err := NewTruth(names(n), rows)
	if err != nil {
		t.Fatal(err)
	}
	if tr, err = tr.WithPositions(lat, lon); err != nil {
		t.Fatal(err)
	}
	return tr
}

func geoSpec() Spec {
	s := DefaultSpec(MethodFactorGeo)
	s.Probe.Neighbours, s.Probe.Near, s.Probe.Duration = 8, 2, 200*time.Second
	return s
}

// mf-geo is deterministic, never answers below the speed-of-light bound,
// and beats plain mf on held-out pairs of a network built as it assumes.
func TestGeoFactor(t *testing.T) {
	const n, seed = 60, 3
	tr := geoTruth(t, n, seed)
	run := func(m Method) (*Session, []float64) {
		sp := geoSpec()
		sp.Method = m
		s, err := NewSession(sp, tr, rand.New(rand.NewPCG(seed, 7)))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		checkBudget(t, s)
		var out []float64
		for i := range n {
			for j := range n {
				out = append(out, s.Estimator().Estimate(i, j))
			}
		}
		return s, out
	}
	s, a := run(MethodFactorGeo)
	if _, b := run(MethodFactorGeo); !slices.Equal(a, b) {
		t.Fatalf("seed %d: two mf-geo runs with one seed differ", seed)
	}
	if _, ok := s.Estimator().(*GeoFactor); !ok {
		t.Fatalf("seed %d: mf-geo with positions runs %T", seed, s.Estimator())
	}
	lat, lon, _ := tr.Positions()
	for i := range n {
		for j := range n {
			if v, lb := a[i*n+j], geo.GreatCircleKm(lat[i], lon[i], lat[j], lon[j])/100; i != j && v < lb-1e-9 {
				t.Fatalf("seed %d: %d–%d estimated %g ms, under the speed-of-light bound %g", seed, i, j, v, lb)
			}
		}
	}
	g := Evaluate(s.Estimator(), tr, s.EverMeasured)
	p, _ := run(MethodFactor)
	m := Evaluate(p.Estimator(), tr, p.EverMeasured)
	t.Logf("held out: mf-geo within 15%% %.3f median %.3f; mf %.3f %.3f", g.Within15, g.MedianAbs, m.Within15, m.MedianAbs)
	if g.MedianAbs >= m.MedianAbs {
		t.Errorf("seed %d: mf-geo median %.3f not better than mf's %.3f on a geographic network", seed, g.MedianAbs, m.MedianAbs)
	}
}

// Without positions mf-geo is plain mf, estimate for estimate: its
// disputed peers (it has no two models to dispute) stay random.
func TestGeoFactorFallsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	_, d := points(rng, 40, 3, 10)
	tr, _ := NewTruth(names(40), d)
	est := func(m Method) Estimator {
		sp := geoSpec()
		if sp.Method = m; m == MethodFactorGeo {
			sp.Probe.Disputed = 3
		}
		s, err := NewSession(sp, tr, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		return s.Estimator()
	}
	g, f := est(MethodFactorGeo), est(MethodFactor)
	if _, ok := g.(*Factor); !ok {
		t.Fatalf("mf-geo without positions runs %T, want *Factor", g)
	}
	for i := range 40 {
		for j := range 40 {
			if g.Estimate(i, j) != f.Estimate(i, j) {
				t.Fatalf("%d–%d: mf-geo %g, mf %g", i, j, g.Estimate(i, j), f.Estimate(i, j))
			}
		}
	}
}

func TestWithPositionsErrors(t *testing.T) {
	tr, _ := NewTruth(names(3), [][]float64{{0, 1, 2}, {1, 0, 3}, {2, 3, 0}})
	for _, c := range []struct{ lat, lon []float64 }{
		{[]float64{0, 0}, []float64{0, 0, 0}},
		{[]float64{0, 0, 91}, []float64{0, 0, 0}},
		{[]float64{0, 0, 0}, []float64{0, math.NaN(), 0}},
		{[]float64{0, 0, 0}, []float64{0, 0, -181}},
	} {
		if _, err := tr.WithPositions(c.lat, c.lon); err == nil {
			t.Errorf("positions %v, %v accepted", c.lat, c.lon)
		}
	}
	if _, _, ok := tr.Positions(); ok {
		t.Error("a truth without positions reports some")
	}
	if _, err := NewGeoFactor(nil, nil, nil, nil); !errors.Is(err, ErrShape) {
		t.Errorf("nil models: %v", err)
	}
}

// mf-geo's disputed peers: each node ends with its whole budget and no
// more, the run is deterministic, the ranking is the models' log
// disagreement, and a committee the configuration cannot have is refused.
func TestGeoFactorDisputed(t *testing.T) {
	const n, seed = 60, 4
	tr := geoTruth(t, n, seed)
	sp := geoSpec()
	sp.Probe.NearPasses, sp.Probe.Disputed = 2, 3
	run := func() *Session {
		s, err := NewSession(sp, tr, rand.New(rand.NewPCG(seed, 9)))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return s
	}
	s := run()
	checkBudget(t, s)
	for i := range n {
		if nb := s.Process().Neighbours(i); len(nb) != sp.Probe.Neighbours {
			t.Fatalf("seed %d: node %d probes %d peers, want %d", seed, i, len(nb), sp.Probe.Neighbours)
		}
	}
	g := s.Estimator().(*GeoFactor)
	r, again := g.Disputed(), run().Estimator()
	for i := range n {
		for j := range n {
			if g.Estimate(i, j) != again.Estimate(i, j) {
				t.Fatalf("seed %d: two runs differ at %d–%d", seed, i, j)
			}
			if i == j {
				continue
			}
			want := -math.Abs(math.Log(g.plain.Estimate(i, j)) - math.Log(g.geo.Estimate(i, j)))
			if v := r.Estimate(i, j); v != want || v > 0 || v != r.Estimate(j, i) {
				t.Fatalf("seed %d: dispute rank %d–%d %g (reverse %g), want %g ≤ 0", seed, i, j, v, r.Estimate(j, i), want)
			}
		}
	}
	for _, c := range []struct {
		m              Method
		near, disputed int
	}{{MethodFactor, 2, 1}, {MethodVivaldi, 0, 1}, {MethodFactorGeo, 2, -1}, {MethodFactorGeo, 4, 4}} {
		bad := geoSpec()
		bad.Method, bad.Probe.Near, bad.Probe.Disputed = c.m, c.near, c.disputed
		if _, err := NewSession(bad, tr, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrConfig) {
			t.Errorf("%s with %d near and %d disputed of %d: %v, want ErrConfig", c.m, c.near, c.disputed, bad.Probe.Neighbours, err)
		}
	}
}

// A banded draw takes one peer from each distance band of every node (the
// other nodes ranked by distance, cut into as many bands of equal count as
// peers drawn), spreads the probes more evenly over the nodes than a
// uniform draw, and stays uniform without positions.
func TestBandedDraw(t *testing.T) {
	tr := geoTruth(t, 61, 5)
	lat, lon, _ := tr.Positions()
	cfg := DefaultProbeConfig()
	cfg.Neighbours = 6
	spread := func(p *Process) int {
		probed := make([]int, tr.Len())
		for i := range tr.Len() {
			for _, j := range p.Neighbours(i) {
				probed[j]++
			}
		}
		return slices.Max(probed) - slices.Min(probed)
	}
	uni, err := NewProcess(tr, cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Banded = true
	p, err := NewProcess(tr, cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	n := tr.Len()
	for i := range n {
		var others []int
		for j := range n {
			if j != i {
				others = append(others, j)
			}
		}
		km := func(j int) float64 { return geo.GreatCircleKm(lat[i], lon[i], lat[j], lon[j]) }
		slices.SortFunc(others, func(a, b int) int { return cmp.Compare(km(a), km(b)) })
		nb := p.Neighbours(i)
		if len(nb) != 6 {
			t.Fatalf("node %d probes %d peers, want 6", i, len(nb))
		}
		for b, j := range nb {
			if r := slices.Index(others, j); r*6/(n-1) != b {
				t.Fatalf("node %d: peer %d is %d-th nearest, in band %d, want band %d", i, j, r, r*6/(n-1), b)
			}
		}
	}
	if su, sb := spread(uni), spread(p); sb >= su || sb > 2 {
		t.Errorf("probers per node range over %d banded, %d uniform; want banded ≤ 2 and below uniform", sb, su)
	}
	plain, err := NewTruth(names(n), func() [][]float64 {
		rows := make([][]float64, n)
		for i := range n {
			rows[i] = make([]float64, n)
			for j := range n {
				rows[i][j], _ = tr.Value(i, j)
			}
		}
		return rows
	}())
	if err != nil {
		t.Fatal(err)
	}
	q, err := NewProcess(plain, cfg, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if q.km != nil {
		t.Error("banded without positions: distances computed; want a uniform draw")
	}
}
