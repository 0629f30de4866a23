// Package lab owns overworld's experiments: runs that reproduce the
// evaluations of the papers overworld implements, on the same kind of input
// the papers used and on the embedded real latency data, with the results as
// data (reports), CSV files, PNG figures and text tables that put the paper's
// numbers beside ours.
//
// Today it reproduces §4 of Webb and Soh, "Adaptive Client to Mirrored-Server
// Assignment for Massively Multiplayer Online Games" (MMCN 2008), whose
// algorithms live in place/cma: CMA runs the paper's join, leave, dynamic and
// speed scenarios (Figs. 4–8) on a BRITE-style topology (geo/topo) or on
// players drawn from real cities (geo.Population); Demo is the short
// real-data comparison behind "overworld demo placement".
//
// World composes the runtime of a world run: the model game (arena) on node
// cores (node) driven by the simulator (sim), with a ground-truth observer
// that reports every node's view to the sim Recorder each frame. NewWorld
// and RunWorld take a WorldConfig (DefaultWorldConfig,
// DefaultWorldDemoConfig); WorldDemo is "overworld demo" and LabWorld is
// "overworld lab world" (Colyseus Fig. 12(a)). A world's summary is
// byte-identical for a seed unless WallFrameTimes is set.
//
// LabColyseus is "overworld lab colyseus": it reruns the evaluation of
// Colyseus' distributed object locator (Bharambe et al., NSDI 2006: Fig.
// 7(b) and Table 1 of §5, Figs. 8–11 and Table 2 of §6, Fig. 12(a) of §7.1)
// with the colyseus architecture (locate.Mercury on internal/ring). It runs
// a peer-to-peer scale sweep over node counts, map shapes and key mappings,
// and federated worlds for proactive replication, the PredTime sweep and
// load balancing (DefaultLabColyseusConfig, QuickLabColyseusConfig;
// LabColyseusConfig.Only selects experiments). Its per-kind measures
// (missing replicas, updates that bypass discovery, replicas already held
// when an object enters a view) come from the ground-truth observer:
// World.TrackKinds turns them on, World.KindViews reads them.
//
// It also reproduces §6.3 of the region-migration paper (latency
// estimation, Figs. 6–8), whose estimators live in package estimate:
// Estimate compares them on the PlanetLab matrices, carries them across
// the 18 time slices, and runs k-median core selection (place/core) on
// their estimates (start from DefaultEstimateConfig or
// SmallEstimateConfig).
//
// Everything but timing is deterministic for a seed: randomness comes from
// math/rand/v2 generators seeded from the configuration, never from global
// state, and maps are never iterated into an output. Run times are measured
// with the wall clock around the Join and Leave calls only, so they vary from
// run to run and machine to machine.
//
// What the caller must do:
//
//  1. Start from a preset (DefaultCMAConfig, SmallCMAConfig,
//     DefaultDemoConfig) and change fields; Validate (called by CMA and Demo)
//     fills the remaining defaults on a copy and rejects bad input with an
//     error wrapping ErrConfig, before anything runs.
//  2. Call CMA or Demo. The assignment runs happen one after another on the
//     calling goroutine (only geo/topo's shortest paths, before any timing,
//     use other goroutines), so timings are not disturbed by the experiment
//     itself; the progress callback, when not nil, is called on the calling
//     goroutine.
//  3. Write what you need from the report: WriteTable to a terminal,
//     WriteCSV and WritePlots to a directory (created if missing).
package lab
