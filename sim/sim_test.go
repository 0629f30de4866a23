package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

const ms1 = time.Millisecond

func TestDelayIsHalfRTTPlusNothing(t *testing.T) {
	s := newSim(t, DefaultConfig(), threeSites(t))
	a := addCore(t, s, 1, "a")
	b := addCore(t, s, 2, "b")
	a2 := addCore(t, s, 3, "a")
	sendAt(t, s, a, 10*ms1, 2, wire.ClassUpdate, 100)
	sendAt(t, s, a, 10*ms1, 3, wire.ClassControl, 5)
	sendAt(t, s, b, 0, 2, wire.ClassMatching, 7) // to itself: same-site delay
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if len(b.got) != 2 || b.got[0] != (rx{at: 500 * time.Microsecond, from: 2, cls: wire.ClassMatching, size: 7}) ||
		b.got[1] != (rx{at: 50 * ms1, from: 1, cls: wire.ClassUpdate, size: 100}) {
		t.Errorf("b received %+v; want its own packet at 0.5ms and a's at 10 + 40 ms", b.got)
	}
	if len(a2.got) != 1 || a2.got[0].at != 10*ms1+500*time.Microsecond {
		t.Errorf("a2 received %+v; want one packet at 10.5 ms (same site)", a2.got)
	}
	nt, _ := s.Traffic(1)
	if nt.Out[wire.ClassUpdate] != (Counts{1, 128}) || nt.Out[wire.ClassControl] != (Counts{1, 33}) {
		t.Errorf("a sent %+v; want update 1×128 B and control 1×33 B (28-byte headers)", nt.Out)
	}
	checkConservation(t, s, 0)
}

