package replica

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Writes by ID, exactly once.
//
// A writer numbers its writes from one sequence for all objects
// (authState.wseq, never reused within an incarnation) and keeps, per
// object, the writes not yet acknowledged (wstream), resending them every
// WriteRetry to the primary it knows of (a replica's source, a location
// heard in a wire.TypeWhere, else the home of the ID). Each write names the
// previous unacknowledged write to the same object (wire.Write.Prev). The
// primary keeps, per writer and incarnation, the highest sequence it has
// applied (writerRec); it applies a write only if it is newer than that
// and its Prev is not (every earlier write is applied), so a duplicated or
// resent write is applied once and a write whose predecessor was lost
// waits for the resend. The table travels with the state to backups and
// migrations. The primary acknowledges a write once the version that
// contains it is backed up (or committed, without failover).

type wstream struct {
	to     wire.NodeID
	known  bool // to is a primary heard of (else the ID's home)
	epoch  uint32
	pend   []outWrite
	sentAt time.Duration
}

type outWrite struct {
	seq, prev uint32
	data      []byte
	made      time.Duration
	sent      bool
}

type earlyWrite struct {
	hdr wire.Writes // Writer, Inc, Hops
	w   wire.Write  // Data owned
	at  time.Duration
}

type fwdWrite struct {
	to   wire.NodeID
	hdr  wire.Writes
	w    wire.Write
	data []byte
}

type wackMsg struct {
	to  wire.NodeID
	inc uint16
	a   wire.WriteAck
}

// earlyLimit bounds the writes a node keeps for objects it does not hold
// yet (a migration on its way), and earlyTTL how long it keeps them.
const (
	earlyLimit = 4096
	earlyTTL   = time.Second
)

// queueWrite records a write to id (data: world.AppendWrite) to send to
// the node believed to hold its primary.
func (s *Store) queueWrite(id world.ObjectID, data []byte, to wire.NodeID, known bool) {
	w := s.au.outw[id]
	if w == nil {
		w = &wstream{to: to, known: known}
		s.au.outw[id] = w
	} else if known {
		w.to, w.known = to, true
	}
	prev := uint32(0)
	if n := len(w.pend); n > 0 {
		prev = w.pend[n-1].seq
	}
	s.au.wseq++
	w.pend = append(w.pend, outWrite{seq: s.au.wseq, prev: prev, data: slices.Clone(data), made: s.au.now})
	s.stats.WritesMade++
}

// WriteTo sends a write (data: world.AppendWrite against a zero State of
// the object's kind) to object id, which this node need not hold: to the
// primary it knows of, else to the home of the ID, which forwards it. It is
// applied once, and resent until acknowledged (see writes.go).
func (s *Store) WriteTo(id world.ObjectID, data []byte) error {
	if id == 0 {
		return fmt.Errorf("replica: write to the zero object ID")
	}
	if s.tomb.has(id) {
		return fmt.Errorf("%w: %v", ErrDeleted, id)
	}
	if e := s.objs.Get(id); e != nil && e.primary {
		_, err := world.ApplyWrite(e.st, data)
		if err == nil {
			s.changed(e)
		}
		return err
	}
	if l, ok := s.whereOf(id); ok {
		s.queueWrite(id, data, l.Node, true)
		return nil
	}
	if h := home(id); h != s.cfg.Self {
		s.queueWrite(id, data, h, false)
		return nil
	}
	return fmt.Errorf("%w: %v (created here, and neither held nor known elsewhere)", ErrUnknown, id)
}

// writeIn handles one received write (check validates it when this node
// holds the primary).
func (s *Store) writeIn(now time.Duration, from wire.NodeID, hdr *wire.Writes, w wire.Write, apply bool) error {
	e := s.objs.Get(w.ID)
	if e != nil && e.primary {
		if !apply {
			dst := s.scratchFor(e.kind)
			dst.CopyFrom(e.st)
			n, err := world.ApplyWrite(dst, w.Data)
			if err != nil {
				return fmt.Errorf("%v: %w", w.ID, err)
			}
			if n != len(w.Data) {
				return fmt.Errorf("%w: %v: %d bytes after the write", world.ErrCorrupt, w.ID, len(w.Data)-n)
			}
			return nil
		}
		s.applyWrite(now, e, hdr.Writer, hdr.Inc, w)
		return nil
	}
	if !apply {
		return nil
	}
	if l, ok := s.whereOf(w.ID); ok && l.Node != s.cfg.Self {
		if hdr.Hops < wire.MaxHops && l.Node != from {
			s.au.fwd = append(s.au.fwd, fwdWrite{to: l.Node, hdr: wire.Writes{Writer: hdr.Writer, Inc: hdr.Inc, Hops: hdr.Hops + 1},
				w: wire.Write{ID: w.ID, Seq: w.Seq, Prev: w.Prev}, data: slices.Clone(w.Data)})
			s.stats.WritesForwarded++
			s.forwarded(now, w.ID)
		}
		if hdr.Writer != s.cfg.Self {
			s.au.whereq = append(s.au.whereq, whereMsg{to: hdr.Writer, l: l})
		}
		return nil
	}
	if s.tomb.has(w.ID) {
		if hdr.Writer != s.cfg.Self {
			s.au.whereq = append(s.au.whereq, whereMsg{to: hdr.Writer, l: wire.Location{ID: w.ID, Epoch: s.au.tombEp[w.ID], Gone: true}})
		}
		s.stats.Ignored++
		return nil
	}
	// Not here, and not known: perhaps its migration is on its way.
	if len(s.au.early) < earlyLimit {
		s.au.early = append(s.au.early, earlyWrite{hdr: wire.Writes{Writer: hdr.Writer, Inc: hdr.Inc, Hops: hdr.Hops},
			w: wire.Write{ID: w.ID, Seq: w.Seq, Prev: w.Prev, Data: slices.Clone(w.Data)}, at: now})
	}
	s.stats.Ignored++
	return nil
}

