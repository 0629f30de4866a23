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

// TestDirectoryCheckThenStep drives two rendezvous directories and two
// subscriber directories with the same random packets of one to three
// publish, subscribe and match frames, and frames: one of each pair checks
// every frame of a packet before stepping them (as a node does, with
// StepChecked for the last frame checked, which reuses what Check
// decoded), the other only steps. Their output
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
				held := -1 // the frame Check decoded last
				if k%2 == 0 {
					fr, _ := wire.OpenFrames(b)
					for i := 0; ; i++ {
						typ, body, ok := fr.Next()
						if !ok {
							break
						}
						if err := d.Check(typ, body); err != nil {
							t.Fatal(err)
						}
						held = i
					}
				}
				fr, _ := wire.OpenFrames(b)
				for i := 0; ; i++ {
					typ, body, ok := fr.Next()
					if !ok {
						break
					}
					step := d.Step
					if i == held {
						step = d.StepChecked
					}
					if err := step(now, from, typ, body, &outs[k]); err != nil {
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
	_, rb, _, step := newRendezvous(t, cfg)
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

// TestDirectoryReckon: with Reckon, the rendezvous sends a subscriber a
// publication only when the last one it sent does not predict it (or runs
// out before the next), or when the subscriber missed its predecessor (a
// holder skipped meanwhile); matches carry the velocity.
func TestDirectoryReckon(t *testing.T) {
	cfg := DefaultDirectoryConfig(1)
	cfg.Reckon = true
	_, ob, _, step := newRendezvous(t, cfg)
	const s = time.Second
	id := world.MakeObjectID(2, 1)
	sent := func() []wire.Pub {
		var got []wire.Pub
		for _, p := range ob.Packets(1, nil) {
			fr, _ := wire.OpenFrames(p.Payload)
			for {
				typ, body, ok := fr.Next()
				if !ok {
					break
				}
				var m wire.Pubs
				if typ != wire.TypeMatch || m.Decode(body) != nil {
					t.Fatalf("rendezvous sent %v %x", typ, body)
				}
				got = append(got, m.Pubs...)
			}
		}
		return got
	}
	pub := func(at time.Duration, x, y, vx, vy float64, skip ...wire.NodeID) []byte {
		return wire.AppendPubs(nil, wire.TypePublish, &wire.Pubs{TTL: cfg.PublishTTL, Dims: 2, Grid: wire.Grid{Frac: DefaultCoordFrac},
			Pubs: []wire.Pub{{ID: id, Node: 2, Loc: world.Point{x, y}, Vel: world.Point{vx, vy}, At: at, Skip: skip}}})
	}
	step(0, 3, wire.AppendSubscribe(nil, &wire.Subscribe{TTL: time.Minute, Dims: 2,
		Boxes: []world.Box{{Min: world.Point{0, 0}, Max: world.Point{100, 100}}}}))
	if got := sent(); len(got) != 0 {
		t.Fatalf("matches before any publication: %+v", got)
	}
	steps := []struct {
		now    time.Duration
		x, y   float64
		vx, vy float64
		skip   bool
		sent   bool
		reason string
	}{
		{0, 10, 10, 10, 0, false, true, "first"},
		{s / 2, 15, 10, 10, 0, false, false, "on the line"},
		{s, 20.5, 10, 10, 0, false, true, "on the line, but the one told runs out at 1.5 s"},
		{3 * s / 2, 25, 10, 10, 0, false, false, "on the line of the one told at 1 s"},
		{2 * s, 30, 13, 0, 10, false, true, "turned"},
		{5 * s / 2, 30, 18, 0, 10, true, false, "a holder: skipped"},
		{3 * s, 30, 23, 0, 10, false, true, "on the line, but the predecessor was skipped"},
	}
	for i, st := range steps {
		var skip []wire.NodeID
		if st.skip {
			skip = []wire.NodeID{3}
		}
		step(st.now, 2, pub(st.now, st.x, st.y, st.vx, st.vy, skip...))
		got := sent()
		if len(got) != map[bool]int{false: 0, true: 1}[st.sent] {
			t.Fatalf("step %d (%s) at %v: sent %+v", i, st.reason, st.now, got)
		}
		if st.sent && (got[0].Vel != world.Point{st.vx, st.vy} || got[0].Loc != world.Point{st.x, st.y} || got[0].Node != 2) {
			t.Errorf("step %d: sent %+v, want the publication with its velocity", i, got[0])
		}
	}

	// A subscriber turns a match into a finding that moves along it.
	sub, err := NewDirectory(3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := wire.AppendPubs(nil, wire.TypeMatch, &wire.Pubs{TTL: cfg.PublishTTL, Dims: 2,
		Pubs: []wire.Pub{{ID: id, Node: 2, Loc: world.Point{10, 10}, Vel: world.Point{4, -2}, At: s}}})
	fr, _ := wire.OpenFrames(append(wire.AppendHeader(nil), m...))
	typ, body, _ := fr.Next()
	var sout Out
	if err := sub.Step(2*s, 1, typ, body, &sout); err != nil {
		t.Fatal(err)
	}
	if len(sout.Found) != 1 || sout.Found[0].Where(2*s+s/2, 2) != (world.Point{12, 9}) {
		t.Fatalf("found %+v, want one at (12, 9) half a second after it was heard", sout.Found)
	}
}

// TestDirectoryBatchMatches: with BatchMatches, the matches a subscriber
// gets from several publications wait in the outbox and leave together,
// in one packet, once the node releases them (its next frame).
func TestDirectoryBatchMatches(t *testing.T) {
	cfg := DefaultDirectoryConfig(1)
	cfg.BatchMatches = true
	_, ob, _, step := newRendezvous(t, cfg)
	step(0, 3, wire.AppendSubscribe(nil, &wire.Subscribe{TTL: time.Minute, Dims: 2,
		Boxes: []world.Box{{Min: world.Point{0, 0}, Max: world.Point{100, 100}}}}))
	for i := range 4 {
		from := wire.NodeID(4 + i)
		step(time.Duration(i)*10*time.Millisecond, from, wire.AppendPubs(nil, wire.TypePublish, &wire.Pubs{TTL: cfg.PublishTTL, Dims: 2,
			Pubs: []wire.Pub{{ID: world.MakeObjectID(uint32(from), 1), Node: from, Loc: world.Point{10, 10}}}}))
	}
	if ob.Len() != 0 || ob.Waiting() != 4 {
		t.Fatalf("before the frame: %d ready, %d waiting; want 0 and 4", ob.Len(), ob.Waiting())
	}
	ob.Release(30 * time.Millisecond)
	ps := ob.Packets(1, nil)
	if len(ps) != 1 || ps[0].To != 3 {
		t.Fatalf("after the frame: %d packets %+v, want one to node 3", len(ps), ps)
	}
	fr, _ := wire.OpenFrames(ps[0].Payload)
	n := 0
	for {
		typ, _, ok := fr.Next()
		if !ok {
			break
		}
		if typ != wire.TypeMatch {
			t.Fatalf("frame %v", typ)
		}
		n++
	}
	if n != 4 {
		t.Errorf("%d match frames in the packet, want 4", n)
	}
}

// stepFrame checks, then steps, one frame b (a frame without a packet
// header) from node from at d.
func stepFrame(t *testing.T, d *Directory, now time.Duration, from wire.NodeID, b []byte, out *Out) {
	t.Helper()
	fr, _ := wire.OpenFrames(append(wire.AppendHeader(nil), b...))
	typ, body, _ := fr.Next()
	if err := d.Check(typ, body); err != nil {
		t.Fatal(err)
	}
	if err := d.StepChecked(now, from, typ, body, out); err != nil {
		t.Fatal(err)
	}
}

// TestDirectorySkipLapse: a long-lived (idle) publication that skipped a
// holder is matched to it once the skip lapses (PublishTTL after it
// arrived), at the rendezvous's next frame, if its subscription holds the
// publication; a subscriber whose boxes do not, or that was not skipped,
// gets nothing then.
func TestDirectorySkipLapse(t *testing.T) {
	cfg := DefaultDirectoryConfig(1)
	r, ob, out, step := newRendezvous(t, cfg)
	sub := func(x0, x1 float64) []byte {
		return wire.AppendSubscribe(nil, &wire.Subscribe{TTL: time.Minute, Dims: 2,
			Boxes: []world.Box{{Min: world.Point{x0, 0}, Max: world.Point{x1, 100}}}})
	}
	step(0, 3, sub(0, 100))  // holds the publication, and was skipped
	step(0, 4, sub(50, 100)) // skipped, but its box does not hold it
	step(0, 5, sub(0, 100))  // matched at once: not skipped
	id := world.MakeObjectID(2, 1)
	step(100*time.Millisecond, 2, wire.AppendPubs(nil, wire.TypePublish, &wire.Pubs{TTL: 15 * time.Second, Dims: 2,
		Pubs: []wire.Pub{{ID: id, Node: 2, Loc: world.Point{10, 10}, At: 100 * time.Millisecond, Skip: []wire.NodeID{3, 4}}}}))
	matched := func() []wire.NodeID {
		var to []wire.NodeID
		for _, p := range ob.Packets(1, nil) {
			to = append(to, p.To)
		}
		return to
	}
	if got := matched(); !slices.Equal(got, []wire.NodeID{5}) {
		t.Fatalf("at the publication: matches to %v, want [5]", got)
	}
	frame := func(now time.Duration) []wire.NodeID {
		r.Tick(&Frame{Now: now, Self: 1, Dims: 2}, out)
		return matched()
	}
	for _, now := range []time.Duration{time.Second, 1500 * time.Millisecond} {
		if got := frame(now); len(got) != 0 {
			t.Fatalf("at %v, before the skip lapses: matches to %v", now, got)
		}
	}
	if got := frame(1700 * time.Millisecond); !slices.Equal(got, []wire.NodeID{3}) {
		t.Fatalf("after the skip lapsed: matches to %v, want [3]", got)
	}
	if got := frame(2 * time.Second); len(got) != 0 {
		t.Fatalf("a frame later: matches to %v, want none", got)
	}
}

// newRendezvous returns node 1 as the rendezvous of cfg, the outbox and Out
// it sends into, and a step function that checks and steps one frame.
func newRendezvous(t *testing.T, cfg DirectoryConfig) (*Directory, *wire.Outbox, *Out, func(now time.Duration, from wire.NodeID, b []byte)) {
	t.Helper()
	r, err := NewDirectory(1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ob := &wire.Outbox{}
	out := &Out{Outbox: ob}
	return r, ob, out, func(now time.Duration, from wire.NodeID, b []byte) { t.Helper(); stepFrame(t, r, now, from, b, out) }
}
