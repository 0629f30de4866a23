package ring

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/wire"
)

// Config configures a Node. Start from DefaultConfig (or LANConfig) and set
// ID and Rand; Validate fills the remaining zero fields with defaults.
type Config struct {
	ID   wire.NodeID // this node
	Rand *rand.Rand  // required: long-link draws, timer phases, load samples
	// Outbox, if set, receives the node's frames (a node core sharing its
	// own outbox, so ring frames share packets with its other traffic);
	// nil gives the ring its own, emptied by Drain.
	Outbox *wire.Outbox

	// Succs is r, the length of the successor list: the ring survives
	// r-1 simultaneous neighbouring crashes. Default 4.
	Succs int
	// Links is k, the number of Mercury small-world long-distance links,
	// each drawn from the harmonic distribution over ring distance.
	// Default 4; negative disables long links (successors only).
	Links int
	// CacheSize is the route cache's capacity (key range → owner, LRU).
	// 0 sizes it 2·log2(n) from the node's estimate of the ring size n (the
	// paper's choice); negative disables the cache.
	CacheSize int
	// CacheTTL is how long a route-cache entry is used after the owner
	// confirmed it: cached owners are not probed, so an entry for a node
	// that crashed loses messages until it expires (or the owner fails a
	// probe of a node that also links to it). Default 5 s.
	CacheTTL time.Duration

	// Stabilize is the period of stabilisation (ask the successor for its
	// predecessor and successor list). Default 500 ms: a joined node is
	// linked in within about a second on WAN latencies.
	Stabilize time.Duration
	// Probe is the period of failure-detector pings to the predecessor
	// and the successor (a peer heard from within the period is pinged
	// only every third period; see LinkProbe for the others). Default 1 s: a crashed
	// peer is dropped within Probe + FailAfter + Probe of its last word.
	Probe time.Duration
	// LinkProbe is the period of pings to the successors after the first
	// and to the long links (unless they are the predecessor or the
	// successor): the successor's stabilisation replies list its own
	// successors, which it probes itself, and a dead long link costs only
	// the routes sent through it before it is found. Default 3 × Probe;
	// at least Probe.
	LinkProbe time.Duration
	// Defer: frames that are not urgent (probes and their answers,
	// stabilisation and its replies, route-cache confirmations, lookup
	// answers) may wait this long for another packet to the same node to
	// ride in (wire.Outbox.CommitLater; the caller's node releases them on
	// its frame tick). Zero (the default) sends them at once; at most a
	// quarter of Probe.
	Defer time.Duration
	// FailAfter declares a probed peer failed when nothing was heard from
	// it for this long. Default 3 s (three probe periods).
	FailAfter time.Duration
	// LinkRefresh is the period between two long-link redraws (one link
	// per period, round robin). Default 5 s.
	LinkRefresh time.Duration
	// JoinTimeout is how long a joiner waits for its first join reply
	// before asking again (doubling the wait at every retry); JoinTries is
	// how often it asks. Defaults 2 s and 5 (62 s in all).
	JoinTimeout time.Duration
	JoinTries   int
	// MaxHops drops a routed message after this many hops (a guard against
	// loops while the ring is inconsistent; greedy routing on a stable ring
	// never loops). Default 1024; a range walk is bounded by MaxWalk more
	// hops (default 4096).
	MaxHops int
	MaxWalk int
	// MaxPayload is the largest routed payload Route accepts (the route
	// frame's header needs at most 40 more bytes). Default
	// wire.DefaultMaxPayload-40.
	MaxPayload int

	// LoadWindow is the moving window over which load (publications and
	// subscriptions routed here per second) is measured. Default 30 s, as
	// in the paper.
	LoadWindow time.Duration
	// Balance enables leave-join load balancing (see the package doc for
	// the rule). Off by default.
	Balance bool
	// BalanceEvery is the period of the load-balancing check. Default 10 s.
	BalanceEvery time.Duration
	// BalanceCooldown is the least time between two moves of one node, and
	// between two splits of one node's range (so the load window sees the
	// effect of a move before the next). Default 2 × LoadWindow.
	BalanceCooldown time.Duration
	// Light and Heavy are the thresholds, as fractions of the mean load a
	// node sees among itself and its sampled peers: below Light × mean a
	// node is light, above Heavy × mean it is heavy. Defaults 0.5 and 2.
	Light, Heavy float64
	// MinLoad is the mean load (per second) below which no node moves:
	// an idle ring is not balanced. Default 1.
	MinLoad float64
}

// DefaultConfig returns the WAN preset (wide-area latencies of 10 to 300 ms):
// every timing field is set, and Validate fills the rest.
func DefaultConfig(id wire.NodeID, rng *rand.Rand) Config {
	return Config{ID: id, Rand: rng, Succs: 4, Links: 4, Stabilize: 500 * time.Millisecond,
		Probe: time.Second, FailAfter: 3 * time.Second, LinkRefresh: 5 * time.Second, CacheTTL: 5 * time.Second,
		JoinTimeout: 2 * time.Second, JoinTries: 5, LoadWindow: 30 * time.Second,
		BalanceEvery: 10 * time.Second, Light: 0.5, Heavy: 2, MinLoad: 1}
}

