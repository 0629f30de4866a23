package estimate

import (
	"errors"
	"fmt"
	"math"

	"github.com/overworld/overworld/geo"
)

// Estimator answers "how far apart are endpoints i and j" in ms for
// endpoints 0..Len()-1. Estimate must be cheap (a query is a few dozen
// flops), symmetric, 0 for i == j, and finite and non-negative otherwise.
// A method that has not yet learnt anything about an endpoint still
// answers (its estimate is then poor); Uncertain says how poor.
type Estimator interface {
	Len() int
	Estimate(i, j int) float64
}

// Uncertain is implemented by estimators that know how good each answer
// is: Uncertainty(i, j) is the method's own prediction of the absolute
// relative error of Estimate(i, j) (0 = exact, 1 = off by 100%), computed
// from its residuals on the pairs it measured, never from the truth.
type Uncertain interface {
	Estimator
	Uncertainty(i, j int) float64
}

// Errors returned (wrapped) by this package.
var (
	// ErrConfig reports a bad configuration value.
	ErrConfig = errors.New("estimate: bad configuration")
	// ErrShape reports a matrix that is not square, or names and data that
	// do not match.
	ErrShape = errors.New("estimate: bad matrix shape")
	// ErrIndex reports an endpoint index out of range.
	ErrIndex = errors.New("estimate: endpoint out of range")
	// ErrNilRand reports a nil *rand.Rand where randomness is needed.
	ErrNilRand = errors.New("estimate: nil *rand.Rand")
	// ErrTooFew reports too few endpoints, landmarks or measurements for a
	// method to work.
	ErrTooFew = errors.New("estimate: too few measurements")
)

// Exact is the trivial estimator: every pair measured, read from a matrix.
// It makes a geo.Matrix usable wherever an Estimator is, so an algorithm
// never cares where its latencies come from.
type Exact struct{ M *geo.Matrix }

// Len returns the number of endpoints (rows) of the matrix.
func (e Exact) Len() int { return e.M.Rows() }

// Estimate returns the measured latency: the mean of the two directions.
func (e Exact) Estimate(i, j int) float64 { return (e.M.At(i, j) + e.M.At(j, i)) / 2 }

// Uncertainty is 0: measurements are taken as exact.
func (e Exact) Uncertainty(i, j int) float64 { return 0 }

// Matrix materialises an estimator as a geo.Matrix over the given rows and
// columns (endpoint indices), named from names (one name per endpoint of
// e). It is how a placement algorithm (place/core, place/cma) consumes
// estimates: those packages take a *geo.Matrix and never import estimate.
// Rows and columns may overlap (a square sub-matrix when they are equal).
func Matrix(e Estimator, names []string, rows, cols []int) (*geo.Matrix, error) {
	n := e.Len()
	if len(names) != n {
		return nil, fmt.Errorf("%w: %d names for %d endpoints", ErrShape, len(names), n)
	}
	rn, cn := make([]string, len(rows)), make([]string, len(cols))
	for a, i := range rows {
		if i < 0 || i >= n {
			return nil, fmt.Errorf("%w: row %d not in [0,%d)", ErrIndex, i, n)
		}
		rn[a] = names[i]
	}
	for b, j := range cols {
		if j < 0 || j >= n {
			return nil, fmt.Errorf("%w: column %d not in [0,%d)", ErrIndex, j, n)
		}
		cn[b] = names[j]
	}
	data := make([][]float64, len(rows))
	for a, i := range rows {
		data[a] = make([]float64, len(cols))
		for b, j := range cols {
			v := 0.0
			if i != j {
				v = e.Estimate(i, j)
			}
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("estimate: estimator returned %g for %q–%q", v, names[i], names[j])
			}
			data[a][b] = v
		}
	}
	return geo.NewMatrix(rn, cn, data)
}

// All returns 0..n-1, the rows or columns of a full matrix.
func All(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
