package estimate

import (
	"math"
	"strings"
	"testing"
)

// FuzzReadHoleyMatrix: ReadTruth (the --matrix reader of "overworld
// estimate") never panics, and what it accepts is a square matrix whose holes are exactly
// the entries that are not positive finite numbers off the diagonal.
func FuzzReadHoleyMatrix(f *testing.F) {
	for _, s := range []string{
		"0 10\n10 0\n",
		"0,1,nan\n1,0,-\n2,-3,0\n",
		"# comment\n0 5 0\n5 0 7\n0 7 0\n",
		"0 1\n1\n",
		"",
		"0 1e400\n1 0\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ReadTruth(strings.NewReader(in))
		if err != nil {
			return
		}
		n := tr.Len()
		if n < 2 {
			t.Fatalf("accepted %d endpoints", n)
		}
		holes := 0
		for i := range n {
			for j := range n {
				v, ok := tr.RTT(i, j)
				if i != j && ok && !(v > 0 && !math.IsInf(v, 0)) {
					t.Fatalf("entry (%d,%d) = %v accepted as a measurement", i, j, v)
				}
				if i != j && !ok {
					holes++
				}
			}
		}
		if holes != len(tr.Missing()) {
			t.Fatalf("%d holes, Missing lists %d", holes, len(tr.Missing()))
		}
	})
}
