package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"time"

	"github.com/overworld/overworld/world"
)

// Version is the codec version every payload starts with. A node rejects a
// payload of another version as malformed. Version 2 added LocPub.At;
// version 3 TypeDormant.
const Version byte = 3

// Type is the type byte of one frame (one message) inside a payload.
type Type uint8

// Message types. The numbering is the wire format; append only.
const (
	TypeUpdates   Type = iota + 1 // primary → replica holder: deltas or full states
	TypeAcks                      // replica holder → primary: versions applied
	TypeWrites                    // replica holder → primary: tentative writes
	TypeRegister                  // replica holder → primary: request or keep a replica
	TypeDrop                      // either way: this replica is no longer kept
	TypeDelete                    // primary → replica holder: the object is gone
	TypeHandoff                   // client → server: become the primary of these objects
	TypePublish                   // publisher → rendezvous: object locations (soft state)
	TypeSubscribe                 // subscriber → rendezvous: interest boxes (soft state)
	TypeMatch                     // rendezvous → subscriber: matched publications

	// Ring messages (internal/ring; bodies in ring.go).
	TypeRingRoute          // a message routed toward a key (RingRoute)
	TypeRingJoinReply      // owner → joiner: accepted (with neighbours) or refused
	TypeRingStabilize      // node → successor: "I may be your predecessor"
	TypeRingStabilizeReply // successor → node: its predecessor and successors
	TypeRingLeave          // leaver → neighbours and recent probers (RingNeighbours)
	TypeRingPing           // failure-detector probe (RingProbe)
	TypeRingPong           // probe answer (RingProbe)
	TypeRingOwner          // owner → origin: who owns a key (route cache, long links)
	TypeRingSplit          // light node → heavy node: offer to split your range
	TypeRingSplitReply     // heavy node → light node: the key to join at, or no

	// The distributed locator (internal/locate's Mercury; body in locate.go).
	TypeLocate // a locator message: publication, subscription, match or hand-off (Locate)

	// TypeDormant: replica holder → primary: keep these replicas, but they
	// are out of the holder's view; send their updates at the dormant rate
	// (a TypeRegister makes them active again). Body: IDs.
	TypeDormant
	numTypes
)

var typeNames = [...]string{"", "updates", "acks", "writes", "register", "drop", "delete",
	"handoff", "publish", "subscribe", "match", "ring-route", "ring-join-reply", "ring-stabilize",
	"ring-stabilize-reply", "ring-leave", "ring-ping", "ring-pong", "ring-owner", "ring-split", "ring-split-reply", "locate",
	"dormant"}

// String returns the type's lower-case name.
func (t Type) String() string {
	if t > 0 && t < numTypes {
		return typeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Valid reports whether t is a defined message type.
func (t Type) Valid() bool { return t > 0 && t < numTypes }

// Class returns the traffic class a frame of type t is accounted under.
func (t Type) Class() Class {
	switch t {
	case TypePublish, TypeSubscribe:
		return ClassDiscovery
	case TypeMatch:
		return ClassMatching
	case TypeHandoff:
		return ClassControl
	case TypeRingRoute:
		return ClassDiscovery // the ring commits a routed frame under its payload's class
	case TypeLocate:
		return ClassMatching // sent direct: matches (hand-offs are committed as maintenance)
	}
	if t >= TypeRingJoinReply && t <= TypeRingSplitReply {
		return ClassMaintenance
	}
	return ClassUpdate
}

// Errors the decoders return (wrapped with the detail).
var (
	ErrMalformed = errors.New("wire: malformed message")
	ErrVersion   = errors.New("wire: unsupported codec version")
)

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
}

// AppendHeader appends the payload header (the version byte) to b. A
// payload is the header followed by one or more frames.
func AppendHeader(b []byte) []byte { return append(b, Version) }

// Frames iterates over the frames of one payload. The bodies it returns
// alias the payload.
type Frames struct {
	p   []byte
	err error
}

// OpenFrames checks the payload header and returns an iterator over its
// frames. An empty payload, or one of another version, is an error.
func OpenFrames(payload []byte) (Frames, error) {
	if len(payload) == 0 {
		return Frames{}, malformed("empty payload")
	}
	if payload[0] != Version {
		return Frames{}, fmt.Errorf("%w %d (want %d)", ErrVersion, payload[0], Version)
	}
	if len(payload) == 1 {
		return Frames{}, malformed("payload has no frames")
	}
	return Frames{p: payload[1:]}, nil
}

// Next returns the next frame's type and body. It returns ok=false at the
// end of the payload or on error (see Err).
func (f *Frames) Next() (t Type, body []byte, ok bool) {
	if f.err != nil || len(f.p) == 0 {
		return 0, nil, false
	}
	t = Type(f.p[0])
	if !t.Valid() {
		f.err = malformed("unknown message type %d", f.p[0])
		return 0, nil, false
	}
	n, k := binary.Uvarint(f.p[1:])
	if k <= 0 || n > uint64(len(f.p)-1-k) {
		f.err = malformed("%v frame length truncated or beyond the payload", t)
		return 0, nil, false
	}
	body = f.p[1+k : 1+k+int(n)]
	f.p = f.p[1+k+int(n):]
	return t, body, true
}

// Err returns the error that stopped Next, if any.
func (f *Frames) Err() error { return f.err }

// beginFrame appends a frame's type byte and reserves one byte for its
// length; endFrame patches the length in (shifting the body when the length
// needs more than one byte). Together they let encoders stream a body of
// unknown length without a second buffer.
func beginFrame(b []byte, t Type) ([]byte, int) {
	b = append(b, byte(t), 0)
	return b, len(b)
}

func endFrame(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	var tmp [binary.MaxVarintLen64]byte
	l := binary.PutUvarint(tmp[:], uint64(n))
	for range l - 1 {
		b = append(b, 0)
	}
	copy(b[start-1+l:], b[start:start+n])
	copy(b[start-1:], tmp[:l])
	return b
}

// reader decodes primitives from a frame body, remembering the first error.
type reader struct {
	p   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = malformed("%s truncated or overlong", what)
	}
	r.p = nil
}

