// Package cma reproduces §4 of Webb and Soh, "Adaptive Client to
// Mirrored-Server Assignment for Massively Multiplayer Online Games"
// (MMCN 2008), whose algorithms live in place/cma: Run plays the paper's
// join, leave, dynamic and speed scenarios (Figs. 4–8) through every
// assignment method, on a BRITE-style topology (geo/topo, the paper's
// setting) or on players drawn from real cities (lab/cities), and checks
// SA against the exact optimum after every event. Demo is the short
// real-data comparison behind "overworld demo placement".
//
// The results are data (Report, DemoReport) with the paper's printed
// numbers beside ours (paper.go), written as a text table (WriteTable),
// CSV files (WriteCSV) and PNG figures (WritePlots).
//
// Everything but timing is deterministic for a seed: randomness comes
// from math/rand/v2 generators seeded from the configuration, one stream
// per use, never from global state. Run times are measured with the wall
// clock around the Join and Leave calls only, so they vary from run to
// run and machine to machine.
//
// What the caller must do:
//
//  1. Start from a preset (DefaultConfig, SmallConfig, DefaultDemoConfig)
//     and change fields; Validate (called by Run and Demo) fills the
//     remaining defaults on a copy and rejects bad input with an error
//     wrapping lab.ErrConfig, before anything runs.
//  2. Call Run or Demo. The assignment runs happen one after another on
//     the calling goroutine (only geo/topo's shortest paths, before any
//     timing, use other goroutines), so timings are not disturbed by the
//     experiment itself; the progress callback, when not nil, is called on
//     the calling goroutine.
//  3. Write what you need from the report: WriteTable to a terminal,
//     WriteCSV and WritePlots to a directory (created if missing).
package cma
