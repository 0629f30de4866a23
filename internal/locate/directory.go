package locate

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// DirectoryConfig configures the directory architecture. Every node of the
// cluster uses the same Rendezvous and Standby.
type DirectoryConfig struct {
	// Rendezvous is the node that stores publications and subscriptions.
	Rendezvous wire.NodeID
	// Standby lists, in order, the nodes that take over as rendezvous
	// when the ones before them are declared dead (Frame.Dead): the
	// rendezvous candidates are Rendezvous, then Standby (see Directory).
	// Empty: no standby, and the rendezvous is a single point of failure.
	// No node may be listed twice, nor node 0.
	Standby []wire.NodeID
	// FailBack is how long a candidate that was declared dead must stay
	// alive (out of Frame.Dead) before the nodes use it again instead of
	// a later candidate; it doubles every time that candidate is declared
	// dead again (up to maxFailBackDoublings times). Zero means
	// DefaultFailBack.
	FailBack time.Duration
	// PublishPeriod: every primary's location is published this often (new
	// objects at once). 500 ms keeps published locations within a few
	// units of the truth at Quake speeds.
	PublishPeriod time.Duration
	// PublishTTL: how long the rendezvous keeps a publication (3 periods
	// ride out two lost publications).
	PublishTTL time.Duration
	// SubscribePeriod: the subscription is refreshed this often, and at
	// once whenever the view leaves the subscribed boxes.
	SubscribePeriod time.Duration
	// SubscribeTTL: how long the rendezvous keeps a subscription.
	SubscribeTTL time.Duration
	// Margin widens every subscribed box by this much on each side, per
	// dimension (Colyseus' predicted subscription: PredTime × speed +
	// PubTime × speed). A wider margin means fewer re-subscriptions and
	// earlier discovery, at the cost of false matches. Zero subscribes to
	// the exact view.
	Margin world.Point
	// Jump: a primary that moved farther than this since its last
	// publication is published at once (a respawn, a teleport); zero
	// (the default) means only the periodic publications.
	Jump float64
	// MaxTTL caps the TTL the rendezvous accepts from any node.
	MaxTTL time.Duration
	// IdleEvery and IdleMove: a primary that moved at most IdleMove since
	// its last publication is idle; it is published with a TTL of 3 ×
	// IdleEvery (capped at MaxTTL), then again only every IdleEvery while
	// it stays idle (as MercuryConfig's). Zero IdleEvery (the default)
	// publishes every primary every period.
	IdleEvery time.Duration
	IdleMove  float64
	// CoordFrac: locations and boxes travel on a grid of 2^-CoordFrac of
	// the world's unit (wire.Grid: points rounded to the nearest, boxes
	// outward). 1 to wire.MaxFrac; zero means DefaultCoordFrac.
	CoordFrac int
	// Reckon turns on dead reckoning of matches: a moving primary's
	// publication carries its velocity (world.Mover), a subscriber follows
	// a candidate along it (Found.Where), and the rendezvous does not
	// resend a subscriber a publication that the last one it sent predicts
	// to a metre (as MercuryConfig.Sweep does), while that one outlives the
	// next publication. Off by default.
	Reckon bool
	// BatchMatches makes the rendezvous's match frames wait for its next
	// frame (wire.Outbox.CommitLater; a node releases waiting frames as a
	// frame starts): all the matches a subscriber gets in one frame travel
	// in one packet instead of a packet per arriving publication, for up
	// to one frame of discovery latency. Off by default: every match goes
	// at once.
	BatchMatches bool
}

// DefaultCoordFrac is the locators' default coordinate grid: 2^-4 units,
// 6.25 cm on the model game's maps, far below the metres of prediction
// margin a publication's location is matched with.
const DefaultCoordFrac = 4

// coordGrid checks a configured CoordFrac and returns its grid.
func coordGrid(frac *int, who string) (wire.Grid, error) {
	if *frac == 0 {
		*frac = DefaultCoordFrac
	}
	if *frac < 0 || *frac > wire.MaxFrac {
		return wire.Grid{}, fmt.Errorf("%w: %s CoordFrac %d (want 1 to %d)", ErrLocateConfig, who, *frac, wire.MaxFrac)
	}
	return wire.Grid{Frac: *frac}, nil
}

// DefaultDirectoryConfig returns the defaults with the given rendezvous
// (and no standby).
func DefaultDirectoryConfig(rendezvous wire.NodeID) DirectoryConfig {
	return DirectoryConfig{Rendezvous: rendezvous, PublishPeriod: 500 * time.Millisecond,
		PublishTTL: 1500 * time.Millisecond, SubscribePeriod: time.Second, SubscribeTTL: 3 * time.Second,
		MaxTTL: time.Minute, FailBack: DefaultFailBack}
}

// DefaultFailBack is DirectoryConfig.FailBack's default. The nodes send to
// a returning candidate as well as to their standby during the hold-down
// (see Directory), so it costs only that doubled discovery upload while it
// lasts, and it must exceed the spread of the times the nodes' failure
// detectors hear of the return (about a heartbeat period) for the move to
// be seamless. 10 s is ample for that, and keeps a flapping candidate
// (dead, back, dead again) from drawing the cluster's matching back to it
// more than once per 10 s, less often with every repeated death.
const DefaultFailBack = 10 * time.Second

