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

// TestDirectoryIdle: with IdleEvery, a primary that stays put is published
// every IdleEvery with a TTL of 3 × IdleEvery, a moving one every period;
// the rendezvous keeps the newest publication of an object whatever the
// order they arrive in, and subscribers learn when each was made (At).
func TestDirectoryIdle(t *testing.T) {
	cfg := DefaultDirectoryConfig(1)
	cfg.IdleEvery = 5 * time.Second
	d, err := NewDirectory(2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ob wire.Outbox
	out := Out{Outbox: &ob}
	still, mover := world.MakeObjectID(2, 1), world.MakeObjectID(2, 2)
	count := map[world.ObjectID]int{}
	ttls := map[world.ObjectID]time.Duration{}
	for f := range 200 {
		now := time.Duration(f) * 100 * time.Millisecond
		prims := []Primary{{ID: still, Loc: world.Point{10, 10}, New: f == 0}, {ID: mover, Loc: world.Point{float64(f), 20}, New: f == 0}}
		d.Tick(&Frame{Now: now, Self: 2, Dims: 2, Primaries: prims}, &out)
		for _, p := range ob.Packets(2, nil) {
			fr, _ := wire.OpenFrames(p.Payload)
			for {
				typ, body, ok := fr.Next()
				if !ok {
					break
				}
				var m wire.Pubs
				if typ != wire.TypePublish || m.Decode(body) != nil {
					continue
				}
				for _, pub := range m.Pubs {
					if pub.At != now.Truncate(time.Millisecond) {
						t.Errorf("frame %d: %v published at %v", f, pub.ID, pub.At)
					}
					count[pub.ID]++
					ttls[pub.ID] = m.TTL
				}
			}
		}
		out.Reset()
	}
	// 20 s: the mover every 500 ms; the still one when new, once more at
	// the next period (it is idle from then on), then every 5 s.
	if count[mover] != 40 || count[still] != 5 {
		t.Errorf("publications: mover %d (want 40), still %d (want 5)", count[mover], count[still])
	}
	if ttls[mover] != cfg.PublishTTL || ttls[still] != 15*time.Second {
		t.Errorf("TTLs: mover %v, still %v", ttls[mover], ttls[still])
	}

	// The rendezvous: a newer publication, then an older one that was
	// overtaken on the way; a subscription then matches the newer.
	r, err := NewDirectory(1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rb wire.Outbox
	rout := Out{Outbox: &rb}
	step := func(now time.Duration, from wire.NodeID, b []byte) {
		t.Helper()
		fr, _ := wire.OpenFrames(append(wire.AppendHeader(nil), b...))
		typ, body, _ := fr.Next()
		if err := r.Step(now, from, typ, body, &rout); err != nil {
			t.Fatal(err)
		}
	}
	pub := func(at time.Duration, x float64, ttl time.Duration) []byte {
		return wire.AppendPubs(nil, wire.TypePublish, &wire.Pubs{TTL: ttl, Dims: 2, Pubs: []wire.Pub{{ID: still, Node: 2, Loc: world.Point{x, 10}, At: at}}})
	}
	step(time.Second, 2, pub(900*time.Millisecond, 50, 1500*time.Millisecond))
	step(time.Second, 2, pub(400*time.Millisecond, 10, 15*time.Second))
	step(time.Second, 3, wire.AppendSubscribe(nil, &wire.Subscribe{TTL: 3 * time.Second, Dims: 2,
		Boxes: []world.Box{{Min: world.Point{0, 0}, Max: world.Point{100, 100}}}}))
	for _, p := range rb.Packets(1, nil) {
		fr, _ := wire.OpenFrames(p.Payload)
		typ, body, _ := fr.Next()
		var m wire.Pubs
		if typ != wire.TypeMatch || m.Decode(body) != nil || len(m.Pubs) != 1 {
			t.Fatalf("rendezvous sent %v %x", typ, body)
		}
		if got := m.Pubs[0]; got.Loc[0] != 50 || got.At != 900*time.Millisecond {
			t.Errorf("matched %+v, want the newer publication (x 50, at 900ms)", got)
		}
	}
}
