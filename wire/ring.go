package wire

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// Ring messages (internal/ring). Keys are points of the circular uint64 key
// space and travel as 8 fixed big-endian bytes (ring keys are spread over
// the whole space, so a uvarint would be longer), except a RingRoute's Key
// and Hi, which the locator rounds (appendKey); counts, hops and loads as
// uvarints. Fields a message's kind does not use are not sent and decode as
// zero, so decode(encode(m)) == m for every valid m.

// RingPeer is one ring member: its node and its key (it owns the keys
// after its predecessor's key up to and including Key).
type RingPeer struct {
	ID  NodeID
	Key uint64
}

// hintShift: a RingRoute's Hint travels as the top 64 − hintShift bits of
// a key (three bytes).
const hintShift = 40

// HintOf returns the part of key k a RingRoute's Hint carries: its top 24
// bits, the rest zero. Ring keys are spread over the whole space, so two
// members' keys share their top 24 bits with odds of about n/2^24 for a
// ring of n; the ring compares hints with HintOf of its own keys.
func HintOf(k uint64) uint64 { return k &^ (1<<hintShift - 1) }

// A data or range route's class travels in the low classBits bits of its
// hops' varint.
const (
	classBits = 3
	classMask = 1<<classBits - 1
)

// RouteKind says what a RingRoute carries.
type RouteKind uint8

// Route kinds. The numbering is the wire format; append only.
const (
	RouteData   RouteKind = iota // an upper-layer payload for the owner of Key
	RouteRange                   // an upper-layer payload for every owner of a key in [Key, Hi]
	RouteJoin                    // Origin asks to join the ring at Key (Tag 1: the receiver picks the key)
	RouteLookup                  // Origin asks who owns Key (answered with a RingOwner carrying Tag)
	numRouteKinds
)

// RingRoute is one message on its way to the owner of Key (for RouteRange,
// to every owner of a key in the clockwise range [Key, Hi]).
type RingRoute struct {
	Kind   RouteKind
	Walk   bool   // RouteRange: the owner of Key was reached; now walking successors
	Cached bool   // a route-cache hop was taken (no further cache hop is taken)
	Final  bool   // the sender believes the receiver owns Key
	Ack    bool   // the owner confirms itself to the origin (RingOwner) even after one hop
	Back   bool   // RouteRange walk: going back to a node the walk skipped (Hint: the key the walk came from)
	Leaf   bool   // RouteRange walk: a copy fanned out to one successor, which delivers it and does not walk on
	Hint   uint64 // Final: the receiver's key as the sender knew it, cut to HintOf (walks: the key the walk came from)
	Origin NodeID // the node that routed the message first
	Key    uint64
	Hi     uint64 // RouteRange: the last key of the range (clockwise from Key)
	Hops   uint32 // hops taken so far, this one included
	Tag    uint32 // RouteLookup: the origin's tag; RouteJoin: 1 asks the receiver to pick the key
	Class  Class  // RouteData and RouteRange: the payload's traffic class
	Data   []byte // RouteData and RouteRange: the payload (aliases the body when decoded)
}

const (
	routeKindMask = 0x03
	routeWalk     = 0x04
	routeCached   = 0x08
	routeFinal    = 0x10
	routeAck      = 0x20
	routeBack     = 0x40
	routeLeaf     = 0x80
)

