package ring

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
)

// Peer is one ring member: its node and its key.
type Peer = wire.RingPeer

// Range is the clockwise key range [Lo, Hi], both ends included; it wraps
// past the top of the key space when Hi < Lo. Lo == Hi+1 is the whole ring.
type Range struct{ Lo, Hi uint64 }

// Contains reports whether key k lies in r.
func (r Range) Contains(k uint64) bool { return k-r.Lo <= r.Hi-r.Lo }

// Size returns the number of keys in r minus one (so the whole ring, 2^64
// keys, is MaxUint64).
func (r Range) Size() uint64 { return r.Hi - r.Lo }

// String prints r in hex.
func (r Range) String() string { return fmt.Sprintf("[%#x, %#x]", r.Lo, r.Hi) }

// after reports whether k lies in the half-open arc (a, b]; a == b is the
// whole ring.
func after(a, k, b uint64) bool { return a == b || k-a-1 < b-a }

// strictly reports whether k lies in the open arc (a, b).
func strictly(a, k, b uint64) bool { return k != a && k != b && (a == b || k-a < b-a) }

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventJoined: this node is in the ring; Range is its range.
	EventJoined EventKind = iota + 1
	// EventRange: this node's range is now Range (it grew because the
	// predecessor left or failed, or shrank because a node joined or a
	// new predecessor was learnt).
	EventRange
	// EventHandoff: the keys in Range now belong to Peer (a joiner took
	// them, or this node is leaving); the upper layer moves its soft state
	// for them there.
	EventHandoff
	// EventDelivered: a routed payload reached this node. Range is the
	// key (Lo == Hi) or, for a range route, the whole routed range; Peer.ID
	// is the origin; Class, Data and Hops describe the message.
	EventDelivered
	// EventPeerFailed: Peer stopped answering probes and was dropped.
	EventPeerFailed
	// EventLeft: this node left the ring (Leave, or a load-balancing move
	// that rejoins next).
	EventLeft
	// EventJoinFailed: the join was refused or went unanswered JoinTries
	// times; the node is out of the ring.
	EventJoinFailed
	// EventIsolated: every peer this node knew failed; it is a ring of its
	// own (owning every key). The driver makes it Leave and Join again
	// through a member it knows of.
	EventIsolated
)

var eventNames = [...]string{"", "joined", "range", "handoff", "delivered", "peer-failed", "left", "join-failed",
	"isolated"}

// String returns the kind's name.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k > 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is one thing the upper layer must know about. Data aliases a buffer
// of the node that stays valid until the next call of Events.
type Event struct {
	Kind  EventKind
	Range Range
	Peer  Peer
	Class wire.Class
	Data  []byte
	Hops  int
	Walk  bool // EventDelivered: reached by walking successors from the owner of Range.Lo
}

// Stats counts what a node did. Frames dropped on input are Malformed
// (failed to decode) or Unexpected (valid, but not for this node's state or
// from the wrong peer); neither changes any state.
type Stats struct {
	Malformed, Unexpected uint64
	Routed                uint64 // routes this node originated (Route, RouteRange)
	Forwarded             uint64 // route frames this node sent (every hop, range walks included)
	Delivered             uint64 // payloads delivered here
	Dropped               uint64 // routed messages dropped: hop limit, or no live next hop
	CacheHits             uint64 // route-cache hops taken
	JoinsAccepted         uint64 // joiners this node took in
	PeersFailed           uint64 // peers declared failed
	Moves                 uint64 // load-balancing leave-joins this node made
	Splits                uint64 // load-balancing splits this node's range offered
	ProbesSpared          uint64 // probes not sent: the peer was heard from within the period
}

// Errors of the API.
var (
	ErrNotMember = errors.New("ring: node is not a member of a ring")
	ErrState     = errors.New("ring: wrong state for this call")
	ErrPayload   = errors.New("ring: bad payload")
	ErrMembers   = errors.New("ring: bad member list")
)

type state uint8

const (
	stateIdle state = iota
	stateJoining
	stateMember
	stateLeft
)

type peerState struct {
	key       uint64
	lastHeard time.Duration
	waiting   bool          // a probe is unanswered
	waitSince time.Duration // since when (the first unanswered probe)
	lastPing  time.Duration // the last probe sent
	load      float64
	loadAt    time.Duration
	hasLoad   bool
}

type link struct {
	peer    Peer
	has     bool
	pending bool
}

type joinState struct {
	seed     wire.NodeID
	key      uint64
	pick     bool // the seed picks the key
	deadline time.Duration
	tries    int
}

// Node is one member of the ring: a deterministic state machine. It is not
// safe for concurrent use.
type Node struct {
	cfg     Config
	st      state
	now     time.Duration
	self    Peer
	pred    Peer
	hasPred bool
	since   time.Duration // when it last joined
	succs   []Peer
	links   []link
	peers   map[wire.NodeID]*peerState
	// failed: when a peer was declared failed here. Until FailAfter later
	// (or until it is heard from), stabilisation replies that still list
	// it do not put it back in the successor list.
	failed map[wire.NodeID]time.Duration
	cache  cache
	load   loadWindow
	join   joinState

	nextStab, nextProbe, nextLink, nextBalance time.Duration
	linkSlot                                   int
	probeSeq                                   uint64
	splitTo                                    wire.NodeID
	splitBy                                    time.Duration // the split request's deadline; 0: none pending
	lastMove, lastSplit                        time.Duration
	moved, split                               bool

	out           *wire.Outbox // cfg.Outbox, or own
	ownOut        wire.Outbox
	events        []Event
	arena, spare  []byte
	stats         Stats
	probeTargets  []wire.NodeID
	route         wire.RingRoute
	joinReply     wire.RingJoinReply
	stab          wire.RingStabilize
	nb            wire.RingNeighbours
	probe         wire.RingProbe
	owner         wire.RingOwner
	splitMsg      wire.RingSplit
	scratchIDs    []wire.NodeID
	dens          density
	contacts      []Peer
	contactSeen   int
	contactWait   bool        // a contact probe is unanswered
	contactID     wire.NodeID // the contact probed
	scratchPeers  []Peer
	scratchFailed []Peer
}

