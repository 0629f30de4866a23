package balance

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/place/balance"
)

// Config configures Run, the reproduction of §5 of the hybrid
// cluster/P2P instances paper with place/balance.
type Config struct {
	// Runs is the number of seeded runs of scenarios A and B (paper: 1,000).
	Runs int
	// SweepRuns of them (the first) also run scenario B for every return
	// rate and every host criterion.
	SweepRuns int
	// ReturnRates for Fig. 12 (paper: 0 to 100 %).
	ReturnRates []float64
	// Samples is the number of sampled instances per size for Tables 4 and 5.
	Samples int
	// Cluster is the WonderNetwork city of the cluster.
	Cluster string
	// HomeMs is the home access RTT per home end (see balance.GeoNet).
	HomeMs float64
	// Interaction and F are Table 1's classic parameters (paper: 10 %, 20
	// and 25 messages/s).
	Interaction float64
	F           []float64
	// MessageBytes converts messages to bytes for Fig. 12 (paper: 141).
	MessageBytes float64
	Seed         uint64
	// Workers runs this many runs at once (0: GOMAXPROCS).
	Workers int
}

// DefaultConfig is the paper's sweep: 1,000 runs.
func DefaultConfig() Config {
	return Config{
		Runs: 1000, SweepRuns: 20, ReturnRates: []float64{0, 0.25, 0.5, 0.75, 1},
		Samples: 20000, Cluster: "Frankfurt", HomeMs: 10, Interaction: 0.10, F: []float64{20, 25},
		MessageBytes: 141, Seed: 1,
	}
}

// SmallConfig is a quick look: 10 runs, 3 in the sweeps.
func SmallConfig() Config {
	c := DefaultConfig()
	c.Runs, c.SweepRuns, c.Samples = 10, 3, 2000
	return c
}

// Validate checks c; errors wrap lab.ErrConfig.
func (c Config) Validate() (Config, error) {
	switch {
	case c.Runs < 1 || c.Runs > 100000:
		return c, fmt.Errorf("%w: runs %d (want 1..100000)", lab.ErrConfig, c.Runs)
	case c.SweepRuns < 0:
		return c, fmt.Errorf("%w: sweep runs %d (want ≥ 0)", lab.ErrConfig, c.SweepRuns)
	case c.Samples < 1 || c.Samples > 10_000_000:
		return c, fmt.Errorf("%w: samples %d (want 1..10000000)", lab.ErrConfig, c.Samples)
	case !(c.HomeMs >= 0) || math.IsInf(c.HomeMs, 0):
		return c, fmt.Errorf("%w: home access %g ms", lab.ErrConfig, c.HomeMs)
	case !(c.Interaction >= 0 && c.Interaction <= 1):
		return c, fmt.Errorf("%w: interaction %g (want 0..1)", lab.ErrConfig, c.Interaction)
	case !(c.MessageBytes > 0):
		return c, fmt.Errorf("%w: message size %g", lab.ErrConfig, c.MessageBytes)
	case c.Workers < 0:
		return c, fmt.Errorf("%w: workers %d", lab.ErrConfig, c.Workers)
	}
	for _, r := range c.ReturnRates {
		if !(r >= 0 && r <= 1) {
			return c, fmt.Errorf("%w: return rate %g (want 0..1)", lab.ErrConfig, r)
		}
	}
	for _, f := range c.F {
		if !(f >= 0) || math.IsInf(f, 0) {
			return c, fmt.Errorf("%w: F %g", lab.ErrConfig, f)
		}
	}
	c.SweepRuns = min(c.SweepRuns, c.Runs)
	if c.Workers == 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	return c, nil
}

// ARun is one run of scenario A: the snapshot balanced four ways.
type ARun struct {
	Initial    []int
	Overloaded int
	Extra      int // Σ over servers of the load above MaxLoad
	// per method: players moved (to servers and hosts), loads after
	Moved  map[string]int
	Hosted map[string]int // of Moved, players sent to player hosts
	Final  map[string][]int
}

// BRun is one run of scenario B.
type BRun struct {
	ReturnRate float64
	Criterion  balance.Criterion
	Method     balance.Method
	Res        *balance.SimResult
}

