package sim

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestCrewWindows runs many windows on crews that spin and crews that
// only park, with random stalls longer than spinFor on both sides (so that
// polls run out and waits park, and parked goroutines are woken): every
// worker runs every window exactly once, between its start and its join,
// failures come back from join, and stop ends the goroutines.
func TestCrewWindows(t *testing.T) {
	for _, spin := range []bool{true, false} {
		const workers, windows = 3, 400
		c := newCrew(workers, spin)
		var ran [workers]atomic.Int64
		var window atomic.Int64 // the window started, while it runs
		var wg sync.WaitGroup
		for w := range workers {
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.serve(w, func() any {
					k := window.Load()
					if ran[w].Add(1) != k {
						t.Errorf("spin %v: worker %d ran window %d as its %dth", spin, w, k, ran[w].Load())
					}
					if rng.IntN(20) == 0 {
						time.Sleep(2 * spinFor)
					}
					if k%97 == 0 && w == 1 {
						return k
					}
					return nil
				})
			}()
		}
		rng := rand.New(rand.NewPCG(7, 7))
		for k := int64(1); k <= windows; k++ {
			window.Store(k)
			c.start()
			if rng.IntN(20) == 0 {
				time.Sleep(2 * spinFor)
			}
			failed := c.join()
			if want := k%97 == 0; (failed != nil) != want || want && failed != any(k) {
				t.Fatalf("spin %v: window %d: join returned %v", spin, k, failed)
			}
			for w := range workers {
				if got := ran[w].Load(); got != k {
					t.Fatalf("spin %v: after window %d, worker %d ran %d windows", spin, k, w, got)
				}
			}
			if rng.IntN(20) == 0 {
				time.Sleep(2 * spinFor) // the workers' polls run out
			}
		}
		c.stop()
		wg.Wait()
	}
}
