package discovery

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Key mappings of the Colyseus architecture (Config.KeyMap): how a
// publication's point and a subscription's box become keys on the ring.
const (
	// KeyMapHilbert (rangedht-hilbert) orders the map's cells along a
	// Hilbert curve: a subscription is a few contiguous key ranges.
	KeyMapHilbert = locate.KeyMapHilbert
	// KeyMapLinear (rangedht-x) keys by x alone: a subscription's x range
	// is one contiguous key range over a few owners' strips.
	KeyMapLinear = locate.KeyMapLinear
	// KeyMapRegions (dht) hashes one region per player to the ring, as
	// Colyseus' DHT baseline does.
	KeyMapRegions = locate.KeyMapRegions
	// KeyMapAuto picks by the map's shape (AutoKeyMap); "" means it too.
	KeyMapAuto = "auto"
)

// AutoKeyMap returns the key mapping for a map spanning bounds (x and y):
// rangedht-x (KeyMapLinear) on maps at least twice as long as they are
// wide, where a subscription's x range is one contiguous key range over a
// few owners' strips; the Hilbert curve otherwise. At 96 peer-to-peer
// nodes on a 6:1 rect map of the model game, x costs 9% less than the
// Hilbert curve (14.6 against 16.1 kB/s per node, 60 s); at 64 nodes on a
// sqr map the Hilbert curve costs 15% less than x (13.9 against 16.3;
// BENCHMARKS.md).
func AutoKeyMap(bounds world.Box) string {
	if w, h := bounds.Max[0]-bounds.Min[0], bounds.Max[1]-bounds.Min[1]; w >= 2*h {
		return KeyMapLinear
	}
	return KeyMapHilbert
}

// The presets every driver runs with.
const (
	// PublishPeriod is how often a primary publishes its location under
	// the directory and colyseus architectures (the same for both, for a
	// fair comparison). Space.Margin and Space.Jump derive from it.
	PublishPeriod = 500 * time.Millisecond
	// IdleEvery is how often a primary that has not moved since its last
	// publication (an item, a lingering player) is published again, under
	// the directory and colyseus architectures; such publications live
	// three times as long.
	IdleEvery = 5 * time.Second
	// DefaultPredTime is the colyseus interest prediction horizon and
	// subscription TTL (Config.PredTime 0): the paper's sweet spot is
	// about 1 s, but with idle objects publishing rarely and holders
	// skipped, 1.5 s costs 5% less bandwidth at 96 peer-to-peer nodes of
	// the model game with the same missing replicas (2 s: 6% less, 0.5
	// points more missing; BENCHMARKS.md).
	DefaultPredTime = 1500 * time.Millisecond
	// ColyseusPrefetch (m) is the prefetch the commands run colyseus
	// with when none is given (node.Config.Prefetch, Config.Prefetch):
	// replicas are fetched for the view widened by this much, so that
	// most objects are held before they enter an interest. It is the
	// setting the headline consistency figures are measured at
	// (BENCHMARKS.md); the paper's own evaluation (lab colyseus) runs
	// without prefetch.
	ColyseusPrefetch = 15.0
	// ColyseusFetchAhead is the fetch-ahead the commands run colyseus
	// with when none is given (node.Config.FetchAhead): a discovered
	// moving object is fetched once it is predicted in the view this far
	// ahead. 600 ms is about a missile's way across the prefetch margin.
	ColyseusFetchAhead = 600 * time.Millisecond
	// RingLinks is the number of Mercury long links of every colyseus
	// node: eight instead of the ring's default four keep the 99th
	// percentile of route hops at 3 at 64 nodes (4 with four or six
	// links; BENCHMARKS.md), for 0.2 kB/s more maintenance per node.
	RingLinks = 8
	// PaperRingLinks is the number of long links under
	// Config.PaperRouting: the ring's default, Mercury's.
	PaperRingLinks = 4
)

// The colyseus ring's periods (see newMercury).
const (
	ringStabilize = 1500 * time.Millisecond
	ringProbe     = 1500 * time.Millisecond
	ringFailAfter = 3 * time.Second
	ringLinkProbe = 9 * time.Second
	// ringLinkRefresh: one long link redrawn this often.
	ringLinkRefresh = 10 * time.Second
	// ringDefer: probes and stabilisation wait up to this long for a
	// packet to ride in (ring.Config.Defer).
	ringDefer = 250 * time.Millisecond
	// ringCacheTTL: how long a route-cache entry lives.
	ringCacheTTL = 10 * time.Second
	// matchAgain: a rendezvous sends a subscriber's first match of a still
	// object again this long after, at its next frame
	// (locate.MercuryConfig.MatchAgain).
	matchAgain = 150 * time.Millisecond
)

