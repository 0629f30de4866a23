// Package spd reproduces §IV of Chen et al., "On the Game Server Network
// Selection with Delay and Delay Variation Constraints" (2011), whose
// algorithms live in place/spd: Run solves random networks of the paper's
// sizes (and a real-data variant on WonderNetwork cities with players
// from lab/cities) with every heuristic, and an exact solver on small
// networks, for every delay bound factor (Figs. 7–14).
//
// The results are data (Report) written as a text table beside the
// paper's tables (WriteTable), CSV files (WriteCSV) and PNG figures
// (WritePlots).
//
// Everything but the run times is deterministic for a seed.
//
// What the caller must do:
//
//  1. Start from DefaultConfig or SmallConfig and change fields; Validate
//     (called by Run) fills the remaining defaults on a copy and rejects
//     bad input with an error wrapping lab.ErrConfig.
//  2. Call Run; the progress callback, when not nil, is called on the
//     calling goroutine.
//  3. Write what you need from the report.
package spd
