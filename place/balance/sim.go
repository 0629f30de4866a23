package balance

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Method is the balancing policy a simulation runs.
type Method int

const (
	// NoBalance never balances (scenario A's warm-up).
	NoBalance Method = iota
	// Hybrid is Algorithm 1 (Balance).
	Hybrid
	// HybridPack is Pack, the exact alternative to Algorithm 1.
	HybridPack
)

func (m Method) String() string {
	switch m {
	case NoBalance:
		return "none"
	case Hybrid:
		return "hybrid"
	case HybridPack:
		return "pack"
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// SimConfig describes one run of the §5 simulation. Start from
// ScenarioA or ScenarioB and change fields; Validate fills nothing in.
type SimConfig struct {
	Servers int     // N, laid out as a grid of rectangular regions over the map
	MaxLoad int     // max_S_load
	Margin  float64 // Algorithm 1's margin
	Method  Method
	// Overflow lets Algorithm 1 send instances to player hosts.
	Overflow bool
	// FillToTarget limits receiving servers to the target (see Config);
	// without it a cluster where every server is near MaxLoad thrashes.
	FillToTarget bool
	Criterion    Criterion // how hosts are chosen
	FailoverMs   float64   // Score's price of one failover
	// Start is the initial number of players as a share of Servers·MaxLoad.
	Start float64
	// ArrivalRatio is arrivals per departure: the arrival rate is
	// ArrivalRatio times the departure rate of the players online, Σ 1/(own
	// mean session) (A: 1/1.1, B: 1.2).
	ArrivalRatio float64
	Hours        float64 // simulated time
	// MainShare of the players stay in the main world, scattered uniformly;
	// the others are in instances (§5: 10 %).
	MainShare float64
	Sizes     []int     // instance sizes (5, 10, 20, 25, 40)
	Weights   []float64 // their shares of the instances created (Table 3)
	Minutes   []float64 // mean duration per size, minutes (uniform ±50 %)
	// Hot spots: an instance is placed near one of HotSpots centres
	// (Gaussian, HotSigma map units) with probability HotShare, else
	// uniformly on the map.
	HotSpots int
	HotShare float64
	HotSigma float64
	Cells    int // microcells per map side (the classic baseline's grid)
	// ReturnRate is the share of a finished hosted instance's players who
	// return to the main world; the others log off.
	ReturnRate float64
	PeriodS    float64 // Algorithm 3's maintenance period T, seconds (< 1)
	Sessions   Gamma   // population session lengths, hours
	// Heterogeneity is the coefficient of variation of a player's own mean
	// session length across players; each player's sessions are gamma with
	// that mean, with the shape chosen so that the population's mean and
	// standard deviation stay those of Sessions. 0: every session is drawn
	// from Sessions itself and a history predicts nothing.
	Heterogeneity float64
	Net           Net     // player locations and RTTs (nil: latency not measured)
	SampleMin     float64 // minutes between samples of the time series
	Seed          uint64
	// Check verifies the invariants after every balancing round and
	// restructuring and fails the run on the first violation.
	Check bool
}

// ScenarioA is §5's scenario A: the cluster starts full (10 × 5,500),
// departures are 10 % above arrivals, no balancing (the state at the end
// is the snapshot both methods balance).
func ScenarioA() SimConfig {
	c := base()
	c.Method, c.Start, c.ArrivalRatio, c.Hours = NoBalance, 1.0, 1/1.1, 2
	return c
}

// ScenarioB is §5's scenario B: arrivals 20 % above departures, Algorithm
// 1 with overflow to player hosts chosen by LL, from the balancing target.
func ScenarioB() SimConfig {
	c := base()
	c.Method, c.Start, c.ArrivalRatio, c.Hours = Hybrid, 0.9, 1.2, 2
	return c
}

func base() SimConfig {
	return SimConfig{
		Servers: 10, MaxLoad: 5500, Margin: 0.10, Overflow: true, FillToTarget: true, Criterion: LL, FailoverMs: 100,
		MainShare: 0.10,
		Sizes:     []int{5, 10, 20, 25, 40},
		Weights:   []float64{0.40, 0.30, 0.12, 0.10, 0.08},
		Minutes:   []float64{30, 40, 60, 60, 90},
		HotSpots:  10, HotShare: 0.15, HotSigma: 60,
		Cells: 100, ReturnRate: 1, PeriodS: 0.5,
		Sessions: WoWSessions, Heterogeneity: 0.5,
		SampleMin: 5,
	}
}

// Validate reports the first bad field.
func (c *SimConfig) Validate() error {
	bad := func(f string, a ...any) error { return fmt.Errorf("%w: "+f, append([]any{ErrConfig}, a...)...) }
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.Servers < 1 || c.Servers > 1000:
		return bad("%d servers (want 1..1000)", c.Servers)
	case c.MaxLoad < 1 || c.MaxLoad > 1_000_000:
		return bad("max load %d (want 1..1000000)", c.MaxLoad)
	case !(c.Margin >= 0 && c.Margin < 1):
		return bad("margin %g (want 0 ≤ margin < 1)", c.Margin)
	case c.Method < NoBalance || c.Method > HybridPack:
		return bad("method %d", int(c.Method))
	case c.Criterion < LL || c.Criterion > Score:
		return bad("criterion %d", int(c.Criterion))
	case !(c.FailoverMs >= 0) || !finite(c.FailoverMs):
		return bad("failover price %g ms", c.FailoverMs)
	case !(c.Start > 0 && c.Start <= 2):
		return bad("start %g (want 0 < start ≤ 2)", c.Start)
	case !(c.ArrivalRatio >= 0 && c.ArrivalRatio <= 10):
		return bad("arrival ratio %g (want 0..10)", c.ArrivalRatio)
	case !(c.Hours >= 0 && c.Hours <= 1000):
		return bad("hours %g (want 0..1000)", c.Hours)
	case !(c.MainShare > 0 && c.MainShare < 1):
		return bad("main share %g (want 0 < share < 1)", c.MainShare)
	case len(c.Sizes) == 0 || len(c.Weights) != len(c.Sizes) || len(c.Minutes) != len(c.Sizes):
		return bad("%d sizes, %d weights, %d durations (want equal, ≥ 1)", len(c.Sizes), len(c.Weights), len(c.Minutes))
	case c.HotSpots < 0 || !(c.HotShare >= 0 && c.HotShare <= 1) || !(c.HotSigma > 0) || !finite(c.HotSigma):
		return bad("hot spots %d, share %g, sigma %g", c.HotSpots, c.HotShare, c.HotSigma)
	case c.Cells < 1 || c.Cells > 1000:
		return bad("%d cells per side (want 1..1000)", c.Cells)
	case !(c.ReturnRate >= 0 && c.ReturnRate <= 1):
		return bad("return rate %g (want 0..1)", c.ReturnRate)
	case !(c.PeriodS > 0 && c.PeriodS < 1):
		return bad("maintenance period %g s (the paper wants 0 < T < 1 s)", c.PeriodS)
	case !(c.SampleMin > 0) || !finite(c.SampleMin):
		return bad("sample interval %g min", c.SampleMin)
	}
	if err := c.Sessions.validate(); err != nil {
		return err
	}
	if _, _, err := c.personal(); err != nil {
		return err
	}
	var w float64
	for k, s := range c.Sizes {
		if s < 2 || s > 1000 {
			return bad("instance size %d (want 2..1000)", s)
		}
		if !(c.Weights[k] >= 0) || !finite(c.Weights[k]) {
			return bad("weight %g of size %d", c.Weights[k], s)
		}
		if !(c.Minutes[k] > 0) || !finite(c.Minutes[k]) {
			return bad("duration %g min of size %d", c.Minutes[k], s)
		}
		w += c.Weights[k]
	}
	if !(w > 0) {
		return bad("instance weights sum to %g", w)
	}
	if c.Net != nil && c.Net.Locations() < 1 {
		return bad("net with no locations")
	}
	return nil
}

// personal returns the shape of a player's own session distribution and
// the distribution of players' mean sessions (see Heterogeneity).
func (c *SimConfig) personal() (shape float64, means Gamma, err error) {
	h := c.Heterogeneity
	if !(h >= 0) || math.IsInf(h, 0) {
		return 0, Gamma{}, fmt.Errorf("%w: heterogeneity %g (want ≥ 0)", ErrConfig, h)
	}
	if h == 0 {
		return c.Sessions.K, Gamma{}, nil
	}
	m, s := c.Sessions.Mean(), c.Sessions.SD()
	// Var = E[M²]/k + Var(M), M ~ Gamma(mean m, CV h): solve for k.
	vm := h * h * m * m
	rest := s*s - vm
	if !(rest > 0) {
		return 0, Gamma{}, fmt.Errorf("%w: heterogeneity %g leaves no within-player variance (want CV < %.3f)", ErrConfig, h, s/m)
	}
	k := (m*m + vm) / rest
	return k, Gamma{K: 1 / (h * h), Theta: m * h * h}, nil
}

// Sample is one point of a run's time series.
type Sample struct {
	Hours   float64
	Online  int // players online
	Cluster int // players served by the cluster
	Hosted  int // players in instances on player hosts
	MaxLoad int // the most loaded server's load
}

// LatencyStat accumulates the latency of hosted instances when they are
// distributed: the mean RTT of each non-host player to the host, and of
// every player to the cluster, per instance size.
type LatencyStat struct {
	Size                    int
	Instances               int
	HostSum, HostSq         float64 // over players (ms, ms²)
	ClusterSum, ClusterSq   float64
	Players, ClusterPlayers int
}

// SimResult is what a run measured.
type SimResult struct {
	Config SimConfig
	// Rounds counts balancing rounds; First is the first one (Fig. 9), when
	// there was one.
	Rounds     int
	First      *Round
	Moved      int // players moved between servers, all rounds
	Overflowed int // players sent to player hosts
	// ShedTarget is Σ over rounds and overloaded servers of (excess +
	// margin): what the paper's cost model calls extra_S_players + 10 %.
	ShedTarget int
	Stuck      int // server-rounds still overloaded after a round
	// Final state.
	Loads       []int // per server: players served by the cluster
	HostedFrom  []int // per server: players now on player hosts, by the server they left
	Online      int
	Series      []Sample
	Arrivals    int
	Departures  int
	Formed      int // instances created
	HostedMade  int // instances distributed to player hosts
	Failovers   int // replica promoted to server
	NewReplicas int // replicas chosen after a role left
	Lost        int // hosted instances lost (server left, no replica)
	HostedEnded int // hosted instances that finished
	Returned    int // players back from player hosts to the main world
	// CSMessages counts messages the cluster exchanges because of
	// balancing (Tables 1 and 2): 2 per player moved or distributed and 1
	// per returning player.
	CSMessages float64
	// Reports counts Algorithm 3's state reports from hosted instances'
	// servers to the cluster: one per instance per period T.
	Reports  float64
	Latency  []LatencyStat // per size, when Net is set
	Snapshot *Cluster      // the final cluster state (instances on servers)
	Grid     *Grid         // the final main-world map (classic baseline)
}

type event struct {
	t    float64
	kind uint8
	id   int32
	gen  uint32
}

const (
	evDepart uint8 = iota
	evArrive
	evEnd
	evRestructure
	evSample
)

type evHeap []event

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	if h[i].t != h[j].t {
		return h[i].t < h[j].t
	}
	if h[i].kind != h[j].kind {
		return h[i].kind < h[j].kind
	}
	return h[i].id < h[j].id
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(event)) }
func (h *evHeap) Pop() any {
	o := *h
	e := o[len(o)-1]
	*h = o[:len(o)-1]
	return e
}

