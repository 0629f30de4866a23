// Package core owns core selection: given a group of players (a region's
// population, an instance's party) and candidate servers, choose k of the
// candidates as the group's cores so that players are close to their nearest
// core, and measure the group diameter through the cores, the
// region-migration paper's figure of merit for group communication.
//
// Two families of selection share one Problem and one Solution:
//
//   - The paper's own (§4.1.1–4.1.2 of the region-migration paper):
//     KMinimum ranks the candidates one by one and keeps the k best. With
//     KMedian it solves the paper's k-minimum-pairwise problem (the k
//     candidates with the smallest total latency to the players), with
//     KCenter its k-minimum-eccentricity problem (the k smallest
//     eccentricities), exactly and in O(n·m); CandidateCosts gives the
//     per-candidate figures it ranks by. The paper's hit ratios (its
//     Figs. 7–8) are defined on this selection.
//
//   - The classic facility-location k-median (minimise the sum, hence the
//     mean, of player-to-nearest-core latency) and k-center (minimise the
//     largest), beyond the paper: they place the cores as a set, so for
//     k > 1 the cores spread out to serve different players, and the
//     optimum's sum (or maximum) of player-to-nearest-core latency is
//     never above that of the paper's set (the PlanetLab comparison is in
//     docs/results/region-migration.md). Their solvers:
//
//   - Exact enumerates every k-subset of candidates (in O(n·m) for k = 1;
//     with a branch-and-bound cut otherwise) and fails with ErrTooLarge
//     beyond MaxExactSubsets subsets.
//
//   - LocalSearch is the single-swap local search of Arya et al. (2004),
//     started from a greedy solution and optionally from random restarts,
//     deterministic for a given *rand.Rand state. For k-median on metric
//     latencies a local optimum costs at most 5× the optimum; in practice
//     it is within a fraction of a percent (see the package tests).
//
//   - Select runs Exact when it is cheap and LocalSearch otherwise.
//
//   - Prove (k-median only) proves the optimum of instances too large for
//     Exact: branch and bound on the Lagrangian relaxation of LowerBound,
//     started from LocalSearch; with a node cap it returns a certified gap.
//
// For k = 1 the two families agree (the candidate with the least sum, or
// the least eccentricity, ties broken the same way).
//
// LowerBound gives a certified lower bound on the optimum (a Lagrangian
// bound for k-median, a disjoint-balls packing bound for k-center), so a
// heuristic answer carries a known worst-case gap. Evaluate, Eccentricity and
// Diameter score a given set of cores, for example cores chosen on estimated
// latencies scored against measured ones.
//
// Every solver breaks ties by the other objective: among sets with the same
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
