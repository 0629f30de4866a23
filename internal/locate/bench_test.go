package locate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Benchmark workloads at the model game's density: 1,024 m² of map per
// player (a 16-player Quake III map is 128 m × 128 m), players walking at
// 10 m/s (320 units/s), each interested in a 40 m × 40 m box around itself.

const (
	benchArea     = 1024.0 // m² per player
	benchSpeed    = 10.0   // m/s
	benchInterest = 20.0   // half-width of the interest box (m)
)

type walkers struct {
	side float64
	pos  []world.Point
	vel  []world.Point
	r    *rand.Rand
}

func newWalkers(n int, seed uint64) *walkers {
	w := &walkers{side: math.Sqrt(float64(n) * benchArea), r: rand.New(rand.NewPCG(seed, 1))}
	for range n {
		a := w.r.Float64() * 2 * math.Pi
		w.pos = append(w.pos, world.Point{w.r.Float64() * w.side, w.r.Float64() * w.side})
		w.vel = append(w.vel, world.Point{benchSpeed * math.Cos(a), benchSpeed * math.Sin(a)})
	}
	return w
}

// step moves every walker by one 100 ms frame, bouncing off the map's edge.
func (w *walkers) step() {
	for i := range w.pos {
		for d := range 2 {
			p := w.pos[i][d] + w.vel[i][d]*0.1
			if p < 0 || p > w.side {
				w.vel[i][d] = -w.vel[i][d]
				p = max(0, min(w.side, p))
			}
			w.pos[i][d] = p
		}
	}
}

func (w *walkers) interest(i int) world.Box {
	return world.BoxAround(w.pos[i], world.Point{benchInterest, benchInterest})
}

func frameBody(tb testing.TB, b []byte) []byte {
	fr, err := wire.OpenFrames(append(wire.AppendHeader(nil), b...))
	if err != nil {
		tb.Fatal(err)
	}
	_, body, ok := fr.Next()
	if !ok {
		tb.Fatal("no frame")
	}
	return body
}

// BenchmarkDirectoryRendezvous measures one 100 ms frame of the directory's
// rendezvous: n players on n/8 nodes (8 players each), every node
// re-subscribing every frame with its players' interest boxes and
// publishing all its players every 5th frame (staggered), then the expiry
// Tick. One iteration is one frame.
func BenchmarkDirectoryRendezvous(b *testing.B) {
	for _, n := range []int{768, 10000} {
		for _, linear := range []bool{true, false} {
			name := "index"
			if linear {
				name = "linear"
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				benchDirectory(b, n, linear)
			})
		}
	}
}

func benchDirectory(b *testing.B, n int, linear bool) {
	w := newWalkers(n, 1)
	nodes := n / 8
	d, err := NewDirectory(1, DefaultDirectoryConfig(1))
	if err != nil {
		b.Fatal(err)
	}
	d.linear = linear
	var ob wire.Outbox
	out := Out{Outbox: &ob}
	now := time.Duration(0)
	frame := 0
	var pubs wire.Pubs
	var sub wire.Subscribe
	var buf []byte
	run := func() {
		now += 100 * time.Millisecond
		w.step()
		for k := range nodes {
			from := wire.NodeID(k + 2)
			if (frame+k)%5 == 0 || frame == 0 {
				pubs = wire.Pubs{TTL: 1500 * time.Millisecond, Dims: 2, Pubs: pubs.Pubs[:0]}
				for i := k * 8; i < k*8+8; i++ {
					pubs.Pubs = append(pubs.Pubs, wire.Pub{ID: world.MakeObjectID(uint32(from), uint32(i+1)), Node: from, Loc: w.pos[i]})
				}
				buf = wire.AppendPubs(buf[:0], wire.TypePublish, &pubs)
				if err := d.Step(now, from, wire.TypePublish, frameBody(b, buf), &out); err != nil {
					b.Fatal(err)
				}
			}
			sub = wire.Subscribe{TTL: 3 * time.Second, Dims: 2, Boxes: sub.Boxes[:0]}
			for i := k * 8; i < k*8+8; i++ {
				sub.Boxes = append(sub.Boxes, w.interest(i))
			}
			buf = wire.AppendSubscribe(buf[:0], &sub)
			if err := d.Step(now, from, wire.TypeSubscribe, frameBody(b, buf), &out); err != nil {
				b.Fatal(err)
			}
		}
		d.Tick(&Frame{Now: now, Self: 1, Dims: 2}, &out)
		ob.Reset()
		out.Reset()
		frame++
	}
	for range 5 {
		run()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		run()
	}
}

// BenchmarkClientServerPush measures the server's Tick under client-server
// with n players, one per client node, each controlling one primary with a
// 40 m interest box: deciding which client must hold which object. One
// iteration is one frame.
func BenchmarkClientServerPush(b *testing.B) {
	for _, n := range []int{768, 10000} {
		for _, linear := range []bool{true, false} {
			name := "index"
			if linear {
				name = "linear"
			}
			b.Run(fmt.Sprintf("n=%d/%s", n, name), func(b *testing.B) {
				w := newWalkers(n, 2)
				c := NewClientServer(1, 1)
				c.linear = linear
				var ob wire.Outbox
				out := Out{Outbox: &ob}
				prims := make([]Primary, n)
				boxes := make([]world.Box, n)
				f := Frame{Self: 1, Dims: 2, Primaries: prims}
				pushes := 0
				run := func() {
					f.Now += 100 * time.Millisecond
					w.step()
					for i := range prims {
						boxes[i] = w.interest(i)
						prims[i] = Primary{ID: world.MakeObjectID(uint32(i+2), 1), Loc: w.pos[i],
							Controller: wire.NodeID(i + 2), Interest: boxes[i : i+1 : i+1]}
					}
					c.Tick(&f, &out)
					pushes = len(out.Push)
					out.Reset()
				}
				run()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					run()
				}
				b.ReportMetric(float64(pushes)/float64(n), "pushes/object")
			})
		}
	}
}