type hostState struct {
	g       Group
	alive   []bool
	h       Hosting
	pending bool
	lastT   float64 // time of the last report accounted
}

type inst struct {
	size    int     // alive members
	members []int32 // player ids
	server  int32   // cluster server, or Hosted
	origin  int32   // server it was on before overflowing
	cell    int32   // where it is on the map
	end     float64 // hours
	gen     uint32
	host    *hostState
}

type sim struct {
	cfg   SimConfig
	rng   *rand.Rand
	res   *SimResult
	t     float64 // hours
	shape float64
	means Gamma
	cum   []float64
	hot   [][2]float64
	rows  int
	cols  int
	owner []int32 // cell -> server (regions; fixed)
	cellN []int   // main-world players per cell (for the classic grid)
	loads []int
	// players
	pInst   []int32 // -1 main world
	pCell   []int32
	pLoc    []int32
	pMean   []float64
	pStart  []float64
	pSerial []uint64
	pGen    []uint32
	pFree   []int32
	mg      []int32
	mgPos   []int32
	online  int
	serial  uint64
	insts   []inst
	iFree   []int32
	hostedN int // players on player hosts
	ev      evHeap
	stuck   bool
	invSum  float64 // Σ 1/(own mean session) over players online
	nextTry float64
}

// Simulate runs one simulation. Runs are deterministic: the same config
// (with the same Net) gives the same result.
func Simulate(cfg SimConfig) (*SimResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &sim{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.Seed, 0x62616c616e6365))}
	s.res = &SimResult{Config: cfg}
	s.shape, s.means, _ = cfg.personal()
	var w float64
	for _, x := range cfg.Weights {
		w += x
		s.cum = append(s.cum, w)
	}
	for i := range s.cum {
		s.cum[i] /= w
	}
	for range cfg.HotSpots {
		s.hot = append(s.hot, [2]float64{s.rng.Float64() * mapSize, s.rng.Float64() * mapSize})
	}
	s.rows, s.cols = layout(cfg.Servers)
	n := cfg.Cells
	s.owner = make([]int32, n*n)
	for c := range s.owner {
		x := (float64(c%n) + 0.5) * mapSize / float64(n)
		y := (float64(c/n) + 0.5) * mapSize / float64(n)
		s.owner[c] = int32(s.region(x, y))
	}
	s.cellN = make([]int, n*n)
	s.loads = make([]int, cfg.Servers)
	if cfg.Net != nil {
		for _, sz := range cfg.Sizes {
			s.res.Latency = append(s.res.Latency, LatencyStat{Size: sz})
		}
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.res, nil
}

