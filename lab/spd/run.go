package spd

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/place/spd"
)

// Config configures Run, the reproduction of §IV of Chen et al., "On the
// Game Server Network Selection with Delay and Delay Variation
// Constraints" (2011). Zero fields take the defaults of DefaultConfig.
type Config struct {
	// Servers and Players are the network sizes (paper: 20, 25, 30 servers;
	// 30, 50, 80, 100, 120 clients).
	Servers, Players []int
	// Networks is the number of random networks per size (paper: 30).
	Networks int
	// Factors are the f of μ = f·Γ (paper: 1.0, 1.1, …, 1.5).
	Factors []float64
	// Gamma is the Γ every generated network is scaled to (paper: 500 ms).
	Gamma float64
	// Seed seeds the networks.
	Seed uint64
	// ExactServers and ExactPlayers are the sizes of the small networks on
	// which the exact solver runs for every f (Networks of each); the
	// heuristics' gaps to it are reported. Exact also runs on the paper's
	// networks, client-server model, within ExactWork.
	ExactServers int
	ExactPlayers []int
	// ExactWork is the exact solver's work limit on the paper's networks.
	ExactWork int
	// KBestLimit caps k-best's (subset, root) pairs; beyond it k-best is
	// skipped for that network and counted.
	KBestLimit int
	// RealServers are the WonderNetwork cities of the real-data variant
	// (default: the 20 cities.Servers); nil with NoReal skips it.
	RealServers []string
	NoReal      bool
	// Provisioning is the overlay speed-up on real data (default 0.3, §IV).
	Provisioning float64
}

// DefaultConfig returns the paper's §IV configuration.
func DefaultConfig() Config {
	return Config{
		Servers: []int{20, 25, 30}, Players: []int{30, 50, 80, 100, 120}, Networks: 30,
		Factors: []float64{1.0, 1.1, 1.2, 1.3, 1.4, 1.5}, Gamma: 500, Seed: 1,
		ExactServers: 10, ExactPlayers: []int{4, 6, 8}, ExactWork: 400_000, KBestLimit: 400_000,
		RealServers: cities.Servers(), Provisioning: 0.3,
	}
}

// SmallConfig is a quick look (tests, --small): 2 networks per size.
func SmallConfig() Config {
	c := DefaultConfig()
	c.Servers, c.Players, c.Networks = []int{20, 25}, []int{30, 80}, 2
	c.Factors = []float64{1.0, 1.3, 1.5}
	c.ExactPlayers = []int{4, 6}
	c.RealServers = cities.Servers()[:10]
	return c
}

// Validate checks the configuration and returns a copy with defaults
// filled in; errors wrap lab.ErrConfig.
func (c Config) Validate() (Config, error) {
	d := DefaultConfig()
	c.Servers, c.Players, c.Factors = slices.Clone(c.Servers), slices.Clone(c.Players), slices.Clone(c.Factors)
	c.ExactPlayers, c.RealServers = slices.Clone(c.ExactPlayers), slices.Clone(c.RealServers)
	if c.Servers == nil {
		c.Servers = d.Servers
	}
	if c.Players == nil {
		c.Players = d.Players
	}
	if c.Networks == 0 {
		c.Networks = d.Networks
	}
	if c.Factors == nil {
		c.Factors = d.Factors
	}
	if c.Gamma == 0 {
		c.Gamma = d.Gamma
	}
	if c.ExactServers == 0 {
		c.ExactServers = d.ExactServers
	}
	if c.ExactPlayers == nil {
		c.ExactPlayers = d.ExactPlayers
	}
	if c.ExactWork == 0 {
		c.ExactWork = d.ExactWork
	}
	if c.KBestLimit == 0 {
		c.KBestLimit = d.KBestLimit
	}
	if c.RealServers == nil && !c.NoReal {
		c.RealServers = d.RealServers
	}
	if c.Provisioning == 0 {
		c.Provisioning = d.Provisioning
	}
	for _, n := range c.Servers {
		if n < 3 || n > 200 {
			return c, fmt.Errorf("%w: servers %d: want 3..200", lab.ErrConfig, n)
		}
	}
	for _, m := range append(slices.Clone(c.Players), c.ExactPlayers...) {
		if m < 1 || m > 5000 {
			return c, fmt.Errorf("%w: players %d: want 1..5000", lab.ErrConfig, m)
		}
	}
	for _, f := range c.Factors {
		if !(f >= 1 && f <= 10) {
			return c, fmt.Errorf("%w: factor %v: want 1..10 (f < 1 is infeasible)", lab.ErrConfig, f)
		}
	}
	switch {
	case c.Networks < 1 || c.Networks > 10_000:
		return c, fmt.Errorf("%w: networks %d: want 1..10000", lab.ErrConfig, c.Networks)
	case !(c.Gamma > 0) || c.Gamma > 1e6:
		return c, fmt.Errorf("%w: gamma %v: want a positive delay in ms", lab.ErrConfig, c.Gamma)
	case c.ExactServers < 3 || c.ExactServers > 14:
		return c, fmt.Errorf("%w: exact servers %d: want 3..14", lab.ErrConfig, c.ExactServers)
	case c.ExactWork < 1 || c.KBestLimit < 1:
		return c, fmt.Errorf("%w: work limits must be positive", lab.ErrConfig)
	case !(c.Provisioning >= 0 && c.Provisioning < 1):
		return c, fmt.Errorf("%w: provisioning %v: want a fraction in [0, 1)", lab.ErrConfig, c.Provisioning)
	case !c.NoReal && len(c.RealServers) < 3:
		return c, fmt.Errorf("%w: real data needs at least 3 server cities", lab.ErrConfig)
	}
	return c, nil
}