// AppendRingRoute appends m as one frame. Fields m.Kind does not use are
// not sent.
func AppendRingRoute(b []byte, m *RingRoute) []byte {
	b, start := beginFrame(b, TypeRingRoute)
	f := byte(m.Kind) & routeKindMask
	if m.Walk && m.Kind == RouteRange {
		f |= routeWalk
	}
	if m.Cached {
		f |= routeCached
	}
	if m.Final {
		f |= routeFinal
	}
	if m.Ack {
		f |= routeAck
	}
	if m.Back && m.Walk && m.Kind == RouteRange {
		f |= routeBack
	}
	if m.Leaf && m.Walk && m.Kind == RouteRange {
		f |= routeLeaf
	}
	b = append(b, f)
	b = binary.AppendUvarint(b, uint64(m.Origin))
	b = appendKey(b, m.Key)
	if m.Final {
		h := m.Hint >> hintShift
		b = append(b, byte(h>>16), byte(h>>8), byte(h))
	}
	if m.Kind == RouteRange {
		b = appendKey(b, m.Hi+1)
	}
	switch m.Kind {
	case RouteJoin, RouteLookup:
		b = binary.AppendUvarint(b, uint64(m.Hops))
		b = binary.AppendUvarint(b, uint64(m.Tag))
	case RouteData, RouteRange:
		// The class shares the hops' varint: one byte under 16 hops.
		b = binary.AppendUvarint(b, uint64(m.Hops)<<classBits|uint64(m.Class&classMask))
		b = append(b, m.Data...) // the rest of the frame
	}
	return endFrame(b, start)
}

// Decode decodes a RingRoute frame body into m.
func (m *RingRoute) Decode(body []byte) error {
	r := reader{p: body}
	*m = RingRoute{}
	f := r.byte1("route flags")
	if r.err != nil {
		return r.err
	}
	if f&^(routeKindMask|routeWalk|routeCached|routeFinal|routeAck|routeBack|routeLeaf) != 0 {
		return malformed("route flags %#x", f)
	}
	if f&(routeBack|routeLeaf) != 0 && f&routeWalk == 0 {
		return malformed("back or leaf flag without walk flag")
	}
	m.Kind = RouteKind(f & routeKindMask)
	if f&routeWalk != 0 && m.Kind != RouteRange {
		return malformed("walk flag on a %d route", m.Kind)
	}
	m.Walk, m.Cached, m.Final, m.Ack = f&routeWalk != 0, f&routeCached != 0, f&routeFinal != 0, f&routeAck != 0
	m.Back, m.Leaf = f&routeBack != 0, f&routeLeaf != 0
	m.Origin = NodeID(r.u32("route origin"))
	m.Key = r.key("route key")
	if m.Final {
		h := r.fixed(3, "route hint")
		if len(h) == 3 {
			m.Hint = (uint64(h[0])<<16 | uint64(h[1])<<8 | uint64(h[2])) << hintShift
		}
	}
	if m.Kind == RouteRange {
		m.Hi = r.key("range end") - 1
	}
	switch m.Kind {
	case RouteJoin, RouteLookup:
		m.Hops = r.u32("route hops")
		m.Tag = r.u32("route tag")
	case RouteData, RouteRange:
		hc := r.uvarint("route hops and class")
		if hc>>classBits > math.MaxUint32 && r.err == nil {
			return malformed("route hops %d", hc>>classBits)
		}
		c := Class(hc & classMask)
		if r.err == nil && !c.Valid() {
			return malformed("route class %d", c)
		}
		m.Hops, m.Class = uint32(hc>>classBits), c
		m.Data, r.p = r.p[:len(r.p):len(r.p)], nil // the rest of the frame
	}
	if r.err == nil && len(r.p) > 0 {
		return malformed("%d bytes after a route", len(r.p))
	}
	return r.err
}

// RingJoinReply answers a RouteJoin: refused (the key is taken or no key
// could be picked), or accepted with the joiner's key, predecessor and
// successor list (the accepting owner first).
type RingJoinReply struct {
	Accepted bool
	Key      uint64
	Pred     RingPeer
	Succs    []RingPeer
}

// AppendRingJoinReply appends m as one frame (a refusal sends only Key).
func AppendRingJoinReply(b []byte, m *RingJoinReply) []byte {
	b, start := beginFrame(b, TypeRingJoinReply)
	b = appendBool(b, m.Accepted)
	b = binary.BigEndian.AppendUint64(b, m.Key)
	if m.Accepted {
		b = appendPeer(b, m.Pred)
		for _, p := range m.Succs {
			b = appendPeer(b, p)
		}
	}
	return endFrame(b, start)
}

