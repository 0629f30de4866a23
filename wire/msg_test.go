package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// The generators below build random valid messages; every test and fuzz
// target checks decode(encode(m)) == m on them, and that decoding arbitrary
// bytes never panics and, when it succeeds, re-encodes to the same message.

func randID(r *rand.Rand) world.ObjectID {
	switch r.IntN(3) {
	case 0:
		return world.MakeObjectID(r.Uint32N(8), r.Uint32N(300)+1)
	case 1:
		return world.ObjectID(r.Uint64())
	}
	return 0
}

func randBytes(r *rand.Rand) []byte {
	b := make([]byte, r.IntN(40))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randGrid returns a random coordinate grid.
func randGrid(r *rand.Rand) Grid {
	if r.IntN(2) == 0 {
		return Grid{Frac: 4}
	}
	return Grid{Frac: r.IntN(MaxFrac + 1)}
}

// randCoord returns a random coordinate on grid g (as every coordinate
// travels), sometimes at the grid's ends.
func randCoord(r *rand.Rand, g Grid) float64 {
	switch r.IntN(8) {
	case 0:
		return g.Value(r.Int64N(2*MaxGrid+1) - MaxGrid)
	case 1:
		return g.Value(MaxGrid * int64(1-2*r.IntN(2)))
	}
	return g.Value(g.Point((r.Float64() - 0.5) * 4000))
}

// randDur returns a random duration in whole milliseconds (as every
// duration travels), sometimes as long as a duration can be.
func randDur(r *rand.Rand) time.Duration {
	if r.IntN(4) == 0 {
		return time.Duration(r.Int64()).Truncate(time.Millisecond)
	}
	return time.Duration(r.Int64N(int64(10 * time.Minute))).Truncate(time.Millisecond)
}

func randN(r *rand.Rand) int {
	if r.IntN(5) == 0 {
		return 0
	}
	return 1 + r.IntN(12)
}

func randUpdates(r *rand.Rand) *Updates {
	m := &Updates{Time: randDur(r) % TimeWrap}
	if m.Time < 0 {
		m.Time += TimeWrap
	}
	for range randN(r) {
		u := Update{ID: randID(r), Version: 1 + r.Uint64N(1000), Data: randBytes(r)}
		if r.IntN(3) == 0 {
			u.Version = 1 + r.Uint64N(math.MaxUint64)
		}
		if r.IntN(3) == 0 {
			u.Kind = world.Kind(1 + r.IntN(math.MaxUint16))
		} else {
			u.Base = 1 + r.Uint64N(u.Version)
		}
		m.Entries = append(m.Entries, u)
	}
	return m
}

func randAcks(r *rand.Rand) *Acks {
	m := &Acks{}
	for range randN(r) {
		m.Entries = append(m.Entries, Ack{ID: randID(r), Version: r.Uint64() >> r.IntN(64)})
	}
	return m
}

func randWrites(r *rand.Rand) *Writes {
	m := &Writes{Writer: NodeID(r.Uint32() >> r.IntN(32)), Inc: uint16(r.Uint32() >> r.IntN(32)), Hops: uint8(r.IntN(MaxHops + 1))}
	for range randN(r) {
		w := Write{ID: randID(r), Seq: randSeq(r), Data: randBytes(r)}
		if w.Seq > 1 && r.IntN(2) == 0 {
			w.Prev = 1 + r.Uint32N(w.Seq-1) // 1 to Seq-1
			if r.IntN(3) == 0 {
				w.Prev = w.Seq - 1
			}
		}
		m.Entries = append(m.Entries, w)
	}
	return m
}

// randSeq returns a random write sequence number (>= 1), sometimes small,
// sometimes at the top of its 32 bits.
func randSeq(r *rand.Rand) uint32 {
	switch r.IntN(4) {
	case 0:
		return 1 + r.Uint32N(20)
	case 1:
		return math.MaxUint32 - r.Uint32N(3)
	}
	return max(1, r.Uint32()>>r.IntN(32))
}

func randIDs(r *rand.Rand) *IDs {
	m := &IDs{}
	for range randN(r) {
		m.IDs = append(m.IDs, randID(r))
	}
	return m
}

func randHandoffs(r *rand.Rand) *Handoffs {
	m := &Handoffs{}
	for range randN(r) {
		m.Entries = append(m.Entries, Handoff{ID: randID(r), Kind: world.Kind(1 + r.IntN(math.MaxUint16)), Data: randBytes(r)})
	}
	return m
}

func randPubs(r *rand.Rand) *Pubs {
	m := &Pubs{TTL: randDur(r), Dims: 1 + r.IntN(world.MaxDims), Grid: randGrid(r)}
	for range randN(r) {
		p := Pub{ID: randID(r), Node: NodeID(r.Uint32()), At: time.Duration(r.Int64N(int64(time.Hour))).Truncate(time.Millisecond)}
		if r.IntN(2) == 0 {
			p.Node = NodeID(p.ID.Origin()) // sent as a flag
		}
		for d := range m.Dims {
			p.Loc[d] = randCoord(r, m.Grid)
			if r.IntN(2) == 0 {
				p.Vel[d] = randCoord(r, VelGrid(m.Grid))
			}
		}
		for range r.IntN(3) * r.IntN(4) {
			p.Skip = append(p.Skip, NodeID(r.Uint32()))
		}
		m.Pubs = append(m.Pubs, p)
	}
	return m
}

func randSubscribe(r *rand.Rand) *Subscribe {
	m := &Subscribe{TTL: randDur(r), Dims: 1 + r.IntN(world.MaxDims), Grid: randGrid(r)}
	m.Boxes = randBoxes(r, m.Dims, m.Grid)
	return m
}

// codec describes one message type to the generic checks.
type codec struct {
	typ    Type
	gen    func(*rand.Rand) any
	encode func([]byte, any) []byte
	decode func([]byte) (any, error)
}

var codecs = []codec{
	{TypeUpdates, func(r *rand.Rand) any { return randUpdates(r) },
		func(b []byte, m any) []byte { return AppendUpdates(b, m.(*Updates)) },
		func(p []byte) (any, error) { m := &Updates{}; return m, m.Decode(p) }},
	{TypeAcks, func(r *rand.Rand) any { return randAcks(r) },
		func(b []byte, m any) []byte { return AppendAcks(b, m.(*Acks)) },
		func(p []byte) (any, error) { m := &Acks{}; return m, m.Decode(p) }},
	{TypeWrites, func(r *rand.Rand) any { return randWrites(r) },
		func(b []byte, m any) []byte { return AppendWrites(b, m.(*Writes)) },
		func(p []byte) (any, error) { m := &Writes{}; return m, m.Decode(p) }},
	{TypeRegister, func(r *rand.Rand) any { return randIDs(r) },
		func(b []byte, m any) []byte { return AppendIDs(b, TypeRegister, m.(*IDs)) },
		func(p []byte) (any, error) { m := &IDs{}; return m, m.Decode(p) }},
	{TypeDormant, func(r *rand.Rand) any { return randIDs(r) },
		func(b []byte, m any) []byte { return AppendIDs(b, TypeDormant, m.(*IDs)) },
		func(p []byte) (any, error) { m := &IDs{}; return m, m.Decode(p) }},
	{TypeDrop, func(r *rand.Rand) any { return randIDs(r) },
		func(b []byte, m any) []byte { return AppendIDs(b, TypeDrop, m.(*IDs)) },
		func(p []byte) (any, error) { m := &IDs{}; return m, m.Decode(p) }},
	{TypeDelete, func(r *rand.Rand) any { return randIDs(r) },
		func(b []byte, m any) []byte { return AppendIDs(b, TypeDelete, m.(*IDs)) },
		func(p []byte) (any, error) { m := &IDs{}; return m, m.Decode(p) }},
	{TypeHandoff, func(r *rand.Rand) any { return randHandoffs(r) },
		func(b []byte, m any) []byte { return AppendHandoffs(b, m.(*Handoffs)) },
		func(p []byte) (any, error) { m := &Handoffs{}; return m, m.Decode(p) }},
	{TypePublish, func(r *rand.Rand) any { return randPubs(r) },
		func(b []byte, m any) []byte { return AppendPubs(b, TypePublish, m.(*Pubs)) },
		func(p []byte) (any, error) { m := &Pubs{}; return m, m.Decode(p) }},
	{TypeSubscribe, func(r *rand.Rand) any { return randSubscribe(r) },
		func(b []byte, m any) []byte { return AppendSubscribe(b, m.(*Subscribe)) },
		func(p []byte) (any, error) { m := &Subscribe{}; return m, m.Decode(p) }},
	{TypeMatch, func(r *rand.Rand) any { return randPubs(r) },
		func(b []byte, m any) []byte { return AppendPubs(b, TypeMatch, m.(*Pubs)) },
		func(p []byte) (any, error) { m := &Pubs{}; return m, m.Decode(p) }},
	{TypeLocate, func(r *rand.Rand) any { return randLocate(r) },
		func(b []byte, m any) []byte { return AppendLocate(b, m.(*Locate)) },
		func(p []byte) (any, error) { m := &Locate{}; return m, m.Decode(p) }},
}

func randBoxes(r *rand.Rand, dims int, g Grid) []world.Box {
	var bs []world.Box
	for range randN(r) {
		var b world.Box
		for d := range dims {
			b.Min[d], b.Max[d] = randCoord(r, g), randCoord(r, g)
		}
		bs = append(bs, b)
	}
	return bs
}

func randLocate(r *rand.Rand) *Locate {
	m := &Locate{Kind: LocKind(1 + r.IntN(int(numLocKinds)-1)), Sent: randDur(r), Routed: randDur(r), TTL: randDur(r),
		Seq: r.Uint64() >> r.IntN(64), Dims: 1 + r.IntN(world.MaxDims), Grid: randGrid(r)}
	if m.Sent < 0 {
		m.Sent = -m.Sent
	}
	m.Sent %= TimeWrap // Sent travels modulo TimeWrap (Locate.Unwrap)
	for range randN(r) {
		p := LocPub{ID: randID(r), Node: NodeID(r.Uint32()), TTL: time.Duration(r.Int64N(int64(time.Minute))).Truncate(time.Millisecond),
			At: time.Duration(r.Int64N(int64(time.Hour))).Truncate(time.Millisecond)}
		for range r.IntN(3) * r.IntN(4) {
			p.Skip = append(p.Skip, NodeID(r.Uint32()))
		}
		for d := range m.Dims {
			p.Loc[d] = randCoord(r, m.Grid)
			if r.IntN(2) == 0 {
				p.Vel[d] = randCoord(r, VelGrid(m.Grid))
			}
		}
		m.Pubs = append(m.Pubs, p)
	}
	m.Boxes = randBoxes(r, m.Dims, m.Grid)
	for range randN(r) / 3 {
		m.Subs = append(m.Subs, LocSub{Node: NodeID(r.Uint32()), Seq: r.Uint64(), TTL: time.Second, Boxes: randBoxes(r, m.Dims, m.Grid)})
	}
	// A kind sends only its fields.
	if m.Kind != LocMatch {
		m.Routed = 0
	} else if m.Routed < 0 {
		m.Routed = -m.Routed
	}
	if m.Kind != LocSubscribe {
		m.TTL, m.Seq, m.Boxes = 0, 0, nil
	} else {
		m.Pubs = nil
	}
	if m.Kind != LocHandoff {
		m.Subs = nil
	}
	for i := range m.Pubs {
		if m.Kind == LocPublish {
			m.Pubs[i].Node = 0
		}
		if m.Kind == LocMatch {
			m.Pubs[i].Skip = nil
		}
	}
	return m
}

func codecOf(t Type) codec {
	for _, c := range codecs {
		if c.typ == t {
			return c
		}
	}
	panic(t)
}

// same compares messages by their Go syntax, which distinguishes every
// field, including -0 and the bits of NaN coordinates (printed as NaN, but
// the byte-exact re-encoding check below covers their payloads).
func same(a, b any) bool { return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b) }

