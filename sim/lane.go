package sim

import (
	"time"

	"github.com/overworld/overworld/wire"
)

// A lane processes events: the serial loop has one that pushes new events
// and calls the observer at once; a parallel window gives each worker one
// that collects them, to be merged when the window ends. Everything a lane
// changes while a window runs is its own (its clock, traffic and buffers)
// or belongs to the node whose event it runs (that node's core, counters,
// sequence and network randomness).
type lane struct {
	s      *Sim
	now    int64
	tr     *traffic
	buf    []wire.Packet
	direct bool // push and observe at once (the serial lane)

	out     []entry    // events scheduled during a window for later windows
	obs     []obsEvent // observer events of a window
	own     traffic    // the traffic tr points to, for a worker lane
	local   heap       // events scheduled during a window inside it, in the cluster
	cluster int32      // the cluster whose events the lane runs
	wEnd    int64      // the window's end
	last    int64      // the latest event time the lane ran
	events  uint64     // events run by a worker lane in the current window
}

// obsEvent is an observer event held back until its window ends, with
// the position of the event that caused it in the run's order.
type obsEvent struct {
	at  int64
	seq uint64
	ev  Event
}

// Event sequence numbers order the events due at one instant. They must
// not depend on how events are spread over workers, so they are not a
// global counter: an event scheduled while node i's event runs (its next
// tick, the packets it sends) gets (i+1)<<seqShift plus a count of the
// events node i has scheduled so far; one scheduled from outside any
// node's event (a scenario function, a partition's healing) gets
// maxNodes<<seqShift plus a global count, so that at one instant ticks and
// deliveries come first, in order of their node, then scenario events in
// the order they were scheduled.
const (
	seqShift = 40
	maxNodes = 1<<(64-seqShift) - 1
)

// nodeSeq returns the next sequence number of an event scheduled by node i.
func (s *Sim) nodeSeq(i int32) uint64 {
	n := &s.nodes[i]
	n.seq++
	return uint64(i+1)<<seqShift | n.seq
}

// globalSeq returns the next sequence number of a scenario event.
func (s *Sim) globalSeq() uint64 {
	s.gseq++
	return maxNodes<<seqShift | s.gseq
}

func (l *lane) push(at int64, e entry) {
	if l.direct {
		l.s.q.push(at, e)
		return
	}
	e.at = at
	if at < l.wEnd && l.s.par.cluster[e.ref] == l.cluster {
		// Only deliveries can land inside the window (L ≤ the frame
		// period), and only within the cluster (L ≤ the delay between
		// clusters).
		l.local.push(e)
		return
	}
	l.out = append(l.out, e)
}

func (l *lane) observe(ev *entry, x Event) {
	if l.direct {
		l.s.events++
	} else {
		l.events++
	}
	if l.s.observer == nil || l.s.observed&(1<<x.Kind) == 0 {
		return
	}
	if l.direct {
		l.s.observer(x)
		return
	}
	l.obs = append(l.obs, obsEvent{at: ev.at, seq: ev.seq, ev: x})
}

// dispatch runs one event. Scenario functions and heals run only on the
// serial lane (a parallel window ends before them).
func (l *lane) dispatch(ev *entry) {
	s := l.s
	switch ev.kind {
	case evTick:
		n := &s.nodes[ev.ref]
		if n.state != nodeUp || ev.gen != n.gen {
			return // the tick chain ends with the node's incarnation
		}
		n.ticks++
		n.ticked.Tick(time.Duration(l.now))
		l.drain(ev.ref)
		l.push(l.now+s.period, entry{kind: evTick, ref: ev.ref, seq: s.nodeSeq(ev.ref), gen: ev.gen})
		l.observe(ev, Event{Kind: EventTick, At: time.Duration(l.now), Node: n.id})
	case evDeliver:
		l.deliver(ev)
	case evFunc:
		fn := s.funcs[ev.ref]
		s.funcs[ev.ref] = nil
		s.freeFn = append(s.freeFn, ev.ref)
		fn(time.Duration(l.now))
		l.observe(ev, Event{Kind: EventFunc, At: time.Duration(l.now)})
	case evHeal:
		_ = s.Heal(int(ev.ref)) // already healed by hand: nothing to do
		l.observe(ev, Event{Kind: EventHeal, At: time.Duration(l.now)})
	}
}