// Decode decodes a RingJoinReply frame body into m.
func (m *RingJoinReply) Decode(body []byte) error {
	r := reader{p: body}
	succs := m.Succs[:0]
	*m = RingJoinReply{}
	m.Accepted = r.bool("join accepted")
	m.Key = r.u64("join key")
	if !m.Accepted {
		if r.err == nil && len(r.p) > 0 {
			return malformed("%d bytes after a join refusal", len(r.p))
		}
		return r.err
	}
	m.Pred = r.peer()
	for r.more() {
		p := r.peer()
		if r.err != nil {
			return r.err
		}
		succs = append(succs, p)
	}
	if len(succs) > 0 {
		m.Succs = succs
	}
	return r.err
}

// RingStabilize is sent by a node to its successor every stabilisation
// period: Key is the sender's key, offered as the receiver's predecessor.
type RingStabilize struct{ Key uint64 }

// AppendRingStabilize appends m as one frame.
func AppendRingStabilize(b []byte, m *RingStabilize) []byte {
	b, start := beginFrame(b, TypeRingStabilize)
	b = binary.BigEndian.AppendUint64(b, m.Key)
	return endFrame(b, start)
}

// Decode decodes a RingStabilize frame body into m.
func (m *RingStabilize) Decode(body []byte) error {
	r := reader{p: body}
	m.Key = r.u64("stabilize key")
	if r.err == nil && len(r.p) > 0 {
		return malformed("%d bytes after a stabilize", len(r.p))
	}
	return r.err
}

// RingNeighbours is the body of StabilizeReply and Leave frames: the
// sender's key, its predecessor (if it knows one) and its successor list.
type RingNeighbours struct {
	Key     uint64
	HasPred bool
	Pred    RingPeer // zero unless HasPred
	Succs   []RingPeer
}

// AppendRingNeighbours appends m as one frame of type t
// (TypeRingStabilizeReply or TypeRingLeave).
func AppendRingNeighbours(b []byte, t Type, m *RingNeighbours) []byte {
	b, start := beginFrame(b, t)
	b = binary.BigEndian.AppendUint64(b, m.Key)
	b = appendBool(b, m.HasPred)
	if m.HasPred {
		b = appendPeer(b, m.Pred)
	}
	for _, p := range m.Succs {
		b = appendPeer(b, p)
	}
	return endFrame(b, start)
}

// Decode decodes a StabilizeReply or Leave frame body into m.
func (m *RingNeighbours) Decode(body []byte) error {
	r := reader{p: body}
	succs := m.Succs[:0]
	*m = RingNeighbours{}
	m.Key = r.u64("neighbours key")
	m.HasPred = r.bool("has predecessor")
	if m.HasPred {
		m.Pred = r.peer()
	}
	for r.more() {
		p := r.peer()
		if r.err != nil {
			return r.err
		}
		succs = append(succs, p)
	}
	if len(succs) > 0 {
		m.Succs = succs
	}
	return r.err
}

// RingProbe is the body of Ping and Pong frames: a sequence number the
// answer echoes, the sender's key and its load (publications and
// subscriptions routed to it per second, in thousandths).
type RingProbe struct {
	Seq  uint64
	Key  uint64
	Load uint64
}

// AppendRingProbe appends m as one frame of type t (TypeRingPing or
// TypeRingPong).
func AppendRingProbe(b []byte, t Type, m *RingProbe) []byte {
	b, start := beginFrame(b, t)
	b = binary.AppendUvarint(b, m.Seq)
	b = binary.BigEndian.AppendUint64(b, m.Key)
	b = binary.AppendUvarint(b, m.Load)
	return endFrame(b, start)
}

// Decode decodes a Ping or Pong frame body into m.
func (m *RingProbe) Decode(body []byte) error {
	r := reader{p: body}
	m.Seq = r.uvarint("probe sequence")
	m.Key = r.u64("probe key")
	m.Load = r.uvarint("probe load")
	if r.err == nil && len(r.p) > 0 {
		return malformed("%d bytes after a probe", len(r.p))
	}
	return r.err
}