// roundTrip encodes m as a payload, decodes it with OpenFrames and the type's
// decoder, and reports any difference.
func roundTrip(c codec, m any) error {
	p := c.encode(AppendHeader([]byte{0xEE})[1:], m)
	f, err := OpenFrames(p)
	if err != nil {
		return err
	}
	typ, body, ok := f.Next()
	if !ok || typ != c.typ {
		return fmt.Errorf("frame: type %v ok %v err %v", typ, ok, f.Err())
	}
	if _, _, more := f.Next(); more || f.Err() != nil {
		return fmt.Errorf("trailing frame or error %v", f.Err())
	}
	got, err := c.decode(body)
	if err != nil {
		return err
	}
	if !same(got, m) {
		return fmt.Errorf("decoded\n%#v\nwant\n%#v", got, m)
	}
	if again := c.encode(AppendHeader(nil), got); string(again) != string(p) {
		return fmt.Errorf("re-encoding differs")
	}
	return nil
}

func TestRoundTrip(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	for _, c := range codecs {
		for seed := range uint64(n) {
			m := c.gen(rand.New(rand.NewPCG(seed, uint64(c.typ))))
			if err := roundTrip(c, m); err != nil {
				t.Fatalf("%v seed %d: %v", c.typ, seed, err)
			}
		}
	}
}