// replayEarly applies the writes that arrived for id before it did.
func (s *Store) replayEarly(now time.Duration, id world.ObjectID) {
	kept := s.au.early[:0]
	for _, x := range s.au.early {
		if x.w.ID != id {
			kept = append(kept, x)
			continue
		}
		if e := s.objs.Get(id); e != nil && e.primary {
			if _, err := world.ApplyWrite(s.scratchCopy(e), x.w.Data); err == nil {
				s.applyWrite(now, e, x.hdr.Writer, x.hdr.Inc, x.w)
			}
		}
	}
	clear(s.au.early[len(kept):])
	s.au.early = kept
}

func (s *Store) scratchCopy(e *entry) *world.State {
	dst := s.scratchFor(e.kind)
	dst.CopyFrom(e.st)
	return dst
}

// applyWrite applies write w of writer (incarnation inc) to primary e at
// most once (see writes.go).
func (s *Store) applyWrite(now time.Duration, e *entry, writer wire.NodeID, inc uint16, w wire.Write) {
	a := e.authority()
	i, found := slices.BinarySearchFunc(a.writers, writerRec{WriterSeq: wire.WriterSeq{Node: writer, Inc: inc}}, cmpWriterNode)
	if found && a.writers[i].Inc > inc {
		s.stats.Ignored++ // an earlier incarnation's write
		return
	}
	if !found {
		a.writers = slices.Insert(a.writers, i, writerRec{WriterSeq: wire.WriterSeq{Node: writer, Inc: inc}})
	} else if a.writers[i].Inc < inc {
		a.writers[i] = writerRec{WriterSeq: wire.WriterSeq{Node: writer, Inc: inc}}
	}
	r := &a.writers[i]
	switch {
	case w.Seq <= r.Seq:
		s.stats.WritesDuplicate++
	case w.Prev > r.Seq:
		s.stats.WritesOutOfOrder++ // an earlier write was lost: wait for the resend
		return
	default:
		if _, err := world.ApplyWrite(e.st, w.Data); err != nil {
			s.stats.Ignored++
			return
		}
		s.changed(e)
		r.Seq, r.ver = w.Seq, e.version+1
		a.dirty = true
		s.stats.WritesApplied++
		s.emit(Event{Kind: EvWriteApplied, At: now, ID: e.id, Epoch: e.epoch, Writer: writer, Inc: inc, Seq: w.Seq, Version: r.ver})
	}
	for i := range a.acks {
		if p := &a.acks[i]; p.node == writer && p.inc == inc {
			p.seq, p.ver = r.Seq, r.ver // the latest covers the earlier
			return
		}
	}
	a.acks = append(a.acks, pendingAck{node: writer, inc: inc, seq: r.Seq, ver: r.ver})
}

// cmpWriterNode orders writer records by node alone: a node has one
// record, of its latest incarnation.
func cmpWriterNode(a, b writerRec) int { return cmp.Compare(a.Node, b.Node) }

// writeAcksIn handles acknowledgements of this node's writes.
func (s *Store) writeAcksIn(now time.Duration, m *wire.WriteAcks) {
	if m.Inc != s.cfg.Inc {
		s.stats.Ignored++
		return
	}
	for _, a := range m.Entries {
		w := s.au.outw[a.ID]
		if w == nil {
			continue
		}
		k := 0
		for k < len(w.pend) && w.pend[k].seq <= a.Seq {
			s.emit(Event{Kind: EvWriteAcked, At: now, ID: a.ID, Writer: s.cfg.Self, Inc: s.cfg.Inc, Seq: w.pend[k].seq})
			k++
		}
		w.pend = slices.Delete(w.pend, 0, k)
		if len(w.pend) == 0 {
			delete(s.au.outw, a.ID)
		}
	}
}

