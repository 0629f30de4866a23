package sim

import (
	"testing"
	"time"
)

// TestRecorderSetWarmup: a standalone recorder with a warmup leaves the
// reports before it out of the view measures, but still tracks when
// objects entered: a discovery after the warmup of an object that entered
// before it is not counted either (as under Config.Warmup).
func TestRecorderSetWarmup(t *testing.T) {
	r, err := NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.SetWarmup(time.Second)
	steps := []struct {
		at       time.Duration
		interest []uint64
		held     []bool
	}{
		{500 * time.Millisecond, []uint64{1}, []bool{false}},           // before: not counted
		{1500 * time.Millisecond, []uint64{1, 2}, []bool{true, false}}, // 1 discovered (entered before), 2 missing
		{1700 * time.Millisecond, []uint64{1, 2}, []bool{true, true}},  // 2 discovered after 200 ms
	}
	for _, s := range steps {
		if err := r.View(1, s.at, s.interest, s.held); err != nil {
			t.Fatal(err)
		}
	}
	v := r.Views()
	if v.Reports != 2 || v.Interesting != 4 || v.Missing[0].Missing != 1 {
		t.Errorf("reports %d, interesting %d, missing %d; want 2, 4, 1", v.Reports, v.Interesting, v.Missing[0].Missing)
	}
	if v.Discovery.Count != 1 || v.Discovery.Mean != 200 {
		t.Errorf("discoveries %d, mean %v ms; want 1 of 200 ms", v.Discovery.Count, v.Discovery.Mean)
	}
}