const mapSize = 1000.0

// layout returns rows × cols regions for n servers, as square as possible.
func layout(n int) (rows, cols int) {
	rows = 1
	for r := 1; r*r <= n; r++ {
		if n%r == 0 {
			rows = r
		}
	}
	return rows, n / rows
}

func (s *sim) region(x, y float64) int {
	c := min(int(x*float64(s.cols)/mapSize), s.cols-1)
	r := min(int(y*float64(s.rows)/mapSize), s.rows-1)
	return r*s.cols + c
}

func (s *sim) cellOf(x, y float64) int32 {
	n := s.cfg.Cells
	cx := min(max(int(x*float64(n)/mapSize), 0), n-1)
	cy := min(max(int(y*float64(n)/mapSize), 0), n-1)
	return int32(cy*n + cx)
}

func (s *sim) push(e event) { heap.Push(&s.ev, e) }

// sessionLen draws a session of player p, hours.
func (s *sim) sessionLen(mean float64) float64 {
	return Gamma{K: s.shape, Theta: mean / s.shape}.Sample(s.rng)
}

func (s *sim) newPlayer(elapsedFrac bool) int32 {
	var p int32
	if k := len(s.pFree); k > 0 {
		p = s.pFree[k-1]
		s.pFree = s.pFree[:k-1]
	} else {
		p = int32(len(s.pInst))
		s.pInst = append(s.pInst, -1)
		s.pCell = append(s.pCell, 0)
		s.pLoc = append(s.pLoc, 0)
		s.pMean = append(s.pMean, 0)
		s.pStart = append(s.pStart, 0)
		s.pSerial = append(s.pSerial, 0)
		s.pGen = append(s.pGen, 0)
		s.mgPos = append(s.mgPos, -1)
	}
	s.pGen[p]++
	s.serial++
	s.pSerial[p] = s.serial
	mean := s.cfg.Sessions.Mean()
	if s.cfg.Heterogeneity > 0 {
		g := s.means
		if elapsedFrac { // online players are biased to long sessions too
			g.K++
		}
		mean = g.Sample(s.rng)
	}
	s.pMean[p] = mean
	s.invSum += 1 / mean
	if s.cfg.Net != nil {
		s.pLoc[p] = int32(s.rng.IntN(s.cfg.Net.Locations()))
	}
	var l float64
	start := s.t
	if elapsedFrac {
		// already playing: a session seen at a random moment is
		// length-biased (gamma with shape+1), and the moment is uniform in
		// it, so the start is the renewal process's steady state
		l = Gamma{K: s.shape + 1, Theta: mean / s.shape}.Sample(s.rng)
		start -= l * s.rng.Float64()
	} else {
		l = s.sessionLen(mean)
	}
	s.pStart[p] = start
	s.push(event{t: start + l, kind: evDepart, id: p, gen: s.pGen[p]})
	s.online++
	s.toMain(p)
	return p
}

