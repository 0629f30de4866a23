package ring_test

import (
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
)

// TestLoss runs a ring over a network that loses packets: it must stay
// consistent (checked once the loss stops), and false failure detections
// (a live peer declared failed) must stay rare.
func TestLoss(t *testing.T) {
	for _, loss := range []float64{0.01, 0.05, 0.10} {
		c := newCluster(t, 8, nil)
		c.grow(64, 20*time.Millisecond, 3*time.Second)
		if _, err := c.settle(4, time.Minute); err != nil {
			t.Fatal(err)
		}
		c.log = nil
		c.loss = loss
		c.run(c.now + 2*time.Minute)
		c.loss = 0
		falseFail := 0
		for _, l := range c.log {
			if l.e.Kind == ring.EventPeerFailed {
				falseFail++
			}
		}
		took, err := c.settle(4, time.Minute)
		if err != nil {
			t.Fatalf("loss %v: %v", loss, err)
		}
		rate := float64(falseFail) / 64 / 120 * 3600
		t.Logf("loss %.0f%%: %d false failure detections in 2 min at 64 nodes (%.1f per node-hour); stable %v after",
			loss*100, falseFail, rate, took)
		if loss <= 0.05 && falseFail > 2 {
			t.Errorf("loss %v: %d false failure detections, want at most 2", loss, falseFail)
		}
	}
}
