package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/overworld/overworld/world"
)

// Version is the codec version every payload starts with. A node rejects a
// payload of another version as malformed. Version 2 added LocPub.At;
// version 3 TypeDormant; version 4 carries the locators' coordinates on a
// fixed-point grid (see Grid); version 5 a ring route's Hint in three bytes
// (HintOf), its class in its hops' varint, and a locator message's Sent
// modulo TimeWrap (Locate.Unwrap); version 6 a directory publication's
// velocity (Pub.Vel), and its node only when that is not its ID's origin;
// version 7 the authority messages; version 8 a backup's fence
// (BackupState.Fence) and TypeClaim.
const Version byte = 8

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

	// Authority: migration, the name service, exactly-once writes, backups
	// and failure detection (bodies in authority.go).
	// (Migrate and Where travel as updates: in a packet, frames go by
	// class, and a replica request or an update must not overtake the
	// migration or the location it follows.)
	TypeMigrate    // old primary → new primary: take this object (Migrate)
	TypeMigrateAck // new primary → old primary: taken (Epochs)
	TypeWhere      // anyone → anyone: the primary of an object is at a node as of an epoch (Where)
	TypeBackup     // primary → backup: the state and metadata a failover needs (Backup)
	TypeBackupAck  // backup → primary: the version backed up (BackupAcks)
	TypeWriteAcks  // primary → writer: writes applied and backed up (WriteAcks)
	TypeHeartbeat  // node → node: alive, with its incarnation (Heartbeat)
	TypeProbe      // node → witness or suspect: is this node alive? (Probe)
	TypeProbeReply // witness or suspect → node: the answer (Probe)
	TypeRelease    // primary → former backup: stop backing these objects up (Epochs)
	TypeClaim      // a fence's new backup ↔ its former backup: may I take the object over? (Claims)
	numTypes
)

var typeNames = [...]string{"", "updates", "acks", "writes", "register", "drop", "delete",
	"handoff", "publish", "subscribe", "match", "ring-route", "ring-join-reply", "ring-stabilize",
	"ring-stabilize-reply", "ring-leave", "ring-ping", "ring-pong", "ring-owner", "ring-split", "ring-split-reply", "locate",
	"dormant", "migrate", "migrate-ack", "where", "backup", "backup-ack", "write-acks", "heartbeat",
	"probe", "probe-reply", "release", "claim"}

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
	case TypeHandoff, TypeMigrateAck, TypeBackup, TypeBackupAck, TypeHeartbeat, TypeProbe, TypeProbeReply, TypeRelease, TypeClaim:
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

// fixed reads n bytes (a fixed-width field), or returns n zero bytes
// after an error.
func (r *reader) fixed(n int, what string) []byte {
	if r.err == nil && len(r.p) >= n {
		b := r.p[:n]
		r.p = r.p[n:]
		return b
	}
	r.fail(what)
	return make([]byte, n)
}

// u16 reads two bytes, big-endian.
func (r *reader) u16(what string) uint16 { return binary.BigEndian.Uint16(r.fixed(2, what)) }

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

// space reads the byte that carries a message's dimension count (low 3
// bits) and its coordinates' grid (the upper 5: Grid's fraction bits).
func (r *reader) space() (dims, frac int) {
	if r.err != nil {
		return 0, 0
	}
	if len(r.p) == 0 {
		r.fail("dimension count")
		return 0, 0
	}
	d, f := int(r.p[0]&7), int(r.p[0]>>3)
	r.p = r.p[1:]
	switch {
	case d < 1 || d > world.MaxDims:
		r.err = malformed("dimension count %d (want 1 to %d)", d, world.MaxDims)
	case f > MaxFrac:
		r.err = malformed("coordinate grid 2^-%d (want 2^-0 to 2^-%d)", f, MaxFrac)
	default:
		return d, f
	}
	r.p = nil
	return 0, 0
}

// appendSpace writes the byte space reads.
func appendSpace(b []byte, dims, frac int) []byte {
	return append(b, byte(dims&7)|byte(min(max(frac, 0), MaxFrac))<<3)
}

// grid reads one coordinate in grid units (a zigzag varint), refusing
// values beyond ±MaxGrid.
func (r *reader) grid(what string) int64 {
	v := unzigzag(r.uvarint(what))
	if (v > MaxGrid || v < -MaxGrid) && r.err == nil {
		r.err = malformed("%s %d grid units beyond ±2^53", what, v)
		r.p = nil
		return 0
	}
	return v
}

func (r *reader) more() bool { return r.err == nil && len(r.p) > 0 }

