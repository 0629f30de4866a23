package ring

import (
	"fmt"
	"math"
	"time"

	"github.com/overworld/overworld/wire"
)

// Route sends payload, of traffic class c, to the owner of key at time now; the owner
// gets an EventDelivered with the hop count (0 when this node owns key:
// the event is then this node's own). The payload is copied.
func (n *Node) Route(now time.Duration, key uint64, c wire.Class, payload []byte) error {
	if err := n.checkRoute(c, payload); err != nil {
		return err
	}
	n.advance(now)
	n.stats.Routed++
	m := wire.RingRoute{Kind: wire.RouteData, Origin: n.cfg.ID, Key: key, Class: c, Data: payload}
	n.onRoute(n.cfg.ID, &m)
	return nil
}

// RouteRange sends payload, of traffic class c, to every node whose range
// intersects the clockwise key range [lo, hi]: it is routed to the owner of
// lo, which forwards it along its successors (fanned out over its
// successor list) until the owner of hi. Each
// gets an EventDelivered whose Range is [lo, hi].
func (n *Node) RouteRange(now time.Duration, lo, hi uint64, c wire.Class, payload []byte) error {
	if err := n.checkRoute(c, payload); err != nil {
		return err
	}
	n.advance(now)
	n.stats.Routed++
	m := wire.RingRoute{Kind: wire.RouteRange, Origin: n.cfg.ID, Key: lo, Hi: hi, Class: c, Data: payload}
	n.onRoute(n.cfg.ID, &m)
	return nil
}

func (n *Node) checkRoute(c wire.Class, payload []byte) error {
	if n.st != stateMember {
		return ErrNotMember
	}
	if !c.Valid() {
		return fmt.Errorf("%w: traffic class %d", ErrPayload, c)
	}
	if len(payload) > n.cfg.MaxPayload {
		return fmt.Errorf("%w: %d bytes (at most %d)", ErrPayload, len(payload), n.cfg.MaxPayload)
	}
	return nil
}

// onRoute handles a routed message here (from == this node when it
// originates here). m.Hops counts the hops taken to reach this node.
func (n *Node) onRoute(from wire.NodeID, m *wire.RingRoute) {
	if m.Kind == wire.RouteJoin && m.Tag == 1 && from != n.cfg.ID {
		// The joiner asks this node to pick the key in its own range.
		k, ok := n.splitKey()
		if !ok || !n.hasPred {
			r := wire.RingJoinReply{}
			n.out.Commit(m.Origin, wire.ClassMaintenance, wire.AppendRingJoinReply(n.out.Buf(), &r))
			return
		}
		n.accept(m.Origin, k)
		return
	}
	if m.Walk {
		if m.Kind != wire.RouteRange {
			n.stats.Unexpected++
			return
		}
		n.onWalk(from, m)
		return
	}
	owned := n.Owns(m.Key)
	if !owned && m.Final && m.Hint == wire.HintOf(n.self.Key) && !n.hasPred {
		owned = true // the predecessor failed: its range is this node's until a new one stabilises
	}
	if owned {
		switch m.Kind {
		case wire.RouteData:
			n.deliver(m, false)
			n.ackRoute(m)
		case wire.RouteRange:
			n.deliver(m, false)
			n.ackRoute(m)
			n.walk(m)
		case wire.RouteJoin:
			n.accept(m.Origin, m.Key)
		case wire.RouteLookup:
			n.answerLookup(m)
		}
		return
	}
	if int(m.Hops) >= n.cfg.MaxHops {
		n.stats.Dropped++
		return
	}
	if m.Final && m.Hint == wire.HintOf(n.self.Key) && n.hasPred && n.pred.ID != n.cfg.ID && after(m.Key-1, n.pred.Key, n.self.Key) {
		// The sender thought this node owned the key, but a node joined
		// in between: the key is behind, in a predecessor's range.
		n.forward(n.pred, m, true, m.Cached)
		return
	}
	n.greedy(m)
}

