package cma

import (
	"fmt"
	"slices"
	"strings"

	"github.com/overworld/overworld/geo/topo"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/lab/report"
)

// Scenario names one experiment of the CMA paper's §4.
type Scenario string

const (
	// ScenarioJoin is §4.1 (Figs. 4 and 5): players join one by one until
	// the system is full.
	ScenarioJoin Scenario = "join"
	// ScenarioLeave is §4.2 (Fig. 6): from the full system, every player
	// leaves in the order it joined.
	ScenarioLeave Scenario = "leave"
	// ScenarioDynamic is §4.3 (Fig. 7): populate by "two join, one random
	// player leaves", then random joins and leaves.
	ScenarioDynamic Scenario = "dynamic"
	// ScenarioSpeed is §4.4 (Fig. 8): the run time of join, leave and
	// dynamic with 5, 10 and 20 mirrors.
	ScenarioSpeed Scenario = "speed"
)

// Scenarios returns every scenario, in the paper's order.
func Scenarios() []Scenario {
	return []Scenario{ScenarioJoin, ScenarioLeave, ScenarioDynamic, ScenarioSpeed}
}

// ParseScenarios parses a comma-separated list of scenario names (join,
// leave, dynamic, speed; "all" for every one). The result is in the
// paper's order, without repeats.
func ParseScenarios(s string) ([]Scenario, error) {
	want := map[Scenario]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		if f == "all" {
			return Scenarios(), nil
		}
		if !slices.Contains(Scenarios(), Scenario(f)) {
			return nil, fmt.Errorf("%w: scenario %q: want a comma-separated list of join, leave, dynamic, speed (or all)", lab.ErrConfig, f)
		}
		want[Scenario(f)] = true
	}
	var out []Scenario
	for _, sc := range Scenarios() {
		if want[sc] {
			out = append(out, sc)
		}
	}
	return out, nil
}

// Config configures Run. Zero fields take the defaults of
// DefaultConfig.
type Config struct {
	// Data is DataBRITE (default) or DataReal.
	Data Data
	// Seed is the first seed; the run uses seeds Seed, Seed+1, ...,
	// Seed+Seeds−1 (Seeds ≥ 1; default 1). Every seed is a new topology (or
	// player draw) and new random picks.
	Seed  uint64
	Seeds int
	// Scenarios to run (nil: all). The leave scenario starts from the state
	// the join scenario leaves, so it runs the joins too.
	Scenarios []Scenario
	// Topology is the BRITE-style topology for DataBRITE (default
	// topo.CMAPaper(): 50 Barabási–Albert ASes of 100 Waxman routers, links
	// uniform in [0, 25] ms).
	Topology topo.HierConfig
	// Servers are the WonderNetwork cities for DataReal, in order: an
	// m-mirror system uses the first m (default cities.Servers()). There
	// must be as many as the largest system run.
	Servers []string
	// JoinCapacities are the mirror capacities of the join and leave
	// scenarios (paper: 100, 150, 200, 250, 300); JoinPlayers players join
	// (default and paper: the total capacity, 1,000).
	JoinCapacities []int
	JoinPlayers    int
	// DynamicCapacities are the mirror capacities of the dynamic scenario
	// (paper: 50, 75, 100, 125, 150). The system is populated to
	// DynamicPopulate players (paper: 400) and then sees DynamicChurn joins
	// and as many leaves (paper: 500), so the client pool has
	// 2·DynamicPopulate + DynamicChurn clients (paper: 1,300).
	DynamicCapacities []int
	DynamicPopulate   int
	DynamicChurn      int
	// SpeedMirrors are the system sizes of the speed scenario (paper: 5, 10,
	// 20). The capacities of the join (dynamic) scenario are spread over them
	// keeping the total: each mirror's capacity is reduced proportionately.
	SpeedMirrors []int
	// SpeedRepeats is how many times each timed run is repeated (default 5);
	// the report gives the median.
	SpeedRepeats int
	// Bound is the delay requirement of the paper's Fig. 5 (default 100 ms).
	Bound float64
	// SkipVerify skips running cma.Optimal (re-solving from scratch after
	// every event) beside SA in the join, leave and dynamic scenarios.
	SkipVerify bool
}

// DefaultConfig returns the paper's §4 configuration on BRITE-style data
// with seed 1.
func DefaultConfig() Config {
	return Config{
		Data:              DataBRITE,
		Seed:              1,
		Seeds:             1,
		Scenarios:         Scenarios(),
		Topology:          topo.CMAPaper(),
		JoinCapacities:    []int{100, 150, 200, 250, 300},
		DynamicCapacities: []int{50, 75, 100, 125, 150},
		DynamicPopulate:   400,
		DynamicChurn:      500,
		SpeedMirrors:      []int{5, 10, 20},
		SpeedRepeats:      5,
		Bound:             100,
	}
}

// SmallConfig returns a configuration a tenth of the paper's size (500
// nodes, 100 joining players, a dynamic pool of 130), for tests and quick
// looks. Its numbers are not comparable with the paper's.
func SmallConfig() Config {
	c := DefaultConfig()
	c.Topology.AS.N = 5
	c.JoinCapacities = []int{10, 15, 20, 25, 30}
	c.DynamicCapacities = []int{5, 8, 10, 13, 14}
	c.DynamicPopulate = 40
	c.DynamicChurn = 50
	c.SpeedMirrors = []int{5, 10}
	c.SpeedRepeats = 1
	return c
}