// streamRing is the random stream of each node's ring (long links, timer
// phases, load samples), from Config.Seed.
const streamRing = 0x72696e67 // "ring"

// Space is what the presets need to know of a game's world. A game fills
// it once; every node of a cluster uses the same.
type Space struct {
	// Dims is the number of dimensions of the game's space
	// (world.Registry.Space().Dims()).
	Dims int
	// Bounds is where the game's objects are, in x (dimension 0) and y
	// (dimension 1): the colyseus key mappings spread it over the ring,
	// and AutoKeyMap reads its shape.
	Bounds world.Box
	// Interest is the half-width (m) of a player's interest box: the
	// Hilbert key mapping's cells are half of it (a quarter of the box's
	// width; BENCHMARKS.md).
	Interest float64
	// Speed is how fast a player runs (m/s): the directory's subscription
	// margin and the jump distance derive from it (Margin, Jump).
	Speed float64
	// Players is the number of players: the dht key mapping gives each a
	// region.
	Players int
}

// Margin is the directory's subscription margin (in x and y): Colyseus'
// predicted subscription, PubTime × speed + PredTime × speed, with both
// times the publication period (10 m for the model game's bots).
func (s Space) Margin() world.Point {
	m := 2 * s.Speed * PublishPeriod.Seconds()
	return world.Point{m, m, 0}
}

// Jump is the distance (m) past which a primary is published at once
// instead of at the next period, under the directory and colyseus
// architectures: three times what a running player covers in a
// publication period, so that only respawns (teleports) trigger it, not
// missiles.
func (s Space) Jump() float64 { return 3 * s.Speed * PublishPeriod.Seconds() }

// Config is one node's discovery.
type Config struct {
	// Arch is the architecture (required).
	Arch Arch
	// Self is this node's ID (not 0).
	Self wire.NodeID
	// Members are the cluster's nodes with players: the peers a
	// Broadcast node sends to, the ring a Colyseus node bootstraps (Self
	// must be one of them), and where Directory picks its standby
	// rendezvous by default (DefaultStandby). ClientServer ignores them.
	Members []wire.NodeID
	// Infra is the infrastructure node: the directory's rendezvous or the
	// central server (required by those two; may be Self).
	Infra wire.NodeID
	// Standby lists, in order, the directory's standby rendezvous: the
	// nodes that take over when Infra, then the ones before them, are
	// declared dead by the nodes' failure detectors (internal/locate's
	// Directory). nil picks DefaultStandby(Infra, Members); an empty,
	// non-nil list means none (the rendezvous is then a single point of
	// failure). A caller that knows the network (lab/harness) passes the
	// nodes nearest the others. Every node gets the same list. The other
	// architectures ignore it.
	Standby []wire.NodeID
	// Space is the game's world (Directory: Speed; Colyseus: all of it).
	Space Space
	// Seed seeds the node's random choices (the ring's long links, timer
	// phases and load samples), with Self: any value.
	Seed uint64
	// Start is the virtual time at which a Colyseus node joins its ring
	// (the time of the node's first frame).
	Start time.Duration
	// Joins makes a Colyseus node one that joins a running ring later
	// (JoinRing) instead of bootstrapping one: Members are not read, and
	// the node is in no ring until it joins. The others ignore it.
	Joins bool

	// The Colyseus architecture's knobs (ignored by the others).
	// KeyMap is KeyMapHilbert, KeyMapLinear, KeyMapRegions, or KeyMapAuto
	// ("" too): AutoKeyMap(Space.Bounds).
	KeyMap string
	// PredTime is the interest prediction horizon and subscription TTL:
	// 0 means DefaultPredTime, negative means none.
	PredTime time.Duration
	// Balance turns the ring's leave-join load balancing on.
	Balance bool
	// PaperRouting routes on the ring as the paper's Mercury does: no
	// route cache and PaperRingLinks long links, instead of a cache of
	// 2·log2(n) routes and RingLinks long links.
	PaperRouting bool
	// Prefetch (m) widens the subscriptions in x and y by this much, as
	// node.Config.Prefetch widens the view (pass the same value).
	Prefetch float64
}

