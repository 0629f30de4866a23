package sim

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
)

// Recorder computes the view-consistency measures of ARCHITECTURE.md from
// what the integrator reports each frame, and keeps the integrator's other
// samples and counters:
//
//   - missing replicas: View reports, for one node at one instant, the
//     objects in its interest (ground truth) and whether it holds a replica
//     or the primary of each. An object is missing with grace g at a report
//     if the node does not hold it and it entered the node's interest at
//     least g ago; objects inside their grace period count as present. The
//     recorder gives the ratio of missing to interesting objects summed over
//     all reports (Colyseus §6.3.2, Fig. 11) and the mean of the per-report
//     fractions (ARCHITECTURE.md's "averaged over frames"), for every grace
//     period of the Config.
//   - discovery latency: for an object missing when it entered the
//     interest, the time from entering to the first report in which the node
//     holds it. Resolution is the reporting period (one frame). Objects
//     already held on entry (prefetched, attached) are counted apart, as are
//     objects that left the interest before they were discovered.
//   - staleness and frame time: samples the integrator measures itself.
//   - counters: any named totals the integrator adds.
//
// An object's interest entry time is the first report that lists it after a
// report that did not (or the node's first report). A node's reports must
// come in non-decreasing time.
type Recorder struct {
	grace  []time.Duration
	warmup int64 // reports before it do not count (Config.Warmup)
	res    int64 // ages are rounded to a multiple of it (SetResolution; 0: exact)
	sim    *Sim  // owner, when created by New: checks nodes are known and up

	views   map[wire.NodeID]*view
	scratch []uint64 // a report's IDs, sorted
	held    []bool   // their held flags, in that order
	merged  []pairOf // a report's pairs, before they go back to its view

	frames     uint64 // reports
	total      uint64 // sum of interest sizes
	missing    [maxGrace]uint64
	fracFrames uint64 // reports with a non-empty interest
	fracSum    [maxGrace]float64

	discovery   []time.Duration
	heldOnEntry uint64
	abandoned   uint64 // left the interest (or the node went down) before discovery
	lost        uint64 // held, then not held while still in the interest

	staleness   []time.Duration
	frameTime   []time.Duration
	frameByNode map[wire.NodeID]frameStats
	counters    map[string]int64

	secs []viewSec
}

// viewSec is the view measures of one second of virtual time, all nodes.
type viewSec struct {
	frames, total uint64
	missing       [maxGrace]uint64
	discoveries   uint64
}

// view is one node's interest state.
type view struct {
	last       int64
	pairs      []pairOf // the objects in the interest, by ID
	frames     uint64
	total      uint64
	missing    [maxGrace]uint64
	discovered uint64
}

// pair is the state of one (node, object) pair while the object is in the
// node's interest.
type pair struct {
	entered    int64
	held       bool
	discovered bool
}

// pairOf is the pair of one object, in a view's list.
type pairOf struct {
	id uint64
	pair
}

// NewRecorder returns a stand-alone recorder (for analysing traces outside
// a simulator) with the given grace periods (ascending, distinct, ≥ 0, at
// most 8; nil for the default 0, 100, 400 ms). A simulator's own recorder is
// Sim.Recorder.
func NewRecorder(grace []time.Duration) (*Recorder, error) {
	c := DefaultConfig()
	c.Grace = grace
	c, err := c.validate()
	if err != nil {
		return nil, err
	}
	return newRecorder(c.Grace, 0, nil), nil
}

func newRecorder(grace []time.Duration, warmup time.Duration, s *Sim) *Recorder {
	return &Recorder{grace: grace, warmup: int64(warmup), sim: s, views: map[wire.NodeID]*view{}, counters: map[string]int64{},
		frameByNode: map[wire.NodeID]frameStats{}}
}

// SetWarmup makes reports before time d not count in the view measures,
// as Config.Warmup does for a simulator's recorder (for a standalone
// recorder fed from elsewhere, such as a live cluster's snapshots). It
// must be called before the first report; d < 0 is taken as 0.
func (r *Recorder) SetWarmup(d time.Duration) { r.warmup = int64(max(0, d)) }

// SetResolution makes the recorder round the ages it measures (how long
// an object has been in a view, compared with each grace period, and the
// discovery latencies) to the nearest multiple of d, the period at which
// the reports are taken. A simulator's reports are exactly a frame apart,
// so its ages are multiples of the frame already; a live cluster's
// reports are taken at its nodes' frames, which run a frame apart give or
// take the scheduler (100 ms ± a few ms: half of them a little under), so
// without it an object two consecutive reports find missing would count
// at a grace of one frame only when the second frame ran late. It must be
// called before the first report; d ≤ 0 (the default) measures ages
// exactly.
func (r *Recorder) SetResolution(d time.Duration) { r.res = int64(max(0, d)) }

