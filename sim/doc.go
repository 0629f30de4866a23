// Package sim is the deterministic simulator: it drives node cores (the
// sans-IO state machines of ARCHITECTURE.md rule 1) over an emulated WAN in
// virtual time, accounts for every packet, and records the measures the lab
// reports (missing replicas, discovery latency, staleness, per-node
// bandwidth by class, frame rate, updates/s).
//
// sim owns four things, all written here because no library does them in
// this shape: a discrete-event scheduler (events ordered by virtual time and
// then by who scheduled them, in a timing wheel of 1 ms buckets that are
// radix-sorted when the clock reaches them, with a heap beyond the wheel's
// horizon; events are typed records in recycled slices, so the steady state
// allocates nothing per packet); an emulated WAN (a geo.Sites table:
// one-way delay = half the measured RTT between the nodes' sites, with
// missing measurements filled in and counted; a same-site delay; optional
// exponential jitter, loss, duplication and partitions; header overhead);
// a metrics recorder (Recorder, Summary) written out as deterministic
// JSON and CSV; and parallel windows (Config.Workers, parallel.go): a
// conservative parallel simulation that clusters nearby nodes and runs the
// events of different clusters within one lookahead concurrently, with a
// result identical, event for event, to the serial run.
//
// The caller (an integrator: the lab, the demo, a test) must:
//
//  1. Build the latency table (package geo): geo.PlanetLabSites,
//     geo.WonderNetworkSites, geo.SitesFromMatrix or geo.NewSites. Check
//     Sites.Fill for what was filled in.
//  2. Create the simulator with New(cfg, sites), starting from
//     DefaultConfig and setting Seed.
//  3. Adapt each node core to Core (Step, Tick, Drain), with packets whose
//     From is the node's own ID and whose Class is valid, and add it with
//     AddNode at a site. Cores must be deterministic: their time is the now
//     passed in, their randomness a seeded *rand.Rand of their own.
//  4. Schedule scenario events with Schedule (players joining, churn,
//     Crash, Restart, Remove, Partition, Heal); after acting on a core
//     directly from such an event, call Flush to send what it emitted.
//     Network faults combine freely: Config's jitter (which reorders
//     packets), loss and duplication apply to every packet of the run,
//     partitions cut sides of the nodes for a time, and a crashed node
//     may Restart at its site with a fresh core, a new incarnation that
//     receives only what was sent to it after the restart.
//  5. Report ground truth to Recorder every frame: for each node, the
//     objects in its interest and which it holds (View); staleness samples
//     and named counters as the core exposes them. A SetObserver hook runs
//     after every event, for checking invariants. With Workers > 1 cores
//     run concurrently, so they must share no mutable state, and the
//     observer sees a window's events after the window: it must read cores
//     through snapshots they take themselves (as package lab does) or run
//     with Workers ≤ 1. The observer's work is serial: ObserveOnly narrows
//     it to the kinds of events it needs (Events still counts them all),
//     and ObserveBehind lets it run while the next window's events run on
//     the workers, if it reads only double-buffered snapshots.
//  6. Advance virtual time with Run or RunFor, then read Summary (write it
//     with WriteJSON), WriteSeriesCSV and WriteNodeSeriesCSV.
//
// Determinism: the simulator reads no wall clock and no global randomness.
// Every random choice (tick phases, jitter, loss, duplication) comes from
// PCG streams seeded by Config.Seed (the network's per sending node), and
// events at one instant run in an order fixed by who scheduled them (the
// node whose event sent the packet or ticked, in order of the nodes' being
// added, then scenario functions in the order they were scheduled), not by
// the order a parallel run happens to schedule them in. So the same seed, sites, cores and scenario
// give the same run, event for event, and byte-identical metrics files
// (as long as the integrator's own samples are deterministic: wall-clock
// FrameTime samples are not).
//
// Errors: every entry point validates its input before changing anything
// and returns an error wrapping one of the package's sentinels (ErrConfig,
// ErrUnknownNode, ErrDuplicateNode, ErrNodeDown, ErrTime, ErrReentrant,
// ErrBadArgument). Packets a core emits with a wrong From or an
// invalid Class are not sent; they are counted in Totals.Rejected, with the
// first described, since a core cannot be handed an error.
package sim
