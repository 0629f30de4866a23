package sim

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

func mustView(t *testing.T, r *Recorder, node wire.NodeID, at time.Duration, ids []uint64, held []bool) {
	t.Helper()
	if err := r.View(node, at, ids, held); err != nil {
		t.Fatal(err)
	}
}

// TestMissingReplicasByHand walks one node through a hand-made sequence and
// checks every number.
func TestMissingReplicasByHand(t *testing.T) {
	r, err := NewRecorder(nil) // 0, 100, 400 ms
	if err != nil {
		t.Fatal(err)
	}
	const n = 1
	// t=0: objects 1 (held on entry) and 2 (missing) enter.
	mustView(t, r, n, 0, []uint64{1, 2}, []bool{true, false})
	// t=100: 2 still missing (age 100: missing at grace 0 and 100); 3 enters missing.
	mustView(t, r, n, 100*ms1, []uint64{3, 1, 2}, []bool{false, true, false})
	// t=200: 2 discovered after 200 ms; 3 still missing (age 100).
	mustView(t, r, n, 200*ms1, []uint64{1, 2, 3}, []bool{true, true, false})
	// t=300: 3 leaves undiscovered (abandoned); 1 is lost (held, then not).
	mustView(t, r, n, 300*ms1, []uint64{1, 2}, []bool{false, true})
	// t=400: 3 re-enters (new entry time), missing at age 0; 1 still lost.
	mustView(t, r, n, 400*ms1, []uint64{1, 2, 3}, []bool{false, true, false})
	// t=900: 3 discovered after 500 ms; 1 back; an empty-interest report follows.
	mustView(t, r, n, 900*ms1, []uint64{1, 2, 3}, []bool{true, true, true})
	mustView(t, r, n, time.Second, nil, nil)

	v := r.Views()
	// Missing per report (grace 0 / 100 / 400):
	//   t=0:   {2} age 0            → 1 / 0 / 0   of 2
	//   t=100: {2 age 100, 3 age 0} → 2 / 1 / 0   of 3
	//   t=200: {3 age 100}          → 1 / 1 / 0   of 3
	//   t=300: {1 age 300}          → 1 / 1 / 0   of 2
	//   t=400: {1 age 400, 3 age 0} → 2 / 1 / 1   of 3
	//   t=900: none                 → 0           of 3
	//   t=1000: empty               → 0           of 0
	if v.Reports != 7 || v.Interesting != 16 {
		t.Fatalf("reports %d interesting %d, want 7 and 16", v.Reports, v.Interesting)
	}
	wantMissing := []uint64{7, 4, 1}
	wantFrame := []float64{
		(1.0/2 + 2.0/3 + 1.0/3 + 1.0/2 + 2.0/3 + 0) / 6,
		(0 + 1.0/3 + 1.0/3 + 1.0/2 + 1.0/3 + 0) / 6,
		(0 + 0 + 0 + 0 + 1.0/3 + 0) / 6,
	}
	for g, m := range v.Missing {
		if m.Missing != wantMissing[g] || !near(m.Fraction, float64(wantMissing[g])/16, 1e-12) || !near(m.FrameMean, wantFrame[g], 1e-12) {
			t.Errorf("grace %g ms: %+v, want missing %d, fraction %g, frame mean %g", m.GraceMs, m, wantMissing[g], float64(wantMissing[g])/16, wantFrame[g])
		}
	}
	if v.Discovery.Count != 2 || v.Discovery.P50 != 200 || v.Discovery.Max != 500 || v.Discovery.Mean != 350 {
		t.Errorf("discovery %+v, want samples 200 and 500 ms", v.Discovery)
	}
	if v.HeldOnEntry != 1 || v.Abandoned != 1 || v.Lost != 1 {
		t.Errorf("held on entry %d, abandoned %d, lost %d; want 1, 1, 1", v.HeldOnEntry, v.Abandoned, v.Lost)
	}
	if h := v.Discovery.Histogram; len(h) != 51 || h[20] != 1 || h[50] != 1 {
		t.Errorf("histogram %v, want one sample in bin 20 and one in bin 50", h)
	}
}