// New returns an idle node (out of any ring): call Create or Join next.
func New(cfg Config) (*Node, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: c, peers: map[wire.NodeID]*peerState{}}
	n.links = make([]link, c.Links)
	n.load.init(c.LoadWindow)
	n.out = c.Outbox
	if n.out == nil {
		n.out = &n.ownOut
		n.ownOut.MaxPayload = wire.DefaultMaxPayload
	}
	return n, nil
}

// ID returns the node's ID.
func (n *Node) ID() wire.NodeID { return n.cfg.ID }

// Key returns the node's key (meaningful once it joined).
func (n *Node) Key() uint64 { return n.self.Key }

// Member reports whether the node is in a ring.
func (n *Node) Member() bool { return n.st == stateMember }

// Joining reports whether the node waits for a join reply.
func (n *Node) Joining() bool { return n.st == stateJoining }

// Range returns the node's range (pred, self] and whether it knows it: a
// node whose predecessor failed does not until a new one stabilises with it
// (it still accepts keys routed to it as their final hop meanwhile).
func (n *Node) Range() (Range, bool) {
	if n.st != stateMember || !n.hasPred {
		return Range{}, false
	}
	return Range{n.pred.Key + 1, n.self.Key}, true
}

// Pred returns the predecessor, if known.
func (n *Node) Pred() (Peer, bool) { return n.pred, n.hasPred && n.st == stateMember }

// Succs appends the successor list (nearest first) to dst.
func (n *Node) Succs(dst []Peer) []Peer { return append(dst, n.succs...) }

// Links appends the long-distance links currently known to dst.
func (n *Node) Links(dst []Peer) []Peer {
	for _, l := range n.links {
		if l.has {
			dst = append(dst, l.peer)
		}
	}
	return dst
}

// CacheLen returns the number of route-cache entries.
func (n *Node) CacheLen() int { return len(n.cache.e) }

// Stats returns the node's counters.
func (n *Node) Stats() Stats { return n.stats }

// Config returns the validated configuration.
func (n *Node) Config() Config { return n.cfg }

// Owns reports whether this node is the owner of key k as far as it knows.
func (n *Node) Owns(k uint64) bool {
	return n.st == stateMember && n.hasPred && after(n.pred.Key, k, n.self.Key)
}

func (n *Node) advance(now time.Duration) {
	if now > n.now {
		n.now = now
	}
}

// Create makes this node the first member of a new ring at key: it owns
// the whole key space.
func (n *Node) Create(now time.Duration, key uint64) error {
	if n.st == stateMember || n.st == stateJoining {
		return fmt.Errorf("%w: Create on a node that is %s", ErrState, n.stateName())
	}
	n.advance(now)
	n.reset(key)
	n.pred, n.hasPred = n.self, true
	n.becomeMember()
	return nil
}

// Join asks seed (any member) to route a join to the owner of key; the
// node becomes a member when the owner answers (EventJoined).
func (n *Node) Join(now time.Duration, seed wire.NodeID, key uint64) error {
	return n.startJoin(now, seed, key, false)
}

// JoinPicked asks seed to pick the key: seed splits its own range at the
// median of the load it measured there (the middle when it measured none).
func (n *Node) JoinPicked(now time.Duration, seed wire.NodeID) error {
	return n.startJoin(now, seed, 0, true)
}

func (n *Node) startJoin(now time.Duration, seed wire.NodeID, key uint64, pick bool) error {
	if n.st == stateMember || n.st == stateJoining {
		return fmt.Errorf("%w: Join on a node that is %s", ErrState, n.stateName())
	}
	if seed == n.cfg.ID {
		return fmt.Errorf("%w: a node cannot join through itself (use Create)", ErrState)
	}
	n.advance(now)
	n.reset(key)
	n.st = stateJoining
	n.join = joinState{seed: seed, key: key, pick: pick}
	n.sendJoin()
	return nil
}

func (n *Node) stateName() string {
	return [...]string{"idle", "joining", "a member", "gone"}[n.st]
}

func (n *Node) reset(key uint64) {
	n.self = Peer{ID: n.cfg.ID, Key: key}
	n.pred, n.hasPred = Peer{}, false
	n.succs = n.succs[:0]
	clear(n.links)
	clear(n.peers)
	n.cache.e = n.cache.e[:0]
	n.splitBy = 0
}

func (n *Node) sendJoin() {
	n.join.tries++
	// Exponential backoff: a join routed over a slow ring is not flooded
	// with duplicates (a duplicate of an accepted join is answered again).
	n.join.deadline = n.now + n.cfg.JoinTimeout<<min(n.join.tries-1, 10)
	m := wire.RingRoute{Kind: wire.RouteJoin, Origin: n.cfg.ID, Key: n.join.key, Hops: 1}
	if n.join.pick {
		m.Tag = 1
	}
	n.out.Commit(n.join.seed, wire.ClassMaintenance, wire.AppendRingRoute(n.out.Buf(), &m))
}

