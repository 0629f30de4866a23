package estimate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/geo"
)

// ProbeConfig describes a measurement process: which neighbours each node
// probes, how often, for how long, how noisy a sample is, and how nodes
// come and go. Start from DefaultProbeConfig, HighRateConfig or
// LowRateConfig and change fields; Validate fills defaults on a copy.
type ProbeConfig struct {
	// Neighbours is the budget of peers a node probes over the whole run
	// (the paper's group size, 4…32): no node ever probes more distinct
	// peers, so every pair outside those lists is never measured. Near of
	// them are chosen by the estimates, the rest uniformly at random when
	// the node joins (peers that already probe the node last: that pair is
	// measured anyway).
	Neighbours int
	// Near is how many of the Neighbours a Session adds during the first
	// budget as the node's nearest peers by the current estimates: until
	// then the node probes Neighbours − Near peers, afterwards Neighbours.
	// Small RTTs are where relative errors and core selection are most
	// sensitive, and nearest peers are what a node learns cheaply from its
	// estimates. 0 keeps all random.
	Near int
	// NearPasses is how many steps the near neighbours are added in, evenly
	// spaced over the first budget (each pass: fit, add its share of the
	// Near nearest peers, probe on); later passes find near peers the first
	// estimates missed. 0 means 1 when Near > 0.
	NearPasses int
	// NearProfile ranks near peers by the profile distance of mf's model
	// (Factor.Profile) instead of by its estimated RTT.
	NearProfile bool
	// Disputed is how many more peers a Session adds, one per pass after
	// the near passes, as the peers on which the estimator's two models
	// disagree most (mf-geo's plain and geographic models: active
	// learning by committee). Until then the node probes Neighbours −
	// Near − Disputed peers. Only mf-geo has two models; where it runs
	// without positions (plain mf), Session leaves them random. 0: none.
	Disputed int
	// Banded draws the random peers by distance instead of uniformly: a
	// node ranks the other nodes by great-circle distance and cuts them
	// into as many bands of equal count as it draws peers, and takes from
	// each band the peer that the fewest nodes probe so far (ties broken at
	// random; peers that probe the node already last). Every node then
	// probes near, middle and far peers alike, and no node is left
	// unprobed while others are probed often. It needs the nodes' positions
	// (Truth.WithPositions); without them the draw stays uniform.
	Banded bool
	// PairOnce makes a pass that adds peers (near or disputed) count a pair
	// as measured as soon as one end adds it, so that the other end, later
	// in the same pass, adds another peer rather than the same pair again
	// (likely when the ranking is symmetric, as geographic distance and the
	// models' dispute are). Without it both ends may spend a peer on it.
	PairOnce bool
	// Rate is the probe rate of one node in probes per second. A node
	// cycles through its neighbours, one probe per 1/Rate seconds; one
	// round (every live node sends one probe) lasts 1/Rate seconds.
	Rate float64
	// Duration is how long the process runs (simulated time, a value:
	// nothing here reads a clock). Rounds = ceil(Rate × Duration).
	Duration time.Duration
	// Jitter is the mean queueing delay added to a sample, relative to the
	// pair's RTT: a sample is RTT × (1 + Jitter × X) with X exponential of
	// mean 1 (queues only ever add delay). 0 gives exact samples.
	Jitter float64
	// Churn is the share of live nodes that leave per minute (0 = none). A
	// node that leaves loses its state and returns, as a new node, after
	// Downtime.
	Churn float64
	// Downtime is how long a departed node stays away.
	Downtime time.Duration
}

// DefaultProbeConfig is the anchor: 32 random neighbours, one
// probe per second for 2,000 s (2,000 rounds), 5% mean jitter, no churn.
func DefaultProbeConfig() ProbeConfig {
	return ProbeConfig{Neighbours: 32, Rate: 1, Duration: 2000 * time.Second, Jitter: 0.05, Downtime: time.Minute}
}

// HighRateConfig and LowRateConfig are the paper's two Vivaldi packet
// rates (§6.3, Table 3, whose values the text does not give): a high rate
// of 10 probes/s that stabilises in the 4-minute log time the paper
// reports, and a low, game-like rate of 1 probe/s logged for 8 minutes,
// both with the paper's largest group size of 12 neighbours.
func HighRateConfig() ProbeConfig {
	c := DefaultProbeConfig()
	c.Neighbours, c.Rate, c.Duration = 12, 10, 4*time.Minute
	return c
}

// LowRateConfig: see HighRateConfig.
func LowRateConfig() ProbeConfig {
	c := DefaultProbeConfig()
	c.Neighbours, c.Rate, c.Duration = 12, 1, 8*time.Minute
	return c
}

