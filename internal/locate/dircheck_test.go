package locate

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/wire"
	"github.com/overworld/overworld/world"
)

// TestDirectoryCheckThenStep drives two rendezvous directories and two
// subscriber directories with the same random packets of one to three
// publish, subscribe and match frames, and frames: one of each pair checks
// every frame of a packet before stepping them (as a node does, so that
// Step reuses what Check decoded), the other only steps. Their output
// packets and discoveries must be the same after every packet and frame.
func TestDirectoryCheckThenStep(t *testing.T) {
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 11))
		var dirs [4]*Directory
		var obs [4]wire.Outbox
		var outs [4]Out
		for k := range dirs {
			self := wire.NodeID(1)
			if k >= 2 {
				self = 9
			}
			d, err := NewDirectory(self, DefaultDirectoryConfig(1))
			if err != nil {
				t.Fatal(err)
			}
			dirs[k], outs[k] = d, Out{Outbox: &obs[k]}
		}
		now := time.Duration(0)
		for step := range 200 {
			now += time.Duration(r.IntN(200)) * time.Millisecond
			from := wire.NodeID(2 + r.IntN(5))
			b := wire.AppendHeader(nil)
			for range 1 + r.IntN(3) {
				ttl := time.Duration(200+r.IntN(2000)) * time.Millisecond
				switch r.IntN(3) {
				case 0, 1:
					m := wire.Pubs{TTL: ttl, Dims: 2}
					for range 1 + r.IntN(5) {
						id := world.MakeObjectID(uint32(from), uint32(1+r.IntN(6)))
						m.Pubs = append(m.Pubs, wire.Pub{ID: id, Node: from, Loc: world.Point{r.Float64() * 100, r.Float64() * 100}})
					}
					b = wire.AppendPubs(b, []wire.Type{wire.TypePublish, wire.TypeMatch}[r.IntN(2)], &m)
				default:
					m := wire.Subscribe{TTL: ttl, Dims: 2}
					for range r.IntN(3) {
						x, y := r.Float64()*100, r.Float64()*100
						m.Boxes = append(m.Boxes, world.Box{Min: world.Point{x, y}, Max: world.Point{x + 30, y + 30}})
					}
					b = wire.AppendSubscribe(b, &m)
				}
			}
			for k, d := range dirs {
				if k%2 == 0 {
					fr, _ := wire.OpenFrames(b)
					for {
						typ, body, ok := fr.Next()
						if !ok {
							break
						}
						if err := d.Check(typ, body); err != nil {
							t.Fatal(err)
						}
					}
				}
				fr, _ := wire.OpenFrames(b)
				for {
					typ, body, ok := fr.Next()
					if !ok {
						break
					}
					if err := d.Step(now, from, typ, body, &outs[k]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if step%5 == 0 {
				for k, d := range dirs {
					d.Tick(&Frame{Now: now, Self: d.self, Dims: 2,
						View: []world.Box{{Min: world.Point{10, 10}, Max: world.Point{40, 40}}}}, &outs[k])
				}
			}
			for k := 0; k < 4; k += 2 {
				pa, pb := obs[k].Packets(1, nil), obs[k+1].Packets(1, nil)
				same := len(pa) == len(pb) && slices.Equal(outs[k].Found, outs[k+1].Found)
				for i := 0; same && i < len(pa); i++ {
					same = pa[i].To == pb[i].To && bytes.Equal(pa[i].Payload, pb[i].Payload)
				}
				if !same {
					t.Fatalf("seed %d step %d: directory %d differs with Check before Step", seed, step, k)
				}
				outs[k].Reset()
				outs[k+1].Reset()
			}
		}
	}
}