// TestRecorderAgainstReference replays seeded random interest sequences for
// several nodes and compares with a direct recomputation from the whole
// history.
func TestRecorderAgainstReference(t *testing.T) {
	grace := []time.Duration{0, 100 * ms1, 400 * ms1}
	for seed := uint64(1); seed <= 50; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		r, err := NewRecorder(grace)
		if err != nil {
			t.Fatal(err)
		}
		type state struct {
			in        bool
			entered   time.Duration
			held      bool
			found     bool
			everFound bool
		}
		var (
			missing     [3]uint64
			total       uint64
			discoveries []time.Duration
			abandoned   uint64
		)
		const nodes, objs = 3, 12
		st := make([][objs]state, nodes)
		for frame := 0; frame < 60; frame++ {
			now := time.Duration(frame) * 100 * ms1
			for nd := 0; nd < nodes; nd++ {
				var ids []uint64
				var held []bool
				for o := 0; o < objs; o++ {
					s := &st[nd][o]
					in := rng.Float64() < 0.5
					if !in {
						if s.in && !s.found {
							abandoned++
						}
						s.in = false
						continue
					}
					h := rng.Float64() < 0.6
					if !s.in {
						*s = state{in: true, entered: now, found: h}
					} else if !s.found && h {
						s.found = true
						discoveries = append(discoveries, now-s.entered)
					}
					s.held = h
					ids = append(ids, uint64(o)*7919)
					held = append(held, h)
					total++
					if !h {
						for g, gr := range grace {
							if now-s.entered >= gr {
								missing[g]++
							}
						}
					}
				}
				// Report in a shuffled order: order must not matter.
				perm := rng.Perm(len(ids))
				pid, ph := make([]uint64, len(ids)), make([]bool, len(ids))
				for i, p := range perm {
					pid[i], ph[i] = ids[p], held[p]
				}
				mustView(t, r, wire.NodeID(nd), now, pid, ph)
			}
		}
		v := r.Views()
		if v.Interesting != total || v.Abandoned != abandoned {
			t.Fatalf("seed %d: interesting %d abandoned %d, want %d %d", seed, v.Interesting, v.Abandoned, total, abandoned)
		}
		for g := range grace {
			if v.Missing[g].Missing != missing[g] {
				t.Fatalf("seed %d grace %v: missing %d, want %d", seed, grace[g], v.Missing[g].Missing, missing[g])
			}
		}
		if want := NewDist(discoveries); v.Discovery.Count != want.Count || v.Discovery.Mean != want.Mean || v.Discovery.P99 != want.P99 {
			t.Fatalf("seed %d: discovery %+v, want %+v", seed, v.Discovery, want)
		}
	}
}

// TestRecorderResolution feeds the same random interest sequences to a
// recorder at exact frame times and to one whose reports come a frame
// apart give or take up to a fifth of a frame (a live node's frames): with
// the frame as its resolution the second measures exactly what the first
// does; without it, objects missing at two consecutive reports count at a
// grace of one frame only when the second report ran late.
func TestRecorderResolution(t *testing.T) {
	const frame = 100 * ms1
	undercounted := 0
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		exact, _ := NewRecorder(nil)
		snapped, _ := NewRecorder(nil)
		snapped.SetResolution(frame)
		raw, _ := NewRecorder(nil)
		const nodes, objs = 3, 10
		in := make([][objs]bool, nodes)
		for f := range 80 {
			for nd := range nodes {
				var ids []uint64
				var held []bool
				for o := range objs {
					if rng.Float64() < 0.2 {
						in[nd][o] = !in[nd][o]
					}
					if in[nd][o] {
						ids = append(ids, uint64(o+1))
						held = append(held, rng.Float64() < 0.5)
					}
				}
				at := time.Duration(f) * frame
				jit := at + time.Duration(rng.Int64N(int64(frame/5)+1)) - frame/10
				jit = max(jit, 0)
				mustView(t, exact, wire.NodeID(nd), at, ids, held)
				mustView(t, snapped, wire.NodeID(nd), jit, ids, held)
				mustView(t, raw, wire.NodeID(nd), jit, ids, held)
			}
		}
		want, got := exact.Views(), snapped.Views()
		for g := range want.Missing {
			if got.Missing[g].Missing != want.Missing[g].Missing {
				t.Fatalf("seed %d, grace %g ms: %d missing with the resolution, %d at exact frames", seed, want.Missing[g].GraceMs, got.Missing[g].Missing, want.Missing[g].Missing)
			}
		}
		if got.Discovery.Count != want.Discovery.Count || got.Discovery.Mean != want.Discovery.Mean || got.Discovery.P95 != want.Discovery.P95 || got.Discovery.Max != want.Discovery.Max {
			t.Fatalf("seed %d: discovery %+v with the resolution, %+v at exact frames", seed, got.Discovery, want.Discovery)
		}
		if raw.Views().Missing[1].Missing < want.Missing[1].Missing {
			undercounted++
		}
	}
	if undercounted == 0 {
		t.Error("without the resolution the jittered reports never undercount at 100 ms: the test does not exercise it")
	}
}

