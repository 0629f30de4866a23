package replica

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Handles reports whether frames of type t belong to the store.
func Handles(t wire.Type) bool {
	switch t {
	case wire.TypeUpdates, wire.TypeAcks, wire.TypeWrites, wire.TypeRegister, wire.TypeDormant, wire.TypeDrop,
		wire.TypeDelete, wire.TypeHandoff,
		wire.TypeMigrate, wire.TypeMigrateAck, wire.TypeWhere, wire.TypeBackup, wire.TypeBackupAck, wire.TypeWriteAcks,
		wire.TypeHeartbeat, wire.TypeProbe, wire.TypeProbeReply, wire.TypeRelease, wire.TypeClaim:
		return true
	}
	return false
}

// BeginPacket starts the validation of a received packet: Check may keep
// what it decoded for the Apply calls of the same packet, until the next
// BeginPacket. (Without it, Apply decodes everything again.)
func (s *Store) BeginPacket() {
	if s.stamp++; s.stamp == 0 {
		s.stamp = 1
	}
	s.applied = false
}

// Check validates one frame of a received packet without changing anything:
// the frame must decode, full states and handoffs must name a registered
// kind and decode against its schema, and deltas and tentative writes about
// objects this node holds must decode against them. It returns an error
// wrapping wire.ErrMalformed or world.ErrCorrupt.
func (s *Store) Check(from wire.NodeID, t wire.Type, body []byte) error {
	return s.handle(0, from, t, body, false)
}

// Apply applies one frame of a received packet that passed Check. It
// ignores (and counts) messages about objects it cannot act on.
func (s *Store) Apply(now time.Duration, from wire.NodeID, t wire.Type, body []byte) error {
	return s.handle(now, from, t, body, true)
}

