package locate

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// MercuryConfig configures the distributed locator. Every node of a
// cluster uses the same Keys, Predict and periods.
type MercuryConfig struct {
	// Keys is the cluster's key mapping (rangedht over x or a Hilbert
	// curve, or dht's hashed regions). Required.
	Keys KeyMap
	// Ring configures the ring node; ID, Rand and Outbox are set by
	// NewMercury. The zero value means ring.DefaultConfig (WAN timings).
	Ring ring.Config
	// Predict configures interest prediction (§6.2): PredTime is the
	// prediction horizon and the subscriptions' TTL. Zero means
	// DefaultPredictConfig with PubTTL set to PublishPeriod.
	Predict PredictConfig
	// PublishPeriod: every primary's location is published this often
	// (new objects at once). Default 500 ms.
	PublishPeriod time.Duration
	// PublishTTL: how long a rendezvous keeps a publication. Default 3 ×
	// PublishPeriod (rides out two lost publications).
	PublishTTL time.Duration
	// MinSubTTL bounds a subscription's TTL from below when PredTime is
	// shorter (a TTL of zero would store nothing). Default 250 ms.
	MinSubTTL time.Duration
	// Slack is the subscription cache's slack: a cached subscription
	// counts as live until this long before it expires at the rendezvous,
	// so that its refresh arrives in time. Default 200 ms.
	Slack time.Duration
	// MergeEps is the aggregation filter's ε: overlapping predicted boxes
	// are merged when the merged box adds at most this fraction of volume.
	// Default 0.5; negative disables merging (every box sent alone).
	MergeEps float64
	// MaxTTL caps the TTL a rendezvous accepts from any node. Default 1 min.
	MaxTTL time.Duration
	// Dims is the number of dimensions of the world's space (1 to
	// world.MaxDims). Required.
	Dims int
	// Pad widens every interest on each side before prediction, per
	// dimension: a node that fetches replicas for a view wider than its
	// interests (node.Config.Prefetch) subscribes to that wider view.
	// Components must be finite and non-negative.
	Pad world.Point
	// Jump: a primary that moved farther than this (Euclidean, over all
	// dimensions) since its last publication is published at once, not at
	// the next period: a respawn or a teleport is found in one discovery
	// latency. Zero (the default) means only the periodic publications;
	// finite and non-negative.
	Jump float64
	// IdleEvery: a primary that moved at most IdleMove since its last
	// publication is idle. It is published with a TTL of 3 × IdleEvery
	// (capped at MaxTTL), then again only every IdleEvery while it stays
	// idle; once it moves it is published at the next period, and
	// subscribers keep the newest of its publications (wire.LocPub.At).
	// Items and lingering players stop costing a publication and a match
	// per subscriber every period. Zero (the default) publishes every
	// primary every period.
	IdleEvery time.Duration
	// IdleMove is the distance (m, Euclidean) a primary may move and still
	// be idle. Zero: it must not move at all. Finite and non-negative.
	IdleMove float64
	// CoordFrac: locations and boxes travel on a grid of 2^-CoordFrac of
	// the world's unit (wire.Grid: points rounded to the nearest, boxes
	// outward). 1 to wire.MaxFrac; zero means DefaultCoordFrac.
	CoordFrac int
	// Sweep: a moving primary's publication carries its velocity
	// (Primary.Vel), and a rendezvous matches the segment it covers until
	// the next publication (StoreConfig.Sweep = PublishPeriod) instead
	// of its location alone; subscribers then need no widening for the
	// publishers' movement between publications (Predict.PubTTL 0, so
	// the pad is PubTime × PubSpeed) and take the velocity to follow a
	// candidate between matches (Found.Vel). Off, Colyseus §6.2: every
	// subscription is widened by (PubTime + PubTTL) × PubSpeed.
	Sweep bool
	// MatchAgain: under Sweep, a match a rendezvous sends a subscriber for
	// the first time (no publication of the object told it yet) of an
	// object standing still (zero velocity) is sent once more at the
	// first Tick at least MatchAgain later, unless a newer publication was
	// sent in between. Later publications of a still object are spared
	// while it stays put, so a lost first match would otherwise leave the
	// subscriber without it until the told publication nearly runs out
	// (up to 3 × IdleEvery for an idle one); a second, independent copy
	// makes that the loss of both. A moving object's told publication is
	// short-lived, and the next is sent within about a PublishTTL. Zero
	// (the default): sent once.
	MatchAgain time.Duration
}

// DefaultMercuryConfig returns the defaults over keys and dims dimensions.
func DefaultMercuryConfig(keys KeyMap, dims int) MercuryConfig {
	return MercuryConfig{Keys: keys, Dims: dims}
}

