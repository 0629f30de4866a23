package geo

import (
	"errors"
	"fmt"
	"math"
)

// Matrix holds latencies in milliseconds from a set of row endpoints to a set
// of column endpoints, stored densely in row-major order. A square matrix
// (the same endpoints as rows and columns) describes all-pairs latency within
// one population; a rectangular one describes, for example, players to
// servers.
//
// A Matrix returned by this package is always valid: every entry is finite
// and non-negative, and names are unique within rows and within columns.
// Matrices are immutable after construction; methods that change shape
// return a new Matrix.
type Matrix struct {
	rows, cols []string
	rowIndex   map[string]int
	colIndex   map[string]int
	data       []float64 // len(rows)*len(cols), row-major
}

// Sentinel errors returned (wrapped) by matrix constructors and loaders.
var (
	// ErrInvalidLatency reports an entry that is NaN, infinite or negative.
	ErrInvalidLatency = errors.New("geo: invalid latency")
	// ErrShape reports rows of unequal length, a non-square matrix where a
	// square one is required, or names that do not match the data.
	ErrShape = errors.New("geo: bad matrix shape")
	// ErrDuplicateName reports an endpoint name used twice.
	ErrDuplicateName = errors.New("geo: duplicate endpoint name")
	// ErrUnknownName reports an endpoint name that is not in the matrix.
	ErrUnknownName = errors.New("geo: unknown endpoint name")
)

// NewMatrix builds a rectangular matrix from row names, column names and
// rows of latencies in ms (len(data) == len(rows), len(data[i]) == len(cols)).
// The data is copied. It rejects NaN, infinite and negative entries, ragged
// rows and duplicate names with an error naming the offending position.
func NewMatrix(rows, cols []string, data [][]float64) (*Matrix, error) {
	if len(data) != len(rows) {
		return nil, fmt.Errorf("%w: %d row names for %d rows", ErrShape, len(rows), len(data))
	}
	m := &Matrix{
		rows: append([]string(nil), rows...),
		cols: append([]string(nil), cols...),
		data: make([]float64, 0, len(rows)*len(cols)),
	}
	var err error
	if m.rowIndex, err = indexNames(m.rows, "row"); err != nil {
		return nil, err
	}
	if m.colIndex, err = indexNames(m.cols, "column"); err != nil {
		return nil, err
	}
	for i, r := range data {
		if len(r) != len(cols) {
			return nil, fmt.Errorf("%w: row %d (%q) has %d entries, want %d", ErrShape, i, rows[i], len(r), len(cols))
		}
		for j, v := range r {
			if err := checkLatency(v); err != nil {
				return nil, fmt.Errorf("%w at row %d (%q), column %d (%q)", err, i, rows[i], j, cols[j])
			}
		}
		m.data = append(m.data, r...)
	}
	return m, nil
}

// NewSquare builds a square matrix over one set of endpoints: data[i][j] is
// the latency from names[i] to names[j]. The diagonal must be zero.
func NewSquare(names []string, data [][]float64) (*Matrix, error) {
	m, err := NewMatrix(names, names, data)
	if err != nil {
		return nil, err
	}
	for i := range names {
		if v := m.At(i, i); v != 0 {
			return nil, fmt.Errorf("%w: diagonal entry %d (%q) is %g, want 0", ErrShape, i, names[i], v)
		}
	}
	return m, nil
}

// NewSquareFlat is NewSquare for a flat row-major slice of len(names)^2
// entries. The slice is copied.
func NewSquareFlat(names []string, flat []float64) (*Matrix, error) {
	n := len(names)
	if len(flat) != n*n {
		return nil, fmt.Errorf("%w: %d entries for %d×%d", ErrShape, len(flat), n, n)
	}
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = flat[i*n : (i+1)*n]
	}
	return NewSquare(names, rows)
}

func checkLatency(v float64) error {
	switch {
	case math.IsNaN(v):
		return fmt.Errorf("%w: NaN", ErrInvalidLatency)
	case math.IsInf(v, 0):
		return fmt.Errorf("%w: infinite", ErrInvalidLatency)
	case v < 0:
		return fmt.Errorf("%w: negative (%g)", ErrInvalidLatency, v)
	}
	return nil
}

