package topo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// ErrConfig reports an invalid generator configuration or a nil random
// source. The wrapped message names the model and the field.
var ErrConfig = errors.New("topo: invalid config")

// MaxNodes bounds the size of a generated topology. The generators are
// O(n²) at worst and keep O(n + links) memory; the bound only rejects
// sizes that are certainly mistakes (an overflowed product, a negative
// number read as unsigned) before anything is allocated.
const MaxNodes = 1 << 22

// DelayKind says how a generator assigns a delay to each link.
type DelayKind int

const (
	// DelayDefault (the zero value) means the model's default: uniform in
	// [0, 25] ms.
	DelayDefault DelayKind = iota
	// DelayUniform draws every link's delay independently and uniformly from
	// [Min, Max] ms, as the CMA paper does ("every link is uniformly
	// distributed in the delay range [0ms, 25ms]").
	DelayUniform
	// DelayDistance makes a link's delay proportional to the Euclidean
	// distance between its end points: delay = MsPerUnit × distance. With a
	// plane of side 200 and MsPerUnit 1 this is the core-selection paper's
	// "square world with sides equal to 200 ms".
	DelayDistance
)

// String names the delay kind ("default", "uniform", "distance").
func (k DelayKind) String() string {
	switch k {
	case DelayDefault:
		return "default"
	case DelayUniform:
		return "uniform"
	case DelayDistance:
		return "distance"
	}
	return fmt.Sprintf("DelayKind(%d)", int(k))
}

// DelayModel assigns link delays. The zero value is the default, uniform in
// [0, 25] ms.
type DelayModel struct {
	Kind DelayKind
	// Min and Max bound a DelayUniform delay, in ms: 0 <= Min <= Max.
	Min, Max float64
	// MsPerUnit converts plane distance to ms for DelayDistance; 0 means 1
	// (plane units are milliseconds).
	MsPerUnit float64
}

// Default delay range, from the CMA paper's §4 (which takes it from its
// reference [10]): every link uniform in [0 ms, 25 ms].
const (
	DefaultMinDelay = 0.0
	DefaultMaxDelay = 25.0
)

// UniformDelay returns a DelayModel drawing delays uniformly from [lo, hi] ms.
func UniformDelay(lo, hi float64) DelayModel {
	return DelayModel{Kind: DelayUniform, Min: lo, Max: hi}
}

// DistanceDelay returns a DelayModel whose delay is msPerUnit × the Euclidean
// distance between the link's end points.
func DistanceDelay(msPerUnit float64) DelayModel {
	return DelayModel{Kind: DelayDistance, MsPerUnit: msPerUnit}
}

func (d DelayModel) filled() (DelayModel, error) {
	switch d.Kind {
	case DelayDefault:
		if d.Min != 0 || d.Max != 0 || d.MsPerUnit != 0 {
			return d, fmt.Errorf("delay: Kind unset but Min/Max/MsPerUnit given; set Kind to DelayUniform or DelayDistance")
		}
		return UniformDelay(DefaultMinDelay, DefaultMaxDelay), nil
	case DelayUniform:
		if !finite(d.Min) || !finite(d.Max) || d.Min < 0 || d.Max < d.Min {
			return d, fmt.Errorf("delay: uniform range [%g, %g] ms must be finite with 0 <= Min <= Max", d.Min, d.Max)
		}
		if d.MsPerUnit != 0 {
			return d, fmt.Errorf("delay: MsPerUnit %g given for a uniform delay", d.MsPerUnit)
		}
	case DelayDistance:
		if d.MsPerUnit == 0 {
			d.MsPerUnit = 1
		}
		if !finite(d.MsPerUnit) || d.MsPerUnit < 0 {
			return d, fmt.Errorf("delay: MsPerUnit %g must be finite and >= 0", d.MsPerUnit)
		}
		if d.Min != 0 || d.Max != 0 {
			return d, fmt.Errorf("delay: Min/Max given for a distance delay")
		}
	default:
		return d, fmt.Errorf("delay: unknown kind %d", int(d.Kind))
	}
	return d, nil
}

