// Package discovery is the one home of overworld's discovery architectures:
// their names (Arch), and New, the constructor that turns a name, a node's
// place in the cluster and what the game's world looks like (Space) into the
// node.Discovery a node core runs, with the tuned presets.
//
// It exists so that every driver builds discovery the same way: the
// simulated worlds of lab/harness, the live daemon (package live) and the
// local player node of "overworld bot" all call New, so a figure measured in
// the simulator is the figure of the product. The presets (publication
// period, subscription margin, jump distance, the ring's periods and long
// links, the key mapping a map's shape picks, the prediction horizon) are
// constants here, each commented with the measurement behind it; the
// implementations are internal/locate's Directory, Broadcast, ClientServer
// and Mercury (on internal/ring).
//
// The architectures (the baselines of Colyseus, Bharambe et al., NSDI 2006,
// §7.1, and its distributed locator):
//
//   - Directory: one rendezvous node (Config.Infra) stores publications
//     and subscriptions and matches them; replicas then sync directly
//     between the nodes. When the nodes' failure detectors declare it
//     dead, the standbys (Config.Standby) take over in order: every node
//     resends its soft state to the next at once, so matching resumes
//     within one publication period;
//   - Broadcast: every node sends every update to every other member;
//   - ClientServer: one central server (Config.Infra) holds every primary
//     and runs every think function; the other nodes are its clients;
//   - Colyseus: every member is a rendezvous for a key range of a Mercury
//     ring; New bootstraps the ring with Config.Members, each at an even
//     share of the key space (RingMembers).
//
// Single points of failure: the client-server architecture's server is one
// by design (it holds every primary; a standby would need the objects
// replicated to it, which that baseline does not do), and so is a
// directory configured with an empty Standby. Broadcast has none, and the
// colyseus ring repairs itself around a crashed member (its successor
// lists and probes, internal/ring); the directory's rendezvous has its
// standbys.
//
// What the caller must do:
//
//  1. Pick the architecture (ParseArch reads a name) and build one
//     Config per node: its ID, the cluster's member nodes (the nodes
//     with players), the infrastructure node under Directory and
//     ClientServer (and the directory's standbys, or nil for
//     DefaultStandby), the game's Space, and the run's seed. Every node
//     of a cluster gets the same Config but for Self.
//
//  2. Call New once per node and hand the result to node.Config.Discovery.
//     A Discovery serves one node and is driven by that node only.
//
//  3. When the cluster's members change while it runs (package live's
//     membership gossip), tell the node's discovery on the goroutine that
//     drives the node (members.go): SetMembers under broadcast; JoinRing
//     for a colyseus node built with Config.Joins, and LeaveRing before a
//     colyseus node stops.
//
// New changes nothing outside the value it returns: no globals, no clock,
// randomness only from the seed.
package discovery
