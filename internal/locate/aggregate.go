package locate

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/world"
)

// Subscription aggregation (Colyseus §6.2): a local subscription cache
// recalls the subscriptions a node sent whose TTLs have not run out (they
// are still stored at their rendezvous), so a box one of them covers is
// not sent again; and an aggregation filter merges overlapping
// subscriptions into fewer boxes before they are sent.
//
// The filter is greedy box grouping as in spatial databases' R-tree node
// splitting (the paper's [15]): every box starts as its own group; while
// two groups may merge, the pair whose bounding box wastes the least
// (the smallest ratio of its volume to the summed volumes of the boxes it
// holds) merges; two groups may merge when that ratio is at most 1+ε. So
// every merged box has a volume of at most (1+ε) × the sum of its parts'
// volumes: the over-coverage (false matches) is bounded by ε, and
// overlapping boxes, whose parts double-count their overlap, merge most
// readily. A box that covers another absorbs it at no cost. The volumes
// of a candidate pair are measured over the dimensions in which the
// merged box has a finite, positive extent (a dimension in which every box
// is flat at the same value, such as z on a single floor, does not zero
// every volume); where the merged box is unbounded, the two groups merge
// only if they have the same bounds there, or one covers the other (a
// merge must never add an infinite volume).
//
// The recommended pipeline for a node each frame (Aggregator.Plan): for
// each primary, the box it needs subscribed now (its interest widened by
// the publication pad, Predictor.Need) and its predicted box
// (Predictor.Predict); the needs not covered by a live cached
// subscription have their predicted boxes merged and sent with TTL =
// PredTime, and recorded in the cache.

// SubCache is the local subscription cache of one node: the boxes it
// subscribed to and when each expires at the rendezvous. It is
// deterministic and not safe for concurrent use.
type SubCache struct {
	dims  int
	slack time.Duration
	sent  []sentBox
}

type sentBox struct {
	box   world.Box
	until time.Duration
}

// NewSubCache returns an empty cache over dims dimensions (1 to
// world.MaxDims) in which a sent subscription counts as live until slack
// before its expiry (slack >= 0: the time a refresh takes to reach the
// rendezvous, so it arrives before the old one expires).
func NewSubCache(dims int, slack time.Duration) (*SubCache, error) {
	if dims < 1 || dims > world.MaxDims || slack < 0 {
		return nil, fmt.Errorf("%w: subscription cache over %d dimensions with slack %v (want 1 to %d, slack >= 0)",
			ErrLocateConfig, dims, slack, world.MaxDims)
	}
	return &SubCache{dims: dims, slack: slack}, nil
}

// Len returns the number of live cached boxes (after the last Expire,
// Covered or Filter).
func (c *SubCache) Len() int { return len(c.sent) }

// Expire forgets the boxes that are no longer live at now.
func (c *SubCache) Expire(now time.Duration) {
	c.sent = slices.DeleteFunc(c.sent, func(s sentBox) bool { return s.until-c.slack <= now })
}

// Covered reports whether a live cached box covers b.
func (c *SubCache) Covered(now time.Duration, b world.Box) bool {
	c.Expire(now)
	return c.covered(b)
}

func (c *SubCache) covered(b world.Box) bool {
	for i := range c.sent {
		if c.sent[i].box.Covers(b, c.dims) {
			return true
		}
	}
	return false
}

// Sent records that box b was subscribed at now with ttl. Cached boxes it
// covers that expire no later are forgotten (it makes them redundant).
func (c *SubCache) Sent(now time.Duration, b world.Box, ttl time.Duration) {
	until := now + ttl
	if until-c.slack <= now {
		return // never live
	}
	c.sent = slices.DeleteFunc(c.sent, func(s sentBox) bool { return s.until <= until && b.Covers(s.box, c.dims) })
	c.sent = append(c.sent, sentBox{box: b, until: until})
}