// greedy forwards m one hop toward the owner of m.Key: to the successor
// that owns it, else a cached owner, else the known node closest before the
// key (successors, long links, cached owners).
func (n *Node) greedy(m *wire.RingRoute) {
	k := m.Key
	prev := n.self.Key
	for _, s := range n.succs {
		if after(prev, k, s.Key) {
			n.forward(s, m, true, m.Cached)
			return
		}
		prev = s.Key
	}
	if !m.Cached && n.cacheCap() > 0 {
		if e, ok := n.cache.find(k, n.now); ok && e.owner.ID != n.cfg.ID {
			n.stats.CacheHits++
			if e.until-n.now < n.cfg.CacheTTL/2 {
				// Past half its life: ask the owner to confirm the entry,
				// so a route in steady use stays cached.
				m.Ack = true
			}
			n.forward(e.owner, m, true, true)
			return
		}
	}
	best, ok := Peer{}, false
	consider := func(p Peer) {
		if p.ID == n.cfg.ID || !strictly(n.self.Key, p.Key, k) {
			return
		}
		if !ok || k-p.Key < k-best.Key {
			best, ok = p, true
		}
	}
	for _, s := range n.succs {
		consider(s)
	}
	for _, l := range n.links {
		if l.has {
			consider(l.peer)
		}
	}
	for _, e := range n.cache.e {
		consider(e.owner)
	}
	if ok {
		n.forward(best, m, false, m.Cached)
		return
	}
	if len(n.succs) > 0 {
		n.forward(n.succs[0], m, true, m.Cached)
		return
	}
	n.stats.Dropped++
}

func (n *Node) forward(to Peer, m *wire.RingRoute, final, cached bool) {
	if to.ID == n.cfg.ID {
		n.stats.Dropped++
		return
	}
	f := *m
	f.Hops++
	f.Final, f.Cached = final, cached
	f.Hint = 0
	if final {
		f.Hint = wire.HintOf(to.Key)
	}
	c := f.Class
	if f.Kind == wire.RouteJoin || f.Kind == wire.RouteLookup {
		c = wire.ClassMaintenance
	}
	n.stats.Forwarded++
	n.out.Commit(to.ID, c, wire.AppendRingRoute(n.out.Buf(), &f))
}

func (n *Node) deliver(m *wire.RingRoute, walk bool) {
	n.stats.Delivered++
	s := len(n.arena)
	n.arena = append(n.arena, m.Data...)
	rg := Range{m.Key, m.Key}
	if m.Kind == wire.RouteRange {
		rg.Hi = m.Hi
	}
	n.emit(Event{Kind: EventDelivered, Range: rg, Peer: Peer{ID: m.Origin}, Class: m.Class,
		Data: n.arena[s:len(n.arena):len(n.arena)], Hops: int(m.Hops), Walk: walk})
}

// onWalk handles a range message walking the successors. Hint is the key
// of the node the walk came from (its top bits, wire.HintOf, as the keys
// compared with it): when this node's predecessor lies
// between the two (a node joined there and the sender did not know it
// yet), the walk skipped it, and a copy goes back to it (Back), which
// goes on back while its own predecessor is skipped too.
func (n *Node) onWalk(from wire.NodeID, m *wire.RingRoute) {
	w := m.Hint
	rg, known := n.Range()
	if !known || overlap(rg, Range{m.Key, m.Hi}) {
		n.deliver(m, true)
	}
	if n.hasPred && n.pred.ID != n.cfg.ID && (m.Back || n.pred.ID != from) && w != wire.HintOf(n.self.Key) && strictly(w, wire.HintOf(n.pred.Key), wire.HintOf(n.self.Key)) &&
		int(m.Hops) < n.cfg.MaxHops+n.cfg.MaxWalk {
		b := *m
		b.Back = true
		n.sendWalk(n.pred, &b, w)
	}
	if !m.Back && !m.Leaf {
		n.walk(m)
	}
}

// sendWalk sends a walking range message to p; Hint carries w, the key the
// walk came from.
func (n *Node) sendWalk(p Peer, m *wire.RingRoute, w uint64) {
	f := *m
	f.Hops++
	f.Walk, f.Final, f.Hint = true, true, wire.HintOf(w)
	n.stats.Forwarded++
	n.out.Commit(p.ID, f.Class, wire.AppendRingRoute(n.out.Buf(), &f))
}