// checkArbitrary decodes arbitrary bytes as a body of type c.typ: it must
// not panic, must not keep more entries than the body can hold, and a
// successful decode must survive a round trip.
func checkArbitrary(t *testing.T, c codec, body []byte) {
	m, err := c.decode(body)
	if err != nil {
		if !errors.Is(err, ErrMalformed) {
			t.Fatalf("%v: error %v does not wrap ErrMalformed", c.typ, err)
		}
		return
	}
	if err := roundTrip(c, m); err != nil {
		t.Fatalf("%v: decoded %x to %#v, which does not round-trip: %v", c.typ, body, m, err)
	}
}

func fuzzType(f *testing.F, typ Type) {
	c := codecOf(typ)
	for seed := range uint64(8) {
		m := c.gen(rand.New(rand.NewPCG(seed, 1)))
		b := c.encode(nil, m)
		f.Add(b[2:], seed) // approximately the body (length byte dropped)
	}
	f.Add([]byte{}, uint64(0))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, uint64(9))
	f.Fuzz(func(t *testing.T, body []byte, seed uint64) {
		checkArbitrary(t, c, body)
		m := c.gen(rand.New(rand.NewPCG(seed, binary.LittleEndian.Uint64(append(body, make([]byte, 8)...)))))
		if err := roundTrip(c, m); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	})
}