// Validate checks the configuration and returns a copy with the defaults
// filled in; errors wrap lab.ErrConfig.
func (c Config) Validate() (Config, error) {
	d := DefaultConfig()
	c.Scenarios = slices.Clone(c.Scenarios)
	c.Servers = slices.Clone(c.Servers)
	c.JoinCapacities = slices.Clone(c.JoinCapacities)
	c.DynamicCapacities = slices.Clone(c.DynamicCapacities)
	c.SpeedMirrors = slices.Clone(c.SpeedMirrors)
	if c.Data == "" {
		c.Data = d.Data
	}
	if _, err := ParseData(string(c.Data)); err != nil {
		return c, err
	}
	if c.Seeds == 0 {
		c.Seeds = 1
	}
	if c.Seeds < 0 {
		return c, fmt.Errorf("%w: Seeds %d: want at least 1", lab.ErrConfig, c.Seeds)
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = Scenarios()
	}
	for _, s := range c.Scenarios {
		if !slices.Contains(Scenarios(), s) {
			return c, fmt.Errorf("%w: unknown scenario %q", lab.ErrConfig, s)
		}
	}
	if c.Topology == (topo.HierConfig{}) {
		c.Topology = d.Topology
	}
	if c.Data == DataBRITE {
		if err := c.Topology.Validate(); err != nil {
			return c, fmt.Errorf("%w: topology: %w", lab.ErrConfig, err)
		}
		if len(c.Servers) > 0 {
			return c, fmt.Errorf("%w: Servers apply to real data; BRITE mirrors are random nodes", lab.ErrConfig)
		}
	}
	if c.Data == DataReal && len(c.Servers) == 0 {
		c.Servers = cities.Servers()
	}
	if len(c.JoinCapacities) == 0 {
		c.JoinCapacities = d.JoinCapacities
	}
	if len(c.DynamicCapacities) == 0 {
		c.DynamicCapacities = d.DynamicCapacities
	}
	for _, caps := range [][]int{c.JoinCapacities, c.DynamicCapacities} {
		for _, k := range caps {
			if k < 1 {
				return c, fmt.Errorf("%w: capacity %d: every mirror needs at least 1 seat", lab.ErrConfig, k)
			}
		}
	}
	joinCap := report.Sum(c.JoinCapacities)
	if c.JoinPlayers == 0 {
		c.JoinPlayers = joinCap
	}
	if c.JoinPlayers < 1 || c.JoinPlayers > joinCap {
		return c, fmt.Errorf("%w: JoinPlayers %d: want 1..%d (the total capacity)", lab.ErrConfig, c.JoinPlayers, joinCap)
	}
	if c.DynamicPopulate == 0 {
		c.DynamicPopulate = d.DynamicPopulate
	}
	if c.DynamicChurn == 0 {
		c.DynamicChurn = d.DynamicChurn
	}
	if c.DynamicPopulate < 1 || c.DynamicChurn < 0 {
		return c, fmt.Errorf("%w: DynamicPopulate %d, DynamicChurn %d: want ≥ 1 and ≥ 0", lab.ErrConfig, c.DynamicPopulate, c.DynamicChurn)
	}
	if dc := report.Sum(c.DynamicCapacities); dc < c.DynamicPopulate+1 {
		return c, fmt.Errorf("%w: dynamic capacity %d cannot hold the %d+1 players of the last populate step", lab.ErrConfig, dc, c.DynamicPopulate)
	}
	if len(c.SpeedMirrors) == 0 {
		c.SpeedMirrors = d.SpeedMirrors
	}
	for _, m := range c.SpeedMirrors {
		if m < 1 || m > 1000 {
			return c, fmt.Errorf("%w: SpeedMirrors %d: want 1..1000", lab.ErrConfig, m)
		}
		for _, caps := range [][]int{c.JoinCapacities, c.DynamicCapacities} {
			if _, err := apportion(caps, m, report.Sum(caps)); err != nil {
				return c, fmt.Errorf("SpeedMirrors %d: %w", m, err)
			}
		}
	}
	if c.SpeedRepeats == 0 {
		c.SpeedRepeats = d.SpeedRepeats
	}
	if c.SpeedRepeats < 1 {
		return c, fmt.Errorf("%w: SpeedRepeats %d: want at least 1", lab.ErrConfig, c.SpeedRepeats)
	}
	if c.Bound == 0 {
		c.Bound = d.Bound
	}
	if !(c.Bound > 0) {
		return c, fmt.Errorf("%w: Bound %v: want a positive delay in ms", lab.ErrConfig, c.Bound)
	}
	if c.Data == DataReal && len(c.Servers) < c.mirrorPool() {
		return c, fmt.Errorf("%w: %d server cities given, the largest system needs %d", lab.ErrConfig, len(c.Servers), c.mirrorPool())
	}
	return c, nil
}

func (c *Config) has(s Scenario) bool { return slices.Contains(c.Scenarios, s) }

// mirrorPool is the number of mirror locations an instance has: enough for
// every system the configuration runs. On BRITE data the mirrors are drawn
// with the clients, so the pool does not depend on the scenarios chosen
// (running fewer scenarios must not change the others' input); real players
// are drawn independently of the servers.
func (c *Config) mirrorPool() int {
	n := max(len(c.JoinCapacities), len(c.DynamicCapacities))
	if c.Data == DataBRITE || c.has(ScenarioSpeed) {
		n = max(n, slices.Max(c.SpeedMirrors))
	}
	return n
}

// dynamicPool is the number of clients the dynamic scenario uses.
func (c *Config) dynamicPool() int { return 2*c.DynamicPopulate + c.DynamicChurn }
