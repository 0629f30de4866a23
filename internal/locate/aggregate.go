package locate

import (
	"cmp"
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
// The filter is greedy box grouping in the manner of R-tree node splitting
// (Guttman's R-trees, the paper's [15], whose quadratic split measures a
// pair of boxes by the area their bounding box wastes; here the pair that
// wastes least is joined): every box starts as its own group; while
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
// error, with dst unchanged. It allocates its work space; a Merger reuses
// it.
func Merge(boxes []world.Box, dims int, eps float64, dst []world.Box, group []int) ([]world.Box, []int, error) {
	var m Merger
	return m.Merge(boxes, dims, eps, dst, group)
}

// Merger runs Merge with reused work space. The zero value is ready; it
// is not safe for concurrent use.
type Merger struct {
	dims   int
	eps    float64
	groups []mergeGroup
	cost   []float64 // n×n, symmetric; +Inf: may not merge
	best   []int32   // per group: its cheapest partner, or -1
	old    []float64 // costs before a merge
	at     []int
}

// mergeGroup is a group of boxes: its bounding box, and the summed
// volumes of its boxes over each subset of dimensions (bit d of the index
// set: dimension d is measured).
type mergeGroup struct {
	box  world.Box
	sums [1 << world.MaxDims]float64
	into int32 // -1 while alive, else the group it merged into
}

func (g *mergeGroup) alive() bool { return g.into < 0 }

// Merge is the function Merge, reusing m's work space.
func (m *Merger) Merge(boxes []world.Box, dims int, eps float64, dst []world.Box, group []int) ([]world.Box, []int, error) {
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
	m.dims, m.eps, m.groups = dims, eps, m.groups[:0]
	for i := range boxes {
		b := &boxes[i]
		if b.Empty(dims) {
			group = append(group, -1)
			continue
		}
		group = append(group, len(m.groups))
		g := mergeGroup{box: *b, into: -1}
		for mask := range 1 << dims {
			g.sums[mask] = volumeOver(b, dims, mask)
		}
		m.groups = append(m.groups, g)
	}
	m.run()
	// Number the surviving groups in order of their first box.
	start := len(dst)
	m.at = slices.Grow(m.at[:0], len(m.groups))[:len(m.groups)]
	for g := range m.groups {
		if m.groups[g].alive() {
			m.at[g] = len(dst) - start
			dst = append(dst, m.groups[g].box)
		}
	}
	for i, g := range group {
		if g >= 0 {
			group[i] = m.at[m.find(g)]
		}
	}
	return dst, group, nil
}

// volumeOver returns b's volume over the dimensions of mask.
func volumeOver(b *world.Box, dims, mask int) float64 {
	v := 1.0
	for d := range dims {
		if mask&(1<<d) != 0 {
			v *= b.Max[d] - b.Min[d]
		}
	}
	return v
}

// pairCost returns the waste ratio of merging groups i and j, or +Inf
// when they may not merge. The volumes are measured over the dimensions
// where the union has a finite, positive extent; where it is unbounded,
// the groups must have the same bounds.
func (m *Merger) pairCost(i, j int) float64 {
	a, b := &m.groups[i], &m.groups[j]
	if a.box.Covers(b.box, m.dims) || b.box.Covers(a.box, m.dims) {
		return 0
	}
	mask, vol := 0, 1.0
	for d := range m.dims {
		lo, hi := min(a.box.Min[d], b.box.Min[d]), max(a.box.Max[d], b.box.Max[d])
		switch ext := hi - lo; {
		case math.IsInf(ext, 0):
			if a.box.Min[d] != b.box.Min[d] || a.box.Max[d] != b.box.Max[d] {
				return math.Inf(1)
			}
		case ext > 0:
			mask |= 1 << d
			vol *= ext
		}
	}
	sum := a.sums[mask] + b.sums[mask]
	if math.IsInf(vol, 0) || vol > (1+m.eps)*sum {
		return math.Inf(1)
	}
	if sum == 0 {
		return 0 // degenerate boxes whose union is degenerate too
	}
	return vol / sum
}

// better reports whether pair (i, j) is cheaper than (k, l) at costs c
// and e: lower cost, then the lower pair of indexes.
func better(c float64, i, j int, e float64, k, l int) bool {
	if c != e {
		return c < e
	}
	i, j = min(i, j), max(i, j)
	k, l = min(k, l), max(k, l)
	return i < k || i == k && j < l
}

// rescan finds group i's cheapest live partner.
func (m *Merger) rescan(i int) {
	n := len(m.groups)
	m.best[i] = -1
	for j := range n {
		if j == i || !m.groups[j].alive() {
			continue
		}
		if b := int(m.best[i]); b < 0 || better(m.cost[i*n+j], i, j, m.cost[i*n+b], i, b) {
			m.best[i] = int32(j)
		}
	}
}

// run merges the cheapest mergeable pair (ties: the lowest pair of
// indexes) until none is left. Each group remembers its cheapest partner,
// so a round costs O(n) plus the rows whose partner changed.
func (m *Merger) run() {
	n := len(m.groups)
	m.cost = slices.Grow(m.cost[:0], n*n)[:n*n]
	m.best = slices.Grow(m.best[:0], n)[:n]
	for i := range n {
		m.cost[i*n+i] = math.Inf(1)
		for j := i + 1; j < n; j++ {
			c := m.pairCost(i, j)
			m.cost[i*n+j], m.cost[j*n+i] = c, c
		}
	}
	for i := range n {
		m.rescan(i)
	}
	for {
		bi, bj, best := -1, -1, math.Inf(1)
		for i := range n {
			if j := int(m.best[i]); m.groups[i].alive() && j >= 0 && m.cost[i*n+j] < math.Inf(1) &&
				(bi < 0 || better(m.cost[i*n+j], i, j, best, bi, bj)) {
				bi, bj, best = i, j, m.cost[i*n+j]
			}
		}
		if bi < 0 {
			return
		}
		bi, bj = min(bi, bj), max(bi, bj) // the lower index survives
		a, b := &m.groups[bi], &m.groups[bj]
		a.box = a.box.Union(b.box)
		for k := range a.sums {
			a.sums[k] += b.sums[k]
		}
		b.into = int32(bi)
		m.old = slices.Grow(m.old[:0], n)[:n]
		for k := range n {
			if k != bi && m.groups[k].alive() {
				c := m.pairCost(bi, k)
				m.old[k] = m.cost[k*n+bi]
				m.cost[bi*n+k], m.cost[k*n+bi] = c, c
			}
		}
		m.rescan(bi)
		for k := range n {
			if k == bi || !m.groups[k].alive() {
				continue
			}
			switch p := int(m.best[k]); {
			case p == bj || p < 0:
				m.rescan(k)
			case p == bi: // still the cheapest unless its cost rose
				if m.cost[k*n+bi] > m.old[k] {
					m.rescan(k)
				}
			case better(m.cost[k*n+bi], k, bi, m.cost[k*n+p], k, p):
				m.best[k] = int32(bi)
			}
		}
	}
}

// find returns the surviving group g merged into.
func (m *Merger) find(g int) int {
	for !m.groups[g].alive() {
		g = int(m.groups[g].into)
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
	merger  Merger
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
	if len(a.pending) > MaxMergeBatch {
		// Merge is quadratic in time and memory: merge spatial neighbours
		// in batches, ordered by the boxes' lower x bound (then y).
		slices.SortStableFunc(a.pending, func(p, q world.Box) int {
			if c := cmp.Compare(p.Min[0], q.Min[0]); c != 0 {
				return c
			}
			return cmp.Compare(p.Min[1], q.Min[1])
		})
	}
	for lo := 0; lo < len(a.pending); lo += MaxMergeBatch {
		batch := a.pending[lo:min(lo+MaxMergeBatch, len(a.pending))]
		dst, a.group, _ = a.merger.Merge(batch, dims, a.Eps, dst, a.group) // validated above
	}
	for _, b := range dst[start:] {
		a.Cache.Sent(now, b, ttl)
	}
	return dst, nil
}

// MaxMergeBatch is the most boxes Aggregator.Plan merges together (more
// are merged in batches of spatial neighbours): Merge's work space is
// n² costs, 0.5 MB at 256.
const MaxMergeBatch = 256