func (n *Node) becomeMember() {
	n.st = stateMember
	n.since = n.now
	n.load.reset()
	r := n.cfg.Rand
	// Random phases keep the nodes' periodic traffic from synchronising.
	n.nextStab = n.now + time.Duration(r.Int64N(int64(n.cfg.Stabilize)))
	n.nextProbe = n.now + time.Duration(r.Int64N(int64(n.cfg.Probe)))
	n.nextLink = n.now + time.Duration(r.Int64N(int64(n.cfg.LinkRefresh)))
	n.nextBalance = n.now + n.cfg.BalanceEvery + time.Duration(r.Int64N(int64(n.cfg.BalanceEvery)))
	rg, _ := n.Range()
	n.emit(Event{Kind: EventJoined, Range: rg, Peer: n.self})
	for i := range n.links {
		n.drawLink(i)
	}
}

// Leave leaves the ring gracefully: the range goes to the successor
// (EventHandoff, then EventLeft), which learns it at once, as does the
// predecessor.
func (n *Node) Leave(now time.Duration) error {
	if n.st != stateMember {
		return fmt.Errorf("%w: Leave on a node that is %s", ErrState, n.stateName())
	}
	n.advance(now)
	n.leave()
	return nil
}

func (n *Node) leave() {
	if len(n.succs) > 0 {
		m := wire.RingNeighbours{Key: n.self.Key, HasPred: n.hasPred, Pred: n.pred, Succs: n.succs}
		if !n.hasPred {
			m.Pred = Peer{}
		}
		n.out.Commit(n.succs[0].ID, wire.ClassMaintenance, wire.AppendRingNeighbours(n.out.Buf(), wire.TypeRingLeave, &m))
		if n.hasPred && n.pred.ID != n.cfg.ID && n.pred.ID != n.succs[0].ID {
			n.out.Commit(n.pred.ID, wire.ClassMaintenance, wire.AppendRingNeighbours(n.out.Buf(), wire.TypeRingLeave, &m))
		}
		// Everyone else that points here (its probes were heard lately, or
		// this node points there) forgets this node at once instead of
		// losing messages until its probes time out.
		others := n.scratchIDs[:0]
		for id, ps := range n.peers {
			if id != n.succs[0].ID && (!n.hasPred || id != n.pred.ID) &&
				(n.now-ps.lastHeard <= n.cfg.FailAfter || n.references(id)) {
				others = append(others, id)
			}
		}
		slices.Sort(others) // map order must not reach the wire
		n.scratchIDs = others
		for _, id := range others {
			n.out.Commit(id, wire.ClassMaintenance, wire.AppendRingNeighbours(n.out.Buf(), wire.TypeRingLeave, &m))
		}
		lo := n.self.Key + 1 // unknown predecessor: hand over what this node may hold
		if n.hasPred {
			lo = n.pred.Key + 1
		}
		n.emit(Event{Kind: EventHandoff, Range: Range{lo, n.self.Key}, Peer: n.succs[0]})
	}
	n.emit(Event{Kind: EventLeft, Peer: n.self})
	n.st = stateLeft
	k := n.self.Key
	n.reset(k)
}

// Drain appends the packets to send to dst and forgets them; their payloads
// now belong to the caller. With Config.Outbox set, the frames are in that
// outbox instead and Drain returns dst unchanged.
func (n *Node) Drain(dst []wire.Packet) []wire.Packet {
	if n.out != &n.ownOut {
		return dst
	}
	return n.out.Packets(n.cfg.ID, dst)
}

// Bootstrap makes this node a member of a ring whose whole membership the
// caller knows (a coordinator starting a cluster, or an experiment skipping
// the joins): members lists every node with its key, this one included. The
// node takes its predecessor and successors from the list at once, as if
// it had joined and stabilised; every member must be bootstrapped with the
// same list. Duplicate IDs or keys, or a list without this node, are
// rejected before any change.
func (n *Node) Bootstrap(now time.Duration, members []Peer) error {
	if n.st == stateMember || n.st == stateJoining {
		return fmt.Errorf("%w: Bootstrap on a node that is %s", ErrState, n.stateName())
	}
	sorted := slices.Clone(members)
	slices.SortFunc(sorted, func(a, b Peer) int { return cmp.Compare(a.Key, b.Key) })
	me := -1
	ids := make(map[wire.NodeID]bool, len(sorted))
	for i, p := range sorted {
		if ids[p.ID] {
			return fmt.Errorf("%w: node %d listed twice", ErrMembers, p.ID)
		}
		ids[p.ID] = true
		if i > 0 && p.Key == sorted[i-1].Key {
			return fmt.Errorf("%w: nodes %d and %d share key %#x", ErrMembers, sorted[i-1].ID, p.ID, p.Key)
		}
		if p.ID == n.cfg.ID {
			me = i
		}
	}
	if me < 0 {
		return fmt.Errorf("%w: node %d is not in the list", ErrMembers, n.cfg.ID)
	}
	n.advance(now)
	m := len(sorted)
	n.reset(sorted[me].Key)
	n.pred, n.hasPred = sorted[(me-1+m)%m], true
	n.touch(n.pred)
	succs := n.scratchPeers[:0]
	for j := 1; j < m && j <= n.cfg.Succs; j++ {
		succs = append(succs, sorted[(me+j)%m])
	}
	n.scratchPeers = succs
	n.setSuccs(succs)
	n.becomeMember()
	return nil
}

// Events appends the events since the previous call to dst. The Data of
// delivered payloads stays valid until the next call of Events.
func (n *Node) Events(dst []Event) []Event {
	dst = append(dst, n.events...)
	clear(n.events)
	n.events = n.events[:0]
	n.arena, n.spare = n.spare[:0], n.arena
	return dst
}

func (n *Node) emit(e Event) { n.events = append(n.events, e) }

// Handles reports whether frames of type t are ring messages.
func Handles(t wire.Type) bool { return t >= wire.TypeRingRoute && t <= wire.TypeRingSplitReply }

// Check decodes a ring frame without acting on it (a node validates a whole
// packet before any of it changes state).
func (n *Node) Check(t wire.Type, body []byte) error { return n.decode(t, body) }