// flushWriteAcks queues the acknowledgements whose writes are safe.
func (s *Store) flushWriteAcks() {
	for _, e := range s.prims {
		a := e.auth
		if a == nil || len(a.acks) == 0 {
			continue
		}
		if r, ok := s.au.rels[e.id]; ok && r.fence {
			continue // an old backup has not given its copy up yet
		}
		safe := e.version
		if s.cfg.Failover && a.hasBackup {
			safe = a.bkAcked
		}
		kept := a.acks[:0]
		for _, p := range a.acks {
			if p.ver > safe {
				kept = append(kept, p)
				continue
			}
			if p.node == s.cfg.Self && p.inc == s.cfg.Inc {
				s.writeAcksIn(s.au.now, &wire.WriteAcks{Inc: p.inc, Entries: []wire.WriteAck{{ID: e.id, Seq: p.seq}}})
				continue
			}
			s.au.wackq = append(s.au.wackq, wackMsg{to: p.node, inc: p.inc, a: wire.WriteAck{ID: e.id, Seq: p.seq}})
		}
		a.acks = kept
	}
}

// flushWrites sends the writes due: new ones, and all of a stream's
// once its oldest unacknowledged one is WriteRetry old.
func (s *Store) flushWrites(now time.Duration, o *wire.Outbox) {
	type out struct {
		to wire.NodeID
		w  wire.Write
	}
	if len(s.au.outw) == 0 && len(s.au.fwd) == 0 && len(s.au.early) == 0 {
		return
	}
	var outs []out
	for _, id := range sortedIDs(s.au.outw) {
		w := s.au.outw[id]
		if len(w.pend) > 0 && now-w.pend[0].made > s.cfg.WriteGiveUp {
			for _, p := range w.pend {
				s.stats.WritesAbandoned++
				s.emit(Event{Kind: EvWriteAbandoned, At: now, ID: id, Seq: p.seq})
			}
			delete(s.au.outw, id)
			continue
		}
		to := w.to
		if e := s.objs.Get(id); e != nil && !e.primary && (e.version > 0 || e.epoch > 0) && e.epoch >= w.epoch {
			to = e.from
		}
		if e := s.objs.Get(id); e != nil && e.primary {
			// The object came here (a migration, a promotion): apply
			// locally, once.
			for _, p := range w.pend {
				s.applyWrite(now, e, s.cfg.Self, s.cfg.Inc, wire.Write{ID: id, Seq: p.seq, Prev: p.prev, Data: p.data})
			}
			continue
		}
		all := now-w.sentAt >= s.cfg.WriteRetry
		for i := range w.pend {
			p := &w.pend[i]
			if all || !p.sent {
				outs = append(outs, out{to: to, w: wire.Write{ID: id, Seq: p.seq, Prev: p.prev, Data: p.data}})
				if p.sent {
					s.stats.WritesResent++
				}
				p.sent = true
			}
		}
		if all {
			w.sentAt = now
		}
	}
	slices.SortStableFunc(outs, func(a, b out) int { return cmp.Compare(a.to, b.to) })
	for i := 0; i < len(outs); {
		to := outs[i].to
		s.wr = wire.Writes{Writer: s.cfg.Self, Inc: s.cfg.Inc, Entries: s.wr.Entries[:0]}
		size := 0
		for ; i < len(outs) && outs[i].to == to && size < s.cfg.MaxFrame; i++ {
			s.wr.Entries = append(s.wr.Entries, outs[i].w)
			size += len(outs[i].w.Data) + 12
		}
		s.stats.WritesSent += int64(len(s.wr.Entries))
		o.Commit(to, wire.ClassUpdate, wire.AppendWrites(o.Buf(), &s.wr))
	}
	s.encodeForwards(o)
	// Early writes nobody claimed.
	kept := s.au.early[:0]
	for _, x := range s.au.early {
		if now-x.at <= earlyTTL {
			kept = append(kept, x)
		}
	}
	clear(s.au.early[len(kept):])
	s.au.early = kept
}

// encodeForwards commits the writes this node forwards toward their
// primaries, by destination and writer.
func (s *Store) encodeForwards(o *wire.Outbox) {
	slices.SortStableFunc(s.au.fwd, func(a, b fwdWrite) int {
		if c := cmp.Compare(a.to, b.to); c != 0 {
			return c
		}
		if c := cmp.Compare(a.hdr.Writer, b.hdr.Writer); c != 0 {
			return c
		}
		if c := cmp.Compare(a.hdr.Inc, b.hdr.Inc); c != 0 {
			return c
		}
		return cmp.Compare(a.hdr.Hops, b.hdr.Hops)
	})
	for i := 0; i < len(s.au.fwd); {
		f := s.au.fwd[i]
		m := wire.Writes{Writer: f.hdr.Writer, Inc: f.hdr.Inc, Hops: f.hdr.Hops}
		for ; i < len(s.au.fwd) && s.au.fwd[i].to == f.to && s.au.fwd[i].hdr.Writer == f.hdr.Writer &&
			s.au.fwd[i].hdr.Inc == f.hdr.Inc && s.au.fwd[i].hdr.Hops == f.hdr.Hops; i++ {
			w := s.au.fwd[i].w
			w.Data = s.au.fwd[i].data
			m.Entries = append(m.Entries, w)
		}
		o.Commit(f.to, wire.ClassUpdate, wire.AppendWrites(o.Buf(), &m))
	}
	clear(s.au.fwd)
	s.au.fwd = s.au.fwd[:0]
}
