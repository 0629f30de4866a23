package estimate

import (
	"math"
	"slices"
)

// Accuracy scores an estimator against a Truth with the paper's metric
// (§6.3.1): the directed relative error (estimated − measured) / measured
// of every unordered pair of endpoints, its distribution, and the summary
// figures the paper and the issue quote.
type Accuracy struct {
	// Pairs is the number of pairs scored; Missing the number skipped
	// because the truth has no value in either direction.
	Pairs, Missing int
	// Errors holds the directed relative error of every scored pair,
	// ascending (so it is its own CDF: Errors[k] is the (k+1)/Pairs
	// quantile).
	Errors []float64
	// Within15 and Within50 are the shares of pairs with |error| ≤ 0.15
	// and ≤ 0.50 (the paper's "within 15%" and "within 50%").
	Within15, Within50 float64
	// MedianAbs and P90Abs are the median and 90th percentile of |error|.
	MedianAbs, P90Abs float64
	// MedianDir is the median directed error (negative: underestimates).
	MedianDir float64
}

// Evaluate scores e on every unordered pair {i, j}, i < j, of t's
// endpoints for which skip (may be nil) returns false. Pairs missing in t
// count in Missing and are not scored. A non-finite or negative estimate
// scores as an error of +Inf (it is never silently dropped).
func Evaluate(e Estimator, t *Truth, skip func(i, j int) bool) Accuracy {
	var a Accuracy
	n := t.Len()
	a.Errors = make([]float64, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if skip != nil && skip(i, j) {
				continue
			}
			m, ok := t.Value(i, j)
			if !ok {
				a.Missing++
				continue
			}
			est := e.Estimate(i, j)
			rel := (est - m) / m
			if math.IsNaN(est) || math.IsInf(est, 0) || est < 0 {
				rel = math.Inf(1)
			}
			a.Errors = append(a.Errors, rel)
		}
	}
	return summarise(a)
}

// AccuracyOf summarises a set of directed relative errors (for example
// those of the reported eccentricities in the core-selection experiment).
func AccuracyOf(errs []float64) Accuracy {
	return summarise(Accuracy{Errors: slices.Clone(errs)})
}

func summarise(a Accuracy) Accuracy {
	a.Pairs = len(a.Errors)
	if a.Pairs == 0 {
		return a
	}
	slices.Sort(a.Errors)
	abs := make([]float64, len(a.Errors))
	w15, w50 := 0, 0
	for k, v := range a.Errors {
		abs[k] = math.Abs(v)
		if abs[k] <= 0.15 {
			w15++
		}
		if abs[k] <= 0.5 {
			w50++
		}
	}
	slices.Sort(abs)
	a.Within15 = float64(w15) / float64(a.Pairs)
	a.Within50 = float64(w50) / float64(a.Pairs)
	a.MedianAbs = Quantile(abs, 0.5)
	a.P90Abs = Quantile(abs, 0.9)
	a.MedianDir = Quantile(a.Errors, 0.5)
	return a
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1) of an ascending slice by
// linear interpolation between closest ranks; 0 for an empty slice.
func Quantile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	pos := q * float64(n-1)
	lo := int(math.Floor(pos))
	if lo >= n-1 {
		return sorted[n-1]
	}
	f := pos - float64(lo)
	if f == 0 {
		return sorted[lo]
	}
	return sorted[lo] + f*(sorted[lo+1]-sorted[lo])
}