func indexNames(names []string, what string) (map[string]int, error) {
	idx := make(map[string]int, len(names))
	for i, n := range names {
		if j, dup := idx[n]; dup {
			return nil, fmt.Errorf("%w: %s name %q at %d and %d", ErrDuplicateName, what, n, j, i)
		}
		idx[n] = i
	}
	return idx, nil
}

// Rows returns the number of row endpoints.
func (m *Matrix) Rows() int { return len(m.rows) }

// Cols returns the number of column endpoints.
func (m *Matrix) Cols() int { return len(m.cols) }

// Square reports whether rows and columns are the same endpoints in the same order.
func (m *Matrix) Square() bool {
	if len(m.rows) != len(m.cols) {
		return false
	}
	for i := range m.rows {
		if m.rows[i] != m.cols[i] {
			return false
		}
	}
	return true
}

// RowNames returns a copy of the row endpoint names.
func (m *Matrix) RowNames() []string { return append([]string(nil), m.rows...) }

// ColNames returns a copy of the column endpoint names.
func (m *Matrix) ColNames() []string { return append([]string(nil), m.cols...) }

// RowName returns the name of row i.
func (m *Matrix) RowName(i int) string { return m.rows[i] }

// ColName returns the name of column j.
func (m *Matrix) ColName(j int) string { return m.cols[j] }

// RowIndex returns the index of the named row endpoint.
func (m *Matrix) RowIndex(name string) (int, bool) { i, ok := m.rowIndex[name]; return i, ok }

// ColIndex returns the index of the named column endpoint.
func (m *Matrix) ColIndex(name string) (int, bool) { j, ok := m.colIndex[name]; return j, ok }

// At returns the latency in ms from row i to column j. It panics if i or j is
// out of range, like a slice index.
func (m *Matrix) At(i, j int) float64 { return m.data[i*len(m.cols)+j] }

// Row returns a copy of row i.
func (m *Matrix) Row(i int) []float64 {
	c := len(m.cols)
	return append([]float64(nil), m.data[i*c:(i+1)*c]...)
}

// Lookup returns the latency between two named endpoints.
func (m *Matrix) Lookup(row, col string) (float64, error) {
	i, ok := m.rowIndex[row]
	if !ok {
		return 0, fmt.Errorf("%w: row %q", ErrUnknownName, row)
	}
	j, ok := m.colIndex[col]
	if !ok {
		return 0, fmt.Errorf("%w: column %q", ErrUnknownName, col)
	}
	return m.At(i, j), nil
}

// Symmetrization says how Symmetrize combines the two directions of a pair.
type Symmetrization int

const (
	// SymMean uses (a→b + b→a) / 2.
	SymMean Symmetrization = iota
	// SymMin uses the smaller direction (the better-measured path).
	SymMin
	// SymMax uses the larger direction (a conservative bound).
	SymMax
	// SymUpper copies the upper triangle (i < j) onto the lower one.
	SymUpper
)

// String names the symmetrization ("mean", "min", "max", "upper").
func (s Symmetrization) String() string {
	switch s {
	case SymMean:
		return "mean"
	case SymMin:
		return "min"
	case SymMax:
		return "max"
	case SymUpper:
		return "upper"
	}
	return fmt.Sprintf("Symmetrization(%d)", int(s))
}

// Symmetrize returns a symmetric copy of a square matrix, combining a→b and
// b→a as s says. It fails on a non-square matrix.
func (m *Matrix) Symmetrize(s Symmetrization) (*Matrix, error) {
	if !m.Square() {
		return nil, fmt.Errorf("%w: symmetrize needs a square matrix, have %d×%d", ErrShape, m.Rows(), m.Cols())
	}
	if err := s.valid(); err != nil {
		return nil, err
	}
	n := len(m.rows)
	out := m.clone()
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			v := s.combine(m.At(i, j), m.At(j, i))
			out.data[i*n+j], out.data[j*n+i] = v, v
		}
	}
	return out, nil
}

func (s Symmetrization) valid() error {
	if s < SymMean || s > SymUpper {
		return fmt.Errorf("geo: unknown symmetrization %d", int(s))
	}
	return nil
}

