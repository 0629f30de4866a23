package sim

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"strconv"
	"testing"
)

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

// FuzzReadSummary: arbitrary bytes never panic ReadSummary, and what it
// accepts writes back to JSON that reads back to the same bytes again.
func FuzzReadSummary(f *testing.F) {
	golden, err := os.ReadFile("testdata/metrics.golden.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(golden)
	f.Add([]byte(`{"schema":"overworld-sim/1"}`))
	f.Add([]byte(`{"schema":"overworld-sim/1"} {}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		sum, err := ReadSummary(bytes.NewReader(data))
		if err != nil {
			return
		}
		var a, b bytes.Buffer
		if err := sum.WriteJSON(&a); err != nil {
			return // e.g. a value JSON cannot hold
		}
		again, err := ReadSummary(bytes.NewReader(a.Bytes()))
		if err != nil {
			t.Fatalf("re-reading written summary: %v\n%s", err, a.Bytes())
		}
		if err := again.WriteJSON(&b); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("summary does not round-trip: %v\n%s\n%s", err, a.Bytes(), b.Bytes())
		}
	})
}