func (s *Store) handle(now time.Duration, from wire.NodeID, t wire.Type, body []byte, apply bool) error {
	if apply {
		defer func() { s.applied = true }()
	}
	switch t {
	case wire.TypeUpdates:
		// Apply reuses what Check decoded of this frame, and the entries it
		// looked up, when nothing of the packet was applied before it (an
		// earlier frame may have removed an entry).
		reuse := apply && !s.applied && s.stamp != 0 && s.updStamp == s.stamp && sameBytes(body, s.updBody)
		if !reuse {
			if err := s.upd.Decode(body); err != nil {
				return err
			}
		}
		if !apply {
			// Look every entry up first: the lookups are independent, so
			// their cache misses overlap instead of queueing behind each
			// update's own.
			s.updEnts = s.updEnts[:0]
			for i := range s.upd.Entries {
				s.updEnts = append(s.updEnts, s.objs.Get(s.upd.Entries[i].ID))
			}
		}
		for i := range s.upd.Entries {
			u := &s.upd.Entries[i]
			var e *entry
			if !apply || reuse {
				e = s.updEnts[i]
			}
			if e == nil && apply {
				// (Absent at Check: an earlier entry of this frame may have
				// added it since.)
				e = s.objs.Get(u.ID)
			}
			if err := s.update(now, from, e, u, wire.UnwrapTime(now, s.upd.Time), apply); err != nil {
				return err
			}
		}
		if !apply {
			s.updStamp, s.updBody = s.stamp, body
		}
	case wire.TypeAcks:
		// Apply reuses Check's decoding of the packet's latest acks frame
		// (decoding does not depend on the store).
		if !apply || s.stamp == 0 || s.ackStamp != s.stamp || !sameBytes(body, s.ackBody) {
			if err := s.ack.Decode(body); err != nil {
				return err
			}
			s.ackBody = nil // s.ack now holds this frame
		}
		if !apply {
			s.ackStamp, s.ackBody = s.stamp, body
			return nil
		}
		for _, a := range s.ack.Entries {
			s.acked(from, a)
		}
	case wire.TypeWrites:
		if err := s.wr.Decode(body); err != nil {
			return err
		}
		if s.wr.Hops == 0 && s.wr.Writer != from {
			return fmt.Errorf("%w: writes from node %d name writer %d without a forward", wire.ErrMalformed, from, s.wr.Writer)
		}
		for _, w := range s.wr.Entries {
			if err := s.writeIn(now, from, &s.wr, w, apply); err != nil {
				return err
			}
		}
	case wire.TypeMigrate:
		if err := s.au.mig.Decode(body); err != nil {
			return err
		}
		for i := range s.au.mig.Entries {
			if err := s.migrateIn(now, from, &s.au.mig.Entries[i], apply); err != nil {
				return err
			}
		}
	case wire.TypeMigrateAck, wire.TypeRelease:
		if err := s.au.eps.Decode(body); err != nil || !apply {
			return err
		}
		for _, e := range s.au.eps.Entries {
			if t == wire.TypeMigrateAck {
				s.migrateAcked(now, from, e)
			} else {
				s.releaseIn(now, from, e)
			}
		}
	case wire.TypeClaim:
		if err := s.au.cls.Decode(body); err != nil || !apply {
			return err
		}
		for _, c := range s.au.cls.Entries {
			s.claimIn(now, from, c)
		}
	case wire.TypeWhere:
		if err := s.au.wh.Decode(body); err != nil || !apply {
			return err
		}
		for _, l := range s.au.wh.Entries {
			s.whereIn(now, from, l)
		}
	case wire.TypeBackup:
		if err := s.au.bkm.Decode(body); err != nil {
			return err
		}
		for i := range s.au.bkm.Entries {
			if err := s.backupIn(now, from, &s.au.bkm.Entries[i], apply); err != nil {
				return err
			}
		}
	case wire.TypeBackupAck:
		if err := s.au.bas.Decode(body); err != nil || !apply {
			return err
		}
		for _, a := range s.au.bas.Entries {
			s.backupAcked(now, from, a)
		}
	case wire.TypeWriteAcks:
		if err := s.au.was.Decode(body); err != nil || !apply {
			return err
		}
		s.writeAcksIn(now, &s.au.was)
	case wire.TypeHeartbeat:
		var hb wire.Heartbeat
		if err := hb.Decode(body); err != nil || !apply {
			return err
		}
		s.heartbeatIn(now, from, hb)
	case wire.TypeProbe, wire.TypeProbeReply:
		var pr wire.Probe
		if err := pr.Decode(body); err != nil || !apply {
			return err
		}
		for _, l := range pr.Entries {
			s.probeIn(now, from, t, l)
		}
	case wire.TypeRegister, wire.TypeDormant, wire.TypeDrop, wire.TypeDelete:
		if err := s.idl.Decode(body); err != nil || !apply {
			return err
		}
		for _, id := range s.idl.IDs {
			s.ids1(now, from, t, id)
		}
	case wire.TypeHandoff:
		if err := s.ho.Decode(body); err != nil {
			return err
		}
		for _, h := range s.ho.Entries {
			if err := s.handoffIn(now, from, h, apply); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: %v frame is not a replica message", wire.ErrMalformed, t)
	}
	return nil
}

// decodeFull decodes a full state of kind k into dst (allocating one when
// nil), checking it consumes the data exactly.
func (s *Store) decodeFull(id world.ObjectID, k world.Kind, data []byte, dst *world.State) (*world.State, error) {
	sc := s.cfg.Registry.Schema(k)
	if sc == nil {
		return nil, fmt.Errorf("%w: %v has unknown kind %d", wire.ErrMalformed, id, k)
	}
	if dst == nil {
		dst = s.scratchFor(k)
	}
	n, err := world.ApplyDelta(dst, nil, data)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", id, err)
	}
	if n != len(data) {
		return nil, fmt.Errorf("%w: %v: %d bytes after the state", world.ErrCorrupt, id, len(data)-n)
	}
	return dst, nil
}

// sameBytes reports whether a and b are the same slice of memory.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// dropGuard is how long after dropping a replica a node ignores full
// states of it that it did not ask for again: those the primary sent
// before the drop reached it (longer than any one-way delay).
const dropGuard = time.Second