// maxFailBackDoublings caps how often a candidate's hold-down doubles:
// 2^4 × DefaultFailBack is 160 s.
const maxFailBackDoublings = 4

// ErrLocateConfig reports an invalid locator configuration.
var ErrLocateConfig = errors.New("locate: bad config")

// Directory is the directory architecture: one rendezvous node stores
// publications (object locations) and subscriptions (node views) as soft
// state with TTLs; it matches each arriving subscription against the
// stored publications at once, and each arriving publication against the
// stored subscriptions, and sends the matches to the subscriber, which
// requests replicas straight from the primaries' nodes. It is the
// single-node form of Colyseus' distributed locator. Every node runs one
// Directory; the rendezvous's also holds the store.
//
// The rendezvous is not a single point of failure when the configuration
// lists standbys: the candidates are DirectoryConfig.Rendezvous, then
// Standby, in order, the same on every node. Each node sends its
// publications and subscription to the first candidate its failure
// detector has not declared dead (Frame.Dead), and lists in Out.Watch the
// candidates it depends on: that one, and the earlier ones (dead, or back
// but not yet trusted), so that the detector notices their return. When
// the one it uses is declared dead, the node sends every publication (idle
// ones too) and its subscription to the next candidate at once, not at the
// next refresh: the standby rebuilds the whole soft state from the nodes'
// resends within one publication period of the death being reported, and
// matches what it receives as any rendezvous does. Every node stores and
// matches the publications and subscriptions it receives, whether or not
// it is the rendezvous in its own view, because nodes learn of a death at
// different times.
//
// A candidate that comes back (leaves Frame.Dead) is used again, but only
// once it stayed alive for DirectoryConfig.FailBack (a hold-down, doubled
// with every repeated death of that candidate); until then the node sends
// to it as well as to the later candidate it uses. Staying on the standby
// for good would split the cluster: a node that restarts, or whose failure
// detector never declared the candidate dead, knows only the configured
// order and would use the returned one while the others stay on the
// standby. Failing back at once would move the cluster's matching back and
// forth with every flap of a failing node. Sending to both during the
// hold-down makes the move seamless: the returned candidate holds
// everyone's state before anyone relies on it alone, the nodes that use it
// already meet the others there, and the standby serves until every node
// moved. If every candidate is declared dead, a node keeps sending to the
// one it used last and watches them all.
//
// A candidate that only some nodes cannot reach splits discovery between
// the nodes that declared it dead and the others, for as long as their
// failure detectors disagree.
type Directory struct {
	cfg        DirectoryConfig
	grid       wire.Grid // coordinates' grid on the wire (cfg.CoordFrac)
	self       wire.NodeID
	pubLog     pubLog
	nextPub    time.Duration
	nextSub    time.Duration
	subscribed []world.Box
	subBoxes   *Boxes // subscribed, indexed (for covered)

	// rendezvous state: publications in a point index, subscriptions
	// sorted by node and their boxes in a box index, both over the space
	// of the first message (messages of other dimensions are matched by
	// scanning)
	pubs    *Points[pubVal]
	subs    []storedSub // sorted by node
	subIdx  *Boxes
	matches []matchOut
	order   []uint64 // sendMatches' sort keys
	refs    []PointRef
	had     []world.Box   // a refreshed subscription's previous boxes
	near    []world.Box   // those of them that meet the box being queried
	now     time.Duration // the latest Step's time (BatchMatches' due time)
	// lastExpire is the previous expiry scan's time.
	lastExpire time.Duration
	owners     []wire.NodeID
	// linear makes the rendezvous match by scanning every publication or
	// subscription: the reference the indexes are tested and benchmarked
	// against.
	linear bool
	// byID makes sendMatches find the publications it records as told by
	// their IDs, not by the positions the matches carry (the reference).
	byID bool

	msg     wire.Pubs // publications and matches being sent
	in      wire.Pubs // the publication or match frame received (its Skip arrays reused by Decode)
	pubKind []uint8   // this Tick's decision for each primary: pubNone, pubMoving or pubIdle
	sub     wire.Subscribe
	want    []world.Box
	skipBuf []wire.NodeID // the Skip lists of the publications in msg, end to end
	skipEnd []int         // where each one ends in skipBuf

	// held is the type of the frame Check decoded last (into in or sub),
	// for StepChecked; 0 once Step or StepChecked decoded another frame
	// over it.
	held wire.Type

	// The rendezvous candidates (cfg.Rendezvous, then cfg.Standby), what
	// this node's failure detector said of each, where this node sends
	// its publications and subscription (targets; prevTargets the
	// previous Tick's), and the candidate it depends on (rdv).
	cands       []wire.NodeID
	hist        []candState
	targets     []wire.NodeID
	prevTargets []wire.NodeID
	rdv         wire.NodeID
	// resend makes this Tick publish every primary, idle ones too: a
	// candidate became a target.
	resend bool
	to     [1]wire.NodeID // a match frame's one destination
}

// candState is what a node's failure detector said of a rendezvous
// candidate, as the Frames told.
type candState struct {
	dead bool          // in Frame.Dead at the latest Tick
	died bool          // declared dead at least once
	back time.Duration // when it last left Frame.Dead
	hold time.Duration // how long it must stay alive since back to be used again
}

// What a Tick publishes of a primary.
const (
	pubNone uint8 = iota
	pubMoving
	pubIdle
)

