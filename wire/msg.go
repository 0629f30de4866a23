package wire

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/overworld/overworld/world"
)

// Each message type below has an encoder AppendX(b, *X) that appends one
// whole frame (type byte, length, body) to b, and a method (*X).Decode(body)
// that decodes a frame body returned by Frames.Next into the message,
// reusing the message's slices. Decoded byte slices (Update.Data,
// Write.Data, Handoff.Data) alias the body; copy them to keep them. Every
// list is encoded as entries until the end of the body, so a frame carries
// no count and an empty list is a frame with an empty (or header-only) body.

// Update is one object's new state at its primary: a delta against Base (a
// version the receiver acknowledged) or, when Base is 0, the full state of
// an object of kind Kind (Kind is sent only with full states). Base equal to
// Version with an empty delta is a keepalive: "you are up to date".
type Update struct {
	ID      world.ObjectID
	Kind    world.Kind // full states only; 0 otherwise
	Version uint64     // the state's version at the primary (>= 1)
	Base    uint64     // 0: full state; else the acknowledged version the delta applies to (<= Version)
	Data    []byte     // world.AppendDelta(base, state)
}

// Updates carries a batch of object updates from one primary node to one
// replica holder; Time is the primary's frame time the states were produced
// at (replica staleness is measured against it), sent in whole milliseconds
// (rounded down) modulo TimeWrap, in two bytes: a decoded Time is in [0,
// TimeWrap), and the receiver recovers the full time with UnwrapTime.
type Updates struct {
	Time    time.Duration
	Entries []Update
}

// AppendUpdates appends m as one frame. Entries must have Version >= 1 and
// Base either 0 or at most Version.
func AppendUpdates(b []byte, m *Updates) []byte {
	b, start := beginFrame(b, TypeUpdates)
	b = appendWrapped(b, m.Time)
	for i := range m.Entries {
		b = AppendUpdateEntry(b, &m.Entries[i])
	}
	return endFrame(b, start)
}

// BeginUpdates starts an Updates frame whose entries the caller appends one
// by one with AppendUpdateEntry (so a batch need not be built first); it
// returns the buffer and the mark to pass to EndUpdates.
func BeginUpdates(b []byte, now time.Duration) ([]byte, int) {
	b, start := beginFrame(b, TypeUpdates)
	return appendWrapped(b, now), start
}

// TimeWrap is the period Updates.Time travels modulo: 65.536 s, two bytes
// of milliseconds.
const TimeWrap = 65536 * time.Millisecond

// appendWrapped writes t in whole milliseconds modulo TimeWrap, two bytes.
func appendWrapped(b []byte, t time.Duration) []byte {
	return binary.BigEndian.AppendUint16(b, uint16(max(t, 0)/time.Millisecond))
}

// UnwrapTime returns the time congruent to t modulo TimeWrap nearest to
// now: the sender's time of an Updates frame, given the receiver's clock
// (which must be within half a TimeWrap of the sender's).
func UnwrapTime(now, t time.Duration) time.Duration {
	c := now - now%TimeWrap + t%TimeWrap
	switch {
	case c > now+TimeWrap/2:
		c -= TimeWrap
	case c <= now-TimeWrap/2:
		c += TimeWrap
	}
	return c
}

// EndUpdates finishes the frame BeginUpdates started.
func EndUpdates(b []byte, mark int) []byte { return endFrame(b, mark) }

// AppendUpdateEntry appends one update entry (inside an Updates frame).
func AppendUpdateEntry(b []byte, u *Update) []byte {
	b = appendID(b, u.ID)
	b = binary.AppendUvarint(b, u.Version)
	if u.Base == 0 {
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(u.Kind))
	} else {
		b = binary.AppendUvarint(b, u.Version-u.Base+1)
	}
	return appendBytes(b, u.Data)
}