// draw returns a link delay for a link between points a and b. The model
// must be filled.
func (d DelayModel) draw(r *rand.Rand, a, b Point) float64 {
	if d.Kind == DelayDistance {
		return d.MsPerUnit * a.Dist(b)
	}
	// The conversion rounds the product, so no architecture fuses it into
	// a multiply-add and the delay is bit-identical everywhere.
	return d.Min + float64(r.Float64()*(d.Max-d.Min))
}

// Growth says how the Waxman generator adds links (BRITE's "growth type").
type Growth int

const (
	// GrowthIncremental (the zero value, BRITE's default) adds nodes one at
	// a time; each new node links to M distinct nodes already in the graph.
	GrowthIncremental Growth = iota
	// GrowthAllAtOnce places every node first, then repeatedly picks a
	// random node and links it to M others, until no node is isolated.
	GrowthAllAtOnce
)

// String names the growth type ("incremental", "all-at-once").
func (g Growth) String() string {
	switch g {
	case GrowthIncremental:
		return "incremental"
	case GrowthAllAtOnce:
		return "all-at-once"
	}
	return fmt.Sprintf("Growth(%d)", int(g))
}

// Border says how a hierarchical topology realises an AS-level link between
// two ASes as a router-level link (BRITE's top-down "edge connection
// method").
type Border int

const (
	// BorderRandom (the zero value, BRITE's TD_RANDOM) links a uniformly
	// random router of each AS.
	BorderRandom Border = iota
	// BorderSmallestDegree (BRITE's TD_SMALLEST) links the router of lowest
	// degree in each AS (lowest index on ties), degrees counted as the
	// inter-AS links are added.
	BorderSmallestDegree
)

// String names the border policy ("random", "smallest-degree").
func (b Border) String() string {
	switch b {
	case BorderRandom:
		return "random"
	case BorderSmallestDegree:
		return "smallest-degree"
	}
	return fmt.Sprintf("Border(%d)", int(b))
}

// Defaults shared by the models: the values of BRITE's shipped
// configuration files (RTWaxman.conf, RTBarabasi.conf,
// TD_ASBarabasi_RTWaxman.conf), written by its GUI.
const (
	// DefaultM is BRITE's default number of links per new node (m = 2),
	// giving mean degree ≈ 2M = 4.
	DefaultM = 2
	// DefaultAlpha and DefaultBeta are BRITE's Waxman defaults.
	DefaultAlpha = 0.15
	DefaultBeta  = 0.2
	// DefaultSide is BRITE's default plane side (HS = 1000).
	DefaultSide = 1000.0
)

// WaxmanConfig configures the Waxman router-level model as BRITE implements
// it. Fields left zero take the documented default; N is required.
type WaxmanConfig struct {
	// N is the number of nodes, N > M.
	N int
	// M is the number of links each node adds (BRITE's m); 0 means DefaultM.
	M int
	// Alpha in (0, 1] scales the link probability α·exp(−d/(β·L)); 0 means
	// DefaultAlpha. Under both of BRITE's growth types each node adds exactly
	// M links, so α changes only how many coin flips BRITE rejects, not the
	// distribution of the result (see the package comment).
	Alpha float64
	// Beta > 0 sets how fast link probability decays with distance, relative
	// to L = √2·Side; 0 means DefaultBeta. Larger β means longer links.
	Beta float64
	// Side is the side of the square plane nodes are placed in (BRITE's HS);
	// 0 means DefaultSide. L, the largest possible distance, is √2·Side.
	Side float64
	// Growth is incremental (default) or all-at-once.
	Growth Growth
	// Delay assigns link delays; the zero value is uniform in [0, 25] ms.
	Delay DelayModel
}

// DefaultWaxmanConfig returns BRITE's router-level Waxman defaults for 1,000
// nodes: M = 2, α = 0.15, β = 0.2, plane side 1000, incremental growth,
// link delays uniform in [0, 25] ms.
func DefaultWaxmanConfig() WaxmanConfig {
	return WaxmanConfig{
		N:      1000,
		M:      DefaultM,
		Alpha:  DefaultAlpha,
		Beta:   DefaultBeta,
		Side:   DefaultSide,
		Growth: GrowthIncremental,
		Delay:  UniformDelay(DefaultMinDelay, DefaultMaxDelay),
	}
}