// LANConfig returns a preset for a cluster with sub-10 ms latencies: four
// times faster stabilisation, probing and failure detection.
func LANConfig(id wire.NodeID, rng *rand.Rand) Config {
	c := DefaultConfig(id, rng)
	c.Stabilize, c.Probe, c.FailAfter = 125*time.Millisecond, 250*time.Millisecond, 750*time.Millisecond
	c.JoinTimeout = 500 * time.Millisecond
	return c
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("ring: bad config")

// Validate returns c with defaults filled in, or an error naming the
// problem. It works on a copy.
func (c Config) Validate() (Config, error) {
	d := DefaultConfig(c.ID, c.Rand)
	if c.Rand == nil {
		return c, fmt.Errorf("%w: no Rand (pass a seeded *rand.Rand)", ErrConfig)
	}
	fill := func(v *time.Duration, def time.Duration, name string) error {
		if *v == 0 {
			*v = def
		}
		if *v < 0 {
			return fmt.Errorf("%w: %s %v is negative", ErrConfig, name, *v)
		}
		return nil
	}
	for _, f := range []struct {
		v    *time.Duration
		def  time.Duration
		name string
	}{{&c.Stabilize, d.Stabilize, "Stabilize"}, {&c.Probe, d.Probe, "Probe"},
		{&c.FailAfter, d.FailAfter, "FailAfter"}, {&c.CacheTTL, d.CacheTTL, "CacheTTL"}, {&c.LinkRefresh, d.LinkRefresh, "LinkRefresh"},
		{&c.JoinTimeout, d.JoinTimeout, "JoinTimeout"}, {&c.LoadWindow, d.LoadWindow, "LoadWindow"},
		{&c.BalanceEvery, d.BalanceEvery, "BalanceEvery"}} {
		if err := fill(f.v, f.def, f.name); err != nil {
			return c, err
		}
	}
	if err := fill(&c.BalanceCooldown, 2*c.LoadWindow, "BalanceCooldown"); err != nil {
		return c, err
	}
	if err := fill(&c.LinkProbe, 3*c.Probe, "LinkProbe"); err != nil {
		return c, err
	}
	if c.LinkProbe < c.Probe {
		return c, fmt.Errorf("%w: LinkProbe %v is shorter than Probe %v", ErrConfig, c.LinkProbe, c.Probe)
	}
	if c.Defer < 0 || c.Defer > c.Probe/4 {
		return c, fmt.Errorf("%w: Defer %v (want 0 to Probe/4 = %v)", ErrConfig, c.Defer, c.Probe/4)
	}
	if c.FailAfter <= c.Probe {
		return c, fmt.Errorf("%w: FailAfter %v must exceed Probe %v", ErrConfig, c.FailAfter, c.Probe)
	}
	if c.LoadWindow < time.Second {
		return c, fmt.Errorf("%w: LoadWindow %v is under a second", ErrConfig, c.LoadWindow)
	}
	if c.Succs == 0 {
		c.Succs = d.Succs
	}
	if c.Succs < 1 || c.Succs > 32 {
		return c, fmt.Errorf("%w: Succs %d (want 1 to 32)", ErrConfig, c.Succs)
	}
	if c.Links == 0 {
		c.Links = d.Links
	}
	if c.Links < 0 {
		c.Links = 0
	}
	if c.Links > 64 {
		return c, fmt.Errorf("%w: Links %d (want at most 64)", ErrConfig, c.Links)
	}
	if c.CacheSize > 4096 {
		return c, fmt.Errorf("%w: CacheSize %d (want at most 4096)", ErrConfig, c.CacheSize)
	}
	if c.JoinTries == 0 {
		c.JoinTries = d.JoinTries
	}
	if c.MaxHops == 0 {
		c.MaxHops = 1024
	}
	if c.MaxWalk == 0 {
		c.MaxWalk = 4096
	}
	if c.MaxPayload == 0 {
		c.MaxPayload = wire.DefaultMaxPayload - 40
	}
	if c.JoinTries < 1 || c.MaxHops < 1 || c.MaxWalk < 1 || c.MaxPayload < 1 {
		return c, fmt.Errorf("%w: JoinTries %d, MaxHops %d, MaxWalk %d, MaxPayload %d (want all positive)",
			ErrConfig, c.JoinTries, c.MaxHops, c.MaxWalk, c.MaxPayload)
	}
	if c.Light == 0 {
		c.Light = d.Light
	}
	if c.Heavy == 0 {
		c.Heavy = d.Heavy
	}
	if c.MinLoad == 0 {
		c.MinLoad = d.MinLoad
	}
	if !(c.Light > 0 && c.Light < 1 && c.Heavy > 1 && c.Heavy < 1e6 && c.MinLoad > 0 && c.MinLoad < 1e12) {
		return c, fmt.Errorf("%w: Light %v, Heavy %v, MinLoad %v (want 0 < Light < 1 < Heavy, MinLoad > 0)",
			ErrConfig, c.Light, c.Heavy, c.MinLoad)
	}
	return c, nil
}
