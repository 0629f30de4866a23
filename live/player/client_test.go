package player

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// TestClientIdleTimeout: a client whose node stops sending States ends
// Run with ErrSilent after its idle timeout, not before, and without one
// waits until its context ends.
func TestClientIdleTimeout(t *testing.T) {
	for _, idle := range []time.Duration{0, 2 * time.Second} {
		synctest.Test(t, func(t *testing.T) {
			node, conn := Pipe(64)
			go func() { // a node that answers the join, then falls silent
				ctx := context.Background()
				if _, err := node.ReadMessage(ctx, MaxClientMessage); err != nil {
					return
				}
				_ = node.WriteMessage(ctx, AppendJoinOK(nil, Welcome{Player: "p", Avatar: 1, FrameEvery: 100 * time.Millisecond, History: 4, Registry: testReg}))
				for { // swallow inputs
					if _, err := node.ReadMessage(ctx, MaxClientMessage); err != nil {
						return
					}
				}
			}()
			c, err := Join(context.Background(), conn, []byte("token"))
			if err != nil {
				t.Fatal(err)
			}
			c.SetIdleTimeout(idle)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			err = c.Run(ctx, &randomWalk{rand.New(rand.NewPCG(1, 2))}, 0)
			took := time.Since(start)
			switch {
			case idle == 0 && (err != nil || took != 10*time.Second):
				t.Errorf("no idle timeout: Run returned %v after %v, want nil after 10s (its context)", err, took)
			case idle > 0 && (!errors.Is(err, ErrSilent) || took != idle):
				t.Errorf("idle timeout %v: Run returned %v after %v, want ErrSilent after %v", idle, err, took, idle)
			}
			node.Close()
		})
	}
}

// TestClientStatsPlus: two sessions' figures add, samples append without
// writing into the first's array, the larger view counts stay.
func TestClientStatsPlus(t *testing.T) {
	a := ClientStats{Player: "a", Avatar: 1, States: 2, Inputs: 3, ObjectsSeen: 9, MaxInView: 2, RTT: make([]time.Duration, 1, 8), Handoffs: 1}
	b := ClientStats{Player: "a", Avatar: 2, States: 5, Inputs: 1, ObjectsSeen: 4, MaxInView: 7, RTT: []time.Duration{3}, Handoffs: 2,
		HandoffGaps: []time.Duration{time.Millisecond}}
	s := a.Plus(b)
	if s.Avatar != 2 || s.States != 7 || s.Inputs != 4 || s.ObjectsSeen != 9 || s.MaxInView != 7 || len(s.RTT) != 2 || s.Handoffs != 3 || len(s.HandoffGaps) != 1 {
		t.Fatalf("%+v", s)
	}
	s.RTT[0] = 42
	if a.RTT[0] == 42 {
		t.Fatal("the sum writes into the first session's samples")
	}
}
