// Package estimate owns latency estimation: answering "how far apart are
// A and B" for every pair of nodes from a small measurement budget instead
// of probing all N² pairs (§2.4, §5 and §6.3 of the region-migration
// paper). It provides:
//
//   - Estimator, the latency source an algorithm reads (Exact wraps a
//     measured geo.Matrix, so an algorithm never cares where latencies come
//     from), and Uncertain for methods that know how good each answer is.
//     Matrix materialises any estimator as a *geo.Matrix, which is how
//     place/core and place/cma consume estimates without importing this
//     package.
//   - Truth, a measured all-pairs matrix that may have holes (NaN,
//     negative or 0 off the diagonal): a missing pair is never sampled and
//     never scored, and Missing lists them. ReadTruth reads one from a text
//     file of n lines of n RTTs.
//   - Process, a seeded measurement process: every node probes its
//     neighbours (group size 4…32) at a probe rate for a duration, samples
//     carry positive queueing jitter, and nodes leave and return (churn).
//     The group size is a budget over the whole run: neighbours are drawn
//     at random, and mf adds a few as the nearest by its estimates, but no
//     neighbour is ever replaced, so no node probes more peers than its
//     budget and every other pair stays held out.
//   - The paper's estimators: Vivaldi (hashicorp/serf/coordinate), GNP
//     (landmark embedding with gonum/optimize) and Landmark (a
//     Netvigator-style estimator from landmark distance vectors; see its
//     doc for exactly what it computes). Beyond the paper: Factor, a robust
//     low-rank factorisation of the log-RTT matrix with per-node biases,
//     blended with a Euclidean embedding with heights, both fitted to the
//     neighbours' measurements, an unmeasured pair corrected by the
//     models' errors on the measured paths next to it.
//   - Evaluate, the paper's accuracy metric: the directed relative error
//     (estimated − measured) / measured of every pair, its distribution,
//     the shares within 15% and 50%, and the median and 90th percentile of
//     its absolute value.
//   - Session, which runs any method from a Spec and carries it from one
//     snapshot of the network to the next (the PlanetLab time slices).
//
// The package is pure: no I/O, no clock (durations are simulated values)
// and no global randomness. serf's coordinate package would draw from the
// global math/rand when two coordinates coincide; Vivaldi prevents that by
// never letting them coincide (see Vivaldi).
//
// What the caller must do:
//
//  1. Build a Truth (NewTruth, TruthFromMatrix, PlanetLab or WonderNetwork); check
//     Missing if holes matter to you.
//  2. Pass a seeded *rand.Rand to every constructor; the same seed gives
//     the same estimates, bit for bit.
//  3. Either use a Session (NewSession with DefaultSpec(method), then
//     Advance for each new snapshot), or drive a Learner yourself with a
//     Process (Step, then Observe) and, for Factor, call Fit before
//     reading estimates.
//  4. Read estimates with Estimate, or Matrix for a placement algorithm;
//     score them with Evaluate.
package estimate