func (n *Node) decode(t wire.Type, body []byte) error {
	switch t {
	case wire.TypeRingRoute:
		return n.route.Decode(body)
	case wire.TypeRingJoinReply:
		return n.joinReply.Decode(body)
	case wire.TypeRingStabilize:
		return n.stab.Decode(body)
	case wire.TypeRingStabilizeReply, wire.TypeRingLeave:
		return n.nb.Decode(body)
	case wire.TypeRingPing, wire.TypeRingPong:
		return n.probe.Decode(body)
	case wire.TypeRingOwner:
		return n.owner.Decode(body)
	case wire.TypeRingSplit, wire.TypeRingSplitReply:
		return n.splitMsg.Decode(body)
	}
	return fmt.Errorf("%w: %v is not a ring message", wire.ErrMalformed, t)
}

// Step handles one received ring frame from node from. A frame that does
// not decode is counted (Stats.Malformed) and returned as an error; one
// that does not fit the node's state is counted (Stats.Unexpected) and
// dropped. Neither changes any other state.
func (n *Node) Step(now time.Duration, from wire.NodeID, t wire.Type, body []byte) error {
	n.advance(now)
	if err := n.decode(t, body); err != nil {
		n.stats.Malformed++
		return err
	}
	if from == n.cfg.ID {
		n.stats.Unexpected++
		return nil
	}
	if n.st == stateJoining {
		if t == wire.TypeRingJoinReply && from != n.cfg.ID {
			n.onJoinReply(from)
			return nil
		}
		n.stats.Unexpected++
		return nil
	}
	if n.st != stateMember {
		n.stats.Unexpected++
		return nil
	}
	if p := n.peers[from]; p != nil {
		p.lastHeard, p.waiting = n.now, false
	}
	if len(n.failed) > 0 {
		delete(n.failed, from)
	}
	switch t {
	case wire.TypeRingRoute:
		n.onRoute(from, &n.route)
	case wire.TypeRingStabilize:
		n.onStabilize(from)
	case wire.TypeRingStabilizeReply:
		n.onStabilizeReply(from)
	case wire.TypeRingLeave:
		n.onLeave(from)
	case wire.TypeRingPing:
		n.notePeerLoad(from, n.probe.Key, n.probe.Load)
		n.considerSucc(Peer{ID: from, Key: n.probe.Key})
		pong := wire.RingProbe{Seq: n.probe.Seq, Key: n.self.Key, Load: milli(n.Load(n.now))}
		n.commitLater(from, wire.ClassMaintenance, wire.AppendRingProbe(n.out.Buf(), wire.TypeRingPong, &pong))
	case wire.TypeRingPong:
		n.onPong(from)
	case wire.TypeRingOwner:
		n.onOwner(from)
	case wire.TypeRingSplit:
		n.onSplit(from)
	case wire.TypeRingSplitReply:
		n.onSplitReply(from)
	default:
		n.stats.Unexpected++
	}
	return nil
}

func milli(v float64) uint64 {
	if !(v > 0) {
		return 0
	}
	if v > 1e15 {
		return 1e18
	}
	return uint64(math.Round(v * 1000))
}

// Tick runs the periodic work due at now: join retries, failure detection,
// stabilisation, probes, long-link refresh and load balancing.
func (n *Node) Tick(now time.Duration) {
	n.advance(now)
	switch n.st {
	case stateJoining:
		if n.now >= n.join.deadline {
			if n.join.tries >= n.cfg.JoinTries {
				n.st = stateIdle
				n.emit(Event{Kind: EventJoinFailed, Peer: Peer{ID: n.join.seed}})
				return
			}
			n.sendJoin()
		}
		return
	case stateMember:
	default:
		return
	}
	n.detectFailures()
	if n.splitBy != 0 && n.now > n.splitBy {
		n.splitBy = 0
	}
	if n.now >= n.nextStab {
		n.nextStab = n.now + n.cfg.Stabilize
		if len(n.succs) > 0 {
			m := wire.RingStabilize{Key: n.self.Key}
			n.commitLater(n.succs[0].ID, wire.ClassMaintenance, wire.AppendRingStabilize(n.out.Buf(), &m))
		}
	}
	if n.now >= n.nextProbe {
		n.nextProbe = n.now + n.cfg.Probe
		n.sendProbes()
		if n.dens.n < densityMin {
			n.sampleDensity() // warm the density histogram up faster
		}
	}
	if n.now >= n.nextLink {
		n.nextLink = n.now + n.cfg.LinkRefresh
		if len(n.links) > 0 {
			n.drawLink(n.linkSlot % len(n.links))
			n.linkSlot++
		}
		n.probeContact()
		n.sampleDensity()
	}
	if n.cfg.Balance && n.now >= n.nextBalance {
		n.nextBalance = n.now + n.cfg.BalanceEvery
		n.balance()
	}
}

// ---- membership ----

func (n *Node) touch(p Peer) {
	if p.ID == n.cfg.ID {
		return
	}
	if ps := n.peers[p.ID]; ps == nil {
		n.peers[p.ID] = &peerState{key: p.Key, lastHeard: n.now}
	} else {
		ps.key = p.Key
	}
	n.noteContact(p)
}

// numContacts is the size of the contact sample.
const numContacts = 8

// noteContact keeps a uniform sample (a reservoir) of every member this
// node has heard of. One is probed every LinkRefresh: if the ring split into
// two loops under churn, the answer of a node of the other loop that falls
// between this node and its successor joins them again (considerSucc).
func (n *Node) noteContact(p Peer) {
	for i := range n.contacts {
		if n.contacts[i].ID == p.ID {
			n.contacts[i].Key = p.Key
			return
		}
	}
	n.contactSeen++
	if len(n.contacts) < numContacts {
		n.contacts = append(n.contacts, p)
	} else if j := n.cfg.Rand.IntN(n.contactSeen); j < numContacts {
		n.contacts[j] = p
	}
}

