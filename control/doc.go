// Package control is the control plane's core: it decides which node each
// player plays on and which node hosts each region of the world, and it
// returns those decisions for a driver to carry out. It is sans-IO like
// package node: time is an argument, it starts no goroutine, reads no clock
// and draws no randomness but from a seed in its configuration.
//
// What it knows:
//
//   - the nodes (wire.NodeID, site name, capacity in players), whether each
//     is up, and their node-to-node RTTs (Config.NodeRTT);
//   - the players and their RTT to each node: measured by the client's pings
//     (the samples of Join, then Measure) and estimated for the pairs nobody
//     measured. The estimate places the nodes in Vivaldi coordinates
//     (estimate.Vivaldi, run on the node-to-node RTTs at New) and fits each
//     player's coordinate and height to its own samples (coord.go), so a
//     player's estimated row is a function of its samples alone;
//   - the players' positions in the world (Locate), which put them in the
//     regions of a grid (Config.Grid).
//
// Which pairs get measured is the plane's choice as much as the client's.
// An Admit names the nodes the new client should ping: the node it joins,
// then those with the least estimated RTT plus shadow price (the extra
// delay of freeing a seat there by a chain of moves, computed from the
// current assignment), the nodes the capacitated optimum could give it.
// At each Tick, a player is asked (Probe) to ping every unmeasured node
// that would beat its own if the estimate were Config.ProbeSlack too high,
// and, with a Policy, a region's players are asked to ping the region's
// core and every node whose aggregate RTT over them is within
// Config.RegionSlack of the least (core selection's close calls).
// The lab (lab/placement) measures what this buys: on 16 WonderNetwork
// nodes, estimates alone leave the assignment well above the optimum on
// true RTTs, because the optimum turns on differences of a few ms between
// a player's second- and fifth-best nodes.
//
// What it decides:
//
//   - Players: every Join and Leave runs the exact incremental assigner of
//     place/cma (J-SA and L-SA), so the assignment has the least total
//     player-to-node delay within the capacities (on the delays the plane
//     knows) after every event. A Join is admitted to the node CMA picks
//     (Admit, with the nodes the client should ping next); the players CMA
//     moves come back as Move decisions, ordered so that carrying them out
//     one by one never overfills a node. A Measure that changes what the
//     plane knows of a player re-seats it (an L-SA then a J-SA), which may
//     move it or others. NodeDown re-admits the dead node's players
//     elsewhere (Readmit: the driver keeps their avatars, it is a failover,
//     not a fresh join); it fills the dead node's seats with placeholder
//     players that only it can hold, so each eviction is one J-SA chain and
//     the result is the optimum over the nodes that are up. NodeUp removes
//     them one by one (L-SA), which pulls players back when it pays. When
//     the nodes still up cannot seat everyone, the dead node's remaining
//     players are dropped (Drop). The node set can change at run time
//     (nodes.go): AddNode places a new node in the coordinates by the fit a
//     player gets (from its RTTs to the other nodes; a plane may start
//     from one node, whose coordinate carries no geometry, so the second
//     node refits the pair) and re-seats every player with its estimated
//     RTT to it, pulling in those for whom it pays; RemoveNode drains a node the way NodeDown does but with Move
//     (the node still serves) and forgets it. Both rebuild the assigner
//     with a 1e-6 ms tie-break towards each player's node, so the rebuilt
//     assignment is the current one, not another optimum. A driver that
//     rebuilds (Rebuild) after adding nodes must AddNode them on the new
//     plane first: Rebuild still rejects reports from unknown nodes.
//     SetNodeRTT replaces the node-to-node RTTs (the nodes measure them as
//     they run): the coordinates are fitted anew on the whole matrix and
//     every player whose estimates change is re-seated.
//   - Regions: each region of the grid has a core node (Config.RegionHome
//     at first). An activation Policy (Churn, ArrivalRate, Load, Periodic:
//     the criteria of the region-migration paper's §7.4) decides at each
//     Tick whether to re-run core selection for a region; selection is the
//     exact 1-median of place/core over the region's players' estimated
//     RTTs and the nodes that are up, and the region migrates
//     (MigrateRegion) only when the aggregate latency gain (the sum over
//     its players of the RTT saved) is at least Config.MigrationCost. A
//     region whose core dies is moved at once to its best node
//     (MigrateRegion with Failover set).
//   - Instances (Instances, instance.go, beside Plane): auxiliary games of
//     5 to 40 players placed on servers' instance seats as whole units by
//     place/balance's Algorithm 1, overflowed when the servers are full to
//     a host and a replicated host among their own players (LL or PD,
//     balance.Group.Distribute), and restructured by Algorithm 4 when a
//     player leaves (PromoteInstance, NewReplica, LoseInstance). It
//     rebuilds from the nodes' reports too (RebuildInstances,
//     InstanceReport): the servers and player hosts know every instance
//     they run as it was opened, and which of its players left.
//
// # Not a single point of failure: rebuild, not replication
//
// The plane holds no state the nodes do not also hold: which players each
// node serves and the RTTs their clients measured, and which regions it is
// core of. When the plane is down, the nodes go on with the current
// placement (and admit newcomers by themselves, for instance to the nearest
// node with room); when it returns, Rebuild takes the nodes' reports
// (Report) and rebuilds everything, then returns the moves that bring the
// placement back to the optimum. Rebuilding was chosen over replicating the
// plane because its state is small and derived (a few RTTs per player: a
// few hundred kilobytes for thousands of players), because its decisions
// are advice the nodes can do without for a while (the world keeps
// running on the placement it has), and because a rebuilt plane cannot
// disagree with the world the way a stale replica can. Since estimates are
// a function of each player's samples and the assigner is exact, a rebuilt
// plane reaches the same assignment cost as one that never stopped (the
// package tests check this on random runs).
//
// What the caller must do:
//
//  1. Build a Config (nodes, their RTTs, capacities, the grid, a Policy,
//     a seed) and call New. Bad configuration is an error.
//  2. Pass each event with the time it happens: Join (with the RTT samples
//     the client measured), Leave, Locate (a player's position), Measure
//     (a new RTT sample), NodeDown and NodeUp (from the failure detector),
//     and Tick periodically (once a second, say) for the regions.
//  3. Carry out the returned decisions in order: Admit seats a player; Move
//     hands a player over from one node to another (make-before-break);
//     Readmit re-seats a dead node's player with its avatar; Drop
//     disconnects a player that fits nowhere; MigrateRegion moves a
//     region's primary state; Probe has a client ping nodes. Moves marked
//     Swap trade players between full nodes and are carried out together.
//     An event that returns an error changed nothing: the plane refuses
//     bad input (unknown or duplicate player or node, a bad RTT, no
//     capacity, time going backwards) before touching its state.
//  4. Report with Measure the RTTs clients measure: the nodes an Admit or
//     a Probe names, and the node a player is put on (Admit, Move,
//     Readmit) once it is connected there, so that no player stays on a
//     node whose RTT is only estimated.
//  5. After the plane restarts, create it with New and call Rebuild once
//     with every live node's Report before any other event.
//
// A Plane is not safe for concurrent use.
package control
