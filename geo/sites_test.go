package geo

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"
)

var nan = math.NaN()

func TestSitesOneWayIsHalfTheRTT(t *testing.T) {
	s := square(t, []string{"a", "b"}, [][]float64{{0, 80.5}, {81, 0}})
	if got := s.OneWay(0, 1); got != 40250*time.Microsecond {
		t.Errorf("a→b = %v, want 40.25ms (half of 80.5 ms)", got)
	}
	if got := s.OneWay(1, 0); got != 40500*time.Microsecond {
		t.Errorf("b→a = %v, want 40.5ms (directions are not symmetrized)", got)
	}
	if got := s.OneWay(1, 1); got != 0 {
		t.Errorf("b→b = %v, want 0", got)
	}
	if f := s.Fill(); f != (SiteFill{Measured: 2}) {
		t.Errorf("fill %+v, want 2 measured", f)
	}
}

func TestSitesFillIn(t *testing.T) {
	// a→b measured; b→a missing (NaN) → reverse. c→a and a→c missing in both
	// directions → detour: min over k of rtt(c,k)+rtt(k,a) with k = b (the
	// only third site): c→b 30 + b→a (reversed: 80) = 110; a→c = a→b 80 +
	// b→c (reversed from c→b: 30) = 110. b→c is 0 = missing → reverse 30.
	s := square(t, []string{"a", "b", "c"}, [][]float64{
		{0, 80, nan},
		{nan, 0, 0},
		{0, 30, nan},
	})
	want := map[[2]int]float64{{0, 1}: 80, {1, 0}: 80, {1, 2}: 30, {2, 1}: 30, {0, 2}: 110, {2, 0}: 110}
	for p, rtt := range want {
		if got := s.OneWay(p[0], p[1]); got != time.Duration(rtt*1e6/2) {
			t.Errorf("%s→%s = %v, want %v", s.Name(p[0]), s.Name(p[1]), got, time.Duration(rtt*1e6/2))
		}
	}
	if f := s.Fill(); f != (SiteFill{Measured: 2, Reverse: 2, Detour: 2}) || f.Filled() != 4 {
		t.Errorf("fill %+v, want 2 measured, 2 reverse, 2 detour", f)
	}
}

// TestSitesDetourIsShortest checks the detour fill-in against a brute-force
// reference on seeded random sparse matrices.
func TestSitesDetourIsShortest(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		n := 2 + rng.IntN(8)
		names := make([]string, n)
		rtt := make([][]float64, n)
		for i := range rtt {
			names[i] = string(rune('a' + i))
			rtt[i] = make([]float64, n)
			for j := range rtt[i] {
				if i != j && rng.Float64() < 0.6 {
					rtt[i][j] = 1 + float64(rng.IntN(200))
				} else if i != j {
					rtt[i][j] = nan
				}
			}
		}
		s, err := NewSites(names, rtt)
		// Reference: reverse, then min two-leg over reverse-completed values.
		known := func(i, j int) float64 {
			if v := rtt[i][j]; !math.IsNaN(v) {
				return v
			}
			return rtt[j][i]
		}
		ok := true
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i == j || !math.IsNaN(known(i, j)) {
					continue
				}
				best := math.Inf(1)
				for k := 0; k < n; k++ {
					if k != i && k != j {
						if d := known(i, k) + known(k, j); d < best {
							best = d
						}
					}
				}
				if math.IsInf(best, 1) {
					ok = false
					continue
				}
				if err == nil && s.OneWay(i, j) != time.Duration(math.Round(best*1e6/2)) {
					t.Fatalf("seed %d: %d→%d = %v, want half of %g ms", seed, i, j, s.OneWay(i, j), best)
				}
			}
		}
		if ok != (err == nil) {
			t.Fatalf("seed %d: fillable = %v but NewSites error = %v", seed, ok, err)
		}
	}
}

