package localcluster

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
)

// sampleLog records the node and time of every report of a view, in the
// order the observer makes them (a Sample reports its nodes in ID order).
type sampleLog struct {
	nodes []wire.NodeID
	at    []time.Duration
}

func (l *sampleLog) View(node wire.NodeID, now time.Duration, _ []uint64, _ []bool) error {
	l.nodes, l.at = append(l.nodes, node), append(l.at, now)
	return nil
}

func (l *sampleLog) Staleness(time.Duration) error { return nil }

// TestObserveSamplesAligned runs three node processes whose frames are
// spread over the frame period and samples them every frame for a few
// seconds, one node stopped (SIGSTOP) for a third of a second: no node
// reports a frame twice or out of order, and the frames of one sample
// lie within a frame period of one another (give or take a late frame),
// before the stop and from a second after it, so that the observer never
// sees a viewer's snapshot two frames older than an owner's. (The old
// sampler kept them 260 ms apart after the stop.)
func TestObserveSamplesAligned(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 processes for a few seconds")
	}
	cfg := testConfig(t, []string{"New York", "Frankfurt", "Tokyo"}, "broadcast", false)
	cfg.Phases = map[wire.NodeID]time.Duration{1: 90 * time.Millisecond, 2: 5 * time.Millisecond, 3: 45 * time.Millisecond}
	c := startReady(t, cfg)
	var log sampleLog
	g, err := arena.New(arena.Config{Map: arena.Rect, Nodes: len(cfg.Cities), PlayersPerNode: cfg.PlayersPerNode, Seed: cfg.Seed})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := truth.New(truth.Config{Dims: g.Registry().Space().Dims(), Infra: c.Rendezvous(), Recorder: &log})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	// Node 2 stops for a third of a second after the first: its answers
	// pause, and the samples after must not keep it frames apart from
	// the others.
	// (Not an Observe fault: Observe waits for the stopped node's answer,
	// and would send the SIGCONT only when its request timed out.)
	var stopAt, contAt time.Duration // node times
	paused := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		stopAt = time.Since(c.Epoch())
		err := c.Signal(1, syscall.SIGSTOP)
		time.Sleep(350 * time.Millisecond)
		contAt = time.Since(c.Epoch())
		paused <- errors.Join(err, c.Signal(1, syscall.SIGCONT))
	}()
	if _, err := c.Observe(ctx, ObserveConfig{Truth: obs}); err != nil {
		t.Fatal(err)
	}
	if err := <-paused; err != nil {
		t.Fatal(err)
	}
	frame := c.Frame()
	if len(log.at) < 3*20 {
		t.Fatalf("%d reports in 4 s, want at least 60", len(log.at))
	}
	last := map[wire.NodeID]time.Duration{}
	start := 0
	for k := range log.at {
		n, at := log.nodes[k], log.at[k]
		if prev, ok := last[n]; ok {
			if at <= prev {
				t.Errorf("node %d reported at %v after %v", n, at, prev)
			}
		}
		last[n] = at
		// A sample reports its nodes in ID order: one ends where the next
		// node is not higher.
		if k+1 == len(log.at) || log.nodes[k+1] <= n {
			lo, hi := log.at[start], log.at[start]
			for _, a := range log.at[start : k+1] {
				lo, hi = min(lo, a), max(hi, a)
			}
			// A node's frame may run late under load: half a frame of slack.
			if settled := hi > contAt+time.Second || hi < stopAt; settled && hi-lo >= frame+frame/2 {
				t.Errorf("a sample's frames from %v to %v: %v apart, want under a frame (%v)", lo, hi, hi-lo, frame)
			}
			start = k + 1
		}
	}
}

// TestAlignAfter: every node is asked for its first frame after the
// newest frame sampled, a node ahead of it after its own; with no answer
// yet, its next frame.
func TestAlignAfter(t *testing.T) {
	for _, c := range []struct{ last, want []int64 }{
		{[]int64{-1, -1, -1}, []int64{-1, -1, -1}},
		{[]int64{-1, 250, 160}, []int64{250, 250, 250}},
		{[]int64{107, 193, 300}, []int64{300, 300, 300}},
		{[]int64{400, 393, 300}, []int64{400, 400, 400}},
	} {
		got := alignAfter(make([]int64, len(c.last)), c.last)
		if !slices.Equal(got, c.want) {
			t.Errorf("alignAfter(%v) = %v, want %v", c.last, got, c.want)
		}
	}
}
