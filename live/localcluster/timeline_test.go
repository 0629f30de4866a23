package localcluster

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// downLog is a sampleLog that also records the nodes the observer was
// told went down (the Recorder's Forget).
type downLog struct {
	sampleLog
	forgot []wire.NodeID
}

func (l *downLog) Forget(node wire.NodeID) { l.forgot = append(l.forgot, node) }

// timelineSnap is node id's snapshot at time at, with one primary of its
// own (so that the observer has something to place).
func timelineSnap(t *testing.T, tl *timeline, id wire.NodeID, at time.Duration) *truth.Snapshot {
	t.Helper()
	s := tl.buffer()
	s.Reset(id, at)
	if err := s.Add(truth.Object{ID: world.ObjectID(uint64(id)<<32 | 1), Version: uint64(at), Primary: true, Produced: at}); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTimelineOrder pushes the frames of four nodes, whose frames are
// spread over the frame period, in random batches (each node's in order,
// up to three frames late against the others), as a sampler gets them:
// the observer is fed every frame once, in time order, and never past a
// node it waits for. The seed is printed on failure.
func TestTimelineOrder(t *testing.T) {
	const nodes, frames = 4, 60
	frame := 100 * time.Millisecond
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var log downLog
		obs, err := truth.New(truth.Config{Dims: 2, Infra: 1, Recorder: &log})
		if err != nil {
			t.Fatal(err)
		}
		ids := []wire.NodeID{1, 2, 3, 4}
		tl := newTimeline(obs, ids, time.Second)
		phase := make([]time.Duration, nodes)
		for i := range phase {
			phase[i] = time.Duration(rng.IntN(100)) * time.Millisecond
		}
		next := make([]int, nodes) // each node's next frame to push
		for slices.Min(next) < frames {
			for i := range nodes {
				// A node gives up to three frames at once, and none while
				// it is three ahead of the slowest.
				for range rng.IntN(3) {
					if next[i] < frames && next[i] < slices.Min(next)+3 {
						tl.push(i, timelineSnap(t, tl, ids[i], phase[i]+time.Duration(next[i])*frame))
						next[i]++
					}
				}
			}
			w := tl.watermark()
			if err := tl.feed(false); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			for i := range nodes {
				if next[i] > 0 && w > phase[i]+time.Duration(next[i]-1)*frame {
					t.Fatalf("seed %d: fed up to %v, past node %d's newest frame", seed, w, ids[i])
				}
			}
		}
		if err := tl.feed(true); err != nil {
			t.Fatal(err)
		}
		// The infrastructure node (1) reports no view: three nodes' frames.
		if got, want := len(log.at), (nodes-1)*frames; got != want {
			t.Fatalf("seed %d: %d reports, want %d (%v)", seed, got, want, log.nodes)
		}
		if !slices.IsSorted(log.at) {
			t.Fatalf("seed %d: reports out of time order: %v", seed, log.at)
		}
		if tl.late != 0 {
			t.Fatalf("seed %d: %d frames dropped as late", seed, tl.late)
		}
	}
}

// TestTimelineStallAndDown: a node whose frames stop is waited for up to
// the stall, then the others' frames are fed without it, and its frames
// older than those fed are dropped as late; a node that went down is fed
// to its last frame, then taken down, once.
func TestTimelineStallAndDown(t *testing.T) {
	ms := time.Millisecond
	var log downLog
	obs, err := truth.New(truth.Config{Dims: 2, Infra: 9, Recorder: &log})
	if err != nil {
		t.Fatal(err)
	}
	ids := []wire.NodeID{1, 2, 3}
	tl := newTimeline(obs, ids, 300*ms)
	feed := func(want string) {
		t.Helper()
		log.nodes, log.at = nil, nil
		if err := tl.feed(false); err != nil {
			t.Fatal(err)
		}
		var got string
		for k := range log.at {
			got += fmt.Sprintf("%d@%v ", log.nodes[k], log.at[k])
		}
		if got != want {
			t.Errorf("fed %q, want %q", got, want)
		}
	}
	tl.push(0, timelineSnap(t, tl, 1, 0))
	tl.push(1, timelineSnap(t, tl, 2, 30*ms))
	feed("1@0s ") // node 3 has not answered: not waited for
	tl.push(2, timelineSnap(t, tl, 3, 60*ms))
	tl.push(0, timelineSnap(t, tl, 1, 100*ms))
	feed("2@30ms ")
	// Node 2 stops; the others go on, and are held for up to 300 ms.
	for k := range 4 {
		tl.push(0, timelineSnap(t, tl, 1, time.Duration(200+100*k)*ms))
		tl.push(2, timelineSnap(t, tl, 3, time.Duration(160+100*k)*ms))
	}
	// Newest: 1 at 500 ms, 2 at 30 ms (more than 300 ms behind), 3 at 460.
	feed("3@60ms 1@100ms 3@160ms 1@200ms 3@260ms 1@300ms 3@360ms 1@400ms 3@460ms ")
	// Node 2 comes back with a frame older than those fed: dropped.
	tl.push(1, timelineSnap(t, tl, 2, 130*ms))
	if tl.late != 1 {
		t.Errorf("late = %d, want 1", tl.late)
	}
	tl.push(1, timelineSnap(t, tl, 2, 530*ms))
	tl.push(2, timelineSnap(t, tl, 3, 560*ms))
	feed("1@500ms ")
	// Node 3 goes down: it is no longer waited for; its queued frame is
	// fed in time order with the others', then it is taken down, once.
	tl.wentDown(2)
	feed("")
	tl.push(0, timelineSnap(t, tl, 1, 600*ms))
	tl.push(1, timelineSnap(t, tl, 2, 630*ms))
	feed("2@530ms 3@560ms 1@600ms ")
	feed("")
	if !slices.Equal(log.forgot, []wire.NodeID{3}) {
		t.Errorf("taken down: %v, want [3]", log.forgot)
	}
}