// toMain puts p in the main world at a uniform position.
func (s *sim) toMain(p int32) {
	c := s.cellOf(s.rng.Float64()*mapSize, s.rng.Float64()*mapSize)
	s.pInst[p] = -1
	s.pCell[p] = c
	s.cellN[c]++
	s.loads[s.owner[c]]++
	s.mgPos[p] = int32(len(s.mg))
	s.mg = append(s.mg, p)
}

func (s *sim) leaveMain(p int32) {
	c := s.pCell[p]
	s.cellN[c]--
	s.loads[s.owner[c]]--
	i := s.mgPos[p]
	last := s.mg[len(s.mg)-1]
	s.mg[i] = last
	s.mgPos[last] = i
	s.mg = s.mg[:len(s.mg)-1]
	s.mgPos[p] = -1
}

func (s *sim) drawSize() int {
	u := s.rng.Float64()
	for k, c := range s.cum {
		if u < c {
			return k
		}
	}
	return len(s.cum) - 1
}

func (s *sim) instLocation() (float64, float64) {
	if len(s.hot) > 0 && s.rng.Float64() < s.cfg.HotShare {
		h := s.hot[s.rng.IntN(len(s.hot))]
		x := h[0] + s.rng.NormFloat64()*s.cfg.HotSigma
		y := h[1] + s.rng.NormFloat64()*s.cfg.HotSigma
		return math.Min(math.Max(x, 0), mapSize-1e-9), math.Min(math.Max(y, 0), mapSize-1e-9)
	}
	return s.rng.Float64() * mapSize, s.rng.Float64() * mapSize
}

