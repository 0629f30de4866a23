// Package region reproduces §6.3 of the region-migration paper (latency
// estimation and core selection, Figs. 6–8), whose estimators live in
// package estimate and whose k-median core selection lives in place/core:
// Run compares the estimators (Vivaldi, GNP, a Netvigator-style landmark
// estimator, matrix factorisation) on the embedded PlanetLab matrices,
// carries them across the 18 time slices, and runs core selection on
// their estimates against references computed on the true delays
// (coresel.go); it runs the same estimators and core selection on the
// embedded WonderNetwork data (Config.Wonder).
//
// The results are data (Report) written as a text table beside the
// paper's numbers (WriteTable), CSV files (WriteCSV) and PNG figures
// (WritePlots); PlotAccuracy draws one estimator's error CDF for
// "overworld estimate".
//
// Everything but timing is deterministic for a seed: randomness comes
// from math/rand/v2 generators seeded from the configuration, never from
// global state.
//
// What the caller must do:
//
//  1. Start from DefaultConfig or SmallConfig and change fields; Validate
//     (called by Run) fills the remaining defaults on a copy and rejects
//     bad input with an error wrapping lab.ErrConfig.
//  2. Call Run; the progress callback, when not nil, is called on the
//     calling goroutine.
//  3. Write what you need from the report.
package region
