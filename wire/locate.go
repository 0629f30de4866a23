package wire

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"

	"github.com/overworld/overworld/world"
)

// LocKind says what a Locate message carries.
type LocKind uint8

// Locate kinds. The numbering is the wire format; append only.
const (
	// LocPublish: publisher → rendezvous, routed over the ring to the key
	// of each publication's location. Pubs are the publisher's objects.
	LocPublish LocKind = iota + 1
	// LocSubscribe: subscriber → rendezvous, routed over the ring to every
	// node whose range meets the key ranges of Boxes. Seq names the
	// subscription among the subscriber's; TTL is its lifetime.
	LocSubscribe
	// LocMatch: rendezvous → subscriber, sent directly: publications that
	// match a subscription, each with its remaining lifetime.
	LocMatch
	// LocHandoff: old rendezvous → new one, sent directly when a key range
	// changes owner: the soft state stored for it (Pubs and Subs, each
	// with its remaining lifetime).
	LocHandoff
	numLocKinds
)

var locKindNames = [...]string{"", "publish", "subscribe", "match", "handoff"}

// String returns the kind's lower-case name.
func (k LocKind) String() string {
	if k > 0 && k < numLocKinds {
		return locKindNames[k]
	}
	return "lockind(" + strconv.Itoa(int(k)) + ")"
}

// LocPub is one publication in a Locate message: object ID, whose primary
// is on node Node, is at Loc; the information lives TTL more. At is when
// Node published it, on Node's clock, in whole milliseconds: of two
// publications of one object by one node, the later At is the newer
// (publications of different lifetimes expire out of order).
type LocPub struct {
	ID   world.ObjectID
	Node NodeID
	Loc  world.Point
	// Vel is the object's velocity (units/s) when published, on the
	// grid VelGrid; zero for an object at rest (one byte on the wire).
	Vel world.Point
	TTL time.Duration
	At  time.Duration
	// Skip lists nodes that need no match of this publication (they hold
	// a replica already); a rendezvous does not send it to them.
	Skip []NodeID
}

// LocSub is one stored subscription in a hand-off: subscription Seq of
// node Node over Boxes, alive for TTL more.
type LocSub struct {
	Node  NodeID
	Seq   uint64
	TTL   time.Duration
	Boxes []world.Box
}

// Locate is the body of a TypeLocate frame: one message of the distributed
// object locator (Colyseus §6). A frame carries one kind; the fields a kind
// does not use are empty. Times and lifetimes travel in whole milliseconds
// (times rounded down, lifetimes up).
type Locate struct {
	Kind LocKind
	// Sent is when the publication or subscription left its origin, and
	// Routed (LocMatch) when the one that made the match reached the
	// rendezvous: the subscriber splits the discovery latency into
	// routing and matching with them. They are times of the cluster's
	// clock (the simulator's virtual time); nodes without a shared clock
	// send them but must not compare them. Sent travels in two bytes,
	// modulo TimeWrap, and Routed and every publication's At as
	// differences from it: Decode returns Sent in [0, TimeWrap), and the
	// receiver moves the three to its own clock with Unwrap.
	Sent   time.Duration
	Routed time.Duration // LocMatch
	TTL    time.Duration // LocSubscribe: the subscription's lifetime
	Seq    uint64        // LocSubscribe: the subscription's name
	Dims   int           // dimensions of every point and box (1 to world.MaxDims)
	Grid   Grid          // the grid coordinates travel on (Frac 0 to MaxFrac)
	// LocPublish (without Node: the route's origin is the publisher),
	// LocMatch (without Skip), LocHandoff.
	Pubs  []LocPub
	Boxes []world.Box // LocSubscribe
	Subs  []LocSub    // LocHandoff
}

// AppendLocate appends m as one TypeLocate frame. Dims must be 1 to
// world.MaxDims; coordinates are rounded to m.Grid (see Grid).
func AppendLocate(b []byte, m *Locate) []byte {
	b, start := beginFrame(b, TypeLocate)
	return endFrame(AppendLocateBody(b, m), start)
}