type pubVal struct {
	node  wire.NodeID
	until time.Duration
	at    time.Duration // wire.Pub.At
	vel   world.Point   // wire.Pub.Vel
	// told is what each subscriber was last sent of this object (Reckon;
	// a few subscribers each, kept with the publication instead of in a
	// map keyed by pairs: no hashing on the rendezvous's hot path).
	told []toldSub
	skip skipSet // Pub.Skip: subscribers that need no match, for PublishTTL after it arrived
}

// toldSub is what the rendezvous last sent subscriber to of a
// publication (Reckon).
type toldSub struct {
	to wire.NodeID
	toldRec
}

type storedSub struct {
	node  wire.NodeID
	boxes []world.Box
	until time.Duration
}

type matchOut struct {
	to    wire.NodeID
	ref   int32 // the publication's position in pubs + 1, if still valid when sent; else 0
	pub   wire.Pub
	until time.Duration
}

// NewDirectory returns the directory locator of node self; zero fields of
// cfg (except Rendezvous and Margin) take the defaults.
func NewDirectory(self wire.NodeID, cfg DirectoryConfig) (*Directory, error) {
	d := DefaultDirectoryConfig(cfg.Rendezvous)
	for _, f := range []struct {
		v   *time.Duration
		def time.Duration
		n   string
	}{{&cfg.PublishPeriod, d.PublishPeriod, "PublishPeriod"}, {&cfg.PublishTTL, d.PublishTTL, "PublishTTL"},
		{&cfg.SubscribePeriod, d.SubscribePeriod, "SubscribePeriod"}, {&cfg.SubscribeTTL, d.SubscribeTTL, "SubscribeTTL"},
		{&cfg.MaxTTL, d.MaxTTL, "MaxTTL"}} {
		if *f.v == 0 {
			*f.v = f.def
		}
		if *f.v < 0 {
			return nil, fmt.Errorf("%w: directory %s is negative", ErrLocateConfig, f.n)
		}
	}
	if cfg.PublishTTL <= cfg.PublishPeriod || cfg.SubscribeTTL <= cfg.SubscribePeriod {
		return nil, fmt.Errorf("%w: directory TTLs must exceed their periods (publish %v/%v, subscribe %v/%v)",
			ErrLocateConfig, cfg.PublishTTL, cfg.PublishPeriod, cfg.SubscribeTTL, cfg.SubscribePeriod)
	}
	for _, m := range cfg.Margin {
		if !(m >= 0) || m > 1e300 {
			return nil, fmt.Errorf("%w: directory margin %v (want finite, non-negative)", ErrLocateConfig, cfg.Margin)
		}
	}
	if !validJump(cfg.Jump) {
		return nil, fmt.Errorf("%w: directory Jump %v (want finite, non-negative)", ErrLocateConfig, cfg.Jump)
	}
	if !validJump(cfg.IdleMove) {
		return nil, fmt.Errorf("%w: directory IdleMove %v (want finite, non-negative)", ErrLocateConfig, cfg.IdleMove)
	}
	grid, err := coordGrid(&cfg.CoordFrac, "directory")
	if err != nil {
		return nil, err
	}
	if cfg.IdleEvery < 0 || cfg.IdleEvery > 0 && cfg.IdleEvery < cfg.PublishPeriod {
		return nil, fmt.Errorf("%w: directory IdleEvery %v (want 0, or at least PublishPeriod %v)", ErrLocateConfig, cfg.IdleEvery, cfg.PublishPeriod)
	}
	if cfg.FailBack == 0 {
		cfg.FailBack = DefaultFailBack
	}
	if cfg.FailBack < 0 {
		return nil, fmt.Errorf("%w: directory FailBack %v is negative", ErrLocateConfig, cfg.FailBack)
	}
	cands := append([]wire.NodeID{cfg.Rendezvous}, cfg.Standby...)
	for i, c := range cands[1:] {
		if c == 0 {
			return nil, fmt.Errorf("%w: directory Standby %v lists node 0", ErrLocateConfig, cfg.Standby)
		}
		if slices.Contains(cands[:i+1], c) {
			return nil, fmt.Errorf("%w: directory rendezvous candidates %v list node %d twice", ErrLocateConfig, cands, c)
		}
	}
	cfg.Standby = slices.Clone(cfg.Standby)
	return &Directory{cfg: cfg, grid: grid, self: self, pubLog: newPubLog(cfg.Jump, cfg.IdleEvery, cfg.IdleMove),
		cands: cands, hist: make([]candState, len(cands)), targets: []wire.NodeID{cfg.Rendezvous},
		rdv: cfg.Rendezvous}, nil
}

// Config returns the directory's configuration (its Standby is shared:
// do not modify it).
func (d *Directory) Config() DirectoryConfig { return d.cfg }

// Rendezvous returns the candidate this node depends on as of its latest
// Tick: the first its failure detector has not declared dead and that is
// not in its fail-back hold-down (DirectoryConfig.Rendezvous before any
// death); if every live candidate is in its hold-down, the first live one;
// if none is alive, the one it used last.
func (d *Directory) Rendezvous() wire.NodeID { return d.rdv }

// Targets returns where this node's publications and subscription went at
// its latest Tick: Rendezvous, after any earlier candidate that came back
// and is in its hold-down. The slice is the directory's: read it before
// the next Tick.
func (d *Directory) Targets() []wire.NodeID { return d.targets }

