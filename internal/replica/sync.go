package replica

import (
	"cmp"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Flush produces the frame's outgoing messages into o: updates from
// primaries to their holders, then the replica side's acknowledgements,
// registrations, drops, handoffs and tentative writes, and the deletions
// and replies queued since the last Flush. view is the union of the node's
// primaries' interests (boxes over the registry's space).
func (s *Store) Flush(now time.Duration, view []world.Box, o *wire.Outbox) {
	s.flush(now, view, nil, o)
}

// A View tells whether a point lies in the node's view (the union of its
// primaries' interests); the node may answer from a spatial index.
type View interface {
	Contains(p world.Point) bool
}

// FlushView is Flush with the view given as a View. The store keeps view
// until the next flush, and may ask it about the packets it takes
// meanwhile (Apply): the caller must not change it in between.
func (s *Store) FlushView(now time.Duration, view View, o *wire.Outbox) {
	s.flush(now, nil, view, o)
}

// flush is Flush; the view is vf if not nil, else boxes.
func (s *Store) flush(now time.Duration, boxes []world.Box, vf View, o *wire.Outbox) {
	s.viewBoxes, s.viewVF = append(s.viewBoxes[:0], boxes...), vf
	s.sends, s.dcache = s.sends[:0], s.dcache[:0]
	s.answer = s.answer[:0] // fresh holders get their full state below
	for _, e := range s.prims {
		s.flushPrimary(now, e)
	}
	s.sortSendsByTo() // (sendsTo searches them)
	// Replica side, in ID order. flushReplica may remove e (and nothing
	// else): then the next entry has taken its index. The primaries are
	// skipped by their IDs, without reading their entries (cold, at
	// 10,000 players).
	p := 0
	for i := 0; i < len(s.ents); {
		id := s.entIDs[i]
		for p < len(s.primIDs) && s.primIDs[p] < id {
			p++
		}
		if p < len(s.primIDs) && s.primIDs[p] == id {
			i++
			continue
		}
		e, n := s.ents[i], len(s.ents)
		s.flushReplica(now, e, boxes, vf)
		if len(s.ents) == n {
			i++
		}
	}
	s.flushRequests(now, true)
	s.encodeUpdates(now, o)
	s.encodeAcks(o)
	s.encodeHandoffs(now, o)
	s.flushAuthority(now, o)
	s.encodeIDs(o)
	s.tomb.expire(now, s.cfg.TombstoneTTL)
	s.dropped.expire(now, dropGuard)
}

// Answer sends, at once, the full state of every local primary to each
// new holder that registered since the last Answer or Flush, instead of
// at the next Flush: a replica request is answered within the Step that
// delivered it, not up to a frame later. The caller (package node) calls
// it after applying a received packet.
func (s *Store) Answer(now time.Duration, o *wire.Outbox) {
	s.au.now = now
	if s.authQueued() {
		s.encodeAuth(now, o)
		s.encodeHealth(o)
	}
	if len(s.au.fwd) > 0 {
		s.encodeForwards(o)
	}
	if len(s.answer) == 0 {
		return
	}
	s.sends, s.dcache = s.sends[:0], s.dcache[:0]
	for _, a := range s.answer {
		e := s.objs.Get(a.id)
		ok := e != nil
		if !ok || !e.primary {
			continue
		}
		if h := e.holder(a.to, false); h != nil && h.fresh && h.alive(now) {
			off, end := s.appendDelta(e, nil)
			s.sends = append(s.sends, send{to: a.to, e: e, off: off, end: end})
			h.acked, h.sentAt, h.fresh, h.confirm = e.version, now, false, true
		}
	}
	s.answer = s.answer[:0]
	s.sortSends()
	s.encodeUpdates(now, o)
	s.sends = s.sends[:0]
}

func (s *Store) flushPrimary(now time.Duration, e *entry) {
	// Attachment: mirror the holders of the object e is attached to.
	if a, ok := e.obj.(world.Attacher); ok && !s.cfg.NoAttach {
		if to := a.AttachTo(); to != 0 && to != e.id {
			if t := s.objs.Get(to); t != nil && t.primary {
				for _, h := range t.holders {
					if h.alive(now) {
						eh := e.holder(h.node, true)
						eh.pushUntil = max(eh.pushUntil, h.regUntil, h.pushUntil)
						if eh.regUntil <= now {
							// Only attached there: as lively as the
							// object's replica (the holder registers it
							// if it comes into its view alone).
							eh.dormant = h.dormant
						}
					}
				}
			}
		}
	}
	kept := e.holders[:0]
	// The delta from the last base encoded for a holder of e: most holders
	// have the same (the version before), and get the same bytes.
	var (
		memoBase uint64
		memoOff  int32
		memoEnd  int32
		memo     bool
	)
	for i, h := range e.holders {
		if !h.alive(now) {
			// A dormant registration that lapses on its own goes without a
			// word (the holder has dropped the replica), unless a push
			// outlived it: then the holder may hold a pushed replica again.
			if !h.quiet || h.pushUntil > h.regUntil {
				s.idq = append(s.idq, idMsg{to: h.node, typ: wire.TypeDrop, id: e.id})
			}
			continue
		}
		due := h.fresh || h.acked < e.version ||
			h.confirm && now-h.sentAt >= s.cfg.RetransmitAfter ||
			now-h.sentAt >= s.cfg.KeepalivePeriod
		if due && h.dormant && !h.fresh && now-h.sentAt < s.cfg.DormantEvery {
			due = false
		}
		if due && !h.fresh && s.far != nil && now-h.sentAt < s.farEvery && s.far(h.node, e.obj) {
			due = false
		}
		if due {
			base := h.acked
			var from *world.State
			if base != 0 {
				if from = e.hist.find(base); from == nil {
					base = 0
				}
			}
			if !memo || memoBase != base {
				memo, memoBase = true, base
				memoOff, memoEnd = s.appendDelta(e, from)
			}
			s.sends = append(s.sends, send{to: h.node, e: e, base: base, off: memoOff, end: memoEnd})
			// Optimistic: the holder is taken to have what was sent; if it
			// did not get it, its next update fails and it asks for a
			// resync, or the confirming keepalive does.
			h.confirm = base != e.version
			h.acked, h.sentAt, h.fresh = e.version, now, false
		}
		if len(kept) < i { // a holder before h left: shift its node too
			e.hnodes[len(kept)] = h.node
		}
		kept = append(kept, h)
	}
	clear(e.holders[len(kept):])
	e.holders, e.hnodes = kept, e.hnodes[:len(kept)]
}

func (s *Store) inView(p world.Point, boxes []world.Box, vf View) bool {
	if vf != nil {
		return vf.Contains(p)
	}
	for i := range boxes {
		if boxes[i].Contains(p, s.dims) {
			return true
		}
	}
	return false
}

func (s *Store) flushReplica(now time.Duration, e *entry, boxes []world.Box, vf View) {
	if silent := now - e.lastHeard; silent > s.cfg.ReplicaTimeout || !e.requested && silent > s.cfg.PushedTimeout {
		s.stats.Timeouts++
		s.remove(e.id)
		return
	}
	// A dormant replica hears from its primary only every DormantEvery.
	e.silent = e.requested && !e.dormant && now-e.lastHeard > s.cfg.SuspectAfter
	if !e.requested && s.inView(e.loc, boxes, vf) && s.attachedToDormant(e) {
		// Pushed along with a dormant replica, hence itself sent at the
		// dormant rate, and in view: ask for it (and so for the full rate).
		e.requested, e.lastNeeded, e.lastRegister = true, now, now
		s.idq = append(s.idq, idMsg{to: e.from, typ: wire.TypeRegister, id: e.id})
	}
	if e.requested {
		// A refresh is due every RegisterPeriod; from half of it on, it
		// goes with an updates frame to the primary's node, if there is
		// one, instead of in a packet of its own.
		since := now - e.lastRegister
		reg := since >= s.cfg.RegisterPeriod ||
			since >= s.cfg.RegisterPeriod/2 && s.sendsTo(e.from)
		wake := false
		if s.inView(e.loc, boxes, vf) {
			e.lastNeeded = now
			// Back in view: full rate again, at once.
			wake = e.dormant
			e.dormant = false
		} else if now-e.lastNeeded > s.cfg.ReplicaLinger {
			s.stats.Dropped++
			if !e.dormant || !s.dormantLapses() {
				// A dormant registration lapses at the primary on its own
				// (DormantTTL).
				s.idq = append(s.idq, idMsg{to: e.from, typ: wire.TypeDrop, id: e.id})
			}
			s.dropped.set(e.id, now)
			s.remove(e.id)
			return
		} else if s.cfg.DormantEvery > 0 && !e.dormant && now-e.lastNeeded >= s.cfg.DormantAfter {
			e.dormant, reg = true, true
		}
		switch {
		case wake:
			// The next registration comes DormantEvery later, not a
			// RegisterPeriod: should this one be lost or overtake the
			// TypeDormant before it, the primary hears it soon.
			e.lastRegister = now - s.cfg.RegisterPeriod + s.cfg.DormantEvery
			s.idq = append(s.idq, idMsg{to: e.from, typ: wire.TypeRegister, id: e.id})
		case reg:
			e.lastRegister = now
			typ := wire.TypeRegister
			if e.dormant {
				typ = wire.TypeDormant
			}
			s.idq = append(s.idq, idMsg{to: e.from, typ: typ, id: e.id})
		}
	}
	if e.ackDue {
		e.ackDue = false
		e.asked, e.askedAt = uint32(e.version)+1, now
		s.acks = append(s.acks, ackMsg{to: e.from, a: wire.Ack{ID: e.id, Version: e.version}})
	}
}

// dormantLapses reports whether dormant registrations lapse without a
// TypeDrop (Config.DormantTTL).
func (s *Store) dormantLapses() bool { return s.cfg.DormantTTL > 0 && s.cfg.DormantEvery > 0 }

// sendsTo reports whether this flush sends updates to node (s.sends is
// sorted).
func (s *Store) sendsTo(node wire.NodeID) bool {
	_, ok := slices.BinarySearchFunc(s.sends, node, func(x send, n wire.NodeID) int { return cmp.Compare(x.to, n) })
	return ok
}

// attachedToDormant reports whether replica e is attached to an object
// whose replica here is dormant.
func (s *Store) attachedToDormant(e *entry) bool {
	a, ok := e.obj.(world.Attacher)
	if !ok || s.cfg.NoAttach {
		return false
	}
	to := a.AttachTo()
	if to == 0 || to == e.id {
		return false
	}
	t := s.objs.Get(to)
	return t != nil && !t.primary && t.dormant
}

// Request sends, at once, the registrations of the replicas wanted (Want)
// since the last Flush or Request and not asked for yet, each with its
// resync, and with them what else the packets taken since have queued
// for other nodes (drops, registrations, acknowledgements): a discovery
// made by a received packet is asked for within the Step that delivered
// it, not at the next Flush, up to a frame later. The caller (package
// node) calls it after a Step.
func (s *Store) Request(now time.Duration, o *wire.Outbox) {
	if s.unsent == 0 {
		return
	}
	s.flushRequests(now, false)
	s.encodeAcks(o)
	s.encodeIDs(o)
}

// flushRequests queues the registrations of the replicas wanted and not
// held: the ones not asked for yet, and with retries those last asked
// for RequestRetry ago or more. It forgets the requests that expired or
// were answered.
func (s *Store) flushRequests(now time.Duration, retries bool) {
	s.unsent = 0
	ids := s.wantIDs[:0]
	for id := range s.want {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := s.want[id]
		// Past until, a registration sent is still waited for, one
		// RequestRetry, not retried: its full state, arriving after
		// the want was forgotten, would make a replica not asked for,
		// which this node does not register again, while the primary
		// counts it as a holder (and its locator skips it) until the
		// registration lapses.
		if s.objs.Get(id) != nil {
			delete(s.want, id)
			continue
		}
		if r.until < now {
			if !r.sent || now-r.lastSent >= s.cfg.RequestRetry {
				delete(s.want, id)
			}
			continue
		}
		if !r.sent || retries && now-r.lastSent >= s.cfg.RequestRetry {
			r.sent, r.lastSent = true, now
			s.want[id] = r
			s.idq = append(s.idq, idMsg{to: r.from, typ: wire.TypeRegister, id: id})
			// With a resync from nothing: a primary that already counts
			// this node as a holder (its full state lost on the way, a
			// push that ended, a drop lost) takes the registration for a
			// refresh and would send nothing new until its next keepalive.
			s.acks = append(s.acks, ackMsg{to: r.from, a: wire.Ack{ID: id}})
		}
	}
	s.wantIDs = ids[:0]
}

func byTo[T any](to func(T) wire.NodeID) func(a, b T) int {
	return func(a, b T) int { return cmp.Compare(to(a), to(b)) }
}

// sortSendsByTo is sortSends for updates queued in object order (a Flush
// queues them primary by primary, in ID order): a stable sort by
// destination alone, of integer keys (destination, position), without a
// comparison function that reads each update's entry.
func (s *Store) sortSendsByTo() {
	if len(s.sends) < 2 {
		return
	}
	keys := s.sendKeys[:0]
	for i := range s.sends {
		keys = append(keys, uint64(s.sends[i].to)<<32|uint64(i))
	}
	slices.Sort(keys)
	sorted := s.sendsBy[:0]
	for _, k := range keys {
		sorted = append(sorted, s.sends[uint32(k)])
	}
	s.sends, s.sendsBy, s.sendKeys = sorted, s.sends, keys
}

// sortSends sorts the queued updates by destination, then object.
func (s *Store) sortSends() {
	// (to, id) is unique, so an unstable sort is deterministic.
	slices.SortFunc(s.sends, func(a, b send) int {
		if c := cmp.Compare(a.to, b.to); c != 0 {
			return c
		}
		return cmp.Compare(a.e.id, b.e.id)
	})
}

// appendDelta appends primary e's newest version, as a delta from base
// (nil: a full state), to dcache and returns where it lies there.
func (s *Store) appendDelta(e *entry, base *world.State) (off, end int32) {
	off = int32(len(s.dcache))
	s.dcache = world.AppendDelta(s.dcache, base, e.hist.newest().st)
	return off, int32(len(s.dcache))
}

// encodeUpdates encodes the queued updates, which sortSends sorted, with
// the deltas queued with them.
func (s *Store) encodeUpdates(now time.Duration, o *wire.Outbox) {
	var u wire.Update
	for i := 0; i < len(s.sends); {
		to := s.sends[i].to
		b, mark := wire.BeginUpdates(o.Buf(), now)
		start := mark
		keepalives := true // only keepalives in this frame so far
		for ; i < len(s.sends) && s.sends[i].to == to; i++ {
			x := s.sends[i]
			e := x.e
			keepalives = keepalives && x.base == e.version
			u = wire.Update{ID: e.id, Version: e.version, Base: x.base, Data: s.dcache[x.off:x.end]}
			if x.base == 0 {
				u.Kind = e.kind
				s.stats.FullSent++
			} else if x.base == e.version {
				s.stats.KeepalivesSent++
			}
			b = wire.AppendUpdateEntry(b, &u)
			s.stats.UpdatesSent++
			if len(b)-mark > s.cfg.MaxFrame && i+1 < len(s.sends) && s.sends[i+1].to == to {
				b = wire.EndUpdates(b, mark)
				s.stats.UpdateFrames++
				s.stats.UpdateBytes += int64(len(b) - start + 2)
				o.Commit(to, wire.ClassUpdate, b)
				b, mark = wire.BeginUpdates(o.Buf(), now)
				start = mark
			}
		}
		b = wire.EndUpdates(b, mark)
		s.stats.UpdateFrames++
		s.stats.UpdateBytes += int64(len(b) - start + 2)
		if keepalives && s.cfg.KeepaliveWait > 0 {
			// Nothing changed: the keepalives may wait for a packet to the
			// holder to ride in.
			o.CommitLater(to, wire.ClassUpdate, b, now+s.cfg.KeepaliveWait)
		} else {
			o.Commit(to, wire.ClassUpdate, b)
		}
	}
}

// encodeAcks sends the acknowledgements (resync requests) queued, one
// frame per primary node, the latest per object.
func (s *Store) encodeAcks(o *wire.Outbox) {
	// Stable: of two acknowledgements of one object, the later queued wins.
	slices.SortStableFunc(s.acks, func(a, b ackMsg) int {
		if c := cmp.Compare(a.to, b.to); c != 0 {
			return c
		}
		return cmp.Compare(a.a.ID, b.a.ID)
	})
	for i := 0; i < len(s.acks); {
		to := s.acks[i].to
		s.ack.Entries = s.ack.Entries[:0]
		for ; i < len(s.acks) && s.acks[i].to == to && len(s.ack.Entries) < 200; i++ {
			if n := len(s.ack.Entries); n > 0 && s.ack.Entries[n-1].ID == s.acks[i].a.ID {
				s.ack.Entries[n-1] = s.acks[i].a
				continue
			}
			s.ack.Entries = append(s.ack.Entries, s.acks[i].a)
		}
		s.stats.AcksSent += int64(len(s.ack.Entries))
		o.Commit(to, wire.ClassUpdate, wire.AppendAcks(o.Buf(), &s.ack))
	}
	s.acks = s.acks[:0]
}

func (s *Store) encodeHandoffs(now time.Duration, o *wire.Outbox) {
	if !s.handedOff {
		return // (a walk of every entry, for nothing)
	}
	for _, e := range s.ents {
		if e.primary || !e.handoff || now < e.nextHandoff {
			continue
		}
		e.lastHandoff, e.nextHandoff = now, now+s.cfg.RequestRetry
		s.dbuf = world.AppendDelta(s.dbuf[:0], nil, e.st)
		s.ho.Entries = append(s.ho.Entries[:0], wire.Handoff{ID: e.id, Kind: e.kind, Data: s.dbuf})
		o.Commit(e.from, wire.ClassControl, wire.AppendHandoffs(o.Buf(), &s.ho))
	}
}

func (s *Store) encodeIDs(o *wire.Outbox) {
	// Entries equal in (to, type, id) are identical, so an unstable sort is
	// deterministic.
	slices.SortFunc(s.idq, func(a, b idMsg) int {
		if c := cmp.Compare(a.to, b.to); c != 0 {
			return c
		}
		if c := cmp.Compare(a.typ, b.typ); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for i := 0; i < len(s.idq); {
		to, typ := s.idq[i].to, s.idq[i].typ
		s.idl.IDs = s.idl.IDs[:0]
		for ; i < len(s.idq) && s.idq[i].to == to && s.idq[i].typ == typ && len(s.idl.IDs) < 150; i++ {
			s.idl.IDs = append(s.idl.IDs, s.idq[i].id)
		}
		o.Commit(to, typ.Class(), wire.AppendIDs(o.Buf(), typ, &s.idl))
	}
	s.idq = s.idq[:0]
}