// Decode decodes an Updates frame body into m.
func (m *Updates) Decode(body []byte) error {
	r := reader{p: body}
	m.Time = time.Duration(r.u16("update time")) * time.Millisecond
	m.Entries = m.Entries[:0]
	for r.more() {
		var u Update
		u.ID = r.id()
		u.Version = r.uvarint("version")
		back := r.uvarint("base distance")
		if r.err == nil && u.Version == 0 {
			return malformed("update of %v has version 0", u.ID)
		}
		if back == 0 {
			k := r.uvarint("kind")
			if r.err == nil && (k == 0 || k > math.MaxUint16) {
				return malformed("full state of %v has kind %d", u.ID, k)
			}
			u.Kind = world.Kind(k)
		} else {
			if r.err == nil && back-1 >= u.Version {
				return malformed("update of %v: base distance %d from version %d", u.ID, back, u.Version)
			}
			u.Base = u.Version - (back - 1)
		}
		u.Data = r.bytes("update data")
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, u)
	}
	return r.err
}

// Ack acknowledges that a replica applied version Version of object ID.
type Ack struct {
	ID      world.ObjectID
	Version uint64
}

// Acks is a batch of acknowledgements to one primary node.
type Acks struct{ Entries []Ack }

// AppendAcks appends m as one frame.
func AppendAcks(b []byte, m *Acks) []byte {
	b, start := beginFrame(b, TypeAcks)
	for _, a := range m.Entries {
		b = appendID(b, a.ID)
		b = binary.AppendUvarint(b, a.Version)
	}
	return endFrame(b, start)
}

// Decode decodes an Acks frame body into m.
func (m *Acks) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		a := Ack{ID: r.id(), Version: r.uvarint("ack version")}
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, a)
	}
	return r.err
}

// Write is a tentative write to object ID, made by a think function
// (on a replica, or by ID through the name service) and sent to the
// primary: world.AppendWrite(before, after). Seq numbers the write among
// all of its writer's (increasing, never reused within an incarnation);
// Prev is the sequence number of the writer's previous write to ID not
// yet acknowledged when this one was made (0: none). The primary applies
// a write once, only after Prev (it has applied every write up to Prev),
// and acknowledges it (WriteAcks).
type Write struct {
	ID   world.ObjectID
	Seq  uint32
	Prev uint32
	Data []byte
}

// MaxHops is how many times a write may be forwarded toward an object's
// primary (by a node it left, or the home of its ID) before it is dropped.
const MaxHops = 4

// Writes is a batch of tentative writes by one writer, in the order they
// were made. Writer and Inc name the writing node and its incarnation
// (a forwarded write keeps them: the primary acknowledges the writer);
// Hops counts the forwards so far.
type Writes struct {
	Writer  NodeID
	Inc     uint16
	Hops    uint8
	Entries []Write
}

// AppendWrites appends m as one frame.
func AppendWrites(b []byte, m *Writes) []byte {
	b, start := beginFrame(b, TypeWrites)
	b = binary.AppendUvarint(b, uint64(m.Writer))
	b = binary.AppendUvarint(b, uint64(m.Inc))
	b = append(b, m.Hops)
	for _, w := range m.Entries {
		b = appendID(b, w.ID)
		b = binary.AppendUvarint(b, uint64(w.Seq))
		back := uint64(0)
		if w.Prev != 0 {
			back = uint64(w.Seq - w.Prev)
		}
		b = binary.AppendUvarint(b, back)
		b = appendBytes(b, w.Data)
	}
	return endFrame(b, start)
}