// IsRendezvous reports whether this node is the rendezvous in its own view
// (Rendezvous). Any node stores and matches what it receives.
func (d *Directory) IsRendezvous() bool { return d.self == d.rdv }

// Stored returns the number of publications and subscriptions this node
// holds as a rendezvous (0, 0 on a node no one sent any to).
func (d *Directory) Stored() (pubs, subs int) {
	if d.pubs == nil {
		return 0, len(d.subs)
	}
	return d.pubs.Len(), len(d.subs)
}

// indexed makes the indexes (over dims dimensions, at the first message)
// and reports whether they answer queries over dims dimensions.
func (d *Directory) indexed(dims int) bool {
	if d.pubs == nil {
		d.pubs = NewPoints[pubVal](dims, DefaultCell)
		d.subIdx = NewBoxes(dims, DefaultCell)
	}
	return !d.linear && d.pubs.Dims() == dims
}

// expire drops the soft state whose TTL ran out, matches a publication
// whose skip lapsed since the last scan to the holders it skipped (into
// out), and re-buckets the indexes when the subscribed boxes' typical width
// drifted away from the cell size.
func (d *Directory) expire(now time.Duration, out *Out) {
	if d.pubs == nil {
		return
	}
	last := d.lastExpire
	d.lastExpire = now
	d.matches = d.matches[:0]
	for i := int32(d.pubs.Len()) - 1; i >= 0; i-- {
		loc, v := d.pubs.ValueAt(i)
		if v.until <= now {
			id, _, _ := d.pubs.At(int(i))
			d.pubs.Delete(id) // the last point moves to i: already seen
			continue
		}
		if v.skip.n > 0 && v.skip.until > last && v.skip.until <= now {
			// Its skip lapsed (an idle object's publication outlives it):
			// the holders it skipped may have dropped the replica since,
			// and its next publication is up to IdleEvery away. Match it
			// to those whose subscription holds it.
			id, _, _ := d.pubs.At(int(i))
			for _, n := range v.skip.ids[:v.skip.n] {
				if k, ok := d.findSub(n); ok && n != v.node && d.subs[k].until > now && inAny(loc, d.subs[k].boxes, d.pubs.Dims()) {
					d.matches = append(d.matches, matchOut{to: n, pub: wire.Pub{ID: id, Node: v.node, Loc: loc, At: v.at, Vel: v.vel}, until: v.until})
				}
			}
		}
	}
	if len(d.matches) > 0 {
		d.sendMatches(now, d.pubs.Dims(), true, out)
	}
	d.subs = slices.DeleteFunc(d.subs, func(s storedSub) bool {
		if s.until <= now {
			d.subIdx.Remove(s.node)
			return true
		}
		return false
	})
	if c := AutoCell(d.subIdx.MeanWidth(), d.subIdx.Cell()); c != d.subIdx.Cell() {
		d.subIdx.SetCell(c)
		d.pubs.SetCell(c)
	}
}

// choose reads the failure detector's verdicts on the candidates
// (f.Dead), picks the targets and the rendezvous, sets out.Watch, and
// makes this Tick resend everything when a candidate became a target (see
// Directory).
func (d *Directory) choose(f *Frame, out *Out) {
	now := f.Now
	use := -1 // the first live candidate out of its hold-down
	for i, c := range d.cands {
		h := &d.hist[i]
		dead := c != d.self && slices.Contains(f.Dead, c) // a node does not fail over from itself
		switch {
		case dead && !h.dead:
			h.dead = true
			if !h.died {
				h.died, h.hold = true, d.cfg.FailBack
			} else if h.hold < d.cfg.FailBack<<maxFailBackDoublings {
				h.hold *= 2
			}
		case !dead && h.dead:
			h.dead, h.back = false, now
		}
		if use < 0 && !h.dead && (!h.died || now-h.back >= h.hold) {
			use = i
		}
	}
	d.prevTargets, d.targets = d.targets, d.prevTargets[:0]
	watch := d.cands
	if use >= 0 {
		watch = d.cands[:use+1]
		for i := range use {
			if !d.hist[i].dead {
				d.targets = append(d.targets, d.cands[i]) // back, in its hold-down
			}
		}
		d.targets = append(d.targets, d.cands[use])
		d.rdv = d.cands[use]
	} else {
		// Every live candidate is in its hold-down: use them all, the
		// first as the rendezvous; with none alive, the last one used.
		for i, c := range d.cands {
			if !d.hist[i].dead {
				d.targets = append(d.targets, c)
			}
		}
		if len(d.targets) == 0 {
			d.targets = append(d.targets, d.rdv)
		}
		d.rdv = d.targets[0]
	}
	out.Watch = append(out.Watch[:0], watch...)
	for _, t := range d.targets {
		if !slices.Contains(d.prevTargets, t) {
			// A new target holds nothing of this node: everything goes
			// now (publications, idle ones too, and the subscription).
			d.resend, d.nextPub, d.nextSub = true, now, now
			break
		}
	}
}

