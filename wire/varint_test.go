package wire

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestReaderUvarint checks the reader's one-byte fast path against
// encoding/binary on every value of up to two bytes, random longer ones,
// truncated and overlong input, and reads after an error.
func TestReaderUvarint(t *testing.T) {
	check := func(p []byte) {
		t.Helper()
		r := reader{p: p}
		got := r.uvarint("x")
		want, k := binary.Uvarint(p)
		if k <= 0 {
			if r.err == nil || got != 0 || len(r.p) != 0 {
				t.Fatalf("%x: got %d, err %v, %d bytes left; want an error", p, got, r.err, len(r.p))
			}
			if again := r.uvarint("x"); again != 0 || len(r.p) != 0 {
				t.Fatalf("%x: read %d after an error", p, again)
			}
			return
		}
		if r.err != nil || got != want || len(r.p) != len(p)-k {
			t.Fatalf("%x: got %d, err %v, %d bytes left; want %d, %d left", p, got, r.err, len(r.p), want, len(p)-k)
		}
	}
	for v := range uint64(1 << 14) {
		check(binary.AppendUvarint(nil, v))
		check(binary.AppendUvarint(nil, v)[:1]) // truncated (or complete, below 128)
		check(append(binary.AppendUvarint(nil, v), 7, 0x80))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		check(binary.AppendUvarint(nil, rng.Uint64()>>rng.IntN(64)))
		p := make([]byte, rng.IntN(12))
		for i := range p {
			p[i] = byte(rng.IntN(256))
		}
		check(p)
	}
	check(nil)
	check([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}) // overlong
}