// SPD algorithm labels, as the paper's Tables VI and VII name them.
const (
	AlgMatching = "alg-m"
	AlgSPDCS    = "spdcs-h"
	AlgKBest    = "k-best"
	AlgMatchP2P = "alg-mp"
	AlgSPDP2P   = "spdp2p-h"
	AlgZIZO     = "zizo"
	AlgExact    = "exact"
)

// SPDRow is one algorithm's result on one network and bound.
type SPDRow struct {
	Data    string // "random", "small" (exact sweep) or "real"
	Servers int    // n
	Players int    // m
	Network int    // index 0..Networks-1
	Factor  float64
	Gamma   float64 // ms (scaled to Config.Gamma for random data)
	Model   spd.Model
	Algo    string
	// Status is "ok", "failed" (no solution, e.g. ZIZO's zoom-in) or
	// "skipped" (over the work limit).
	Status string
	// Used, Delay and Variation before SPDVR; FairUsed, FairDelay and
	// FairVariation after it; FairMs is SPDVR's run time, the least of
	// fairRuns sequential runs.
	Used                             int
	Delay, Variation                 float64
	FairUsed                         int
	FairDelay, FairVariation, FairMs float64
	// ExactUsed and ExactVariation are the exact optimum's server count
	// and least variation at that count (0 when exact did not run).
	ExactUsed      int
	ExactVariation float64
}

// Report is the outcome of Run.
type Report struct {
	Config  Config
	Rows    []SPDRow
	Elapsed time.Duration
}