// MercuryStats counts what one node's locator did.
type MercuryStats struct {
	PubsRouted, SubsSent, RangesRouted uint64 // publications routed; subscription boxes sent; their key ranges routed
	PubsStored, SubsStored             uint64 // publications and subscription ranges delivered here as rendezvous
	MatchesSent, Found                 uint64 // publications sent to subscribers; received (another node's)
	MatchesSpared                      uint64 // matches not sent: the subscriber could predict them (Sweep)
	MatchesAgain                       uint64 // first matches sent a second time (MatchAgain), in MatchesSent too
	HandoffsSent, HandoffsTaken        uint64 // hand-off messages sent and imported
	NotMember                          uint64 // routes skipped while out of the ring (joining or left)
	Rejoins                            uint64 // joins retried after a failed join or an isolation
	PlanErrors                         uint64 // frames whose subscriptions could not be planned (see LastError)
	Malformed, Unexpected, Rejected    uint64 // dropped messages: undecodable; wrong kind here; refused by the store
	// Discovery latency of every match received, split into routing (the
	// publication or subscription's way to the rendezvous) and matching
	// (the match's way to the subscriber); and the hops of every
	// publication and subscription routed here (to the owner of its key,
	// or of the first key of its range: the nodes a range walk reaches
	// after that one are not counted).
	Latency, Routing, Matching Hist
	Hops                       [32]uint64
}

// Mercury is the distributed object locator of Colyseus §6 over Mercury's
// ring (internal/ring): every node is a rendezvous for the key range it
// owns. A primary's location is published to the owner of its key (the
// KeyMap maps points to keys), and a node's predicted interests, aggregated
// (Aggregator: a subscription cache and the merge filter), are subscribed
// at every node whose range meets their key ranges; each rendezvous keeps
// both as soft state with TTLs (Store), matches each new publication or
// subscription against the other side at once, and sends the matches
// straight to the subscriber, which hands them to its node as Found (the
// node checks them against its current, unpredicted view before it asks for
// a replica). When the ring moves a key range (a join, a leave, a load-
// balancing move), the soft state for it follows (a LocHandoff).
//
// Its caller (node.Node, which drives it like any Discovery) must also put
// it in a ring before the first Tick: Ring().Bootstrap with the whole
// membership, Ring().Create for the first node, or Join through a member
// (the locator retries failed joins and rejoins after an isolation on its
// own); and may Ring().Leave, AddContact (a coordinator hands each node a
// random member now and then), or read Ring and Store.
// Those calls queue ring frames that reach the node's outbox at the next
// Tick or Step. Written here: no library does range publish/subscribe over
// a ring.
type Mercury struct {
	cfg    MercuryConfig
	self   wire.NodeID
	grid   wire.Grid // coordinates' grid on the wire (cfg.CoordFrac)
	ring   *ring.Node
	pubLog pubLog
	ob     wire.Outbox // the ring's frames, moved to the node's outbox
	store  *Store
	pred   *Predictor
	agg    *Aggregator

	lastErr error

	told          map[toldKey]toldRec // what subscribers were sent (Sweep)
	nextToldSweep time.Duration
	again         []againMatch  // first matches to send once more (MatchAgain), in due order
	rng           *rand.Rand    // shared with the ring: one goroutine drives both
	seeds         []wire.NodeID // members to join through: the join seed and contacts
	retryAt       time.Duration // when to join again after a failed join or isolation (0: no retry due)
	nextPub       time.Duration
	seq           uint64
	stats         MercuryStats

	evs                    []ring.Event
	msg, chk               wire.Locate
	payload                []byte
	need, pbox, plan, nbuf []world.Box
	ranges                 []KeyRange
	skip                   []wire.NodeID // scratch: a publication's Skip list
	matches                []Match
	hand                   Handoff
}