// Decode decodes a Writes frame body into m.
func (m *Writes) Decode(body []byte) error {
	r := reader{p: body}
	m.Writer = NodeID(r.u32("writer"))
	inc := r.uvarint("writer incarnation")
	if r.err == nil && inc > math.MaxUint16 {
		return malformed("writer incarnation %d exceeds 16 bits", inc)
	}
	m.Inc = uint16(inc)
	m.Hops = r.fixed(1, "hops")[0]
	if r.err == nil && m.Hops > MaxHops {
		return malformed("writes forwarded %d times (at most %d)", m.Hops, MaxHops)
	}
	m.Entries = m.Entries[:0]
	for r.more() {
		w := Write{ID: r.id(), Seq: r.u32("write sequence")}
		back := r.uvarint("previous write distance")
		w.Data = r.bytes("write data")
		if r.err == nil && w.Seq == 0 {
			return malformed("write to %v has sequence 0", w.ID)
		}
		if r.err == nil && back >= uint64(w.Seq) {
			return malformed("write %d to %v: previous write %d back", w.Seq, w.ID, back)
		}
		if back != 0 {
			w.Prev = w.Seq - uint32(back)
		}
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, w)
	}
	return r.err
}

// IDs is a list of objects; it is the body of Register, Drop and Delete
// frames, which differ only in their type.
type IDs struct{ IDs []world.ObjectID }

// AppendIDs appends m as one frame of type t (TypeRegister, TypeDormant,
// TypeDrop or TypeDelete).
func AppendIDs(b []byte, t Type, m *IDs) []byte {
	b, start := beginFrame(b, t)
	for _, id := range m.IDs {
		b = appendID(b, id)
	}
	return endFrame(b, start)
}

// Decode decodes a Register, Dormant, Drop or Delete frame body into m.
func (m *IDs) Decode(body []byte) error {
	r := reader{p: body}
	m.IDs = m.IDs[:0]
	for r.more() {
		id := r.id()
		if r.err != nil {
			return r.err
		}
		m.IDs = append(m.IDs, id)
	}
	return r.err
}

// Handoff hands the primaries of objects a client created to the server
// (client-server architecture): each entry is a full state (world.AppendDelta
// from nil) of an object of kind Kind. The sender becomes the objects'
// controller.
type Handoff struct {
	ID   world.ObjectID
	Kind world.Kind
	Data []byte
}

// Handoffs is a batch of handoffs.
type Handoffs struct{ Entries []Handoff }

// AppendHandoffs appends m as one frame.
func AppendHandoffs(b []byte, m *Handoffs) []byte {
	b, start := beginFrame(b, TypeHandoff)
	for _, h := range m.Entries {
		b = appendID(b, h.ID)
		b = binary.AppendUvarint(b, uint64(h.Kind))
		b = appendBytes(b, h.Data)
	}
	return endFrame(b, start)
}

// Decode decodes a Handoff frame body into m.
func (m *Handoffs) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		h := Handoff{ID: r.id()}
		k := r.uvarint("kind")
		if r.err == nil && (k == 0 || k > math.MaxUint16) {
			return malformed("handoff of %v has kind %d", h.ID, k)
		}
		h.Kind = world.Kind(k)
		h.Data = r.bytes("handoff data")
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, h)
	}
	return r.err
}

// Pub is one publication: object ID, whose primary is on node Node, is at
// Loc (the first Dims coordinates are sent; the rest are zero).
type Pub struct {
	ID   world.ObjectID
	Node NodeID
	Loc  world.Point
	// At is when Node published it, on Node's clock, in whole
	// milliseconds: of two publications of one object by one node, the
	// later At is the newer (publications of different lifetimes travel
	// in different frames and may overtake each other).
	At time.Duration
	// Vel is the object's velocity (units/s) when published, on the grid
	// VelGrid; zero for an object at rest or a publisher that sends none
	// (one byte on the wire, shared with the node's flag).
	Vel world.Point
	// Skip (publications only; empty in matches) lists nodes the
	// rendezvous need not send this publication to: they hold a replica
	// of the object already.
	Skip []NodeID
}

// Pubs is the body of Publish and Match frames: publications stored as soft
// state for TTL, over a space of Dims dimensions, with coordinates on Grid.
type Pubs struct {
	TTL  time.Duration
	Dims int
	Grid Grid
	Pubs []Pub
}