// Validate checks c and returns it with defaults filled (Downtime one
// minute when churn is on and no downtime is given).
func (c ProbeConfig) Validate() (ProbeConfig, error) {
	switch {
	case c.Neighbours < 1:
		return c, fmt.Errorf("%w: %d neighbours, want at least 1", ErrConfig, c.Neighbours)
	case c.Near < 0 || c.Near >= c.Neighbours:
		return c, fmt.Errorf("%w: %d near neighbours of %d, want 0..%d", ErrConfig, c.Near, c.Neighbours, c.Neighbours-1)
	case c.Disputed < 0 || c.Near+c.Disputed >= c.Neighbours:
		return c, fmt.Errorf("%w: %d disputed and %d near neighbours of %d, want both ≥ 0 and at most %d together", ErrConfig, c.Disputed, c.Near, c.Neighbours, c.Neighbours-1)
	case c.NearPasses < 0 || c.NearPasses > 10:
		return c, fmt.Errorf("%w: %d near passes, want 0..10", ErrConfig, c.NearPasses)
	case !(c.Rate > 0) || math.IsInf(c.Rate, 0):
		return c, fmt.Errorf("%w: probe rate %g/s, want > 0", ErrConfig, c.Rate)
	case c.Duration <= 0:
		return c, fmt.Errorf("%w: duration %v, want > 0", ErrConfig, c.Duration)
	case !(c.Jitter >= 0) || math.IsInf(c.Jitter, 0):
		return c, fmt.Errorf("%w: jitter %g, want ≥ 0", ErrConfig, c.Jitter)
	case !(c.Churn >= 0) || c.Churn > 1:
		return c, fmt.Errorf("%w: churn %g per minute, want in [0, 1]", ErrConfig, c.Churn)
	case c.Downtime < 0:
		return c, fmt.Errorf("%w: downtime %v, want ≥ 0", ErrConfig, c.Downtime)
	}
	if c.Near > 0 && c.NearPasses == 0 {
		c.NearPasses = 1
	}
	if c.Churn > 0 && c.Downtime == 0 {
		c.Downtime = time.Minute
	}
	if r := c.Rounds(); r > 10_000_000 {
		return c, fmt.Errorf("%w: %d rounds (rate × duration), want at most 1e7", ErrConfig, r)
	}
	return c, nil
}

// Rounds returns the number of probe rounds, ceil(Rate × Duration).
func (c ProbeConfig) Rounds() int { return int(math.Ceil(c.Rate*c.Duration.Seconds() - 1e-9)) }

// Sample is one RTT observation: From probed To and measured RTT ms.
type Sample struct {
	From, To int
	RTT      float64
}

// Change is a churn event: Node left (Join false) or came back as a new
// node (Join true).
type Change struct {
	Node int
	Join bool
}

// Process is a seeded measurement process over a Truth: each round every
// live node probes its next neighbour. It is deterministic for a given
// *rand.Rand state.
type Process struct {
	cfg       ProbeConfig
	t         *Truth
	rng       *rand.Rand
	nbr       [][]int
	next      []int
	alive     []bool
	back      []int // round at which a departed node returns
	round     int
	leaveProb float64
	downtime  int // rounds
	lost      int
	measured  []bool    // n×n: i probes j or j probes i now
	ever      []bool    // n×n: measured at any point of the run
	building  bool      // defer rebuildMeasured while NewProcess chooses
	km        []float64 // n×n great-circle distances for a Banded draw, nil otherwise
	grown     bool      // AddNear has run: a returning node draws all Neighbours
}