// NewMercury returns node self's locator with its ring node (out of any
// ring), or an error naming a bad field of cfg. rng seeds the ring (long
// links, timer phases, load samples).
func NewMercury(self wire.NodeID, cfg MercuryConfig, rng *rand.Rand) (*Mercury, error) {
	if cfg.Keys == nil {
		return nil, fmt.Errorf("%w: mercury: no key mapping", ErrLocateConfig)
	}
	if cfg.Dims < 1 || cfg.Dims > world.MaxDims {
		return nil, fmt.Errorf("%w: mercury: dims %d (want 1 to %d)", ErrLocateConfig, cfg.Dims, world.MaxDims)
	}
	if rng == nil {
		return nil, fmt.Errorf("%w: mercury: no random source", ErrLocateConfig)
	}
	if cfg.PublishPeriod == 0 {
		cfg.PublishPeriod = 500 * time.Millisecond
	}
	if cfg.PublishTTL == 0 {
		cfg.PublishTTL = 3 * cfg.PublishPeriod
	}
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
		n   string
	}{{&cfg.MinSubTTL, 250 * time.Millisecond, "MinSubTTL"}, {&cfg.Slack, 200 * time.Millisecond, "Slack"},
		{&cfg.MaxTTL, time.Minute, "MaxTTL"}, {&cfg.PublishPeriod, 0, "PublishPeriod"}, {&cfg.PublishTTL, 0, "PublishTTL"}} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 0 {
			return nil, fmt.Errorf("%w: mercury %s %v is negative", ErrLocateConfig, f.n, *f.v)
		}
	}
	if !validJump(cfg.Jump) {
		return nil, fmt.Errorf("%w: mercury Jump %v (want finite, non-negative)", ErrLocateConfig, cfg.Jump)
	}
	if !validJump(cfg.IdleMove) {
		return nil, fmt.Errorf("%w: mercury IdleMove %v (want finite, non-negative)", ErrLocateConfig, cfg.IdleMove)
	}
	if cfg.IdleEvery < 0 {
		return nil, fmt.Errorf("%w: mercury IdleEvery %v is negative", ErrLocateConfig, cfg.IdleEvery)
	}
	if cfg.IdleEvery > 0 && cfg.IdleEvery < cfg.PublishPeriod {
		return nil, fmt.Errorf("%w: mercury IdleEvery %v is shorter than PublishPeriod %v", ErrLocateConfig, cfg.IdleEvery, cfg.PublishPeriod)
	}
	for d, v := range cfg.Pad {
		if !(v >= 0) || v > 1e12 {
			return nil, fmt.Errorf("%w: mercury Pad %v in dimension %d (want finite, non-negative)", ErrLocateConfig, v, d)
		}
	}
	grid, err := coordGrid(&cfg.CoordFrac, "mercury")
	if err != nil {
		return nil, err
	}
	if cfg.PublishTTL <= cfg.PublishPeriod {
		return nil, fmt.Errorf("%w: mercury PublishTTL %v must exceed PublishPeriod %v", ErrLocateConfig, cfg.PublishTTL, cfg.PublishPeriod)
	}
	if cfg.MergeEps == 0 {
		cfg.MergeEps = 0.5
	}
	if cfg.MergeEps != cfg.MergeEps || cfg.MergeEps > 1e6 {
		return nil, fmt.Errorf("%w: mercury MergeEps %v", ErrLocateConfig, cfg.MergeEps)
	}
	if cfg.Predict.PredTime == 0 && cfg.Predict.PubTime == 0 && cfg.Predict.Window == 0 {
		p := DefaultPredictConfig()
		p.PubTTL = cfg.PublishPeriod
		if cfg.Sweep {
			p.PubTTL = 0 // the rendezvous matches the publishers' movement
		}
		cfg.Predict = p
	}
	pred, err := NewPredictor(cfg.Predict)
	if err != nil {
		return nil, err
	}
	cfg.Predict = pred.Config()
	eps := max(cfg.MergeEps, 0)
	agg, err := NewAggregator(cfg.Dims, cfg.Slack, eps)
	if err != nil {
		return nil, err
	}
	if cfg.MergeEps < 0 {
		agg.Eps = -1
	}
	sc := StoreConfig{Dims: cfg.Dims, Keys: cfg.Keys, MaxTTL: cfg.MaxTTL, SkipFor: cfg.PublishTTL}
	if cfg.Sweep {
		sc.Sweep = cfg.PublishPeriod
	}
	st, err := NewStore(sc)
	if err != nil {
		return nil, err
	}
	rc := cfg.Ring
	m := &Mercury{self: self, grid: grid, store: st, pred: pred, agg: agg, rng: rng, pubLog: newPubLog(cfg.Jump, cfg.IdleEvery, cfg.IdleMove)}
	rc.ID, rc.Rand, rc.Outbox = self, rng, &m.ob
	rn, err := ring.New(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: mercury: %w", ErrLocateConfig, err)
	}
	cfg.Ring = rn.Config()
	m.cfg, m.ring = cfg, rn
	return m, nil
}

// Config returns the validated configuration.
func (m *Mercury) Config() MercuryConfig { return m.cfg }

// Ring returns the ring node (to Bootstrap, Create, Join, Leave or inspect
// it; its events are the locator's to read).
func (m *Mercury) Ring() *ring.Node { return m.ring }

// Store returns the rendezvous soft state this node keeps.
func (m *Mercury) Store() *Store { return m.store }

// Stats returns the counters.
func (m *Mercury) Stats() MercuryStats { return m.stats }

