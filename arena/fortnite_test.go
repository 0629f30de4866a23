package arena

import (
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

func randomTraces(rng *rand.Rand) []FortniteTrace {
	var out []FortniteTrace
	for range rng.IntN(5) {
		var tr FortniteTrace
		t := int32(0)
		for k := range rng.IntN(50) {
			if k > 0 {
				t += 1 + rng.Int32N(30)
			}
			tr = append(tr, FortniteSample{T: t, X: int16(rng.IntN(FortniteMapPixels + 1)), Y: int16(rng.IntN(FortniteMapPixels + 1))})
		}
		out = append(out, tr)
	}
	return out
}

func TestFortniteRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		traces := randomTraces(rand.New(rand.NewPCG(seed, 3)))
		got, err := DecodeFortnite(AppendFortnite(nil, traces))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if len(traces) == 0 && len(got) == 0 {
			continue
		}
		for i := range traces {
			if len(traces[i]) == 0 && len(got[i]) == 0 {
				got[i] = traces[i]
			}
		}
		if !reflect.DeepEqual(got, traces) {
			t.Fatalf("seed %d: round trip differs", seed)
		}
	}
}

func TestFortniteDecodeErrors(t *testing.T) {
	good := AppendFortnite(nil, []FortniteTrace{{{0, 10, 10}, {1, 12, 11}}})
	for _, tc := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"magic", []byte("OWFN\x02\x00")},
		{"truncated", good[:len(good)-1]},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"too many traces", append([]byte("OWFN\x01"), 0xff, 0xff, 0x7f)},
		{"off the map", AppendFortnite(nil, []FortniteTrace{{{0, 1500, 1500}, {1, 1500, 1500}}})[:0]},
		{"time stands still", []byte("OWFN\x01\x01\x02\x00\x02\x02\x00\x00\x00")},
		{"first time not 0", []byte("OWFN\x01\x01\x01\x05\x00\x00")},
		{"negative position", []byte("OWFN\x01\x01\x01\x00\x01\x00")},
	} {
		if _, err := DecodeFortnite(tc.p); !errors.Is(err, ErrFortnite) {
			t.Errorf("%s: err = %v, want ErrFortnite", tc.name, err)
		}
	}
}

func TestEmbeddedFortnite(t *testing.T) {
	traces, err := Fortnite()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range traces {
		n += len(tr)
	}
	if len(traces) != 840 || n != 418534 {
		t.Fatalf("%d traces, %d samples; want 840 and 418,534 (data/NOTICE.md)", len(traces), n)
	}
	for i, tr := range traces {
		if len(tr) == 0 || tr[0].T != 0 {
			t.Fatalf("trace %d is empty or does not start at time 0", i)
		}
	}
}

func FuzzDecodeFortnite(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	for range 8 {
		f.Add(AppendFortnite(nil, randomTraces(rng)))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		traces, err := DecodeFortnite(p)
		if err != nil {
			return
		}
		again, err := DecodeFortnite(AppendFortnite(nil, traces))
		if err != nil || len(again) != len(traces) {
			t.Fatalf("re-encoding a decoded file fails: %v", err)
		}
	})
}
