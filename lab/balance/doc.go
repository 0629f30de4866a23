// Package balance reproduces §5 of the hybrid cluster/P2P instances paper
// (game instances balanced over a cluster, overflowing to player hosts:
// scenarios A and B, Figs. 9–12, Tables 4 and 5) with the algorithms of
// place/balance, on players drawn from real cities (lab/cities) around a
// cluster in a WonderNetwork city.
//
// The results are data (Report) written as a text table beside the
// paper's numbers (WriteTable), CSV files (WriteCSV) and PNG figures
// (WritePlots).
//
// Everything is deterministic for a seed: each run draws from its own
// math/rand/v2 stream, so the result does not depend on Config.Workers,
// the number of runs executed at once.
//
// What the caller must do:
//
//  1. Start from DefaultConfig or SmallConfig and change fields; Validate
//     (called by Run) fills the remaining defaults on a copy and rejects
//     bad input with an error wrapping lab.ErrConfig.
//  2. Call Run; the progress callback, when not nil, may be called from
//     the worker goroutines, one call at a time.
//  3. Write what you need from the report.
package balance