// Report holds everything Run measured.
type Report struct {
	Config  Config
	A       []ARun
	B       []BRun // scenario B, return rate 1, LL: one per run
	Sweep   []BRun // the sweeps
	Table4  []LatencyRow
	Table5  []FailureRow
	Seconds float64 // wall time of the whole experiment (not deterministic)
	// BSimHours is the simulated time of one scenario B run.
	BSimHours float64
}

// LatencyRow is one line of Table 4.
type LatencyRow struct {
	Net, Criterion          string
	Size                    int
	HostMean, HostSD        float64 // players' RTT to the instance's server
	ClusterMean, ClusterSD  float64 // players' RTT to the cluster
	PaperHost, PaperCluster float64
	FromSim                 bool
}

// FailureRow is one line of Table 5 (PD criterion).
type FailureRow struct {
	Size                int
	PDServer, PDReplica float64 // mean over instances
	Paper, Exact        float64 // instance failure: §5.2.1's product, exact (q = PD)
	PaperMax, ExactMax  float64
	Leave               float64 // exact, q = leaving before the instance ends
	LLServer            float64 // mean PD of the server LL would choose
}

// methods of scenario A, in order
var aMethods = []string{"classic", "hybrid", "hybrid-target", "pack"}

// Run runs the experiment; progress (may be nil) gets (done, total).
func Run(cfg Config, progress func(done, total int)) (*Report, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	pop, pings, err := cities.Population()
	if err != nil {
		return nil, err
	}
	city, ok := pings.CityIndex(cfg.Cluster)
	if !ok {
		return nil, fmt.Errorf("%w: cluster city %q is not a WonderNetwork city", lab.ErrConfig, cfg.Cluster)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 8))
	gnet, err := balance.NewGeoNet(pop, pings, city, 20000, cfg.HomeMs, rng)
	if err != nil {
		return nil, err
	}
	pnet, err := balance.NewPlaneNet(20000, 1000, rng)
	if err != nil {
		return nil, err
	}
	rep := &Report{Config: cfg, A: make([]ARun, cfg.Runs), B: make([]BRun, cfg.Runs)}
	// jobs: A and B per run, then the sweeps
	type job struct {
		kind int // 0 A, 1 B, 2 sweep
		run  int
		b    BRun
		out  int
	}
	var jobs []job
	for r := range cfg.Runs {
		jobs = append(jobs, job{kind: 0, run: r}, job{kind: 1, run: r})
	}
	for r := range cfg.SweepRuns {
		for _, rr := range cfg.ReturnRates {
			jobs = append(jobs, job{kind: 2, run: r, b: BRun{ReturnRate: rr, Criterion: balance.LL, Method: balance.Hybrid}})
		}
		for _, c := range []balance.Criterion{balance.PD, balance.Score} {
			jobs = append(jobs, job{kind: 2, run: r, b: BRun{ReturnRate: 1, Criterion: c, Method: balance.Hybrid}})
		}
		jobs = append(jobs, job{kind: 2, run: r, b: BRun{ReturnRate: 1, Criterion: balance.LL, Method: balance.HybridPack}})
	}
	for k := range jobs {
		if jobs[k].kind == 2 {
			jobs[k].out = len(rep.Sweep)
			rep.Sweep = append(rep.Sweep, jobs[k].b)
		}
	}
	total := len(jobs) + 2
	var (
		mu   sync.Mutex
		done int
		fail error
		wg   sync.WaitGroup
	)
	next := make(chan int)
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				j := jobs[k]
				var err error
				switch j.kind {
				case 0:
					rep.A[j.run], err = runA(seedOf(cfg.Seed, j.run))
				case 1:
					rep.B[j.run], err = runB(seedOf(cfg.Seed, j.run), BRun{ReturnRate: 1, Criterion: balance.LL, Method: balance.Hybrid}, gnet)
				case 2:
					rep.Sweep[j.out], err = runB(seedOf(cfg.Seed, j.run), j.b, gnet)
				}
				mu.Lock()
				if err != nil && fail == nil {
					fail = err
				}
				done++
				if progress != nil {
					progress(done, total)
				}
				mu.Unlock()
			}
		}()
	}
	for k := range jobs {
		next <- k
	}
	close(next)
	wg.Wait()
	if fail != nil {
		return nil, fail
	}
	rep.BSimHours = balance.ScenarioB().Hours
	rep.Table4 = table4(cfg, gnet, pnet, rep)
	if progress != nil {
		progress(total-1, total)
	}
	rep.Table5, err = table5(cfg, gnet)
	if err != nil {
		return nil, err
	}
	if progress != nil {
		progress(total, total)
	}
	return rep, nil
}