// AddContact tells the node of another member, p (a driver that knows the
// membership, such as a coordinator, hands each node a random member now
// and then): it joins the sample of contacts probed every LinkRefresh, so
// that two loops that split under very heavy churn, with no node of one
// knowing a live node of the other, still find each other.
func (n *Node) AddContact(p Peer) {
	if p.ID == n.cfg.ID || n.st != stateMember {
		return
	}
	n.dropContact(p.ID)
	if len(n.contacts) >= numContacts {
		n.contacts[n.cfg.Rand.IntN(len(n.contacts))] = p
		return
	}
	n.contacts = append(n.contacts, p)
}

// probeContact pings one sampled contact that the node does not probe
// anyway; when it answers, the node looks up its own successor through it
// (onPong). The previous contact probed, if it never answered, leaves the
// sample.
func (n *Node) probeContact() {
	if n.contactWait {
		n.contactWait = false
		n.dropContact(n.contactID)
	}
	if len(n.contacts) == 0 {
		return
	}
	c := n.contacts[n.cfg.Rand.IntN(len(n.contacts))]
	if c.ID == n.cfg.ID || n.references(c.ID) {
		return
	}
	if n.peers[c.ID] == nil {
		n.peers[c.ID] = &peerState{key: c.Key, lastHeard: n.now}
	}
	n.contactWait, n.contactID = true, c.ID
	m := wire.RingProbe{Seq: n.probeSeq, Key: n.self.Key, Load: milli(n.Load(n.now))}
	n.commitLater(c.ID, wire.ClassMaintenance, wire.AppendRingProbe(n.out.Buf(), wire.TypeRingPing, &m))
}

func (n *Node) dropContact(id wire.NodeID) {
	for i := range n.contacts {
		if n.contacts[i].ID == id {
			n.contacts = append(n.contacts[:i], n.contacts[i+1:]...)
			return
		}
	}
}

// setSuccs rebuilds the successor list from candidates in order: no
// duplicates, not this node, each further clockwise than the previous, at
// most Succs entries.
func (n *Node) setSuccs(cands []Peer) {
	out := n.succs[:0]
	var tmp [64]Peer
	list := append(tmp[:0], cands...)
	for _, p := range list {
		if p.ID == n.cfg.ID || p.Key == n.self.Key || n.failedLately(p.ID) {
			continue
		}
		if len(out) > 0 && p.Key-n.self.Key <= out[len(out)-1].Key-n.self.Key {
			continue
		}
		dup := false
		for _, q := range out {
			if q.ID == p.ID {
				dup = true
				break
			}
		}
		if dup {
			continue
		}
		out = append(out, p)
		n.touch(p)
		if len(out) == n.cfg.Succs {
			break
		}
	}
	n.succs = out
}

func (n *Node) setPred(p Peer) {
	old, had := n.pred, n.hasPred
	n.pred, n.hasPred = p, true
	n.touch(p)
	if had && old == p {
		return
	}
	if had && strictly(old.Key, p.Key, n.self.Key) && p.ID != n.cfg.ID {
		// The range shrank: (old, p] is p's now.
		n.emit(Event{Kind: EventHandoff, Range: Range{old.Key + 1, p.Key}, Peer: p})
	}
	n.emit(Event{Kind: EventRange, Range: Range{p.Key + 1, n.self.Key}})
}

// considerSucc takes p, a live member that just probed this node, as the
// successor if it lies between this node and its successor: pointers that
// skipped it were stale, and this is how two loops that split under heavy
// churn find each other again (through long links that span both).
func (n *Node) considerSucc(p Peer) {
	if p.ID == n.cfg.ID || p.Key == n.self.Key || len(n.succs) > 0 && !strictly(n.self.Key, p.Key, n.succs[0].Key) {
		return
	}
	cands := append(n.scratchPeers[:0], p)
	cands = append(cands, n.succs...)
	n.scratchPeers = cands
	n.succs = n.succs[:0]
	n.setSuccs(cands)
	n.nextStab = n.now
}

// alone reports whether the node is the only member it knows.
func (n *Node) alone() bool { return len(n.succs) == 0 }

func (n *Node) onJoinReply(from wire.NodeID) {
	m := &n.joinReply
	if !m.Accepted {
		if !n.join.pick && m.Key != n.join.key || n.join.pick && from != n.join.seed {
			n.stats.Unexpected++ // a late answer to an earlier attempt
			return
		}
		if !n.join.pick {
			// The key is taken: let the seed pick one.
			n.join.pick = true
			n.join.tries = 0
			n.sendJoin()
			return
		}
		n.st = stateIdle
		n.emit(Event{Kind: EventJoinFailed, Peer: Peer{ID: n.join.seed}})
		return
	}
	if !n.join.pick && m.Key != n.join.key || m.Pred.ID == n.cfg.ID || m.Pred.Key == m.Key {
		n.stats.Unexpected++
		return
	}
	n.self.Key = m.Key
	n.pred, n.hasPred = m.Pred, true
	n.touch(m.Pred)
	n.setSuccs(m.Succs)
	if len(n.succs) == 0 {
		n.setSuccs([]Peer{m.Pred})
	}
	n.becomeMember()
	// Announce this node to its predecessor at once (rather than waiting
	// for the predecessor's stabilisation to find it).
	a := wire.RingNeighbours{Key: n.self.Key, HasPred: true, Pred: n.pred, Succs: n.succs}
	n.out.Commit(n.pred.ID, wire.ClassMaintenance, wire.AppendRingNeighbours(n.out.Buf(), wire.TypeRingStabilizeReply, &a))
	n.nextStab = n.now
}