// walk forwards a range message from this node (which holds part of the
// range) to the successors that hold the rest: at once to every successor
// in its list whose range meets it (a fan-out: a walk over k owners takes
// about k/r sequential hops instead of k), each a leaf that delivers and
// stops, but the last, which walks on. Each copy's Hint is its expected
// predecessor's key, so that a node that joined in between is still found
// (onWalk). Nothing is sent once this node's range reaches the range's end.
func (n *Node) walk(m *wire.RingRoute) {
	lo, hi := m.Key, m.Hi
	if int(m.Hops) >= n.cfg.MaxHops+n.cfg.MaxWalk {
		if hi-lo > n.self.Key-lo && len(n.succs) > 0 {
			n.stats.Dropped++
		}
		return
	}
	prev := n.self.Key
	for i, s := range n.succs {
		if hi-lo <= prev-lo {
			return // prev owns hi
		}
		if s.Key-lo <= prev-lo {
			return // the successor is past the start again: the whole ring was covered
		}
		f := *m
		// The last successor known, or the owner of hi, walks on (the
		// owner of hi then stops at once).
		f.Leaf = i < len(n.succs)-1 && hi-lo > s.Key-lo
		n.sendWalk(s, &f, prev)
		prev = s.Key
	}
}

// ackRoute tells the origin of a message that took more than one hop who
// owns its key, so the origin caches the route.
func (n *Node) ackRoute(m *wire.RingRoute) {
	if m.Origin == n.cfg.ID || m.Hops < 2 && !m.Ack || n.cfg.CacheSize < 0 || !n.hasPred {
		return
	}
	o := wire.RingOwner{Owner: n.self, Lo: n.pred.Key, Hops: m.Hops}
	// The route cache is part of routing: its confirmations are accounted
	// with the traffic they route.
	n.out.Commit(m.Origin, m.Class, wire.AppendRingOwner(n.out.Buf(), &o))
}

func (n *Node) answerLookup(m *wire.RingRoute) {
	if !n.hasPred {
		return // the range is unknown until a predecessor stabilises; the origin redraws later
	}
	o := wire.RingOwner{Tag: m.Tag, Key: m.Key, Owner: n.self, Lo: n.pred.Key, Hops: m.Hops}
	if m.Origin == n.cfg.ID {
		n.owner = o
		n.onOwner(n.cfg.ID)
		return
	}
	n.out.Commit(m.Origin, wire.ClassMaintenance, wire.AppendRingOwner(n.out.Buf(), &o))
}

func (n *Node) onOwner(from wire.NodeID) {
	o := &n.owner
	rg := Range{o.Lo + 1, o.Owner.Key}
	if o.Tag != 0 && !rg.Contains(o.Key) || o.Owner.ID == n.cfg.ID && from != n.cfg.ID {
		n.stats.Unexpected++
		return
	}
	if o.Tag == 0 {
		if n.cacheCap() > 0 && o.Owner.ID != n.cfg.ID {
			n.cache.put(rg, o.Owner, n.cacheCap(), n.now+n.cfg.CacheTTL)
		}
		return
	}
	if o.Tag == sampleTag {
		n.dens.add(o.Key, o.Owner.Key-o.Lo)
		return
	}
	if o.Tag == succTag {
		// The answer to a successor repair: the owner of the key after
		// this node's is its successor.
		if o.Owner.ID != n.cfg.ID && o.Key == n.self.Key+1 &&
			(len(n.succs) == 0 || strictly(n.self.Key, o.Owner.Key, n.succs[0].Key)) {
			cands := append(n.scratchPeers[:0], o.Owner)
			cands = append(cands, n.succs...)
			n.scratchPeers = cands
			n.succs = n.succs[:0]
			n.setSuccs(cands)
			n.nextStab = n.now
		}
		return
	}
	i := int(o.Tag) - 1
	if i >= len(n.links) || !n.links[i].pending {
		n.stats.Unexpected++
		return
	}
	n.links[i].pending = false
	n.dens.add(o.Key, o.Owner.Key-o.Lo)
	if o.Owner.ID == n.cfg.ID {
		return // the draw landed in this node's own range: no link this round
	}
	n.links[i].peer, n.links[i].has = o.Owner, true
	n.touch(o.Owner)
}