// Tick publishes the node's primaries (all every PublishPeriod, new ones at
// once), refreshes its subscription when due or when the view left it, and
// expires the soft state this node holds as a rendezvous. It first reads
// f.Dead and sets out.Watch (see Directory): when a candidate becomes a
// target, every publication and the subscription go at once.
func (d *Directory) Tick(f *Frame, out *Out) {
	d.choose(f, out)
	now := f.Now
	all := now >= d.nextPub
	if all {
		d.nextPub = now + d.cfg.PublishPeriod
	}
	if all {
		d.pubLog.prune(f.Primaries)
	}
	// Decide first, publish after: the moving primaries in frames of
	// PublishTTL, then the idle ones in frames of their longer TTL.
	d.pubKind = d.pubKind[:0]
	for i := range f.Primaries {
		p := &f.Primaries[i]
		k := pubNone
		switch {
		case p.New || d.pubLog.jumped(p, f.Dims):
			k = pubMoving
		case all:
			if skip, idle := d.pubLog.idle(p, f.Dims, now); idle && (!skip || d.resend) {
				k = pubIdle
			} else if !idle {
				k = pubMoving
			}
		}
		d.pubKind = append(d.pubKind, k)
	}
	for _, kind := range []uint8{pubMoving, pubIdle} {
		ttl := d.cfg.PublishTTL
		if kind == pubIdle {
			ttl = min(3*d.cfg.IdleEvery, d.cfg.MaxTTL)
		}
		d.msg = wire.Pubs{TTL: ttl, Dims: f.Dims, Grid: d.grid, Pubs: d.msg.Pubs[:0]}
		for i := range f.Primaries {
			p := &f.Primaries[i]
			if d.pubKind[i] != kind {
				continue
			}
			d.pubLog.published(p, now, kind == pubIdle)
			pub := wire.Pub{ID: p.ID, Node: f.Self, Loc: p.Loc, At: now}
			if d.cfg.Reckon && p.HasVel && kind == pubMoving {
				pub.Vel = p.Vel
			}
			d.msg.Pubs = append(d.msg.Pubs, pub)
			if f.Holders != nil {
				// The nodes already holding it need no match (Pub.Skip);
				// the lists are cut from one buffer when the frame is made.
				s0 := len(d.skipBuf)
				d.skipBuf = f.Holders(p.ID, d.skipBuf)
				d.skipBuf = d.skipBuf[:min(len(d.skipBuf), s0+MaxSkip)]
				d.skipEnd = append(d.skipEnd, len(d.skipBuf))
			}
			if len(d.msg.Pubs) == 40 {
				d.flushPubs(out, wire.TypePublish, d.targets)
			}
		}
		d.flushPubs(out, wire.TypePublish, d.targets)
	}
	d.resend = false

	d.want = d.want[:0]
	for _, b := range f.View {
		d.want = append(d.want, b.Expand(d.cfg.Margin, d.cfg.Margin))
	}
	for _, b := range f.Anticipated {
		d.want = append(d.want, b.Expand(d.cfg.Margin, d.cfg.Margin))
	}
	if now >= d.nextSub && (len(d.want) > 0 || len(d.subscribed) > 0) || !d.covered(f.View, f.Dims) || !d.covered(f.Anticipated, f.Dims) {
		if len(d.subscribed) == len(d.want) {
			// A box that still covers its view is kept: the rendezvous
			// matches only the boxes that changed, and a refresh that
			// changes none only extends the subscription.
			for i := range d.want {
				v := f.Anticipated
				j := i - len(f.View)
				if j < 0 {
					v, j = f.View, i
				}
				if !d.subscribed[i].Covers(v[j], f.Dims) {
					d.subscribed[i] = d.want[i]
				}
			}
		} else {
			d.subscribed = append(d.subscribed[:0], d.want...)
		}
		d.indexSubscribed(f.Dims)
		d.nextSub = now + d.cfg.SubscribePeriod
		if len(d.want) == 0 {
			d.nextSub = 1<<63 - 1 // withdrawn: nothing to refresh until the view is back
		}
		// Not in d.sub, which received subscriptions are decoded into: its
		// boxes would alias d.subscribed.
		sub := wire.Subscribe{TTL: d.cfg.SubscribeTTL, Dims: f.Dims, Grid: d.grid, Boxes: d.subscribed}
		for _, to := range d.targets {
			b := out.Outbox.Buf()
			out.Outbox.Commit(to, wire.ClassDiscovery, wire.AppendSubscribe(b, &sub))
		}
	}

	d.expire(now, out) // nothing unless this node received publications or subscriptions
}

// flushPubs sends the publications or matches in d.msg to each node of
// tos, and empties d.msg.
func (d *Directory) flushPubs(out *Out, t wire.Type, tos []wire.NodeID) {
	if len(d.msg.Pubs) == 0 {
		return
	}
	if len(d.skipEnd) == len(d.msg.Pubs) {
		s0 := 0
		for i, e := range d.skipEnd {
			d.msg.Pubs[i].Skip = d.skipBuf[s0:e:e]
			s0 = e
		}
	}
	for _, to := range tos {
		if b := wire.AppendPubs(out.Outbox.Buf(), t, &d.msg); t == wire.TypeMatch && d.cfg.BatchMatches {
			out.Outbox.CommitLater(to, t.Class(), b, d.now)
		} else {
			out.Outbox.Commit(to, t.Class(), b)
		}
	}
	for i := range d.msg.Pubs {
		d.msg.Pubs[i].Skip = nil
	}
	d.msg.Pubs = d.msg.Pubs[:0]
	d.skipBuf, d.skipEnd = d.skipBuf[:0], d.skipEnd[:0]
}