func TestRecorderRejectsBadReportsUnchanged(t *testing.T) {
	r, _ := NewRecorder(nil)
	mustView(t, r, 1, 100*ms1, []uint64{1, 2}, []bool{false, false})
	before := r.Views()
	for _, err := range []error{
		r.View(1, 50*ms1, []uint64{1}, []bool{true}),                     // time went back
		r.View(1, 200*ms1, []uint64{1, 2, 1}, []bool{true, true, false}), // duplicate
		r.View(1, 200*ms1, []uint64{1, 2}, []bool{true}),                 // lengths
		r.View(1, -ms1, nil, nil),                                        // negative
	} {
		if err == nil {
			t.Fatal("bad report accepted")
		}
	}
	if after := r.Views(); after.Reports != before.Reports || after.Discovery.Count != 0 {
		t.Errorf("bad reports changed the recorder: %+v", after)
	}
	// The pair state survived: 1 is discovered 100 ms after entry.
	mustView(t, r, 1, 200*ms1, []uint64{1, 2}, []bool{true, false})
	if d := r.Views().Discovery; d.Count != 1 || d.Max != 100 {
		t.Errorf("discovery after rejected reports: %+v", d)
	}
	if _, err := NewRecorder([]time.Duration{5, 1}); !errors.Is(err, ErrConfig) {
		t.Errorf("descending grace: %v", err)
	}
}

func TestDist(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 100; i++ {
		s = append(s, time.Duration(i)*ms1)
	}
	s = append(s, 3*time.Second)
	orig := slices.Clone(s)
	slices.Reverse(s)
	d := NewDist(s)
	if d.Count != 101 || d.P50 != 51 || d.P95 != 96 || d.P99 != 100 || d.Max != 3000 || d.Over != 1 {
		t.Errorf("dist %+v", d)
	}
	if len(d.Histogram) != 11 || d.Histogram[0] != 9 || d.Histogram[10] != 1 {
		t.Errorf("histogram %v: want 1..9 ms in bin 0, 100 ms in bin 10", d.Histogram)
	}
	slices.Reverse(s)
	if !slices.Equal(s, orig) {
		t.Error("NewDist modified its input")
	}
	if e := NewDist(nil); e.Count != 0 || e.Histogram == nil {
		t.Errorf("empty dist %+v", e)
	}
}

// TestRecorderTopBitIDs: IDs with the top bit set (no room to pack the held
// flag beside them) give the same views as the same IDs without it, over
// random reports, and a duplicate among them is refused too.
func TestRecorderTopBitIDs(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 41))
		a, _ := NewRecorder(nil)
		b, _ := NewRecorder(nil)
		for step := range 60 {
			at := time.Duration(step) * 100 * ms1
			var ids, top []uint64
			var held []bool
			for id := uint64(1); id <= 30; id++ {
				if r.IntN(3) > 0 {
					ids, top, held = append(ids, id), append(top, id|1<<63), append(held, r.IntN(2) == 0)
				}
			}
			r.Shuffle(len(ids), func(i, j int) {
				ids[i], ids[j], top[i], top[j], held[i], held[j] = ids[j], ids[i], top[j], top[i], held[j], held[i]
			})
			mustView(t, a, 1, at, ids, held)
			mustView(t, b, 1, at, top, held)
		}
		if va, vb := a.Views(), b.Views(); va.Reports != vb.Reports || va.Interesting != vb.Interesting ||
			!slices.Equal(va.Missing, vb.Missing) || va.Discovery.Count != vb.Discovery.Count || va.Discovery.Mean != vb.Discovery.Mean {
			t.Fatalf("seed %d: views differ:\n%+v\n%+v", seed, va, vb)
		}
	}
	r, _ := NewRecorder(nil)
	if err := r.View(1, 0, []uint64{1 << 63, 2, 1 << 63}, []bool{true, false, false}); err == nil {
		t.Error("a duplicate top-bit ID was accepted")
	}
	if err := r.View(1, 0, []uint64{5, 2, 5}, []bool{true, false, false}); err == nil {
		t.Error("a duplicate ID with different held flags was accepted")
	}
}

