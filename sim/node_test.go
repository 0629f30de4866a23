package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

// TestReceivedSeries: the bytes a node receives, added up per second in
// the node's accumulator and flushed to its series when the second
// changes, read back (inBytes) as a plain per-second series would, after
// every packet of random sequences.
func TestReceivedSeries(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		var n node
		var ref []uint32
		sec := int64(0)
		for k := range 300 {
			sec += int64(r.IntN(3)) * int64(r.IntN(2)) // runs of one second, gaps
			size := uint64(1 + r.IntN(2000))
			n.received(sec, size)
			bump(&ref, sec, size)
			for j := int64(-1); j <= sec+2; j++ {
				want := uint32(0)
				if j >= 0 && j < int64(len(ref)) {
					want = ref[j]
				}
				if got := n.inBytes(j); got != want {
					t.Fatalf("seed %d packet %d: second %d holds %d bytes, want %d", seed, k, j, got, want)
				}
			}
		}
	}
}

// wrapCore is a Wrapper: it counts the ticks of the core it wraps and must
// never be stepped or drained itself.
type wrapCore struct {
	*testCore
	ticks int
	t     *testing.T
}

func (w *wrapCore) Tick(now time.Duration) { w.ticks++; w.testCore.Tick(now) }
func (w *wrapCore) Unwrap() Core           { return w.testCore }
func (w *wrapCore) Step(time.Duration, wire.Packet) {
	w.t.Error("the wrapper was stepped")
}
func (w *wrapCore) Drain(dst []wire.Packet) []wire.Packet {
	w.t.Error("the wrapper was drained")
	return dst
}

// TestWrapper: the simulator ticks a Wrapper and steps and drains the core
// it wraps, with the same run as the bare cores; Sim.Core returns the
// wrapper.
func TestWrapper(t *testing.T) {
	run := func(wrap bool) ([]rx, []time.Duration, Totals, *Sim, []*wrapCore) {
		s := newSim(t, Config{Seed: 3, Jitter: 5 * time.Millisecond}, threeSites(t))
		var cores []*testCore
		var wraps []*wrapCore
		for i, site := range []string{"a", "b", "c"} {
			c := &testCore{id: wire.NodeID(i + 1), echo: true}
			c.tick = func(c *testCore, now time.Duration) {
				c.send(c.id%3+1, wire.ClassUpdate, 40+int(now/time.Millisecond)%7)
			}
			var core Core = c
			if wrap {
				w := &wrapCore{testCore: c, t: t}
				wraps, core = append(wraps, w), w
			}
			if err := s.AddNode(c.id, site, core); err != nil {
				t.Fatal(err)
			}
			cores = append(cores, c)
		}
		if err := s.RunFor(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		return cores[0].got, cores[1].ticks, s.Totals(), s, wraps
	}
	got0, ticks0, tot0, _, _ := run(false)
	got1, ticks1, tot1, s, wraps := run(true)
	if !slices.Equal(got0, got1) || !slices.Equal(ticks0, ticks1) || tot0 != tot1 {
		t.Fatalf("wrapped run differs: %d and %d packets received, %d and %d ticks", len(got0), len(got1), len(ticks0), len(ticks1))
	}
	if len(got1) == 0 || wraps[1].ticks != len(ticks1) {
		t.Fatalf("%d packets received; wrapper ticked %d times, its core %d", len(got1), wraps[1].ticks, len(ticks1))
	}
	if c, err := s.Core(2); err != nil || c != Core(wraps[1]) {
		t.Fatalf("Core returned %v, %v; want the wrapper", c, err)
	}
}