// ResetHists empties the latency and hop histograms of Stats (the counters
// keep counting), so that a measurement can leave out a warm-up: the
// first seconds of a ring, when route caches are empty and long links
// not yet drawn by density, route in more hops than it ever will again.
// It changes nothing the protocol does.
func (m *Mercury) ResetHists() {
	m.stats.Latency, m.stats.Routing, m.stats.Matching = Hist{}, Hist{}, Hist{}
	m.stats.Hops = [32]uint64{}
}

// JoinRetry is how long a node whose join failed waits before it tries
// again, through a member it knows, at a random key.
const JoinRetry = 2 * time.Second

// Join makes the node join the ring through seed (any member), which
// picks its key (it splits its own range at its load median). Should the
// join fail, or every peer be lost later (an isolated node), the locator
// joins again through seed or a contact (AddContact) on its own.
func (m *Mercury) Join(now time.Duration, seed wire.NodeID) error {
	if seed == m.self {
		return fmt.Errorf("%w: mercury: node %d cannot join through itself", ring.ErrState, seed)
	}
	if err := m.ring.JoinPicked(now, seed); err != nil {
		return err
	}
	m.addSeed(seed)
	m.retryAt = 0
	return nil
}

// AddContact tells the locator of another member: the ring probes it now
// and then (ring.Node.AddContact), and the locator rejoins through it if
// it ever falls out of the ring.
func (m *Mercury) AddContact(p ring.Peer) {
	if p.ID == m.self || p.ID == 0 {
		return
	}
	m.ring.AddContact(p)
	m.addSeed(p.ID)
}

func (m *Mercury) addSeed(id wire.NodeID) {
	if !slices.Contains(m.seeds, id) {
		if len(m.seeds) == 16 {
			m.seeds = m.seeds[1:]
		}
		m.seeds = append(m.seeds, id)
	}
}

// rejoin joins again, when a retry is due, through a known member at a
// random key.
func (m *Mercury) rejoin(now time.Duration) {
	if m.retryAt == 0 || now < m.retryAt || m.ring.Member() || m.ring.Joining() || len(m.seeds) == 0 {
		return
	}
	m.retryAt = 0
	seed := m.seeds[m.rng.IntN(len(m.seeds))]
	if err := m.ring.Join(now, seed, m.rng.Uint64()); err != nil {
		m.retryAt = now + JoinRetry
		return
	}
	m.stats.Rejoins++
}

// Handles reports whether t is a message of this locator: ring frames and
// TypeLocate.
func (m *Mercury) Handles(t wire.Type) bool { return t == wire.TypeLocate || ring.Handles(t) }

// Check decodes a frame of this locator without acting on it. A TypeLocate
// frame sent directly must be a match or a hand-off (publications and
// subscriptions travel routed, inside ring frames).
func (m *Mercury) Check(t wire.Type, body []byte) error {
	if ring.Handles(t) {
		return m.ring.Check(t, body)
	}
	if t != wire.TypeLocate {
		return fmt.Errorf("%w: %v frame is not a locator message", wire.ErrMalformed, t)
	}
	if err := m.chk.Decode(body); err != nil {
		return err
	}
	if m.chk.Kind != wire.LocMatch && m.chk.Kind != wire.LocHandoff {
		return fmt.Errorf("%w: locate %v sent directly (it travels routed)", wire.ErrMalformed, m.chk.Kind)
	}
	return nil
}

// Tick runs one frame: the ring's timers, then the publications (every
// primary each PublishPeriod, new ones at once) and the subscriptions (the
// predicted interests whose needs no live cached subscription covers,
// merged), routed over the ring; then it expires the soft state.
func (m *Mercury) Tick(f *Frame, out *Out) {
	now := f.Now
	m.rejoin(now)
	m.ring.Tick(now)
	m.events(now, out)
	m.publish(f)
	m.subscribe(f)
	_ = m.store.Expire(now) // time only moves forward here
	m.sendAgain(now, out)
	if f.Dims == m.cfg.Dims && now >= time.Second && now%(5*time.Second) < 100*time.Millisecond {
		m.pred.Sweep(now - 5*time.Second)
	}
	m.events(now, out)
	m.ob.MoveTo(out.Outbox)
}

// KeyGrain is the precision of the keys the locator routes: a publication
// goes to the owner of its key rounded down to a multiple of KeyGrain, a
// subscription to the owners of its key range rounded outward, so a
// publication inside a subscription's range still meets it, and a routed
// key travels in 4 bytes instead of 8 (wire.RingRoute). 2^24 positions
// over the key space: 46 µm along a 768 m map.
const KeyGrain = 1 << 40

