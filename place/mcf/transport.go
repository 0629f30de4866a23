package mcf

import (
	"fmt"
	"math"
)

// Transport assigns every player to one mirror so that no mirror j gets more
// than capacity[j] players and the total delay Σ delays[p][assign[p]] is
// minimal. delays has one row per player and one column per mirror (ms, or
// any non-negative cost); it is not modified.
//
// Method: every player first goes to its nearest mirror (lowest index on
// ties), which is optimal when no capacity binds. The mirrors left over
// capacity then shed exactly their excess through a min-cost flow solved by
// Solve on the residual bipartite network of that start:
//
//	source → over-full mirror j   capacity load_j − capacity[j], cost 0
//	mirror j → player q at j      capacity 1, cost 0          (q leaves j)
//	player q → mirror j' ≠ j      capacity 1, cost d(q,j') − d(q,j) ≥ 0
//	mirror j → sink               capacity capacity[j] − load_j when positive
//
// A flow path is a chain of moves ending at a mirror with room. Any optimal
// assignment differs from the start by such chains plus rotations of players
// between mirrors, and rotations cannot beat everyone at the nearest mirror,
// so the result is optimal; the network has n·m edges, as the plain
// source → player → mirror → sink one does, but only the excess (not all n
// players) is augmented.
//
// Among several optimal assignments it returns one, deterministically for the
// same input. total is recomputed from assign in player order, so a caller
// summing the same delays in the same order gets the same float.
//
// Errors: ErrShape for ragged rows, ErrCost for a NaN, infinite or negative
// delay, ErrCapacity for a negative capacity, and an *InfeasibleError
// (ErrInfeasible) when the capacities add up to fewer than the players. No
// players is not an error: the result is empty.
func Transport(delays [][]float64, capacity []int) (assign []int, total float64, err error) {
	n, m := len(delays), len(capacity)
	for p, row := range delays {
		if len(row) != m {
			return nil, 0, fmt.Errorf("%w: player %d has %d delays for %d mirrors", ErrShape, p, len(row), m)
		}
		for j, d := range row {
			if math.IsNaN(d) || math.IsInf(d, 0) || d < 0 {
				return nil, 0, fmt.Errorf("%w: delay from player %d to mirror %d is %g", ErrCost, p, j, d)
			}
		}
	}
	var room int64
	for j, c := range capacity {
		if c < 0 {
			return nil, 0, fmt.Errorf("%w: mirror %d has capacity %d", ErrCapacity, j, c)
		}
		room += int64(min(c, n)) // bounded, so the sum cannot overflow
	}
	if room < int64(n) {
		return nil, 0, &InfeasibleError{Want: int64(n), Max: room}
	}
	if n == 0 {
		return []int{}, 0, nil
	}

	assign = make([]int, n)
	load := make([]int, m)
	for p, row := range delays {
		best := 0
		for j, d := range row {
			if d < row[best] {
				best = j
			}
		}
		assign[p] = best
		load[best]++
	}
	var excess int64
	for j := range m {
		excess += int64(max(load[j]-capacity[j], 0))
	}
	if excess > 0 {
		if err := shed(delays, capacity, assign, load, excess); err != nil {
			return nil, 0, err
		}
	}
	for p, j := range assign {
		total += delays[p][j]
	}
	return assign, total, nil
}

// shed moves players off over-full mirrors at minimum extra delay (see
// Transport), updating assign in place.
func shed(delays [][]float64, capacity, assign, load []int, excess int64) error {
	n, m := len(delays), len(capacity)
	// Nodes: 0 source, 1 sink, 2..m+1 mirrors, m+2..m+n+1 players.
	const src, sink = 0, 1
	mirror := func(j int) int { return 2 + j }
	player := func(p int) int { return 2 + m + p }
	g := NewGraph(n + m + 2)
	edges := n*m + 2*m
	g.from, g.to = make([]int32, 0, edges), make([]int32, 0, edges)
	g.cap, g.cost = make([]int64, 0, edges), make([]float64, 0, edges)
	add := func(u, v int, c int64, cost float64) {
		// Arguments are valid by construction; AddEdge cannot fail here.
		_, _ = g.AddEdge(u, v, c, cost)
	}
	for j := range m {
		if over := load[j] - capacity[j]; over > 0 {
			add(src, mirror(j), int64(over), 0)
		} else if over < 0 {
			add(mirror(j), sink, int64(-over), 0)
		}
	}
	moveBase := make([]int, n) // edge id of player p's first move arc
	for p, row := range delays {
		j := assign[p]
		add(mirror(j), player(p), 1, 0)
		moveBase[p] = g.Edges()
		for k, d := range row {
			if k != j {
				add(player(p), mirror(k), 1, d-row[j])
			}
		}
	}
	res, err := g.Solve(src, sink, excess)
	if err != nil {
		return fmt.Errorf("mcf: internal error: shedding excess: %w", err)
	}
	for p := range n {
		j, e := assign[p], moveBase[p]
		for k := range m {
			if k == j {
				continue
			}
			if res.EdgeFlow[e] > 0 {
				assign[p] = k
				break
			}
			e++
		}
	}
	return nil
}
