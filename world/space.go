package world

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// MaxDims is the largest number of naming attributes a Space may have.
const MaxDims = 4

// Point is a location in a Space: the values of its naming attributes, in the
// Space's order. Dimensions beyond the Space's are zero.
type Point [MaxDims]float64

// Space names the numeric naming attributes of a world (for example x, y, z)
// in a fixed order. Every Schema of the world has a field for each of them.
type Space struct {
	names []string
}

// NewSpace returns a Space with the given attribute names (1 to MaxDims,
// distinct, non-empty, no spaces).
func NewSpace(names ...string) (Space, error) {
	if len(names) == 0 || len(names) > MaxDims {
		return Space{}, fmt.Errorf("world: a space has 1 to %d attributes, got %d", MaxDims, len(names))
	}
	for i, n := range names {
		if n == "" || strings.ContainsAny(n, " \t\n") {
			return Space{}, fmt.Errorf("world: attribute %d has an invalid name %q", i, n)
		}
		for _, m := range names[:i] {
			if m == n {
				return Space{}, fmt.Errorf("world: attribute %q named twice", n)
			}
		}
	}
	return Space{names: append([]string(nil), names...)}, nil
}

// MustSpace is NewSpace for package-level declarations; it panics on error.
func MustSpace(names ...string) Space {
	s, err := NewSpace(names...)
	if err != nil {
		panic(err)
	}
	return s
}

// XYZ is the usual three-dimensional space of positions.
var XYZ = MustSpace("x", "y", "z")

// Dims returns the number of attributes.
func (s Space) Dims() int { return len(s.names) }

// Names returns a copy of the attribute names in order.
func (s Space) Names() []string { return append([]string(nil), s.names...) }

// Index returns the dimension of attribute name, or -1.
func (s Space) Index(name string) int {
	for i, n := range s.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Box is a range query over a Space: Min[d] <= v[d] <= Max[d] for every
// dimension d of the Space. An unconstrained dimension has Min = -Inf and
// Max = +Inf (see Unbounded). A Box with Min[d] > Max[d] is empty.
type Box struct {
	Min, Max Point
}

// Unbounded returns the box that matches every point.
func Unbounded() Box {
	var b Box
	for d := range MaxDims {
		b.Min[d], b.Max[d] = math.Inf(-1), math.Inf(1)
	}
	return b
}

// BoxAround returns the box centred on c with half-widths half, unbounded in
// the dimensions where half is +Inf.
func BoxAround(c, half Point) Box {
	var b Box
	for d := range MaxDims {
		b.Min[d], b.Max[d] = c[d]-half[d], c[d]+half[d]
	}
	return b
}

// ErrBadBox reports a box with a NaN bound.
var ErrBadBox = errors.New("world: box bound is NaN")

// Validate reports a NaN bound in the first dims dimensions.
func (b Box) Validate(dims int) error {
	for d := range min(dims, MaxDims) {
		if math.IsNaN(b.Min[d]) || math.IsNaN(b.Max[d]) {
			return fmt.Errorf("%w (dimension %d)", ErrBadBox, d)
		}
	}
	return nil
}

// Empty reports whether no point of a dims-dimensional space is in b.
func (b Box) Empty(dims int) bool {
	for d := range min(dims, MaxDims) {
		if !(b.Min[d] <= b.Max[d]) {
			return true
		}
	}
	return false
}

// Contains reports whether p lies in b (bounds inclusive) in the first dims
// dimensions.
func (b Box) Contains(p Point, dims int) bool {
	for d := range min(dims, MaxDims) {
		if !(p[d] >= b.Min[d] && p[d] <= b.Max[d]) {
			return false
		}
	}
	return true
}

// Intersects reports whether a and b share a point in the first dims
// dimensions.
func (b Box) Intersects(o Box, dims int) bool {
	for d := range min(dims, MaxDims) {
		if !(b.Min[d] <= o.Max[d] && o.Min[d] <= b.Max[d]) {
			return false
		}
	}
	return true
}

// Covers reports whether o lies inside b in the first dims dimensions.
func (b Box) Covers(o Box, dims int) bool {
	for d := range min(dims, MaxDims) {
		if !(b.Min[d] <= o.Min[d] && o.Max[d] <= b.Max[d]) {
			return false
		}
	}
	return true
}

// Union returns the smallest box containing a and b.
func (b Box) Union(o Box) Box {
	for d := range MaxDims {
		b.Min[d] = min(b.Min[d], o.Min[d])
		b.Max[d] = max(b.Max[d], o.Max[d])
	}
	return b
}

// Expand returns b grown by lo below and hi above in each dimension (negative
// values shrink it).
func (b Box) Expand(lo, hi Point) Box {
	for d := range MaxDims {
		b.Min[d] -= lo[d]
		b.Max[d] += hi[d]
	}
	return b
}

// Volume returns the product of the box's extents in the first dims
// dimensions (0 for an empty box, +Inf for an unbounded one).
func (b Box) Volume(dims int) float64 {
	if b.Empty(dims) {
		return 0
	}
	v := 1.0
	for d := range min(dims, MaxDims) {
		v *= b.Max[d] - b.Min[d]
	}
	return v
}

// Format writes b over the Space's attributes, as in
// "10 <= x <= 50 && 30 <= y <= 100".
func (s Space) Format(b Box) string {
	var sb strings.Builder
	for d, n := range s.names {
		if d > 0 {
			sb.WriteString(" && ")
		}
		fmt.Fprintf(&sb, "%g <= %s <= %g", b.Min[d], n, b.Max[d])
	}
	return sb.String()
}
