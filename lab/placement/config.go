package placement

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
)

// Config configures Run.
type Config struct {
	// Servers are the WonderNetwork cities of the nodes (default: the
	// first 16 of cities.Servers).
	Servers []string
	// Players is the mean number of players online (default 2,000).
	Players int
	// Headroom is the total capacity over Players; every node gets an
	// equal share, rounded up (default 1.25).
	Headroom float64
	// Sweep lists further headrooms run the same way for the sweep
	// table (default 1.05, 1.1, 1.5, 2).
	Sweep []float64
	// Session is the mean time a player stays (exponential; default 30
	// min); players arrive as a Poisson process at Players/Session.
	Session time.Duration
	// Duration is the simulated time (default 3 h).
	Duration time.Duration
	// Snapshots is the number of evenly spaced snapshots (default 12).
	Snapshots int
	// JoinProbes is the number of nodes a client pings before it joins:
	// the first ones of Servers, spread over the continents (default 4).
	JoinProbes int
	// Probes is how many nodes the plane's Admit asks a new client to
	// ping (default 3): the node it joins if unmeasured, then the most
	// promising by estimate and price.
	Probes int
	// SlackSweep lists further values of ProbeSlack run at Headroom for
	// the sweep table (default -1, 0.3, 0.7; -1: no probes beyond an
	// Admit's).
	SlackSweep []float64
	// ProbeSlack is the plane's (default 0.5; negative: the plane asks
	// for no pings beyond an Admit's).
	ProbeSlack float64
	// Tick is the interval of the plane's ticks (default 10 s).
	Tick time.Duration
	// ProbeDelay is when after its join the client reports them (default
	// 2 s).
	ProbeDelay time.Duration
	// Jitter is the mean queueing delay of a ping, as a fraction of the
	// RTT (exponential, the least of 3 pings kept; default 0.05).
	Jitter float64

	// RegionPlayers is the mean population of the relocated region
	// (default 500).
	RegionPlayers int
	// Hours is the number of steps of the day (default 24).
	Hours int
	// Hour is the simulated length of one step (default 5 min): the day
	// is compressed Hours×Hour.
	Hour time.Duration
	// EuropeFrom and EuropeTo are the share of the region's arrivals from
	// Europe in the first and the last hour, the rest from North America
	// (defaults 0.9 and 0.1), linear in between.
	EuropeFrom, EuropeTo float64
	// RegionHome is the city of the region's first core (default
	// Frankfurt).
	RegionHome string
	// MigrationCost is the control plane's (default 1,000 ms summed over
	// the region's players).
	MigrationCost float64
	// RegionSlack is the control plane's (default 0.1; negative: the
	// region's players are asked for no pings beyond an Admit's).
	RegionSlack float64

	// Seed seeds everything.
	Seed uint64
}

// DefaultConfig returns the configuration of "overworld lab placement".
func DefaultConfig() Config {
	return Config{
		Servers: cities.Servers()[:16], Players: 2000, Headroom: 1.25, Sweep: []float64{1.05, 1.1, 1.5, 2}, SlackSweep: []float64{-1, 0.3, 0.7},
		Session: 30 * time.Minute, Duration: 3 * time.Hour, Snapshots: 12, JoinProbes: 4, Probes: 3,
		ProbeDelay: 2 * time.Second, Jitter: 0.05, ProbeSlack: 0.5, Tick: 10 * time.Second,
		RegionPlayers: 500, Hours: 24, Hour: 5 * time.Minute, EuropeFrom: 0.9, EuropeTo: 0.1,
		RegionHome: "Frankfurt", MigrationCost: 1000, RegionSlack: 0.1, Seed: 1,
	}
}

// SmallConfig is a quick look: 400 players for 1 h, no sweep, a region of
// 200 over 12 hours.
func SmallConfig() Config {
	c := DefaultConfig()
	c.Players, c.Duration, c.Snapshots, c.Sweep, c.SlackSweep = 400, time.Hour, 6, nil, nil
	c.RegionPlayers, c.Hours = 200, 12
	return c
}