func seedOf(seed uint64, run int) uint64 { return seed*1_000_003 + uint64(run) }

func runA(seed uint64) (ARun, error) {
	sc := balance.ScenarioA()
	sc.Seed = seed
	res, err := balance.Simulate(sc)
	if err != nil {
		return ARun{}, err
	}
	c := res.Snapshot
	a := ARun{Initial: c.Loads(), Moved: map[string]int{}, Hosted: map[string]int{}, Final: map[string][]int{}}
	for _, l := range a.Initial {
		if l > c.MaxLoad {
			a.Overloaded++
			a.Extra += l - c.MaxLoad
		}
	}
	cl, err := balance.Classic(res.Grid, sc.Servers, sc.MaxLoad)
	if err != nil {
		return ARun{}, err
	}
	a.Moved["classic"], a.Final["classic"] = cl.Moved, cl.Loads
	for _, m := range []struct {
		name string
		cfg  balance.Config
		pack bool
	}{{"hybrid", balance.PaperConfig(), false}, {"hybrid-target", balance.DefaultConfig(), false}, {"pack", balance.PaperConfig(), true}} {
		var r balance.Round
		if m.pack {
			pr, err := balance.Pack(c, m.cfg)
			if err != nil {
				return ARun{}, err
			}
			r = pr.Round
		} else if r, err = balance.Balance(c, m.cfg); err != nil {
			return ARun{}, err
		}
		a.Moved[m.name], a.Hosted[m.name], a.Final[m.name] = r.Moved+r.Overflowed, r.Overflowed, r.Loads
	}
	return a, nil
}

func runB(seed uint64, b BRun, net balance.Net) (BRun, error) {
	sc := balance.ScenarioB()
	sc.Seed, sc.ReturnRate, sc.Criterion, sc.Method, sc.Net = seed, b.ReturnRate, b.Criterion, b.Method, net
	res, err := balance.Simulate(sc)
	if err != nil {
		return BRun{}, err
	}
	b.Res = res
	return b, nil
}

// table4 samples instances of sizes 5 and 10 with players drawn from each
// net and hosts chosen by LL, and adds scenario B's hosted instances.
func table4(cfg Config, gnet, pnet balance.Net, rep *Report) []LatencyRow {
	paper := map[int][2]float64{5: {952.6 / 1.15, 952.6}, 10: {861.6 / 1.07, 861.6}}
	var rows []LatencyRow
	for _, nn := range []struct {
		name string
		net  balance.Net
	}{{"geo", gnet}, {"plane", pnet}} {
		for _, size := range []int{5, 10} {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(size)))
			var hs, hq, cs, cq float64
			var hn, cn int
			loc := make([]int, size)
			g := balance.Group{N: size, RTT: make([]float64, size*size)}
			for range cfg.Samples {
				for i := range loc {
					loc[i] = rng.IntN(nn.net.Locations())
				}
				for i := range size {
					for j := range size {
						g.RTT[i*size+j] = nn.net.RTT(loc[i], loc[j])
					}
				}
				h := g.Distribute(balance.LL, nil)
				for i := range size {
					c := nn.net.ClusterRTT(loc[i])
					cs, cq, cn = cs+c, cq+c*c, cn+1
					if i != h.Server {
						v := g.RTT[i*size+h.Server]
						hs, hq, hn = hs+v, hq+v*v, hn+1
					}
				}
			}
			rows = append(rows, LatencyRow{Net: nn.name, Criterion: "LL", Size: size,
				HostMean: hs / float64(hn), HostSD: sdOf(hs, hq, hn), ClusterMean: cs / float64(cn), ClusterSD: sdOf(cs, cq, cn),
				PaperHost: paper[size][0], PaperCluster: paper[size][1]})
		}
	}
	// from the simulation: every hosted instance of scenario B, by criterion
	for _, crit := range balance.Criteria() {
		acc := map[int]*balance.LatencyStat{}
		add := func(b BRun) {
			if b.Criterion != crit || b.Method != balance.Hybrid || b.Res == nil {
				return
			}
			for _, st := range b.Res.Latency {
				a := acc[st.Size]
				if a == nil {
					a = &balance.LatencyStat{Size: st.Size}
					acc[st.Size] = a
				}
				a.HostSum += st.HostSum
				a.HostSq += st.HostSq
				a.Players += st.Players
				a.ClusterSum += st.ClusterSum
				a.ClusterSq += st.ClusterSq
				a.ClusterPlayers += st.ClusterPlayers
				a.Instances += st.Instances
			}
		}
		if crit == balance.LL {
			for _, b := range rep.B {
				add(b)
			}
		} else {
			for _, b := range rep.Sweep {
				add(b)
			}
		}
		for _, size := range []int{5, 10} {
			a := acc[size]
			if a == nil || a.Players == 0 {
				continue
			}
			rows = append(rows, LatencyRow{Net: "geo, scenario B", Criterion: crit.String(), Size: size, FromSim: true,
				HostMean: a.HostSum / float64(a.Players), HostSD: sdOf(a.HostSum, a.HostSq, a.Players),
				ClusterMean: a.ClusterSum / float64(a.ClusterPlayers), ClusterSD: sdOf(a.ClusterSum, a.ClusterSq, a.ClusterPlayers),
				PaperHost: paper[size][0], PaperCluster: paper[size][1]})
		}
	}
	return rows
}