// age is the time from entered to t, rounded to the resolution.
func (r *Recorder) age(entered, t int64) time.Duration {
	a := t - entered
	if r.res > 0 {
		a = (a + r.res/2) / r.res * r.res
	}
	return time.Duration(a)
}

// Grace returns the grace periods.
func (r *Recorder) Grace() []time.Duration { return slices.Clone(r.grace) }

// View reports node's view at virtual time now: interest lists the IDs of
// the objects in its interest (ground truth, computed by the integrator),
// and held[i] says whether the node holds a replica or the primary of
// interest[i]. It rejects mismatched lengths, a duplicate ID, a negative
// time or one before the node's previous report, and (for a simulator's
// recorder) a node that is unknown or down or a time after the simulator's
// clock, changing nothing. The slices
// are not retained.
func (r *Recorder) View(node wire.NodeID, now time.Duration, interest []uint64, held []bool) error {
	if len(interest) != len(held) {
		return fmt.Errorf("%w: view of node %d: %d interest IDs but %d held flags", ErrBadArgument, node, len(interest), len(held))
	}
	if now < 0 {
		return fmt.Errorf("%w: view of node %d at %v", ErrTime, node, now)
	}
	if r.sim != nil {
		i, err := r.sim.node(node)
		if err != nil {
			return fmt.Errorf("view: %w", err)
		}
		if st := r.sim.nodes[i].state; st != nodeUp {
			return fmt.Errorf("view: %w: node %d is %s", ErrNodeDown, node, st)
		}
		if int64(now) > r.sim.now {
			return fmt.Errorf("%w: view of node %d at %v, after the simulator's clock (%v)", ErrTime, node, now, r.sim.Now())
		}
	}
	v := r.views[node]
	if v != nil && int64(now) < v.last {
		return fmt.Errorf("%w: view of node %d at %v, before its previous view at %v", ErrTime, node, now, time.Duration(v.last))
	}
	if dup, ok := r.byID(interest, held); !ok {
		return fmt.Errorf("%w: view of node %d lists object %d twice", ErrBadArgument, node, dup)
	}
	if v == nil {
		v = &view{}
		r.views[node] = v
	}
	t := int64(now)
	counted := t >= r.warmup
	v.last = t
	sec := r.sec(t)
	var miss [maxGrace]uint64
	// The merge goes to the recorder's scratch (in the caches), then back
	// over the node's pairs (just read): a node keeps one list, not two.
	old, out, j := v.pairs, r.merged[:0], 0
	for k, id := range r.scratch {
		for ; j < len(old) && old[j].id < id; j++ {
			if !old[j].discovered && old[j].entered >= r.warmup { // left the interest before discovery
				r.abandoned++
			}
		}
		h := r.held[k]
		var p pair
		if j < len(old) && old[j].id == id {
			p = old[j].pair
			j++
			if !p.discovered && h {
				p.discovered = true
				if p.entered >= r.warmup {
					r.discovery = append(r.discovery, r.age(p.entered, t))
					v.discovered++
				}
				sec.discoveries++
			} else if p.held && !h && counted {
				r.lost++
			}
		} else {
			p = pair{entered: t, discovered: h}
			if h && counted {
				r.heldOnEntry++
			}
		}
		p.held = h
		out = append(out, pairOf{id, p})
		if !h {
			age := r.age(p.entered, t)
			for g, grace := range r.grace {
				if age >= grace {
					miss[g]++
				}
			}
		}
	}
	for ; j < len(old); j++ {
		if !old[j].discovered && old[j].entered >= r.warmup {
			r.abandoned++
		}
	}
	v.pairs, r.merged = append(old[:0], out...), out
	n := uint64(len(interest))
	sec.frames++
	sec.total += n
	for g := range r.grace {
		sec.missing[g] += miss[g]
	}
	if !counted {
		return nil
	}
	r.frames++
	r.total += n
	v.frames++
	v.total += n
	for g := range r.grace {
		r.missing[g] += miss[g]
		v.missing[g] += miss[g]
		if n > 0 {
			r.fracSum[g] += float64(miss[g]) / float64(n)
		}
	}
	if n > 0 {
		r.fracFrames++
	}
	return nil
}

