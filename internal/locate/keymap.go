package locate

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/overworld/overworld/world"
)

// Key mappings: how publications and subscriptions find their rendezvous
// on the ring. The ring's key space is the uint64 circle; a publication at
// point p is stored at the owner of KeyMap.PointKey(p), and a subscription
// over box b is delivered to every node whose key range intersects one of
// KeyMap.BoxRanges(b). The mappings are sound: if b contains p, then
// PointKey(p) lies in one of BoxRanges(b) (tested exhaustively on small
// grids and on seeded random points and boxes), so a rendezvous that
// stores the publication also sees the subscription. Matching itself is
// exact (world.Box.Contains at the rendezvous); a range that reaches
// further than the box only costs false candidates, never false matches.
//
// The three mappings of Colyseus §6.3:
//
//   - LinearMap (rangedht, x attribute): key = x scaled over the world's
//     extent onto [0, 2^64); a box is one contiguous range.
//   - HilbertMap (rangedht, Hilbert curve over x and y): the extent is cut
//     into 2^order × 2^order cells numbered along a Hilbert curve; a box is
//     the minimal set of contiguous cell ranges covering its cells, merged
//     (exact up to 256 cells wide; wider boxes stop at 1/256 of their
//     width, which bounds the work), then coarsened to at most MaxRanges
//     by bridging the smallest gaps.
//   - RegionMap (dht): the extent is cut into a grid of about as many
//     regions as players, each region hashed (a fixed bijective 64-bit
//     mixer, no randomness) to a pseudo-random key; a box is one
//     single-key range per region it overlaps.
//
// Coordinates outside the extent are clamped to its edge (a box reaching
// past the edge maps as if cut at the edge, which keeps soundness since
// clamping is monotone); infinite bounds clamp too. A NaN coordinate of a
// point clamps to the low edge (no box contains it); a box with a NaN bound
// or empty in x or y has no ranges.

// KeyRange is the closed range [Lo, Hi] of ring keys (Lo <= Hi; it does not
// wrap around the circle).
type KeyRange struct{ Lo, Hi uint64 }

// Contains reports whether k lies in r.
func (r KeyRange) Contains(k uint64) bool { return r.Lo <= k && k <= r.Hi }

// KeyMap turns a publication's point into one ring key and a
// subscription's box into the key ranges its rendezvous nodes own.
// Implementations are immutable and safe for concurrent use.
type KeyMap interface {
	// PointKey returns the key of a publication at p.
	PointKey(p world.Point) uint64
	// BoxRanges appends to dst the ranges a subscription over b must
	// reach: sorted by Lo, disjoint and not adjacent (merged). Every point
	// b contains has its key in one of them.
	BoxRanges(b world.Box, dst []KeyRange) []KeyRange
}

// Key mapping kinds, for KeyMapConfig.Kind.
const (
	KeyMapLinear  = "rangedht-x"       // LinearMap
	KeyMapHilbert = "rangedht-hilbert" // HilbertMap
	KeyMapRegions = "dht"              // RegionMap
)

// KeyMapConfig selects and parameterises a key mapping.
type KeyMapConfig struct {
	Kind   string    // KeyMapLinear, KeyMapHilbert or KeyMapRegions
	Extent world.Box // the world's map, in x (dimension 0) and y (dimension 1)
	// Order is the Hilbert curve's order (1 to MaxHilbertOrder): 2^Order
	// cells per side. 0 fits it to Cell (HilbertOrderFor), or means
	// DefaultHilbertOrder when Cell is 0 too.
	Order int
	// Cell, when Order is 0, is the widest cell wanted: a quarter of the
	// interest box's width is a good choice (BENCHMARKS.md).
	Cell float64
	// MaxRanges caps the ranges of one box under the Hilbert mapping (0
	// means DefaultMaxRanges).
	MaxRanges int
	// Regions is the number of regions of the dht mapping: the number of
	// players (at least 1).
	Regions int
}

// Hilbert mapping defaults and limits.
const (
	// DefaultHilbertOrder: 1,024 × 1,024 cells, about 1 m at the model
	// game's density with 1,000 players (a 1 km map), finer than any
	// interest box, so ranges lose little to cell rounding.
	DefaultHilbertOrder = 10
	// MaxHilbertOrder keeps cell coordinates in 31 bits and indexes in 62.
	MaxHilbertOrder = 31
	// DefaultMaxRanges: a 40 m box on a 1 km map covers about a dozen
	// ranges exactly; eight keeps each subscription to a few range
	// forwards at a few percent of extra key span.
	DefaultMaxRanges = 8
)

