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

// TestRecorderAbandonedAfterWarmup: an object that enters an interest
// missing and leaves it before it is found is abandoned, counted (and in
// the share of the discoveries due) only when it entered after the
// warmup, as discoveries are.
func TestRecorderAbandonedAfterWarmup(t *testing.T) {
	r, err := NewRecorder(nil)
	if err != nil {
		t.Fatal(err)
	}
	r.SetWarmup(time.Second)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	for _, s := range []struct {
		at       time.Duration
		interest []uint64
		held     []bool
	}{
		{ms(500), []uint64{1}, []bool{false}},            // 1 enters before the warmup
		{ms(1100), []uint64{2, 3}, []bool{false, false}}, // 1 left unfound: not counted; 2 and 3 enter
		{ms(1200), []uint64{3, 4}, []bool{true, false}},  // 2 left unfound: abandoned; 3 found; 4 enters
		{ms(1300), []uint64{5}, []bool{false}},           // 4 left unfound: abandoned
	} {
		if err := r.View(1, s.at, s.interest, s.held); err != nil {
			t.Fatal(err)
		}
	}
	r.Forget(1) // 5 never found: abandoned
	v := r.Views()
	if v.Abandoned != 3 || v.Discovery.Count != 1 || v.AbandonedShare != 0.75 {
		t.Errorf("abandoned %d (share %v), discoveries %d; want 3 (0.75), 1", v.Abandoned, v.AbandonedShare, v.Discovery.Count)
	}
}