// Filter appends to dst the boxes of boxes that must be sent at now: those
// not covered by a live cached box nor by another box of the batch that
// is sent (of two equal boxes the first is sent), in input order; and
// records them as sent with ttl. Boxes with a NaN bound or empty ones
// contain nothing and are never sent.
func (c *SubCache) Filter(now time.Duration, boxes []world.Box, ttl time.Duration, dst []world.Box) []world.Box {
	c.Expire(now)
	start := len(dst)
	for i, b := range boxes {
		if b.Validate(c.dims) != nil || b.Empty(c.dims) || c.covered(b) {
			continue
		}
		dominated := false
		for j, o := range boxes {
			if j != i && o.Validate(c.dims) == nil && !o.Empty(c.dims) && o.Covers(b, c.dims) &&
				(j < i || !b.Covers(o, c.dims)) && !c.covered(o) {
				dominated = true
				break
			}
		}
		if !dominated {
			dst = append(dst, b)
		}
	}
	for _, b := range dst[start:] {
		c.Sent(now, b, ttl)
	}
	return dst
}

// Merge appends to dst the merged boxes of boxes (see the greedy box
// grouping above) and returns, in group (which it resets), the index in
// dst[start:] of the merged box holding each input box (-1 for empty
// ones, which are left out). Merged boxes are in the order of their first
// input box. eps must be finite and >= 0; a box with a NaN bound is an
// error, with dst unchanged.
func Merge(boxes []world.Box, dims int, eps float64, dst []world.Box, group []int) ([]world.Box, []int, error) {
	group = group[:0]
	if !(eps >= 0) || math.IsInf(eps, 0) || dims < 1 || dims > world.MaxDims {
		return dst, group, fmt.Errorf("%w: merge with ε %v over %d dimensions (want finite ε >= 0, 1 to %d dimensions)",
			ErrLocateConfig, eps, dims, world.MaxDims)
	}
	for i := range boxes {
		if err := boxes[i].Validate(dims); err != nil {
			return dst, group, fmt.Errorf("%w: merge box %d: %w", ErrRendezvous, i, err)
		}
	}
	m := merger{dims: dims, eps: eps, boxes: boxes}
	for i := range boxes {
		if boxes[i].Empty(dims) {
			group = append(group, -1)
			continue
		}
		group = append(group, len(m.groups))
		m.groups = append(m.groups, mergeGroup{box: boxes[i], members: []int{i}})
	}
	m.run()
	// Number the surviving groups in order of their first box.
	start := len(dst)
	at := make([]int, len(m.groups))
	for g := range m.groups {
		if m.groups[g].alive() {
			at[g] = len(dst) - start
			dst = append(dst, m.groups[g].box)
		}
	}
	for i, g := range group {
		if g >= 0 {
			group[i] = at[m.find(g)]
		}
	}
	return dst, group, nil
}

type mergeGroup struct {
	box     world.Box
	members []int // its input boxes
	into    int   // 0 while alive, else 1 + the group it merged into
}

func (g *mergeGroup) alive() bool { return g.into == 0 }

type merger struct {
	dims   int
	eps    float64
	boxes  []world.Box
	groups []mergeGroup
}

// measure returns the dimensions over which a merge into u is measured:
// those where u has a finite, positive extent; and false when u is
// unbounded in a dimension where a and b differ.
func (m *merger) measure(u, a, b *world.Box) (mask [world.MaxDims]bool, ok bool) {
	for d := range m.dims {
		switch ext := u.Max[d] - u.Min[d]; {
		case math.IsInf(ext, 0):
			if a.Min[d] != b.Min[d] || a.Max[d] != b.Max[d] {
				return mask, false
			}
		case ext > 0:
			mask[d] = true
		}
	}
	return mask, true
}

// volume returns b's volume over the dimensions of mask.
func (m *merger) volume(b *world.Box, mask *[world.MaxDims]bool) float64 {
	v := 1.0
	for d := range m.dims {
		if mask[d] {
			v *= b.Max[d] - b.Min[d]
		}
	}
	return v
}

// cost returns the waste ratio of merging groups a and b, or false when
// they may not merge.
func (m *merger) cost(a, b *mergeGroup) (float64, bool) {
	if a.box.Covers(b.box, m.dims) || b.box.Covers(a.box, m.dims) {
		return 0, true
	}
	u := a.box.Union(b.box)
	mask, ok := m.measure(&u, &a.box, &b.box)
	if !ok {
		return 0, false
	}
	var sum float64
	for _, g := range [2]*mergeGroup{a, b} {
		for _, i := range g.members {
			sum += m.volume(&m.boxes[i], &mask)
		}
	}
	vol := m.volume(&u, &mask)
	if math.IsInf(vol, 0) || vol > (1+m.eps)*sum {
		return 0, false
	}
	if sum == 0 {
		return 0, true
	}
	return vol / sum, true
}

