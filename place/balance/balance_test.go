package balance

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func count(short, long int) int {
	if testing.Short() {
		return short
	}
	return long
}

// randomCluster draws a small cluster with some servers overloaded.
func randomCluster(rng *rand.Rand, servers, maxLoad, instances int) *Cluster {
	c := &Cluster{MaxLoad: maxLoad, Main: make([]int, servers)}
	for i := range c.Main {
		c.Main[i] = rng.IntN(maxLoad / 3)
	}
	sizes := []int{5, 10, 20, 25, 40}
	for range instances {
		c.Instances = append(c.Instances, Instance{Size: sizes[rng.IntN(len(sizes))], Server: rng.IntN(servers)})
	}
	return c
}

func checkRound(t *testing.T, seed uint64, c *Cluster, cfg Config, r Round) {
	t.Helper()
	// recompute the loads from the moves: conservation, no instance split
	loads := slices.Clone(c.Main)
	where := make([]int, len(c.Instances))
	for k, in := range c.Instances {
		where[k] = in.Server
	}
	seen := map[int]bool{}
	moved, over := 0, 0
	for _, m := range r.Moves {
		if seen[m.Instance] {
			t.Fatalf("seed %d: instance %d moved twice", seed, m.Instance)
		}
		seen[m.Instance] = true
		if where[m.Instance] != m.From || m.From == m.To {
			t.Fatalf("seed %d: move %+v does not match", seed, m)
		}
		where[m.Instance] = m.To
		if m.To == Hosted {
			over += c.Instances[m.Instance].Size
		} else {
			moved += c.Instances[m.Instance].Size
		}
	}
	for k, s := range where {
		if s >= 0 {
			loads[s] += c.Instances[k].Size
		}
	}
	if !slices.Equal(loads, r.Loads) || moved != r.Moved || over != r.Overflowed {
		t.Fatalf("seed %d: loads %v moved %d over %d, round says %v %d %d", seed, loads, moved, over, r.Loads, r.Moved, r.Overflowed)
	}
	total := func(l []int) (s int) {
		for _, x := range l {
			s += x
		}
		return
	}
	if total(r.Before)-total(r.Loads) != over {
		t.Fatalf("seed %d: players not conserved", seed)
	}
	target, limit := cfg.Target(c.MaxLoad), cfg.limit(c.MaxLoad)
	for i, l := range r.Loads {
		if slices.Contains(r.Overloaded, i) {
			if l > c.MaxLoad && !slices.Contains(r.Stuck, i) {
				t.Fatalf("seed %d: server %d at %d not reported stuck", seed, i, l)
			}
			if cfg.Overflow && l > limit && c.Main[i] <= target {
				// with overflow, a shedding server always reaches the target
				// (and may then receive up to the limit)
				t.Fatalf("seed %d: server %d at %d above target %d", seed, i, l, target)
			}
		} else if l > max(r.Before[i], limit) {
			t.Fatalf("seed %d: receiver %d at %d above %d", seed, i, l, limit)
		}
	}
}

func TestBalanceInvariants(t *testing.T) {
	for seed := range uint64(count(100, 1000)) {
		rng := rand.New(rand.NewPCG(seed, 1))
		c := randomCluster(rng, 2+rng.IntN(9), 200+rng.IntN(400), rng.IntN(120))
		for _, cfg := range []Config{DefaultConfig(), PaperConfig(), {Margin: 0.1}, {Margin: 0.3, FillToTarget: true}} {
			r, err := Balance(c, cfg)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			checkRound(t, seed, c, cfg, r)
			if !cfg.Overflow {
				// stuck only when no other server could take any of its instances
				for _, i := range r.Stuck {
					for k, in := range c.Instances {
						if in.Server != i || slices.ContainsFunc(r.Moves, func(m Move) bool { return m.Instance == k }) {
							continue
						}
						for j, l := range r.Loads {
							if j != i && l+in.Size <= cfg.limit(c.MaxLoad) {
								t.Fatalf("seed %d: server %d stuck but instance %d fits on %d", seed, i, k, j)
							}
						}
					}
				}
			}
			p, err := Pack(c, cfg)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			checkRound(t, seed, c, cfg, p.Round)
			if cfg.Overflow && p.Moved+p.Overflowed < p.LowerBound {
				t.Fatalf("seed %d: pack moved %d below its bound %d", seed, p.Moved+p.Overflowed, p.LowerBound)
			}
			if cfg.Overflow && p.Optimal && p.Moved+p.Overflowed > r.Moved+r.Overflowed {
				t.Fatalf("seed %d: optimal pack moved %d, Algorithm 1 %d", seed, p.Moved+p.Overflowed, r.Moved+r.Overflowed)
			}
		}
	}
}