// form creates instances from main-world players while more than
// MainShare of the online players are in the main world.
func (s *sim) form(initial bool) {
	for {
		k := s.drawSize()
		size := s.cfg.Sizes[k]
		if float64(len(s.mg)-size) < s.cfg.MainShare*float64(s.online) {
			return
		}
		var id int32
		if f := len(s.iFree); f > 0 {
			id = s.iFree[f-1]
			s.iFree = s.iFree[:f-1]
		} else {
			id = int32(len(s.insts))
			s.insts = append(s.insts, inst{})
		}
		in := &s.insts[id]
		in.gen++
		x, y := s.instLocation()
		in.cell = s.cellOf(x, y)
		in.server = s.owner[in.cell]
		in.origin = in.server
		in.host = nil
		in.members = in.members[:0]
		for range size {
			p := s.mg[s.rng.IntN(len(s.mg))]
			s.leaveMain(p)
			s.pInst[p] = id
			in.members = append(in.members, p)
		}
		in.size = size
		s.loads[in.server] += size
		d := s.cfg.Minutes[k] / 60 * (0.5 + s.rng.Float64())
		if initial {
			d *= s.rng.Float64()
		}
		in.end = s.t + d
		s.push(event{t: in.end, kind: evEnd, id: id, gen: in.gen})
		s.res.Formed++
	}
}

func (s *sim) run() error {
	cfg := &s.cfg
	total := int(math.Round(cfg.Start * float64(cfg.Servers*cfg.MaxLoad)))
	for range total {
		s.newPlayer(true)
	}
	s.form(true)
	s.scheduleArrival()
	s.push(event{t: 0, kind: evSample})
	if err := s.maybeBalance(); err != nil {
		return err
	}
	for len(s.ev) > 0 {
		e := heap.Pop(&s.ev).(event)
		if e.t > cfg.Hours {
			break
		}
		s.t = math.Max(s.t, e.t)
		switch e.kind {
		case evDepart:
			if s.pGen[e.id] != e.gen {
				continue
			}
			s.depart(e.id)
		case evArrive:
			s.newPlayer(false)
			s.res.Arrivals++
			s.form(false)
			s.scheduleArrival()
		case evEnd:
			if s.insts[e.id].gen != e.gen {
				continue
			}
			s.finish(e.id)
			s.form(false)
		case evRestructure:
			if s.insts[e.id].gen != e.gen {
				continue
			}
			if err := s.restructure(e.id); err != nil {
				return err
			}
		case evSample:
			s.sample()
			s.push(event{t: s.t + cfg.SampleMin/60, kind: evSample})
			continue
		}
		if err := s.maybeBalance(); err != nil {
			return err
		}
	}
	s.t = cfg.Hours
	s.finalize()
	return nil
}

func (s *sim) scheduleArrival() {
	// the departure rate is Σ 1/mean over the players online
	rate := s.cfg.ArrivalRatio * s.invSum // per hour
	if !(rate > 0) {
		return
	}
	s.push(event{t: s.t + s.rng.ExpFloat64()/rate, kind: evArrive})
}