// TestRecorderSortedReports: a report already in ascending ID order (taken
// without a sort) leaves the recorder exactly as the same report shuffled
// does, over random reports of several nodes, with IDs with and without the
// top bit; a sorted report with an ID twice is refused and changes nothing.
func TestRecorderSortedReports(t *testing.T) {
	grace := []time.Duration{0, 100 * ms1, 400 * ms1}
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 43))
		a, _ := NewRecorder(grace)
		b, _ := NewRecorder(grace)
		top := uint64(0)
		if seed%3 == 0 {
			top = 1 << 63
		}
		for step := range 80 {
			at := time.Duration(step) * 100 * ms1
			for nd := wire.NodeID(1); nd <= 3; nd++ {
				var ids []uint64
				var held []bool
				for id := uint64(1); id <= 40; id++ {
					if r.IntN(3) > 0 {
						ids, held = append(ids, id*7919|top), append(held, r.IntN(2) == 0)
					}
				}
				sid, sheld := slices.Clone(ids), slices.Clone(held)
				r.Shuffle(len(ids), func(i, j int) {
					ids[i], ids[j], held[i], held[j] = ids[j], ids[i], held[j], held[i]
				})
				mustView(t, a, nd, at, ids, held)
				mustView(t, b, nd, at, sid, sheld)
				if len(sid) > 1 {
					k := r.IntN(len(sid) - 1)
					dup := slices.Insert(slices.Clone(sid), k+1, sid[k])
					if err := b.View(nd, at, dup, make([]bool, len(dup))); err == nil {
						t.Fatalf("seed %d: a sorted report with %d twice was accepted", seed, sid[k])
					}
				}
				va, vb := a.views[nd], b.views[nd]
				if !slices.Equal(va.pairs, vb.pairs) || va.frames != vb.frames || va.total != vb.total ||
					va.missing != vb.missing || va.discovered != vb.discovered {
					t.Fatalf("seed %d step %d node %d: the sorted report's state differs:\n%+v\n%+v", seed, step, nd, va, vb)
				}
			}
		}
		va, vb := a.Views(), b.Views()
		if va.Reports != vb.Reports || va.Interesting != vb.Interesting || !slices.Equal(va.Missing, vb.Missing) ||
			va.Discovery.Count != vb.Discovery.Count || va.Discovery.Mean != vb.Discovery.Mean ||
			va.HeldOnEntry != vb.HeldOnEntry || va.Abandoned != vb.Abandoned || va.Lost != vb.Lost {
			t.Fatalf("seed %d: views differ:\n%+v\n%+v", seed, va, vb)
		}
	}
}

// TestRecorderForget: Forget counts the objects a node was still waiting
// for as abandoned and makes its next report start afresh (every object
// in it enters the interest then, so the grace periods count from there);
// an unknown node is no error.
func TestRecorderForget(t *testing.T) {
	r, err := NewRecorder([]time.Duration{0, 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r.Forget(7) // nothing to forget
	mustView(t, r, 1, 0, []uint64{10, 11}, []bool{true, false})
	mustView(t, r, 1, 200*time.Millisecond, []uint64{10, 11}, []bool{true, false}) // 11 missing at both graces
	r.Forget(1)
	if v := r.Views(); v.Abandoned != 1 {
		t.Fatalf("abandoned %d after Forget, want 1 (object 11)", v.Abandoned)
	}
	// Afresh: 11 enters again, within its 100 ms grace; 10 was held, now
	// it is not, and that is no loss.
	mustView(t, r, 1, 250*time.Millisecond, []uint64{10, 11}, []bool{false, false})
	v := r.Views()
	if v.Missing[0].Missing != 2+2 || v.Missing[1].Missing != 1 || v.Lost != 0 || v.HeldOnEntry != 1 {
		t.Fatalf("after Forget: missing %+v, lost %d, held on entry %d; want 4 and 1 missing, none lost, 1 held on entry", v.Missing, v.Lost, v.HeldOnEntry)
	}
}