// NewKeyMap returns the mapping cfg describes, or an error naming the
// problem.
func NewKeyMap(cfg KeyMapConfig) (KeyMap, error) {
	var m KeyMap
	var err error
	switch cfg.Kind {
	case KeyMapLinear:
		m, err = NewLinearMap(cfg.Extent)
	case KeyMapHilbert:
		order := cfg.Order
		if order == 0 && cfg.Cell != 0 {
			if !(cfg.Cell > 0) || math.IsInf(cfg.Cell, 0) {
				return nil, fmt.Errorf("%w: Hilbert cell width %v (want finite, positive)", ErrLocateConfig, cfg.Cell)
			}
			order = HilbertOrderFor(cfg.Extent, cfg.Cell)
		}
		m, err = NewHilbertMap(cfg.Extent, order, cfg.MaxRanges)
	case KeyMapRegions:
		m, err = NewRegionMap(cfg.Extent, cfg.Regions)
	default:
		err = fmt.Errorf("%w: key mapping %q (want %s, %s or %s)", ErrLocateConfig, cfg.Kind,
			KeyMapLinear, KeyMapHilbert, KeyMapRegions)
	}
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return m, nil
}

// extent is a validated map extent over x and y.
type extent struct {
	min, size [2]float64
}

func newExtent(b world.Box, dims int) (extent, error) {
	var e extent
	for d := range dims {
		lo, hi := b.Min[d], b.Max[d]
		if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(hi > lo) ||
			math.IsInf(hi-lo, 0) {
			return e, fmt.Errorf("%w: key map extent [%g, %g] in dimension %d (want finite, Min < Max)",
				ErrLocateConfig, lo, hi, d)
		}
		e.min[d], e.size[d] = lo, hi-lo
	}
	return e, nil
}

// unit returns v's position along dimension d of the extent, clamped to
// [0, 1] (NaN → 0). It is non-decreasing in v.
func (e *extent) unit(v float64, d int) float64 {
	t := (v - e.min[d]) / e.size[d]
	switch {
	case !(t > 0): // also NaN
		return 0
	case t >= 1:
		return 1
	}
	return t
}

// cell returns v's cell along dimension d when the extent is cut into n
// cells (n a power of two up to 2^31), clamped to [0, n-1].
func (e *extent) cell(v float64, d int, n uint64) uint64 {
	c := e.unit(v, d) * float64(n) // exact scaling by a power of two
	if c >= float64(n) {
		return n - 1
	}
	return uint64(c)
}

// boxOK reports whether b may contain a point in x (and y when dims is 2).
func boxOK(b *world.Box, dims int) bool {
	for d := range dims {
		if !(b.Min[d] <= b.Max[d]) {
			return false
		}
	}
	return true
}

// LinearMap is the rangedht mapping on the x attribute: the key is x
// scaled over the extent's x range onto the whole key circle, so a box is
// one contiguous range [key(Min.x), key(Max.x)].
type LinearMap struct{ e extent }

// NewLinearMap returns the x-linearised mapping over extent (finite, with
// Min.x < Max.x).
func NewLinearMap(ext world.Box) (*LinearMap, error) {
	e, err := newExtent(ext, 1)
	if err != nil {
		return nil, err
	}
	return &LinearMap{e: e}, nil
}

// two64 is 2^64 as a float64.
const two64 = 18446744073709551616.0

func (m *LinearMap) key(x float64) uint64 {
	t := m.e.unit(x, 0)
	if t >= 1 {
		return math.MaxUint64
	}
	return uint64(t * two64) // t < 1: below 2^64; monotone
}

// PointKey returns the key of a publication at p.
func (m *LinearMap) PointKey(p world.Point) uint64 { return m.key(p[0]) }

// BoxRanges appends the one range of b (none if b is empty or NaN in x).
func (m *LinearMap) BoxRanges(b world.Box, dst []KeyRange) []KeyRange {
	if !boxOK(&b, 1) {
		return dst
	}
	return append(dst, KeyRange{m.key(b.Min[0]), m.key(b.Max[0])})
}

// HilbertMap is the rangedht mapping on a Hilbert curve over x and y: the
// extent is cut into 2^Order × 2^Order cells, cell (cx, cy) has Hilbert
// index h in [0, 4^Order), and its keys are the h-th of 4^Order equal
// slices of the circle; a point's key is its cell's first key. A box maps
// to the cells its bounds span; the cells' indexes form runs, each a key
// range (the minimal set of runs, for boxes up to 256 cells wide). At most MaxRanges ranges are returned: beyond that, the ranges
// separated by the smallest gaps are bridged (ties: the leftmost gap
// first), which covers more keys but never fewer.
type HilbertMap struct {
	e         extent
	order     int
	n         uint64 // cells per side
	shift     uint   // 64 - 2·order: key = index << shift
	maxRanges int
}