// indexSubscribed puts the subscribed boxes in a grid: a node with many
// primaries has as many view boxes, checked every frame. Up to
// scanSubscribed boxes are scanned instead (a few dozen comparisons, less
// than the grid's cell lookups).
func (d *Directory) indexSubscribed(dims int) {
	if len(d.subscribed) <= scanSubscribed {
		d.subBoxes = nil
		return
	}
	if d.subBoxes == nil || d.subBoxes.Dims() != dims {
		d.subBoxes = NewBoxes(dims, DefaultCell)
	}
	d.subBoxes.Reset()
	for _, b := range d.subscribed {
		d.subBoxes.Add(0, b)
	}
	if c := AutoCell(d.subBoxes.MeanWidth(), d.subBoxes.Cell()); c != d.subBoxes.Cell() {
		d.subBoxes.SetCell(c)
	}
}

// scanSubscribed is the most subscribed boxes covered scans without an
// index.
const scanSubscribed = 32

// covered reports whether every box of view lies inside a subscribed box.
func (d *Directory) covered(view []world.Box, dims int) bool {
	if d.linear || d.subBoxes == nil || d.subBoxes.Dims() != dims {
		return covered(view, d.subscribed, dims)
	}
	for _, v := range view {
		if !d.subBoxes.Covers(v) {
			return false
		}
	}
	return true
}