func FuzzUpdates(f *testing.F)   { fuzzType(f, TypeUpdates) }
func FuzzAcks(f *testing.F)      { fuzzType(f, TypeAcks) }
func FuzzWrites(f *testing.F)    { fuzzType(f, TypeWrites) }
func FuzzRegister(f *testing.F)  { fuzzType(f, TypeRegister) }
func FuzzDrop(f *testing.F)      { fuzzType(f, TypeDrop) }
func FuzzDelete(f *testing.F)    { fuzzType(f, TypeDelete) }
func FuzzDormant(f *testing.F)   { fuzzType(f, TypeDormant) }
func FuzzHandoff(f *testing.F)   { fuzzType(f, TypeHandoff) }
func FuzzPublish(f *testing.F)   { fuzzType(f, TypePublish) }
func FuzzSubscribe(f *testing.F) { fuzzType(f, TypeSubscribe) }
func FuzzMatch(f *testing.F)     { fuzzType(f, TypeMatch) }
func FuzzLocate(f *testing.F)    { fuzzType(f, TypeLocate) }

// FuzzPayload feeds arbitrary payloads through OpenFrames and every frame's
// decoder, as a node's Step does.
func FuzzPayload(f *testing.F) {
	var o Outbox
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range codecs {
		o.Commit(3, c.typ.Class(), c.encode(o.Buf(), c.gen(r)))
	}
	for _, p := range o.Packets(1, nil) {
		f.Add(p.Payload)
	}
	f.Add([]byte{Version})
	f.Add([]byte{Version + 1, 1, 0})
	f.Fuzz(func(t *testing.T, payload []byte) {
		fr, err := OpenFrames(payload)
		if err != nil {
			return
		}
		for {
			typ, body, ok := fr.Next()
			if !ok {
				break
			}
			checkArbitrary(t, codecOf(typ), body)
		}
	})
}