// route sends the message in m.msg to the owner of key (or, with walk,
// every owner of the clockwise range [key, hi]), with the keys rounded to
// KeyGrain.
func (m *Mercury) route(now time.Duration, key, hi uint64, walk bool) bool {
	if !m.ring.Member() {
		m.stats.NotMember++
		return false
	}
	if walk {
		if hi-key >= math.MaxUint64-2*KeyGrain {
			hi = key&^(KeyGrain-1) - 1 // (nearly) the whole ring: all of it
		} else {
			hi |= KeyGrain - 1
		}
	}
	key &^= KeyGrain - 1
	m.payload = wire.AppendLocateBody(m.payload[:0], &m.msg)
	var err error
	if walk {
		err = m.ring.RouteRange(now, key, hi, wire.ClassDiscovery, m.payload)
	} else {
		err = m.ring.Route(now, key, wire.ClassDiscovery, m.payload)
	}
	if err != nil {
		m.stats.NotMember++
		return false
	}
	return true
}

func (m *Mercury) publish(f *Frame) {
	now := f.Now
	all := now >= m.nextPub
	if all {
		m.nextPub = now + m.cfg.PublishPeriod
	}
	if all {
		m.pubLog.prune(f.Primaries)
	}
	for i := range f.Primaries {
		p := &f.Primaries[i]
		idle := false
		switch {
		case p.New || m.pubLog.jumped(p, f.Dims):
		case !all:
			continue
		default:
			var skip bool
			if skip, idle = m.pubLog.idle(p, f.Dims, now); skip {
				continue
			}
		}
		m.pubLog.published(p, now, idle)
		ttl := m.cfg.PublishTTL
		if idle {
			ttl = min(3*m.cfg.IdleEvery, m.cfg.MaxTTL)
		}
		m.msg = wire.Locate{Kind: wire.LocPublish, Sent: now, Dims: f.Dims, Grid: m.grid, Pubs: m.msg.Pubs[:0]}
		pub := wire.LocPub{ID: p.ID, Node: m.self, Loc: p.Loc, TTL: ttl, At: now}
		if m.cfg.Sweep && p.HasVel && !idle {
			pub.Vel = p.Vel
		}
		if f.Holders != nil {
			m.skip = f.Holders(p.ID, m.skip[:0])
			pub.Skip = m.skip[:min(len(m.skip), MaxSkip)]
		}
		m.msg.Pubs = append(m.msg.Pubs, pub)
		if m.route(now, m.cfg.Keys.PointKey(p.Loc), 0, false) {
			m.stats.PubsRouted++
		}
	}
}

func (m *Mercury) subscribe(f *Frame) {
	now := f.Now
	if f.Dims != m.cfg.Dims {
		return
	}
	m.need, m.pbox = m.need[:0], m.pbox[:0]
	for i := range f.Primaries {
		p := &f.Primaries[i]
		if len(p.Interest) == 0 && len(p.Anticipated) == 0 {
			continue
		}
		m.pred.Observe(p.ID, now, p.Loc)
		n0, p0 := len(m.need), len(m.pbox)
		interest := p.Interest
		if m.cfg.Pad != (world.Point{}) || len(p.Anticipated) > 0 {
			m.nbuf = append(m.nbuf[:0], p.Interest...)
			m.nbuf = append(m.nbuf, p.Anticipated...)
			for k := range m.nbuf {
				m.nbuf[k] = m.nbuf[k].Expand(m.cfg.Pad, m.cfg.Pad)
			}
			interest = m.nbuf
		}
		m.need = m.pred.Need(interest, m.need)
		m.pbox = m.pred.Predict(p.ID, p.Vel, p.HasVel, interest, m.pbox)
		if len(m.need)-n0 != len(m.pbox)-p0 {
			m.need, m.pbox = m.need[:n0], m.pbox[:p0] // unbounded interests: nothing to subscribe
		}
	}
	ttl := max(m.pred.TTL(), m.cfg.MinSubTTL)
	plan, err := m.agg.Plan(now, m.need, m.pbox, ttl, m.plan[:0])
	if err != nil {
		m.stats.PlanErrors++
		m.lastErr = err
		return
	}
	m.plan = plan
	for _, b := range plan {
		m.seq++
		m.stats.SubsSent++
		m.msg = wire.Locate{Kind: wire.LocSubscribe, Sent: now, TTL: ttl, Seq: m.seq, Dims: f.Dims, Grid: m.grid,
			Pubs: m.msg.Pubs[:0], Boxes: append(m.msg.Boxes[:0], b)}
		m.ranges = bridgeRanges(m.cfg.Keys.BoxRanges(b, m.ranges[:0]), m.gap())
		for _, r := range m.ranges {
			if m.route(now, r.Lo, r.Hi, r.Lo != r.Hi) {
				m.stats.RangesRouted++
			}
		}
	}
}

