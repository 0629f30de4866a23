package locate

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestDirectoryIndexMatchesLinear feeds the same random publications,
// subscriptions (of every box shape, repeated, withdrawn, of other
// dimensions) and expiries to an indexed rendezvous and to one that scans,
// and requires byte-identical output after every step.
func TestDirectoryIndexMatchesLinear(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	matches := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 11))
		var ds [2]*Directory
		var obs [2]wire.Outbox
		var outs [2]Out
		cfg := DefaultDirectoryConfig(1)
		cfg.Reckon = seed%2 == 1 // the told records: matches sent by the subscription path are recorded by position
		for i := range ds {
			d, err := NewDirectory(1, cfg)
			if err != nil {
				t.Fatal(err)
			}
			d.linear, d.byID = i == 0, i == 0
			ds[i] = d
			outs[i] = Out{Outbox: &obs[i]}
		}
		cell := []float64{1, 10, 40}[r.IntN(3)]
		last := map[wire.NodeID][]world.Box{}
		now := time.Duration(0)
		for step := range 400 {
			now += time.Duration(r.IntN(200)) * time.Millisecond
			from := wire.NodeID(2 + r.IntN(8))
			dims := 2
			if r.IntN(25) == 0 {
				dims = 1 + r.IntN(world.MaxDims)
			}
			ttl := time.Duration(100+r.IntN(3000)) * time.Millisecond
			var b []byte
			var typ wire.Type
			switch k := r.IntN(10); {
			case k < 5:
				m := wire.Pubs{TTL: ttl, Dims: dims}
				for range 1 + r.IntN(6) {
					pb := wire.Pub{ID: world.MakeObjectID(uint32(from), uint32(1+r.IntN(10))),
						Node: from, Loc: randPoint(r, cell, r.IntN(10) == 0)}
					for range r.IntN(2) * r.IntN(4) {
						pb.Skip = append(pb.Skip, wire.NodeID(2+r.IntN(8)))
					}
					m.Pubs = append(m.Pubs, pb)
				}
				typ, b = wire.TypePublish, wire.AppendPubs(nil, wire.TypePublish, &m)
			case k < 9:
				m := wire.Subscribe{TTL: ttl, Dims: dims}
				if prev, ok := last[from]; ok && r.IntN(3) == 0 {
					m.Boxes = prev // an unchanged refresh
				} else if ok && len(prev) > 0 && r.IntN(2) == 0 {
					// Some boxes kept (a subscriber keeps a box that still
					// covers its view), the others moved.
					m.Boxes = slices.Clone(prev)
					for j := range m.Boxes {
						if r.IntN(2) == 0 {
							d := randPoint(r, cell, false)
							for k := range dims {
								m.Boxes[j].Min[k] += d[k]
								m.Boxes[j].Max[k] += d[k]
							}
						}
					}
				} else {
					for range r.IntN(4) {
						bx := randBox(r, cell)
						for d := dims; d < world.MaxDims; d++ {
							bx.Min[d], bx.Max[d] = 0, 0 // not on the wire
						}
						m.Boxes = append(m.Boxes, bx)
					}
				}
				last[from] = m.Boxes
				typ, b = wire.TypeSubscribe, wire.AppendSubscribe(nil, &m)
			default:
				for i := range ds {
					ds[i].Tick(&Frame{Now: now, Self: 1, Dims: 2}, &outs[i])
				}
			}
			if b != nil {
				body := frameBody(t, b)
				for i := range ds {
					if err := ds[i].Step(now, from, typ, body, &outs[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			p0, p1 := obs[0].Packets(1, nil), obs[1].Packets(1, nil)
			for _, p := range p0 {
				if p.Class == wire.ClassMatching {
					matches++
				}
			}
			if len(p0) != len(p1) {
				t.Fatalf("seed %d step %d: %d packets by scanning, %d with the index", seed, step, len(p0), len(p1))
			}
			for i := range p0 {
				if p0[i].To != p1[i].To || p0[i].Class != p1[i].Class || !bytes.Equal(p0[i].Payload, p1[i].Payload) {
					t.Fatalf("seed %d step %d: packet %d differs: scan to %d %x, index to %d %x", seed, step, i,
						p0[i].To, p0[i].Payload, p1[i].To, p1[i].Payload)
				}
			}
			pa, sa := ds[0].Stored()
			pb, sb := ds[1].Stored()
			if pa != pb || sa != sb {
				t.Fatalf("seed %d step %d: stored %d/%d by scanning, %d/%d with the index", seed, step, pa, sa, pb, sb)
			}
		}
	}
	if matches < seeds*10 {
		t.Fatalf("only %d match packets in %d runs: the workload does not exercise matching", matches, seeds)
	}
}

// TestClientServerIndexMatchesLinear compares the server's pushes with and
// without the index on random frames: clients with several boxes of every
// shape, objects the server itself controls, objects on cell borders.
func TestClientServerIndexMatchesLinear(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 40
	}
	pushes := 0
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 12))
		var cs [2]*ClientServer
		var outs [2]Out
		for i := range cs {
			cs[i] = NewClientServer(1, 1)
			cs[i].linear = i == 0
			outs[i] = Out{Outbox: new(wire.Outbox)}
		}
		dims := 1 + r.IntN(world.MaxDims)
		cell := []float64{1, 10, 40}[r.IntN(3)]
		for frame := range 20 {
			f := Frame{Now: time.Duration(frame) * 100 * time.Millisecond, Self: 1, Dims: dims}
			for i := range r.IntN(40) {
				p := Primary{ID: world.ObjectID(i + 1), Loc: randPoint(r, cell, r.IntN(10) == 0),
					Controller: wire.NodeID(1 + r.IntN(10))}
				for range r.IntN(3) {
					p.Interest = append(p.Interest, randBox(r, cell))
				}
				f.Primaries = append(f.Primaries, p)
			}
			for i := range cs {
				cs[i].Tick(&f, &outs[i])
			}
			if !slices.Equal(outs[0].Push, outs[1].Push) {
				t.Fatalf("seed %d frame %d: pushes by scanning %v, with the index %v", seed, frame, outs[0].Push, outs[1].Push)
			}
			pushes += len(outs[0].Push)
			outs[0].Reset()
			outs[1].Reset()
		}
	}
	if pushes < seeds*20 {
		t.Fatalf("only %d pushes in %d runs: the workload does not exercise the views", pushes, seeds)
	}
}
