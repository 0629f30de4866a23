// Package placement measures the control plane (package control) in
// simulation, on the embedded real data:
//
//   - Players: GeoNames players (lab/cities, the population model of geo)
//     arrive and leave over simulated time on WonderNetwork server nodes
//     with capacities. The plane sees each player's RTT to the few nodes
//     its client pinged (noisy) and estimates the rest; every figure is
//     computed on the model's true RTTs. At every snapshot the plane's
//     mean player RTT is compared with the exact optimum on the true RTTs
//     (place/mcf) and with static admission to the nearest node with room,
//     which never moves anyone, under the same capacities and events. A
//     sweep repeats this for several capacity headrooms.
//   - Regions: the region-migration paper's scenario, one region whose
//     players shift from Europe to North America over a compressed day,
//     run once per activation policy (and once with none); after every
//     hour the region's aggregate latency on its current core is compared
//     with the best core's, on true RTTs, and migrations are counted.
//
// Everything is deterministic for a seed.
//
// What the caller must do:
//
//  1. Start from DefaultConfig or SmallConfig; Validate (called by Run)
//     fills the defaults on a copy and rejects bad input with an error
//     wrapping lab.ErrConfig.
//  2. Call Run; the progress callback, when not nil, is called on the
//     calling goroutine.
//  3. Write what you need from the Report (WriteTable, WriteCSV,
//     WritePlots).
package placement