// estimateN estimates the ring's size from the successor list's span.
func (n *Node) estimateN() float64 {
	if len(n.succs) == 0 {
		return 1
	}
	span := n.succs[len(n.succs)-1].Key - n.self.Key
	if span == 0 {
		return 1
	}
	return float64(len(n.succs)) * math.Ldexp(1, 64) / float64(span)
}

// drawLink looks up a new long-distance link for slot i, drawn from the
// harmonic distribution Mercury uses: about r = n^u nodes away, u uniform
// in [0, 1), placed by the density histogram (density.go); until it has
// enough samples, at key distance d with d/2^64 = n^(u-1), n estimated from
// the successor list's span.
func (n *Node) drawLink(i int) {
	if n.st != stateMember || n.alone() {
		return
	}
	u := n.cfg.Rand.Float64()
	dist, ok := n.rankDistance(func(est float64) float64 { return math.Pow(est, u) })
	if !ok {
		est := max(n.estimateN(), 2)
		x := math.Pow(est, u-1)
		d := math.Ldexp(x, 64)
		if d >= math.Ldexp(1, 64) {
			dist = math.MaxUint64
		} else {
			dist = uint64(d)
		}
	}
	n.links[i].pending = true
	m := wire.RingRoute{Kind: wire.RouteLookup, Origin: n.cfg.ID, Key: n.self.Key + dist, Tag: uint32(i + 1)}
	n.onRoute(n.cfg.ID, &m)
}

func (n *Node) cacheCap() int {
	if n.cfg.CacheSize != 0 {
		return max(n.cfg.CacheSize, 0)
	}
	return 2 * max(int(math.Ceil(math.Log2(max(n.estimateN(), 2)))), 1)
}

// cache is the route cache: key ranges and their owners, least recently
// used evicted first.
type cache struct {
	e    []cacheEntry
	tick uint64
}

type cacheEntry struct {
	rg    Range
	owner Peer
	used  uint64
	until time.Duration
}

// find returns the live entry whose range holds k, dropping expired ones
// it meets.
func (c *cache) find(k uint64, now time.Duration) (cacheEntry, bool) {
	for i := 0; i < len(c.e); i++ {
		if c.e[i].until <= now {
			c.e = append(c.e[:i], c.e[i+1:]...)
			i--
			continue
		}
		if c.e[i].rg.Contains(k) {
			c.tick++
			c.e[i].used = c.tick
			return c.e[i], true
		}
	}
	return cacheEntry{}, false
}

func overlap(a, b Range) bool { return a.Contains(b.Lo) || b.Contains(a.Lo) }

func (c *cache) put(rg Range, owner Peer, capacity int, until time.Duration) {
	j := 0
	for _, e := range c.e {
		if e.owner.ID != owner.ID && !overlap(e.rg, rg) {
			c.e[j] = e
			j++
		}
	}
	c.e = c.e[:j]
	for len(c.e) >= capacity {
		lru := 0
		for i := range c.e {
			if c.e[i].used < c.e[lru].used {
				lru = i
			}
		}
		c.e = append(c.e[:lru], c.e[lru+1:]...)
	}
	c.tick++
	c.e = append(c.e, cacheEntry{rg: rg, owner: owner, used: c.tick, until: until})
}

func (c *cache) dropOwner(id wire.NodeID) {
	j := 0
	for _, e := range c.e {
		if e.owner.ID != id {
			c.e[j] = e
			j++
		}
	}
	c.e = c.e[:j]
}

func (c *cache) dropOverlap(rg Range) {
	j := 0
	for _, e := range c.e {
		if !overlap(e.rg, rg) {
			c.e[j] = e
			j++
		}
	}
	c.e = c.e[:j]
}
