package harness

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/truth"
)

// TestWatchChangesNothing runs the same demo (placement, churn, parallel
// workers) without a watch and with one that reads every node's objects,
// view, counters and traffic every 300 ms of game time (a period that
// does not divide a second): the summaries are byte-identical, the watch
// ran at the start, every 300 ms and at the end, progress still came
// once per second (and at the end of the warm-up), and with WallFrameTimes every node's frames were
// timed.
func TestWatchChangesNothing(t *testing.T) {
	cfg := DefaultDemoConfig()
	cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Cities, cfg.Workers, cfg.Seed = 4, 3, 3500*time.Millisecond, nil, 2, 5
	cfg.Placement.Session = 2 * time.Second
	plain, err := Demo(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var at []time.Duration
	var progress []time.Duration
	var objects, episodes int
	var frames []FrameTime
	cfg.WallFrameTimes = true
	watched, err := DemoWith(cfg, DemoHooks{Progress: func(p Progress) { progress = append(progress, p.Virtual) }, WatchEvery: 300 * time.Millisecond, Watch: func(w *World, now time.Duration) {
		at = append(at, now)
		for _, n := range w.Nodes() {
			objects += len(n.Objects(nil))
			_ = n.View(nil)
			_ = n.ReplicaStats()
			if _, err := w.Sim().Traffic(n.ID()); err != nil {
				t.Error(err)
			}
		}
		frames = w.FrameTimes()
	}, Episodes: func(e truth.Episode) {
		episodes++
		if e.To <= e.From || e.From < e.Entered {
			t.Errorf("episode %+v: want Entered ≤ From < To", e)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if episodes == 0 {
		t.Error("no missing stretch traced")
	}
	a, _ := json.Marshal(plain.Summary)
	// Frame times are wall-clock samples: leave them out of the comparison.
	s := *watched.Summary
	s.FrameTime = plain.Summary.FrameTime
	s.PerNode = slices.Clone(s.PerNode)
	for i := range s.PerNode {
		s.PerNode[i].FrameTimeMs = plain.Summary.PerNode[i].FrameTimeMs
	}
	b, _ := json.Marshal(&s)
	if !bytes.Equal(a, b) {
		t.Fatalf("seed %d: the summary with a watch differs from the one without", cfg.Seed)
	}
	var want []time.Duration
	for d := time.Duration(0); d < cfg.Duration; d += 300 * time.Millisecond {
		want = append(want, d)
	}
	want = append(want, cfg.Duration)
	if !slices.Equal(at, want) {
		t.Errorf("the watch ran at %v, want %v", at, want)
	}
	if !slices.Equal(progress, []time.Duration{watched.Config.Warmup, time.Second, 2 * time.Second, 3 * time.Second, cfg.Duration}) {
		t.Errorf("progress at %v, want every second and the end", progress)
	}
	if objects == 0 || len(frames) != 5 { // 4 player nodes and the rendezvous
		t.Fatalf("the watch saw %d objects, frame times of %d nodes", objects, len(frames))
	}
	for i, f := range frames {
		if f.Frames < 30 || f.Total <= 0 {
			t.Errorf("node %d: %d frames timed, %v", i+1, f.Frames, f.Total)
		}
	}
}