// NewHilbertMap returns the Hilbert mapping over extent (finite, Min < Max
// in x and y) with the given order (0: DefaultHilbertOrder) and range cap
// (0: DefaultMaxRanges).
func NewHilbertMap(ext world.Box, order, maxRanges int) (*HilbertMap, error) {
	e, err := newExtent(ext, 2)
	if err != nil {
		return nil, err
	}
	if order == 0 {
		order = DefaultHilbertOrder
	}
	if maxRanges == 0 {
		maxRanges = DefaultMaxRanges
	}
	if order < 1 || order > MaxHilbertOrder {
		return nil, fmt.Errorf("%w: Hilbert order %d (want 1 to %d)", ErrLocateConfig, order, MaxHilbertOrder)
	}
	if maxRanges < 1 {
		return nil, fmt.Errorf("%w: Hilbert range cap %d (want at least 1)", ErrLocateConfig, maxRanges)
	}
	return &HilbertMap{e: e, order: order, n: 1 << order, shift: uint(64 - 2*order), maxRanges: maxRanges}, nil
}

// HilbertOrderFor returns the smallest order (1 to MaxHilbertOrder) whose
// cells are at most cell wide on extent's larger side of x and y: with
// cell about a quarter of the interest box's width, a box spans about
// 4 × 4 cells and a handful of exact ranges. It returns
// DefaultHilbertOrder when extent or cell is not finite and positive.
func HilbertOrderFor(extent world.Box, cell float64) int {
	side := max(extent.Max[0]-extent.Min[0], extent.Max[1]-extent.Min[1])
	if !(side > 0) || math.IsInf(side, 0) || !(cell > 0) || math.IsInf(cell, 0) {
		return DefaultHilbertOrder
	}
	order := 1
	for order < MaxHilbertOrder && side/float64(uint64(1)<<order) > cell {
		order++
	}
	return order
}

// Order returns the curve's order.
func (m *HilbertMap) Order() int { return m.order }

// MaxRanges returns the cap on the ranges of one box.
func (m *HilbertMap) MaxRanges() int { return m.maxRanges }

// HilbertIndex returns the index along the Hilbert curve of order order of
// cell (x, y) (each below 2^order): the classic iterative mapping, which
// starts at (0, 0) and ends at (2^order-1, 0).
func HilbertIndex(order int, x, y uint64) uint64 {
	n := uint64(1) << order
	var d uint64
	for s := n / 2; s > 0; s /= 2 {
		var rx, ry uint64
		if x&s != 0 {
			rx = 1
		}
		if y&s != 0 {
			ry = 1
		}
		d += s * s * ((3 * rx) ^ ry)
		x, y = hilbertRot(n, x, y, rx, ry)
	}
	return d
}

// HilbertCell is the inverse of HilbertIndex.
func HilbertCell(order int, d uint64) (x, y uint64) {
	n := uint64(1) << order
	for s := uint64(1); s < n; s *= 2 {
		rx := 1 & (d / 2)
		ry := 1 & (d ^ rx)
		x, y = hilbertRot(s, x, y, rx, ry)
		x += s * rx
		y += s * ry
		d /= 4
	}
	return x, y
}

func hilbertRot(n, x, y, rx, ry uint64) (uint64, uint64) {
	if ry == 0 {
		if rx == 1 {
			x, y = n-1-x, n-1-y
		}
		x, y = y, x
	}
	return x, y
}

// cellOf returns p's cell.
func (m *HilbertMap) cellOf(p *world.Point) (uint64, uint64) {
	return m.e.cell(p[0], 0, m.n), m.e.cell(p[1], 1, m.n)
}

// PointKey returns the first key of p's cell.
func (m *HilbertMap) PointKey(p world.Point) uint64 {
	x, y := m.cellOf(&p)
	return HilbertIndex(m.order, x, y) << m.shift
}