// New returns node cfg.Self's discovery: internal/locate's Directory,
// Broadcast, ClientServer or Mercury with the presets of this package. A
// Colyseus node comes back a member of its ring, bootstrapped at
// cfg.Start with RingMembers(cfg.Members), or, with cfg.Joins, in no ring
// yet (JoinRing). Errors wrap ErrConfig.
func New(cfg Config) (node.Discovery, error) {
	bad := func(format string, args ...any) (node.Discovery, error) {
		return nil, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if cfg.Self == 0 {
		return bad("no Self (node IDs start at 1)")
	}
	if cfg.Arch.HasInfra() && cfg.Infra == 0 {
		return bad("%s needs its infrastructure node (Infra)", cfg.Arch)
	}
	if s := cfg.Space.Speed; !(s >= 0) || math.IsInf(s, 0) {
		return bad("Space.Speed %v: want finite and non-negative", s)
	}
	switch cfg.Arch {
	case Directory:
		dc := locate.DefaultDirectoryConfig(cfg.Infra)
		dc.Standby = cfg.Standby
		if dc.Standby == nil {
			dc.Standby = DefaultStandby(cfg.Infra, cfg.Members)
		}
		dc.Margin = cfg.Space.Margin()
		dc.Jump = cfg.Space.Jump()
		dc.IdleEvery = IdleEvery
		// Dead reckoning of matches, as colyseus does, and a frame's
		// matches to a subscriber in one packet: at 96 nodes × 8 players
		// of the model game, 12.7% fewer packets and 8.7% less bandwidth
		// per node, with discovery 235 → 205 ms and missing replicas 8.5
		// → 7.4% (BENCHMARKS.md).
		dc.Reckon, dc.BatchMatches = true, true
		d, err := locate.NewDirectory(cfg.Self, dc)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return d, nil
	case Broadcast:
		if len(cfg.Members) == 0 {
			return bad("broadcast needs the cluster's Members")
		}
		b, err := locate.NewBroadcast(cfg.Self, cfg.Members)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
		return b, nil
	case ClientServer:
		return locate.NewClientServer(cfg.Self, cfg.Infra), nil
	case Colyseus:
		m, err := newMercury(cfg)
		if err != nil {
			return nil, err
		}
		return m, nil
	}
	return bad("architecture %q: want directory, broadcast, client-server or colyseus", cfg.Arch)
}

// Standbys is how many standby rendezvous DefaultStandby picks: with two,
// discovery survives the rendezvous and the first standby failing
// together.
const Standbys = 2

// DefaultStandby returns the directory's standby rendezvous when the
// caller names none: the Standbys members of lowest ID other than infra
// (fewer if there are not as many). Without knowledge of the network any
// member serves as well as another; the lowest IDs are the ones an
// operator can predict, and every node computes the same list.
func DefaultStandby(infra wire.NodeID, members []wire.NodeID) []wire.NodeID {
	m := slices.Clone(members)
	slices.Sort(m)
	m = slices.Compact(m)
	m = slices.DeleteFunc(m, func(n wire.NodeID) bool { return n == infra || n == 0 })
	return m[:min(len(m), Standbys):min(len(m), Standbys)]
}

// newMercury builds node cfg.Self's distributed locator and bootstraps its
// ring.
func newMercury(cfg Config) (*locate.Mercury, error) {
	sp := cfg.Space
	if sp.Dims < 2 || sp.Dims > world.MaxDims {
		return nil, fmt.Errorf("%w: colyseus: Space.Dims %d: want 2 to %d (the key mappings read x and y)", ErrConfig, sp.Dims, world.MaxDims)
	}
	if !cfg.Joins && !slices.Contains(cfg.Members, cfg.Self) {
		return nil, fmt.Errorf("%w: colyseus: node %d is not one of the ring's Members", ErrConfig, cfg.Self)
	}
	kind := cfg.KeyMap
	if kind == "" || kind == KeyMapAuto {
		kind = AutoKeyMap(sp.Bounds)
	}
	kc := locate.KeyMapConfig{Kind: kind, Extent: sp.Bounds, Regions: sp.Players}
	if kind == KeyMapHilbert {
		// A quarter of the interest box's width (BENCHMARKS.md).
		kc.Cell = sp.Interest / 2
	}
	km, err := locate.NewKeyMap(kc)
	if err != nil {
		return nil, fmt.Errorf("%w: colyseus: %w", ErrConfig, err)
	}
	pc := locate.DefaultPredictConfig()
	pc.PredTime = cfg.PredTime
	if pc.PredTime == 0 {
		pc.PredTime = DefaultPredTime
	}
	pc.PredTime = max(pc.PredTime, 0)
	// Publications carry velocities and rendezvous match the segment each
	// covers until the next (MercuryConfig.Sweep): subscriptions are padded
	// for the discovery latency alone, not for a publish period of
	// movement (BENCHMARKS.md).
	pc.PubTTL = 0
	mc := locate.MercuryConfig{Keys: km, Dims: sp.Dims, Predict: pc, Sweep: true,
		PublishPeriod: PublishPeriod, Jump: sp.Jump(), IdleEvery: IdleEvery, Pad: world.Point{cfg.Prefetch, cfg.Prefetch}}
	mc.Ring.Balance = cfg.Balance
	// A still object's first match goes twice: later publications are
	// spared while the subscriber can predict them, so under 1% loss a
	// lost first match cost an idle object's subscriber up to 15 s
	// (items missing 0.43% at 400 ms of grace instead of 0.20% at 64
	// nodes; BENCHMARKS.md, --net wan), for 2% more bandwidth.
	mc.MatchAgain = matchAgain
	// Stabilisation and probes every 1.5 s, not the ring's 500 ms and 1
	// s, and the farther successors and long links probed every 9 s: less
	// than half the maintenance traffic at 96 nodes, for crash detection
	// by the neighbours within 6 s instead of 5 (Probe + FailAfter +
	// Probe; BENCHMARKS.md).
	mc.Ring.Stabilize, mc.Ring.Probe, mc.Ring.FailAfter = ringStabilize, ringProbe, ringFailAfter
	mc.Ring.Defer = ringDefer
	// Route-cache entries live 10 s, not 5: half the owners' confirmations
	// (1.8% of a node's bytes at 96 nodes), for up to 10 s of routes lost
	// through a crashed cached owner.
	mc.Ring.CacheTTL = ringCacheTTL
	mc.Ring.LinkProbe = ringLinkProbe
	// A long link redrawn, and a density sample taken, every 10 s instead
	// of 5 (each a lookup of about four frames): 1.9% less per node over
	// six seeds at 96 nodes, with the same missing replicas; a link to a
	// crashed node is still redrawn once LinkProbe finds it dead.
	mc.Ring.LinkRefresh = ringLinkRefresh
	mc.Ring.Links = RingLinks
	if cfg.PaperRouting {
		mc.Ring.Links, mc.Ring.CacheSize = PaperRingLinks, -1
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, streamRing^uint64(cfg.Self)))
	m, err := locate.NewMercury(cfg.Self, mc, rng)
	if err != nil {
		return nil, fmt.Errorf("%w: colyseus: %w", ErrConfig, err)
	}
	if cfg.Joins {
		return m, nil
	}
	if err := m.Ring().Bootstrap(cfg.Start, RingMembers(cfg.Members)); err != nil {
		return nil, fmt.Errorf("%w: colyseus: ring bootstrap: %w", ErrConfig, err)
	}
	return m, nil
}

