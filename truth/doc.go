// Package truth is the ground-truth observer of a cluster of nodes, the
// one definition of the view measures every driver reports: whether an
// object in a node's view is missing there (and, through the Recorder,
// since when: the missing replicas at each grace period and the
// discovery latency), how stale the replicas it holds are, and the same
// per object kind.
//
// It reads each node through a driver-neutral Snapshot of one of its
// frames: the node's ID and time, its view boxes, its primaries with
// their locations and versions, and every object it holds with its
// version. Where the driver can read the objects' states (Take, or Add
// with Object.State), the snapshot also carries the node's interest as
// the game defines it, each primary's Interest computed by an object its
// schema builds around its state, and the observer measures the node
// against that rather than against the node's own view, so that a node
// whose view is wrong is caught. The simulation harness (lab/harness) takes one from each node
// core after every frame (Snapshot.Take); the local cluster engine
// (live/localcluster) decodes them from the live nodes' /debug/world
// answers (Reset, Add). The observer keeps every live primary, as of its
// node's latest snapshot, in a uniform grid over the game's bounds, so a
// report costs the grid cells the node's view covers; see Observer for
// the definitions.
//
// What the caller must do:
//
//  1. New with the game's dimensions, bounds and interest half-width
//     (the grid), the infrastructure node (which reports nothing) and
//     the Recorder (sim.Recorder implements it).
//  2. Feed snapshots in the order the nodes took them. After every
//     frame of one node (a simulator, or a live cluster whose frames
//     are merged in time order), call Frame with its snapshot, having
//     called Observe once for every node's snapshot before the first
//     frame. For snapshots of every node taken together (a live cluster
//     sampled less often than every frame), call Sample with all of them: every node's
//     primaries are observed before any node's view is reported, and
//     as the snapshots of one Sample are taken up to a frame apart, a
//     viewer's report sees each object where it was at the viewer's
//     time (along its owner's last two snapshots) and leaves out one
//     created after it.
//     When a node goes down (a crash, a leave), call Down with its ID:
//     its primaries stop being live objects, until another node's
//     snapshot lists them (a failover); if it comes back (a restart),
//     feed its snapshots as before, and its view counts from then.
//  3. Read the measures from the Recorder, and StalenessSamples,
//     BeyondHistory and (after TrackKinds) KindViews and MovingView
//     (the missing replicas of the kinds not declared static) here; with
//     TraceEpisodes, every stretch of an object missing from a view as
//     it ends.
//
// The observer does no I/O, reads no clock and keeps no goroutine; it is
// deterministic in the snapshots it is fed. It is not safe for
// concurrent use.
package truth