func sdOf(s, q float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	m := s / float64(n)
	return math.Sqrt(math.Max(0, q/float64(n)-m*m))
}

// table5 samples instances of sizes 5 and 10 with players drawn as the
// simulation draws them (own mean session, 1–50 past sessions, a session
// under way), hosts chosen by PD.
func table5(cfg Config, gnet balance.Net) ([]FailureRow, error) {
	sc := balance.ScenarioB()
	durations := map[int]float64{}
	for k, s := range sc.Sizes {
		durations[s] = sc.Minutes[k] / 60
	}
	var rows []FailureRow
	for _, size := range []int{5, 10} {
		rng := rand.New(rand.NewPCG(cfg.Seed, 50+uint64(size)))
		row := FailureRow{Size: size}
		g := balance.Group{N: size, RTT: make([]float64, size*size), Uptime: make([]balance.Uptime, size), Leave: make([]float64, size), FailoverMs: sc.FailoverMs}
		pd := make([]float64, size)
		var h balance.History
		loc := make([]int, size)
		for range cfg.Samples {
			for i := range size {
				if _, err := sc.SamplePlayer(rng, &h); err != nil {
					return nil, err
				}
				g.Uptime[i] = h.Predict(sc.Sessions)
				pd[i] = balance.PaperPD(sc.Sessions, g.Uptime[i].Min, 1)
				elapsed := rng.Float64() * sc.Sessions.Mean()
				g.Leave[i] = balance.LeaveProb(h.Fit(sc.Sessions), elapsed, durations[size])
				loc[i] = rng.IntN(gnet.Locations())
			}
			for i := range size {
				for j := range size {
					g.RTT[i*size+j] = gnet.RTT(loc[i], loc[j])
				}
			}
			hp := g.Distribute(balance.PD, nil)
			row.PDServer += pd[hp.Server]
			row.PDReplica += pd[hp.Replica]
			p, e := balance.PaperFailure(pd), balance.ExactFailure(pd)
			row.Paper += p
			row.Exact += e
			row.PaperMax = math.Max(row.PaperMax, p)
			row.ExactMax = math.Max(row.ExactMax, e)
			row.Leave += balance.ExactFailure(g.Leave)
			row.LLServer += pd[g.Distribute(balance.LL, nil).Server]
		}
		n := float64(cfg.Samples)
		row.PDServer /= n
		row.PDReplica /= n
		row.Paper /= n
		row.Exact /= n
		row.Leave /= n
		row.LLServer /= n
		rows = append(rows, row)
	}
	return rows, nil
}