// covered reports whether every box of view lies inside a box of subs.
func covered(view, subs []world.Box, dims int) bool {
	for _, v := range view {
		ok := false
		for _, s := range subs {
			if s.Covers(v, dims) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Handles reports whether t is a directory message (publish, subscribe,
// match).
func (d *Directory) Handles(t wire.Type) bool { return Handles(t) }

// Step handles a publish or subscribe frame (stored and matched on any
// node, the rendezvous in the senders' view) or a match frame (on a
// subscriber). The frame must have passed Check.
func (d *Directory) Step(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *Out) error {
	return d.step(now, from, t, body, false, out)
}

// StepChecked is Step for the frame that the latest Check validated: the
// caller (a node, which checks every frame of a packet before stepping
// any) knows which frame of the packet that is. StepChecked acts on what
// Check decoded instead of decoding body again, unless a Step since has
// decoded another frame over it.
func (d *Directory) StepChecked(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *Out) error {
	return d.step(now, from, t, body, t == d.held, out)
}

// step is Step; decoded says that in (or sub, for a subscription) already
// holds body decoded.
func (d *Directory) step(now time.Duration, from wire.NodeID, t wire.Type, body []byte, decoded bool, out *Out) error {
	d.held = 0
	d.now = now
	switch t {
	case wire.TypeMatch:
		if !decoded {
			if err := d.in.Decode(body); err != nil {
				return err
			}
		}
		for _, p := range d.in.Pubs {
			if p.Node != d.self {
				out.Found = append(out.Found, Found{ID: p.ID, Node: p.Node, Loc: p.Loc, Vel: p.Vel, Heard: now,
					Until: now + min(d.in.TTL, d.cfg.MaxTTL), At: p.At})
			}
		}
		return nil
	case wire.TypePublish:
		if !decoded {
			if err := d.in.Decode(body); err != nil {
				return err
			}
		}
		until := now + min(d.in.TTL, d.cfg.MaxTTL)
		d.matches = d.matches[:0]
		idx := d.indexed(d.in.Dims)
		for k := range d.in.Pubs {
			p := d.in.Pubs[k] // a copy: Decode reuses the Skip arrays
			p.Node = from     // a node publishes only its own primaries
			// The publication is updated where it is stored: no second
			// lookup, no copy of the value.
			at, ok := d.pubs.pos(p.ID)
			var v *pubVal
			prev := time.Duration(-1) // the previous publication's time, if from the same node
			if ok {
				_, v = d.pubs.ValueAt(at)
				if v.node == from && v.at > p.At && v.until > now {
					continue // overtaken on the way by a newer one
				}
				var told []toldSub
				if v.node == from {
					prev = v.at
					told = pruneTold(v.told, now)
				}
				*v = pubVal{node: from, until: until, at: p.At, vel: p.Vel, told: told}
				d.pubs.move(at, p.Loc)
			} else {
				at = int32(d.pubs.Len())
				d.pubs.Set(p.ID, p.Loc, pubVal{node: from, until: until, at: p.At, vel: p.Vel})
				_, v = d.pubs.ValueAt(at)
			}
			v.skip.set(p.Skip, now+d.cfg.PublishTTL)
			p.Skip = nil // matches do not carry it
			if !idx {
				for _, s := range d.subs {
					if s.node != from && s.until > now && !v.skip.has(s.node, now) && inAny(p.Loc, s.boxes, d.in.Dims) {
						d.match(v, s.node, &p, prev, now, until)
					}
				}
			} else {
				// Only the subscriptions with a box around p: O(nearby boxes).
				d.owners = d.subIdx.Owners(p.Loc, d.owners[:0])
				for _, n := range d.owners {
					if i, ok := d.findSub(n); ok && n != from && d.subs[i].until > now && !v.skip.has(n, now) {
						d.match(v, n, &p, prev, now, until)
					}
				}
			}
		}
		d.sendMatches(now, d.in.Dims, false, out)
		return nil
	case wire.TypeSubscribe:
		if !decoded {
			if err := d.sub.Decode(body); err != nil {
				return err
			}
		}
		idx := d.indexed(d.sub.Dims)
		i, ok := d.findSub(from)
		if len(d.sub.Boxes) == 0 {
			if ok {
				d.subs = slices.Delete(d.subs, i, i+1)
				d.subIdx.Remove(from)
			}
			return nil
		}
		// A refresh of a live subscription only extends it over the boxes
		// it had: the subscriber already received every stored publication
		// in them, when it subscribed or when the publication arrived (or
		// was told one that predicts it, Reckon), or when a skip that kept
		// it from the subscriber lapsed (expire). Only the publications in
		// the new boxes and outside the old ones are matched now.
		live := ok && d.subs[i].until > now
		if live && slices.Equal(d.subs[i].boxes, d.sub.Boxes) {
			d.subs[i].until = now + min(d.sub.TTL, d.cfg.MaxTTL)
			return nil
		}
		if !ok {
			d.subs = slices.Insert(d.subs, i, storedSub{node: from})
		}
		s := &d.subs[i]
		s.until = now + min(d.sub.TTL, d.cfg.MaxTTL)
		d.had = d.had[:0]
		if live {
			d.had = append(d.had, s.boxes...)
		}
		s.boxes = append(s.boxes[:0], d.sub.Boxes...)
		d.subIdx.Replace(from, s.boxes) // moves only the boxes that changed
		d.refs = d.refs[:0]
		if idx {
			dims := d.sub.Dims
			for j := range s.boxes {
				b := &s.boxes[j]
				if slices.Contains(d.had, *b) {
					continue // kept: its publications were matched before
				}
				// The publications in the old boxes are left out here,
				// from the cell lists' copies of their locations; only the
				// old boxes that meet b can hold a point of b.
				near := d.near[:0]
				for k := range d.had {
					if d.had[k].Intersects(*b, dims) {
						near = append(near, d.had[k])
					}
				}
				d.near = near
				d.pubs.inBox(b, func(id world.ObjectID, i int32, loc *world.Point) {
					if !inAny(*loc, near, dims) {
						d.refs = append(d.refs, PointRef{id, i})
					}
				})
			}
			slices.SortFunc(d.refs, cmpPointRef)
			if len(s.boxes) > 1 {
				d.refs = slices.CompactFunc(d.refs, func(a, b PointRef) bool { return a.ID == b.ID })
			}
		} else {
			for j := range int32(d.pubs.Len()) {
				if loc, _ := d.pubs.ValueAt(j); inAny(loc, s.boxes, d.sub.Dims) {
					id, _, _ := d.pubs.At(int(j))
					d.refs = append(d.refs, PointRef{id, j})
				}
			}
			slices.SortFunc(d.refs, cmpPointRef)
		}
		d.matches = d.matches[:0]
		for _, r := range d.refs {
			if loc, p := d.pubs.ValueAt(r.I); p.node != from && p.until > now && !p.skip.has(from, now) &&
				(idx || !inAny(loc, d.had, d.sub.Dims)) {
				d.matches = append(d.matches, matchOut{to: from, ref: r.I + 1, pub: wire.Pub{ID: r.ID, Node: p.node, Loc: loc, At: p.at, Vel: p.vel}, until: p.until})
			}
		}
		d.sendMatches(now, d.sub.Dims, true, out)
		return nil
	}
	return fmt.Errorf("%w: %v frame is not a directory message", wire.ErrMalformed, t)
}

// Check validates a directory frame (what locate.Check does) and keeps
// the decoded message for StepChecked of the same frame, which then does
// not decode it again. A node calls Check on every frame of a packet
// before stepping any, and StepChecked for the last frame it checked.
func (d *Directory) Check(t wire.Type, body []byte) error {
	d.held = 0
	var err error
	switch t {
	case wire.TypePublish, wire.TypeMatch:
		err = d.in.Decode(body)
	case wire.TypeSubscribe:
		err = d.sub.Decode(body)
	default:
		return nil
	}
	if err == nil {
		d.held = t
	}
	return err
}

// findSub returns where node's subscription is or would be in d.subs, and
// whether it is there (slices.BinarySearchFunc written out: this runs for
// every publication's every holder, and the comparator call copied a
// storedSub each step).
func (d *Directory) findSub(node wire.NodeID) (int, bool) {
	i, j := 0, len(d.subs)
	for i < j {
		m := int(uint(i+j) >> 1)
		if d.subs[m].node < node {
			i = m + 1
		} else {
			j = m
		}
	}
	return i, i < len(d.subs) && d.subs[i].node == node
}

// sendMatches sends the queued matches, grouped by subscriber, and the
// long-lived (idle) publications apart from the others; each frame's TTL
// is the shortest remaining lifetime among its publications. With record
// (and Reckon), the publications sent are recorded as told for that TTL
// (the publication path records them as it queues them).
func (d *Directory) sendMatches(now time.Duration, dims int, record bool, out *Out) {
	order := matchOrder(d.matches, now, d.cfg.PublishTTL, d.order[:0])
	d.order = order
	for i := 0; i < len(order); {
		to, long := wire.NodeID(order[i]>>32), order[i]&matchLong
		d.msg = wire.Pubs{Dims: dims, Grid: d.grid, Pubs: d.msg.Pubs[:0], TTL: 1<<63 - 1}
		for ; i < len(order) && wire.NodeID(order[i]>>32) == to && order[i]&matchLong == long && len(d.msg.Pubs) < 40; i++ {
			m := &d.matches[uint32(order[i]&^matchLong)]
			d.msg.Pubs = append(d.msg.Pubs, m.pub)
			d.msg.TTL = min(d.msg.TTL, m.until-now)
		}
		if record && d.cfg.Reckon {
			until := now + min(d.msg.TTL, d.cfg.MaxTTL)
			for j := range d.msg.Pubs {
				p := &d.msg.Pubs[j]
				if r := d.matches[uint32(order[i-len(d.msg.Pubs)+j]&^matchLong)].ref; r > 0 && !d.byID {
					_, v := d.pubs.ValueAt(r - 1)
					d.tell(v, to, p, until)
				} else if _, v, ok := d.pubs.Value(p.ID); ok {
					d.tell(v, to, p, until)
				}
			}
		}
		d.to[0] = to
		d.flushPubs(out, wire.TypeMatch, d.to[:])
	}
}

// match queues publication p of v for subscriber n unless it can be
// spared, and records it as told: spare, then tell, with one walk of the
// told records.
func (d *Directory) match(v *pubVal, n wire.NodeID, p *wire.Pub, prev, now, until time.Duration) {
	if !d.cfg.Reckon {
		d.matches = append(d.matches, matchOut{to: n, pub: *p, until: until})
		return
	}
	k := -1
	for i := range v.told {
		if v.told[i].to == n {
			k = i
			break
		}
	}
	if k >= 0 && prev >= 0 {
		period := d.cfg.PublishPeriod
		if d.in.TTL > d.cfg.PublishTTL {
			period = max(period, d.cfg.IdleEvery) // an idle publication: the next is due then
		}
		if r := &v.told[k]; r.last == prev && r.predicts(p.Node, &p.Loc, &p.Vel, p.At, now, period, d.in.Dims) {
			r.last = p.At // spared
			return
		}
	}
	d.matches = append(d.matches, matchOut{to: n, pub: *p, until: until})
	r := toldRec{node: p.Node, loc: p.Loc, vel: p.Vel, at: p.At, until: until, last: p.At}
	if k >= 0 {
		v.told[k].toldRec = r
	} else {
		v.told = append(v.told, toldSub{to: n, toldRec: r})
	}
}

// spare reports whether subscriber n need not be sent publication p of v
// (Reckon): it was told or spared p's predecessor, published at prev, and
// the publication it was last told predicts p. A spared publication
// becomes the latest the subscriber is covered for.
func (d *Directory) spare(v *pubVal, n wire.NodeID, p *wire.Pub, prev, now time.Duration) bool {
	if !d.cfg.Reckon || prev < 0 {
		return false
	}
	period := d.cfg.PublishPeriod
	if d.in.TTL > d.cfg.PublishTTL {
		period = max(period, d.cfg.IdleEvery) // an idle publication: the next is due then
	}
	for i := range v.told {
		if r := &v.told[i]; r.to == n {
			if r.last != prev || !r.predicts(p.Node, &p.Loc, &p.Vel, p.At, now, period, d.in.Dims) {
				return false
			}
			r.last = p.At
			return true
		}
	}
	return false
}

// tell records p as sent to subscriber n, which keeps it until until.
func (d *Directory) tell(v *pubVal, n wire.NodeID, p *wire.Pub, until time.Duration) {
	if !d.cfg.Reckon {
		return
	}
	r := toldRec{node: p.Node, loc: p.Loc, vel: p.Vel, at: p.At, until: until, last: p.At}
	for i := range v.told {
		if v.told[i].to == n {
			v.told[i].toldRec = r
			return
		}
	}
	v.told = append(v.told, toldSub{to: n, toldRec: r})
}

// pruneTold drops, in place, the records subscribers no longer keep.
func pruneTold(told []toldSub, now time.Duration) []toldSub {
	w := 0
	for i := range told {
		if told[i].until > now {
			if w != i {
				told[w] = told[i]
			}
			w++
		}
	}
	clear(told[w:])
	return told[:w]
}

// matchLong marks, in a matchOrder key, a match whose publication lives
// longer than PublishTTL (an idle one): those travel in frames apart.
const matchLong = 1 << 31

// matchOrder appends to order the matches' (subscriber, long-lived,
// index) triples as integers, sorted: by subscriber, the short-lived
// first, in queued order within those. Sorting plain integers is that
// stable sort without a comparator call per comparison. An index takes 31
// bits: far more matches than memory holds.
func matchOrder(matches []matchOut, now, ttl time.Duration, order []uint64) []uint64 {
	for i := range matches {
		k := uint64(matches[i].to)<<32 | uint64(i)
		if matches[i].until-now > ttl {
			k |= matchLong
		}
		order = append(order, k)
	}
	slices.Sort(order)
	return order
}

// SetLinear makes the rendezvous match by scanning every publication and
// subscription instead of using its indexes (same results; for tests and
// benchmarks that measure the indexes against the scan).
func (d *Directory) SetLinear(on bool) { d.linear = on }
