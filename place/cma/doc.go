// Package cma assigns players to mirrored servers under capacity, on every
// join and leave: the client-to-mirror assignment (CMA) problem of Webb and
// Soh, "Adaptive Client to Mirrored-Server Assignment for Massively
// Multiplayer Online Games" (MMCN 2008).
//
// The model: m mirrors, mirror j serving at most Capacity(j) players; each
// player has a delay (ms) to every mirror; every player must be assigned and
// the total (equivalently mean) player-to-mirror delay is minimised. Players
// join and leave over time, and the Assigner may move connected players to
// keep the assignment good. Each Join and Leave returns a Decision naming
// the joining player's mirror and every move (player, from, to) made.
//
// Methods (see Method):
//
//   - SA: exact. J-SA/L-SA of the paper, made incremental. The assignment is
//     a min-cost flow; it stays optimal after every event. For every ordered
//     mirror pair (j,k) an indexed heap keeps the players on j ordered by
//     the cost of moving them to k (the paper's MC/MP arrays, maintained
//     instead of rebuilt), and Johnson potentials on the mirrors keep every
//     residual reduced cost non-negative, so a join or leave is one Dijkstra
//     over the m mirrors (O(m²)) plus O(m log n) per moved player. The paper
//     rebuilds MC/MP in O(mn) per event and names dynamic maintenance as
//     future work; this is that work. See sa.go for the invariants.
//   - SARebuild: J-SA/L-SA exactly as the paper's Fig. 2 specifies
//     (arrays rebuilt on every event, label-correcting chains), kept as the
//     paper's baseline for speed comparisons. Exact as well.
//   - Greedy: J-greedy (closest mirror with spare capacity) and L-greedy
//     (repeatedly pull the player that gains most into the vacancy).
//   - Ignore: J-greedy and L-ignore (leaves change nothing else), the
//     scheme of the earlier mirrored-server work.
//   - Optimal: re-solves the whole assignment from scratch after every event
//     (successive shortest paths from an empty assignment) and moves every
//     player whose mirror changed. The reference the paper calls brute force.
//
// The SA methods require every earlier event to have been handled by an
// exact method, which the Assigner guarantees by fixing the method at New.
//
// Caller's duties: give each player a unique non-empty ID and a finite,
// non-negative delay to every mirror (in the order of the mirrors passed to
// New); handle ErrNoCapacity on Join (the assignment is unchanged); carry
// out the moves of each Decision (tell the moved players to switch). An
// Assigner is not safe for concurrent use.
//
// Ties (equal delays) are broken deterministically: mirrors by index,
// players by internal slot (join order until slots of departed players are
// reused), and a join prefers a placement without moves when one is optimal.
// This reproduces the paper's worked examples (Fig. 1 and Fig. 3) exactly.
//
// The exact reference, a generic min-cost flow solver, is place/mcf; the
// tests compare every method that claims exactness against it after every
// event of thousands of random join/leave sequences.
package cma
