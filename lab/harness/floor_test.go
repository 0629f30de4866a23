package harness

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/wire"
)

// TestShortestDelaysExact compares ShortestDelays with a reference that tries
// every simple path (exhaustive search) on many seeded random tables.
func TestShortestDelaysExact(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(6)
		base := make([]time.Duration, n*n)
		for i := range base {
			base[i] = time.Duration(rng.IntN(200)) * time.Millisecond
		}
		got, err := ShortestDelays(n, func(a, b wire.NodeID) (time.Duration, error) {
			return base[int(a-1)*n+int(b-1)], nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for a := range n {
			for b := range n {
				want := time.Duration(0)
				if a != b {
					want = bestPath(base, n, a, b, 1<<a)
				}
				if g := got[a*n+b]; g != want {
					t.Fatalf("seed %d, n %d: %d → %d: %v, want %v", seed, n, a+1, b+1, g, want)
				}
			}
		}
	}
}

// bestPath is the least delay from a to b over simple paths avoiding the
// nodes in seen.
func bestPath(base []time.Duration, n, a, b int, seen int) time.Duration {
	best := base[a*n+b]
	for k := range n {
		if seen&(1<<k) != 0 || k == b {
			continue
		}
		if v := base[a*n+k] + bestPath(base, n, k, b, seen|1<<k); v < best {
			best = v
		}
	}
	return best
}

// TestShortestDelaysRejected: no nodes, a negative delay and base's own
// error are refused, named.
func TestShortestDelaysRejected(t *testing.T) {
	zero := func(a, b wire.NodeID) (time.Duration, error) { return 0, nil }
	if _, err := ShortestDelays(0, zero); err == nil || !strings.Contains(err.Error(), "0 nodes") {
		t.Errorf("0 nodes: %v", err)
	}
	neg := func(a, b wire.NodeID) (time.Duration, error) {
		if a == 2 && b == 1 {
			return -time.Millisecond, nil
		}
		return time.Millisecond, nil
	}
	if _, err := ShortestDelays(3, neg); err == nil || !strings.Contains(err.Error(), "negative delay -1ms from node 2 to 1") {
		t.Errorf("negative delay: %v", err)
	}
	bad := errors.New("no such site")
	failing := func(a, b wire.NodeID) (time.Duration, error) { return 0, bad }
	if _, err := ShortestDelays(2, failing); !errors.Is(err, bad) {
		t.Errorf("base's error: %v", err)
	}
}

// TestShortestDelays checks the world's shortest delays: none above the
// direct delay, every triangle kept, zero to itself.
func TestShortestDelays(t *testing.T) {
	cfg := DefaultArenaConfig()
	cfg.Arch, cfg.Nodes, cfg.Data, cfg.Duration = discovery.Colyseus, 40, SitesWonder, time.Second
	cfg.Cities = cities.ForNodes(cfg.Nodes)
	w, err := NewArena(cfg)
	if err != nil {
		t.Fatal(err)
	}
	n := cfg.Nodes
	d, err := shortestDelays(w.sim, n)
	if err != nil {
		t.Fatal(err)
	}
	shorter := 0
	for a := range n {
		if d[a*n+a] != 0 {
			t.Fatalf("node %d: %v to itself", a+1, d[a*n+a])
		}
		for b := range n {
			direct := w.Delay(wire.NodeID(a+1), wire.NodeID(b+1))
			if a != b && d[a*n+b] > direct {
				t.Errorf("%d→%d: %v above the direct %v", a+1, b+1, d[a*n+b], direct)
			}
			if a != b && d[a*n+b] < direct {
				shorter++
			}
			for c := range n {
				if d[a*n+b] > d[a*n+c]+d[c*n+b] {
					t.Fatalf("%d→%d: %v, through %d %v", a+1, b+1, d[a*n+b], c+1, d[a*n+c]+d[c*n+b])
				}
			}
		}
	}
	t.Logf("%d of %d ordered pairs have a relayed path shorter than the direct one", shorter, n*(n-1))
}