// bruteCover is the reference for minCover: every subset.
func bruteCover(sizes []int, need int) int {
	best := math.MaxInt
	for m := 0; m < 1<<len(sizes); m++ {
		s := 0
		for q, w := range sizes {
			if m>>q&1 == 1 {
				s += w
			}
		}
		if s >= need && s < best {
			best = s
		}
	}
	return best
}

func TestMinCoverExact(t *testing.T) {
	for seed := range uint64(count(300, 3000)) {
		rng := rand.New(rand.NewPCG(seed, 2))
		n := rng.IntN(14)
		sizes := make([]int, n)
		sum := 0
		for q := range sizes {
			sizes[q] = 1 + rng.IntN(40)
			sum += sizes[q]
		}
		need := rng.IntN(sum + 2)
		pick, got, err := minCover(sizes, need)
		if err != nil {
			t.Fatal(err)
		}
		s := 0
		for _, q := range pick {
			s += sizes[q]
		}
		if s != got {
			t.Fatalf("seed %d: picked sum %d, reported %d", seed, s, got)
		}
		want := bruteCover(sizes, need)
		if need <= 0 {
			want = 0
		}
		if want == math.MaxInt {
			want = sum
		}
		if got != want {
			t.Fatalf("seed %d: sizes %v need %d: got %d, exhaustive %d", seed, sizes, need, got, want)
		}
	}
}