// NewProcess starts a measurement process on t. Every node is live and has
// chosen its neighbours.
func NewProcess(t *Truth, cfg ProbeConfig, rng *rand.Rand) (*Process, error) {
	if rng == nil {
		return nil, ErrNilRand
	}
	if t == nil {
		return nil, fmt.Errorf("%w: nil truth", ErrShape)
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	n := t.Len()
	if cfg.Neighbours > n-1 {
		return nil, fmt.Errorf("%w: %d neighbours for %d nodes, want at most %d", ErrConfig, cfg.Neighbours, n, n-1)
	}
	p := &Process{cfg: cfg, t: t, rng: rng, nbr: make([][]int, n), next: make([]int, n),
		alive: make([]bool, n), back: make([]int, n), measured: make([]bool, n*n), ever: make([]bool, n*n)}
	roundSec := 1 / cfg.Rate
	p.leaveProb = cfg.Churn * roundSec / 60
	p.downtime = max(1, int(math.Round(cfg.Downtime.Seconds()*cfg.Rate)))
	if lat, lon, ok := t.Positions(); ok && cfg.Banded {
		p.km = make([]float64, n*n)
		for i := range n {
			for j := i + 1; j < n; j++ {
				d := geo.GreatCircleKm(lat[i], lon[i], lat[j], lon[j])
				p.km[i*n+j], p.km[j*n+i] = d, d
			}
		}
	}
	p.building = true
	for i := range n {
		p.alive[i] = true
		p.choose(i)
	}
	p.building = false
	p.rebuildMeasured()
	return p, nil
}

// choose draws node i's neighbours uniformly at random (or one per
// distance band: Banded), Neighbours − Near − Disputed of them before
// AddNear has run and Neighbours after (a node that returns then has no
// near pass left); peers that probe i already come last.
func (p *Process) choose(i int) {
	n := p.t.Len()
	k := p.cfg.Neighbours
	if !p.grown {
		k -= p.cfg.Near + p.cfg.Disputed
	}
	if p.km != nil {
		p.chooseBanded(i, k)
		return
	}
	nb := p.nbr[i][:0]
	// Partial Fisher–Yates over the other nodes, those that probe i
	// already (a pair measured anyway) appended once the others run out.
	perm := make([]int, 0, n-1)
	var probing []int
	for j := range n {
		switch {
		case j == i:
		case slices.Contains(p.nbr[j], i):
			probing = append(probing, j)
		default:
			perm = append(perm, j)
		}
	}
	for a := 0; len(nb) < k; a++ {
		if a == len(perm) {
			perm, probing = append(perm, probing...), nil
		}
		b := a + p.rng.IntN(len(perm)-a)
		perm[a], perm[b] = perm[b], perm[a]
		nb = append(nb, perm[a])
	}
	p.nbr[i] = nb
	p.next[i] = 0
	p.rebuildMeasured()
}

// chooseBanded draws node i's k peers one per distance band (Banded): the
// other nodes ranked by distance from i, cut into k bands of equal count
// (k ≤ n − 1), and from each band the peer fewest nodes probe, peers that
// probe i already last, ties at random.
func (p *Process) chooseBanded(i, k int) {
	n := p.t.Len()
	probed := make([]int, n) // how many nodes probe each node
	for a, nb := range p.nbr {
		for _, j := range nb {
			if a != i {
				probed[j]++
			}
		}
	}
	tie := p.rng.Perm(n)
	others := make([]int, 0, n-1)
	for j := range n {
		if j != i {
			others = append(others, j)
		}
	}
	slices.SortFunc(others, func(a, b int) int {
		return cmp.Or(cmp.Compare(p.km[i*n+a], p.km[i*n+b]), cmp.Compare(tie[a], tie[b]))
	})
	// rank orders a band's peers: not probing i first, then the fewest
	// probers, then at random.
	rank := func(a, b int) int {
		x, y := slices.Contains(p.nbr[a], i), slices.Contains(p.nbr[b], i)
		if x != y {
			if x {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(probed[a], probed[b]), cmp.Compare(tie[a], tie[b]))
	}
	nb := p.nbr[i][:0]
	for b := range k {
		j := slices.MinFunc(others[b*len(others)/k:(b+1)*len(others)/k], rank)
		probed[j]++
		nb = append(nb, j)
	}
	p.nbr[i] = nb
	p.next[i] = 0
	p.rebuildMeasured()
}

// rebuildMeasured marks the pairs in some node's current neighbour list,
// and adds them to the pairs ever measured.
func (p *Process) rebuildMeasured() {
	if p.building {
		return
	}
	n := p.t.Len()
	clear(p.measured)
	for i, nb := range p.nbr {
		for _, j := range nb {
			p.measured[i*n+j], p.measured[j*n+i] = true, true
			p.ever[i*n+j], p.ever[j*n+i] = true, true
		}
	}
}

// AddNear adds to every live node's neighbours its count nearest peers by
// e's estimates that it does not probe yet, never growing a list beyond
// Neighbours: the budget counts every peer a node ever probes, so nothing
// is replaced. The node probes its list from the start again.
func (p *Process) AddNear(e Estimator, count int) {
	n := p.t.Len()
	k := p.cfg.Neighbours
	p.grown = true
	idx := make([]int, 0, n-1)
	for i := range n {
		if !p.alive[i] || count <= 0 || len(p.nbr[i]) >= k {
			continue
		}
		idx = idx[:0]
		for j := range n {
			if j != i && !slices.Contains(p.nbr[i], j) {
				idx = append(idx, j)
			}
		}
		// Nearest first; peers that probe i already (the pair is measured
		// anyway, a probe there buys nothing new) after all others.
		slices.SortStableFunc(idx, func(a, b int) int {
			if x, y := p.ever[i*n+a], p.ever[i*n+b]; x != y {
				if x {
					return 1
				}
				return -1
			}
			return cmp.Compare(e.Estimate(i, a), e.Estimate(i, b))
		})
		add := min(count, k-len(p.nbr[i]), len(idx))
		p.nbr[i], p.next[i] = append(p.nbr[i], idx[:add]...), 0
		if p.cfg.PairOnce {
			for _, j := range idx[:add] {
				p.ever[i*n+j], p.ever[j*n+i] = true, true
			}
		}
	}
	p.rebuildMeasured()
}

// Config returns the validated configuration.
func (p *Process) Config() ProbeConfig { return p.cfg }

// Truth returns the network being probed.
func (p *Process) Truth() *Truth { return p.t }

// Round returns the number of rounds run.
func (p *Process) Round() int { return p.round }

// Lost returns the number of probes that got no answer because the pair is
// missing from the truth.
func (p *Process) Lost() int { return p.lost }

// Neighbours returns node i's neighbours (a copy).
func (p *Process) Neighbours(i int) []int { return append([]int(nil), p.nbr[i]...) }

// Alive reports whether node i is present.
func (p *Process) Alive(i int) bool { return p.alive[i] }

// Measured reports whether i and j are neighbours (one probes the other),
// so that the pair's RTT is measured rather than estimated.
func (p *Process) Measured(i, j int) bool { return p.measured[i*p.t.Len()+j] }

// EverMeasured reports whether i and j have been neighbours at any point
// of the run (every neighbour list since NewProcess, across AddNear,
// churn and SetTruth). The other pairs were never probed: they are the
// held-out pairs on which an estimator's accuracy is judged.
func (p *Process) EverMeasured(i, j int) bool { return p.ever[i*p.t.Len()+j] }

// SetTruth switches the network to another snapshot of the same endpoints
// (the next PlanetLab time slice); neighbours and state carry over.
func (p *Process) SetTruth(t *Truth) error {
	if t == nil || !p.t.Compatible(t) {
		return fmt.Errorf("%w: new snapshot has different endpoints", ErrShape)
	}
	p.t = t
	return nil
}

// Probe measures the RTT from i to j once, with jitter; false when the
// pair is missing from the truth (the probe is lost).
func (p *Process) Probe(i, j int) (float64, bool) {
	v, ok := p.t.RTT(i, j)
	if !ok {
		p.lost++
		return 0, false
	}
	if p.cfg.Jitter > 0 {
		v *= 1 + p.cfg.Jitter*p.rng.ExpFloat64()
	}
	return v, true
}

// Step runs one round and appends its samples and churn events to the
// given slices (which may be nil), returning them. Departures are decided
// first, then returns, then each live node sends one probe to its next
// live neighbour.
func (p *Process) Step(samples []Sample, changes []Change) ([]Sample, []Change) {
	p.round++
	n := p.t.Len()
	if p.leaveProb > 0 {
		for i := range n {
			if p.alive[i] && p.rng.Float64() < p.leaveProb {
				p.alive[i] = false
				p.back[i] = p.round + p.downtime
				changes = append(changes, Change{Node: i})
			} else if !p.alive[i] && p.round >= p.back[i] {
				p.alive[i] = true
				p.choose(i)
				changes = append(changes, Change{Node: i, Join: true})
			}
		}
	}
	for i := range n {
		if !p.alive[i] {
			continue
		}
		nb := p.nbr[i]
		for try := 0; try < len(nb); try++ {
			j := nb[p.next[i]]
			p.next[i] = (p.next[i] + 1) % len(nb)
			if !p.alive[j] {
				continue
			}
			if v, ok := p.Probe(i, j); ok {
				samples = append(samples, Sample{From: i, To: j, RTT: v})
			}
			break
		}
	}
	return samples, changes
}

// Learner is an estimator that learns from a measurement process: the
// neighbour-probing methods (Vivaldi and Fit).
type Learner interface {
	Estimator
	// Observe takes one round of samples and churn events, in order:
	// changes first (a node that left is forgotten, one that joined
	// starts afresh), then the samples.
	Observe(samples []Sample, changes []Change)
}

// Run drives a learner through rounds rounds of p (all of p's configured
// rounds when rounds ≤ 0). after, when not nil, is called after each round
// with the round number (1-based), for progress and accuracy traces.
func Run(p *Process, l Learner, rounds int, after func(round int)) {
	if rounds <= 0 {
		rounds = p.cfg.Rounds()
	}
	var s []Sample
	var c []Change
	for r := 1; r <= rounds; r++ {
		s, c = p.Step(s[:0], c[:0])
		l.Observe(s, c)
		if after != nil {
			after(r)
		}
	}
}