// accept takes joiner j in at key k, which this node owns.
func (n *Node) accept(j wire.NodeID, k uint64) {
	if n.hasPred && n.pred.ID == j && n.pred.Key == k {
		n.replyJoin(j, k) // a retry whose first reply was lost
		return
	}
	if k == n.self.Key || !n.hasPred || j == n.cfg.ID {
		r := wire.RingJoinReply{Key: k}
		n.out.Commit(j, wire.ClassMaintenance, wire.AppendRingJoinReply(n.out.Buf(), &r))
		return
	}
	old := n.pred
	jp := Peer{ID: j, Key: k}
	n.stats.JoinsAccepted++
	n.replyJoinWith(jp, old)
	if n.alone() {
		n.setSuccs([]Peer{jp})
	}
	n.emit(Event{Kind: EventHandoff, Range: Range{old.Key + 1, k}, Peer: jp})
	n.pred = jp
	n.touch(jp)
	n.emit(Event{Kind: EventRange, Range: Range{k + 1, n.self.Key}})
	n.cache.dropOverlap(Range{old.Key + 1, n.self.Key})
}

func (n *Node) replyJoin(j wire.NodeID, k uint64) {
	// Re-answer a retry: the joiner's predecessor is the node before it,
	// which this node no longer tracks; its own stabilisation fixes any
	// gap, so hand it this node's view of the ring around it.
	n.replyJoinWith(Peer{ID: j, Key: k}, n.guessPred(k))
}

func (n *Node) guessPred(k uint64) Peer {
	best, ok := Peer{}, false
	for _, p := range n.knownPeers() {
		if p.Key != k && (!ok || k-p.Key < k-best.Key) {
			best, ok = p, true
		}
	}
	if !ok {
		return n.self
	}
	return best
}

func (n *Node) replyJoinWith(jp, pred Peer) {
	succs := append(n.scratchPeers[:0], n.self)
	for _, p := range n.succs {
		if p.ID != jp.ID && len(succs) < n.cfg.Succs {
			succs = append(succs, p)
		}
	}
	n.scratchPeers = succs
	r := wire.RingJoinReply{Accepted: true, Key: jp.Key, Pred: pred, Succs: succs}
	n.out.Commit(jp.ID, wire.ClassMaintenance, wire.AppendRingJoinReply(n.out.Buf(), &r))
}

func (n *Node) onStabilize(from wire.NodeID) {
	x := Peer{ID: from, Key: n.stab.Key}
	if x.Key == n.self.Key {
		n.stats.Unexpected++
		return
	}
	switch {
	case !n.hasPred && len(n.succs) > 0 && strictly(n.self.Key, x.Key, n.succs[len(n.succs)-1].Key):
		// With the predecessor unknown, a node inside this node's own
		// successor arc cannot be the predecessor: it has stale pointers
		// (taking it would close a loop that skips most of the ring).
		n.stats.Unexpected++
		return
	case !n.hasPred || (n.pred.ID == n.cfg.ID):
		n.setPred(x)
	case n.pred.ID == x.ID && n.pred.Key != x.Key:
		// The predecessor rejoined at another key and still names this
		// node its successor: take it where it is now.
		n.hasPred = false
		n.setPred(x)
	case strictly(n.pred.Key, x.Key, n.self.Key):
		n.setPred(x)
	}
	if n.alone() {
		n.setSuccs([]Peer{x})
	}
	m := wire.RingNeighbours{Key: n.self.Key, HasPred: n.hasPred, Pred: n.pred, Succs: n.succs}
	if len(m.Succs) >= n.cfg.Succs {
		m.Succs = m.Succs[:n.cfg.Succs-1]
	}
	n.commitLater(from, wire.ClassMaintenance, wire.AppendRingNeighbours(n.out.Buf(), wire.TypeRingStabilizeReply, &m))
}

func (n *Node) onStabilizeReply(from wire.NodeID) {
	s := &n.nb
	if len(n.succs) == 0 || n.succs[0].ID != from {
		// A joiner announcing itself to its predecessor: it is between
		// this node and its successor, and names this node its predecessor.
		if s.HasPred && s.Pred == n.self && (len(n.succs) == 0 || strictly(n.self.Key, s.Key, n.succs[0].Key)) {
			cands := append(n.scratchPeers[:0], Peer{ID: from, Key: s.Key})
			cands = append(cands, s.Succs...)
			cands = append(cands, n.succs...)
			n.scratchPeers = cands
			n.setSuccs(cands)
			return
		}
		n.stats.Unexpected++
		return
	}
	if s.Key != n.succs[0].Key {
		// The successor moved: forget it; the next one takes over.
		n.dropPeer(from, false)
		return
	}
	cands := n.scratchPeers[:0]
	if s.HasPred && s.Pred.ID != n.cfg.ID && strictly(n.self.Key, s.Pred.Key, s.Key) {
		cands = append(cands, s.Pred)
		n.nextStab = n.now // stabilise with the new successor at the next tick
	}
	cands = append(cands, n.succs[0])
	cands = append(cands, s.Succs...)
	n.scratchPeers = cands
	n.setSuccs(cands)
}

func (n *Node) onLeave(from wire.NodeID) {
	m := &n.nb
	if n.hasPred && n.pred.ID == from {
		if m.HasPred && m.Pred.ID != n.cfg.ID {
			n.hasPred = false
			n.setPred(m.Pred)
		} else {
			n.pred, n.hasPred = n.self, true
			n.emit(Event{Kind: EventRange, Range: Range{n.self.Key + 1, n.self.Key}})
		}
	}
	if i := n.succIndex(from); i >= 0 {
		cands := append(n.scratchPeers[:0], n.succs[:i]...)
		cands = append(cands, m.Succs...)
		cands = append(cands, n.succs[i+1:]...)
		n.scratchPeers = cands
		n.succs = n.succs[:0]
		n.setSuccs(cands)
	}
	n.forget(from)
	n.fixAlone(false) // the leaver named no other node: this one is alone, as expected
}