// TestPackOptimalExhaustive checks Pack's moved players against every
// assignment of instances to servers on tiny clusters (no overflow).
func TestPackOptimalExhaustive(t *testing.T) {
	for seed := range uint64(count(60, 600)) {
		rng := rand.New(rand.NewPCG(seed, 3))
		servers, n := 2+rng.IntN(2), 1+rng.IntN(6)
		c := &Cluster{MaxLoad: 40 + rng.IntN(40), Main: make([]int, servers)}
		for i := range c.Main {
			c.Main[i] = rng.IntN(20)
		}
		for range n {
			c.Instances = append(c.Instances, Instance{Size: []int{5, 10, 20, 25}[rng.IntN(4)], Server: rng.IntN(servers)})
		}
		cfg := Config{Margin: 0.1}
		p, err := Pack(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		target, limit := cfg.Target(c.MaxLoad), cfg.limit(c.MaxLoad)
		before := c.Loads()
		best := math.MaxInt
		asg := make([]int, n)
		var rec func(k int)
		rec = func(k int) {
			if k == n {
				l := slices.Clone(c.Main)
				moved := 0
				for q, s := range asg {
					l[s] += c.Instances[q].Size
					if s != c.Instances[q].Server {
						moved += c.Instances[q].Size
					}
				}
				for i := range l {
					over := before[i] > c.MaxLoad
					if over && l[i] > target || !over && l[i] > max(limit, before[i]) && l[i] != before[i] {
						return
					}
				}
				best = min(best, moved)
				return
			}
			for s := range servers {
				asg[k] = s
				rec(k + 1)
			}
		}
		rec(0)
		if best == math.MaxInt {
			continue // nothing feasible without overflow
		}
		if p.Optimal && p.Moved != best {
			t.Fatalf("seed %d: pack (optimal) moved %d, exhaustive %d; cluster %+v", seed, p.Moved, best, c)
		}
		if p.LowerBound > best {
			t.Fatalf("seed %d: lower bound %d above the optimum %d", seed, p.LowerBound, best)
		}
	}
}

func TestBadInput(t *testing.T) {
	good := &Cluster{MaxLoad: 10, Main: []int{1, 2}, Instances: []Instance{{Size: 5, Server: 1}}}
	bad := []*Cluster{
		{MaxLoad: 10},
		{MaxLoad: 0, Main: []int{1}},
		{MaxLoad: 10, Main: []int{-1}},
		{MaxLoad: 10, Main: []int{1}, Instances: []Instance{{Size: 0, Server: 0}}},
		{MaxLoad: 10, Main: []int{1}, Instances: []Instance{{Size: 5, Server: 1}}},
		{MaxLoad: 10, Main: []int{1}, Instances: []Instance{{Size: 5, Server: -2}}},
	}
	for k, c := range bad {
		if _, err := Balance(c, DefaultConfig()); !errors.Is(err, ErrCluster) {
			t.Errorf("cluster %d: Balance err %v", k, err)
		}
		if _, err := Pack(c, DefaultConfig()); !errors.Is(err, ErrCluster) {
			t.Errorf("cluster %d: Pack err %v", k, err)
		}
	}
	for _, m := range []float64{-0.1, 1, math.NaN()} {
		if _, err := Balance(good, Config{Margin: m}); !errors.Is(err, ErrConfig) {
			t.Errorf("margin %g: err %v", m, err)
		}
	}
	for _, moves := range [][]Move{{{Instance: 0, From: 0, To: 1}}, {{Instance: 1, From: 1, To: 0}},
		{{Instance: 0, From: 1, To: 0}, {Instance: 0, From: 1, To: Hosted}}, {{Instance: 0, From: 1, To: 5}}} {
		if err := good.Apply(Round{Moves: moves}); err == nil || good.Instances[0].Server != 1 {
			t.Errorf("mismatched moves %v applied: %v", moves, err)
		}
	}
	r, err := Balance(&Cluster{MaxLoad: 10, Main: []int{8, 0}, Instances: []Instance{{Size: 5, Server: 0}}}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{MaxLoad: 10, Main: []int{8, 0}, Instances: []Instance{{Size: 5, Server: 0}}}
	if err := c.Apply(r); err != nil || c.Instances[0].Server != 1 || !slices.Equal(c.Loads(), r.Loads) {
		t.Errorf("apply: %v, %+v, loads %v vs %v", err, c.Instances, c.Loads(), r.Loads)
	}
	for _, cfg := range []SimConfig{{}, func() SimConfig { c := ScenarioB(); c.PeriodS = 1; return c }(),
		func() SimConfig { c := ScenarioB(); c.Heterogeneity = 0.9; return c }(),
		func() SimConfig { c := ScenarioB(); c.Weights = []float64{0, 0, 0, 0, 0}; return c }()} {
		if _, err := Simulate(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("sim config accepted: %v", err)
		}
	}
	g := &Group{N: 2, RTT: []float64{0, -1, -1, 0}}
	if g.Validate() == nil {
		t.Error("negative RTT accepted")
	}
}

func TestGamma(t *testing.T) {
	// CDF against numerical integration of the density
	// closed forms: exponential, and chi-square with one degree of freedom
	for _, x := range []float64{0.1, 1, 3, 9} {
		if d := (Gamma{K: 1, Theta: 2}).CDF(x) - (1 - math.Exp(-x/2)); math.Abs(d) > 1e-13 {
			t.Errorf("exponential CDF(%g) off by %g", x, d)
		}
		if d := (Gamma{K: 0.5, Theta: 2}).CDF(x) - math.Erf(math.Sqrt(x/2)); math.Abs(d) > 1e-13 {
			t.Errorf("chi-square CDF(%g) off by %g", x, d)
		}
	}
	for _, g := range []Gamma{WoWSessions, WoWSessionsAsPrinted, {K: 1.5, Theta: 2}, {K: 7, Theta: 0.4}} {
		lg, _ := math.Lgamma(g.K)
		pdf := func(x float64) float64 {
			return math.Exp((g.K-1)*math.Log(x) - x/g.Theta - lg - g.K*math.Log(g.Theta))
		}
		for _, x := range []float64{0.3, 1, 2.5, 6, 12} {
			// Simpson on [ε, x] plus the tiny mass below ε
			n, a := 20000, 1e-9
			h := (x - a) / float64(n)
			s := pdf(a) + pdf(x)
			for i := 1; i < n; i++ {
				w := 2.0
				if i%2 == 1 {
					w = 4
				}
				s += w * pdf(a+float64(i)*h)
			}
			want := s * h / 3
			if got := g.CDF(x); math.Abs(got-want) > 2e-4 {
				t.Errorf("%+v: CDF(%g) = %g, integral %g", g, x, got, want)
			}
			if d := g.CDF(x) + g.Survival(x) - 1; math.Abs(d) > 1e-12 {
				t.Errorf("%+v: CDF + Survival − 1 = %g", g, d)
			}
		}
		rng := rand.New(rand.NewPCG(7, 7))
		var s, s2 float64
		const n = 200000
		for range n {
			x := g.Sample(rng)
			s += x
			s2 += x * x
		}
		m := s / n
		sd := math.Sqrt(s2/n - m*m)
		if math.Abs(m-g.Mean()) > 0.01*g.Mean() || math.Abs(sd-g.SD()) > 0.02*g.SD() {
			t.Errorf("%+v: sample mean %g sd %g, want %g %g", g, m, sd, g.Mean(), g.SD())
		}
	}
}

// TestWoWSessionsSwap: the paper's stated moments and its PD example hold
// for shape 2.42, scale 1.157, not for the labels as printed.
func TestWoWSessionsSwap(t *testing.T) {
	if math.Abs(WoWSessions.Mean()-2.8) > 1e-3 || math.Abs(WoWSessions.SD()-1.8) > 1e-3 {
		t.Errorf("WoWSessions mean %g sd %g, want 2.8 and 1.8", WoWSessions.Mean(), WoWSessions.SD())
	}
	if sd := WoWSessionsAsPrinted.SD(); math.Abs(sd-1.8) < 0.5 {
		t.Errorf("as printed sd %g", sd)
	}
	if pd := PaperPD(WoWSessions, 1.5, 1); math.Abs(pd-0.609) > 0.002 {
		t.Errorf("PD(1.5 h) = %g, paper 60.9 %%", pd)
	}
	if pd := PaperPD(WoWSessionsAsPrinted, 1.5, 1); math.Abs(pd-0.609) < 0.05 {
		t.Errorf("as printed PD(1.5 h) = %g also matches", pd)
	}
}

func TestHistory(t *testing.T) {
	var h History
	if u := h.Predict(WoWSessions); math.Abs(u.Min-1.0) > 1e-3 || math.Abs(u.Max-4.6) > 1e-3 {
		t.Errorf("empty prediction %+v", u)
	}
	for i := range 120 {
		h.Add(float64(i))
	}
	h.Add(math.NaN())
	h.Add(-1)
	if h.Len() != HistoryLen {
		t.Fatalf("len %d", h.Len())
	}
	m, sd := h.MeanSD()
	// the last 50: 70..119
	if math.Abs(m-94.5) > 1e-9 || math.Abs(sd-math.Sqrt((50*50-1)/12.0)) > 1e-4 {
		t.Errorf("mean %g sd %g", m, sd)
	}
	u := h.Predict(WoWSessions)
	if math.Abs(u.Min-(m-sd)) > 1e-9 || math.Abs(u.Max-(m+sd)) > 1e-9 {
		t.Errorf("prediction %+v", u)
	}
	if q := LeaveProb(WoWSessions, 1, 0.5); !(q > 0 && q < 1) {
		t.Errorf("leave prob %g", q)
	}
}

func TestExactFailure(t *testing.T) {
	for seed := range uint64(count(200, 2000)) {
		rng := rand.New(rand.NewPCG(seed, 4))
		n := rng.IntN(12)
		q := make([]float64, n)
		for i := range q {
			q[i] = rng.Float64()
			if rng.IntN(5) == 0 {
				q[i] = float64(rng.IntN(2))
			}
		}
		want := 0.0
		for m := 0; m < 1<<n; m++ { // m: who stays
			p := 1.0
			stay := 0
			for i := range n {
				if m>>i&1 == 1 {
					p *= 1 - q[i]
					stay++
				} else {
					p *= q[i]
				}
			}
			if stay <= 1 {
				want += p
			}
		}
		if got := ExactFailure(q); math.Abs(got-want) > 1e-12 {
			t.Fatalf("seed %d: %v: got %g, enumeration %g", seed, q, got, want)
		}
	}
	if p := PaperFailure([]float64{0.5, 0.9, 0.2}); math.Abs(p-0.1) > 1e-15 {
		t.Errorf("paper failure %g", p)
	}
}

func randomGroup(rng *rand.Rand, n int) *Group {
	g := &Group{N: n, RTT: make([]float64, n*n), Uptime: make([]Uptime, n), Leave: make([]float64, n), FailoverMs: 100}
	for i := range n {
		for j := i + 1; j < n; j++ {
			v := float64(rng.IntN(300))
			g.RTT[i*n+j], g.RTT[j*n+i] = v, v
		}
		lo := rng.Float64() * 3
		g.Uptime[i] = Uptime{Min: lo, Max: lo + rng.Float64()}
		g.Leave[i] = rng.Float64()
	}
	return g
}

func TestDistribute(t *testing.T) {
	for seed := range uint64(count(200, 2000)) {
		rng := rand.New(rand.NewPCG(seed, 5))
		n := 2 + rng.IntN(10)
		g := randomGroup(rng, n)
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		alive := make([]bool, n)
		for i := range alive {
			alive[i] = rng.IntN(4) != 0
		}
		var idx []int
		for i, a := range alive {
			if a {
				idx = append(idx, i)
			}
		}
		for _, crit := range Criteria() {
			h := g.Distribute(crit, alive)
			switch len(idx) {
			case 0:
				if h != (Hosting{-1, -1}) {
					t.Fatalf("seed %d %v: %+v with nobody alive", seed, crit, h)
				}
				continue
			case 1:
				if h.Server != idx[0] || h.Replica != -1 {
					t.Fatalf("seed %d %v: %+v with one alive", seed, crit, h)
				}
				continue
			}
			if !alive[h.Server] || !alive[h.Replica] || h.Server == h.Replica {
				t.Fatalf("seed %d %v: bad hosting %+v", seed, crit, h)
			}
			// exhaustive reference over ordered pairs
			for _, s := range idx {
				for _, r := range idx {
					if s == r {
						continue
					}
					switch crit {
					case LL:
						ls, lr := g.LatencySum(s, alive), g.LatencySum(r, alive)
						hs, hr := g.LatencySum(h.Server, alive), g.LatencySum(h.Replica, alive)
						if ls < hs || (ls == hs && s < h.Server) || (s == h.Server && (lr < hr || lr == hr && r < h.Replica)) {
							t.Fatalf("seed %d LL: %+v beaten by %d,%d", seed, h, s, r)
						}
					case PD:
						if g.Uptime[s].Min > g.Uptime[h.Server].Min || (s == h.Server && g.Uptime[r].Min > g.Uptime[h.Replica].Min) {
							t.Fatalf("seed %d PD: %+v beaten by %d,%d", seed, h, s, r)
						}
					case Score:
						if g.Score(s, r, alive) < g.Score(h.Server, h.Replica, alive)-1e-9 {
							t.Fatalf("seed %d score: %+v beaten by %d,%d", seed, h, s, r)
						}
					}
				}
			}
			// Fig. 2: 2·(k−2) + 1 edges for k alive players
			if e := g.Link(h, alive); len(e) != 2*(len(idx)-2)+1 {
				t.Fatalf("seed %d: %d edges for %d players", seed, len(e), len(idx))
			}
			// Algorithm 4: the server leaves, the replica is promoted
			a2 := slices.Clone(alive)
			a2[h.Server] = false
			next, lost := g.Restructure(h, h.Server, crit, a2)
			if lost || next.Server != h.Replica || (len(idx) > 2 && (next.Replica < 0 || !a2[next.Replica] || next.Replica == next.Server)) {
				t.Fatalf("seed %d %v: restructure %+v → %+v lost %v", seed, crit, h, next, lost)
			}
			// both gone: lost while players remain
			a2[h.Replica] = false
			if _, lost := g.Restructure(Hosting{h.Server, -1}, h.Server, crit, a2); lost != (len(idx) > 2) {
				t.Fatalf("seed %d: lost %v with %d left", seed, lost, len(idx)-2)
			}
		}
	}
}

func TestClassic(t *testing.T) {
	for seed := range uint64(count(50, 400)) {
		rng := rand.New(rand.NewPCG(seed, 6))
		side := 4 + rng.IntN(12)
		servers := 2 + rng.IntN(6)
		g := &Grid{Side: side, Owner: make([]int, side*side), Load: make([]int, side*side)}
		for c := range g.Owner {
			g.Owner[c] = (c % side) * servers / side
			g.Load[c] = rng.IntN(8)
		}
		total := 0
		for _, l := range g.Load {
			total += l
		}
		maxLoad := total/servers + 1 + rng.IntN(10)
		r, err := Classic(g, servers, maxLoad)
		if err != nil {
			t.Fatal(err)
		}
		l := make([]int, servers)
		for c, o := range r.Owner {
			l[o] += g.Load[c]
		}
		if !slices.Equal(l, r.Loads) {
			t.Fatalf("seed %d: loads %v, recomputed %v", seed, r.Loads, l)
		}
		for i, x := range r.Loads {
			if x > maxLoad && !slices.Contains(r.Stuck, i) {
				t.Fatalf("seed %d: server %d at %d > %d not stuck", seed, i, x, maxLoad)
			}
			if x > maxLoad && r.Before[i] <= maxLoad {
				t.Fatalf("seed %d: receiver %d pushed over", seed, i)
			}
		}
	}
}

func TestSimulateInvariantsAndDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	net, err := NewPlaneNet(500, 1000, rng)
	if err != nil {
		t.Fatal(err)
	}
	runs := count(3, 12)
	for k := range runs {
		cfg := ScenarioB()
		cfg.Servers, cfg.MaxLoad, cfg.Hours, cfg.Cells = 4, 400, 1.5, 20
		cfg.Seed = uint64(k)
		cfg.Criterion = Criteria()[k%3]
		cfg.Method = []Method{Hybrid, HybridPack}[k%2]
		cfg.ReturnRate = float64(k%3) / 2
		cfg.Net = net
		cfg.Check = true
		a, err := Simulate(cfg)
		if err != nil {
			t.Fatalf("run %d: %v", k, err)
		}
		if a.HostedMade == 0 || a.Rounds == 0 {
			t.Errorf("run %d: nothing overflowed (%d rounds)", k, a.Rounds)
		}
		b, err := Simulate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a.Loads, a.HostedFrom, a.Series, a.Moved, a.Lost, a.Failovers) != fmt.Sprint(b.Loads, b.HostedFrom, b.Series, b.Moved, b.Lost, b.Failovers) {
			t.Fatalf("run %d: not deterministic", k)
		}
	}
}

// TestSimulateFullScaleInvariants checks the invariants at the paper's
// scale (10 × 5,500, scenario B) for both methods.
func TestSimulateFullScaleInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("full scale")
	}
	rng := rand.New(rand.NewPCG(2, 2))
	net, err := NewPlaneNet(2000, 1000, rng)
	if err != nil {
		t.Fatal(err)
	}
	for k, m := range []Method{Hybrid, HybridPack} {
		cfg := ScenarioB()
		cfg.Hours, cfg.Seed, cfg.Method, cfg.Criterion, cfg.Net, cfg.Check = 1, uint64(10+k), m, Criteria()[2*k], net, true
		res, err := Simulate(cfg)
		if err != nil {
			t.Fatalf("%v: %v", m, err)
		}
		if res.HostedMade == 0 {
			t.Errorf("%v: nothing overflowed", m)
		}
		for _, s := range res.Series {
			if s.Cluster+s.Hosted != s.Online {
				t.Fatalf("%v: at %.2f h, %d + %d ≠ %d online", m, s.Hours, s.Cluster, s.Hosted, s.Online)
			}
		}
	}
}