func (r *reader) uvarint(what string) uint64 {
	// A one-byte varint inline (IDs, counts, flags, small deltas: most of
	// them); after an error r.p is empty, so this never reads past one.
	if p := r.p; len(p) != 0 && p[0] < 0x80 {
		r.p = p[1:]
		return uint64(p[0])
	}
	return r.uvarintLong(what)
}

// uvarintLong is uvarint's general case.
func (r *reader) uvarintLong(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.p)
	if k <= 0 {
		r.fail(what)
		return 0
	}
	r.p = r.p[k:]
	return v
}

func (r *reader) u32(what string) uint32 {
	v := r.uvarint(what)
	if v > math.MaxUint32 && r.err == nil {
		r.err = malformed("%s %d exceeds 32 bits", what, v)
		r.p = nil
		return 0
	}
	return uint32(v)
}

// bytes reads a length-prefixed byte string. what names it in errors; it
// must be a constant (concatenating here would allocate on every call).
func (r *reader) bytes(what string) []byte {
	n := r.uvarint(what)
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.p)) {
		r.fail(what)
		return nil
	}
	b := r.p[:n:n]
	r.p = r.p[n:]
	return b
}

// millis reads a duration sent in whole milliseconds (appendMillis).
func (r *reader) millis(what string) time.Duration {
	v := r.uvarint(what)
	if v > math.MaxInt64/uint64(time.Millisecond) && r.err == nil {
		r.err = malformed("%s %d ms overflows a duration", what, v)
		r.p = nil
		return 0
	}
	return time.Duration(v) * time.Millisecond
}

func (r *reader) id() world.ObjectID {
	o := r.u32("object origin")
	s := r.u32("object sequence")
	return world.MakeObjectID(o, s)
}

func (r *reader) float() float64 {
	return math.Float64frombits(bits.ReverseBytes64(r.uvarint("coordinate")))
}

func (r *reader) dims() int {
	if r.err != nil {
		return 0
	}
	if len(r.p) == 0 {
		r.fail("dimension count")
		return 0
	}
	d := int(r.p[0])
	r.p = r.p[1:]
	if d < 1 || d > world.MaxDims {
		r.err = malformed("dimension count %d (want 1 to %d)", d, world.MaxDims)
		r.p = nil
		return 0
	}
	return d
}

func (r *reader) more() bool { return r.err == nil && len(r.p) > 0 }

func appendID(b []byte, id world.ObjectID) []byte {
	b = binary.AppendUvarint(b, uint64(id.Origin()))
	return binary.AppendUvarint(b, uint64(id.Seq()))
}

// appendFloat writes a float64 exactly as the uvarint of its byte-reversed
// bits: values with short mantissas (quantised positions such as 123.453125)
// leave the low bytes zero and take 3 to 5 bytes instead of 8.
func appendFloat(b []byte, v float64) []byte {
	return binary.AppendUvarint(b, bits.ReverseBytes64(math.Float64bits(v)))
}

// appendMillis writes d in whole milliseconds, rounded down (negative as
// zero): a time that needs no finer resolution in 3 bytes instead of 5.
func appendMillis(b []byte, d time.Duration) []byte {
	return binary.AppendUvarint(b, uint64(max(d, 0)/time.Millisecond))
}

// appendMillisUp writes d in whole milliseconds, rounded up (negative as
// zero): a lifetime never shrinks to nothing on the way.
func appendMillisUp(b []byte, d time.Duration) []byte {
	return binary.AppendUvarint(b, uint64((max(d, 0)+time.Millisecond-1)/time.Millisecond))
}

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}
