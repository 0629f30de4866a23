package ring_test

import (
	"testing"
	"time"
)

// TestJoinAndRoute grows rings of several sizes, checks every node's
// predecessor and successor list against the sorted list of keys, and that
// every routed key reaches its true owner exactly once.
func TestJoinAndRoute(t *testing.T) {
	sizes := []int{1, 2, 3, 16, 100}
	if !testing.Short() {
		sizes = append(sizes, 300)
	}
	for _, n := range sizes {
		for seed := uint64(1); seed <= 3; seed++ {
			c := newCluster(t, seed, nil)
			c.grow(n, 30*time.Millisecond, 10*time.Second)
			if err := c.checkRing(4); err != nil {
				t.Fatalf("n=%d seed %d: %v", n, seed, err)
			}
			if _, err := c.routeCheck(300, func(int) uint64 { return c.rng.Uint64() }, time.Second); err != nil {
				t.Fatalf("n=%d seed %d: %v", n, seed, err)
			}
		}
	}
}
