// Package mcf owns overworld's exact reference solver: minimum-cost flow on a
// directed graph with integer capacities and real costs, and the
// transportation problem built on it (players × mirrors under capacities,
// minimum total delay). Every assignment heuristic in place is checked
// against it.
//
// It is written here because gonum has no min-cost flow (it has shortest
// paths and max flow, not both at once), and because a reference must be
// small enough to read and trust.
//
// The algorithm is successive shortest paths with Johnson potentials: one
// Bellman–Ford pass when some edge cost is negative (and a negative cycle is
// reported as an error, since this algorithm cannot cancel it), then Dijkstra
// with a binary heap on reduced costs for every augmentation. It runs in
// O(F · E log V) for a flow of value F, so it is meant for exactness on
// instances up to tens of thousands of edges, not for the hot path.
//
// What the caller must do:
//
//  1. Build a Graph with NewGraph(n) and AddEdge; keep the edge ids it
//     returns to read per-edge flows. Bad edges are rejected before the graph
//     changes.
//  2. Call Solve(s, t, want). The Graph is not modified, so it may be solved
//     again with other terminals or amounts. When want cannot be routed,
//     Solve returns ErrInfeasible (as an *InfeasibleError carrying the
//     maximum flow) together with a minimum-cost maximum flow.
//  3. Treat costs as equal within Epsilon (relative): floating-point costs
//     make reduced costs slightly negative after rounding, and those are
//     clamped to zero, so the reported cost is optimal up to rounding.
//
// Everything is a pure function of its inputs: no randomness, no clock, no
// I/O.
package mcf
