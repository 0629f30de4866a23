package harness

import (
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
)

// SiteData names the latency data set a world runs over.
type SiteData string

// Latency data sets.
const (
	// SitesPlanetLab places nodes on distinct hosts of one PlanetLab time
	// slice (Config.Slice), drawn at random from the seed.
	SitesPlanetLab SiteData = "planetlab"
	// SitesWonder places node i in Config.Cities[i] (WonderNetwork).
	SitesWonder SiteData = "wonder"
)

// Config is one run of a world game on simulated node cores: the
// cluster, the network it runs over, how long, and how the ground-truth
// observer samples. The game itself is a Game, given to New beside it.
// Start from DefaultConfig; Validate fills the zero fields.
type Config struct {
	// Arch is the discovery architecture. Default directory.
	Arch discovery.Arch
	// Nodes is the number of player nodes (servers or player machines);
	// directory and client-server add one infrastructure node.
	Nodes int
	// Seed seeds the site draw, every node's random source and the
	// network (the game seeds itself). Any value.
	Seed uint64
	// Duration is the game time to simulate. Default 60 s.
	Duration time.Duration
	// Data, Slice and Cities choose the sites. Default PlanetLab slice 1.
	// With SitesWonder, Cities must name at least Nodes WonderNetwork
	// cities (node i is in Cities[i]).
	Data   SiteData
	Slice  int
	Cities []string
	// Jitter (mean of an exponential extra delay), Loss, Duplicate and
	// Reorder configure the emulated WAN (sim.Config, geo.Network; Net
	// and SetNet read and set them together). Default none.
	Jitter                   time.Duration
	Loss, Duplicate, Reorder float64
	// StalenessEvery: every node samples the staleness of the replicas in
	// its interest every this many of its frames (default 10: once a
	// second), at most StalenessCap replicas per sample (default 16),
	// which keeps the number of samples bounded at 10,000 players.
	StalenessEvery int
	StalenessCap   int
	// WallFrameTimes records each node's Tick wall-clock time as the
	// summary's frame times. Off by default: wall-clock samples differ
	// between runs, and the summary is otherwise byte-identical for a seed.
	WallFrameTimes bool
	// Workers is how many goroutines run the simulation (sim.Config
	// Workers); 0 means one per CPU (GOMAXPROCS, at most 64). The result
	// is the same, byte for byte, for any value.
	Workers int

	// The colyseus architecture's knobs (ignored by the others; see
	// discovery.Config).
	// KeyMap is the key mapping: discovery.KeyMapHilbert, KeyMapLinear,
	// KeyMapRegions (dht, one region per player), or KeyMapAuto (the
	// default; New resolves it from the game's bounds).
	KeyMap string
	// PredTime is the interest prediction horizon and subscription TTL;
	// negative means none (0). Default discovery.DefaultPredTime.
	PredTime time.Duration
	// Balance turns the ring's leave-join load balancing on.
	Balance bool
	// PaperRouting routes on the ring as the paper's Mercury does: no
	// route cache and four long links, instead of a cache of 2·log2(n)
	// routes and eight long links.
	PaperRouting bool
	// Prefetch (m) widens, in x and y, the view each node fetches and
	// keeps replicas for (node.Config.Prefetch), so that objects are
	// replicated before they enter an interest. Any architecture; 0 means
	// none, as in Colyseus.
	Prefetch float64
	// PushMutual: each node pushes its primaries to the nodes whose
	// replicas it holds need them, before discovery finds them there
	// (node.Config.PushMutual).
	PushMutual bool
	// FetchAhead: a discovered moving object is fetched once the location
	// it is predicted at this far ahead lies in the view
	// (node.Config.FetchAhead; 0 to 1 s).
	FetchAhead time.Duration
	// FarMargin (m), when positive, slows the updates a primary sends a
	// holder while the object is this far beyond the interests of the
	// holder's primaries (node.Config.FarMargin): such holders, most of
	// them prefetching, get an update every 400 ms instead of every
	// frame. 0 means every frame.
	FarMargin float64
	// NoProactive turns proactive replication off (attached objects, such
	// as missiles, are discovered like the rest).
	NoProactive bool
	// Failover turns warm backups and failover on for every node
	// (node.ReplicaConfig.Failover): each primary keeps a backup on
	// another node, the player nodes are every node's peers (witnesses
	// and backup candidates), and the delay estimate between two nodes is
	// the emulated one-way delay between their sites (World.Delay). Off
	// by default.
	Failover bool

	// Warmup is the game time before the view measures (missing replicas,
	// discovery latency) start counting (sim.Config.Warmup): the first
	// second, in which every node's view fills from nothing, is a start-up
	// transient, not steady-state consistency. Default min(5 s,
	// Duration/10); negative means none.
	Warmup time.Duration
}

// Net returns the run's network conditions.
func (c Config) Net() geo.Network {
	return geo.Network{Jitter: c.Jitter, Loss: c.Loss, Duplicate: c.Duplicate, Reorder: c.Reorder}
}

