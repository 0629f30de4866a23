package sim

import (
	"bytes"
	"os"
	"testing"
)

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
