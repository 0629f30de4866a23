package node

import (
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/replica"
)

// The node's public boundary. The protocol cores a node composes (the
// replica store in internal/replica, the locators in internal/locate) stay
// internal: their state machines and frame formats change freely. What a
// caller outside this module reads of them is re-exported here as aliases,
// so a simulated or live driver, an observer or a test written against the
// public API can name every type node's exported methods use; wire (node
// IDs, packets, traffic classes) is public in its own right.

// ObjectInfo describes one object a node holds, primary or replica, for
// observers: its ID, kind, version, the time its primary produced that
// version, which node holds the primary, which node controls it, the State
// the game reads and the Synced state of Version. Its States belong to the
// node: read them before the node's next Tick or Step and never modify them.
type ObjectInfo = replica.Info

// ObjectBrief is the part of ObjectInfo an observer reads of every object
// every frame (ID, kind, version, produced time, primary flag and State),
// cheaper to gather.
type ObjectBrief = replica.Brief

// StoreStats counts what a node's replica store did (updates, full states
// and keepalives sent, their frames and bytes, acknowledgements, tentative
// writes, updates applied and ignored, replicas timed out and dropped); all
// fields only grow.
type StoreStats = replica.Stats

// ReplicaConfig tunes replica management (Config.Replica): update and
// keepalive periods, delta history, timeouts. The zero value takes the
// defaults.
type ReplicaConfig = replica.Config

// DiscoveryFrame is what a node hands its Discovery every frame: the time,
// its ID, the dimensions of the world's space, its primaries (with
// location, interest and velocity), its view and its anticipated boxes.
type DiscoveryFrame = locate.Frame

// DiscoveryOut collects what a Discovery produces: frames to send (in an
// outbox of package wire), objects found for the node to replicate, and
// replicas to push to other nodes. Discovery implementations are built by
// package discovery (discovery.New); the frame formats of the built-in
// locators are internal and may change between versions.
type DiscoveryOut = locate.Out