// TestMixedPacketAccounting: a packet of several classes (wire.Packet.Parts)
// counts its bytes under each class, its header and the packet under its
// header's class, on both ends, and traffic is conserved.
func TestMixedPacketAccounting(t *testing.T) {
	s := newSim(t, DefaultConfig(), threeSites(t))
	a := addCore(t, s, 1, "a")
	addCore(t, s, 2, "b")
	if err := s.Schedule(10*ms1, func(time.Duration) {
		a.out = append(a.out, wire.Packet{From: 1, To: 2, Class: wire.ClassUpdate, Payload: make([]byte, 61),
			Parts: &[wire.NumClasses]uint32{wire.ClassUpdate: 40, wire.ClassMaintenance: 20}})
		if err := s.Flush(1); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	na, _ := s.Traffic(1)
	nb, _ := s.Traffic(2)
	want := [wire.NumClasses]Counts{wire.ClassUpdate: {1, 28 + 1 + 40}, wire.ClassMaintenance: {0, 20}}
	if na.Out != want || nb.In != want {
		t.Errorf("a sent %+v, b received %+v; want %+v", na.Out, nb.In, want)
	}
	checkConservation(t, s, 0)
}

func TestTicksArePeriodicWithSeededPhase(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FramePeriod = 50 * ms1
	s := newSim(t, cfg, threeSites(t))
	cores := make([]*testCore, 4)
	for i := range cores {
		cores[i] = addCore(t, s, wire.NodeID(i), "a")
	}
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	phases := map[time.Duration]bool{}
	for i, c := range cores {
		if len(c.ticks) < 19 || len(c.ticks) > 20 {
			t.Fatalf("node %d: %d ticks in 1 s at 20 Hz", i, len(c.ticks))
		}
		if c.ticks[0] < 0 || c.ticks[0] >= 50*ms1 {
			t.Errorf("node %d: first tick at %v, want in [0, 50ms)", i, c.ticks[0])
		}
		for k := 1; k < len(c.ticks); k++ {
			if c.ticks[k]-c.ticks[k-1] != 50*ms1 {
				t.Fatalf("node %d: ticks %v and %v", i, c.ticks[k-1], c.ticks[k])
			}
		}
		phases[c.ticks[0]] = true
	}
	if len(phases) < 2 {
		t.Errorf("all nodes share phase %v: phases are not random", cores[0].ticks[0])
	}
	// A node added later starts within one period of its addition.
	var late *testCore
	if err := s.Schedule(1234*ms1, func(time.Duration) {
		late = &testCore{id: 9}
		if err := s.AddNode(9, "b", late); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(late.ticks) == 0 || late.ticks[0] < 1234*ms1 || late.ticks[0] >= 1284*ms1 {
		t.Errorf("late node ticks %v, want the first in [1.234s, 1.284s)", late.ticks)
	}
}

func TestJitterIsExponential(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Jitter = 20 * ms1
	s := newSim(t, cfg, threeSites(t))
	a := addCore(t, s, 1, "a")
	b := addCore(t, s, 2, "b")
	const n = 20000
	if err := s.Schedule(0, func(time.Duration) {
		for range n {
			a.send(2, wire.ClassUpdate, 1)
		}
		_ = s.Flush(1)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(b.got) != n {
		t.Fatalf("%d of %d delivered", len(b.got), n)
	}
	var sum float64
	below := 0
	ln2 := math.Ln2
	median := time.Duration(20e6 * ln2) // ns: the median of Exp(mean 20 ms)
	for i, r := range b.got {
		extra := r.at - 40*ms1
		if extra < 0 {
			t.Fatalf("packet %d arrived %v before the base delay", i, -extra)
		}
		sum += ms(extra)
		if extra < median {
			below++
		}
	}
	mean := sum / n
	if !near(mean, 20, 0.6) { // sd of the mean is 20/sqrt(20000) ≈ 0.14 ms
		t.Errorf("mean jitter %.3f ms, want 20 ± 0.6", mean)
	}
	if f := float64(below) / n; !near(f, 0.5, 0.02) { // median of Exp is mean·ln 2
		t.Errorf("fraction below the exponential median %.3f, want 0.5", f)
	}
}

func TestLossAndDuplicationRates(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Loss, cfg.Duplicate = 0.1, 0.05
	s := newSim(t, cfg, threeSites(t))
	a := addCore(t, s, 1, "a")
	b := addCore(t, s, 2, "b")
	const n = 20000
	if err := s.Schedule(0, func(time.Duration) {
		for range n {
			a.send(2, wire.ClassUpdate, 10)
		}
		_ = s.Flush(1)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	tot := s.Totals()
	lost := float64(tot.Dropped[DropLoss].Msgs) / n
	dup := float64(tot.Duplicated.Msgs) / (n - float64(tot.Dropped[DropLoss].Msgs))
	if !near(lost, 0.1, 0.01) || !near(dup, 0.05, 0.008) {
		t.Errorf("loss %.4f (want 0.1), duplication %.4f (want 0.05)", lost, dup)
	}
	if uint64(len(b.got)) != tot.Delivered.Msgs || tot.Delivered.Msgs != n-tot.Dropped[DropLoss].Msgs+tot.Duplicated.Msgs {
		t.Errorf("b got %d, delivered %d", len(b.got), tot.Delivered.Msgs)
	}
	checkConservation(t, s, 0)
}

// TestReorderHoldsBack checks that Reorder holds back its share of the
// packets by an extra delay uniform in [0, ReorderDelay]: the packets
// sent after a held-back one on the same path arrive before it.
func TestReorderHoldsBack(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Reorder, cfg.ReorderDelay = 0.2, 40*ms1
	s := newSim(t, cfg, threeSites(t))
	a := addCore(t, s, 1, "a")
	b := addCore(t, s, 2, "b")
	const n = 20000
	if err := s.Schedule(0, func(time.Duration) {
		for range n {
			a.send(2, wire.ClassUpdate, 1)
		}
		_ = s.Flush(1)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if len(b.got) != n {
		t.Fatalf("%d of %d delivered", len(b.got), n)
	}
	held := 0
	var sum float64
	for i, r := range b.got {
		extra := r.at - 40*ms1
		if extra < 0 || extra > 40*ms1 {
			t.Fatalf("packet %d: extra delay %v, want 0 to 40ms", i, extra)
		}
		if extra > 0 {
			held++
			sum += ms(extra)
		}
	}
	if f := float64(held) / n; !near(f, 0.2, 0.015) {
		t.Errorf("held back %.4f of the packets, want 0.2", f)
	}
	if m := sum / float64(held); !near(m, 20, 1) {
		t.Errorf("mean extra delay of a held-back packet %.2f ms, want 20 (uniform to 40)", m)
	}
	checkConservation(t, s, 0)
}

func TestPartitionAndHeal(t *testing.T) {
	s := newSim(t, DefaultConfig(), threeSites(t))
	a := addCore(t, s, 1, "a")
	b := addCore(t, s, 2, "b")
	c := addCore(t, s, 3, "c")
	// In flight when the partition starts: delivered.
	sendAt(t, s, a, 0, 2, wire.ClassUpdate, 1)
	if err := s.Schedule(10*ms1, func(time.Duration) {
		if _, err := s.Partition(500*ms1, []wire.NodeID{1}, []wire.NodeID{2}); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	sendAt(t, s, a, 100*ms1, 2, wire.ClassUpdate, 2) // cut
	sendAt(t, s, b, 100*ms1, 1, wire.ClassUpdate, 3) // cut
	sendAt(t, s, a, 100*ms1, 3, wire.ClassUpdate, 4) // c is not in the partition
	sendAt(t, s, a, 500*ms1, 2, wire.ClassUpdate, 6) // cut: scheduled before the heal, so it runs first
	sendAt(t, s, a, 600*ms1, 2, wire.ClassUpdate, 5) // healed at 500 ms
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	if len(b.got) != 2 || b.got[0].size != 1 || b.got[1].size != 5 || len(a.got) != 0 || len(c.got) != 1 {
		t.Errorf("a got %+v, b got %+v, c got %+v", a.got, b.got, c.got)
	}
	if d := s.Totals().Dropped[DropPartition].Msgs; d != 3 {
		t.Errorf("%d partition drops, want 3", d)
	}
	checkConservation(t, s, 0)
}

func TestCrashDropsInFlightAndSilencesNode(t *testing.T) {
	s := newSim(t, DefaultConfig(), threeSites(t))
	a := addCore(t, s, 1, "a")
	b := addCore(t, s, 2, "b")
	b.tick = func(c *testCore, now time.Duration) { c.send(1, wire.ClassMaintenance, 3) }
	sendAt(t, s, a, 0, 2, wire.ClassUpdate, 10) // arrives at 40 ms: b is down
	if err := s.Schedule(20*ms1, func(time.Duration) {
		if err := s.Crash(2); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	sendAt(t, s, a, 30*ms1, 2, wire.ClassUpdate, 10) // b down at send
	var drops int
	s.SetObserver(func(e Event) {
		if e.Kind == EventDrop {
			drops++
			if e.Node != 2 || e.Bytes != 38 {
				t.Errorf("drop event %+v", e)
			}
		}
	})
	if err := s.Run(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	if len(b.got) != 0 {
		t.Errorf("crashed node received %+v", b.got)
	}
	for _, tk := range b.ticks {
		if tk >= 20*ms1 {
			t.Errorf("crashed node ticked at %v", tk)
		}
	}
	if tot := s.Totals(); tot.Dropped[DropDown].Msgs != 2 || drops != 1 {
		t.Errorf("down drops %d (want 2), drop events %d (want 1)", tot.Dropped[DropDown].Msgs, drops)
	}
	if s.Up(2) || !s.Up(1) {
		t.Error("Up is wrong")
	}
	if err := s.Crash(2); !errors.Is(err, ErrNodeDown) {
		t.Errorf("second crash: %v", err)
	}
	if err := s.AddNode(2, "a", &testCore{id: 2}); !errors.Is(err, ErrDuplicateNode) {
		t.Errorf("reusing a crashed ID: %v", err)
	}
	checkConservation(t, s, 0)
}

func TestRejectsBadPacketsWithoutSending(t *testing.T) {
	s := newSim(t, DefaultConfig(), threeSites(t))
	a := addCore(t, s, 1, "a")
	addCore(t, s, 2, "b")
	if err := s.Schedule(0, func(time.Duration) {
		a.out = append(a.out, wire.Packet{From: 7, To: 2, Class: wire.ClassUpdate, Payload: []byte{1}},
			wire.Packet{From: 1, To: 2, Class: 9, Payload: []byte{1, 2}},
			wire.Packet{From: 1, To: 99, Class: wire.ClassUpdate})
		_ = s.Flush(1)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(time.Second); err != nil {
		t.Fatal(err)
	}
	tot := s.Totals()
	if tot.Rejected != (Counts{2, 3}) || !strings.Contains(tot.FirstRejected, "From 7") {
		t.Errorf("rejected %+v %q", tot.Rejected, tot.FirstRejected)
	}
	if tot.Dropped[DropUnknown].Msgs != 1 || tot.Delivered.Msgs != 0 {
		t.Errorf("totals %+v", tot)
	}
	checkConservation(t, s, 0)
}

// TestBadInputChangesNothing calls every entry point with bad input and
// checks the error and that the summary is unchanged.
func TestBadInputChangesNothing(t *testing.T) {
	s := newSim(t, DefaultConfig(), threeSites(t))
	addCore(t, s, 1, "a")
	addCore(t, s, 2, "b")
	if err := s.Run(300 * ms1); err != nil {
		t.Fatal(err)
	}
	snapshot := func() string {
		var b bytes.Buffer
		if err := s.Summary().WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(&b, s.q.len(), len(s.parts), s.Now())
		return b.String()
	}
	before := snapshot()
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"add duplicate", s.AddNode(1, "a", &testCore{}), ErrDuplicateNode},
		{"add unknown site", s.AddNode(5, "nowhere", &testCore{}), ErrBadArgument},
		{"add nil core", s.AddNode(5, "a", nil), ErrBadArgument},
		{"crash unknown", s.Crash(42), ErrUnknownNode},
		{"remove unknown", s.Remove(42), ErrUnknownNode},
		{"flush unknown", s.Flush(42), ErrUnknownNode},
		{"schedule past", s.Schedule(100*ms1, func(time.Duration) {}), ErrTime},
		{"schedule nil", s.Schedule(time.Second, nil), ErrBadArgument},
		{"run past", s.Run(100 * ms1), ErrTime},
		{"run negative", s.RunFor(-ms1), ErrTime},
		{"partition one side", perr(s.Partition(0, []wire.NodeID{1})), ErrBadArgument},
		{"partition empty side", perr(s.Partition(0, []wire.NodeID{1}, nil)), ErrBadArgument},
		{"partition unknown", perr(s.Partition(0, []wire.NodeID{1}, []wire.NodeID{42})), ErrUnknownNode},
		{"partition twice", perr(s.Partition(0, []wire.NodeID{1}, []wire.NodeID{1})), ErrBadArgument},
		{"partition heal past", perr(s.Partition(200*ms1, []wire.NodeID{1}, []wire.NodeID{2})), ErrTime},
		{"heal unknown", s.Heal(7), ErrBadArgument},
		{"view unknown node", s.Recorder().View(42, s.Now(), nil, nil), ErrUnknownNode},
		{"view negative time", s.Recorder().View(1, -1, nil, nil), ErrTime},
		{"view in the future", s.Recorder().View(1, time.Hour, nil, nil), ErrTime},
		{"view lengths", s.Recorder().View(1, s.Now(), []uint64{1}, nil), ErrBadArgument},
		{"view duplicate", s.Recorder().View(1, s.Now(), []uint64{3, 1, 3}, []bool{true, false, false}), ErrBadArgument},
		{"staleness negative", s.Recorder().Staleness(-1), ErrBadArgument},
		{"frame time negative", s.Recorder().FrameTime(1, -1), ErrBadArgument},
		{"counter empty name", s.Recorder().Add("", 1), ErrBadArgument},
		{"traffic unknown", terr(s.Traffic(42)), ErrUnknownNode},
		{"core unknown", cerr(s.Core(42)), ErrUnknownNode},
	}
	for _, c := range cases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: error %v, want %v", c.name, c.err, c.want)
		}
	}
	if after := snapshot(); after != before {
		t.Errorf("bad input changed the state:\nbefore %s\nafter  %s", before, after)
	}
	// Down nodes: Flush and View are rejected.
	if err := s.Crash(2); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(2); !errors.Is(err, ErrNodeDown) {
		t.Errorf("flush down node: %v", err)
	}
	if err := s.Recorder().View(2, s.Now(), nil, nil); !errors.Is(err, ErrNodeDown) {
		t.Errorf("view of down node: %v", err)
	}
	// Run from inside an event.
	var inner error
	if err := s.Schedule(s.Now(), func(time.Duration) { inner = s.RunFor(time.Second) }); err != nil {
		t.Fatal(err)
	}
	if err := s.RunFor(ms1); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, ErrReentrant) {
		t.Errorf("reentrant Run: %v", inner)
	}
}

func perr(_ int, err error) error         { return err }
func terr(_ NodeTraffic, err error) error { return err }
func cerr(_ Core, err error) error        { return err }

func TestConfigValidation(t *testing.T) {
	sites := threeSites(t)
	bad := []func(*Config){
		func(c *Config) { c.FramePeriod = -1 },
		func(c *Config) { c.SameSite = -1 },
		func(c *Config) { c.HeaderBytes = -1 },
		func(c *Config) { c.Jitter = -1 },
		func(c *Config) { c.Loss = 1 },
		func(c *Config) { c.Loss = math.NaN() },
		func(c *Config) { c.Duplicate = -0.1 },
		func(c *Config) { c.Reorder = 1 },
		func(c *Config) { c.Reorder = math.NaN() },
		func(c *Config) { c.ReorderDelay = -1 },
		func(c *Config) { c.Grace = []time.Duration{0, 0} },
		func(c *Config) { c.Grace = []time.Duration{-1} },
		func(c *Config) { c.Grace = make([]time.Duration, 9) },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(&c)
		if _, err := New(c, sites); !errors.Is(err, ErrConfig) {
			t.Errorf("case %d: %v", i, err)
		}
	}
	if _, err := New(DefaultConfig(), nil); !errors.Is(err, ErrBadArgument) {
		t.Errorf("nil sites: %v", err)
	}
	s := newSim(t, Config{}, sites)
	if c := s.Config(); c.FramePeriod != 100*ms1 || len(c.Grace) != 3 || c.HeaderBytes != 0 {
		t.Errorf("zero config filled to %+v", c)
	}
}

// TestRandomRunsConserveTraffic runs seeded random scenarios (chatty cores,
// jitter, loss, duplication, crashes, partitions) and checks after every
// event that no packet is created or lost by the accounting, that time never
// goes back, and that down nodes never act.
func TestRandomRunsConserveTraffic(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		cfg := DefaultConfig()
		cfg.Seed = seed
		cfg.Jitter = time.Duration(rng.IntN(30)) * ms1
		cfg.Loss = rng.Float64() * 0.2
		cfg.Duplicate = rng.Float64() * 0.1
		s := newSim(t, cfg, threeSites(t))
		n := 3 + rng.IntN(8)
		cores := map[wire.NodeID]*testCore{}
		for i := range n {
			id := wire.NodeID(i)
			c := addCore(t, s, id, []string{"a", "b", "c"}[rng.IntN(3)])
			c.echo = rng.IntN(2) == 0
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			c.tick = func(c *testCore, now time.Duration) {
				for range r.IntN(4) {
					c.send(wire.NodeID(r.IntN(n+1)), wire.Class(r.IntN(wire.NumClasses)), r.IntN(200))
				}
			}
			cores[id] = c
		}
		for k := 0; k < 3; k++ {
			at := time.Duration(rng.IntN(3000)) * ms1
			victim := wire.NodeID(rng.IntN(n))
			_ = s.Schedule(at, func(time.Duration) { _ = s.Crash(victim) }) // may already be down
			a, b := wire.NodeID(rng.IntN(n)), wire.NodeID(rng.IntN(n))
			if a != b {
				heal := at + time.Duration(1+rng.IntN(1000))*ms1
				_ = s.Schedule(at, func(time.Duration) {
					if _, err := s.Partition(heal, []wire.NodeID{a}, []wire.NodeID{b}); err != nil {
						t.Error(err)
					}
				})
			}
		}
		last := time.Duration(0)
		s.SetObserver(func(e Event) {
			if e.At < last {
				t.Fatalf("seed %d: event at %v after %v", seed, e.At, last)
			}
			last = e.At
			if (e.Kind == EventTick || e.Kind == EventDeliver) && !s.Up(e.Node) {
				t.Fatalf("seed %d: %v on down node %d", seed, e.Kind, e.Node)
			}
			checkConservation(t, s, seed)
		})
		if err := s.Run(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		checkConservation(t, s, seed)
		var got uint64
		for _, c := range cores {
			got += uint64(len(c.got))
		}
		if got != s.Totals().Delivered.Msgs {
			t.Fatalf("seed %d: cores received %d, delivered %d", seed, got, s.Totals().Delivered.Msgs)
		}
	}
}

// TestObserveOnly checks that Events counts every event the observer would
// be called for, and that ObserveOnly narrows the observer to the given
// kinds without changing the run: the ticks a tick-only observer sees, on
// parallel windows, are exactly those a full observer of a serial run sees.
// So do observers that run behind (ObserveBehind).
func TestObserveOnly(t *testing.T) {
	run := func(seed uint64, workers int, only, behind bool) (ticks, all []Event, kinds [EventHeal + 1]int, events uint64) {
		rng := rand.New(rand.NewPCG(seed, 9))
		cfg := DefaultConfig()
		cfg.Seed, cfg.Workers = seed, workers
		cfg.Jitter = time.Duration(rng.IntN(30)) * ms1
		cfg.Loss = rng.Float64() * 0.2
		s := newSim(t, cfg, threeSites(t))
		s.par.always = true
		n := 6 + rng.IntN(6)
		for i := range n {
			c := addCore(t, s, wire.NodeID(i), []string{"a", "b", "c"}[i%3])
			c.echo = rng.IntN(2) == 0
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			c.tick = func(c *testCore, now time.Duration) {
				for range r.IntN(4) {
					c.send(wire.NodeID(r.IntN(n+1)), wire.Class(r.IntN(wire.NumClasses)), r.IntN(200))
				}
			}
		}
		victim := wire.NodeID(rng.IntN(n))
		_ = s.Schedule(time.Duration(rng.IntN(2000))*ms1, func(time.Duration) { _ = s.Crash(victim) })
		s.SetObserver(func(e Event) {
			kinds[e.Kind]++
			all = append(all, e)
			if e.Kind == EventTick {
				ticks = append(ticks, e)
			}
		})
		if only {
			s.ObserveOnly(EventTick)
		}
		s.ObserveBehind(behind)
		if err := s.Run(3 * time.Second); err != nil {
			t.Fatal(err)
		}
		return ticks, all, kinds, s.Events()
	}
	for seed := uint64(1); seed <= 5; seed++ {
		ticks, all, kinds, events := run(seed, 1, false, false)
		total := 0
		for _, k := range kinds {
			total += k
		}
		if uint64(total) != events || kinds[EventDeliver] == 0 || kinds[EventFunc] != 1 {
			t.Fatalf("seed %d: observer saw %v (%d events), Events says %d", seed, kinds, total, events)
		}
		for _, w := range []int{1, 2, 3} {
			for _, behind := range []bool{false, true} {
				// With ObserveBehind, every kind: the same events in the same order.
				_, all3, kinds3, events3 := run(seed, w, false, behind)
				if !slices.Equal(all3, all) || events3 != events {
					t.Fatalf("seed %d, %d workers, behind %v: observer saw %v, %d events; want %v, %d", seed, w, behind, kinds3, events3, kinds, events)
				}
			}
			ticks2, _, kinds2, events2 := run(seed, w, true, w > 1)
			if events2 != events || !slices.Equal(ticks2, ticks) {
				t.Fatalf("seed %d, %d workers: tick-only observer: %d events, %d ticks; want %d, %d", seed, w, events2, len(ticks2), events, len(ticks))
			}
			if kinds2[EventTick] != len(ticks) || kinds2[EventTick] != total-kinds[EventDeliver]-kinds[EventDrop]-kinds[EventFunc]-kinds[EventHeal] {
				t.Fatalf("seed %d, %d workers: tick-only observer saw %v", seed, w, kinds2)
			}
		}
	}
}