// BoxRanges appends the ranges of b's cells: exact runs of Hilbert indexes
// (found by descending the curve's quadtree, whose every node is an
// aligned square holding a contiguous run of indexes; exact for boxes up
// to 256 cells wide, coarser by at most 1/256 of the box beyond), then at
// most MaxRanges of them by bridging the smallest gaps.
func (m *HilbertMap) BoxRanges(b world.Box, dst []KeyRange) []KeyRange {
	start := len(dst)
	dst = m.CellRanges(b, dst)
	for i := start; i < len(dst); i++ {
		dst[i] = KeyRange{dst[i].Lo << m.shift, dst[i].Hi<<m.shift | (1<<m.shift - 1)}
	}
	return dst
}

// CellRanges appends the ranges of Hilbert indexes (not keys) b maps to,
// after the cap: what BoxRanges returns before scaling to keys.
func (m *HilbertMap) CellRanges(b world.Box, dst []KeyRange) []KeyRange {
	if !boxOK(&b, 2) {
		return dst
	}
	start := len(dst)
	r := cellRect2{m.e.cell(b.Min[0], 0, m.n), m.e.cell(b.Max[0], 0, m.n),
		m.e.cell(b.Min[1], 1, m.n), m.e.cell(b.Max[1], 1, m.n)}
	q := hilbertQuery{dst: dst, start: start, leaf: 1}
	for w := max(r.x1-r.x0, r.y1-r.y0) + 1; q.leaf*hilbertDetail < w; {
		q.leaf *= 2
	}
	q.visit(0, m.n, r)
	return capRanges(q.dst, start, m.maxRanges)
}

// hilbertDetail bounds the work of a box's ranges: the descent stops at
// nodes of about 1/hilbertDetail of the box's larger side (whole cells up
// to boxes of hilbertDetail cells), taking a node the box only partly
// covers whole. Finer detail would only add gaps smaller than such a node,
// which the range cap bridges first; without the bound a box at order 31
// would cost billions of nodes.
const hilbertDetail = 256

// cellRect2 is the rectangle of cells [x0, x1] × [y0, y1].
type cellRect2 struct{ x0, x1, y0, y1 uint64 }

type hilbertQuery struct {
	dst   []KeyRange
	start int
	leaf  uint64 // nodes of this side are taken whole
}

// hilbertQuad lists a node's quadrants in curve order, as (rx, ry) in the
// node's canonical frame (HilbertIndex adds s²·((3·rx) ^ ry)).
var hilbertQuad = [4][2]uint64{{0, 0}, {0, 1}, {1, 1}, {1, 0}}

// visit handles the quadtree node of side size whose indexes start at
// base, with the query rectangle r clipped to the node and expressed in
// the node's canonical frame (the frame in which HilbertIndex reads the
// remaining bits): each quadrant holds a contiguous run of size²/4
// indexes, and descending into quadrant (rx, ry) translates the frame and,
// when ry = 0, reflects (rx = 1) and transposes it, as HilbertIndex's
// rotation does. O(1) per node: O(order × perimeter) for a box, the
// perimeter counted in leaf nodes (at most 4·hilbertDetail).
func (h *hilbertQuery) visit(base, size uint64, r cellRect2) {
	if size <= h.leaf || r.x0 == 0 && r.y0 == 0 && r.x1 == size-1 && r.y1 == size-1 {
		hi := base + (size*size - 1)
		if n := len(h.dst); n > h.start && h.dst[n-1].Hi+1 == base {
			h.dst[n-1].Hi = hi // adjacent run: merge
		} else {
			h.dst = append(h.dst, KeyRange{base, hi})
		}
		return
	}
	s := size / 2
	for q, quad := range hilbertQuad {
		ox, oy := quad[0]*s, quad[1]*s
		if r.x1 < ox || r.x0 > ox+s-1 || r.y1 < oy || r.y0 > oy+s-1 {
			continue
		}
		c := cellRect2{max(r.x0, ox) - ox, min(r.x1, ox+s-1) - ox, max(r.y0, oy) - oy, min(r.y1, oy+s-1) - oy}
		if quad[1] == 0 {
			if quad[0] == 1 {
				c = cellRect2{s - 1 - c.x1, s - 1 - c.x0, s - 1 - c.y1, s - 1 - c.y0}
			}
			c = cellRect2{c.y0, c.y1, c.x0, c.x1}
		}
		h.visit(base+uint64(q)*s*s, s, c)
	}
}