// Step handles one received frame (already checked): a ring frame, whose
// deliveries are the publications and subscriptions this node stores and
// matches, or a direct match or hand-off.
func (m *Mercury) Step(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *Out) error {
	defer m.ob.MoveTo(out.Outbox)
	if ring.Handles(t) {
		err := m.ring.Step(now, from, t, body)
		m.events(now, out)
		return err
	}
	if t != wire.TypeLocate {
		m.stats.Unexpected++
		return fmt.Errorf("%w: %v frame is not a locator message", wire.ErrMalformed, t)
	}
	if err := m.msg.Decode(body); err != nil {
		m.stats.Malformed++
		return err
	}
	m.msg.Unwrap(now)
	switch m.msg.Kind {
	case wire.LocMatch:
		m.found(now, out)
	case wire.LocHandoff:
		m.takeHandoff(now)
	default:
		m.stats.Unexpected++
	}
	return nil
}

// found turns a received match into Found facts and records its latency.
func (m *Mercury) found(now time.Duration, out *Out) {
	if m.msg.Sent <= m.msg.Routed && m.msg.Routed <= now {
		m.stats.Latency.Add(now - m.msg.Sent)
		m.stats.Routing.Add(m.msg.Routed - m.msg.Sent)
		m.stats.Matching.Add(now - m.msg.Routed)
	}
	for _, p := range m.msg.Pubs {
		if p.Node == m.self || p.Node == 0 || p.TTL <= 0 {
			continue
		}
		m.stats.Found++
		out.Found = append(out.Found, Found{ID: p.ID, Node: p.Node, Loc: p.Loc, Vel: p.Vel, Heard: now,
			Until: now + min(p.TTL, m.cfg.MaxTTL), At: p.At})
	}
}

func (m *Mercury) takeHandoff(now time.Duration) {
	m.hand.Pubs, m.hand.Subs = m.hand.Pubs[:0], m.hand.Subs[:0]
	for _, p := range m.msg.Pubs {
		m.hand.Pubs = append(m.hand.Pubs, Publication{ID: p.ID, Node: p.Node, Loc: p.Loc, Vel: p.Vel, Until: now + min(p.TTL, m.cfg.MaxTTL), At: p.At,
			Skip: p.Skip})
	}
	for _, s := range m.msg.Subs {
		m.hand.Subs = append(m.hand.Subs, Subscription{Node: s.Node, Seq: s.Seq, Boxes: s.Boxes, Until: now + min(s.TTL, m.cfg.MaxTTL)})
	}
	if err := m.store.Import(now, &m.hand); err != nil {
		m.stats.Rejected++
		return
	}
	m.stats.HandoffsTaken++
}

// events acts on what the ring reports.
func (m *Mercury) events(now time.Duration, out *Out) {
	m.evs = m.ring.Events(m.evs[:0])
	for i := range m.evs {
		ev := &m.evs[i]
		switch ev.Kind {
		case ring.EventDelivered:
			m.deliver(now, ev, out)
		case ring.EventHandoff:
			m.handoff(now, ev.Range, ev.Peer.ID)
		case ring.EventJoinFailed:
			m.retryAt = now + JoinRetry
		case ring.EventIsolated:
			if len(m.seeds) > 0 && m.ring.Leave(now) == nil {
				m.retryAt = now + JoinRetry
			}
		}
	}
}

// deliver stores and matches a publication or subscription routed here.
func (m *Mercury) deliver(now time.Duration, ev *ring.Event, out *Out) {
	if err := m.msg.Decode(ev.Data); err != nil {
		m.stats.Malformed++
		return
	}
	m.msg.Unwrap(now)
	if m.msg.Dims != m.cfg.Dims {
		m.stats.Rejected++
		return
	}
	if !ev.Walk {
		m.stats.Hops[min(ev.Hops, len(m.stats.Hops)-1)]++
	}
	origin := ev.Peer.ID
	m.matches = m.matches[:0]
	var err error
	switch m.msg.Kind {
	case wire.LocPublish:
		for _, p := range m.msg.Pubs {
			// A node publishes only its own primaries.
			m.matches, err = m.store.Publish(now, Pub{ID: p.ID, Node: origin, Loc: p.Loc, Vel: p.Vel, At: p.At, TTL: p.TTL, Skip: p.Skip}, m.matches)
			if err != nil {
				m.stats.Rejected++
				continue
			}
			m.stats.PubsStored++
			m.ring.AddLoad(now, m.cfg.Keys.PointKey(p.Loc), 1)
		}
	case wire.LocSubscribe:
		m.matches, err = m.store.Subscribe(now, origin, m.msg.Seq, m.msg.Boxes, m.msg.TTL, m.matches)
		if err != nil {
			m.stats.Rejected++
			return
		}
		m.stats.SubsStored++
		m.ring.AddLoad(now, m.loadKey(ev.Range), 1)
	default:
		m.stats.Unexpected++
		return
	}
	m.sendMatches(now, m.msg.Sent, m.msg.Dims, out)
}