// AppendLocateBody appends m's body alone, without a frame's type and
// length: the payload of a ring route, which Decode reads as it is.
//
// A kind sends only its fields (Locate's comments say which): a
// publication's Node is not sent (the rendezvous takes the route's
// origin), Routed and every publication's At travel as differences from
// Sent, and matches carry no skip lists.
func AppendLocateBody(b []byte, m *Locate) []byte {
	b = append(b, byte(m.Kind))
	b = appendWrapped(b, m.Sent)
	switch m.Kind {
	case LocMatch:
		b = appendMillisFrom(b, m.Sent, m.Routed)
	case LocSubscribe:
		b = appendMillisUp(b, m.TTL)
		b = binary.AppendUvarint(b, m.Seq)
	}
	b = appendSpace(b, m.Dims, m.Grid.Frac)
	if m.Kind == LocSubscribe {
		return appendBoxes(b, m.Boxes, m.Dims, m.Grid)
	}
	b = binary.AppendUvarint(b, uint64(len(m.Pubs)))
	for i := range m.Pubs {
		p := &m.Pubs[i]
		b = appendID(b, p.ID)
		// The node travels only if it is not the ID's origin (an object
		// handed off): a flag in the velocity's mask byte says which.
		own := m.Kind == LocPublish || uint32(p.Node) == p.ID.Origin()
		flag := byte(0)
		if own && m.Kind != LocPublish {
			flag = velOwnNode
		}
		b = appendVel(b, &p.Vel, m.Dims, m.Grid, flag)
		if !own {
			b = binary.AppendUvarint(b, uint64(p.Node))
		}
		b = appendPoint(b, &p.Loc, m.Dims, m.Grid)
		b = appendMillisUp(b, p.TTL)
		b = appendMillisFrom(b, m.Sent, p.At)
		if m.Kind != LocMatch {
			b = binary.AppendUvarint(b, uint64(len(p.Skip)))
			for _, n := range p.Skip {
				b = binary.AppendUvarint(b, uint64(n))
			}
		}
	}
	if m.Kind != LocHandoff {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(m.Subs)))
	for i := range m.Subs {
		s := &m.Subs[i]
		b = binary.AppendUvarint(b, uint64(s.Node))
		b = binary.AppendUvarint(b, s.Seq)
		b = appendMillisUp(b, s.TTL)
		b = appendBoxes(b, s.Boxes, m.Dims, m.Grid)
	}
	return b
}

// VelGrid returns the grid velocities travel on with coordinates on g:
// eight times coarser (2^-(Frac-3) units/s; whole units/s for Frac < 3):
// 0.5 m/s on the default grid, a quarter metre over a half-second sweep.
func VelGrid(g Grid) Grid { return Grid{Frac: max(g.Frac-3, 0)} }

// velOwnNode, in a velocity's mask byte, says that the publication's node
// is its ID's origin and is not sent (matches and hand-offs).
const velOwnNode = 0x80

// The flag lies above every dimension's bit.
var _ = [1]struct{}{}[world.MaxDims/7]

// appendVel writes velocity v on VelGrid(g): a mask byte with bit d set
// for each of the first dims components that is not zero on the grid (and
// flag, velOwnNode or 0), then those components (an object at rest takes
// the one byte).
func appendVel(b []byte, v *world.Point, dims int, g Grid, flag byte) []byte {
	vg := VelGrid(g)
	var q [world.MaxDims]int64
	mask := byte(0)
	for d := range dims {
		if q[d] = vg.Point(v[d]); q[d] != 0 {
			mask |= 1 << d
		}
	}
	b = append(b, mask|flag)
	for d := range dims {
		if mask&(1<<d) != 0 {
			b = binary.AppendUvarint(b, zigzag(q[d]))
		}
	}
	return b
}

// vel reads what appendVel wrote, and whether the velOwnNode flag was set.
func (r *reader) vel(dims int, g Grid) (world.Point, bool) {
	var v world.Point
	mask := r.byte1("velocity mask")
	if r.err != nil {
		return v, false
	}
	own := mask&velOwnNode != 0
	mask &^= velOwnNode
	if mask>>dims != 0 {
		r.err = malformed("velocity mask %#x beyond %d dimensions", mask, dims)
		r.p = nil
		return v, false
	}
	vg := VelGrid(g)
	for d := range dims {
		if mask&(1<<d) != 0 {
			u := r.grid("velocity")
			if u == 0 && r.err == nil {
				r.err = malformed("velocity component %d is zero but marked", d)
				r.p = nil
			}
			v[d] = vg.Value(u)
		}
	}
	return v, own
}

// appendMillisFrom writes time t as its difference from time base, both
// in whole milliseconds, a zigzag varint.
func appendMillisFrom(b []byte, base, t time.Duration) []byte {
	return binary.AppendUvarint(b, zigzag(int64(t/time.Millisecond-base/time.Millisecond)))
}

// millisFrom reads what appendMillisFrom wrote.
func (r *reader) millisFrom(base time.Duration, what string) time.Duration {
	d := unzigzag(r.uvarint(what))
	v := int64(base/time.Millisecond) + d
	if (d < -math.MaxInt64/2 || d > math.MaxInt64/2 || v < -math.MaxInt64/int64(time.Millisecond) || v > math.MaxInt64/int64(time.Millisecond)) && r.err == nil {
		r.err = malformed("%s %d ms from %v out of range", what, d, base)
		r.p = nil
		return 0
	}
	return time.Duration(v) * time.Millisecond
}

