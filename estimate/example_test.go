package estimate_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/overworld/overworld/estimate"
)

// network returns n hosts in three regions of a 100 × 100 ms plane, each
// with its own access delay: RTT(i, j) = 2·distance + access(i) + access(j).
// The pair {1, 4} was never measured (a hole, 0 in the data).
func network(n int, rng *rand.Rand) ([]string, [][]float64) {
	centres := [][2]float64{{10, 10}, {80, 20}, {40, 90}}
	x, y, access := make([]float64, n), make([]float64, n), make([]float64, n)
	names := make([]string, n)
	for i := range n {
		c := centres[i%len(centres)]
		x[i], y[i] = c[0]+rng.NormFloat64()*8, c[1]+rng.NormFloat64()*8
		access[i] = 1 + rng.Float64()*4
		names[i] = fmt.Sprintf("host%02d", i)
	}
	rows := make([][]float64, n)
	for i := range n {
		rows[i] = make([]float64, n)
		for j := range n {
			if i != j {
				rows[i][j] = 2*math.Hypot(x[i]-x[j], y[i]-y[j]) + access[i] + access[j]
			}
		}
	}
	rows[1][4], rows[4][1] = 0, 0
	return names, rows
}

// Sixty hosts, each measuring its RTT to 8 landmarks only (an eighth of the
// pairs): every other RTT is estimated from those distance vectors.
func Example() {
	names, rows := network(60, rand.New(rand.NewPCG(7, 0)))
	truth, err := estimate.NewTruth(names, rows)
	if err != nil {
		panic(err)
	}
	fmt.Println(truth.Len(), "hosts,", len(truth.Missing()), "directed pairs never measured")

	spec := estimate.DefaultSpec(estimate.MethodLandmark)
	spec.Landmark.Landmarks = 8
	s, err := estimate.NewSession(spec, truth, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		panic(err)
	}
	e := s.Estimator()
	// Hosts 1, 4 and 7 share a region, host 2 is in another; none of
	// them is a landmark with this seed, so their RTTs are estimated (and
	// the pair {1, 4} has no measurement to compare with).
	for _, p := range [][2]int{{1, 4}, {1, 7}, {1, 2}} {
		est := e.Estimate(p[0], p[1])
		if rtt, ok := truth.Value(p[0], p[1]); ok {
			fmt.Printf("%s–%s: estimated %3.0f ms, measured %3.0f ms\n", names[p[0]], names[p[1]], est, rtt)
		} else {
			fmt.Printf("%s–%s: estimated %3.0f ms, never measured\n", names[p[0]], names[p[1]], est)
		}
	}
	// Score every pair the method did not measure against the truth.
	acc := estimate.Evaluate(e, truth, s.Measured)
	fmt.Printf("%d estimated pairs scored: %.0f%% within 15%%, %.0f%% within 50%%\n",
		acc.Pairs, 100*acc.Within15, 100*acc.Within50)
	// Output:
	// 60 hosts, 2 directed pairs never measured
	// host01–host04: estimated  22 ms, never measured
	// host01–host07: estimated  49 ms, measured  47 ms
	// host01–host02: estimated 132 ms, measured 133 ms
	// 1325 estimated pairs scored: 83% within 15%, 99% within 50%
}
