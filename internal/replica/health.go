package replica

import (
	"cmp"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Failure detection, as the hybrid paper's host/replica heartbeats with
// SWIM's indirect probes added so that one lossy link is not a death.
//
// A node watches the nodes it depends on: the backups of its primaries,
// the primaries it backs up, the targets of its migrations in flight, and
// those its locator names (Watch). It sends each a heartbeat every
// Heartbeat (riding in another packet to it when there is one) and takes
// any packet from a node as a sign of life. A watched node silent for
// SuspectAfter is suspected: this node asks Witnesses other nodes to probe
// it, and pings it itself. A witness that has heard from the suspect
// lately says so at once; otherwise it pings the suspect and answers
// "alive" if the suspect answers within ProbeTimeout, "dead" if not (or
// "dead" at once if it watches the suspect and has not heard from it for
// SuspectAfter and a probe's wait already: a shorter silence it shares
// with the asker is no second opinion, since a stalled node falls silent
// to every peer at once). One
// "dead" declares the suspect dead here (with no witness in the cluster,
// the silence alone does); an "alive", or any packet from the suspect,
// clears the suspicion. A heartbeat with a higher incarnation than known
// declares the earlier incarnation dead at once (a restart). A node
// declared dead that is heard from again is alive again: what it held
// was failed over meanwhile, and it steps down from it when it learns the
// higher epochs.

// hbFull is how often a node heartbeats a watched node even when other
// traffic to it proves it alive.
const hbFull = time.Second

type peer struct {
	hbFull    time.Duration // the last heartbeat actually sent
	sentAt    time.Duration // the last frame anything went to it (updates, backups, heartbeats)
	seen      time.Duration // the latest a witness said it heard from it
	grace     time.Duration // the current watch began
	answer    bool          // it sent a heartbeat: send one back if nothing else goes
	voters    []wire.NodeID // the nodes that found it dead in the current probe
	probeTx   time.Duration // when the probes were last sent
	heard     time.Duration
	watched   time.Duration // watch() was last called
	hbSent    time.Duration
	inc       uint16
	incKnown  bool
	uptime    time.Duration
	upAt      time.Duration
	probing   bool
	probeAt   time.Duration
	dead      bool
	deadSince time.Duration
}

type ask struct {
	suspect wire.NodeID
	asker   wire.NodeID
	until   time.Duration
}

type health struct {
	peers  map[wire.NodeID]*peer
	asks   []ask
	dead   []wire.NodeID // sorted
	loc    []wire.NodeID // the locator's watch list
	probeq []probeMsg
	hbq    []wire.NodeID
	deaths []wire.NodeID // declared since the last flush
	now    time.Duration
}

type probeMsg struct {
	to    wire.NodeID
	reply bool
	l     wire.Liveness
}

func (h *health) init() { h.peers = map[wire.NodeID]*peer{} }

func (h *health) get(n wire.NodeID) *peer {
	p := h.peers[n]
	if p == nil {
		p = &peer{}
		h.peers[n] = p
	}
	return p
}

// watch starts (or keeps) watching node n.
func (h *health) watch(n wire.NodeID, now time.Duration) {
	p := h.get(n)
	if p.watched == 0 || now-p.watched > 2*time.Second {
		p.grace = now // silence is counted from the start of the watch
	}
	p.watched = now
}

func (h *health) isDead(n wire.NodeID) bool {
	_, ok := slices.BinarySearch(h.dead, n)
	return ok
}

func (h *health) suspected(n wire.NodeID) bool {
	p := h.peers[n]
	return p != nil && (p.probing || p.dead)
}

func (h *health) uptime(n wire.NodeID) (time.Duration, bool) {
	p := h.peers[n]
	if p == nil || p.upAt == 0 && p.uptime == 0 {
		return 0, false
	}
	return p.uptime + (h.now - p.upAt), true
}

// heard records a packet from n.
func (s *Store) heard(now time.Duration, n wire.NodeID) {
	h := &s.au.health
	p := h.peers[n]
	if p == nil {
		return
	}
	p.heard = now
	p.probing = false
	if p.dead {
		p.dead = false
		if i, ok := slices.BinarySearch(h.dead, n); ok {
			h.dead = slices.Delete(h.dead, i, i+1)
		}
	}
}

// Heard tells the store that a packet from node n arrived at now (the
// node calls it for every packet, before its frames).
func (s *Store) Heard(now time.Duration, n wire.NodeID) {
	if len(s.au.health.peers) != 0 {
		s.heard(now, n)
	}
}

// Dead appends the nodes declared dead and not heard from since, in
// increasing order.
func (s *Store) Dead(dst []wire.NodeID) []wire.NodeID { return append(dst, s.au.health.dead...) }

// SetWatch sets the nodes the locator depends on (see health.go): they
// are watched like backups. This node, when listed (a rendezvous depends
// on itself), is not: a node never suspects itself.
func (s *Store) SetWatch(nodes []wire.NodeID) {
	loc := s.au.health.loc[:0]
	for _, n := range nodes {
		if n != s.cfg.Self {
			loc = append(loc, n)
		}
	}
	s.au.health.loc = loc
}

// DeclareDead declares node n dead now, as if the failure detector had
// (an operator's or a driver's knowledge: a node that left for good).
func (s *Store) DeclareDead(now time.Duration, n wire.NodeID) {
	if n == s.cfg.Self {
		return
	}
	s.declare(now, n)
}

func (s *Store) declare(now time.Duration, n wire.NodeID) {
	if n == s.cfg.Self {
		return // a node never declares itself dead
	}
	h := &s.au.health
	p := h.get(n)
	if p.dead {
		return
	}
	p.dead, p.deadSince, p.probing = true, now, false
	i, _ := slices.BinarySearch(h.dead, n)
	h.dead = slices.Insert(h.dead, i, n)
	s.stats.Deaths++
	s.emit(Event{Kind: EvDead, At: now, Node: n})
	s.failover(now, n)
}

// failover acts on the death of node n: promote the backups of its
// primaries (and the migrations to it not acknowledged), and let the
// primaries it backed up choose another backup.
func (s *Store) failover(now time.Duration, n wire.NodeID) {
	var ids []world.ObjectID
	for id, b := range s.au.bk {
		if b.primary == n {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	// The last time anyone is known to have heard from n: a copy not
	// refreshed for long before that was replaced (n was alive, and
	// would have kept a backup it still had up to date).
	pn := s.au.health.get(n)
	lastHeard := max(pn.heard, pn.seen)
	for _, id := range ids {
		b := s.au.bk[id]
		// A copy the primary stopped refreshing long before it died was
		// released (the release lost): it must not take over.
		if b.mig == nil && lastHeard-b.heard > releasedAfter && !b.refused {
			delete(s.au.bk, id)
			continue
		}
		if b.fence != 0 && b.mig == nil && !s.au.health.isDead(b.fence) && !(b.granted && lastHeard-b.heard <= grantFresh) {
			s.startClaim(now, id, b, n)
			continue
		}
		s.promote(now, id, b, n)
	}
	s.fenceDead(now, n)
	for _, id := range sortedIDs(s.au.rels) {
		if r := s.au.rels[id]; r.fence && r.to == n {
			delete(s.au.rels, id) // found dead by a majority: it cannot take the object over
		}
	}
	for _, e := range s.prims {
		if e.auth != nil && e.auth.hasBackup && e.auth.backup == n {
			e.auth.hasBackup = false
			// Should it come back, it must drop its copy.
			s.au.rels[e.id] = release{to: n, epoch: e.epoch, until: now + 30*time.Second}
		}
	}
	for _, e := range s.ents {
		if !e.primary && e.from == n {
			e.ackDue = false
		}
	}
}

// heartbeatIn handles a heartbeat from n.
func (s *Store) heartbeatIn(now time.Duration, n wire.NodeID, m wire.Heartbeat) {
	p := s.au.health.get(n)
	if p.incKnown && m.Inc > p.inc {
		// A restart: the earlier incarnation is dead, whatever it held
		// is gone.
		if !p.dead {
			s.declare(now, n)
		}
		s.heard(now, n)
	}
	p.inc, p.incKnown = m.Inc, true
	// Heartbeats go both ways (see flushHealth), but not a just-started
	// node's announcement to every peer (up for under a second), or
	// every pair of nodes would go on exchanging them.
	p.answer = m.Uptime >= time.Second
	p.uptime, p.upAt = m.Uptime, now
}

// probeIn handles a probe (Probe) or a probe reply from node from.
func (s *Store) probeIn(now time.Duration, from wire.NodeID, t wire.Type, l wire.Liveness) {
	h := &s.au.health
	if t == wire.TypeProbe {
		if l.Node == s.cfg.Self {
			h.probeq = append(h.probeq, probeMsg{to: from, reply: true, l: wire.Liveness{Node: s.cfg.Self, Alive: true}})
			return
		}
		if p := h.peers[l.Node]; p != nil && !p.dead && now-p.heard < s.cfg.SuspectAfter/2 {
			h.probeq = append(h.probeq, probeMsg{to: from, reply: true, l: wire.Liveness{Node: l.Node, Alive: true, Ago: s.ago(now, p)}})
			return
		} else if p != nil && (p.dead || now-p.watched <= s.cfg.Heartbeat && now-p.heard >= s.cfg.SuspectAfter+s.probeTimeout(l.Node)) {
			// This node watches the suspect too and has not heard from it
			// for as long as a suspicion and a probe take (heartbeats,
			// every Heartbeat, would have come): a second opinion at
			// once. A shorter silence is no second opinion: a node that
			// stalls (starved of CPU, paused) goes silent to every peer
			// at once, so every watcher's silence crosses SuspectAfter
			// together, and answering on it alone would declare a node
			// that stalled for just over SuspectAfter dead without its
			// being asked. The witness pings it instead (below).
			h.probeq = append(h.probeq, probeMsg{to: from, reply: true, l: wire.Liveness{Node: l.Node, Ago: s.ago(now, p)}})
			return
		}
		pinged := false
		for _, a := range h.asks {
			pinged = pinged || a.suspect == l.Node
		}
		h.asks = append(h.asks, ask{suspect: l.Node, asker: from, until: now + s.probeTimeout(l.Node)})
		if !pinged {
			h.probeq = append(h.probeq, probeMsg{to: l.Node, l: wire.Liveness{Node: l.Node}})
		}
		return
	}
	// A reply.
	if from == l.Node && l.Alive {
		s.heard(now, from)
		s.answerAsks(l.Node, true)
		return
	}
	p := h.peers[l.Node]
	if p == nil || !p.probing {
		return
	}
	if l.Alive {
		// A witness heard from it lately: the silence counts from now.
		// (Not p.heard: this node has not heard from it itself, and
		// must not tell other nodes' probes it has.)
		p.probing, p.grace = false, now
		return
	}
	if l.Ago > 0 {
		p.seen = max(p.seen, now-l.Ago)
	}
	if !slices.Contains(p.voters, from) {
		p.voters = append(p.voters, from)
	}
	if len(p.voters) >= s.quorum() {
		s.declare(now, l.Node)
	}
}

// ago is how long ago this node heard from peer p (0: never).
func (s *Store) ago(now time.Duration, p *peer) time.Duration {
	if p == nil || p.heard == 0 {
		return 0
	}
	return max(now-p.heard, time.Millisecond)
}

// answerAsks answers the witnesses' askers about suspect.
func (s *Store) answerAsks(suspect wire.NodeID, alive bool) {
	h := &s.au.health
	kept := h.asks[:0]
	for _, a := range h.asks {
		if a.suspect == suspect {
			h.probeq = append(h.probeq, probeMsg{to: a.asker, reply: true, l: wire.Liveness{Node: suspect, Alive: alive, Ago: s.ago(h.now, h.peers[suspect])}})
			continue
		}
		kept = append(kept, a)
	}
	h.asks = kept
}

// flushHealth sends heartbeats, starts probes of silent nodes, and
// answers the witnesses' askers whose time ran out.
// announceFor is how long a node that just started sends every peer a
// heartbeat each period.
const announceFor = 500 * time.Millisecond

func (s *Store) flushHealth(now time.Duration) {
	h := &s.au.health
	h.now = now
	if !s.au.started {
		s.au.started, s.au.startAt = true, now
	}
	for _, n := range h.loc {
		h.watch(n, now)
	}
	// Asks that timed out: the suspect did not answer.
	for len(h.asks) > 0 {
		i := slices.IndexFunc(h.asks, func(a ask) bool { return now >= a.until })
		if i < 0 {
			break
		}
		s.answerAsks(h.asks[i].suspect, false)
	}
	nodes := make([]wire.NodeID, 0, len(h.peers))
	for n, p := range h.peers {
		if p.watched != 0 && now-p.watched <= 2*time.Second {
			nodes = append(nodes, n)
		} else if p.answer && now-p.hbSent >= s.cfg.Heartbeat {
			// A node that watches this one hears from it every period
			// (a rendezvous, say, that sends nothing otherwise).
			p.hbSent = now
			h.hbq = append(h.hbq, n)
		}
		p.answer = false
	}
	// A node that just started under an incarnation (Config.Inc) tells
	// every peer, a few times (a heartbeat may be lost): a peer that knew
	// an earlier incarnation then declares that one dead before it deals
	// with this process as if it were the old one (chose it as a backup,
	// say, whose copy the late news of the restart would throw away).
	if s.cfg.Inc != 0 && s.cfg.Peers != nil && now-s.au.startAt < announceFor {
		for _, n := range s.cfg.Peers() {
			if p := h.get(n); n != s.cfg.Self && now-p.hbSent >= s.cfg.Heartbeat {
				p.hbSent, p.hbFull = now, 0
				h.hbq = append(h.hbq, n)
			}
		}
	}
	slices.Sort(nodes)
	slices.Sort(h.hbq)
	h.hbq = slices.Compact(h.hbq)
	for _, n := range nodes {
		p := h.peers[n]
		if p.dead {
			continue
		}
		if now-p.hbSent >= s.cfg.Heartbeat {
			p.hbSent = now
			h.hbq = append(h.hbq, n)
		}
		if now-max(p.heard, p.grace) < s.cfg.SuspectAfter {
			continue
		}
		if p.probing && now-p.probeAt < 4*s.cfg.ProbeTimeout+maxTrip {
			// Probing: ask again those who have not answered (a probe or
			// its answer may be lost).
			if now-p.probeTx >= s.cfg.ProbeTimeout/2+maxTrip/3 {
				p.probeTx = now
				for _, w := range s.witnesses(n) {
					if !slices.Contains(p.voters, w) {
						h.probeq = append(h.probeq, probeMsg{to: w, l: wire.Liveness{Node: n}})
					}
				}
				h.probeq = append(h.probeq, probeMsg{to: n, l: wire.Liveness{Node: n}})
			}
			continue
		}
		ws := s.witnesses(n)
		if s.quorum() == 0 {
			s.declare(now, n)
			continue
		}
		if len(ws) < s.quorum() {
			continue // too few nodes left to agree: nothing is declared
		}
		p.probing, p.probeAt, p.probeTx, p.voters = true, now, now, p.voters[:0]
		for _, w := range ws {
			h.probeq = append(h.probeq, probeMsg{to: w, l: wire.Liveness{Node: n}})
		}
		h.probeq = append(h.probeq, probeMsg{to: n, l: wire.Liveness{Node: n}})
	}
}

// probeTimeout is how long a witness waits for suspect n's answer:
// ProbeTimeout, or less when the delay to n is known (three one-way
// delays and a frame: the answer of a live node, late by a frame).
func (s *Store) probeTimeout(n wire.NodeID) time.Duration {
	if s.cfg.Delay == nil {
		return s.cfg.ProbeTimeout
	}
	return min(s.cfg.ProbeTimeout, 3*s.cfg.Delay(s.cfg.Self, n)+100*time.Millisecond)
}

// maxTrip bounds a round trip through a witness (2 × 300 ms without
// delay estimates).
const maxTrip = 600 * time.Millisecond

// quorum is how many other nodes must find a suspect dead: Witnesses,
// or, by default, enough for a majority of the cluster with this node
// (none in a cluster of one or two, where the silence alone decides).
func (s *Store) quorum() int {
	if s.cfg.Witnesses > 0 {
		return s.cfg.Witnesses
	}
	if s.cfg.Peers == nil {
		return 0
	}
	n := 1 // this node
	for _, p := range s.cfg.Peers() {
		if p != s.cfg.Self {
			n++
		}
	}
	if n <= 2 {
		return 0
	}
	return n / 2 // with this node, n/2 + 1: a majority
}

// witnesses returns the peers asked to probe suspect: every other peer,
// the nearest to this node first (by Config.Delay). Those declared dead
// are asked too: one may be back (restarted) without having sent this
// node anything yet, and its answer shows it alive.
func (s *Store) witnesses(suspect wire.NodeID) []wire.NodeID {
	if s.cfg.Peers == nil {
		return nil
	}
	var ws []wire.NodeID
	for _, p := range s.cfg.Peers() {
		if p != s.cfg.Self && p != suspect {
			ws = append(ws, p)
		}
	}
	slices.Sort(ws)
	if s.cfg.Delay != nil {
		slices.SortStableFunc(ws, func(a, b wire.NodeID) int {
			return cmp.Compare(s.cfg.Delay(s.cfg.Self, a)+s.cfg.Delay(a, suspect), s.cfg.Delay(s.cfg.Self, b)+s.cfg.Delay(b, suspect))
		})
	}
	return ws
}

// encodeHealth commits heartbeats and probes.
func (s *Store) encodeHealth(o *wire.Outbox) {
	h := &s.au.health
	up := h.now - s.au.startAt
	for _, n := range s.au.sentTo {
		if p := h.peers[n]; p != nil {
			p.sentAt = h.now
		}
	}
	for _, n := range h.hbq {
		// A node sent an update or a backup state lately (two heartbeat
		// periods: the silence that raises suspicion is four) heard from
		// this node already; it gets a heartbeat at least every second
		// still, for the incarnation and uptime it carries.
		p := h.peers[n]
		if p != nil && h.now-p.sentAt < 2*s.cfg.Heartbeat && h.now-p.hbFull < hbFull {
			continue
		}
		if p != nil {
			p.hbFull, p.sentAt = h.now, h.now
		}
		o.CommitLater(n, wire.ClassControl, wire.AppendHeartbeat(o.Buf(), &wire.Heartbeat{Inc: s.cfg.Inc, Uptime: up}), h.now)
	}
	h.hbq = h.hbq[:0]
	s.au.sentTo = s.au.sentTo[:0]
	slices.SortStableFunc(h.probeq, func(a, b probeMsg) int {
		if c := cmp.Compare(a.to, b.to); c != 0 {
			return c
		}
		if a.reply != b.reply {
			if a.reply {
				return 1
			}
			return -1
		}
		return 0
	})
	for i := 0; i < len(h.probeq); {
		to, reply := h.probeq[i].to, h.probeq[i].reply
		var m wire.Probe
		for ; i < len(h.probeq) && h.probeq[i].to == to && h.probeq[i].reply == reply; i++ {
			m.Entries = append(m.Entries, h.probeq[i].l)
		}
		t := wire.TypeProbe
		if reply {
			t = wire.TypeProbeReply
		}
		o.Commit(to, wire.ClassControl, wire.AppendProbe(o.Buf(), t, &m))
	}
	h.probeq = h.probeq[:0]
}