// Run runs the experiments: every network size, network and factor, with
// every algorithm of Tables VI and VII and SPDVR after each; the exact
// solver on small networks (and on the paper's, client-server, where its
// work limit allows); and the real-data variant. progress (may be nil) is
// called after every network.
func Run(cfg Config, progress func(done, total int)) (*Report, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{Config: cfg}
	total := (len(cfg.Servers)*len(cfg.Players) + len(cfg.ExactPlayers)) * cfg.Networks
	var real *realSPD
	if !cfg.NoReal {
		if real, err = newRealSPD(cfg.RealServers, cfg.Provisioning); err != nil {
			return nil, err
		}
		total += len(cfg.Players) * cfg.Networks
	}
	done := 0
	tick := func() {
		done++
		if progress != nil {
			progress(done, total)
		}
	}
	type job struct {
		data string
		n, m int
	}
	var jobs []job
	for _, n := range cfg.Servers {
		for _, m := range cfg.Players {
			jobs = append(jobs, job{"random", n, m})
		}
	}
	for _, m := range cfg.ExactPlayers {
		jobs = append(jobs, job{"small", cfg.ExactServers, m})
	}
	if real != nil {
		for _, m := range cfg.Players {
			jobs = append(jobs, job{"real", len(cfg.RealServers), m})
		}
	}
	for _, j := range jobs {
		for k := 0; k < cfg.Networks; k++ {
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(j.n)<<40|uint64(j.m)<<20|uint64(k)))
			var in *spd.Instance
			if j.data == "real" {
				in, err = real.instance(j.m, rng)
			} else {
				in, err = spd.Generate(spd.GenConfig{Servers: j.n, Players: j.m}, rng)
				if err == nil {
					in, err = in.Scaled(cfg.Gamma / in.Gamma())
				}
			}
			if err != nil {
				return nil, fmt.Errorf("lab/spd: spd %s network %d×%d #%d: %w", j.data, j.n, j.m, k, err)
			}
			rows, err := spdNetwork(&cfg, in, j.data, k)
			if err != nil {
				return nil, err
			}
			rep.Rows = append(rep.Rows, rows...)
			tick()
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// fairRuns is how many times SPDVR is run to time it: the run time
// reported is the least of them, which drops the delays of a busy machine
// (the runs are sequential, on the calling goroutine; SPDVR is
// deterministic, so every run returns the same solution).
const fairRuns = 5

// minTime runs f fairRuns times and returns its result and the least run
// time in ms.
func minTime(f func() (spd.Solution, error)) (spd.Solution, float64, error) {
	best := math.Inf(1)
	var sol spd.Solution
	for range fairRuns {
		t0 := time.Now()
		s, err := f()
		ms := float64(time.Since(t0).Nanoseconds()) / 1e6
		if err != nil {
			return spd.Solution{}, 0, err
		}
		sol, best = s, min(best, ms)
	}
	return sol, best, nil
}

// spdNetwork runs every algorithm on one network for every factor.
func spdNetwork(cfg *Config, in *spd.Instance, data string, k int) ([]SPDRow, error) {
	var rows []SPDRow
	gamma := in.Gamma()
	exactAll := data == "small"
	for _, f := range cfg.Factors {
		bound := f * gamma
		base := SPDRow{Data: data, Servers: in.NumServers(), Players: in.NumPlayers(), Network: k, Factor: f, Gamma: gamma}
		for _, model := range []spd.Model{spd.CS, spd.P2P} {
			var ex spd.Solution
			exOK := false
			if exactAll || model == spd.CS {
				work := cfg.ExactWork
				if exactAll {
					work = 0 // the package default
				}
				s, err := spd.Exact(in, model, bound, spd.ExactOptions{MaxWork: work})
				switch {
				case err == nil:
					ex, exOK = s, true
				case !errors.Is(err, spd.ErrBudget):
					return nil, fmt.Errorf("lab/spd: spd exact: %w", err)
				}
			}
			add := func(algo string, s spd.Solution, err error) error {
				r := base
				r.Model, r.Algo, r.Status = model, algo, "ok"
				if exOK {
					r.ExactUsed, r.ExactVariation = len(ex.Servers), ex.Variation
				}
				switch {
				case errors.Is(err, spd.ErrNoSolution):
					r.Status = "failed"
				case errors.Is(err, spd.ErrBudget):
					r.Status = "skipped"
				case err != nil:
					return fmt.Errorf("lab/spd: spd %s %s: %w", model, algo, err)
				}
				if r.Status == "ok" {
					r.Used, r.Delay, r.Variation = len(s.Servers), s.Delay, s.Variation
					fair := func() (spd.Solution, error) {
						if model == spd.CS {
							return spd.SPDVRCS(in, s, bound)
						}
						return spd.SPDVRP2P(in, s, bound)
					}
					var v spd.Solution
					v, r.FairMs, err = minTime(fair)
					if err != nil {
						return fmt.Errorf("lab/spd: spd spdvr after %s: %w", algo, err)
					}
					if v.Delay > bound+spd.Tolerance || v.Variation > s.Variation {
						return fmt.Errorf("lab/spd: spd spdvr after %s broke an invariant", algo)
					}
					r.FairUsed, r.FairDelay, r.FairVariation = len(v.Servers), v.Delay, v.Variation
				}
				rows = append(rows, r)
				return nil
			}
			var h spd.Solution
			var err error
			if model == spd.CS {
				h, err = spd.SPDCSH(in, bound)
				if e := add(AlgMatching, spd.Matching(in, spd.CS), nil); e != nil {
					return nil, e
				}
				if e := add(AlgSPDCS, h, err); e != nil {
					return nil, e
				}
			} else {
				h, err = spd.SPDP2PH(in, bound)
				if e := add(AlgMatchP2P, spd.Matching(in, spd.P2P), nil); e != nil {
					return nil, e
				}
				if e := add(AlgSPDP2P, h, err); e != nil {
					return nil, e
				}
				z, zerr := spd.ZIZO(in, spd.P2P, bound)
				if e := add(AlgZIZO, z, zerr); e != nil {
					return nil, e
				}
			}
			if err != nil {
				return nil, fmt.Errorf("lab/spd: spd heuristic: %w", err)
			}
			kb, kerr := spd.KBest(in, model, bound, len(h.Servers), cfg.KBestLimit)
			if e := add(AlgKBest, kb, kerr); e != nil {
				return nil, e
			}
			if exOK {
				if e := add(AlgExact, ex, nil); e != nil {
					return nil, e
				}
			}
		}
	}
	return rows, nil
}

// realSPD builds sessions on real data: servers in WonderNetwork cities
// joined by a complete overlay whose link latency is half the measured
// city-to-city RTT reduced by the provisioning factor; players drawn from
// GeoNames cities by population, with half the modelled RTT to each
// server (geo.Population).
type realSPD struct {
	pop     *geo.Population
	servers []int
	names   []string
	links   []spd.Link
}

func newRealSPD(names []string, provisioning float64) (*realSPD, error) {
	pop, pings, err := cities.Population()
	if err != nil {
		return nil, err
	}
	idx, err := cities.Indices(pings, names)
	if err != nil {
		return nil, err
	}
	mat, err := pings.Matrix(names, geo.SymMean)
	if err != nil {
		return nil, fmt.Errorf("lab/spd: %w", err)
	}
	r := &realSPD{pop: pop, servers: idx, names: slices.Clone(names)}
	for a := range names {
		for b := a + 1; b < len(names); b++ {
			r.links = append(r.links, spd.Link{A: names[a], B: names[b], Ms: mat.At(a, b) / 2 * (1 - provisioning)})
		}
	}
	return r, nil
}

func (r *realSPD) instance(m int, rng *rand.Rand) (*spd.Instance, error) {
	mat, err := r.pop.Matrix(r.pop.Draw(m, rng), r.servers)
	if err != nil {
		return nil, err
	}
	lat := make([][]float64, m)
	for i := range lat {
		lat[i] = mat.Row(i)
		for j := range lat[i] {
			lat[i][j] /= 2
		}
	}
	return spd.NewInstance(r.names, r.links, mat.RowNames(), lat)
}
