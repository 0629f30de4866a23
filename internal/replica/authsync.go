package replica

import (
	"cmp"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// flushAuthority runs the authority's timers at a Flush: failure
// detection, backups, bindings, the writes and their acknowledgements.
func (s *Store) flushAuthority(now time.Duration, o *wire.Outbox) {
	s.au.now = now
	if s.cfg.Failover {
		s.flushHealth(now)
		// This frame's updates tell their holders this node is alive.
		s.au.sentTo = s.au.sentTo[:0]
		for i := range s.sends {
			if n := len(s.au.sentTo); n == 0 || s.au.sentTo[n-1] != s.sends[i].to {
				s.au.sentTo = append(s.au.sentTo, s.sends[i].to)
			}
		}
	}
	s.flushBackups(now)
	s.flushWriteAcks()
	s.encodeAuth(now, o)
	s.flushWrites(now, o)
	if s.cfg.Failover {
		s.encodeHealth(o)
	}
}

// encodeAuth commits the queued authority messages: locations first (a
// holder learns of a new primary before its updates), then migrations,
// their acknowledgements and releases, backups and backup acknowledgements,
// and write acknowledgements.
func (s *Store) encodeAuth(now time.Duration, o *wire.Outbox) {
	if q := s.au.whereq; len(q) > 0 {
		slices.SortStableFunc(q, func(a, b whereMsg) int { return cmp.Compare(a.to, b.to) })
		q = slices.CompactFunc(q, func(a, b whereMsg) bool { return a == b })
		for i := 0; i < len(q); {
			to := q[i].to
			s.au.wh.Entries = s.au.wh.Entries[:0]
			for ; i < len(q) && q[i].to == to && len(s.au.wh.Entries) < 100; i++ {
				s.au.wh.Entries = append(s.au.wh.Entries, q[i].l)
			}
			if to != s.cfg.Self {
				o.Commit(to, wire.ClassUpdate, wire.AppendWhere(o.Buf(), &s.au.wh))
			}
		}
		s.au.whereq = s.au.whereq[:0]
	}
	if q := s.au.pendMig; len(q) > 0 {
		slices.SortStableFunc(q, func(a, b migMsg) int { return cmp.Compare(a.to, b.to) })
		for _, m := range q {
			s.au.mig.Entries = append(s.au.mig.Entries[:0], m.m)
			o.Commit(m.to, wire.ClassUpdate, wire.AppendMigrate(o.Buf(), &s.au.mig))
		}
		clear(s.au.pendMig)
		s.au.pendMig = s.au.pendMig[:0]
	}
	if q := s.au.epochq; len(q) > 0 {
		slices.SortStableFunc(q, func(a, b epochMsg) int { return cmp.Or(cmp.Compare(a.to, b.to), cmp.Compare(a.typ, b.typ)) })
		for i := 0; i < len(q); {
			to, typ := q[i].to, q[i].typ
			s.au.eps.Entries = s.au.eps.Entries[:0]
			for ; i < len(q) && q[i].to == to && q[i].typ == typ && len(s.au.eps.Entries) < 100; i++ {
				s.au.eps.Entries = append(s.au.eps.Entries, q[i].e)
			}
			o.Commit(to, wire.ClassControl, wire.AppendEpochs(o.Buf(), typ, &s.au.eps))
		}
		s.au.epochq = s.au.epochq[:0]
	}
	if q := s.au.backupq; len(q) > 0 {
		slices.SortStableFunc(q, func(a, b backupMsg) int { return cmp.Compare(a.to, b.to) })
		for i := 0; i < len(q); {
			to := q[i].to
			b, mark := wire.BeginBackup(o.Buf())
			urgent := false
			for size := 0; i < len(q) && q[i].to == to && size < s.cfg.MaxFrame; i++ {
				b = append(b, q[i].b...)
				size += len(q[i].b)
				urgent = urgent || q[i].urgent
			}
			if urgent {
				o.Commit(to, wire.ClassControl, wire.EndBackup(b, mark))
			} else {
				o.CommitLater(to, wire.ClassControl, wire.EndBackup(b, mark), now)
			}
			s.au.sentTo = append(s.au.sentTo, to)
		}
		clear(s.au.backupq)
		s.au.backupq = s.au.backupq[:0]
	}
	if q := s.au.baq; len(q) > 0 {
		slices.SortStableFunc(q, func(a, b backupAckMsg) int { return cmp.Compare(a.to, b.to) })
		for i := 0; i < len(q); {
			to := q[i].to
			s.au.bas.Entries = s.au.bas.Entries[:0]
			for ; i < len(q) && q[i].to == to && len(s.au.bas.Entries) < 100; i++ {
				s.au.bas.Entries = append(s.au.bas.Entries, q[i].a)
			}
			o.Commit(to, wire.ClassControl, wire.AppendBackupAcks(o.Buf(), &s.au.bas))
			s.au.sentTo = append(s.au.sentTo, to)
		}
		s.au.baq = s.au.baq[:0]
	}
	if q := s.au.claimq; len(q) > 0 {
		slices.SortStableFunc(q, func(a, b claimMsg) int { return cmp.Compare(a.to, b.to) })
		for i := 0; i < len(q); {
			to := q[i].to
			s.au.cls.Entries = s.au.cls.Entries[:0]
			for ; i < len(q) && q[i].to == to && len(s.au.cls.Entries) < 100; i++ {
				s.au.cls.Entries = append(s.au.cls.Entries, q[i].c)
			}
			o.Commit(to, wire.ClassControl, wire.AppendClaims(o.Buf(), &s.au.cls))
		}
		s.au.claimq = s.au.claimq[:0]
	}
	if q := s.au.wackq; len(q) > 0 {
		slices.SortStableFunc(q, func(a, b wackMsg) int { return cmp.Or(cmp.Compare(a.to, b.to), cmp.Compare(a.inc, b.inc)) })
		for i := 0; i < len(q); {
			to, inc := q[i].to, q[i].inc
			s.au.was = wire.WriteAcks{Inc: inc, Entries: s.au.was.Entries[:0]}
			for ; i < len(q) && q[i].to == to && q[i].inc == inc && len(s.au.was.Entries) < 100; i++ {
				s.au.was.Entries = append(s.au.was.Entries, q[i].a)
			}
			o.Commit(to, wire.ClassUpdate, wire.AppendWriteAcks(o.Buf(), &s.au.was))
		}
		s.au.wackq = s.au.wackq[:0]
	}
}

// sortedIDs returns the keys of m in increasing order.
func sortedIDs[V any](m map[world.ObjectID]V) []world.ObjectID {
	if len(m) == 0 {
		return nil
	}
	ids := make([]world.ObjectID, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// authQueued reports whether authority messages wait to be sent.
func (s *Store) authQueued() bool {
	a := &s.au
	return len(a.whereq)+len(a.pendMig)+len(a.epochq)+len(a.backupq)+len(a.baq)+len(a.claimq)+len(a.wackq)+len(a.health.probeq) > 0
}

// FlushAuthority commits at once the authority messages queued outside a
// frame (a migration the driver asked for): the caller drains the node
// afterwards.
func (s *Store) FlushAuthority(now time.Duration, o *wire.Outbox) {
	s.au.now = now
	s.encodeAuth(now, o)
}