// CoreSelectionPaper returns the topology of the core-selection experiment
// (§6.2 of the region-migration paper): a flat Waxman topology of 1,000
// nodes made with BRITE in "a square world with sides equal to 200 ms",
// i.e. plane side 200 and link delay equal to the Euclidean length of the
// link. The paper gives no other parameter, so M, α, β and the growth type
// are BRITE's defaults.
func CoreSelectionPaper() WaxmanConfig {
	c := DefaultWaxmanConfig()
	c.Side = 200
	c.Delay = DistanceDelay(1)
	return c
}

// Validate reports whether the configuration, with defaults filled in, is
// usable. The generators call it; callers may call it early to reject
// input.
func (c WaxmanConfig) Validate() error { _, err := c.filled(); return err }

func (c WaxmanConfig) filled() (WaxmanConfig, error) {
	if c.M == 0 {
		c.M = DefaultM
	}
	if c.Alpha == 0 {
		c.Alpha = DefaultAlpha
	}
	if c.Beta == 0 {
		c.Beta = DefaultBeta
	}
	if c.Side == 0 {
		c.Side = DefaultSide
	}
	fail := func(format string, a ...any) (WaxmanConfig, error) {
		return c, fmt.Errorf("%w: waxman: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch {
	case c.N < 1 || c.N > MaxNodes:
		return fail("N = %d, want 1..%d", c.N, MaxNodes)
	case c.M < 1:
		return fail("M = %d, want >= 1", c.M)
	case c.N <= c.M:
		return fail("N = %d must exceed M = %d (the growth starts from M nodes)", c.N, c.M)
	case !(c.Alpha > 0 && c.Alpha <= 1):
		return fail("Alpha = %g, want in (0, 1]", c.Alpha)
	case !(c.Beta > 0) || math.IsInf(c.Beta, 0):
		return fail("Beta = %g, want finite and > 0", c.Beta)
	case !(c.Side > 0) || math.IsInf(c.Side, 0):
		return fail("Side = %g, want finite and > 0", c.Side)
	case c.Growth != GrowthIncremental && c.Growth != GrowthAllAtOnce:
		return fail("unknown Growth %d", int(c.Growth))
	}
	d, err := c.Delay.filled()
	if err != nil {
		return fail("%v", err)
	}
	c.Delay = d
	return c, nil
}

// BAConfig configures the Barabási–Albert model as BRITE implements it
// ("BA-1"): incremental growth with preferential attachment. Fields left
// zero take the documented default; N is required.
type BAConfig struct {
	// N is the number of nodes, N > M.
	N int
	// M is the number of links each new node adds; 0 means DefaultM.
	M int
	// Side is the side of the square plane nodes are placed in; it matters
	// only for DelayDistance. 0 means DefaultSide.
	Side float64
	// Delay assigns link delays; the zero value is uniform in [0, 25] ms.
	Delay DelayModel
}

// DefaultBAConfig returns BRITE's Barabási–Albert defaults for 1,000 nodes:
// M = 2, plane side 1000, link delays uniform in [0, 25] ms.
func DefaultBAConfig() BAConfig {
	return BAConfig{
		N:     1000,
		M:     DefaultM,
		Side:  DefaultSide,
		Delay: UniformDelay(DefaultMinDelay, DefaultMaxDelay),
	}
}

// Validate reports whether the configuration, with defaults filled in, is
// usable.
func (c BAConfig) Validate() error { _, err := c.filled(); return err }

func (c BAConfig) filled() (BAConfig, error) {
	if c.M == 0 {
		c.M = DefaultM
	}
	if c.Side == 0 {
		c.Side = DefaultSide
	}
	fail := func(format string, a ...any) (BAConfig, error) {
		return c, fmt.Errorf("%w: barabasi-albert: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch {
	case c.N < 1 || c.N > MaxNodes:
		return fail("N = %d, want 1..%d", c.N, MaxNodes)
	case c.M < 1:
		return fail("M = %d, want >= 1", c.M)
	case c.N <= c.M:
		return fail("N = %d must exceed M = %d (the growth starts from a clique of M+1 nodes)", c.N, c.M)
	case !(c.Side > 0) || math.IsInf(c.Side, 0):
		return fail("Side = %g, want finite and > 0", c.Side)
	}
	d, err := c.Delay.filled()
	if err != nil {
		return fail("%v", err)
	}
	c.Delay = d
	return c, nil
}

// HierConfig configures a two-level, top-down hierarchical topology as
// BRITE builds it: an AS-level graph by Barabási–Albert, a router-level
// Waxman graph inside every AS, and every AS-level link realised as one link
// between a border router of each of the two ASes.
type HierConfig struct {
	// AS is the AS-level model: AS.N is the number of ASes and AS.Delay
	// assigns the delay of inter-AS links (for DelayDistance, the distance
	// between the two border routers).
	AS BAConfig
	// Router is the model inside every AS: Router.N is the number of routers
	// per AS and Router.Delay assigns the delay of intra-AS links.
	Router WaxmanConfig
	// Border chooses the routers that carry inter-AS links.
	Border Border
}

// DefaultHierConfig returns a 50-AS × 100-router topology (5,000 nodes):
// AS level by Barabási–Albert with M = 2, router level by BRITE's default
// Waxman, border routers chosen at random, every link uniform in [0, 25] ms.
// It is the CMA paper's topology; use CMAPaper to say so.
func DefaultHierConfig() HierConfig {
	as := DefaultBAConfig()
	as.N = 50
	rt := DefaultWaxmanConfig()
	rt.N = 100
	return HierConfig{AS: as, Router: rt, Border: BorderRandom}
}

// CMAPaper returns the topology of the client-to-mirror assignment paper's
// evaluation (§4): "a topology of 5000 nodes ... (50 AS domains derived by
// the Barabasi-Albert model and 100 nodes per AS derived by the Waxman
// model); every link is uniformly distributed in the delay range [0ms,
// 25ms]". The paper gives no other parameter, so the rest is BRITE's
// shipped top-down configuration (TD_ASBarabasi_RTWaxman.conf, there with
// 1,000 ASes): M = 2 at both levels, α = 0.15, β = 0.2, plane side 1000,
// incremental growth, random border routers. It is spelled out here, not
// derived from DefaultHierConfig, so that changing a default never changes
// the paper's topology.
func CMAPaper() HierConfig {
	return HierConfig{
		AS: BAConfig{N: 50, M: 2, Side: 1000, Delay: UniformDelay(0, 25)},
		Router: WaxmanConfig{N: 100, M: 2, Alpha: 0.15, Beta: 0.2, Side: 1000,
			Growth: GrowthIncremental, Delay: UniformDelay(0, 25)},
		Border: BorderRandom,
	}
}

// Validate reports whether the configuration, with defaults filled in, is
// usable.
func (c HierConfig) Validate() error { _, err := c.filled(); return err }

func (c HierConfig) filled() (HierConfig, error) {
	var err error
	if c.AS, err = c.AS.filled(); err != nil {
		return c, fmt.Errorf("hierarchical AS level: %w", err)
	}
	if c.Router, err = c.Router.filled(); err != nil {
		return c, fmt.Errorf("hierarchical router level: %w", err)
	}
	if c.Border != BorderRandom && c.Border != BorderSmallestDegree {
		return c, fmt.Errorf("%w: hierarchical: unknown Border %d", ErrConfig, int(c.Border))
	}
	if c.AS.N > MaxNodes/c.Router.N {
		return c, fmt.Errorf("%w: hierarchical: %d ASes × %d routers exceeds %d nodes", ErrConfig, c.AS.N, c.Router.N, MaxNodes)
	}
	return c, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func checkRand(r *rand.Rand) error {
	if r == nil {
		return fmt.Errorf("%w: nil *rand.Rand; pass a seeded source, e.g. rand.New(rand.NewPCG(seed, 0))", ErrConfig)
	}
	return nil
}
