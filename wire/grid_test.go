package wire

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/overworld/overworld/world"
)

// TestGridRounding: points travel rounded to the nearest grid value, boxes
// rounded outward, so that a point inside a box is inside it on arrival
// too; odd values are clamped, never a panic.
func TestGridRounding(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 11))
		g := Grid{Frac: r.IntN(MaxFrac + 1)}
		step := math.Ldexp(1, -g.Frac)
		dims := 1 + r.IntN(world.MaxDims)
		var box world.Box
		var p world.Point
		for d := range dims {
			a, b := (r.Float64()-0.5)*2000, (r.Float64()-0.5)*2000
			box.Min[d], box.Max[d] = min(a, b), max(a, b)
			p[d] = box.Min[d] + r.Float64()*(box.Max[d]-box.Min[d])
		}
		m := Locate{Kind: LocHandoff, Dims: dims, Grid: g, Pubs: []LocPub{{ID: 1, Loc: p}}, Subs: []LocSub{{Node: 2, Boxes: []world.Box{box}}}}
		var got Locate
		fr, _ := OpenFrames(append(AppendHeader(nil), AppendLocate(nil, &m)...))
		_, body, _ := fr.Next()
		if err := got.Decode(body); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		q, qb := got.Pubs[0].Loc, got.Subs[0].Boxes[0]
		for d := range dims {
			if math.Abs(q[d]-p[d]) > step/2 {
				t.Fatalf("seed %d: coordinate %v arrived as %v on a grid of %v", seed, p[d], q[d], step)
			}
			if qb.Min[d] > box.Min[d] || qb.Max[d] < box.Max[d] || box.Min[d]-qb.Min[d] >= step || qb.Max[d]-box.Max[d] >= step {
				t.Fatalf("seed %d: box [%v, %v] arrived as [%v, %v] on a grid of %v", seed, box.Min[d], box.Max[d], qb.Min[d], qb.Max[d], step)
			}
			if q[d] < qb.Min[d] || q[d] > qb.Max[d] {
				t.Fatalf("seed %d: point %v left box [%v, %v] on the way", seed, q[d], qb.Min[d], qb.Max[d])
			}
		}
	}
	g := Grid{Frac: 4}
	for _, c := range []struct {
		v    float64
		want int64
	}{{math.NaN(), 0}, {math.Inf(1), MaxGrid}, {math.Inf(-1), -MaxGrid}, {1e300, MaxGrid}, {-1e300, -MaxGrid},
		{0.03, 0}, {0.04, 1}, {-0.04, -1}, {767.99, 12288}} {
		if got := g.Point(c.v); got != c.want {
			t.Errorf("Point(%v) = %d, want %d", c.v, got, c.want)
		}
	}
	if g.Floor(-0.01) != -1 || g.Ceil(0.01) != 1 || g.Floor(2) != 32 || g.Ceil(2) != 32 {
		t.Errorf("Floor(-0.01) %d Ceil(0.01) %d Floor(2) %d Ceil(2) %d, want -1 1 32 32", g.Floor(-0.01), g.Ceil(0.01), g.Floor(2), g.Ceil(2))
	}
}

// TestGridSize: on the default 1/16 m grid an interest box on a 768 × 128 m
// map, unbounded in z, takes at most 12 bytes and a location at most 5
// (the float64 encoding took about 40 and 12).
func TestGridSize(t *testing.T) {
	g := Grid{Frac: 4}
	box := world.Box{Min: world.Point{700.123456, 100.98765, math.Inf(-1)}, Max: world.Point{767.5432, 127.9, math.Inf(1)}}
	if n := len(appendBox(nil, &box, 3, g)); n > 12 {
		t.Errorf("box: %d bytes, want at most 12", n)
	}
	p := world.Point{767.123456, 127.5}
	if n := len(appendPoint(nil, &p, 2, g)); n > 5 {
		t.Errorf("point: %d bytes, want at most 5", n)
	}
}

// TestGridRefusesOutOfRange: a coordinate or box end beyond ±MaxGrid units,
// or a grid finer than MaxFrac, is malformed.
func TestGridRefusesOutOfRange(t *testing.T) {
	enc := func(vs ...int64) []byte {
		b := []byte{byte(TypeSubscribe), 0}
		start := len(b)
		b = appendMillisUp(b, 0)
		b = append(b, 1|4<<3)
		for _, v := range vs {
			b = binary.AppendUvarint(b, zigzag(v)+1)
		}
		return endFrame(b, start)[2:]
	}
	var m Subscribe
	if err := m.Decode(enc(0, 16)); err != nil || m.Boxes[0].Max[0] != 1 {
		t.Fatalf("valid box: %v %v", err, m.Boxes)
	}
	if err := m.Decode(enc(MaxGrid-1, 1)); err != nil || !math.IsInf(m.Boxes[0].Max[0], 1) {
		t.Fatalf("box reaching MaxGrid: %v %v, want [x, +Inf]", err, m.Boxes)
	}
	for _, body := range [][]byte{enc(MaxGrid+1, 0), enc(MaxGrid, 1), enc(-MaxGrid, -1), enc(0, math.MaxInt64), enc(0, math.MinInt64+1)} {
		if err := m.Decode(body); err == nil {
			t.Errorf("% x: decoded %v, want an error", body, m.Boxes)
		}
	}
	if err := m.Decode([]byte{0, 1 | (MaxFrac+1)<<3}); err == nil {
		t.Error("grid 2^-25 decoded, want an error")
	}
}
