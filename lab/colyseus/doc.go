// Package colyseus reproduces the evaluation of Colyseus (Bharambe et
// al., "Colyseus: A Distributed Architecture for Online Multiplayer
// Games", NSDI 2006) on simulated worlds of the model game (package arena)
// run by lab/harness over PlanetLab latencies:
//
//   - Run (locator.go) is "overworld lab colyseus": the distributed object
//     locator (the colyseus architecture: internal/locate's Mercury on
//     internal/ring) in Fig. 7(b) and Table 1 of §5, Figs. 8–11 and Table
//     2 of §6 and Fig. 12(a) of §7.1, from a peer-to-peer scale sweep over
//     node counts, map shapes and key mappings and federated worlds for
//     proactive replication, the PredTime sweep and load balancing
//     (Config.Only selects experiments); its per-kind measures come from
//     the harness's observer (harness.World.TrackKinds), its ring
//     measures from the locators themselves (ring.go);
//   - Bandwidth (bandwidth.go) is "overworld lab world": Fig. 12(a)'s
//     per-node bandwidth against node count for the three baselines
//     (Baselines: client-server, broadcast, directory);
//   - Mobility (mobility.go) is "overworld lab arena": the model game's
//     mobility against the paper's Quake III numbers (§2.3, §4.1) and the
//     Fortnite traces.
//
// The results are data (Report, BandwidthReport, MobilityReport) written
// as text tables beside the paper's numbers (WriteTable), CSV files
// (WriteCSV) and PNG figures (WritePlots). Every world's summary is
// byte-identical for a seed; only the wall-clock columns vary.
//
// What the caller must do:
//
//  1. Start from a preset (DefaultConfig, QuickConfig,
//     DefaultBandwidthConfig, QuickBandwidthConfig, DefaultMobilityConfig)
//     and change fields. Run, Bandwidth and Mobility validate it on a copy
//     and reject bad input with an error wrapping lab.ErrConfig, before
//     anything runs.
//  2. Call Run, Bandwidth or Mobility; the worlds run one after another
//     (each simulation on Config.Workers goroutines), and the progress
//     callback, when not nil, is called on the calling goroutine.
//  3. Write what you need from the report.
package colyseus