// RingMembers returns the ring of a colyseus cluster at bootstrap: the
// member nodes in ID order, node k of n at key (k+1)·⌊2⁶⁴/n⌋ (the last
// at the top of the key space), so that each owns an even share.
func RingMembers(ids []wire.NodeID) []wire.RingPeer {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	out := make([]wire.RingPeer, len(ids))
	if len(ids) == 0 {
		return out
	}
	step := ^uint64(0) / uint64(len(ids))
	for i, id := range ids {
		out[i] = wire.RingPeer{ID: id, Key: step * uint64(i+1)}
	}
	out[len(out)-1].Key = ^uint64(0)
	return out
}

// Fetching is how a node gets replicas before its primaries need them:
// node.Config's Prefetch (in x and y), PushMutual and FetchAhead.
type Fetching struct {
	Prefetch   float64       // m
	PushMutual bool          // push primaries to the nodes near them
	FetchAhead time.Duration // fetch moving objects predicted in view this far ahead
}

// DefaultFetching returns the fetching the commands run arch with when no
// option says otherwise: under colyseus, ColyseusPrefetch, mutual pushes
// and ColyseusFetchAhead, the setting of the headline consistency figures
// (BENCHMARKS.md); under the other architectures none, as in the papers.
func DefaultFetching(arch Arch) Fetching {
	if arch != Colyseus {
		return Fetching{}
	}
	return Fetching{Prefetch: ColyseusPrefetch, PushMutual: true, FetchAhead: ColyseusFetchAhead}
}