// Validate checks the configuration and returns a copy with the defaults
// filled in; errors wrap lab.ErrConfig. Server names are checked by Run.
func (c Config) Validate() (Config, error) {
	d := DefaultConfig()
	c.Servers = slices.Clone(c.Servers)
	c.Sweep = slices.Clone(c.Sweep)
	c.SlackSweep = slices.Clone(c.SlackSweep)
	if len(c.Servers) == 0 {
		c.Servers = d.Servers
	}
	fill := func(x *int, v int) {
		if *x == 0 {
			*x = v
		}
	}
	fillD := func(x *time.Duration, v time.Duration) {
		if *x == 0 {
			*x = v
		}
	}
	fillF := func(x *float64, v float64) {
		if *x == 0 {
			*x = v
		}
	}
	fill(&c.Players, d.Players)
	fillF(&c.Headroom, d.Headroom)
	fillD(&c.Session, d.Session)
	fillD(&c.Duration, d.Duration)
	fill(&c.Snapshots, d.Snapshots)
	fill(&c.JoinProbes, d.JoinProbes)
	fill(&c.Probes, d.Probes)
	fillD(&c.ProbeDelay, d.ProbeDelay)
	fillD(&c.Tick, d.Tick)
	fillF(&c.ProbeSlack, d.ProbeSlack)
	fillF(&c.RegionSlack, d.RegionSlack)
	fill(&c.RegionPlayers, d.RegionPlayers)
	fill(&c.Hours, d.Hours)
	fillD(&c.Hour, d.Hour)
	if c.RegionHome == "" {
		c.RegionHome = d.RegionHome
	}
	fillF(&c.MigrationCost, d.MigrationCost)
	switch {
	case len(c.Servers) < 2:
		return c, fmt.Errorf("%w: %d servers, want at least 2", lab.ErrConfig, len(c.Servers))
	case c.Players < 1 || c.Players > 200_000:
		return c, fmt.Errorf("%w: players %d: want 1..200000", lab.ErrConfig, c.Players)
	case !(c.Headroom >= 1) || c.Headroom > 100:
		return c, fmt.Errorf("%w: headroom %v: want 1..100", lab.ErrConfig, c.Headroom)
	case c.Tick <= 0 || c.Tick > c.Duration:
		return c, fmt.Errorf("%w: tick %v: want positive, at most the duration", lab.ErrConfig, c.Tick)
	case c.ProbeSlack >= 1:
		return c, fmt.Errorf("%w: probe slack %v: want below 1", lab.ErrConfig, c.ProbeSlack)
	case !(c.RegionSlack < 1) || math.IsInf(c.RegionSlack, -1):
		return c, fmt.Errorf("%w: region slack %v: want below 1", lab.ErrConfig, c.RegionSlack)
	case c.Session <= 0 || c.Duration <= 0 || c.Hour <= 0 || c.ProbeDelay < 0:
		return c, fmt.Errorf("%w: session %v, duration %v, hour %v, probe delay %v: want positive", lab.ErrConfig, c.Session, c.Duration, c.Hour, c.ProbeDelay)
	case c.Snapshots < 1 || c.Snapshots > 1000:
		return c, fmt.Errorf("%w: snapshots %d: want 1..1000", lab.ErrConfig, c.Snapshots)
	case c.JoinProbes < 1 || c.JoinProbes > len(c.Servers):
		return c, fmt.Errorf("%w: join probes %d: want 1..%d (the servers)", lab.ErrConfig, c.JoinProbes, len(c.Servers))
	case c.Probes < 0:
		return c, fmt.Errorf("%w: probes %d: want ≥ 0", lab.ErrConfig, c.Probes)
	case !(c.Jitter >= 0) || c.Jitter > 10:
		return c, fmt.Errorf("%w: jitter %v: want 0..10", lab.ErrConfig, c.Jitter)
	case c.RegionPlayers < 1 || c.RegionPlayers > 100_000:
		return c, fmt.Errorf("%w: region players %d: want 1..100000", lab.ErrConfig, c.RegionPlayers)
	case c.Hours < 2 || c.Hours > 1000:
		return c, fmt.Errorf("%w: hours %d: want 2..1000", lab.ErrConfig, c.Hours)
	case !(c.EuropeFrom >= 0 && c.EuropeFrom <= 1 && c.EuropeTo >= 0 && c.EuropeTo <= 1):
		return c, fmt.Errorf("%w: Europe shares %v → %v: want fractions", lab.ErrConfig, c.EuropeFrom, c.EuropeTo)
	case !(c.MigrationCost >= 0):
		return c, fmt.Errorf("%w: migration cost %v: want ≥ 0", lab.ErrConfig, c.MigrationCost)
	}
	for _, k := range c.SlackSweep {
		if !(k < 1) {
			return c, fmt.Errorf("%w: slack sweep %v: want below 1", lab.ErrConfig, k)
		}
	}
	for _, h := range c.Sweep {
		if !(h >= 1) || h > 100 {
			return c, fmt.Errorf("%w: sweep headroom %v: want 1..100", lab.ErrConfig, h)
		}
	}
	return c, nil
}