// capRanges bridges the smallest gaps between the sorted, disjoint ranges
// dst[start:] until at most max remain (ties: leftmost gap first). It
// sorts the gaps in dst's spare capacity (growing it once if short).
func capRanges(dst []KeyRange, start, max int) []KeyRange {
	m := len(dst) - start
	if m <= max {
		return dst
	}
	end := len(dst)
	for i := start + 1; i < end; i++ { // gap {size, index} after the ranges
		dst = append(dst, KeyRange{dst[i].Lo - dst[i-1].Hi, uint64(i)})
	}
	gaps := dst[end:]
	slices.SortFunc(gaps, func(a, b KeyRange) int {
		if c := cmp.Compare(a.Lo, b.Lo); c != 0 {
			return c
		}
		return cmp.Compare(a.Hi, b.Hi)
	})
	// The m-max smallest gaps are bridged: walk them in index order.
	bridged := gaps[:m-max]
	slices.SortFunc(bridged, func(a, b KeyRange) int { return cmp.Compare(a.Hi, b.Hi) })
	out, g := start, 0
	for i := start + 1; i < end; i++ {
		if g < len(bridged) && bridged[g].Hi == uint64(i) {
			dst[out].Hi = dst[i].Hi
			g++
		} else {
			out++
			dst[out] = dst[i]
		}
	}
	return dst[:out+1]
}

// RegionMap is the dht mapping: the extent is cut into a grid of Cols ×
// Rows regions (Cols·Rows >= the number of players, cells as square as the
// extent allows), and region i (row-major) has the key Mix64(i+1): a fixed
// bijection, so distinct regions have distinct, pseudo-randomly spread
// keys. A box maps to one single-key range per region it overlaps.
type RegionMap struct {
	e          extent
	cols, rows uint64
}

// NewRegionMap returns the dht mapping over extent (finite, Min < Max in x
// and y) with at least regions regions (1 to 1<<24).
func NewRegionMap(ext world.Box, regions int) (*RegionMap, error) {
	e, err := newExtent(ext, 2)
	if err != nil {
		return nil, err
	}
	if regions < 1 || regions > 1<<24 {
		return nil, fmt.Errorf("%w: dht regions %d (want 1 to %d: the number of players)", ErrLocateConfig, regions, 1<<24)
	}
	// cols/rows ≈ width/height with cols·rows ≈ regions.
	cols := math.Round(math.Sqrt(float64(regions) * e.size[0] / e.size[1]))
	cols = max(1, min(cols, float64(regions)))
	rows := math.Ceil(float64(regions) / cols)
	return &RegionMap{e: e, cols: uint64(cols), rows: uint64(rows)}, nil
}

// Grid returns the number of region columns and rows.
func (m *RegionMap) Grid() (cols, rows int) { return int(m.cols), int(m.rows) }

// Mix64 is the 64-bit finaliser of SplitMix64: a fixed bijection on
// uint64 that spreads consecutive inputs over the whole circle.
func Mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// regionCell returns v's region column (d = 0) or row (d = 1).
func (m *RegionMap) regionCell(v float64, d int, n uint64) uint64 {
	c := m.e.unit(v, d) * float64(n)
	if c >= float64(n) {
		return n - 1
	}
	return uint64(c)
}

// Region returns the region index (row-major) of p.
func (m *RegionMap) Region(p world.Point) int {
	return int(m.regionCell(p[1], 1, m.rows)*m.cols + m.regionCell(p[0], 0, m.cols))
}

// RegionKey returns the key of region i.
func RegionKey(i int) uint64 { return Mix64(uint64(i) + 1) }

// PointKey returns the key of p's region.
func (m *RegionMap) PointKey(p world.Point) uint64 { return RegionKey(m.Region(p)) }

// BoxRanges appends one range [k, k] per region b overlaps, sorted by key.
func (m *RegionMap) BoxRanges(b world.Box, dst []KeyRange) []KeyRange {
	if !boxOK(&b, 2) {
		return dst
	}
	start := len(dst)
	x0, x1 := m.regionCell(b.Min[0], 0, m.cols), m.regionCell(b.Max[0], 0, m.cols)
	y0, y1 := m.regionCell(b.Min[1], 1, m.rows), m.regionCell(b.Max[1], 1, m.rows)
	for y := y0; y <= y1; y++ {
		for x := x0; x <= x1; x++ {
			k := RegionKey(int(y*m.cols + x))
			dst = append(dst, KeyRange{k, k})
		}
	}
	r := dst[start:]
	slices.SortFunc(r, func(a, b KeyRange) int { return cmp.Compare(a.Lo, b.Lo) })
	out := 0
	for i := 1; i < len(r); i++ { // merge adjacent keys (a bijection has no duplicates)
		if r[out].Hi+1 == r[i].Lo {
			r[out].Hi = r[i].Hi
		} else {
			out++
			r[out] = r[i]
		}
	}
	return dst[:start+out+1]
}