// combine merges the two directions of a pair, ab (a→b) and ba (b→a), as s
// says; s must be valid.
func (s Symmetrization) combine(ab, ba float64) float64 {
	switch s {
	case SymMin:
		return math.Min(ab, ba)
	case SymMax:
		return math.Max(ab, ba)
	case SymUpper:
		return ab
	default:
		return (ab + ba) / 2
	}
}

// Symmetric reports whether a square matrix equals its transpose within tol ms.
func (m *Matrix) Symmetric(tol float64) bool {
	if !m.Square() {
		return false
	}
	n := len(m.rows)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if math.Abs(m.At(i, j)-m.At(j, i)) > tol {
				return false
			}
		}
	}
	return true
}

func (m *Matrix) clone() *Matrix {
	return &Matrix{rows: m.rows, cols: m.cols, rowIndex: m.rowIndex, colIndex: m.colIndex,
		data: append([]float64(nil), m.data...)}
}

// Sub returns the sub-matrix of the given row and column indices, in the
// given order. Indices must be in range and not repeated.
func (m *Matrix) Sub(rows, cols []int) (*Matrix, error) {
	rn, err := pick(m.rows, rows, "row")
	if err != nil {
		return nil, err
	}
	cn, err := pick(m.cols, cols, "column")
	if err != nil {
		return nil, err
	}
	data := make([][]float64, len(rows))
	for a, i := range rows {
		data[a] = make([]float64, len(cols))
		for b, j := range cols {
			data[a][b] = m.At(i, j)
		}
	}
	return NewMatrix(rn, cn, data)
}

// SubSquare returns the square sub-matrix over the given endpoint indices of
// a square matrix.
func (m *Matrix) SubSquare(idx []int) (*Matrix, error) {
	if !m.Square() {
		return nil, fmt.Errorf("%w: SubSquare needs a square matrix, have %d×%d", ErrShape, m.Rows(), m.Cols())
	}
	return m.Sub(idx, idx)
}

// SubNames returns the sub-matrix of the named rows and columns.
func (m *Matrix) SubNames(rows, cols []string) (*Matrix, error) {
	ri := make([]int, len(rows))
	for a, r := range rows {
		i, ok := m.rowIndex[r]
		if !ok {
			return nil, fmt.Errorf("%w: row %q", ErrUnknownName, r)
		}
		ri[a] = i
	}
	ci := make([]int, len(cols))
	for b, c := range cols {
		j, ok := m.colIndex[c]
		if !ok {
			return nil, fmt.Errorf("%w: column %q", ErrUnknownName, c)
		}
		ci[b] = j
	}
	return m.Sub(ri, ci)
}

func pick(names []string, idx []int, what string) ([]string, error) {
	out := make([]string, len(idx))
	seen := make(map[int]bool, len(idx))
	for a, i := range idx {
		if i < 0 || i >= len(names) {
			return nil, fmt.Errorf("%w: %s index %d out of range [0,%d)", ErrShape, what, i, len(names))
		}
		if seen[i] {
			return nil, fmt.Errorf("%w: %s index %d repeated", ErrDuplicateName, what, i)
		}
		seen[i] = true
		out[a] = names[i]
	}
	return out, nil
}

// newMatrixOwned builds a matrix that takes ownership of flat (row-major,
// len(rows)*len(cols)) without copying it. Like NewMatrix it rejects bad
// entries and duplicate names.
func newMatrixOwned(rows, cols []string, flat []float64) (*Matrix, error) {
	if len(flat) != len(rows)*len(cols) {
		return nil, fmt.Errorf("%w: %d entries for %d×%d", ErrShape, len(flat), len(rows), len(cols))
	}
	m := &Matrix{rows: rows, cols: cols, data: flat}
	var err error
	if m.rowIndex, err = indexNames(m.rows, "row"); err != nil {
		return nil, err
	}
	if m.colIndex, err = indexNames(m.cols, "column"); err != nil {
		return nil, err
	}
	c := len(cols)
	for k, v := range flat {
		if err := checkLatency(v); err != nil {
			i, j := k/c, k%c
			return nil, fmt.Errorf("%w at row %d (%q), column %d (%q)", err, i, rows[i], j, cols[j])
		}
	}
	return m, nil
}