// AppendPubs appends m as one frame of type t (TypePublish or TypeMatch).
// Dims must be 1 to world.MaxDims.
func AppendPubs(b []byte, t Type, m *Pubs) []byte {
	b, start := beginFrame(b, t)
	b = appendMillisUp(b, m.TTL)
	b = appendSpace(b, m.Dims, m.Grid.Frac)
	for i := range m.Pubs {
		p := &m.Pubs[i]
		b = appendID(b, p.ID)
		// The node travels only if it is not the ID's origin (an object
		// handed off): a flag in the velocity's mask byte says which.
		own := uint32(p.Node) == p.ID.Origin()
		flag := byte(0)
		if own {
			flag = velOwnNode
		}
		b = appendVel(b, &p.Vel, m.Dims, m.Grid, flag)
		if !own {
			b = binary.AppendUvarint(b, uint64(p.Node))
		}
		b = appendPoint(b, &p.Loc, m.Dims, m.Grid)
		b = appendMillis(b, p.At)
		b = binary.AppendUvarint(b, uint64(len(p.Skip)))
		for _, n := range p.Skip {
			b = binary.AppendUvarint(b, uint64(n))
		}
	}
	return endFrame(b, start)
}

// Decode decodes a Publish or Match frame body into m. It reuses m's
// slices, the Skip lists of its earlier publications included.
func (m *Pubs) Decode(body []byte) error {
	r := reader{p: body}
	m.TTL = r.millis("ttl")
	m.Dims, m.Grid.Frac = r.space()
	old := m.Pubs[:cap(m.Pubs)]
	m.Pubs = m.Pubs[:0]
	for r.more() {
		p := Pub{ID: r.id()}
		var own bool
		p.Vel, own = r.vel(m.Dims, m.Grid)
		if own {
			p.Node = NodeID(p.ID.Origin())
		} else if p.Node = NodeID(r.u32("node")); r.err == nil && uint32(p.Node) == p.ID.Origin() {
			return malformed("publication of %v names its origin node without the flag", p.ID)
		}
		p.Loc = r.point(m.Dims, m.Grid)
		p.At = r.millis("publication time")
		if k := r.count("skip count"); k > 0 {
			if i := len(m.Pubs); i < len(old) {
				p.Skip = old[i].Skip[:0]
			}
			for range k {
				p.Skip = append(p.Skip, NodeID(r.u32("skipped node")))
			}
		}
		if r.err != nil {
			return r.err
		}
		m.Pubs = append(m.Pubs, p)
	}
	return r.err
}

// Subscribe registers the sender's interest (a union of boxes over a space
// of Dims dimensions) as soft state for TTL, replacing the sender's previous
// subscription. No boxes withdraws it. Coordinates travel on Grid.
type Subscribe struct {
	TTL   time.Duration
	Dims  int
	Grid  Grid
	Boxes []world.Box
}

// AppendSubscribe appends m as one frame. Dims must be 1 to world.MaxDims.
func AppendSubscribe(b []byte, m *Subscribe) []byte {
	b, start := beginFrame(b, TypeSubscribe)
	b = appendMillisUp(b, m.TTL)
	b = appendSpace(b, m.Dims, m.Grid.Frac)
	for i := range m.Boxes {
		b = appendBox(b, &m.Boxes[i], m.Dims, m.Grid)
	}
	return endFrame(b, start)
}

// Decode decodes a Subscribe frame body into m.
func (m *Subscribe) Decode(body []byte) error {
	r := reader{p: body}
	m.TTL = r.millis("ttl")
	m.Dims, m.Grid.Frac = r.space()
	m.Boxes = m.Boxes[:0]
	for r.more() {
		bx := r.box(m.Dims, m.Grid)
		if r.err != nil {
			return r.err
		}
		m.Boxes = append(m.Boxes, bx)
	}
	return r.err
}
