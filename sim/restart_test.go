package sim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// TestRestartBadInputChangesNothing: Restart of an unknown node, a node
// that is up, a node that left, or with a nil core is an error wrapping
// the right sentinel, and the run goes on as if it had not been called.
func TestRestartBadInputChangesNothing(t *testing.T) {
	run := func(bad bool) []byte {
		s := newSim(t, Config{Seed: 5}, threeSites(t))
		a, b := addCore(t, s, 1, "a"), addCore(t, s, 2, "b")
		addCore(t, s, 3, "c")
		a.echo, b.echo = true, true
		sendAt(t, s, b, 300*time.Millisecond, 1, wire.ClassUpdate, 30)
		if err := s.Schedule(200*time.Millisecond, func(time.Duration) {
			if err := s.Crash(1); err != nil {
				t.Error(err)
			}
			if err := s.Remove(3); err != nil {
				t.Error(err)
			}
			if !bad {
				return
			}
			for _, tc := range []struct {
				id   wire.NodeID
				core Core
				want error
				text string
			}{
				{9, &testCore{id: 9}, ErrUnknownNode, "9"},
				{2, &testCore{id: 2}, ErrBadArgument, "node 2: it is up"},
				{3, &testCore{id: 3}, ErrBadArgument, "node 3: it left"},
				{1, nil, ErrBadArgument, "nil core"},
			} {
				err := s.Restart(tc.id, tc.core)
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
					t.Errorf("Restart(%d): %v, want %v naming %q", tc.id, err, tc.want, tc.text)
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Run(2 * time.Second); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Restarts(1); n != 0 || err != nil {
			t.Errorf("Restarts(1) = %d, %v after refused restarts", n, err)
		}
		if _, err := s.Restarts(9); !errors.Is(err, ErrUnknownNode) {
			t.Errorf("Restarts(9): %v", err)
		}
		var buf bytes.Buffer
		if err := s.Summary().WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		if err := s.WriteNodeSeriesCSV(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	if !bytes.Equal(run(false), run(true)) {
		t.Fatal("refused restarts changed the run")
	}
}

// TestRestartNewIncarnation: a restarted node ticks again, once per frame
// after a phase in [0, FramePeriod) from the restart, even when its old
// tick was still pending; packets in flight to the crashed incarnation are
// dropped, those sent after the restart delivered to the new core; the
// summary adds up its time up and counts the restart.
func TestRestartNewIncarnation(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := newSim(t, Config{Seed: seed}, threeSites(t))
		old := addCore(t, s, 1, "a")
		b := addCore(t, s, 2, "b") // a–b: 40 ms one way
		fresh := &testCore{id: 1, echo: true}
		crashAt, restartAt := time.Second, 1010*time.Millisecond       // within one frame: the old tick is pending
		sendAt(t, s, b, 990*time.Millisecond, 1, wire.ClassUpdate, 11) // arrives at 1.03 s: dropped
		sendAt(t, s, b, 1020*time.Millisecond, 1, wire.ClassUpdate, 13)
		for _, at := range []time.Duration{crashAt, restartAt} {
			if err := s.Schedule(at, func(now time.Duration) {
				var err error
				if now == crashAt {
					err = s.Crash(1)
				} else {
					err = s.Restart(1, fresh)
				}
				if err != nil {
					t.Errorf("seed %d: %v", seed, err)
				}
			}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Run(3 * time.Second); err != nil {
			t.Fatal(err)
		}
		for _, tk := range old.ticks {
			if tk >= crashAt {
				t.Fatalf("seed %d: crashed core ticked at %v", seed, tk)
			}
		}
		tk := fresh.ticks
		if len(tk) == 0 || tk[0] < restartAt || tk[0] >= restartAt+100*time.Millisecond {
			t.Fatalf("seed %d: new core's ticks %v, want the first in [%v, %v)", seed, tk, restartAt, restartAt+100*time.Millisecond)
		}
		for k := 1; k < len(tk); k++ {
			if tk[k]-tk[k-1] != 100*time.Millisecond {
				t.Fatalf("seed %d: new core's ticks %v not one frame apart", seed, tk)
			}
		}
		if len(old.got) != 0 || len(fresh.got) != 1 || fresh.got[0].size != 13 || fresh.got[0].at != 1060*time.Millisecond {
			t.Fatalf("seed %d: old core got %v, new core got %v; want only the packet sent after the restart, at 1.06 s", seed, old.got, fresh.got)
		}
		if len(b.got) != 1 || b.got[0].cls != wire.ClassMaintenance {
			t.Fatalf("seed %d: the new core's echo: %v", seed, b.got)
		}
		tot := s.Totals()
		if d := tot.Dropped[DropDown].Msgs; d != 1 {
			t.Fatalf("seed %d: %d dropped as down, want 1", seed, d)
		}
		checkConservation(t, s, seed)
		sum := s.Summary()
		n := sum.PerNode[0]
		if n.State != "up" || n.Restarts != 1 || sum.Nodes.Restarts != 1 || sum.Nodes.Up != 2 || !near(n.UpS, 2.99, 1e-9) ||
			n.Frames != uint64(len(old.ticks)+len(fresh.ticks)) {
			t.Fatalf("seed %d: summary of the restarted node %+v, nodes %+v", seed, n, sum.Nodes)
		}
		if c, _ := s.Core(1); c != Core(fresh) {
			t.Fatalf("seed %d: Core(1) is not the new core", seed)
		}
	}
}

// incCore is a synthetic core for restart runs: each frame it sends a few
// packets to random nodes, carrying their send time, and it notes any
// packet that was sent before it was created (a packet for an incarnation
// before it).
type incCore struct {
	id    wire.NodeID
	born  time.Duration
	nodes int
	rng   *rand.Rand
	out   []wire.Packet
	ticks []time.Duration
	got   int
	early []string
}

func (c *incCore) Step(now time.Duration, p wire.Packet) {
	c.got++
	if sent := time.Duration(binary.LittleEndian.Uint64(p.Payload)); sent < c.born {
		c.early = append(c.early, fmt.Sprintf("at %v from %d: sent at %v, before the core's start at %v", now, p.From, sent, c.born))
	}
}

func (c *incCore) Tick(now time.Duration) {
	c.ticks = append(c.ticks, now)
	for range 1 + c.rng.IntN(3) {
		p := make([]byte, 8+c.rng.IntN(40))
		binary.LittleEndian.PutUint64(p, uint64(now))
		c.out = append(c.out, wire.Packet{From: c.id, To: wire.NodeID(c.rng.IntN(c.nodes)), Class: wire.ClassUpdate, Payload: p})
	}
}

func (c *incCore) Drain(dst []wire.Packet) []wire.Packet {
	dst = append(dst, c.out...)
	clear(c.out)
	c.out = c.out[:0]
	return dst
}

// runRestarts runs nodes on PlanetLab sites with jitter, loss,
// duplication, partitions, crashes and restarts drawn from the seed,
// checking after every scenario step that traffic is conserved and that
// the simulator's idea of which nodes are up is the scenario's; at the
// end, that no core ticked outside its life or received a packet sent
// before it started, and that every core's ticks were one frame apart. It
// returns the metrics files.
func runRestarts(t *testing.T, seed uint64, nodes, workers int, always bool, until time.Duration) []byte {
	t.Helper()
	sites, err := geo.PlanetLabSites(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Seed, cfg.Workers = seed, workers
	cfg.Jitter, cfg.Loss, cfg.Duplicate = 3*time.Millisecond, 0.02, 0.02
	s := newSim(t, cfg, sites)
	s.par.always = always
	rng := rand.New(rand.NewPCG(seed, 7)) // the scenario's
	type life struct {
		core     *incCore
		from, to time.Duration // to: 0 while up
	}
	lives := make([][]*life, nodes)
	newCore := func(id wire.NodeID, now time.Duration) *incCore {
		return &incCore{id: id, born: now, nodes: nodes, rng: rand.New(rand.NewPCG(seed, uint64(id)<<20|uint64(len(lives[id]))))}
	}
	for i := range nodes {
		c := newCore(wire.NodeID(i), 0)
		lives[i] = append(lives[i], &life{core: c})
		if err := s.AddNode(wire.NodeID(i), sites.Name(rng.IntN(sites.Len())), c); err != nil {
			t.Fatal(err)
		}
	}
	restarts := 0
	var step func(now time.Duration)
	step = func(now time.Duration) {
		checkConservation(t, s, seed)
		for i := range nodes {
			l := lives[i][len(lives[i])-1]
			if up := l.to == 0; s.Up(wire.NodeID(i)) != up {
				t.Fatalf("seed %d at %v: node %d up %v, the scenario says %v", seed, now, i, !up, up)
			}
		}
		id := wire.NodeID(rng.IntN(nodes))
		l := lives[id][len(lives[id])-1]
		switch op := rng.IntN(10); {
		case op < 3 && l.to == 0:
			if err := s.Crash(id); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			l.to = now
		case op < 6 && l.to != 0:
			c := newCore(id, now)
			if err := s.Restart(id, c); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			lives[id] = append(lives[id], &life{core: c, from: now})
			restarts++
		case op == 6:
			a, b := wire.NodeID(rng.IntN(nodes)), wire.NodeID(rng.IntN(nodes))
			if a != b {
				if _, err := s.Partition(now+time.Duration(1+rng.IntN(500))*time.Millisecond, []wire.NodeID{a}, []wire.NodeID{b}); err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
			}
		case op == 7 && l.to == 0:
			if err := s.Restart(id, newCore(id, now)); !errors.Is(err, ErrBadArgument) {
				t.Fatalf("seed %d: restart of node %d, which is up: %v", seed, id, err)
			}
		}
		if next := now + time.Duration(10+rng.IntN(90))*time.Millisecond; next < until {
			if err := s.Schedule(next, step); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Schedule(50*time.Millisecond, step); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(until); err != nil {
		t.Fatal(err)
	}
	if always && workers > 1 && s.ParallelWindows() == 0 {
		t.Fatalf("seed %d: no window ran on the workers", seed)
	}
	checkConservation(t, s, seed)
	if restarts == 0 {
		t.Fatalf("seed %d: no restart in the scenario", seed)
	}
	period := cfg.FramePeriod
	for i := range lives {
		for _, l := range lives[i] {
			c := l.core
			if len(c.early) > 0 {
				t.Fatalf("seed %d: node %d's core born at %v got a packet %s", seed, i, c.born, c.early[0])
			}
			end := l.to
			if end == 0 {
				end = until + 1
			}
			for k, tk := range c.ticks {
				if tk < l.from || tk >= end || (k == 0 && tk >= l.from+period) || (k > 0 && tk-c.ticks[k-1] != period) {
					t.Fatalf("seed %d: node %d's core up from %v to %v ticked at %v", seed, i, l.from, l.to, c.ticks)
				}
			}
			if l.to == 0 && until-l.from > period && len(c.ticks) == 0 {
				t.Fatalf("seed %d: node %d's core up since %v never ticked", seed, i, l.from)
			}
		}
	}
	sum := s.Summary()
	if sum.Nodes.Restarts != restarts {
		t.Fatalf("seed %d: summary counts %d restarts, the scenario made %d", seed, sum.Nodes.Restarts, restarts)
	}
	var out bytes.Buffer
	if err := sum.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteSeriesCSV(&out); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteNodeSeriesCSV(&out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestRestartsDeterministic: seeded runs with crashes, restarts,
// partitions, jitter, loss and duplication keep their invariants, give
// byte-identical metrics files for a seed, and the same files on parallel
// workers as serially.
func TestRestartsDeterministic(t *testing.T) {
	nodes, until := 40, 3*time.Second
	if testing.Short() {
		nodes = 16
	}
	for _, seed := range []uint64{1, 2, 3} {
		serial := runRestarts(t, seed, nodes, 1, false, until)
		if again := runRestarts(t, seed, nodes, 1, false, until); !bytes.Equal(serial, again) {
			t.Fatalf("seed %d: two serial runs differ", seed)
		}
		for _, w := range []int{2, 3} {
			for _, always := range []bool{false, true} {
				if par := runRestarts(t, seed, nodes, w, always, until); !bytes.Equal(par, serial) {
					t.Fatalf("seed %d: %d workers (always %v) give other metrics files than 1", seed, w, always)
				}
			}
		}
	}
}

// TestPhase: every tick of a node, before and after a restart at an odd
// time, and of a node added late, is at its Phase modulo the period; the
// phases differ between nodes; an unknown node has none.
func TestPhase(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := newSim(t, Config{Seed: seed}, threeSites(t))
		a, b := addCore(t, s, 1, "a"), addCore(t, s, 2, "b")
		var late *testCore
		var before time.Duration
		var pa []time.Duration
		if err := s.Schedule(1234567*time.Microsecond, func(time.Duration) {
			late = addCore(t, s, 3, "c")
			p, _ := s.Phase(1)
			before = p
			if err := s.Crash(1); err != nil {
				t.Error(err)
			}
			pa = slices.Clone(a.ticks)
			a.ticks = a.ticks[:0]
			if err := s.Restart(1, a); err != nil {
				t.Error(err)
			}
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Run(3 * time.Second); err != nil {
			t.Fatal(err)
		}
		period := 100 * time.Millisecond
		for _, c := range []struct {
			id    wire.NodeID
			ticks []time.Duration
			phase time.Duration
		}{{1, pa, before}, {1, a.ticks, -1}, {2, b.ticks, -1}, {3, late.ticks, -1}} {
			p := c.phase
			if p < 0 {
				var err error
				if p, err = s.Phase(c.id); err != nil {
					t.Fatalf("seed %d: Phase(%d): %v", seed, c.id, err)
				}
			}
			if p < 0 || p >= period || len(c.ticks) < 5 {
				t.Fatalf("seed %d: node %d: phase %v, %d ticks", seed, c.id, p, len(c.ticks))
			}
			for _, at := range c.ticks {
				if at%period != p {
					t.Fatalf("seed %d: node %d ticked at %v, its phase %v", seed, c.id, at, p)
				}
			}
		}
		if p1, _ := s.Phase(1); p1 == before {
			t.Logf("seed %d: node 1 restarted at the phase it had (%v)", seed, p1)
		}
		if _, err := s.Phase(9); !errors.Is(err, ErrUnknownNode) {
			t.Errorf("Phase(9): %v, want ErrUnknownNode", err)
		}
	}
}