func (n *Node) succIndex(id wire.NodeID) int {
	for i, p := range n.succs {
		if p.ID == id {
			return i
		}
	}
	return -1
}

// forget removes id from the successors, long links and cache, and from the
// peer table (not from the predecessor: see dropPeer).
func (n *Node) forget(id wire.NodeID) {
	if i := n.succIndex(id); i >= 0 {
		n.succs = append(n.succs[:i], n.succs[i+1:]...)
	}
	for i := range n.links {
		if n.links[i].has && n.links[i].peer.ID == id {
			n.links[i] = link{}
			n.drawLink(i)
		}
	}
	n.cache.dropOwner(id)
	delete(n.peers, id)
}

// fixAlone repairs an empty successor list from whatever else the node
// knows (the nearest known peer clockwise), or makes it the only member.
func (n *Node) fixAlone(isolated bool) {
	if len(n.succs) > 0 {
		return
	}
	best, ok := Peer{}, false
	for _, p := range n.knownPeers() {
		if !ok || p.Key-n.self.Key < best.Key-n.self.Key {
			best, ok = p, true
		}
	}
	if !ok {
		// Nodes that probed this node lately are alive and in the ring.
		for id, ps := range n.peers {
			if ps.waiting || n.now-ps.lastHeard > n.cfg.FailAfter {
				continue
			}
			p := Peer{ID: id, Key: ps.key}
			d, bd := p.Key-n.self.Key, best.Key-n.self.Key
			if !ok || d < bd || d == bd && p.ID < best.ID { // map order must not matter
				best, ok = p, true
			}
		}
	}
	if ok {
		n.setSuccs([]Peer{best})
		// best may be far around the ring: ask the ring who owns the key
		// after this node's, which is its true successor.
		m := wire.RingRoute{Kind: wire.RouteLookup, Origin: n.cfg.ID, Key: n.self.Key + 1, Tag: succTag}
		n.forward(best, &m, false, false)
		return
	}
	if !n.hasPred || n.pred.ID != n.cfg.ID {
		n.pred, n.hasPred = n.self, true
		n.emit(Event{Kind: EventRange, Range: Range{n.self.Key + 1, n.self.Key}})
		if isolated {
			n.emit(Event{Kind: EventIsolated, Peer: n.self})
		}
	}
}

// succTag marks the lookup of a node's own successor (long links use
// tags 1 to Links).
const succTag = 1<<32 - 1

// knownPeers lists the predecessor, successors, long links and cached
// owners (possibly with repeats).
func (n *Node) knownPeers() []Peer {
	ps := n.scratchFailed[:0]
	if n.hasPred && n.pred.ID != n.cfg.ID {
		ps = append(ps, n.pred)
	}
	ps = append(ps, n.succs...)
	for _, l := range n.links {
		if l.has {
			ps = append(ps, l.peer)
		}
	}
	for _, e := range n.cache.e {
		ps = append(ps, e.owner)
	}
	n.scratchFailed = ps
	return ps
}

// dropPeer handles a peer that failed (failed=true: emit EventPeerFailed)
// or moved.
func (n *Node) dropPeer(id wire.NodeID, failed bool) {
	var p Peer
	if ps := n.peers[id]; ps != nil {
		p = Peer{ID: id, Key: ps.key}
	} else {
		p = Peer{ID: id}
	}
	if n.hasPred && n.pred.ID == id {
		n.hasPred = false
	}
	if failed {
		n.stats.PeersFailed++
		n.emit(Event{Kind: EventPeerFailed, Peer: p})
		if n.failed == nil {
			n.failed = map[wire.NodeID]time.Duration{}
		}
		n.failed[id] = n.now
	}
	n.forget(id)
	n.fixAlone(true)
}

// failedLately reports whether id was declared failed here less than
// FailAfter ago and not heard from since.
func (n *Node) failedLately(id wire.NodeID) bool {
	t, ok := n.failed[id]
	return ok && n.now-t < n.cfg.FailAfter
}

func (n *Node) probed(yield func(wire.NodeID)) {
	t := n.probeTargets[:0]
	add := func(id wire.NodeID) {
		for _, x := range t {
			if x == id {
				return
			}
		}
		t = append(t, id)
	}
	if n.hasPred && n.pred.ID != n.cfg.ID {
		add(n.pred.ID)
	}
	for _, p := range n.succs {
		add(p.ID)
	}
	for _, l := range n.links {
		if l.has {
			add(l.peer.ID)
		}
	}
	n.probeTargets = t
	for _, id := range t {
		yield(id)
	}
}

// probeRefresh: a peer heard from between probes is still probed every
// probeRefresh probe periods.
const probeRefresh = 3

