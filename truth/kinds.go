package truth

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// KindView is the view measures of one object kind (a schema of the game,
// such as the model game's arena.bot, arena.missile and arena.item), over
// every report of every node's view, as the ground-truth observer sees
// them. A node's own objects are left out, as in the Recorder's
// measures.
type KindView struct {
	// Kind is the schema's name.
	Kind string
	// Interesting is the (report, object) pairs with an object of this
	// kind in the node's view.
	Interesting uint64
	// Missing is, for each grace period (TrackKinds), the pairs whose
	// object the node did not hold although it had been in the view for
	// at least the grace period, over Interesting (Colyseus Table 1:
	// "missing missiles").
	Missing []Missing
	// Entries counts objects entering a node's view (the first report that
	// lists them after one that did not, or the node's first report);
	// HeldOnEntry those the node already held a replica of then (fetched
	// before they entered: proactive replication or prefetch).
	Entries, HeldOnEntry uint64
	// Moving says whether the kind counts among the moving objects
	// (TrackKinds' static kinds do not; MovingView).
	Moving bool
	// Updates counts updates to objects in a node's view: each entry, and
	// each later report at which the object's primary has a newer version
	// than at the node's previous report. Direct counts the latter: updates
	// to objects that were already in the view at the node's previous
	// report, which the primary sends straight to the replica with no
	// discovery before it (Colyseus Fig. 7(b)).
	Updates, Direct uint64
	// Found counts objects that entered a node's view missing (after the
	// warm-up) and were held later while still in it; Abandoned those
	// that left the view (or were deleted) missing. They split the
	// Recorder's discoveries and abandoned discoveries by kind.
	Found, Abandoned uint64
	// Floor is, for each grace period, the pairs (of Interesting) whose
	// object no protocol could have brought to the node yet: it was
	// created less than the shortest delay from its creating node to the
	// viewer ago (TrackFloor). Every protocol misses at least these,
	// short of predicting an object's creation. FloorAbandoned counts
	// the objects that left a node's view (after the warm-up) before any
	// protocol could have brought them: every protocol abandons at least
	// these. Both are zero unless TrackFloor was called.
	Floor          []Missing
	FloorAbandoned uint64
}

// AbandonedShare is Abandoned over Abandoned plus Found, the discoveries
// due that ended (0 with none), as the Recorder's share.
func (k KindView) AbandonedShare() float64 { return ratio(k.Abandoned, k.Abandoned+k.Found) }

// DirectShare is Direct over Updates (0 with no update).
func (k KindView) DirectShare() float64 { return ratio(k.Direct, k.Updates) }

// HeldOnEntryShare is HeldOnEntry over Entries (0 with no entry).
func (k KindView) HeldOnEntryShare() float64 { return ratio(k.HeldOnEntry, k.Entries) }

// Missing is one kind's missing (report, object) pairs at one grace
// period.
type Missing struct {
	// GraceMs is the grace period in milliseconds.
	GraceMs float64
	// Fraction is Missing over the kind's interesting pairs.
	Fraction float64
	// Missing is the number of pairs counted missing.
	Missing uint64
}