// byID puts a report in ID order, in scratch, with its held flags in held:
// it is merged with the node's previous one (both sorted), a linear pass
// instead of a hash lookup per object. A report already in strictly
// ascending order (the lab's observer gives most so) is taken as it is.
// Otherwise the held flags go along in ID order: when every ID leaves the
// top bit free (object IDs do), each flag rides in the low bit of its ID
// shifted left, and one sort of plain integers orders both; otherwise the
// IDs are sorted alone and each flag is found by a search. It returns
// false and an ID listed twice if there is one.
func (r *Recorder) byID(interest []uint64, held []bool) (dup uint64, ok bool) {
	r.held = slices.Grow(r.held[:0], len(interest))[:len(interest)]
	ascending := true
	for i := 1; i < len(interest); i++ {
		if interest[i] <= interest[i-1] {
			ascending = false
			break
		}
	}
	if ascending {
		r.scratch = append(r.scratch[:0], interest...)
		copy(r.held, held)
		return 0, true
	}
	r.scratch = r.scratch[:0]
	packed := true
	for i, id := range interest {
		if id>>63 != 0 {
			packed = false
			break
		}
		f := uint64(0)
		if held[i] {
			f = 1
		}
		r.scratch = append(r.scratch, id<<1|f)
	}
	if packed {
		slices.Sort(r.scratch)
		for k, x := range r.scratch {
			r.scratch[k], r.held[k] = x>>1, x&1 != 0
		}
	} else {
		r.scratch = append(r.scratch[:0], interest...)
		slices.Sort(r.scratch)
	}
	for i := 1; i < len(r.scratch); i++ {
		if r.scratch[i] == r.scratch[i-1] {
			return r.scratch[i], false
		}
	}
	if !packed {
		for i, id := range interest {
			k, _ := slices.BinarySearch(r.scratch, id)
			r.held[k] = held[i]
		}
	}
	return 0, true
}

func (r *Recorder) sec(t int64) *viewSec {
	s := int(t / int64(time.Second))
	for len(r.secs) <= s {
		r.secs = append(r.secs, viewSec{})
	}
	return &r.secs[s]
}

// Forget drops a node's interest state: objects it was still waiting for
// count as abandoned, and its next report starts afresh (every object in
// it enters the interest then). A simulator's recorder does this itself
// when the node crashes or leaves; a driver that learns of a node's
// restart otherwise (a live cluster) calls it, so that the new process
// is not measured against the old one's views. An unknown node is no
// error: there is nothing to forget.
func (r *Recorder) Forget(node wire.NodeID) {
	v := r.views[node]
	if v == nil {
		return
	}
	for _, p := range v.pairs {
		if !p.discovered && p.entered >= r.warmup {
			r.abandoned++
		}
	}
	v.pairs = v.pairs[:0]
}

// Staleness records one replica-staleness sample: how old a replica's state
// was relative to its primary's. It rejects a negative sample.
func (r *Recorder) Staleness(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative staleness %v", ErrBadArgument, d)
	}
	r.staleness = append(r.staleness, d)
	return nil
}

// FrameTime records the compute time of one of node's frames (the
// integrator measures it around its core's Tick). Wall-clock samples make
// the summary differ between runs; leave them out where byte-identical
// output matters. It rejects a negative sample.
func (r *Recorder) FrameTime(node wire.NodeID, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: negative frame time %v", ErrBadArgument, d)
	}
	r.frameTime = append(r.frameTime, d)
	ft := r.frameByNode[node]
	ft.n++
	ft.sum += d
	ft.max = max(ft.max, d)
	r.frameByNode[node] = ft
	return nil
}

// frameStats is one node's frame-time samples in brief.
type frameStats struct {
	n        int64
	sum, max time.Duration
}

// Add adds delta to the named counter (created at 0). It rejects an empty
// name.
func (r *Recorder) Add(name string, delta int64) error {
	if name == "" {
		return fmt.Errorf("%w: empty counter name", ErrBadArgument)
	}
	r.counters[name] += delta
	return nil
}

// Missing is the missing-replica measure for one grace period.
type Missing struct {
	GraceMs float64 `json:"grace_ms"`
	// Fraction is missing over interesting objects, each summed over all
	// reports (Colyseus Fig. 11).
	Fraction float64 `json:"fraction"`
	// FrameMean is the mean over reports with a non-empty interest of each
	// report's missing fraction.
	FrameMean float64 `json:"frame_mean"`
	// Missing is the number of (report, object) pairs counted missing.
	Missing uint64 `json:"missing"`
}

