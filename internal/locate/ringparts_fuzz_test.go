package locate

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// fuzzBytes hands out a fuzzer's input as numbers (zeros once it runs out).
type fuzzBytes []byte

func (f *fuzzBytes) byte() byte {
	if len(*f) == 0 {
		return 0
	}
	b := (*f)[0]
	*f = (*f)[1:]
	return b
}

// float returns a small grid coordinate, or (1 in 4) any float64 bit
// pattern: NaN, infinities, huge and subnormal values.
func (f *fuzzBytes) float() float64 {
	b := f.byte()
	if b%4 != 0 {
		return float64(b) * 2
	}
	var raw [8]byte
	for i := range raw {
		raw[i] = f.byte()
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(raw[:]))
}

func (f *fuzzBytes) box() world.Box {
	var b world.Box
	for d := range 2 {
		b.Min[d] = f.float()
		b.Max[d] = b.Min[d] + f.float()
	}
	return b
}

// FuzzKeyMap checks every mapping on arbitrary extents, points and boxes:
// constructors reject bad extents with an error, nothing panics, ranges
// are sorted and merged, and a point inside a box has its key in the
// box's ranges.
func FuzzKeyMap(f *testing.F) {
	f.Add([]byte{1, 200, 1, 200, 5, 3, 10, 20, 30, 40, 12, 14})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f, 1, 2, 3, 4, 5, 6, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		ext := world.Box{Min: world.Point{in.float(), in.float()}}
		ext.Max = world.Point{ext.Min[0] + in.float(), ext.Min[1] + in.float()}
		order, cap, regions := int(in.byte()%33), int(in.byte()%12)-1, int(in.byte())*int(in.byte()%8)
		var maps []KeyMap
		if m, err := NewLinearMap(ext); err == nil {
			maps = append(maps, m)
		}
		if m, err := NewHilbertMap(ext, order, cap); err == nil {
			maps = append(maps, m)
		}
		if m, err := NewRegionMap(ext, regions); err == nil {
			maps = append(maps, m)
		}
		b := in.box()
		p := world.Point{in.float(), in.float()}
		for _, m := range maps {
			rs := m.BoxRanges(b, nil)
			for i := 1; i < len(rs); i++ {
				if rs[i].Lo <= rs[i-1].Hi+1 || rs[i].Lo > rs[i].Hi {
					t.Fatalf("%T: ranges %v not sorted and merged", m, rs)
				}
			}
			if k := m.PointKey(p); b.Contains(p, 2) && !inRanges(k, rs) {
				t.Fatalf("%T over %v: point %v in box %v has key %#x outside %v", m, ext, p, b, k, rs)
			}
		}
	})
}

// FuzzStore runs an arbitrary sequence of store operations (any floats,
// TTLs and times) against the linear-scan reference: the same matches,
// the same state, nothing outliving its TTL, bad input rejected with
// nothing changed, never a panic.
func FuzzStore(f *testing.F) {
	f.Add([]byte{0, 1, 2, 10, 10, 5, 1, 1, 1, 2, 1, 4, 4, 8, 8, 9, 3, 0, 0, 200})
	f.Add([]byte{1, 3, 1, 2, 0, 0, 0, 0, 0, 0, 0xf0, 0x7f, 9, 0, 1, 1, 20, 4, 2, 7, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzBytes(data)
		km, err := NewHilbertMap(extentBox(512, 512), 1+int(in.byte()%12), 1+int(in.byte()%8))
		if err != nil {
			t.Fatal(err)
		}
		s, _ := NewStore(StoreConfig{Dims: 2, Keys: km, MaxTTL: 3 * time.Second, MaxBoxes: 3})
		o, _ := NewStore(StoreConfig{Dims: 2, Keys: km, MaxTTL: 3 * time.Second, MaxBoxes: 3})
		ref, oref := newRefStore(2, km, 3*time.Second), newRefStore(2, km, 3*time.Second)
		now := time.Duration(0)
		var h Handoff
		for step := 0; len(in) > 0 && step < 200; step++ {
			op := in.byte() % 6
			at := now + time.Duration(int(in.byte())-16)*10*time.Millisecond
			ttl := time.Duration(int(in.byte())*40-40) * time.Millisecond
			bad := at < s.now || ttl <= 0
			var got, want []Match
			var err error
			switch op {
			case 0, 1:
				id, node := world.ObjectID(in.byte()%8), wire.NodeID(in.byte()%4)
				loc := world.Point{in.float(), in.float()}
				bad = bad || math.IsNaN(loc[0]) || math.IsNaN(loc[1])
				pubAt := at - time.Duration(in.byte()%4)*100*time.Millisecond
				got, err = s.Publish(at, Pub{ID: id, Node: node, Loc: loc, At: pubAt, TTL: ttl}, nil)
				if !bad {
					ref.expire(at)
					want = ref.publish(id, node, loc, world.Point{}, pubAt, ttl)
				}
			case 2, 3:
				node, seq := wire.NodeID(in.byte()%4), uint64(in.byte()%2)
				boxes := make([]world.Box, in.byte()%5)
				for i := range boxes {
					boxes[i] = in.box()
					bad = bad || boxes[i].Validate(2) != nil
				}
				bad = bad || len(boxes) > 3
				got, err = s.Subscribe(at, node, seq, boxes, ttl, nil)
				if !bad {
					ref.expire(at)
					want = ref.subscribe(node, seq, boxes, ttl)
				}
			case 4:
				bad = at < s.now
				err = s.Expire(at)
				if !bad {
					ref.expire(at)
				}
			default:
				lo, hi := km.PointKey(world.Point{in.float(), in.float()}), km.PointKey(world.Point{in.float(), in.float()})
				s.Export(lo, hi, &h)
				s.Drop(lo, hi)
				ref.drop(lo, hi)
				bad = at < o.now
				err = o.Import(at, &h)
				if !bad {
					oref.expire(at)
					oref.imp(&h)
				}
				checkStore(t, 0, step, o, oref)
			}
			if bad != (err != nil) {
				t.Fatalf("step %d: error %v, want an error: %v", step, err, bad)
			}
			if !equalish(got, want) {
				t.Fatalf("step %d: matches %+v, want %+v", step, got, want)
			}
			checkStore(t, 0, step, s, ref)
			if err == nil && at > now {
				now = at
			}
			if r := in.byte(); r%16 == 0 { // sometimes the other store takes the ops
				s, o, ref, oref = o, s, oref, ref
				now = max(s.now, o.now)
			}
		}
	})
}