// loadKey is the key a delivered range is counted under: its start if this
// node owns it, else this node's own key (the range reached it by the walk).
func (m *Mercury) loadKey(r ring.Range) uint64 {
	if m.ring.Owns(r.Lo) {
		return r.Lo
	}
	return m.ring.Key()
}

// sendMatches sends m.matches, grouped by subscriber in node order, each
// message at most maxMatch publications.
func (m *Mercury) sendMatches(now, sent time.Duration, dims int, out *Out) {
	if m.cfg.Sweep {
		m.spare(now)
	}
	m.emitMatches(now, sent, dims, out)
}

// emitMatches sends m.matches, grouped by subscriber in node order, each
// message at most maxMatch publications.
func (m *Mercury) emitMatches(now, sent time.Duration, dims int, out *Out) {
	const maxMatch = 24
	slices.SortStableFunc(m.matches, func(a, b Match) int { return cmp.Compare(a.To, b.To) })
	for i := 0; i < len(m.matches); {
		to := m.matches[i].To
		msg := wire.Locate{Kind: wire.LocMatch, Sent: sent, Routed: now, Dims: dims, Grid: m.grid, Pubs: m.msg.Pubs[:0]}
		for ; i < len(m.matches) && m.matches[i].To == to && len(msg.Pubs) < maxMatch; i++ {
			p := &m.matches[i].Pub
			msg.Pubs = append(msg.Pubs, wire.LocPub{ID: p.ID, Node: p.Node, Loc: p.Loc, Vel: p.Vel, TTL: p.Until - now, At: p.At})
		}
		m.stats.MatchesSent += uint64(len(msg.Pubs))
		m.msg.Pubs = msg.Pubs
		out.Outbox.Commit(to, wire.ClassMatching, wire.AppendLocate(out.Outbox.Buf(), &msg))
	}
}

// toldKey names what a rendezvous told a subscriber about an object.
type toldKey struct {
	to wire.NodeID
	id world.ObjectID
}

// toldRec is the last publication of an object a rendezvous sent a
// subscriber, and until when the subscriber keeps it.
type toldRec struct {
	node     wire.NodeID
	loc, vel world.Point
	at       time.Duration
	until    time.Duration
	// last (the directory's) is the publication time of the latest
	// publication the subscriber was told or spared: a publication is
	// spared only if its predecessor was covered too (a subscriber that
	// was skipped as a holder meanwhile has the replica's location
	// instead).
	last time.Duration
}

// Dead reckoning of matches (Sweep): a subscriber follows a candidate at
// its published velocity (Found.Where), so a rendezvous does not send it a
// publication that lies within spareDist of where the last one it sent
// predicts, with the same velocity within spareVel, while that one lives
// long enough to outlast the next publication.
const (
	spareDist  = 1.0 // units
	spareVel   = 0.5 // units/s: the velocity grid's step on the default grid
	spareSlack = 200 * time.Millisecond
)

// spare drops from m.matches the publications their subscribers can
// predict, and records the others as told.
func (m *Mercury) spare(now time.Duration) {
	if m.told == nil {
		m.told = map[toldKey]toldRec{}
	}
	kept := m.matches[:0]
	for _, mt := range m.matches {
		k := toldKey{mt.To, mt.Pub.ID}
		p := &mt.Pub
		if r, ok := m.told[k]; ok && r.predicts(p.Node, &p.Loc, &p.Vel, p.At, now, m.cfg.PublishPeriod, m.cfg.Dims) {
			m.stats.MatchesSpared++
			continue
		}
		if _, told := m.told[k]; !told && m.cfg.MatchAgain > 0 && p.Vel == (world.Point{}) {
			m.again = append(m.again, againMatch{due: now + m.cfg.MatchAgain, sent: now, m: mt})
		}
		m.told[k] = toldRec{node: p.Node, loc: p.Loc, vel: p.Vel, at: p.At, until: p.Until}
		kept = append(kept, mt)
	}
	m.matches = kept
	if now >= m.nextToldSweep {
		m.nextToldSweep = now + 5*time.Second
		for k, r := range m.told {
			if r.until <= now {
				delete(m.told, k)
			}
		}
	}
}

// againMatch is a first match to send once more when due.
type againMatch struct {
	due, sent time.Duration
	m         Match
}

