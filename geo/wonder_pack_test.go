package geo

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// samePings reports the first directed pair where a and b differ in
// whether it was measured or in its average or minimum RTT.
func samePings(a, b *PingSet) error {
	if a.Len() != b.Len() || a.Pairs() != b.Pairs() {
		return fmt.Errorf("%d cities, %d pairs; want %d, %d", a.Len(), a.Pairs(), b.Len(), b.Pairs())
	}
	for i := 0; i < a.Len(); i++ {
		if a.City(i) != b.City(i) {
			return fmt.Errorf("city %d is %+v, want %+v", i, a.City(i), b.City(i))
		}
		for j := 0; j < a.Len(); j++ {
			av, aok := a.RTT(i, j)
			bv, bok := b.RTT(i, j)
			am, _ := a.MinRTT(i, j)
			bm, _ := b.MinRTT(i, j)
			if aok != bok || av != bv || am != bm {
				return fmt.Errorf("%d→%d: %v avg %v min %v, want %v avg %v min %v", i, j, aok, av, am, bok, bv, bm)
			}
		}
	}
	return nil
}

func wonderTestCities(n int) []City {
	cities := make([]City, n)
	for i := range cities {
		cities[i] = City{Name: fmt.Sprintf("C%d", i), ASCIIName: fmt.Sprintf("C%d", i), Lat: float64(i), Lon: float64(-i)}
	}
	return cities
}

func TestWonderRTTPackRoundTrips(t *testing.T) {
	cities := wonderTestCities(4)
	pings := []Ping{
		{From: "C0", To: "C1 Somewhere, Europe", Avg: 84.95, Min: 84.78},
		{From: "C1", To: "C0", Avg: 85.01, Min: 0},
		{From: "C0", To: "C3", Avg: 167772.14, Min: 0.01},
		{From: "C2", To: "C1", Avg: 336.8, Min: 336.37},
		{From: "C2", To: "Atlantis", Avg: 1, Min: 1}, // not a city: skipped
	}
	s, err := NewPingSet(cities, pings)
	if err != nil {
		t.Fatal(err)
	}
	packed, err := EncodeWonderRTT(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeWonderRTT(packed, cities)
	if err != nil {
		t.Fatal(err)
	}
	if err := samePings(back, s); err != nil {
		t.Error(err)
	}
	if back.Pairs() != 4 {
		t.Errorf("%d pairs, want 4", back.Pairs())
	}
}

// TestWonderRTTPackRoundTripsRandom packs seeded random ping sets, with
// RTT on the 0.01 ms grid and about a tenth of the pairs unmeasured, and
// decodes them back exactly.
func TestWonderRTTPackRoundTripsRandom(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 2))
		n := 1 + rng.IntN(30)
		cities := wonderTestCities(n)
		var pings []Ping
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i == j || rng.IntN(10) == 0 {
					continue
				}
				lo := rng.IntN(1 << 23)
				hi := lo + rng.IntN(1<<23)
				pings = append(pings, Ping{From: cities[i].Name, To: cities[j].Name, Min: float64(lo) / 100, Avg: float64(hi) / 100})
			}
		}
		s, err := NewPingSet(cities, pings)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		packed, err := EncodeWonderRTT(s)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		back, err := DecodeWonderRTT(packed, cities)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if err := samePings(back, s); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// TestWonderRTTPackReproducesEmbedded re-packs the embedded data set and
// checks that the bytes equal the embedded file: the writer is the one
// that made it.
func TestWonderRTTPackReproducesEmbedded(t *testing.T) {
	s, err := WonderNetwork()
	if err != nil {
		t.Fatal(err)
	}
	packed, err := EncodeWonderRTT(s)
	if err != nil {
		t.Fatal(err)
	}
	want, err := wonderFS.ReadFile("data/wondernetwork/rtt.bin.gz")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(packed, want) {
		t.Errorf("re-packed %d bytes differ from the embedded %d", len(packed), len(want))
	}
}

func gzipped(t testing.TB, raw []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestWonderRTTPackRejects(t *testing.T) {
	cities := wonderTestCities(2)
	for _, tc := range []struct {
		name     string
		avg, min float64
	}{
		{"avg off the grid", 1.005, 1},
		{"min off the grid", 2, 1.001},
		{"too large", 167772.15, 1},
	} {
		s, err := NewPingSet(cities, []Ping{{From: "C0", To: "C1", Avg: tc.avg, Min: tc.min}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := EncodeWonderRTT(s); !errors.Is(err, ErrInvalidLatency) {
			t.Errorf("%s: error %v, want ErrInvalidLatency", tc.name, err)
		}
	}

	s, err := NewPingSet(cities, []Ping{{From: "C0", To: "C1", Avg: 2, Min: 1}})
	if err != nil {
		t.Fatal(err)
	}
	packed, err := EncodeWonderRTT(s)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := gunzip(packed)
	if err != nil {
		t.Fatal(err)
	}
	self := bytes.Clone(raw)
	self[wnHeader+2*4] = 1 // low byte plane of avg, pair 0→0
	self[wnHeader+3*4+2*4] = 1
	oneSided := bytes.Clone(raw)
	oneSided[wnHeader+3*4+2*4+1] = 0 // min of pair 0→1 unmeasured, avg measured
	version := bytes.Clone(raw)
	version[4] = 2
	for _, tc := range []struct {
		name   string
		packed []byte
		cities []City
		want   error
	}{
		{"not gzip", []byte("not gzip"), cities, ErrSyntax},
		{"empty", gzipped(t, nil), cities, ErrSyntax},
		{"magic", gzipped(t, append([]byte("OWPL"), raw[4:]...)), cities, ErrSyntax},
		{"version", gzipped(t, version), cities, ErrSyntax},
		{"truncated", gzipped(t, raw[:len(raw)-1]), cities, ErrSyntax},
		{"self", gzipped(t, self), cities, ErrSyntax},
		{"avg without min", gzipped(t, oneSided), cities, ErrSyntax},
		{"city count", packed, wonderTestCities(3), ErrShape},
		{"duplicate city", packed, []City{{Name: "A"}, {Name: "A"}}, ErrDuplicateName},
	} {
		if _, err := DecodeWonderRTT(tc.packed, tc.cities); !errors.Is(err, tc.want) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.want)
		}
	}
}

// FuzzDecodeWonderRTT decodes arbitrary bytes (gzipped by the harness, so
// that the fuzzer reaches the format itself) over three cities; whatever it
// accepts must re-pack and decode to the same set.
func FuzzDecodeWonderRTT(f *testing.F) {
	cities := wonderTestCities(3)
	s, err := NewPingSet(cities, []Ping{
		{From: "C0", To: "C1", Avg: 2, Min: 1},
		{From: "C2", To: "C0", Avg: 300.25, Min: 299.99},
	})
	if err != nil {
		f.Fatal(err)
	}
	packed, err := EncodeWonderRTT(s)
	if err != nil {
		f.Fatal(err)
	}
	raw, err := gunzip(packed)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte("OWWN\x01\x00\x00\x00\x00\x03"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := DecodeWonderRTT(gzipped(t, raw), cities)
		if err != nil {
			return
		}
		again, err := EncodeWonderRTT(s)
		if err != nil {
			t.Fatalf("re-packing a decoded set: %v", err)
		}
		back, err := DecodeWonderRTT(again, cities)
		if err != nil {
			t.Fatalf("decoding a re-packed set: %v", err)
		}
		if err := samePings(back, s); err != nil {
			t.Fatal(err)
		}
	})
}