func (s *sim) depart(p int32) {
	s.res.Departures++
	s.online--
	s.invSum -= 1 / s.pMean[p]
	s.pGen[p]++
	if id := s.pInst[p]; id < 0 {
		s.leaveMain(p)
	} else {
		in := &s.insts[id]
		in.size--
		if in.server >= 0 {
			s.loads[in.server]--
		} else {
			s.hostedN--
			s.hostedLeave(id, p)
		}
		if in.size == 0 {
			s.release(id)
		}
	}
	s.pInst[p] = -1
	s.pFree = append(s.pFree, p)
}

// hostedLeave marks p gone from hosted instance id; a server or replica
// leaving is detected at the next maintenance tick (Algorithm 3).
func (s *sim) hostedLeave(id, p int32) {
	in := &s.insts[id]
	hs := in.host
	k := slices.Index(in.members, p)
	hs.alive[k] = false
	in.members[k] = -1
	if (k == hs.h.Server || k == hs.h.Replica) && !hs.pending && in.size > 0 {
		hs.pending = true
		T := s.cfg.PeriodS / 3600
		tick := math.Ceil(s.t/T) * T
		if tick <= s.t {
			tick += T
		}
		s.push(event{t: tick, kind: evRestructure, id: id, gen: in.gen})
	}
}

func (s *sim) restructure(id int32) error {
	in := &s.insts[id]
	hs := in.host
	hs.pending = false
	h := hs.h
	serverGone := h.Server >= 0 && !hs.alive[h.Server]
	replicaGone := h.Replica >= 0 && !hs.alive[h.Replica]
	switch {
	case serverGone && (h.Replica < 0 || replicaGone):
		s.res.Lost++
		// the players go back to the main world
		for _, p := range in.members {
			if p >= 0 {
				s.hostedN--
				s.toMain(p)
				s.res.Returned++
				s.res.CSMessages++
			}
		}
		s.reportMaint(in)
		s.release(id)
		s.form(false)
		return nil
	case serverGone:
		h.Server = h.Replica
		h.Replica = hs.g.NewReplica(s.cfg.Criterion, hs.alive, h.Server)
		s.res.Failovers++
		s.res.NewReplicas++
	case replicaGone:
		h.Replica = hs.g.NewReplica(s.cfg.Criterion, hs.alive, h.Server)
		s.res.NewReplicas++
	}
	hs.h = h
	if s.cfg.Check {
		return s.checkHosted(id)
	}
	return nil
}

func (s *sim) checkHosted(id int32) error {
	in := &s.insts[id]
	hs := in.host
	if in.size >= 2 {
		h := hs.h
		if h.Server < 0 || h.Replica < 0 || h.Server == h.Replica || !hs.alive[h.Server] || !hs.alive[h.Replica] {
			return fmt.Errorf("balance: invariant: hosted instance %d with %d players has server %d, replica %d", id, in.size, h.Server, h.Replica)
		}
	}
	return nil
}

func (s *sim) reportMaint(in *inst) {
	if in.host != nil {
		s.res.Reports += (s.t - in.host.lastT) * 3600 / s.cfg.PeriodS
		in.host.lastT = s.t
	}
}

func (s *sim) finish(id int32) {
	in := &s.insts[id]
	for _, p := range in.members {
		if p < 0 || s.pInst[p] != id {
			continue
		}
		if in.server >= 0 {
			s.loads[in.server]--
			s.toMain(p)
			continue
		}
		s.hostedN--
		if s.rng.Float64() < s.cfg.ReturnRate {
			s.toMain(p)
			s.res.Returned++
			s.res.CSMessages++
		} else { // logs off now
			s.res.Departures++
			s.online--
			s.invSum -= 1 / s.pMean[p]
			s.pGen[p]++
			s.pInst[p] = -1
			s.pFree = append(s.pFree, p)
		}
	}
	if in.server < 0 {
		s.res.HostedEnded++
		s.reportMaint(in)
	}
	s.release(id)
}

func (s *sim) release(id int32) {
	in := &s.insts[id]
	if in.host != nil {
		s.reportMaint(in)
	}
	in.gen++
	in.size = 0
	in.host = nil
	s.iFree = append(s.iFree, id)
}