func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name string
		typ  Type
		body []byte
	}{
		{"update version 0", TypeUpdates, []byte{0, 1, 1, 0, 0, 1, 0}},
		{"update full state kind 0", TypeUpdates, []byte{0, 1, 1, 1, 0, 0, 0}},
		{"update base beyond version", TypeUpdates, []byte{0, 1, 1, 2, 3, 0}},
		{"update data truncated", TypeUpdates, []byte{0, 1, 1, 2, 1, 5, 1}},
		{"ack truncated", TypeAcks, []byte{1, 1}},
		{"origin beyond 32 bits", TypeRegister, []byte{0x80, 0x80, 0x80, 0x80, 0x10, 1}},
		{"pubs dims 0", TypePublish, []byte{0, 0}},
		{"pubs dims 5", TypeMatch, []byte{0, 5}},
		{"subscribe half a box", TypeSubscribe, []byte{0, 2, 1, 1, 1}},
		{"handoff kind 0", TypeHandoff, []byte{1, 1, 0, 0}},
		{"ttl overflows", TypeSubscribe, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1}},
	}
	for _, tc := range cases {
		if _, err := codecOf(tc.typ).decode(tc.body); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: got %v, want ErrMalformed", tc.name, err)
		}
	}
	for _, p := range [][]byte{nil, {Version}, {9, 1, 0}, {Version, 0, 0}, {Version, 1, 5, 0}, {Version, 99, 0}} {
		fr, err := OpenFrames(p)
		if err == nil {
			for {
				if _, _, ok := fr.Next(); !ok {
					break
				}
			}
			err = fr.Err()
		}
		if err == nil {
			t.Errorf("payload %x accepted", p)
		}
	}
}

func TestLongFrameLength(t *testing.T) {
	// Bodies of up to 127 bytes take one length byte, up to 16383 two, and
	// beyond that three: the encoder shifts the body once its length
	// needs more than the byte it reserved. Each size is hit exactly (a
	// Writes frame of one write with n data bytes; the body's overhead
	// around the data is 8 to 10 bytes).
	for _, size := range []int{8, 9, 127, 128, 129, 300, 16383, 16384, 20000} {
		done := false
		for n := max(0, size-10); n <= size && !done; n++ {
			m := &Writes{Writer: 1, Inc: 2, Entries: []Write{{ID: world.MakeObjectID(1, 1), Seq: 3, Prev: 1, Data: make([]byte, n)}}}
			for i := range m.Entries[0].Data {
				m.Entries[0].Data[i] = byte(i)
			}
			b := AppendWrites(nil, m)
			body, k := binary.Uvarint(b[1:])
			if k <= 0 || int(body) != len(b)-1-k {
				t.Fatalf("data %d: frame of %d bytes says its body is %d (%d length bytes)", n, len(b), body, k)
			}
			if int(body) != size {
				continue
			}
			done = true
			want := 1
			if size > 127 {
				want = 2
			}
			if size > 16383 {
				want = 3
			}
			if k != want {
				t.Errorf("body of %d bytes: %d length bytes, want %d", size, k, want)
			}
			if err := roundTrip(codecOf(TypeWrites), m); err != nil {
				t.Fatalf("data %d: %v", n, err)
			}
		}
		if !done {
			t.Fatalf("no data size gives a body of %d bytes", size)
		}
	}
}