func (n *Node) sendProbes() {
	n.probeSeq++
	m := wire.RingProbe{Seq: n.probeSeq, Key: n.self.Key, Load: milli(n.Load(n.now))}
	n.probed(func(id wire.NodeID) {
		ps := n.peers[id]
		if ps == nil {
			ps = &peerState{key: n.keyOf(id), lastHeard: n.now}
			n.peers[id] = ps
		}
		// A peer heard from within the last period is alive: it is not
		// probed (its stabilisation, its own probe or its pong said so),
		// except every probeRefresh periods, so that its key and load
		// stay known.
		if !ps.waiting && n.now-ps.lastHeard < n.cfg.Probe && n.now-ps.lastPing < probeRefresh*n.cfg.Probe {
			n.stats.ProbesSpared++
			return
		}
		// The farther successors and the long links are probed every
		// LinkProbe: the successor's stabilisation replies list its own
		// successors, which it probes itself.
		if !ps.waiting && n.now-ps.lastPing < n.cfg.LinkProbe && !n.neighbour(id) {
			n.stats.ProbesSpared++
			return
		}
		if !ps.waiting {
			ps.waiting, ps.waitSince = true, n.now
		}
		ps.lastPing = n.now
		n.commitLater(id, wire.ClassMaintenance, wire.AppendRingProbe(n.out.Buf(), wire.TypeRingPing, &m))
	})
	for id, t := range n.failed {
		if n.now-t >= n.cfg.FailAfter {
			delete(n.failed, id)
		}
	}
	// Forget peers no longer referenced and long silent.
	for id, ps := range n.peers {
		if n.now-ps.lastHeard > 4*n.cfg.FailAfter && !n.references(id) {
			delete(n.peers, id)
		}
	}
}

// commitLater commits a maintenance frame that may wait up to Config.Defer
// for another packet to node to to ride in (wire.Outbox.CommitLater).
func (n *Node) commitLater(to wire.NodeID, c wire.Class, b []byte) {
	if n.cfg.Defer > 0 {
		n.out.CommitLater(to, c, b, n.now+n.cfg.Defer)
	} else {
		n.out.Commit(to, c, b)
	}
}

// neighbour reports whether id is the predecessor or the successor.
func (n *Node) neighbour(id wire.NodeID) bool {
	return (n.hasPred && n.pred.ID == id) || (len(n.succs) > 0 && n.succs[0].ID == id)
}

func (n *Node) references(id wire.NodeID) bool {
	if (n.hasPred && n.pred.ID == id) || n.succIndex(id) >= 0 {
		return true
	}
	for _, l := range n.links {
		if l.has && l.peer.ID == id {
			return true
		}
	}
	return false
}

func (n *Node) detectFailures() {
	var failed [8]wire.NodeID
	f := failed[:0]
	var m wire.RingProbe
	built := false
	n.probed(func(id wire.NodeID) {
		ps := n.peers[id]
		if ps == nil || !ps.waiting {
			return
		}
		// Failed: probed for longer than FailAfter without a word back.
		if n.now-ps.waitSince > n.cfg.FailAfter {
			f = append(f, id)
			return
		}
		// A probe unanswered for half a period is sent again, so a peer
		// is declared failed only after about twice FailAfter/Probe lost
		// round trips, not after a few unlucky losses.
		if n.now-ps.lastPing >= n.cfg.Probe/2 {
			if !built {
				m, built = wire.RingProbe{Seq: n.probeSeq, Key: n.self.Key, Load: milli(n.Load(n.now))}, true
			}
			ps.lastPing = n.now
			n.out.Commit(id, wire.ClassMaintenance, wire.AppendRingProbe(n.out.Buf(), wire.TypeRingPing, &m))
		}
	})
	for _, id := range f {
		n.dropPeer(id, true)
	}
}

func (n *Node) keyOf(id wire.NodeID) uint64 {
	for _, p := range n.knownPeers() {
		if p.ID == id {
			return p.Key
		}
	}
	return 0
}

func (n *Node) notePeerLoad(id wire.NodeID, key, load uint64) {
	ps := n.peers[id]
	if ps == nil {
		if len(n.peers) > 4*(n.cfg.Succs+n.cfg.Links+8) {
			return
		}
		ps = &peerState{key: key, lastHeard: n.now}
		n.peers[id] = ps
	}
	ps.load, ps.loadAt, ps.hasLoad = float64(load)/1000, n.now, true
	n.noteContact(Peer{ID: id, Key: key})
}

func (n *Node) onPong(from wire.NodeID) {
	m := &n.probe
	ps := n.peers[from]
	if ps == nil {
		n.stats.Unexpected++
		return
	}
	if i := n.succIndex(from); ps.key == m.Key && (n.hasPred && n.pred.ID == from && n.pred.Key != m.Key ||
		i >= 0 && n.succs[i].Key != m.Key) {
		// The peer table already knows the new key (from another message)
		// but the pointers still hold the old one: a node that crashed and
		// came back under the same ID at another key.
		n.forget(from)
		if n.hasPred && n.pred.ID == from {
			n.hasPred = false
		}
		n.fixAlone(true)
		return
	}
	if ps.key != m.Key {
		// The peer moved (load-balancing rejoin): it is no longer where
		// this node's pointers say.
		moved := false
		if n.hasPred && n.pred.ID == from {
			n.hasPred = false
			moved = true
		}
		if n.succIndex(from) >= 0 {
			moved = true
		}
		if moved {
			n.forget(from)
			n.fixAlone(true)
			return
		}
		for i := range n.links {
			if n.links[i].has && n.links[i].peer.ID == from {
				n.links[i].peer.Key = m.Key
			}
		}
		n.cache.dropOwner(from)
		ps.key = m.Key
	}
	ps.load, ps.loadAt, ps.hasLoad = float64(m.Load)/1000, n.now, true
	p := Peer{ID: from, Key: m.Key}
	n.considerSucc(p)
	if n.contactWait && from == n.contactID {
		// A contact answered: ask the ring as it sees it who owns the key
		// after this node's. On a consistent ring that is the successor
		// already; after a split into two loops it is a node of the other
		// loop, which onOwner then takes as successor.
		n.contactWait = false
		l := wire.RingRoute{Kind: wire.RouteLookup, Origin: n.cfg.ID, Key: n.self.Key + 1, Tag: succTag}
		n.forward(p, &l, false, false)
	}
}
