// Package locate owns object discovery: how a node learns which remote
// objects its primaries' interests need, and which nodes need its own
// primaries. It holds the three baseline architectures of Colyseus §7.1 —
// Directory (one rendezvous node stores publications and subscriptions as
// soft state and matches them; standbys take over, in order, when it is
// declared dead), Broadcast (every node replicates every
// object) and ClientServer (one server holds every primary and pushes each
// player node what its interest covers) — and Mercury, the paper's own
// design: the distributed range-partitioned locator on the ring
// (mercury.go), where every node is the rendezvous of the key range it
// owns.
//
// Discovery sits beside replica management (neither imports the other)
// because it needs nothing from the object store: it sees a node's
// primaries as (ID, location, interest) and its view as boxes, and answers
// with facts — Found (object X, whose primary is on node N, was at L) for
// the node to request a replica, and Push (node N must hold a replica of
// local primary X) for architectures where the primary's side decides. The
// node turns those facts into replica requests and holder
// registrations.
//
// Matching is indexed so that it scales to tens of thousands of objects:
// Points (object locations by ID) and Boxes (boxes by owner node) are
// uniform grids over the first two dimensions, with cells sized from the
// typical box width (AutoCell), updated incrementally, and exact (every
// candidate is checked with world.Box.Contains; unbounded, degenerate and
// NaN boxes behave as under a scan; results come in ID or node order). The
// directory's rendezvous matches a publication only against the
// subscriptions with a box in its cell, and a new or changed subscription
// only against the publications in its boxes; a refresh of a live
// subscription is matched only against the publications outside its old
// boxes (the subscriber already has every publication in them), and those
// that skipped it as a holder since. With DirectoryConfig.Reckon
// publications carry velocities and the rendezvous does not resend what a
// subscriber can predict (as Mercury's Sweep does); with BatchMatches a
// frame's matches to one subscriber leave in one packet at the
// rendezvous node's next frame. The client-server server finds the clients
// whose view holds each object from a grid of the views. Node uses the
// same grids for Context.Each and for its view.
//
// Locators are deterministic state machines (sans-IO). Their caller must:
//
//  1. Build one locator per node, all of the same architecture and with
//     the same cluster parameters (rendezvous, server, member list).
//  2. Once per frame, after the think functions ran, call Tick with a
//     Frame describing the node's primaries (in ID order), its view, and
//     the nodes its failure detector declared dead (Frame.Dead), and an
//     Out whose Outbox receives the frames to send. Then act on Out.Found
//     and Out.Push and clear them, and have the failure detector watch
//     the nodes in Out.Watch (the directory's rendezvous candidates it
//     depends on).
//  3. Deliver every received frame of a discovery type (wire.TypePublish,
//     TypeSubscribe, TypeMatch) to Step, after validating the packet (every
//     frame must decode) so that a malformed packet changes nothing.
//     Frames a locator sends to its own node must be delivered too (the
//     directory's rendezvous subscribes and publishes through itself).
//
// The parts of the distributed locator on the ring (Colyseus §6) are
// written here, not taken from a library: no Go library does range
// publish/subscribe with soft state over a ring (DHT libraries store
// exact keys; Mercury's range routing was never released as Go). They are
// pure and deterministic, each with its caller's duties in its own doc:
// key mappings from points and boxes to ring keys and key ranges
// (keymap.go: LinearMap and HilbertMap for rangedht, RegionMap for dht);
// the soft state of a rendezvous node, matched in both directions and
// handed off by key range (rendezvous.go: Store); interest prediction
// (predict.go: Predictor, §6.2's formula); and subscription aggregation
// (aggregate.go: SubCache, Merge, Aggregator). internal/ring routes
// between them; Mercury (mercury.go) joins them up into a node.Discovery:
// each frame it publishes the node's primaries (every PublishPeriod, at
// once when one jumped, and only every IdleEvery, with longer-lived
// publications, while one stays put; a publication lists the nodes already
// registered for its replicas, Pub.Skip, and carries its time, so that
// subscribers keep the newest), subscribes its predicted, aggregated view
// (a box's key ranges bridged across gaps narrower than one owner's
// range), and delivers the matches its rendezvous ranges produce; its ring
// traffic travels in wire.TypeRing frames and its locator traffic in
// wire.TypeLocate frames (coordinates on a 1/16-unit grid, routed keys
// rounded to KeyGrain), each accounted in its class (maintenance, routing,
// matching). With MercuryConfig.Sweep (what the lab runs) a moving
// primary's publication carries its velocity: a rendezvous matches the
// segment it covers until the next publication instead of widening every
// subscription for the publishers' movement (Store's Sweep), the
// subscriber follows a candidate along it (Found.Where), and a rendezvous
// does not resend a subscriber a publication that the last one it sent
// predicts to a metre (dead reckoning of matches). Mercury's caller must also deliver
// those two frame types to Step, build every node's Mercury with the same
// KeyMap and ring parameters, and Join it (with a seed contact) before
// its first Tick.
package locate
