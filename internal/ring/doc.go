// Package ring owns the overlay ring the distributed object locator runs on
// (Colyseus §3 and §6, over Mercury's routing): nodes on a circular uint64
// key space, each owning the contiguous range (predecessor's key, own key];
// membership (join through a seed, graceful leave, crash); successor lists
// and predecessor pointers kept by periodic stabilisation; failure detection
// by probes; routing toward a key; range forwarding; and leave-join load
// balancing. It is written here: no Go library implements a Mercury ring,
// and the node core needs one that is sans-IO.
//
// A Node is a deterministic state machine (ARCHITECTURE.md, rule 1): no
// goroutines, clocks or sockets. Time is an argument; randomness (long-link
// draws, timer phases, load samples) comes from Config.Rand. Its caller
// must:
//
//  1. Build it with New(cfg) (cfg from DefaultConfig or LANConfig, with a
//     seeded Rand; set cfg.Outbox to have its frames committed to a node
//     core's outbox), then Create the first node of a ring at a key, or
//     Join another node through any member (at a key of its choosing, or
//     JoinPicked: the seed splits its own range at its load median), or
//     Bootstrap every node of a new ring from one full member list.
//  2. Deliver every ring frame received (Handles reports the types; Check
//     validates one without acting, for whole-packet validation) with
//     Step(now, from, type, body) — or, when the ring runs without a node
//     core, whole packets with StepPacket (PacketCore adapts a Node to
//     sim.Core) — and call Tick(now) often (every 50 to 100 ms: the
//     periods are Config's, the resolution is the caller's).
//  3. After each Step, Tick or API call, send what Drain returns and act on
//     what Events returns: EventDelivered (a payload for a key this node
//     owns, with its hop count; Data valid until the next Events call),
//     EventHandoff (move the soft state of a range to its new owner),
//     EventRange and EventJoined (this node's range), EventPeerFailed,
//     EventLeft, EventJoinFailed (pick another seed), EventIsolated (every
//     peer failed: Leave and Join again through a member).
//  4. Report the load routed to this node with AddLoad(now, key, count) —
//     each publication or subscription stored or matched here — if load
//     balancing is on (Config.Balance).
//  5. If it knows the membership (a coordinator does), hand each node a
//     random other member with AddContact now and then (every 10 s or
//     so): under churn heavy enough to split the ring into loops that know
//     nothing of each other, that is what joins them again.
//
// Routing. Route(now, key, class, payload) delivers an opaque payload to
// the owner of key; RouteRange(now, lo, hi, ...) to every node whose range meets
// the clockwise range [lo, hi] (routed to the owner of lo, then walked
// along successors to the owner of hi, fanned out: each walker sends a
// copy at once to every successor in its list within the range, and the
// last of them walks on, so k owners are reached in about k/r sequential
// hops; a node the walk skipped because it joined just before gets a copy
// back from its successor). A routed frame is committed under
// its payload's traffic class, so routing traffic is accounted with what
// it carries (route-cache confirmations too); ring upkeep (stabilisation,
// probes, joins, long-link lookups) is ClassMaintenance. Each hop goes, in order of
// preference, to the successor that owns the key (from the successor list),
// to the owner in the route cache (one cache hop per message at most), or to
// the known node closest before the key among successors, long links and
// cached owners (greedy, strictly closer each hop, so it cannot loop on a
// stable ring). The route cache holds 2·log2(n) entries (the paper's size;
// n estimated from the successor list's span), key range → owner, least
// recently used evicted, each valid for CacheTTL after the owner confirmed
// it: an owner reached in two or more hops sends the origin a RingOwner so it
// goes direct next time, and a message sent through an entry past half its
// life asks the owner for the same confirmation, so routes in steady use
// stay cached. Long links (Config.Links, Mercury's k) are drawn from the
// harmonic distribution by node count, as Mercury does: about n^u nodes
// away, u uniform, placed with a histogram of the nodes' density over the
// key space learnt from the range widths of the owners of random keys
// (density.go), and looked up through the ring; one is redrawn every
// LinkRefresh. Until the histogram has 16 samples (about 16 s after a
// join) links are drawn by key distance, d/2^64 = n^(u-1), with n
// estimated from the successor list's span. A message sent to a node that believes it owns
// the key but does not (a node joined in between) goes back to its
// predecessor; a node whose predecessor failed accepts keys routed to it as
// their last hop until a new predecessor stabilises with it.
//
// Membership. A join is routed to the owner of the joiner's key, which
// answers with its old predecessor and its successor list, takes the joiner
// as its predecessor (EventHandoff of the joiner's part, EventRange of its
// own) and the joiner announces itself to its predecessor. Stabilisation
// (every Stabilize) asks the successor for its predecessor and successor
// list, adopting a node that joined in between and learning r successors.
// Probes go every Probe to the predecessor and the successor, and every
// LinkProbe (3 × Probe) to the farther successors and the long links (the
// successor's stabilisation replies carry the farther successors, which
// it probes itself), except to a peer heard from within the last period
// (its stabilisation, its own probe or any other ring message proves it
// alive), which is probed only every third period (to refresh its key and
// load). A probe unanswered for half a period is sent again; a peer silent
// for FailAfter after an unanswered probe is dropped (EventPeerFailed: with
// the defaults, about six round trips in a row were lost), and for
// FailAfter no stabilisation reply that still lists it puts it back; the
// next successor takes over, and a node whose
// successor list empties looks up the owner of the key after its own
// through any live peer. A graceful Leave sends the predecessor, the
// successor and every node that probed the leaver lately the leaver's
// neighbours, so all repair at once and the successor's range grows
// (EventHandoff at the leaver, EventRange at the successor). A node whose
// predecessor failed takes the next node that stabilises with it as its
// predecessor, unless that node lies inside its own successor arc (stale
// pointers). Heavy churn can still split a ring into two interleaved loops;
// a node probed by, or answering, a member that lies between it and its
// successor takes it as successor, and every LinkRefresh a node probes one
// member from a uniform sample of those it has heard of (plus any the
// driver gave with AddContact) and looks up its own successor through it,
// which merges such loops.
//
// Load balancing (Config.Balance; the rule of Mercury's leave-join, with
// these thresholds). Load is the rate of publications and subscriptions
// reported with AddLoad over the last LoadWindow (30 s), counting only the
// share of each second's sampled keys still in the node's range. Probes
// carry each node's load, so a node knows the load of its predecessor,
// successors and long links (a sample spread over the ring). Every
// BalanceEvery (10 s), a node that has been in the ring for a whole window
// and has not moved for BalanceCooldown (60 s) computes the mean M of its
// own load and those of the sampled peers heard within 3 probe periods
// (at least two of them). If M ≥ MinLoad (1/s), its own load is below
// Light·M (½ M), its successor's load plus its own is below Heavy·M (so
// leaving does not overload the successor, which inherits its range), and
// some sampled peer other than its successor is above Heavy·M (2 M), it
// asks the heaviest such peer to split. The heavy node agrees unless it
// split within BalanceCooldown, picking the load-weighted median of its
// sampled keys (the middle of its range without samples); the light node
// then leaves gracefully and joins at that key, taking the lower half of the
// heavy node's load.
//
// Malformed frames (Stats.Malformed, with an error) and frames that do not
// fit the node's state (Stats.Unexpected) are dropped without changing
// anything; bad API input is rejected with an error before any change.
package ring