// Views summarises the view measures.
type Views struct {
	Reports     uint64    `json:"reports"`
	Interesting uint64    `json:"interesting"` // (report, object) pairs in interest
	Missing     []Missing `json:"missing"`
	// InterestingMoving and MissingMoving are the same measures for the
	// moving objects alone (objects of a kind seen to change location:
	// the model game's bots and missiles, not its items), which an
	// integrator that knows the objects' kinds fills in (lab/harness does,
	// from truth.Observer.MovingView); empty otherwise.
	InterestingMoving uint64    `json:"interesting_moving"`
	MissingMoving     []Missing `json:"missing_moving"`
	// Floor and FloorMoving are, in the shape of Missing, the pairs no
	// protocol could have held yet (the object was created less than
	// the shortest delay from its creating node to the viewer ago), for
	// all objects and for the moving ones, and FloorAbandoned the
	// objects that left an interest before any protocol could have
	// brought them: every protocol misses and abandons at least these,
	// short of predicting creations. An integrator that knows the
	// network's delays fills them in (lab/harness does, from
	// truth.Observer.TrackFloor, in worlds of up to 512 nodes); empty
	// otherwise.
	Floor          []Missing `json:"floor,omitempty"`
	FloorMoving    []Missing `json:"floor_moving,omitempty"`
	FloorAbandoned uint64    `json:"floor_abandoned,omitempty"`
	// Discovery is the discovery latency of objects missing on entry.
	Discovery   Dist   `json:"discovery_ms"`
	HeldOnEntry uint64 `json:"held_on_entry"`
	// Abandoned counts the objects that entered an interest missing (after
	// the warm-up) and left it, or saw their node go down, before they
	// were discovered: they have no discovery latency. AbandonedShare is
	// Abandoned over Abandoned plus Discovery.Count, the discoveries that
	// never happened among all that were due.
	Abandoned      uint64  `json:"abandoned"`
	AbandonedShare float64 `json:"abandoned_share"`
	Lost           uint64  `json:"lost"`
}

func (r *Recorder) missingOf(frames, total uint64, missing *[maxGrace]uint64, fracSum *[maxGrace]float64, fracFrames uint64) []Missing {
	out := make([]Missing, len(r.grace))
	for g, grace := range r.grace {
		m := Missing{GraceMs: ms(grace), Missing: missing[g]}
		if total > 0 {
			m.Fraction = float64(missing[g]) / float64(total)
		}
		if fracSum != nil && fracFrames > 0 {
			m.FrameMean = fracSum[g] / float64(fracFrames)
		}
		out[g] = m
	}
	return out
}

// Views returns the view measures so far.
func (r *Recorder) Views() Views {
	return Views{
		Reports:       r.frames,
		Interesting:   r.total,
		Missing:       r.missingOf(r.frames, r.total, &r.missing, &r.fracSum, r.fracFrames),
		MissingMoving: []Missing{},
		Discovery:     NewDist(r.discovery),
		HeldOnEntry:   r.heldOnEntry,
		Abandoned:     r.abandoned,
		AbandonedShare: func() float64 {
			if d := r.abandoned + uint64(len(r.discovery)); d > 0 {
				return float64(r.abandoned) / float64(d)
			}
			return 0
		}(),
		Lost: r.lost,
	}
}

// Dist summarises a distribution of durations in milliseconds. Quantiles
// are nearest-rank over all samples. The histogram has 10 ms bins from 0
// (bin k counts samples in [10k, 10k+10) ms), up to the last non-empty bin
// below 2 s; Over counts samples of 2 s or more.
type Dist struct {
	Count     int      `json:"count"`
	Mean      float64  `json:"mean"`
	P50       float64  `json:"p50"`
	P95       float64  `json:"p95"`
	P99       float64  `json:"p99"`
	Max       float64  `json:"max"`
	BinMs     float64  `json:"bin_ms"`
	Histogram []uint64 `json:"histogram"`
	Over      uint64   `json:"over"`
}

const (
	histBin  = 10 * time.Millisecond
	histBins = 200
)

// NewDist summarises samples (which it does not modify).
func NewDist(samples []time.Duration) Dist {
	d := Dist{Count: len(samples), BinMs: ms(histBin), Histogram: []uint64{}}
	if len(samples) == 0 {
		return d
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var total float64
	hist := make([]uint64, histBins)
	last := -1
	for _, x := range s {
		total += ms(x)
		if b := int(x / histBin); b < histBins {
			hist[b]++
			last = b
		} else {
			d.Over++
		}
	}
	d.Mean = total / float64(len(s))
	d.P50, d.P95, d.P99 = ms(rank(s, 0.50)), ms(rank(s, 0.95)), ms(rank(s, 0.99))
	d.Max = ms(s[len(s)-1])
	d.Histogram = hist[:last+1]
	return d
}

// rank returns the nearest-rank q-quantile of sorted s.
func rank[T any](s []T, q float64) T {
	k := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(k, 0)]
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