// SetNet sets the run's network conditions (a profile, geo.WAN, or any).
func (c *Config) SetNet(n geo.Network) {
	c.Jitter, c.Loss, c.Duplicate, c.Reorder = n.Jitter, n.Loss, n.Duplicate, n.Reorder
}

// DefaultConfig returns 16 nodes under the directory architecture for 60
// s of game time, on PlanetLab slice 1, seed 1.
func DefaultConfig() Config {
	return Config{Arch: discovery.Directory, Nodes: 16, Seed: 1, Duration: 60 * time.Second, Data: SitesPlanetLab, Slice: 1,
		StalenessEvery: 10, StalenessCap: 16}
}

// maxNodes bounds Nodes: one node per site of the largest data set
// (PlanetLab's 490 hosts) would be too few for the 10,000-player runs, so
// PlanetLab sites are shared when Nodes exceeds them (see buildSites).
const maxNodes = 20_000

// Validate returns a copy of c with the zero fields set to their defaults,
// or an error wrapping lab.ErrConfig that names the first bad field.
func (c Config) Validate() (Config, error) {
	d := DefaultConfig()
	c.Cities = slices.Clone(c.Cities)
	if c.Arch == "" {
		c.Arch = d.Arch
	}
	if c.Duration == 0 {
		c.Duration = d.Duration
	}
	if c.Data == "" {
		c.Data = d.Data
	}
	if c.Data == SitesPlanetLab && c.Slice == 0 {
		c.Slice = d.Slice
	}
	if c.StalenessEvery == 0 {
		c.StalenessEvery = d.StalenessEvery
	}
	if c.StalenessCap == 0 {
		c.StalenessCap = d.StalenessCap
	}
	if c.KeyMap == "" {
		c.KeyMap = discovery.KeyMapAuto
	}
	if c.Warmup == 0 {
		c.Warmup = min(5*time.Second, c.Duration/10)
	}
	if c.PredTime == 0 {
		c.PredTime = discovery.DefaultPredTime
	}
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", lab.ErrConfig, fmt.Sprintf(format, args...))
	}
	if _, err := discovery.ParseArch(string(c.Arch)); err != nil {
		return bad("architecture %q: want directory, broadcast, client-server or colyseus", c.Arch)
	}
	switch {
	case c.Nodes < 1 || c.Nodes > maxNodes:
		return bad("nodes %d: want 1 to %d", c.Nodes, maxNodes)
	case c.Duration < time.Second || c.Duration > 24*time.Hour:
		return bad("duration %v: want 1s to 24h", c.Duration)
	case c.Net().Validate() != nil:
		return bad("network: %v", c.Net().Validate())
	case c.StalenessEvery < 1 || c.StalenessCap < 1:
		return bad("staleness sampling every %d frames, at most %d: want both ≥ 1", c.StalenessEvery, c.StalenessCap)
	case c.Workers < 0 || c.Workers > 256:
		return bad("workers %d: want 0 (one per CPU) to 256", c.Workers)
	case c.KeyMap != discovery.KeyMapAuto && c.KeyMap != discovery.KeyMapHilbert && c.KeyMap != discovery.KeyMapLinear &&
		c.KeyMap != discovery.KeyMapRegions:
		return bad("key map %q: want %s, %s, %s or %s", c.KeyMap, discovery.KeyMapHilbert, discovery.KeyMapLinear,
			discovery.KeyMapRegions, discovery.KeyMapAuto)
	case !(c.Prefetch >= 0) || c.Prefetch > 1e6:
		return bad("prefetch %v m: want 0 to 1e6", c.Prefetch)
	case c.FetchAhead < 0 || c.FetchAhead > time.Second:
		return bad("fetch ahead %v: want 0 to 1s", c.FetchAhead)
	case !(c.FarMargin >= 0) || c.FarMargin > 1e6:
		return bad("far margin %v m: want 0 to 1e6", c.FarMargin)
	case c.Warmup >= c.Duration:
		return bad("warmup %v: want less than the duration %v", c.Warmup, c.Duration)
	case c.PredTime > time.Minute:
		return bad("prediction time %v: want at most 1m", c.PredTime)
	}
	switch c.Data {
	case SitesPlanetLab:
		if c.Slice < 1 || c.Slice > 18 {
			return bad("PlanetLab slice %d: want 1 to 18", c.Slice)
		}
		if len(c.Cities) > 0 {
			return bad("cities are for WonderNetwork sites, not PlanetLab")
		}
	case SitesWonder:
		if len(c.Cities) < c.Nodes {
			return bad("%d WonderNetwork cities for %d nodes: want one city per node", len(c.Cities), c.Nodes)
		}
		seen := map[string]bool{}
		for _, city := range c.Cities {
			if seen[city] {
				return bad("city %q listed twice", city)
			}
			seen[city] = true
		}
	default:
		return bad("sites %q: want planetlab or wonder", c.Data)
	}
	return c, nil
}