// sendAgain sends the first matches due again by now (MatchAgain) whose
// publication still lives and is still the one the subscriber was told
// last (a newer one was sent in its place), grouped by subscriber.
func (m *Mercury) sendAgain(now time.Duration, out *Out) {
	n := 0
	for n < len(m.again) && m.again[n].due <= now {
		n++
	}
	if n == 0 {
		return
	}
	m.matches = m.matches[:0]
	for _, a := range m.again[:n] {
		r, ok := m.told[toldKey{a.m.To, a.m.Pub.ID}]
		if a.m.Pub.Until <= now || !ok || r.at != a.m.Pub.At || r.node != a.m.Pub.Node {
			continue
		}
		// The subscriber takes a match's location as the object's at the
		// time it hears it (Found.Heard) and follows its velocity from
		// there: the copy carries the location the first predicts now.
		mt := a.m
		t := (now - a.sent).Seconds()
		for d := range m.cfg.Dims {
			mt.Pub.Loc[d] += mt.Pub.Vel[d] * t
		}
		m.matches = append(m.matches, mt)
	}
	m.again = append(m.again[:0], m.again[n:]...)
	m.stats.MatchesAgain += uint64(len(m.matches))
	m.emitMatches(now, now, m.cfg.Dims, out)
}

// predicts reports whether a subscriber told r still has the publication
// (node, loc, vel, at), to spareDist, and keeps it past the next
// publication (due within period).
func (r *toldRec) predicts(node wire.NodeID, loc, vel *world.Point, at, now, period time.Duration, dims int) bool {
	if r.node != node || r.until-now <= period+spareSlack || at < r.at {
		return false
	}
	t := (at - r.at).Seconds()
	for d := range dims {
		if math.Abs(loc[d]-(r.loc[d]+r.vel[d]*t)) > spareDist || math.Abs(vel[d]-r.vel[d]) > spareVel {
			return false
		}
	}
	return true
}

// handoff sends the soft state of the arc r to its new owner and forgets
// it here.
func (m *Mercury) handoff(now time.Duration, r ring.Range, to wire.NodeID) {
	m.store.Export(r.Lo, r.Hi, &m.hand)
	m.store.Drop(r.Lo, r.Hi)
	if to == m.self || to == 0 {
		return
	}
	const pubChunk, subChunk = 16, 4
	for i := 0; i < len(m.hand.Pubs); i += pubChunk {
		msg := wire.Locate{Kind: wire.LocHandoff, Sent: now, Dims: m.cfg.Dims, Grid: m.grid}
		for _, p := range m.hand.Pubs[i:min(i+pubChunk, len(m.hand.Pubs))] {
			msg.Pubs = append(msg.Pubs, wire.LocPub{ID: p.ID, Node: p.Node, Loc: p.Loc, Vel: p.Vel, TTL: p.Until - now, At: p.At, Skip: p.Skip})
		}
		m.sendHandoff(to, &msg)
	}
	for i := 0; i < len(m.hand.Subs); i += subChunk {
		msg := wire.Locate{Kind: wire.LocHandoff, Sent: now, Dims: m.cfg.Dims, Grid: m.grid}
		for _, s := range m.hand.Subs[i:min(i+subChunk, len(m.hand.Subs))] {
			msg.Subs = append(msg.Subs, wire.LocSub{Node: s.Node, Seq: s.Seq, TTL: s.Until - now, Boxes: s.Boxes})
		}
		m.sendHandoff(to, &msg)
	}
}

func (m *Mercury) sendHandoff(to wire.NodeID, msg *wire.Locate) {
	m.stats.HandoffsSent++
	m.ob.Commit(to, wire.ClassMaintenance, wire.AppendLocate(m.ob.Buf(), msg))
}

// LastErr returns the latest error that stopped a frame's subscriptions
// (counted in MercuryStats.PlanErrors), or nil.
func (m *Mercury) LastErr() error { return m.lastErr }

// gap is the widest key gap bridgeRanges closes: the width of this node's
// own range, an estimate of one owner's share of the ring.
func (m *Mercury) gap() uint64 {
	r, ok := m.ring.Range()
	if !ok {
		return 0
	}
	return r.Hi - r.Lo
}

// bridgeRanges merges, in place, consecutive ranges (sorted by Lo,
// disjoint) with fewer than gap keys between them: one range walk over
// such a gap reaches at most about one owner more than two walks would,
// and saves a route and a second delivery at the owner of both ends. The
// owners in a bridged gap store the subscription too, but no publication
// they hold lies in its boxes, so it matches nothing there. At 96 nodes on
// a rect map with the Hilbert mapping this routes 6.8 ranges a second per
// node instead of 15.2, for 9% less traffic (BENCHMARKS.md).
func bridgeRanges(rs []KeyRange, gap uint64) []KeyRange {
	if len(rs) < 2 || gap == 0 {
		return rs
	}
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r.Lo-last.Hi <= gap {
			last.Hi = max(last.Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	return out
}
