package live

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// nullTransport sends nothing and receives nothing.
type nullTransport struct{}

func (nullTransport) Send(wire.Packet)         {}
func (nullTransport) Recv() <-chan wire.Packet { return nil }

// loneNode is a node of the test game alone in its cluster.
func loneNode(t *testing.T) *node.Node {
	t.Helper()
	b, err := locate.NewBroadcast(1, []wire.NodeID{1})
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{ID: 1, Registry: newTestGame().registry, Discovery: b, Incarnation: 1, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// driverFrames runs a lone node's driver with cfg (Node and Transport
// filled in) for run, starting `late` after cfg.Epoch, inside a synctest
// bubble, and returns the core times of its frames.
func driverFrames(t *testing.T, cfg DriverConfig, late, run time.Duration) []time.Duration {
	t.Helper()
	n := loneNode(t)
	cfg.Node, cfg.Transport = n, nullTransport{}
	cfg.Epoch = time.Now().Add(-late)
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var at []time.Duration
	d.AddHook(FrameHookFunc(func(now time.Duration, _ *node.Node) {
		mu.Lock()
		at = append(at, now)
		mu.Unlock()
	}))
	ctx, cancel := context.WithTimeout(context.Background(), run)
	defer cancel()
	if err := d.Run(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	return at
}

// TestDriverPhase: an aligned driver runs every frame at a core time of
// its phase modulo the period, from the first one on, whenever it starts;
// an unaligned one runs its first frame a period after it starts.
func TestDriverPhase(t *testing.T) {
	const frame = 100 * time.Millisecond
	for _, tc := range []struct {
		phase, late time.Duration
	}{{37 * time.Millisecond, 1234 * time.Millisecond}, {0, 500 * time.Millisecond}, {99 * time.Millisecond, 0}, {5 * time.Millisecond, 5 * time.Millisecond}} {
		synctest.Test(t, func(t *testing.T) {
			at := driverFrames(t, DriverConfig{Frame: frame, Aligned: true, Phase: tc.phase}, tc.late, time.Second)
			if len(at) < 9 {
				t.Fatalf("phase %v, started %v after the epoch: %d frames in 1 s", tc.phase, tc.late, len(at))
			}
			if first := at[0] - tc.late; first < 0 || first >= frame {
				t.Errorf("phase %v, started %v after the epoch: first frame at %v, want within a period", tc.phase, tc.late, at[0])
			}
			for i, a := range at {
				if a%frame != tc.phase {
					t.Fatalf("phase %v: frame %d at %v, want %v modulo %v", tc.phase, i, a, tc.phase, frame)
				}
				if i > 0 && a-at[i-1] != frame {
					t.Fatalf("phase %v: frames %d and %d at %v and %v", tc.phase, i-1, i, at[i-1], a)
				}
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		at := driverFrames(t, DriverConfig{Frame: frame}, 1234*time.Millisecond, time.Second)
		if len(at) == 0 || at[0] != 1234*time.Millisecond+frame {
			t.Errorf("unaligned frames at %v: want the first a period after the start (1.334s)", at)
		}
	})
}

// TestDriverPhaseRejected: a phase outside [0, Frame) is a configuration
// error.
func TestDriverPhaseRejected(t *testing.T) {
	n := loneNode(t)
	for _, p := range []time.Duration{-time.Millisecond, 100 * time.Millisecond, time.Hour} {
		_, err := NewDriver(DriverConfig{Node: n, Transport: nullTransport{}, Frame: 100 * time.Millisecond, Aligned: true, Phase: p})
		if !errors.Is(err, ErrConfig) {
			t.Errorf("phase %v: err %v, want ErrConfig", p, err)
		}
	}
}
