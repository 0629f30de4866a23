// Package node is one node of an overworld cluster: it composes the object
// store and replica synchronisation (internal/replica) with a discovery
// architecture (Discovery, built by package discovery) and runs game
// frames: each Tick runs the think functions of
// the node's primaries in ID order, commits their changes as new versions,
// publishes and subscribes, and produces the frame's updates,
// replica requests, tentative writes and discovery messages. Beside
// discovery a node may get replicas ahead of need: for a view widened by
// Config.Prefetch, for moving objects predicted in it Config.FetchAhead
// ahead, and by pushing its primaries to the nodes whose replicas it holds
// need them (Config.PushMutual).
//
// A Node is a deterministic state machine (sans-IO, ARCHITECTURE.md rule
// 1), driven by the simulator (package sim) or the live daemon. It is not
// safe for concurrent use. Its driver must:
//
//  1. Build every node of a cluster with New, the same world.Registry and
//     the same discovery architecture (one locator per node), and a distinct
//     wire.NodeID. Seed Config.Rand per node for reproducible games.
//  2. Create the game's initial objects with Spawn (outside think
//     functions); a think function creates more through its world.Context.
//  3. Call Tick(now) once per frame (every world.DefaultFrame, 100 ms, by
//     default) with a non-decreasing virtual time.
//  4. Deliver each packet addressed to the node with Step(now, p), in any
//     order, possibly lost or duplicated: the protocol tolerates all three.
//     A malformed packet changes nothing and is counted (Stats.Malformed).
//  5. After every Tick and Step, call Drain and send the packets it returns
//     (ownership of their payloads passes to the driver). Packets a node
//     addresses to itself never leave it.
//
// Context.Each is answered from a grid of the local objects' locations
// (see index.go), re-synchronised at every Tick and kept exact during the
// think phase as long as a think function changes other objects only
// through Context.Write (world.Context's contract); a change made directly
// through another object's State is seen by Each from the next Tick. Each
// visits the objects in the box when it is called, in ID
// order, skipping those deleted before their turn. A replica request is
// answered with the object's full state within the Step that delivers it.
//
// Observers read the node through Objects (primaries and replicas, their
// versions, states and the time the primary produced them), View (the
// union of the node's interests), Stats and ReplicaStats.
//
// node is public and its protocol cores are internal: a driver or an
// observer outside this module builds, steps and reads nodes, but the
// replica store's and the locators' state machines change freely. The
// few core types node's API uses are re-exported as aliases (ObjectInfo,
// ObjectBrief, StoreStats, ReplicaConfig, DiscoveryFrame, DiscoveryOut;
// public.go); internal/archtest checks that no exported API of a public
// package names an internal type otherwise.
package node
