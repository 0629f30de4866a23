package lab

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// streamWorldRing is the random stream of each node's ring (long links,
// timer phases, load samples).
const streamWorldRing = 0x72696e67 // "ring"

// mercuryPublishPeriod is how often every primary publishes its location
// under the colyseus architecture (the directory's period, for a fair
// comparison).
const mercuryPublishPeriod = 500 * time.Millisecond

// mercuryIdleEvery is how often a colyseus (or directory) primary that
// has not moved since its last publication (an item, a lingering bot) is
// published again; its publications live three times as long.
const mercuryIdleEvery = 5 * time.Second

// The colyseus ring's stabilisation and probe periods and its failure
// timeout (see newMercury).
const (
	worldRingStabilize = 1500 * time.Millisecond
	worldRingProbe     = 1500 * time.Millisecond
	worldRingFailAfter = 3 * time.Second
	worldRingLinkProbe = 9 * time.Second
	// worldRingLinkRefresh: one long link redrawn this often.
	worldRingLinkRefresh = 10 * time.Second
	// worldRingDefer: probes and stabilisation wait up to this long for a
	// packet to ride in (ring.Config.Defer).
	worldRingDefer = 250 * time.Millisecond
)

// worldRingLinks is the number of Mercury long links of every colyseus
// node in the simulated world and in live mode.
const worldRingLinks = 8

// paperRingLinks is the number of long links under
// WorldConfig.PaperRouting: the ring's default, Mercury's.
const paperRingLinks = 4

// PublishJump is the distance (m) past which a primary is published at
// once instead of at the next period, under the directory and colyseus
// architectures: three times what a running bot covers in a publication
// period, so that only respawns (teleports) trigger it, not missiles.
const PublishJump = 3 * arena.RunSpeed * 0.5

// worldKeyMap builds the key mapping cfg names over the game's map.
func worldKeyMap(cfg WorldConfig, game *arena.Game) (locate.KeyMap, error) {
	ext := world.Box{Max: world.Point{game.Map.W, game.Map.H}}
	kc := locate.KeyMapConfig{Kind: cfg.KeyMap, Extent: ext, Regions: cfg.Players()}
	if cfg.KeyMap == locate.KeyMapHilbert {
		// A quarter of the interest box's width (BENCHMARKS.md).
		kc.Cell = game.Config().Interest / 2
	}
	km, err := locate.NewKeyMap(kc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return km, nil
}

// newMercury builds node id's distributed locator.
func newMercury(cfg WorldConfig, game *arena.Game, id wire.NodeID) (*locate.Mercury, error) {
	km, err := worldKeyMap(cfg, game)
	if err != nil {
		return nil, err
	}
	pc := locate.DefaultPredictConfig()
	pc.PredTime = max(cfg.PredTime, 0)
	// Publications carry velocities and rendezvous match the segment each
	// covers until the next (MercuryConfig.Sweep): subscriptions are padded
	// for the discovery latency alone, not for a publish period of
	// movement (BENCHMARKS.md).
	pc.PubTTL = 0
	mc := locate.MercuryConfig{Keys: km, Dims: game.Registry().Space().Dims(), Predict: pc, Sweep: true,
		PublishPeriod: mercuryPublishPeriod, Jump: PublishJump, IdleEvery: mercuryIdleEvery, Pad: world.Point{cfg.Prefetch, cfg.Prefetch}}
	mc.Ring.Balance = cfg.Balance
	// Stabilisation and probes every 1.5 s, not the ring's 500 ms and 1
	// s, and the farther successors and long links probed every 9 s: less
	// than half the maintenance traffic at 96 nodes, for crash detection
	// by the neighbours within 6 s instead of 5 (Probe + FailAfter +
	// Probe; BENCHMARKS.md).
	mc.Ring.Stabilize, mc.Ring.Probe, mc.Ring.FailAfter = worldRingStabilize, worldRingProbe, worldRingFailAfter
	mc.Ring.Defer = worldRingDefer
	// Route-cache entries live 10 s, not 5: half the owners' confirmations
	// (1.8% of a node's bytes at 96 nodes), for up to 10 s of routes lost
	// through a crashed cached owner.
	mc.Ring.CacheTTL = 10 * time.Second
	mc.Ring.LinkProbe = worldRingLinkProbe
	// A long link redrawn, and a density sample taken, every 10 s instead
	// of 5 (each a lookup of about four frames): 1.9% less per node over
	// six seeds at 96 nodes, with the same missing replicas; a link to a
	// crashed node is still redrawn once LinkProbe finds it dead.
	mc.Ring.LinkRefresh = worldRingLinkRefresh
	// Eight long links instead of the ring's default four keep the 99th
	// percentile of route hops at 3 at 64 nodes (4 with four or six links;
	// BENCHMARKS.md), for 0.2 kB/s more maintenance per node.
	mc.Ring.Links = worldRingLinks
	if cfg.PaperRouting {
		mc.Ring.Links, mc.Ring.CacheSize = paperRingLinks, -1
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, streamWorldRing^uint64(id)))
	m, err := locate.NewMercury(id, mc, rng)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	return m, nil
}