// RingOwner tells the origin of a routed message who owns Key: Owner, whose
// range is (Lo, Owner.Key]. Tag echoes a RouteLookup's tag (0 for the
// answer to a data route, which fills the route cache); Hops is how many
// hops the route took. Key travels only with a lookup's answer (Tag not
// 0): the route cache takes the range, and a data route's answer decodes
// with Key 0.
type RingOwner struct {
	Tag   uint32
	Key   uint64
	Owner RingPeer
	Lo    uint64
	Hops  uint32
}

// AppendRingOwner appends m as one frame.
func AppendRingOwner(b []byte, m *RingOwner) []byte {
	b, start := beginFrame(b, TypeRingOwner)
	b = binary.AppendUvarint(b, uint64(m.Tag))
	if m.Tag != 0 {
		b = binary.BigEndian.AppendUint64(b, m.Key)
	}
	b = appendPeer(b, m.Owner)
	b = binary.BigEndian.AppendUint64(b, m.Lo)
	b = binary.AppendUvarint(b, uint64(m.Hops))
	return endFrame(b, start)
}

// Decode decodes a RingOwner frame body into m.
func (m *RingOwner) Decode(body []byte) error {
	r := reader{p: body}
	m.Tag = r.u32("owner tag")
	m.Key = 0
	if m.Tag != 0 {
		m.Key = r.u64("owner key")
	}
	m.Owner = r.peer()
	m.Lo = r.u64("owner range start")
	m.Hops = r.u32("owner hops")
	if r.err == nil && len(r.p) > 0 {
		return malformed("%d bytes after an owner", len(r.p))
	}
	return r.err
}

// RingSplit is the body of Split and SplitReply frames. A Split (light node
// → heavy node) carries the sender's Load; a SplitReply carries OK and, if
// OK, the Key the light node is to join at.
type RingSplit struct {
	OK   bool
	Key  uint64
	Load uint64
}

// AppendRingSplit appends m as one frame of type t (TypeRingSplit or
// TypeRingSplitReply).
func AppendRingSplit(b []byte, t Type, m *RingSplit) []byte {
	b, start := beginFrame(b, t)
	b = appendBool(b, m.OK)
	b = binary.BigEndian.AppendUint64(b, m.Key)
	b = binary.AppendUvarint(b, m.Load)
	return endFrame(b, start)
}

// Decode decodes a Split or SplitReply frame body into m.
func (m *RingSplit) Decode(body []byte) error {
	r := reader{p: body}
	m.OK = r.bool("split ok")
	m.Key = r.u64("split key")
	m.Load = r.uvarint("split load")
	if r.err == nil && len(r.p) > 0 {
		return malformed("%d bytes after a split", len(r.p))
	}
	return r.err
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, 1)
	}
	return append(b, 0)
}

func appendPeer(b []byte, p RingPeer) []byte {
	b = binary.AppendUvarint(b, uint64(p.ID))
	return binary.BigEndian.AppendUint64(b, p.Key)
}

func (r *reader) byte1(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.p) == 0 {
		r.fail(what)
		return 0
	}
	v := r.p[0]
	r.p = r.p[1:]
	return v
}

func (r *reader) bool(what string) bool {
	v := r.byte1(what)
	if v > 1 && r.err == nil {
		r.err = malformed("%s byte %d (want 0 or 1)", what, v)
		r.p = nil
		return false
	}
	return v == 1
}

// appendKey writes a routed key as the uvarint of its byte-reversed value:
// a key whose low bytes are zero (the locator rounds the keys it routes to
// multiples of 2^40) takes 4 bytes instead of 8; an arbitrary key takes
// up to 10. A range's end travels as the key after it (Hi+1, modulo 2^64),
// which is rounded too.
func appendKey(b []byte, k uint64) []byte {
	return binary.AppendUvarint(b, bits.ReverseBytes64(k))
}

// key reads what appendKey wrote.
func (r *reader) key(what string) uint64 { return bits.ReverseBytes64(r.uvarint(what)) }

// u64 reads eight bytes, big-endian.
func (r *reader) u64(what string) uint64 { return binary.BigEndian.Uint64(r.fixed(8, what)) }

func (r *reader) peer() RingPeer {
	id := r.u32("peer node")
	return RingPeer{ID: NodeID(id), Key: r.u64("peer key")}
}