// update checks or applies one update; e is the store's entry of u.ID
// (nil if absent).
func (s *Store) update(now time.Duration, from wire.NodeID, e *entry, u *wire.Update, at time.Duration, apply bool) error {
	if !apply {
		if u.Base == 0 {
			if e != nil && e.kind != u.Kind {
				return fmt.Errorf("%w: full state of %v is kind %d, held as kind %d", wire.ErrMalformed, u.ID, u.Kind, e.kind)
			}
			_, err := s.decodeFull(u.ID, u.Kind, u.Data, nil)
			return err
		}
		if e == nil || e.primary {
			return nil
		}
		if base := e.base(u.Base); base != nil {
			// Validated against the base alone, with no destination:
			// Apply decodes it again, into the base (the replica's State),
			// so that an update reads and writes that State only.
			n, err := world.CheckDelta(e.st.Schema(), base, u.Data)
			if err != nil {
				return fmt.Errorf("%v: %w", u.ID, err)
			}
			if n != len(u.Data) {
				return fmt.Errorf("%w: %v: %d bytes after the delta", world.ErrCorrupt, u.ID, len(u.Data)-n)
			}
		}
		return nil
	}
	if e != nil && e.primary {
		s.stats.Ignored++
		return nil
	}
	if e == nil {
		// Only an absent object can be tombstoned: tombs are set when an
		// entry is removed, and no entry is added for a tombstoned ID.
		if s.tomb.has(u.ID) {
			s.stats.Ignored++
			return nil
		}
		// A full state sent before our drop reached the primary would make
		// an orphan replica that nobody updates: unless asked for again, it
		// is taken only if its object is back in the view (then registered
		// again at once, below), not to wait for the locator to find it.
		t, dropped := s.dropped.get(u.ID)
		guarded := dropped && now-t <= dropGuard && !s.wants(u.ID)
		if guarded && u.Base != 0 {
			s.stats.Ignored++
			return nil
		}
		if !s.mayCreate(from, u.ID) {
			s.stats.NotPrimary++
			return nil
		}
		if u.Base != 0 {
			// The primary thinks this node holds a replica it no longer has:
			// acknowledge version 0 so that it sends a full state (or let the
			// registration lapse if nobody here wants it).
			s.stats.Stale++
			s.acks = append(s.acks, ackMsg{to: from, a: wire.Ack{ID: u.ID}})
			return nil
		}
		sc := s.cfg.Registry.Schema(u.Kind)
		st := sc.NewState(u.ID)
		if _, err := s.decodeFull(u.ID, u.Kind, u.Data, st); err != nil {
			return err
		}
		if guarded && !s.inView(st.Location(), s.viewBoxes, s.viewVF) {
			s.stats.Ignored++
			return nil
		}
		obj := sc.NewObject(st)
		e, err := s.newEntry(obj, st, false)
		if err != nil {
			return err
		}
		e.from, e.lastHeard, e.lastNeeded, e.lastRegister = from, now, now, now
		if _, ok := s.want[u.ID]; ok {
			e.requested = true
			delete(s.want, u.ID)
		}
		if guarded {
			// Back in the view: wanted again, and registered at once, so
			// that the primary, which may have taken the drop, updates it.
			e.requested = true
			s.dropped.del(u.ID)
			s.idq = append(s.idq, idMsg{to: from, typ: wire.TypeRegister, id: u.ID})
			s.stats.Reclaimed++
		}
		s.accept(e, u.Version, at)
		s.insert(e)
		return nil
	}
	if from != e.from && (e.version > 0 || e.epoch > 0) {
		// An update from a node this node does not know as the primary: a
		// stale primary, or a new one whose news was lost. Tell it what
		// this node knows; the newer of the two corrects the other.
		s.stats.Stale++
		s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: u.ID, Epoch: e.epoch, Node: e.from}})
		return nil
	}
	e.from, e.lastHeard = from, now
	if u.Version <= e.version {
		if u.Version == e.version {
			e.produced = max(e.produced, at)
		}
		s.stats.Stale++
		return nil
	}
	var base *world.State
	if u.Base != 0 {
		if base = e.base(u.Base); base == nil {
			// An update (or the keepalive of a version) we missed: ask
			// for a resync from the version we have. Once per version,
			// and again after RequestRetry (the request may be lost):
			// the primary's updates sent before a request arrives are
			// stale too, and asking again for each would make it resync
			// again after the first resync brought the replica up to
			// date, from a version the replica has moved past (a replica
			// keeps only its newest, see ring), and so on.
			s.stats.Stale++
			if e.asked != uint32(e.version)+1 || now-e.askedAt >= s.cfg.RequestRetry {
				e.ackDue = true
			}
			return nil
		}
	}
	// The new version goes straight into the game's State (tentative
	// writes made to it are overwritten, as the primary's state wins).
	if _, err := world.ApplyDelta(e.st, base, u.Data); err != nil {
		return fmt.Errorf("%v: %w", u.ID, err)
	}
	e.written = false
	s.changed(e)
	e.version, e.produced, e.handoff = u.Version, at, false
	s.stats.Applied++
	return nil
}