// run merges the cheapest mergeable pair (ties: the lowest pair of
// indexes) until none is left.
func (m *merger) run() {
	n := len(m.groups)
	// cost[i*n+j] for i < j; NaN: may not merge.
	cost := make([]float64, n*n)
	for i := range n {
		for j := i + 1; j < n; j++ {
			cost[i*n+j] = m.pairCost(i, j)
		}
	}
	for {
		bi, bj, best := -1, -1, math.Inf(1)
		for i := range n {
			if !m.groups[i].alive() {
				continue
			}
			for j := i + 1; j < n; j++ {
				if c := cost[i*n+j]; m.groups[j].alive() && c < best {
					bi, bj, best = i, j, c
				}
			}
		}
		if bi < 0 {
			return
		}
		a, b := &m.groups[bi], &m.groups[bj]
		if b.box.Covers(a.box, m.dims) {
			a.box = b.box
		} else if !a.box.Covers(b.box, m.dims) {
			a.box = a.box.Union(b.box)
		}
		a.members = append(a.members, b.members...)
		b.into = 1 + bi
		for k := range n {
			if k != bi && m.groups[k].alive() {
				lo, hi := min(k, bi), max(k, bi)
				cost[lo*n+hi] = m.pairCost(lo, hi)
			}
		}
	}
}

func (m *merger) pairCost(i, j int) float64 {
	c, ok := m.cost(&m.groups[i], &m.groups[j])
	if !ok {
		return math.NaN()
	}
	return c
}

// find returns the surviving group g merged into.
func (m *merger) find(g int) int {
	for !m.groups[g].alive() {
		g = m.groups[g].into - 1
	}
	return g
}

// Aggregator is a node's subscription cache and aggregation filter
// together. Not safe for concurrent use.
type Aggregator struct {
	Cache *SubCache
	Eps   float64 // the merge filter's ε (0: merge only boxes that add no volume)

	pending []world.Box
	group   []int
}

// NewAggregator returns an aggregator over dims dimensions with the given
// cache slack and merge ε.
func NewAggregator(dims int, slack time.Duration, eps float64) (*Aggregator, error) {
	c, err := NewSubCache(dims, slack)
	if err != nil {
		return nil, err
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return nil, fmt.Errorf("%w: aggregation ε %v (want finite, >= 0)", ErrLocateConfig, eps)
	}
	return &Aggregator{Cache: c, Eps: eps}, nil
}

// Plan appends to dst the boxes to subscribe at now, and records them in
// the cache with ttl. need[i] is a box that must be subscribed now and
// pred[i] (covering need[i]) the box to subscribe when it is not: the
// predicted boxes of the needs that no live cached box covers are merged
// and sent. Afterwards every need is covered by a live cached box (unless
// pred[i] does not cover need[i], which is an error, as are NaN bounds
// and len(need) != len(pred); dst and the cache are then unchanged).
func (a *Aggregator) Plan(now time.Duration, need, pred []world.Box, ttl time.Duration, dst []world.Box) ([]world.Box, error) {
	dims := a.Cache.dims
	if len(need) != len(pred) {
		return dst, fmt.Errorf("%w: %d needed boxes for %d predicted ones", ErrRendezvous, len(need), len(pred))
	}
	for i := range need {
		if err := need[i].Validate(dims); err != nil {
			return dst, fmt.Errorf("%w: needed box %d: %w", ErrRendezvous, i, err)
		}
		if err := pred[i].Validate(dims); err != nil {
			return dst, fmt.Errorf("%w: predicted box %d: %w", ErrRendezvous, i, err)
		}
		if !need[i].Empty(dims) && !pred[i].Covers(need[i], dims) {
			return dst, fmt.Errorf("%w: predicted box %d %v does not cover its need %v", ErrRendezvous, i, pred[i], need[i])
		}
	}
	a.Cache.Expire(now)
	a.pending = a.pending[:0]
	for i := range need {
		if !need[i].Empty(dims) && !a.Cache.covered(need[i]) {
			a.pending = append(a.pending, pred[i])
		}
	}
	start := len(dst)
	dst, a.group, _ = Merge(a.pending, dims, a.Eps, dst, a.group) // validated above
	for _, b := range dst[start:] {
		a.Cache.Sent(now, b, ttl)
	}
	return dst, nil
}