// MissingAt returns the missing fraction at grace period g (an index into
// the grace periods), 0 if out of range.
func (k KindView) MissingAt(g int) float64 {
	if g < 0 || g >= len(k.Missing) {
		return 0
	}
	return k.Missing[g].Fraction
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// kindTracker keeps the per-kind view measures for the ground-truth
// observer (Observer.report calls see for every object in a node's view,
// then done). It costs one map operation per (report, object) pair, like
// the simulator's recorder, so the observer only keeps it when asked
// (TrackKinds).
type kindTracker struct {
	grace  []time.Duration
	warmup time.Duration // reports before it are tracked, not counted (as the recorder does)
	res    time.Duration // ages are rounded to a multiple of it (SetResolution; 0: exact)
	names  []string
	counts []kindCount // by Kind - 1
	nodes  []kindNode  // by node index (grown on a node's first report)

	// The moving objects' measures (MovingView): the kinds not static.
	static       []bool // by Kind - 1
	moving       kindCount
	repTotal     uint64   // the current report's moving objects
	repMissing   []uint64 // and of them missing, by grace period
	repCounted   bool     // the current report counts (after the warm-up)
	movingFrames uint64   // counted reports with a moving object in view
	movingFrac   []float64

	// episode receives the missing stretches (TraceEpisodes; nil: none
	// traced).
	episode func(Episode)
	// delay is the shortest delay from an object's creating node to a
	// viewer (TrackFloor; nil: no floor).
	delay func(from, to wire.NodeID) time.Duration
	// The floor over all objects and over the moving ones (FloorView):
	// the current report's pairs and floor pairs, and the sums over
	// counted reports of each report's floor share.
	repAll                 uint64
	repAllFloor, repMovFlr []uint64
	allFrames, allFloor    uint64
	allFloorFrac, movFlrFr []float64
}

type kindCount struct {
	interesting, entries, heldOnEntry, updates, direct uint64
	found, abandoned                                   uint64
	missing                                            []uint64 // by grace period
	floor                                              []uint64 // by grace period (TrackFloor)
	floorAbandoned                                     uint64
}

type kindNode struct {
	gen   uint32
	pairs map[world.ObjectID]kindPair
}

// kindPair is one object in one node's view.
type kindPair struct {
	entered time.Duration
	// reach is when the object could first have reached the node
	// (TrackFloor; negative: at once, or no floor).
	reach   time.Duration
	version uint64
	gen     uint32
	kind    world.Kind
	found   bool // held since it entered, or on entry
	reached bool // reachable at some report while in the view
	// missFrom is the first report of the current stretch the object is
	// missing (negative: held), and lost whether it had been held before
	// it (TraceEpisodes).
	missFrom time.Duration
	lost     bool
}

// Episode is one stretch of a node's reports in which an object in its
// view was missing (TraceEpisodes): from the first report it was missing
// at to the report it was held again, or left the view (or was deleted).
type Episode struct {
	Node    wire.NodeID    // the viewer
	Object  world.ObjectID // its creator is node.Home(Object)
	Kind    string         // the object's kind (schema name)
	Entered time.Duration  // when the object entered the view
	// From is the first report the object was missing at; To the report
	// that ended the stretch (held again, or the view's first report
	// without it).
	From, To time.Duration
	// Held says the stretch ended with the object held; otherwise it left
	// the view (or was deleted) missing.
	Held bool
	// Lost says the node had held the object earlier in its stay in the
	// view (a replica lost); otherwise the stretch is a discovery, from
	// the object's entry.
	Lost bool
	// Reach is when the object could first have reached the node
	// (TrackFloor; negative: no bound known).
	Reach time.Duration
}

// see records that object id of kind, whose primary is at version, is in
// node i's view at now, held or not; the object was created at created
// (negative: unknown), from which its reach at the node counts (the
// floor, when on).
func (k *kindTracker) see(i int, kind world.Kind, id world.ObjectID, version uint64, held bool, now, created time.Duration) {
	if kind < 1 || int(kind) > len(k.counts) {
		return
	}
	// Reports before the warm-up track entries but count nothing, as the
	// recorder does.
	counted := now >= k.warmup
	k.repCounted = counted
	c := &k.counts[kind-1]
	moving := !k.static[kind-1]
	n := k.node(i)
	p, ok := n.pairs[id]
	if !ok {
		reach := time.Duration(-1) // no bound
		if k.delay != nil && created >= 0 {
			reach = created + k.delay(node.Home(id), wire.NodeID(i+1))
		}
		p = kindPair{entered: now, reach: reach, version: version, kind: kind, found: held, missFrom: -1}
		if counted {
			c.entries++
			c.updates++
			if held {
				c.heldOnEntry++
			}
		}
	} else if version > p.version {
		if counted {
			c.updates++
			c.direct++
		}
		p.version = version
	}
	if k.episode != nil {
		switch {
		case !held && p.missFrom < 0:
			p.missFrom, p.lost = now, p.found
		case held && p.missFrom >= 0:
			k.emit(i, id, &p, now, true)
		}
	}
	if held && !p.found {
		p.found = true
		if p.entered >= k.warmup {
			c.found++
		}
	}
	unreachable := now < p.reach
	p.reached = p.reached || !unreachable
	p.gen = n.gen
	n.pairs[id] = p
	if !counted {
		return
	}
	c.interesting++
	k.repAll++
	if moving {
		k.moving.interesting++
		k.repTotal++
	}
	if !held {
		for g, grace := range k.grace {
			if k.age(p.entered, now) >= grace {
				c.missing[g]++
				if moving {
					k.moving.missing[g]++
					k.repMissing[g]++
				}
			}
		}
	}
	if unreachable {
		for g, grace := range k.grace {
			if k.age(p.entered, now) >= grace {
				c.floor[g]++
				k.repAllFloor[g]++
				if moving {
					k.moving.floor[g]++
					k.repMovFlr[g]++
				}
			}
		}
	}
}

// emit reports pair p's missing stretch in node i's view of object id,
// ended at now (held again or not), and closes it.
func (k *kindTracker) emit(i int, id world.ObjectID, p *kindPair, now time.Duration, held bool) {
	k.episode(Episode{Node: wire.NodeID(i + 1), Object: id, Kind: k.names[p.kind-1], Entered: p.entered,
		From: p.missFrom, To: now, Held: held, Lost: p.lost, Reach: p.reach})
	p.missFrom = -1
}

// node returns node i's pairs, growing the per-node state to hold it.
func (k *kindTracker) node(i int) *kindNode {
	for len(k.nodes) <= i {
		k.nodes = append(k.nodes, kindNode{gen: 1, pairs: map[world.ObjectID]kindPair{}})
	}
	return &k.nodes[i]
}

// done ends node i's report at now: objects not seen in it left the
// view.
func (k *kindTracker) done(i int, now time.Duration) {
	if k.repCounted && k.repTotal > 0 {
		k.movingFrames++
		for g := range k.grace {
			k.movingFrac[g] += float64(k.repMissing[g]) / float64(k.repTotal)
			k.movFlrFr[g] += float64(k.repMovFlr[g]) / float64(k.repTotal)
		}
	}
	if k.repCounted && k.repAll > 0 {
		k.allFrames++
		for g := range k.grace {
			k.allFloorFrac[g] += float64(k.repAllFloor[g]) / float64(k.repAll)
		}
	}
	k.repTotal, k.repAll, k.repCounted = 0, 0, false
	clear(k.repMissing)
	clear(k.repAllFloor)
	clear(k.repMovFlr)
	n := k.node(i)
	for id, p := range n.pairs {
		if p.gen != n.gen {
			if !p.found && p.entered >= k.warmup {
				k.counts[p.kind-1].abandoned++
			}
			if !p.reached && p.entered >= k.warmup {
				k.counts[p.kind-1].floorAbandoned++
			}
			if k.episode != nil && p.missFrom >= 0 {
				k.emit(i, id, &p, now, false)
			}
			delete(n.pairs, id)
		}
	}
	n.gen++
}

// views returns the measures, by kind.
func (k *kindTracker) views() []KindView {
	out := make([]KindView, len(k.counts))
	for j, c := range k.counts {
		v := KindView{Kind: k.names[j], Interesting: c.interesting, Entries: c.entries, HeldOnEntry: c.heldOnEntry,
			Updates: c.updates, Direct: c.direct, Found: c.found, Abandoned: c.abandoned, Moving: !k.static[j],
			FloorAbandoned: c.floorAbandoned}
		for g, grace := range k.grace {
			v.Missing = append(v.Missing, Missing{GraceMs: float64(grace) / float64(time.Millisecond),
				Fraction: ratio(c.missing[g], c.interesting), Missing: c.missing[g]})
			v.Floor = append(v.Floor, Missing{GraceMs: float64(grace) / float64(time.Millisecond),
				Fraction: ratio(c.floor[g], c.interesting), Missing: c.floor[g]})
		}
		out[j] = v
	}
	return out
}

// age is the time from entered to now, rounded to the resolution.
func (k *kindTracker) age(entered, now time.Duration) time.Duration {
	a := now - entered
	if k.res > 0 {
		a = (a + k.res/2) / k.res * k.res
	}
	return a
}

// newKindTracker returns a tracker of the kinds names (Kind k is
// names[k−1]; static[k−1] true for a kind whose objects stay where they
// are) at the grace periods, counting from warmup.
func newKindTracker(names []string, static []bool, grace []time.Duration, warmup time.Duration) *kindTracker {
	k := &kindTracker{grace: append([]time.Duration(nil), grace...), warmup: max(warmup, 0), names: append([]string(nil), names...),
		static: make([]bool, len(names)),
		moving: kindCount{missing: make([]uint64, len(grace)), floor: make([]uint64, len(grace))}, repMissing: make([]uint64, len(grace)), movingFrac: make([]float64, len(grace)),
		repAllFloor: make([]uint64, len(grace)), repMovFlr: make([]uint64, len(grace)), allFloorFrac: make([]float64, len(grace)), movFlrFr: make([]float64, len(grace))}
	copy(k.static, static)
	for range names {
		k.counts = append(k.counts, kindCount{missing: make([]uint64, len(grace)), floor: make([]uint64, len(grace))})
	}
	return k
}

// TrackKinds turns on the per-kind view measures (KindViews) from now
// on, for the kinds of a game's registry (names[k−1] is the name of
// world.Kind k), which of them are static (static[k−1]: objects that stay
// where they are, such as the model game's items; the others count among
// the moving objects, MovingView; nil: none), the grace periods of its
// missing replicas, and a warm-up before which reports count nothing (as
// the Recorder's). It costs about as much again as the Recorder's own
// missing-replica accounting. It rejects a negative grace period, more
// static flags than kinds, and a second call.
func (t *Observer) TrackKinds(names []string, static []bool, grace []time.Duration, warmup time.Duration) error {
	if len(static) > len(names) {
		return fmt.Errorf("truth: %d static flags for %d kinds", len(static), len(names))
	}
	if t.kinds != nil {
		return fmt.Errorf("truth: kind measures already on")
	}
	for _, g := range grace {
		if g < 0 {
			return fmt.Errorf("truth: grace period %v: want ≥ 0", g)
		}
	}
	t.kinds = newKindTracker(names, static, grace, warmup)
	t.kinds.res = t.res
	return nil
}

// SetResolution makes the per-kind measures (TrackKinds) round the time an
// object has been in a view to the nearest multiple of d before comparing
// it with each grace period, as sim.Recorder.SetResolution does for the
// Recorder's: a live cluster's reports come a frame apart give or take its
// nodes' schedulers. d ≤ 0 (the default) measures ages exactly.
func (t *Observer) SetResolution(d time.Duration) {
	t.res = max(d, 0)
	if t.kinds != nil {
		t.kinds.res = t.res
	}
}

// KindViews returns the per-kind view measures so far, by kind, or nil
// unless TrackKinds was called.
func (t *Observer) KindViews() []KindView {
	if t.kinds == nil {
		return nil
	}
	return t.kinds.views()
}

// MovingView is the missing replicas of the moving objects alone: the
// objects of the kinds TrackKinds was not told are static, over every
// report of every node's view after the warm-up, at each grace period.
type MovingView struct {
	// Interesting is the (report, object) pairs with a moving object in
	// the node's view.
	Interesting uint64
	// Missing is, for each grace period, the pairs missing over
	// Interesting; FrameMean the mean over reports with a moving object
	// in view of each report's missing share, by grace period.
	Missing   []Missing
	FrameMean []float64
}

// MovingView returns the moving objects' missing replicas so far (the
// zero MovingView unless TrackKinds was called).
func (t *Observer) MovingView() MovingView {
	k := t.kinds
	if k == nil {
		return MovingView{}
	}
	v := MovingView{Interesting: k.moving.interesting}
	for g, grace := range k.grace {
		v.Missing = append(v.Missing, Missing{GraceMs: float64(grace) / float64(time.Millisecond),
			Fraction: ratio(k.moving.missing[g], k.moving.interesting), Missing: k.moving.missing[g]})
		f := 0.0
		if k.movingFrames > 0 {
			f = k.movingFrac[g] / float64(k.movingFrames)
		}
		v.FrameMean = append(v.FrameMean, f)
	}
	return v
}

// FloorView is the floor of the view measures (TrackFloor): the (report,
// object) pairs whose object no protocol could have delivered to the
// node yet, over all objects and over the moving ones, in the shape of
// the missing replicas, and the objects that left a view before any
// protocol could have delivered them.
type FloorView struct {
	// On says whether the floor is measured (TrackFloor was called).
	On bool
	// All and Moving are, for each grace period, the floor's pairs over
	// all the pairs in view (of all objects, of the moving ones);
	// AllFrameMean and MovingFrameMean the mean over reports of each
	// report's share, as MovingView.FrameMean.
	All, Moving                   []Missing
	AllFrameMean, MovingFrameMean []float64
	// Abandoned is the sum of the kinds' FloorAbandoned.
	Abandoned uint64
}

// FloorView returns the floor so far (the zero FloorView unless
// TrackFloor was called).
func (t *Observer) FloorView() FloorView {
	k := t.kinds
	if k == nil || k.delay == nil {
		return FloorView{}
	}
	v := FloorView{On: true}
	var all uint64
	floor := make([]uint64, len(k.grace))
	for _, c := range k.counts {
		all += c.interesting
		for g := range k.grace {
			floor[g] += c.floor[g]
		}
		v.Abandoned += c.floorAbandoned
	}
	mean := func(sum float64, n uint64) float64 {
		if n == 0 {
			return 0
		}
		return sum / float64(n)
	}
	for g, grace := range k.grace {
		ms := float64(grace) / float64(time.Millisecond)
		v.All = append(v.All, Missing{GraceMs: ms, Fraction: ratio(floor[g], all), Missing: floor[g]})
		v.Moving = append(v.Moving, Missing{GraceMs: ms, Fraction: ratio(k.moving.floor[g], k.moving.interesting), Missing: k.moving.floor[g]})
		v.AllFrameMean = append(v.AllFrameMean, mean(k.allFloorFrac[g], k.allFrames))
		v.MovingFrameMean = append(v.MovingFrameMean, mean(k.movFlrFr[g], k.movingFrames))
	}
	return v
}

// TraceEpisodes has every missing stretch of an object in a node's view
// (Episode) given to fn as it ends, from now on, warm-up included: where
// the missing replicas of KindViews come from, pair by pair. A stretch
// still open when a node goes down (Down) or the run ends is not given.
// It rejects a call before TrackKinds and a nil fn.
func (t *Observer) TraceEpisodes(fn func(Episode)) error {
	switch {
	case fn == nil:
		return fmt.Errorf("truth: episodes traced to no function")
	case t.kinds == nil:
		return fmt.Errorf("truth: episodes before the kind measures (TrackKinds)")
	}
	t.kinds.episode = fn
	return nil
}

// TrackFloor turns on the floor of the kind measures (KindView.Floor and
// FloorAbandoned, FloorView): what no protocol could have
// delivered yet. delay(from, to) must give the shortest time in which
// anything sent by node from can reach node to (over any path, relays
// included: the shortest path over the network's base delays, before
// any jitter); an object counts as reachable at a viewer delay(creator,
// viewer) after its creation (the commit time of its first version; an
// object whose first version the observer never saw is reachable at
// once). The creator is the object ID's home (node.Home). Call it
// after TrackKinds and before the first report; it rejects a nil delay,
// a call before TrackKinds, and a second call.
func (t *Observer) TrackFloor(delay func(from, to wire.NodeID) time.Duration) error {
	switch {
	case delay == nil:
		return fmt.Errorf("truth: floor with no delay function")
	case t.kinds == nil:
		return fmt.Errorf("truth: floor before the kind measures (TrackKinds)")
	case t.kinds.delay != nil:
		return fmt.Errorf("truth: floor already on")
	}
	t.kinds.delay = delay
	return nil
}
