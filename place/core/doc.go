// Package core owns core selection: given a group of players (a region's
// population, an instance's party) and candidate servers, choose k of the
// candidates as the group's cores so that players are close to their nearest
// core. It implements the paper's k-median (minimise the sum, hence the mean,
// of player-to-nearest-core latency) and k-center (minimise the maximum, the
// eccentricity) objectives, and measures the group diameter through the
// cores, the paper's figure of merit for group communication.
//
// Three solvers share one Problem and one Solution:
//
//   - Exact enumerates every k-subset of candidates (in O(n·m) for k = 1;
//     with a branch-and-bound cut otherwise) and fails with ErrTooLarge
//     beyond MaxExactSubsets subsets.
//   - LocalSearch is the single-swap local search of Arya et al. (2004),
//     started from a greedy solution and optionally from random restarts,
//     deterministic for a given *rand.Rand state. For k-median on metric
//     latencies a local optimum costs at most 5× the optimum; in practice
//     it is within a fraction of a percent (see the package tests).
//   - Select runs Exact when it is cheap and LocalSearch otherwise.
//   - Prove (k-median only) proves the optimum of instances too large for
//     Exact: branch and bound on the Lagrangian relaxation of LowerBound,
//     started from LocalSearch; with a node cap it returns a certified gap.
//
// LowerBound gives a certified lower bound on the optimum (a Lagrangian
// bound for k-median, a disjoint-balls packing bound for k-center), so a
// heuristic answer carries a known worst-case gap. Evaluate, Eccentricity and
// Diameter score a given set of cores, for example cores chosen on estimated
// latencies scored against measured ones.
//
// Both objectives break ties by the other one: among sets with the same
// k-median sum the smaller maximum wins, among sets with the same k-center
// maximum the smaller sum wins (otherwise k-center leaves all but the
// bottleneck core arbitrary). Players attach to their nearest core, ties
// going to the candidate with the lower index.
//
// What the caller must do:
//
//  1. Build a Problem: a players × candidates latency matrix (geo.Matrix, so
//     every entry is finite and non-negative), optionally a candidates ×
//     candidates matrix for the core-to-core hop (needed for a true diameter
//     when k > 1), k in [1, candidates] and an objective. Call Validate, or
//     let the solvers do it: bad input is an error, never a panic.
//  2. Pass a seeded *rand.Rand to LocalSearch and Select; the package has no
//     other source of randomness, reads no clock and does no I/O.
//  3. Interpret Solution.Cores as column indices of PlayerCore (map them to
//     names with PlayerCore.ColName).
package core