// ringKeys returns n keys spread evenly over the ring: node i owns the
// i-th n-th of the key space.
func ringKeys(n int) []uint64 {
	keys := make([]uint64, n)
	step := ^uint64(0) / uint64(n)
	for i := range keys {
		keys[i] = step * uint64(i+1)
	}
	keys[n-1] = ^uint64(0)
	return keys
}

// bootstrapRing puts every colyseus node in one ring at time 0, each at an
// even share of the key space (the coordinator of a real cluster knows the
// membership when it starts one; churn experiments join later).
func (w *World) bootstrapRing() error {
	if len(w.mercs) == 0 {
		return nil
	}
	keys := ringKeys(len(w.mercs))
	members := make([]ring.Peer, len(w.mercs))
	for i := range members {
		members[i] = ring.Peer{ID: wire.NodeID(i + 1), Key: keys[i]}
	}
	for _, m := range w.mercs {
		if err := m.Ring().Bootstrap(0, members); err != nil {
			return fmt.Errorf("lab: ring bootstrap: %w", err)
		}
	}
	return nil
}

// Mercury returns the colyseus locators, by node (nil under the other
// architectures).
func (w *World) Mercury() []*locate.Mercury { return w.mercs }

// RingResult sums the colyseus locators' counters and latency histograms.
// The histograms (discovery latency and its parts, route hops) leave the
// warm-up out when the world ran with World.Run, as the view measures do;
// the counters include it.
type RingResult struct {
	Stats locate.MercuryStats
	// Hops is the mean hop count of the publications and subscriptions
	// delivered; HopsP99 its 99th percentile.
	Hops    float64
	HopsP99 int
	// Routed, Forwarded and CacheHits sum the rings' counters
	// (ring.Stats): routes originated, route frames sent (every hop and
	// range-walk step) and route-cache hops taken.
	Routed, Forwarded, CacheHits uint64
}

// FramesPerSub estimates the route frames one subscription costs: each
// of its key ranges routed (RangesRouted ÷ SubsSent of them) takes Hops
// frames to its first owner, and every further owner a range walk reaches
// one more (SubsStored counts every owner reached).
func (r RingResult) FramesPerSub() float64 {
	s := &r.Stats
	if s.SubsSent == 0 {
		return 0
	}
	walk := float64(s.SubsStored) - float64(s.RangesRouted)
	return (float64(s.RangesRouted)*r.Hops + max(walk, 0)) / float64(s.SubsSent)
}

// RingResult returns the colyseus locators' counters summed over the
// nodes (the zero value under the other architectures).
func (w *World) RingResult() RingResult {
	var r RingResult
	s := &r.Stats
	for _, m := range w.mercs {
		o := m.Stats()
		s.PubsRouted += o.PubsRouted
		s.SubsSent += o.SubsSent
		s.RangesRouted += o.RangesRouted
		s.PubsStored += o.PubsStored
		s.SubsStored += o.SubsStored
		s.MatchesSent += o.MatchesSent
		s.Found += o.Found
		s.HandoffsSent += o.HandoffsSent
		s.HandoffsTaken += o.HandoffsTaken
		s.NotMember += o.NotMember
		s.Malformed += o.Malformed
		s.Unexpected += o.Unexpected
		s.Rejected += o.Rejected
		s.Latency.Merge(&o.Latency)
		s.Routing.Merge(&o.Routing)
		s.Matching.Merge(&o.Matching)
		for i, c := range o.Hops {
			s.Hops[i] += c
		}
		rs := m.Ring().Stats()
		r.Routed += rs.Routed
		r.Forwarded += rs.Forwarded
		r.CacheHits += rs.CacheHits
	}
	var n, sum uint64
	for i, c := range s.Hops {
		n += c
		sum += uint64(i) * c
	}
	if n > 0 {
		r.Hops = float64(sum) / float64(n)
		var acc uint64
		for i, c := range s.Hops {
			acc += c
			if acc*100 >= n*99 {
				r.HopsP99 = i
				break
			}
		}
	}
	return r
}

// Every locator is a node.Discovery; the distributed one also validates
// its own frames.
var (
	_ node.Discovery                              = (*locate.Mercury)(nil)
	_ interface{ Check(wire.Type, []byte) error } = (*locate.Mercury)(nil)
)

// NewColyseusLocator builds node id's distributed locator for a world of
// cfg (Validate it first) and game exactly as the simulated world does,
// for a live node of the same game under the colyseus architecture; the
// caller bootstraps its ring with the same members and keys
// (live.RingMembers spreads them as bootstrapRing does).
func NewColyseusLocator(cfg WorldConfig, game *arena.Game, id wire.NodeID) (*locate.Mercury, error) {
	return newMercury(cfg, game, id)
}