func TestOutboxBatches(t *testing.T) {
	var o Outbox
	o.MaxPayload = 100
	ids := &IDs{IDs: []world.ObjectID{world.MakeObjectID(1, 1)}}
	for i := range 40 {
		to := NodeID(i % 3)
		o.Commit(to, ClassMaintenance, AppendRingProbe(o.Buf(), TypeRingPing, &RingProbe{Seq: uint64(i)}))
	}
	o.Commit(1, ClassUpdate, AppendAcks(o.Buf(), &Acks{Entries: []Ack{{ids.IDs[0], 3}}}))
	o.Commit(2, ClassUpdate, o.Buf()) // empty: nothing
	ps := o.Packets(7, nil)
	frames := 0
	for i, p := range ps {
		if p.From != 7 || len(p.Payload) > 100 {
			t.Fatalf("packet %d: %+v", i, p)
		}
		if i > 0 && ps[i-1].To > p.To {
			t.Fatalf("packets out of order")
		}
		fr, err := OpenFrames(p.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for {
			typ, _, ok := fr.Next()
			if !ok {
				break
			}
			if typ.Class() != p.Class && (p.Parts == nil || p.Parts[typ.Class()] == 0) {
				t.Fatalf("frame %v in a %v packet (parts %v)", typ, p.Class, p.Parts)
			}
			frames++
		}
	}
	if frames != 41 || o.Len() != 0 {
		t.Fatalf("%d frames in %d packets, %d left", frames, len(ps), o.Len())
	}
	// 40 probe frames to 3 nodes (13 or 14 per node, at 12 to 13 bytes
	// each with a one-byte payload header) take 2 packets of <= 100 bytes
	// per node; the acknowledgements ride in one of node 1's.
	if len(ps) != 6 {
		t.Fatalf("%d packets, want 6", len(ps))
	}
}

// TestMillisRounding: times travel rounded down to the millisecond,
// lifetimes rounded up (a live one never arrives as zero).
func TestMillisRounding(t *testing.T) {
	m := Locate{Kind: LocMatch, Sent: 1999 * time.Microsecond, Routed: 2500 * time.Microsecond, Dims: 1,
		Pubs: []LocPub{{ID: 1, Node: 2, TTL: 1001 * time.Microsecond, At: 7*time.Millisecond + 999*time.Microsecond}}}
	var got Locate
	fr, _ := OpenFrames(append(AppendHeader(nil), AppendLocate(nil, &m)...))
	_, body, _ := fr.Next()
	if err := got.Decode(body); err != nil {
		t.Fatal(err)
	}
	if got.Sent != time.Millisecond || got.Routed != 2*time.Millisecond || got.Pubs[0].TTL != 2*time.Millisecond || got.Pubs[0].At != 7*time.Millisecond {
		t.Errorf("sent %v routed %v pub ttl %v at %v, want 1ms 2ms 2ms 7ms", got.Sent, got.Routed, got.Pubs[0].TTL, got.Pubs[0].At)
	}
	sub := Locate{Kind: LocSubscribe, TTL: time.Nanosecond, Dims: 1}
	fr, _ = OpenFrames(append(AppendHeader(nil), AppendLocate(nil, &sub)...))
	_, body, _ = fr.Next()
	if err := got.Decode(body); err != nil || got.TTL != time.Millisecond {
		t.Errorf("subscription ttl %v (%v), want 1ms", got.TTL, err)
	}
	var u Updates
	fr, _ = OpenFrames(append(AppendHeader(nil), AppendUpdates(nil, &Updates{Time: 12345678 * time.Nanosecond})...))
	_, body, _ = fr.Next()
	if err := u.Decode(body); err != nil || u.Time != 12*time.Millisecond {
		t.Errorf("update time %v (%v), want 12ms", u.Time, err)
	}
}

// TestUnwrapTime: an update's time, sent modulo TimeWrap, is recovered
// from the receiver's clock when the two are within half a wrap.
func TestUnwrapTime(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	for range 100000 {
		sent := time.Duration(r.Int64N(int64(time.Hour))).Truncate(time.Millisecond)
		skew := time.Duration(r.Int64N(int64(TimeWrap))) - TimeWrap/2 + 1 // (-wrap/2, wrap/2)
		now := sent + skew
		if now < 0 {
			continue
		}
		var u Updates
		fr, _ := OpenFrames(append(AppendHeader(nil), AppendUpdates(nil, &Updates{Time: sent})...))
		_, body, _ := fr.Next()
		if err := u.Decode(body); err != nil {
			t.Fatal(err)
		}
		if got := UnwrapTime(now, u.Time); got != sent {
			t.Fatalf("sent at %v, received at %v as %v: unwrapped to %v", sent, now, u.Time, got)
		}
	}
}

// TestRouteHint: a final route's Hint travels as HintOf of a key, in three
// bytes, and comes back as it was sent.
func TestRouteHint(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 1000 {
		k := r.Uint64()
		m := RingRoute{Kind: RouteData, Final: true, Hint: HintOf(k), Origin: 7, Key: 1 << 40, Hops: 2, Class: ClassDiscovery, Data: []byte{}}
		b := AppendRingRoute(nil, &m)
		plain := m
		plain.Final, plain.Hint = false, 0
		if d := len(b) - len(AppendRingRoute(nil, &plain)); d != 3 {
			t.Fatalf("a hint takes %d bytes, want 3", d)
		}
		var got RingRoute
		if err := got.Decode(b[2:]); err != nil {
			t.Fatal(err)
		}
		if got.Hint != HintOf(k) || HintOf(k)>>40 != k>>40 || HintOf(k)&(1<<40-1) != 0 {
			t.Fatalf("key %#x: hint %#x, sent %#x", k, got.Hint, HintOf(k))
		}
	}
}

// TestLocateUnwrap: Sent travels modulo TimeWrap and Routed and At as
// differences from it; a receiver within half a TimeWrap of the sender's
// clock gets every time back, across the wrap and hours into a run.
func TestLocateUnwrap(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 2000 {
		sent := time.Duration(r.Int64N(int64(10 * time.Hour))).Truncate(time.Millisecond)
		m := Locate{Kind: LocMatch, Sent: sent, Routed: sent + time.Duration(r.Int64N(int64(time.Second))).Truncate(time.Millisecond),
			Dims: 2, Pubs: []LocPub{{ID: 1, Node: 2, TTL: time.Second, At: max(0, sent-time.Duration(r.Int64N(int64(5*time.Second)))).Truncate(time.Millisecond)}}}
		b := AppendLocate(nil, &m)
		var got Locate
		if err := got.Decode(b[2:]); err != nil {
			t.Fatal(err)
		}
		if got.Sent < 0 || got.Sent >= TimeWrap {
			t.Fatalf("decoded Sent %v outside [0, TimeWrap)", got.Sent)
		}
		now := sent + time.Duration(r.Int64N(int64(TimeWrap/2-time.Millisecond)))
		got.Unwrap(now)
		if got.Sent != m.Sent || got.Routed != m.Routed || got.Pubs[0].At != m.Pubs[0].At {
			t.Fatalf("sent %v routed %v at %v, received at %v as %v %v %v", m.Sent, m.Routed, m.Pubs[0].At, now, got.Sent, got.Routed, got.Pubs[0].At)
		}
	}
}

// TestLocateOwnNode: a match's publication from its ID's origin node does
// not carry the node (a flag in the velocity's mask says so); one handed
// off does; both come back as sent, and a publication may not set the flag.
func TestLocateOwnNode(t *testing.T) {
	id := world.MakeObjectID(9, 300)
	var sizes []int
	for _, node := range []NodeID{9, 10} {
		m := Locate{Kind: LocMatch, Sent: time.Second, Routed: time.Second, Dims: 2,
			Pubs: []LocPub{{ID: id, Node: node, TTL: time.Second, At: time.Second, Vel: world.Point{3, 0}}}}
		b := AppendLocate(nil, &m)
		sizes = append(sizes, len(b))
		var got Locate
		if err := got.Decode(b[2:]); err != nil {
			t.Fatal(err)
		}
		if got.Pubs[0].Node != node || got.Pubs[0].Vel != m.Pubs[0].Vel {
			t.Fatalf("node %d: got node %d velocity %v", node, got.Pubs[0].Node, got.Pubs[0].Vel)
		}
	}
	if sizes[1]-sizes[0] != 1 {
		t.Errorf("a match from the origin node takes %d bytes, from another %d: want one less", sizes[0], sizes[1])
	}
	pub := Locate{Kind: LocPublish, Sent: time.Second, Dims: 2, Pubs: []LocPub{{ID: id, TTL: time.Second, At: time.Second}}}
	b := AppendLocate(nil, &pub)
	// The publication's velocity mask follows the kind (1), Sent (2), the
	// space (1), the count (1) and the ID (1 + 2).
	b[2+8] |= velOwnNode
	var got Locate
	if err := got.Decode(b[2:]); err == nil {
		t.Errorf("a publication with the own-node flag decoded without error")
	}
}