func appendBoxes(b []byte, boxes []world.Box, dims int, g Grid) []byte {
	b = binary.AppendUvarint(b, uint64(len(boxes)))
	for i := range boxes {
		b = appendBox(b, &boxes[i], dims, g)
	}
	return b
}

// Unwrap moves the times of a decoded m (Sent, Routed, every publication's
// At) by the multiple of TimeWrap that puts Sent nearest now (see
// UnwrapTime): the receiver's clock must be within half a TimeWrap of the
// sender's.
func (m *Locate) Unwrap(now time.Duration) {
	k := UnwrapTime(now, m.Sent) - m.Sent
	if k == 0 {
		return
	}
	m.Sent += k
	if m.Kind == LocMatch {
		m.Routed += k
	}
	for i := range m.Pubs {
		m.Pubs[i].At += k
	}
}

// Decode decodes a TypeLocate frame body into m, reusing its slices. A kind
// outside the defined ones, a count larger than the body can hold, or
// trailing bytes are malformed.
func (m *Locate) Decode(body []byte) error {
	r := reader{p: body}
	if len(body) == 0 {
		return malformed("locate: empty body")
	}
	m.Kind = LocKind(body[0])
	r.p = r.p[1:]
	if m.Kind == 0 || m.Kind >= numLocKinds {
		return malformed("locate: unknown kind %d", body[0])
	}
	m.Sent = time.Duration(r.u16("sent")) * time.Millisecond
	m.Routed, m.TTL, m.Seq = 0, 0, 0
	switch m.Kind {
	case LocMatch:
		m.Routed = r.millisFrom(m.Sent, "routed")
	case LocSubscribe:
		m.TTL = r.millis("ttl")
		m.Seq = r.uvarint("seq")
	}
	m.Dims, m.Grid.Frac = r.space()
	m.Pubs, m.Boxes, m.Subs = m.Pubs[:0], m.Boxes[:0], m.Subs[:0]
	if m.Kind == LocSubscribe {
		m.Boxes = r.boxes(m.Boxes, m.Dims, m.Grid)
	} else {
		// Every entry takes at least one byte per field: a count beyond
		// the remaining bytes is a lie, refused before anything is
		// allocated.
		n := r.count("publication count")
		for range n {
			p := LocPub{ID: r.id()}
			var own bool
			p.Vel, own = r.vel(m.Dims, m.Grid)
			switch {
			case m.Kind == LocPublish:
				if own && r.err == nil {
					return malformed("locate: a publication's node flag")
				}
			case own:
				p.Node = NodeID(p.ID.Origin())
			default:
				p.Node = NodeID(r.u32("node"))
			}
			p.Loc = r.point(m.Dims, m.Grid)
			p.TTL = r.millis("publication ttl")
			p.At = r.millisFrom(m.Sent, "publication time")
			if m.Kind != LocMatch {
				if k := r.count("skip count"); k > 0 {
					p.Skip = make([]NodeID, k)
					for j := range p.Skip {
						p.Skip[j] = NodeID(r.u32("skipped node"))
					}
				}
			}
			if r.err != nil {
				return r.err
			}
			m.Pubs = append(m.Pubs, p)
		}
	}
	if m.Kind == LocHandoff {
		n := r.count("subscription count")
		for range n {
			s := LocSub{Node: NodeID(r.u32("node")), Seq: r.uvarint("seq"), TTL: r.millis("subscription ttl")}
			s.Boxes = r.boxes(nil, m.Dims, m.Grid)
			if r.err != nil {
				return r.err
			}
			m.Subs = append(m.Subs, s)
		}
	}
	if r.err == nil && len(r.p) > 0 {
		return malformed("locate: %d trailing bytes", len(r.p))
	}
	return r.err
}

// count reads an entry count that cannot exceed the bytes left.
func (r *reader) count(what string) int {
	n := r.uvarint(what)
	if r.err == nil && n > uint64(len(r.p)) {
		r.err = malformed("%s %d exceeds the %d bytes left", what, n, len(r.p))
		r.p = nil
		return 0
	}
	return int(n)
}

// boxes reads a counted list of boxes over dims dimensions onto dst; it
// returns dst unchanged (nil stays nil) for an empty list.
func (r *reader) boxes(dst []world.Box, dims int, g Grid) []world.Box {
	n := r.count("box count")
	for range n {
		bx := r.box(dims, g)
		if r.err != nil {
			return dst
		}
		dst = append(dst, bx)
	}
	return dst
}
