// Package replica owns a node's local object store — its primaries and its
// replicas — and replica synchronisation, after Colyseus §5: each frame every
// changed primary sends a field-wise delta to every node holding a replica,
// against the state it last sent there; replicas apply the deltas, and ask
// for a resync when one does not apply; writes made to a replica travel to the primary as
// tentative updates; replicas are requested, kept by periodic registration,
// dropped when no longer needed or no longer registered, and deleted when
// their object is.
//
// A Store is a deterministic state machine (sans-IO): it reads no clock,
// starts no goroutine and touches no network. It is not safe for concurrent
// use. Its caller (package node) must:
//
//  1. Build it with NewStore and a Config whose Self and Registry are set
//     (every node of a cluster uses the same Registry).
//
//  2. Add the node's primaries with AddPrimary (and Handoff, on a client of
//     the client-server architecture), delete them with Delete, and make
//     writes with Write, which forwards writes to replicas to the primary.
//
//  3. Once per frame, after the think functions ran: call Commit(now) so that
//     changed primaries get a new version, tell the store which replicas the
//     node's discovery wants (Want) or which holders its primaries must keep
//     (Keep), and call Flush(now, view, outbox) to produce the frame's
//     updates, acknowledgements, registrations, drops, deletions, handoffs
//     and tentative writes. view is the union of the node's primaries'
//     interests: requested replicas outside it for longer than
//     Config.ReplicaLinger are dropped. While they linger they are dormant
//     (after Config.DormantAfter): the node tells the primary
//     (wire.TypeDormant), which sends them updates only every
//     Config.DormantEvery until they come back into view and are
//     registered again; an object attached to a dormant one is registered
//     when it enters the view alone. A dormant replica in view is at most
//     DormantEvery plus a round trip stale. A dormant registration lapses
//     at the primary Config.DormantTTL after it arrived, when the holder has
//     dropped the replica: neither side sends a wire.TypeDrop for it.
//
//  4. Deliver every frame of a received packet of a replica message type
//     (Handles: wire.TypeUpdates … wire.TypeHandoff, wire.TypeDormant) first to Check, for every frame
//     of the packet, and only if all pass, to Apply. Check changes nothing;
//     so a malformed packet is rejected whole, with no state changed. Then
//     call Answer(now, outbox): a replica request (registration) from a
//     new holder is answered with the full state at once, not at the next
//     Flush (which would add up to a frame of discovery latency). Every
//     request, and every retry of it, goes with a resync request from
//     version 0, so a primary that still counts the node as a holder (its
//     full state was lost, a push ended, a drop was lost) sends the full
//     state again at once instead of at its next keepalive.
//
//  5. Send the packets the outbox makes, in any order: the protocol tolerates
//     loss, duplication and reordering. Updates are idempotent (a version is
//     applied once, older ones are ignored). A primary takes every update it
//     sent as received and sends the next as a delta from it; a holder
//     acknowledges only when an update does not apply to the version it has
//     (one was lost or overtaken), asking for a resync from that version
//     (once per version, and again after Config.RequestRetry), so a
//     loss-free stream of updates carries no acknowledgements at all. A
//     primary keeps Config.HistoryLen versions as delta bases; a replica
//     keeps only the newest it received.
//     A primary confirms its last change with a keepalive
//     Config.RetransmitAfter later (a lost last update is found then), an
//     idle primary sends a keepalive every Config.KeepalivePeriod, and a
//     replica that hears nothing from its primary for Config.ReplicaTimeout
//     is deleted — which bounds how long a replica can outlive its object
//     whatever the network loses. A replica this node did not ask for
//     (pushed) goes sooner, after Config.PushedTimeout: its push ended and
//     the primary's drop was lost, so nobody updates it any more.
//
//  6. Tell the store of every packet's sender (Heard) before its frames,
//     and pass the locator's watch list (SetWatch) each frame and the
//     store's dead list (Dead) to the locator. To move a primary, call
//     Migrate or MigrateBox, then FlushAuthority, and send what the outbox
//     makes; to write to an object the node may not hold, WriteTo.
//
// Attached objects (world.Attacher): a primary attached to another local
// primary is replicated on every node that holds the other (its holders are
// mirrored each Flush), without discovery, and migrates with it.
//
// Authority (authority.go, writes.go, health.go, claim.go): every object has an
// epoch; a primary migrates between nodes with its state, writers'
// progress and holders, leaving a forwarding reference; the node that
// created an object (its home) binds it to its current primary, the name
// service writes by ID go through; writes carry their writer's sequence
// numbers and are applied once and acknowledged once backed up; with
// Config.Failover each primary keeps a warm backup on another node, and a
// backup promotes itself when a majority of the cluster finds the
// primary's node dead (a migration's fenced backup only once the former
// backup grants it). A holder whose primary has been silent for
// Config.SuspectAfter looks the object up at the node its locator names
// (Want, with Wanted and Known false for it meanwhile): a holder that
// registered too late for the backup to hear of it finds the promoted
// primary that way. No library does this for a sans-IO game object
// store, so it is written here; the failure detector follows SWIM's
// indirect probes (Das, Gupta and Motivala, 2002) with a majority quorum.
package replica