// cluster returns the balancing view and the instance ids in its order.
func (s *sim) cluster() (*Cluster, []int32) {
	c := &Cluster{MaxLoad: s.cfg.MaxLoad, Main: make([]int, s.cfg.Servers)}
	for cell, n := range s.cellN {
		c.Main[s.owner[cell]] += n
	}
	var ids []int32
	for id := range s.insts {
		in := &s.insts[id]
		if in.size > 0 && in.server >= 0 {
			c.Instances = append(c.Instances, Instance{Size: in.size, Server: int(in.server)})
			ids = append(ids, int32(id))
		}
	}
	return c, ids
}

func (s *sim) maybeBalance() error {
	if s.cfg.Method == NoBalance {
		return nil
	}
	over := false
	for _, l := range s.loads {
		if l > s.cfg.MaxLoad {
			over = true
			break
		}
	}
	if !over || (s.stuck && s.t < s.nextTry) {
		return nil
	}
	c, ids := s.cluster()
	bc := Config{Margin: s.cfg.Margin, Overflow: s.cfg.Overflow, FillToTarget: s.cfg.FillToTarget}
	var r Round
	var err error
	if s.cfg.Method == HybridPack {
		var pr PackRound
		pr, err = Pack(c, bc)
		r = pr.Round
	} else {
		r, err = Balance(c, bc)
	}
	if err != nil {
		return err
	}
	target := bc.Target(s.cfg.MaxLoad)
	for _, i := range r.Overloaded {
		s.res.ShedTarget += r.Before[i] - target
	}
	s.res.Rounds++
	if s.res.First == nil {
		rc := r
		s.res.First = &rc
	}
	s.res.Moved += r.Moved
	s.res.Overflowed += r.Overflowed
	s.res.Stuck += len(r.Stuck)
	// a round that could not help is not retried before the next
	// maintenance period
	s.stuck = len(r.Stuck) > 0
	s.nextTry = s.t + s.cfg.PeriodS/3600
	s.res.CSMessages += 2 * float64(r.Moved+r.Overflowed)
	for _, m := range r.Moves {
		id := ids[m.Instance]
		in := &s.insts[id]
		s.loads[m.From] -= in.size
		if m.To >= 0 {
			in.server = int32(m.To)
			s.loads[m.To] += in.size
			continue
		}
		in.server = Hosted
		in.origin = int32(m.From)
		live := in.members[:0]
		for _, p := range in.members {
			if p >= 0 && s.pInst[p] == id {
				live = append(live, p)
			}
		}
		in.members = live
		s.hostedN += in.size
		s.res.HostedMade++
		s.distribute(id)
	}
	if s.cfg.Check {
		return s.check(r)
	}
	return nil
}

// distribute runs Algorithm 2 for hosted instance id.
func (s *sim) distribute(id int32) {
	in := &s.insts[id]
	n := len(in.members)
	g := Group{N: n, RTT: make([]float64, n*n), Uptime: make([]Uptime, n), Leave: make([]float64, n), FailoverMs: s.cfg.FailoverMs}
	net := s.cfg.Net
	remain := math.Max(in.end-s.t, 0)
	for a, p := range in.members {
		if net != nil {
			for b := a + 1; b < n; b++ {
				v := net.RTT(int(s.pLoc[p]), int(s.pLoc[in.members[b]]))
				g.RTT[a*n+b], g.RTT[b*n+a] = v, v
			}
		}
		var h History
		s.history(p, &h)
		g.Uptime[a] = h.Predict(s.cfg.Sessions)
		g.Leave[a] = LeaveProb(h.Fit(s.cfg.Sessions), s.t-s.pStart[p], remain)
	}
	alive := make([]bool, n)
	for i := range alive {
		alive[i] = true
	}
	hs := &hostState{g: g, alive: alive, lastT: s.t}
	hs.h = g.Distribute(s.cfg.Criterion, alive)
	in.host = hs
	if net != nil {
		for k := range s.res.Latency {
			st := &s.res.Latency[k]
			if st.Size != n {
				continue
			}
			st.Instances++
			for a, p := range in.members {
				c := net.ClusterRTT(int(s.pLoc[p]))
				st.ClusterSum += c
				st.ClusterSq += c * c
				st.ClusterPlayers++
				if a == hs.h.Server {
					continue
				}
				v := g.RTT[a*n+hs.h.Server]
				st.HostSum += v
				st.HostSq += v * v
				st.Players++
			}
		}
	}
}

