// Package harness runs any world game (package world) on N simulated node
// cores over the embedded latency data, and measures it with a
// ground-truth observer: the missing replicas, discovery latency, replica
// staleness and bandwidth of every node, in a sim.Summary that is
// byte-identical for a seed.
//
// A run is a Config (the cluster: architecture, node count, sites, seed,
// duration, network faults) and a Game (what the harness needs of the
// game: its registry, the objects each node starts with, its bounds, a
// player's interest and speed). New composes them: the simulator (package
// sim) over PlanetLab or WonderNetwork latencies, one node core (package
// node) per player node plus the infrastructure node the architecture
// needs, each with its discovery from discovery.New, and the observer.
// The model game (package arena) is one user: ArenaGame, ArenaConfig,
// NewArena and RunArena; Demo is "overworld demo" (the model game on
// WonderNetwork cities). ArenaConfig.Placement runs the control plane
// (package control) in the world: players drawn from GeoNames cities
// join through it, the world follows its decisions (avatars migrate to
// the nodes players are moved to, regions' objects to their new cores),
// and Result.Placement compares the players' RTT with static admission
// and the exact optimum in the same run (placement.go). RunInstances
// (instances.go) runs instances through the plane's instance core
// (control.Instances) in a world of their own: servers too full for all
// of them, the overflowed ones on simulated player hosts with their
// backups pinned to the replicated hosts, hosts crashing by the session
// model; it measures promotion and recovery times, acknowledged state
// lost, and failure rates beside the paper's Table 5. The demo runs it
// beside the world when the plane places the players.
//
// The observer is package truth's: it keeps every live primary of the
// cluster (as of its node's latest frame: primaries change only in their
// node's Tick, so this is exact) in a uniform grid over the game's
// bounds, and after each node's frame reports that node's view to the
// simulator's Recorder: the live objects inside the union of its
// primaries' interests (node.View) and whether the node holds each. It
// reads each node through a snapshot (truth.Snapshot) the node's adapter
// takes at the end of its frame, so the simulator may run windows of
// events on parallel workers and still give the serial run's summary,
// byte for byte. World.TrackKinds adds per-kind measures
// (KindViews): missing replicas, updates that bypass discovery, replicas
// already held when an object enters a view. World.SetWatch (watch.go)
// lets a caller read the world every so often of game time between the
// simulator's steps, changing nothing: "overworld demo --dashboard"
// shows a run live with it.
//
// Everything but the wall-clock figures (Result.Wall and the speed
// factor, and frame times with Config.WallFrameTimes) is deterministic
// for a seed: randomness comes from math/rand/v2 generators seeded from
// the configuration, never from global state. The harness changes nothing
// outside the World: no globals, no process-wide settings.
//
// What the caller must do:
//
//  1. Describe the game once as a Game: a Registry, the Spawns (which
//     player node creates which object before the first frame), the
//     Bounds its objects stay in, the half-width of a player's Interest
//     box and a player's Speed. Think functions must be deterministic
//     (use the Context's Rand).
//  2. Start from DefaultConfig and set the architecture, Nodes, Duration
//     and Seed; Validate (called by New) fills the rest on a copy and
//     rejects bad input with an error wrapping lab.ErrConfig, before anything
//     runs.
//  3. Call New, then Run (from one goroutine; the simulation itself may
//     use Config.Workers goroutines), then Result; or Run in one call.
//     Result.Summary holds the measures; Result.WriteFiles writes them.
//  4. For fault experiments, before or between runs: Crash and Restart
//     nodes, Partition the network and Heal it, now or at a game time
//     with Schedule (its function may call them all). Config's Jitter,
//     Loss and Duplicate apply to the whole run, alongside. A crashed
//     node's primaries stop being live objects for the observer (no
//     view expects them; one that another node holds as its primary,
//     after a failover, counts again), and its earlier frames still
//     count in the measures. Restart builds the node again with a higher
//     node.Config.Incarnation, the same discovery configuration and no
//     objects: games must not assume every node keeps its spawns. Its
//     view counts from the restart. The run stays byte-identical for a
//     seed and a schedule, on any number of workers. Config.Failover
//     gives every node warm backups, so that another node takes a
//     crashed node's primaries over; SetOnEvent collects every node's
//     authority events (migrations, promotions, writes) in the run's
//     order, and Delay is the emulated delay between two nodes.
//
// A World is not safe for concurrent use.
package harness
