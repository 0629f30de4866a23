package harness

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// floorMaxNodes bounds the worlds whose floor is measured: the shortest
// delays between every two nodes take n³ steps (Floyd–Warshall; 96 nodes
// in about a millisecond, 512 in about a tenth of a second).
const floorMaxNodes = 512

// shortestDelays returns the shortest one-way delay from every node to
// every other over the simulator's base delays (before jitter), relays
// allowed: d[(a−1)·n + b−1] for nodes a, b in 1..n. Every packet of the
// simulator takes at least its pair's base delay, so nothing sent by a
// reaches b sooner, however it is relayed.
func shortestDelays(s *sim.Sim, n int) ([]time.Duration, error) {
	return ShortestDelays(n, s.BaseDelay)
}

// ShortestDelays returns the shortest one-way delay from every node to
// every other of nodes 1..n over the direct delays base gives, relays
// allowed (Floyd–Warshall): d[(a−1)·n + b−1]. The floor of the view
// measures (truth.Observer.TrackFloor) counts from them, in the simulator
// and in a live cluster whose nodes emulate the same delays. It returns
// base's first error, and an error for a negative delay or n < 1.
func ShortestDelays(n int, base func(a, b wire.NodeID) (time.Duration, error)) ([]time.Duration, error) {
	if n < 1 {
		return nil, fmt.Errorf("harness: shortest delays of %d nodes", n)
	}
	d := make([]time.Duration, n*n)
	for a := range n {
		for b := range n {
			if a == b {
				continue
			}
			v, err := base(wire.NodeID(a+1), wire.NodeID(b+1))
			if err != nil {
				return nil, err
			}
			if v < 0 {
				return nil, fmt.Errorf("harness: negative delay %v from node %d to %d", v, a+1, b+1)
			}
			d[a*n+b] = v
		}
	}
	for k := range n {
		rk := d[k*n : k*n+n]
		for a := range n {
			ra := d[a*n : a*n+n]
			ak := ra[k]
			for b, kb := range rk {
				if v := ak + kb; v < ra[b] {
					ra[b] = v
				}
			}
		}
	}
	return d, nil
}

// trackFloor turns on the floor of the kind measures (truth.Observer's
// TrackFloor) over the shortest delays between the world's nodes, in
// worlds of at most floorMaxNodes nodes.
func (w *World) trackFloor(total int) error {
	if total > floorMaxNodes {
		return nil
	}
	d, err := shortestDelays(w.sim, total)
	if err != nil {
		return err
	}
	return w.truth.TrackFloor(func(a, b wire.NodeID) time.Duration {
		if a < 1 || b < 1 || int(a) > total || int(b) > total {
			return 0 // not a node of the world: no bound
		}
		return d[int(a-1)*total+int(b-1)]
	})
}