func appendID(b []byte, id world.ObjectID) []byte {
	b = binary.AppendUvarint(b, uint64(id.Origin()))
	return binary.AppendUvarint(b, uint64(id.Seq()))
}

// MaxFrac is the finest coordinate grid locator messages carry: 2^-MaxFrac
// of the world's unit.
const MaxFrac = 24

// MaxGrid bounds a coordinate in grid units: ±2^53, where a float64 still
// holds every integer.
const MaxGrid = 1 << 53

// Grid is the fixed-point grid the locators' messages (Pubs, Subscribe,
// Locate) carry coordinates on: multiples of 2^-Frac of the world's unit,
// Frac 0 to MaxFrac, as zigzag varints. A 768 m map on a 1/16 m grid
// takes 2 or 3 bytes a coordinate instead of the 8 to 9 of a float64.
// Encoders round points to the nearest grid value and boxes outward (Min
// down, Max up), so a point inside a box stays inside it; NaN travels as 0,
// and values at or beyond ±MaxGrid units as infinities (an unbounded
// side of a box, as in a dimension an interest does not restrict).
type Grid struct{ Frac int }

// Point returns v as a grid value (in units of 2^-Frac), rounded to the
// nearest.
func (g Grid) Point(v float64) int64 { return g.clamp(math.Round(math.Ldexp(v, g.frac()))) }

// Floor returns v as a grid value, rounded down.
func (g Grid) Floor(v float64) int64 { return g.clamp(math.Floor(math.Ldexp(v, g.frac()))) }

// Ceil returns v as a grid value, rounded up.
func (g Grid) Ceil(v float64) int64 { return g.clamp(math.Ceil(math.Ldexp(v, g.frac()))) }

// Value returns the coordinate grid value u stands for (±MaxGrid and beyond
// are infinities).
func (g Grid) Value(u int64) float64 {
	switch {
	case u >= MaxGrid:
		return math.Inf(1)
	case u <= -MaxGrid:
		return math.Inf(-1)
	}
	return math.Ldexp(float64(u), -g.frac())
}

func (g Grid) frac() int { return min(max(g.Frac, 0), MaxFrac) }

func (Grid) clamp(s float64) int64 {
	switch {
	case s >= MaxGrid:
		return MaxGrid
	case s <= -MaxGrid:
		return -MaxGrid
	case s == s:
		return int64(s)
	}
	return 0 // NaN
}

// appendPoint writes the first dims coordinates of p, rounded to the grid.
func appendPoint(b []byte, p *world.Point, dims int, g Grid) []byte {
	for d := range dims {
		b = binary.AppendUvarint(b, zigzag(g.Point(p[d])))
	}
	return b
}

// point reads what appendPoint wrote.
func (r *reader) point(dims int, g Grid) world.Point {
	var p world.Point
	for d := range dims {
		p[d] = g.Value(r.grid("coordinate"))
	}
	return p
}

// appendBox writes box x rounded outward to the grid, per dimension as
// its Min, then its extent Max - Min (small for a small box). An unbounded
// side (at ±MaxGrid, as an infinity arrives) takes one byte: a Min code of
// 0 is -MaxGrid, an extent code of 0 reaches +MaxGrid; other codes are the
// zigzag value plus one.
func appendBox(b []byte, x *world.Box, dims int, g Grid) []byte {
	for d := range dims {
		lo, hi := g.Floor(x.Min[d]), g.Ceil(x.Max[d])
		if lo == -MaxGrid {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, zigzag(lo)+1)
		}
		if hi == MaxGrid {
			b = append(b, 0)
		} else {
			b = binary.AppendUvarint(b, zigzag(hi-lo)+1)
		}
	}
	return b
}

// box reads what appendBox wrote.
func (r *reader) box(dims int, g Grid) world.Box {
	var x world.Box
	for d := range dims {
		lo := int64(-MaxGrid)
		if u := r.uvarint("box minimum"); u > 0 {
			lo = unzigzag(u - 1)
		}
		hi := int64(MaxGrid)
		if u := r.uvarint("box extent"); u > 0 {
			hi = lo + min(max(unzigzag(u-1), -4*MaxGrid), 4*MaxGrid)
		}
		if (lo > MaxGrid || lo < -MaxGrid || hi > MaxGrid || hi < -MaxGrid) && r.err == nil {
			r.err = malformed("box [%d, %d] grid units beyond ±2^53", lo, hi)
			r.p = nil
		}
		x.Min[d], x.Max[d] = g.Value(lo), g.Value(hi)
	}
	return x
}

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

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