// history fills h with player p's past sessions (between 1 and HistoryLen
// of them, from the player's own distribution), drawn from a generator
// seeded by the run's seed and the player's serial so that it does not
// disturb the run's random stream.
func (s *sim) history(p int32, h *History) {
	r := rand.New(rand.NewPCG(s.cfg.Seed^0x686973746f7279, s.pSerial[p]))
	n := 1 + r.IntN(HistoryLen)
	g := Gamma{K: s.shape, Theta: s.pMean[p] / s.shape}
	for range n {
		h.Add(g.Sample(r))
	}
}

// check verifies the invariants after a balancing round.
func (s *sim) check(r Round) error {
	// loads recomputed from scratch equal the maintained ones
	l := make([]int, s.cfg.Servers)
	for cell, n := range s.cellN {
		l[s.owner[cell]] += n
	}
	players := len(s.mg)
	hosted := 0
	for id := range s.insts {
		in := &s.insts[id]
		if in.size == 0 {
			continue
		}
		alive := 0
		for _, p := range in.members {
			if p >= 0 && s.pInst[p] == int32(id) {
				alive++
			}
		}
		if alive != in.size {
			return fmt.Errorf("balance: invariant: instance %d has %d members but size %d", id, alive, in.size)
		}
		players += in.size
		if in.server >= 0 {
			l[in.server] += in.size
		} else {
			hosted += in.size
			if err := s.checkHosted(int32(id)); err != nil && !in.host.pending {
				return err
			}
		}
	}
	if !slices.Equal(l, s.loads) {
		return fmt.Errorf("balance: invariant: loads %v, recomputed %v", s.loads, l)
	}
	if players != s.online || hosted != s.hostedN {
		return fmt.Errorf("balance: invariant: %d players counted, %d online; %d hosted, %d counted", players, s.online, hosted, s.hostedN)
	}
	if s.cfg.Overflow {
		target := Config{Margin: s.cfg.Margin}.Target(s.cfg.MaxLoad)
		for i, v := range s.loads {
			main := 0
			for cell, n := range s.cellN {
				if int(s.owner[cell]) == i {
					main += n
				}
			}
			if v > s.cfg.MaxLoad && main <= target {
				return fmt.Errorf("balance: invariant: server %d at %d > %d after a round", i, v, s.cfg.MaxLoad)
			}
		}
	}
	return nil
}

func (s *sim) sample() {
	cl := 0
	mx := 0
	for _, l := range s.loads {
		cl += l
		mx = max(mx, l)
	}
	s.res.Series = append(s.res.Series, Sample{Hours: s.t, Online: s.online, Cluster: cl, Hosted: s.hostedN, MaxLoad: mx})
}

func (s *sim) finalize() {
	for id := range s.insts {
		if in := &s.insts[id]; in.size > 0 && in.host != nil {
			s.reportMaint(in)
		}
	}
	s.sample()
	s.res.Loads = slices.Clone(s.loads)
	s.res.HostedFrom = make([]int, s.cfg.Servers)
	for id := range s.insts {
		if in := &s.insts[id]; in.size > 0 && in.server < 0 {
			s.res.HostedFrom[in.origin] += in.size
		}
	}
	s.res.Online = s.online
	c, _ := s.cluster()
	s.res.Snapshot = c
	n := s.cfg.Cells
	g := &Grid{Side: n, Owner: make([]int, n*n), Load: slices.Clone(s.cellN)}
	for cell := range g.Owner {
		g.Owner[cell] = int(s.owner[cell])
	}
	for id := range s.insts {
		if in := &s.insts[id]; in.size > 0 && in.server >= 0 {
			// the classic baseline runs instances where they are on the map
			g.Load[in.cell] += in.size
		}
	}
	s.res.Grid = g
}

// SamplePlayer draws a player as the simulation does: its own mean session
// length and a history of 1 to HistoryLen past sessions, written into h
// (which is reset first). It returns the player's own mean, hours.
func (c *SimConfig) SamplePlayer(rng *rand.Rand, h *History) (float64, error) {
	shape, means, err := c.personal()
	if err != nil {
		return 0, err
	}
	if err := c.Sessions.validate(); err != nil {
		return 0, err
	}
	mean := c.Sessions.Mean()
	if c.Heterogeneity > 0 {
		mean = means.Sample(rng)
	}
	*h = History{}
	g := Gamma{K: shape, Theta: mean / shape}
	for range 1 + rng.IntN(HistoryLen) {
		h.Add(g.Sample(rng))
	}
	return mean, nil
}