// mayCreate reports whether a full state of id from node from may create a
// replica of it here: not when this node asked another node for it (a
// registration goes to the primary this node knows, and the primary
// answers it), nor when it knows another node as its primary. A state
// pushed unasked of an object this node knows nothing of is taken.
func (s *Store) mayCreate(from wire.NodeID, id world.ObjectID) bool {
	if r, ok := s.want[id]; ok && r.from != from {
		return false
	}
	if l, ok := s.whereOf(id); ok && l.Node != from && l.Node != s.cfg.Self {
		return false
	}
	return true
}

// accept records the first state of a new replica (its State holds it).
func (s *Store) accept(e *entry, v uint64, at time.Duration) {
	e.version, e.produced = v, at
	s.stats.Applied++
}

func (s *Store) acked(from wire.NodeID, a wire.Ack) {
	e := s.objs.Get(a.ID)
	ok := e != nil
	if !ok || !e.primary {
		s.stats.Ignored++
		return
	}
	h := e.holder(from, false)
	if h == nil || a.Version > e.version {
		s.stats.Ignored++
		return
	}
	// A resync request: the holder has a.Version (0: nothing), so the next
	// Flush sends it a delta from there (or a full state).
	h.acked = a.Version
	if a.Version == 0 {
		h.fresh = true
	}
}

func (s *Store) ids1(now time.Duration, from wire.NodeID, t wire.Type, id world.ObjectID) {
	e := s.objs.Get(id)
	switch t {
	case wire.TypeRegister, wire.TypeDormant:
		if e == nil || !e.primary {
			if l, ok := s.whereOf(id); ok && !s.tomb.has(id) {
				// It moved: point the requester on (unless it is moving to
				// the requester itself, which learns so soon).
				if l.Node != from && l.Node != s.cfg.Self {
					s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: l})
					s.forwarded(now, id)
				}
				return
			}
			// Deleted here: tell the requester to forget it. Unknown here
			// (its migration to this node may be on its way, or this node
			// restarted): drop the requester, who asks again if it still
			// needs the object, and does not take it for deleted.
			typ := wire.TypeDrop
			if s.tomb.has(id) {
				typ = wire.TypeDelete
			}
			s.idq = append(s.idq, idMsg{to: from, typ: typ, id: id})
			return
		}
		if from == s.cfg.Self {
			return
		}
		h := e.holder(from, true)
		h.regUntil = now + s.cfg.RegistrationTTL
		h.dormant = t == wire.TypeDormant
		h.quiet = h.dormant && s.dormantLapses()
		if h.quiet {
			h.regUntil = now + s.cfg.DormantTTL
		}
		if h.fresh {
			s.answer = append(s.answer, idMsg{to: from, id: id})
		}
	case wire.TypeDrop:
		switch {
		case e == nil:
			s.stats.Ignored++
		case e.primary:
			if h := e.holder(from, false); h != nil {
				h.regUntil = 0
				if !h.alive(now) {
					e.deleteHolder(from)
				}
			}
		case e.from == from:
			s.stats.Dropped++
			s.remove(id)
			if e.requested && now-e.lastNeeded <= s.cfg.ReplicaLinger {
				// Our registrations were lost and the primary let us go,
				// but we still need the replica: ask again.
				s.want[id] = request{from: from, until: now + s.cfg.RegistrationTTL}
				return
			}
		}
		if r, ok := s.want[id]; ok && r.from == from {
			delete(s.want, id)
		}
	case wire.TypeDelete:
		if e != nil && !e.primary && e.from == from {
			s.remove(id)
			s.tomb.set(id, now)
			s.au.tombEp[id] = e.epoch
		} else if e == nil {
			if r, ok := s.want[id]; ok && r.from == from {
				delete(s.want, id)
			}
		} else {
			s.stats.Ignored++
		}
	}
}

func (s *Store) handoffIn(now time.Duration, from wire.NodeID, h wire.Handoff, apply bool) error {
	if !apply {
		_, err := s.decodeFull(h.ID, h.Kind, h.Data, nil)
		return err
	}
	if s.objs.Get(h.ID) != nil {
		return nil // a retransmission: the server already has it
	}
	if s.tomb.has(h.ID) {
		s.stats.Ignored++
		return nil
	}
	sc := s.cfg.Registry.Schema(h.Kind)
	st := sc.NewState(h.ID)
	if _, err := s.decodeFull(h.ID, h.Kind, h.Data, st); err != nil {
		return err
	}
	return s.AddPrimary(now, sc.NewObject(st), from)
}
