package harness

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// faultRun is one run of TestWorldFaults: its summary, and the
// missing-replica fraction (grace 100 ms) over the windows of game time
// marked by faultMarks.
type faultRun struct {
	summary []byte
	missing []float64
	res     *Result
	w       *World
}

// faultMarks cut the run into the windows whose missing replicas
// TestWorldFaults compares: before the crash (5–15 s), while the crash
// settles (15–20 s), settled (20–35 s), a partition (35–37 s) and after
// it (37–40 s).
var faultMarks = []time.Duration{5e9, 15e9, 20e9, 35e9, 37e9, 40e9}

// runFaults runs the model game on 12 nodes for 40 s of game time. With
// mode "faults", nodes 3 and 7 crash at 15 s, node 3 restarts at 25 s
// and one of its players joins it again at once, and at 35 s the player
// nodes are cut in two halves until 37 s; "none" has no fault; "blind"
// crashes the same nodes behind the observer's back (on the simulator
// alone, so the observer keeps expecting their objects); with bad, every
// fault call is also made once with bad input, which must change nothing.
func runFaults(t *testing.T, arch discovery.Arch, mode string, workers int, bad bool) faultRun {
	t.Helper()
	cfg := DefaultArenaConfig()
	cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Seed = arch, 12, 4, 40*time.Second, 3
	cfg.Jitter, cfg.Loss, cfg.Duplicate = 2*time.Millisecond, 0.01, 0.01
	cfg.Workers = workers
	cfg, err := cfg.Validate()
	if err != nil {
		t.Fatal(err)
	}
	g, game, err := ArenaGame(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w, err := New(cfg.Config, g)
	if err != nil {
		t.Fatal(err)
	}
	w.TrackKinds()
	var marks []sim.Views
	for _, at := range faultMarks {
		if err := w.Schedule(at, func(w *World) error {
			marks = append(marks, w.Sim().Recorder().Views())
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	refuse := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming %q", what, err, want)
		}
	}
	switch mode {
	case "blind":
		must(w.Schedule(15*time.Second, func(w *World) error {
			if err := w.sim.Crash(3); err != nil {
				return err
			}
			return w.sim.Crash(7)
		}))
	case "faults":
		must(w.Schedule(15*time.Second, func(w *World) error {
			if err := w.Crash(3); err != nil {
				return err
			}
			if bad {
				refuse("crash of a node that is down", w.Crash(3), "node is down")
				refuse("crash of node 99", w.Crash(99), "no node 99")
				refuse("restart of a node that is up", w.Restart(5), "node 5: it is up")
				refuse("restart of node 0", w.Restart(0), "no node 0")
			}
			return w.Crash(7)
		}))
		// A player of node 3 joins it again when it restarts: a new
		// object of the new incarnation.
		var again Spawn
		for _, sp := range g.Spawns {
			if sp.Node == 2 && sp.Schema == game.Bot {
				again = sp
				break
			}
		}
		must(w.Schedule(25*time.Second, func(w *World) error {
			if err := w.Restart(3); err != nil {
				return err
			}
			n := w.Nodes()[2]
			if n.Config().Incarnation != 1 || len(n.Objects(nil)) != 0 {
				t.Errorf("restarted node 3: incarnation %d, %d objects; want 1 and none", n.Config().Incarnation, len(n.Objects(nil)))
			}
			if inc, err := w.Incarnation(3); inc != 1 || err != nil {
				t.Errorf("Incarnation(3) = %d, %v", inc, err)
			}
			o, err := n.Spawn(w.Sim().Now(), again.Schema, again.Init)
			if err != nil {
				return err
			}
			if o.State().ID().Origin() != 1<<16|3 {
				t.Errorf("the restarted node's object %v: origin %#x, want incarnation 1 of node 3", o.State().ID(), o.State().ID().Origin())
			}
			return w.Sim().Flush(3)
		}))
		var left, right []wire.NodeID
		for id := wire.NodeID(1); id <= 12; id++ {
			if id != 7 { // down
				if id <= 6 {
					left = append(left, id)
				} else {
					right = append(right, id)
				}
			}
		}
		must(w.Schedule(35*time.Second, func(w *World) error {
			if bad {
				_, err := w.Partition(0, left, []wire.NodeID{99})
				refuse("partition with node 99", err, "no node 99")
				_, err = w.Partition(0, left)
				refuse("partition of one side", err, "at least two sides")
				refuse("heal of no partition", w.Heal(42), "no active partition 42")
			}
			p, err := w.Partition(0, left, right)
			if err != nil {
				return err
			}
			return w.Schedule(37*time.Second, func(w *World) error { return w.Heal(p) })
		}))
		if bad {
			refuse("schedule of nil", w.Schedule(time.Second, nil), "nil function")
		}
	}
	must(w.Run(nil))
	if bad {
		refuse("schedule in the past", w.Schedule(time.Second, func(*World) error { return nil }), "before now")
	}
	res := w.Result()
	var b bytes.Buffer
	must(res.Summary.WriteJSON(&b))
	run := faultRun{summary: b.Bytes(), res: res, w: w}
	for k := 1; k < len(marks); k++ {
		a, z := marks[k-1], marks[k]
		run.missing = append(run.missing, float64(z.Missing[1].Missing-a.Missing[1].Missing)/float64(z.Interesting-a.Interesting))
	}
	return run
}

// TestWorldFaults crashes two of 12 nodes mid-run and restarts one, under
// the directory and broadcast architectures (whose discovery needs no
// repair after a crash): once the crash has settled, the missing replicas
// are back near the level of the run without faults, because the
// observer no longer expects the dead nodes' objects, while an observer
// kept blind to the crash keeps expecting them. The restarted node is a
// new incarnation with no objects, whose new player is discovered and
// counted from the restart; a partition drops packets until it heals.
// Bad fault calls change nothing; the run is byte-identical for its seed,
// serially and on parallel workers.
func TestWorldFaults(t *testing.T) {
	archs := []discovery.Arch{discovery.Directory, discovery.Broadcast}
	if testing.Short() {
		archs = archs[:1]
	}
	for _, arch := range archs {
		none := runFaults(t, arch, "none", 1, false)
		faults := runFaults(t, arch, "faults", 1, false)
		blind := runFaults(t, arch, "blind", 1, false)
		t.Logf("%s: missing@100ms by window (5–15 s before the crash, 15–20, 20–35 settled, 35–37 partitioned, 37–40): "+
			"no fault %s, faults %s, observer blind to the crash %s (%%)", arch, pct(none.missing), pct(faults.missing), pct(blind.missing))
		const before, settled, parted = 0, 2, 3
		if faults.missing[before] != none.missing[before] {
			t.Errorf("%s: runs differ before the crash: %v and %v", arch, faults.missing[before], none.missing[before])
		}
		if base, got := none.missing[settled], faults.missing[settled]; got > base+0.02 {
			t.Errorf("%s: %.2f%% missing once the crash settled, %.2f%% without faults: want at most 2 points more", arch, 100*got, 100*base)
		}
		if base, got := none.missing[settled], blind.missing[settled]; got < base+0.05 {
			t.Errorf("%s: an observer blind to the crash measures %.2f%% missing (%.2f%% without faults): the test cannot tell", arch, 100*got, 100*base)
		}
		if faults.missing[parted] <= none.missing[parted] {
			t.Errorf("%s: the partition did not raise the missing replicas (%.2f%%, %.2f%% without)", arch, 100*faults.missing[parted], 100*none.missing[parted])
		}
		sum := faults.res.Summary
		n3, n7 := sum.PerNode[2], sum.PerNode[6]
		if sum.Nodes.Restarts != 1 || sum.Nodes.Crashed != 1 || n3.State != "up" || n3.Restarts != 1 || n7.State != "crashed" {
			t.Errorf("%s: summary nodes %+v; node 3 %s restarted %d×, node 7 %s", arch, sum.Nodes, n3.State, n3.Restarts, n7.State)
		}
		if n3.UpS != 30 || sum.Traffic.Dropped["partition"].Msgs == 0 || sum.Traffic.Dropped["down"].Msgs == 0 {
			t.Errorf("%s: node 3 up %vs (want 30), dropped %v", arch, n3.UpS, sum.Traffic.Dropped)
		}
		// Node 3's new player discovered the others: its view after the
		// restart reports them, held for the most part.
		before3 := none.res.Summary.PerNode[2].Reports * 15 / 40
		if n3.Reports <= before3 || n3.Missing[1].Fraction > 0.1 {
			t.Errorf("%s: node 3 made %d reports (%d before its crash), %.2f%% missing", arch, n3.Reports, before3, 100*n3.Missing[1].Fraction)
		}
		if kv := faults.w.KindViews(); len(kv) == 0 || kv[0].Interesting == 0 {
			t.Errorf("%s: kind measures %+v", arch, kv)
		}
		if again := runFaults(t, arch, "faults", 1, true); !bytes.Equal(again.summary, faults.summary) {
			t.Errorf("%s: bad fault calls, or a second run, changed the summary", arch)
		}
		par := runFaults(t, arch, "faults", 3, false)
		if par.res.Sim().ParallelWindows() == 0 || !bytes.Equal(par.summary, faults.summary) {
			t.Errorf("%s: on 3 workers (%d parallel windows) the summary differs from the serial run's", arch, par.res.Sim().ParallelWindows())
		}
	}
}

// pct formats fractions as percentages.
func pct(fs []float64) string {
	out := make([]string, len(fs))
	for k, f := range fs {
		out[k] = strconv.FormatFloat(100*f, 'f', 2, 64)
	}
	return strings.Join(out, " ")
}

// TestWorldInvariantsWithCrashes is TestWorldInvariants with two player
// nodes crashing a quarter into the run and one of them restarting a
// third into it, with a player joining it again: the checker's invariants
// hold for the nodes that are up (a crashed node's objects are gone; their
// replicas elsewhere must time out like any deleted object's), and the
// observer's reports equal a brute-force recomputation over the primaries
// of the nodes that are up.
func TestWorldInvariantsWithCrashes(t *testing.T) {
	seeds := 2
	dur := 30 * time.Second
	if testing.Short() {
		seeds = 1
	}
	for _, arch := range discovery.Archs() {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", arch, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 78))
				cfg := DefaultArenaConfig()
				cfg.Arch, cfg.Seed, cfg.Duration = arch, seed, dur
				cfg.Nodes, cfg.PlayersPerNode = 4+r.IntN(4), 2+r.IntN(3)
				cfg.Jitter = time.Duration(5+r.IntN(20)) * time.Millisecond
				cfg, err := cfg.Validate()
				if err != nil {
					t.Fatal(err)
				}
				g, game, err := ArenaGame(cfg)
				if err != nil {
					t.Fatal(err)
				}
				quiet := false
				w, err := newWorld(cfg.Config, g, func(n *node.Node) sim.Core {
					return &lossy{Node: n, rng: rand.New(rand.NewPCG(seed, uint64(n.ID())<<8|uint64(n.Config().Incarnation))),
						loss: 0.1, dup: 0.05, quiet: &quiet}
				})
				if err != nil {
					t.Fatal(err)
				}
				c := newChecker(t, w, seed)
				c.quietAt, c.settle = dur*2/3, 3*time.Second
				c.bound = 2*arena.Frame + 2*c.maxDelay + 300*time.Millisecond
				w.SetCheck(c.event)
				a, b := wire.NodeID(1+r.IntN(cfg.Nodes)), wire.NodeID(1+r.IntN(cfg.Nodes))
				if a == b {
					b = a%wire.NodeID(cfg.Nodes) + 1
				}
				var again Spawn
				for _, sp := range g.Spawns {
					if sp.Node == int(a)-1 && sp.Schema == game.Bot {
						again = sp
					}
				}
				for _, err := range []error{
					w.Schedule(dur/4, func(w *World) error { return errors.Join(w.Crash(a), w.Crash(b)) }),
					w.Schedule(dur/3, func(w *World) error {
						if err := w.Restart(a); err != nil {
							return err
						}
						if _, err := w.Nodes()[a-1].Spawn(w.Sim().Now(), again.Schema, again.Init); err != nil {
							return err
						}
						return w.Sim().Flush(a)
					}),
					w.Schedule(c.quietAt, func(*World) error { quiet = true; return nil }),
				} {
					if err != nil {
						t.Fatal(err)
					}
				}
				if err := w.Run(nil); err != nil {
					t.Fatal(err)
				}
				if c.events < 2000 || c.replicas == 0 || len(c.deleted) == 0 || c.quietChk == 0 {
					t.Fatalf("seed %d: a weak run: %d events, %d replica observations, %d deletions, %d quiet checks",
						seed, c.events, c.replicas, len(c.deleted), c.quietChk)
				}
				t.Logf("%d nodes × %d, nodes %d and %d crash, %d restarts: %d events, %d deletions, %d view checks, %d quiet staleness checks",
					cfg.Nodes, cfg.PlayersPerNode, a, b, a, c.events, len(c.deleted), c.views, c.quietChk)
			})
		}
	}
}
