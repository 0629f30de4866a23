package placement

import (
	"math"
	"slices"
)

// meanP95 returns the mean and the 95th percentile (nearest rank) of xs,
// which it sorts.
func meanP95(xs []float64) (mean, p95 float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	slices.Sort(xs)
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs)), xs[max(0, int(math.Ceil(0.95*float64(len(xs))))-1)]
}

// medianOf returns the mean and median of xs, which it sorts.
func medianOf(xs []float64) (mean, median float64) {
	m, _ := meanP95(xs)
	return m, xs[len(xs)/2]
}