func (l *lane) deliver(ev *entry) {
	s := l.s
	dst, p := ev.ref, ev.pkt
	n := &s.nodes[dst]
	size := uint64(len(p.Payload)) + s.header
	l.tr.inflight.Msgs--
	l.tr.inflight.Bytes -= size
	if h := s.hot[dst]; h.state != nodeUp || h.gen != ev.gen {
		// Down, or restarted since the packet was sent: it was for the
		// incarnation that crashed.
		l.tr.dropped(DropDown, l.now, size)
		l.observe(ev, Event{Kind: EventDrop, At: time.Duration(l.now), Node: n.id, From: p.From, Class: p.Class, Bytes: int(size)})
		return
	}
	if p.Parts == nil {
		n.in[p.Class].add(size)
	} else {
		addParts(&n.in, &p, s.header)
	}
	n.received(l.now/int64(time.Second)-n.firstSec, size)
	l.tr.received(l.now, size)
	n.core.Step(time.Duration(l.now), p)
	l.drain(dst)
	l.observe(ev, Event{Kind: EventDeliver, At: time.Duration(l.now), Node: n.id, From: p.From, Class: p.Class, Bytes: int(size)})
}

// drain collects a node's output and sends it.
func (l *lane) drain(src int32) {
	buf := l.s.nodes[src].core.Drain(l.buf[:0])
	for i := range buf {
		l.send(src, buf[i])
	}
	clear(buf) // drop payload references
	l.buf = buf[:0]
}

// send routes one packet from node src: validation, accounting, partition,
// loss, duplication, delay.
func (l *lane) send(src int32, p wire.Packet) {
	s := l.s
	n := &s.nodes[src]
	if p.From != n.id || !p.Class.Valid() {
		l.tr.reject(n.id, p)
		return
	}
	size := uint64(len(p.Payload)) + s.header
	if p.Parts == nil {
		n.out[p.Class].add(size)
		l.tr.sent(l.now, p.Class, size)
	} else {
		sizes := addParts(&n.out, &p, s.header)
		l.tr.sentParts(l.now, p.Class, &sizes)
	}
	bump(&n.secOut, l.now/int64(time.Second)-n.firstSec, size)
	dst, ok := s.lookup(p.To)
	if !ok {
		l.tr.dropped(DropUnknown, l.now, size)
		return
	}
	dh := s.hot[dst]
	if dh.state != nodeUp {
		l.tr.dropped(DropDown, l.now, size)
		return
	}
	for k := range s.parts {
		side := s.parts[k].side
		if int(src) < len(side) && int(dst) < len(side) {
			a, b := side[src], side[dst]
			if a >= 0 && b >= 0 && a != b {
				l.tr.dropped(DropPartition, l.now, size)
				return
			}
		}
	}
	if s.cfg.Loss > 0 && n.rng.Float64() < s.cfg.Loss {
		l.tr.dropped(DropLoss, l.now, size)
		return
	}
	base := int64(s.cfg.SameSite)
	if a, b := n.site, dh.site; a != b {
		base = int64(s.sites.OneWay(int(a), int(b)))
	}
	if s.cfg.Duplicate > 0 && n.rng.Float64() < s.cfg.Duplicate {
		cp := p
		cp.Payload = append([]byte(nil), p.Payload...)
		l.tr.duplicated(l.now, size)
		l.schedule(src, dst, dh.gen, base, cp, size)
	}
	l.schedule(src, dst, dh.gen, base, p, size)
}

// schedule sends p from node src to incarnation gen of node dst, base
// plus jitter (and, held back for reordering, an extra delay) from now.
func (l *lane) schedule(src, dst int32, gen uint16, base int64, p wire.Packet, size uint64) {
	at := l.now + base
	if l.s.jitter > 0 {
		at += int64(l.s.nodes[src].rng.ExpFloat64() * l.s.jitter)
	}
	if r := l.s.cfg.Reorder; r > 0 {
		if rng := l.s.nodes[src].rng; rng.Float64() < r {
			at += rng.Int64N(int64(l.s.cfg.ReorderDelay) + 1)
		}
	}
	l.tr.inflight.add(size)
	l.push(at, entry{kind: evDeliver, ref: dst, pkt: p, seq: l.s.nodeSeq(src), gen: gen})
}

// bump adds size to the per-second bucket sec of a series, growing it.
func bump(series *[]uint32, sec int64, size uint64) {
	for int64(len(*series)) <= sec {
		*series = append(*series, 0)
	}
	(*series)[sec] += uint32(size)
}

// addParts counts a packet of several classes (wire.Packet.Parts): its
// bytes split by class (the header under p.Class), the message under
// p.Class; it returns the split.
func addParts(to *[wire.NumClasses]Counts, p *wire.Packet, header uint64) [wire.NumClasses]uint64 {
	sizes := p.ClassSizes(header)
	for c, b := range sizes {
		to[c].Bytes += b
	}
	to[p.Class].Msgs++
	return sizes
}