func TestSitesRejectsBadInput(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name  string
		names []string
		rtt   [][]float64
		want  string
	}{
		{"empty", nil, nil, "no sites"},
		{"rows", []string{"a", "b"}, [][]float64{{0, 1}}, "2 names for 1 rows"},
		{"ragged", []string{"a", "b"}, [][]float64{{0, 1}, {1}}, `row 1 ("b") has 1 entries, want 2`},
		{"negative", []string{"a", "b"}, [][]float64{{0, -1}, {1, 0}}, `RTT from "a" to "b" is -1 ms`},
		{"infinite", []string{"a", "b"}, [][]float64{{0, 1}, {inf, 0}}, `RTT from "b" to "a" is +Inf ms`},
		{"too large", []string{"a", "b"}, [][]float64{{0, 4e6}, {1, 0}}, `RTT from "a" to "b" is 4e+06 ms (want 0 to 3.6e+06 ms`},
		{"diagonal", []string{"a", "b"}, [][]float64{{0, 1}, {1, 3}}, `diagonal entry 1 ("b") is 3 ms`},
		{"duplicate", []string{"a", "a"}, [][]float64{{0, 1}, {1, 0}}, `site name "a" at 0 and 1`},
		{"empty name", []string{"a", ""}, [][]float64{{0, 1}, {1, 0}}, "site 1 has an empty name"},
		{"all NaN", []string{"a", "b"}, [][]float64{{nan, nan}, {nan, nan}}, `no RTT from "a" to "b"`},
		{"unfillable", []string{"a", "b", "c"}, [][]float64{{0, 1, 0}, {1, 0, 0}, {0, 0, 0}}, `no RTT from "a" to "c"`},
	}
	for _, c := range cases {
		_, err := NewSites(c.names, c.rtt)
		if err == nil || !errors.Is(err, ErrSites) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want ErrSites containing %q", c.name, err, c.want)
		}
	}
	if _, err := SitesFromMatrix(nil); !errors.Is(err, ErrSites) {
		t.Errorf("nil matrix: %v", err)
	}
	rect, err := NewMatrix([]string{"p"}, []string{"a", "b"}, [][]float64{{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := SitesFromMatrix(rect); !errors.Is(err, ErrSites) || !strings.Contains(err.Error(), "1×2") {
		t.Errorf("rectangular matrix: %v", err)
	}
}

func TestSitesFromMatrixFillsZeros(t *testing.T) {
	m, err := NewSquare([]string{"x", "y", "z"}, [][]float64{{0, 10, 0}, {10, 0, 20}, {0, 20, 0}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := SitesFromMatrix(m)
	if err != nil {
		t.Fatal(err)
	}
	if f := s.Fill(); f.Detour != 2 || f.Reverse != 0 || f.Measured != 4 {
		t.Errorf("fill %+v, want 4 measured and 2 detours", f)
	}
	if got := s.OneWay(0, 2); got != 15*time.Millisecond {
		t.Errorf("x→z = %v, want 15ms (detour 10 + 20 ms RTT, halved)", got)
	}
}

func TestEmbeddedSites(t *testing.T) {
	pl, err := PlanetLabSites(1)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Len() != 490 || pl.Fill().Filled() != 0 || pl.Fill().Measured != 490*489 {
		t.Errorf("PlanetLab slice 1: %d sites, fill %+v; want 490 complete", pl.Len(), pl.Fill())
	}
	m, _ := PlanetLab(1)
	if got, want := pl.OneWay(3, 7), time.Duration(math.Round(m.At(3, 7)*1e6/2)); got != want {
		t.Errorf("pl003→pl007 = %v, want %v", got, want)
	}
	if _, err := PlanetLabSites(19); err == nil {
		t.Error("slice 19 accepted")
	}
	wn, err := WonderNetworkSites([]string{"London", "Tokyo", "New York"})
	if err != nil {
		t.Fatal(err)
	}
	if wn.Len() != 3 || wn.Name(1) != "Tokyo" {
		t.Errorf("WonderNetwork sites: %d, %q", wn.Len(), wn.Name(1))
	}
	if d := wn.OneWay(0, 1); d < 50*time.Millisecond || d > 200*time.Millisecond {
		t.Errorf("London→Tokyo one way = %v, want 50–200 ms", d)
	}
	if _, err := WonderNetworkSites([]string{"Atlantis"}); err == nil {
		t.Error("unknown city accepted")
	}
}

func square(t *testing.T, names []string, rtt [][]float64) *Sites {
	t.Helper()
	s, err := NewSites(names, rtt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// FuzzNewSites feeds arbitrary latency tables (NaN, zeros, negatives,
// infinities, any shape) to NewSites: it must never panic, and a table it
// accepts must be complete: every one-way delay ≥ 0, zero on the diagonal,
// and the fill counts must add up to every ordered pair.
func FuzzNewSites(f *testing.F) {
	f.Add(uint8(3), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint8(2), binary.LittleEndian.AppendUint64(nil, math.Float64bits(80)))
	f.Add(uint8(4), binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN())))
	f.Fuzz(func(t *testing.T, n uint8, raw []byte) {
		k := int(n % 9)
		names := make([]string, k)
		rows := make([][]float64, k)
		for i := range rows {
			names[i] = strconv.Itoa(i)
			rows[i] = make([]float64, k)
			for j := range rows[i] {
				if off := 8 * (i*k + j); off+8 <= len(raw) {
					rows[i][j] = math.Float64frombits(binary.LittleEndian.Uint64(raw[off:]))
				}
			}
		}
		s, err := NewSites(names, rows)
		if err != nil {
			return
		}
		f := s.Fill()
		if f.Measured+f.Reverse+f.Detour != k*(k-1) {
			t.Fatalf("fill %+v does not cover the %d ordered pairs", f, k*(k-1))
		}
		for i := 0; i < k; i++ {
			for j := 0; j < k; j++ {
				if d := s.OneWay(i, j); d < 0 || (i == j && d != 0) {
					t.Fatalf("one-way %d→%d = %v", i, j, d)
				}
			}
		}
	})
}
