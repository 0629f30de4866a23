package locate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// grid is the coordinate grid of the tests' hand-made messages; onGrid and
// boxOnGrid round a point and a box as they travel on it.
var grid = wire.Grid{Frac: DefaultCoordFrac}

func onGrid(p world.Point) world.Point {
	for d := range p {
		p[d] = grid.Value(grid.Point(p[d]))
	}
	return p
}

func boxOnGrid(b world.Box) world.Box {
	for d := range b.Min {
		b.Min[d], b.Max[d] = grid.Value(grid.Floor(b.Min[d])), grid.Value(grid.Ceil(b.Max[d]))
	}
	return b
}

// TestDirectoryMatchesReference drives a rendezvous with random
// publications, subscriptions and expiries and compares every batch of
// matches it sends with a brute-force reference over the soft state.
func TestDirectoryMatchesReference(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 3))
		d, err := NewDirectory(1, DefaultDirectoryConfig(1))
		if err != nil {
			t.Fatal(err)
		}
		type rpub struct {
			node      wire.NodeID
			loc       world.Point
			until     time.Duration
			skip      []wire.NodeID
			skipUntil time.Duration // the skip list holds PublishTTL after arrival
		}
		type rsub struct {
			boxes []world.Box
			until time.Duration
		}
		pubs := map[world.ObjectID]rpub{}
		subs := map[wire.NodeID]rsub{}
		var ob wire.Outbox
		out := Out{Outbox: &ob}
		now := time.Duration(0)
		for step := range 300 {
			now += time.Duration(r.IntN(300)) * time.Millisecond
			from := wire.NodeID(2 + r.IntN(5))
			ttl := time.Duration(200+r.IntN(2000)) * time.Millisecond
			var want []string
			var body []byte
			var typ wire.Type
			if r.IntN(2) == 0 {
				m := wire.Pubs{TTL: ttl, Dims: 2, Grid: grid}
				for range 1 + r.IntN(5) {
					id := world.MakeObjectID(uint32(from), uint32(1+r.IntN(6)))
					loc := onGrid(world.Point{r.Float64() * 100, r.Float64() * 100}) // as it arrives
					var skip []wire.NodeID                                           // holders that need no match
					for range r.IntN(3) * r.IntN(4) {
						skip = append(skip, wire.NodeID(2+r.IntN(5)))
					}
					m.Pubs = append(m.Pubs, wire.Pub{ID: id, Node: from, Loc: loc, Skip: skip})
					pubs[id] = rpub{from, loc, now + ttl, skip, now + d.Config().PublishTTL}
					for n, s := range subs {
						if n != from && s.until > now && !slices.Contains(skip, n) && inAny(loc, s.boxes, 2) {
							want = append(want, fmt.Sprintf("%d:%v", n, id))
						}
					}
				}
				typ, body = wire.TypePublish, wire.AppendPubs(nil, wire.TypePublish, &m)
			} else {
				m := wire.Subscribe{TTL: ttl, Dims: 2, Grid: grid}
				for range r.IntN(3) {
					c := world.Point{r.Float64() * 100, r.Float64() * 100}
					m.Boxes = append(m.Boxes, boxOnGrid(world.BoxAround(c, world.Point{5 + r.Float64()*30, 5 + r.Float64()*30})))
				}
				// A live subscription's subscriber already has the
				// publications in its boxes: only the new boxes' others
				// are matched.
				var had []world.Box
				if old, ok := subs[from]; ok && old.until > now {
					had = old.boxes
				}
				if len(m.Boxes) == 0 {
					delete(subs, from)
				} else {
					subs[from] = rsub{m.Boxes, now + ttl}
				}
				for id, p := range pubs {
					if p.node != from && p.until > now && !(now < p.skipUntil && slices.Contains(p.skip, from)) && inAny(p.loc, m.Boxes, 2) && !inAny(p.loc, had, 2) {
						want = append(want, fmt.Sprintf("%d:%v", from, id))
					}
				}
				typ, body = wire.TypeSubscribe, wire.AppendSubscribe(nil, &m)
			}
			if r.IntN(3) == 0 {
				d.Tick(&Frame{Now: now, Self: 1, Dims: 2}, &out) // expiry
				ob.Reset()
			}
			fr, _ := wire.OpenFrames(append(wire.AppendHeader(nil), body...))
			_, b, _ := fr.Next()
			if err := d.Step(now, from, typ, b, &out); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ob.Packets(1, nil) {
				fr, _ := wire.OpenFrames(p.Payload)
				for {
					ft, fb, ok := fr.Next()
					if !ok {
						break
					}
					if ft != wire.TypeMatch || p.Class != wire.ClassMatching {
						t.Fatalf("rendezvous sent %v in a %v packet", ft, p.Class)
					}
					var m wire.Pubs
					if err := m.Decode(fb); err != nil {
						t.Fatal(err)
					}
					for _, pb := range m.Pubs {
						if len(pb.Skip) > 0 {
							t.Fatalf("a match carries a skip list %v", pb.Skip)
						}
						got = append(got, fmt.Sprintf("%d:%v", p.To, pb.ID))
						if m.TTL <= 0 {
							t.Fatalf("match with TTL %v", m.TTL)
						}
					}
				}
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d (%v from %d): matches %v, reference %v", seed, step, typ, from, got, want)
			}
		}
	}
}

func TestDirectorySubscriberSide(t *testing.T) {
	d, err := NewDirectory(2, DirectoryConfig{Rendezvous: 1, Margin: world.Point{5, 5}})
	if err != nil {
		t.Fatal(err)
	}
	var ob wire.Outbox
	out := Out{Outbox: &ob}
	view := []world.Box{world.BoxAround(world.Point{50, 50}, world.Point{10, 10})}
	f := &Frame{Now: 0, Self: 2, Dims: 2, View: view,
		Primaries: []Primary{{ID: world.MakeObjectID(2, 1), Loc: world.Point{50, 50}, Controller: 2, New: true}}}
	d.Tick(f, &out)
	ps := ob.Packets(2, nil)
	if len(ps) != 1 || ps[0].To != 1 || ps[0].Class != wire.ClassDiscovery {
		t.Fatalf("first tick sent %+v", ps)
	}
	// Moving less than the margin needs no new subscription before the
	// refresh period; moving more does.
	f.Primaries[0].New = false
	f.Now, f.View[0] = 200*time.Millisecond, world.BoxAround(world.Point{53, 50}, world.Point{10, 10})
	d.Tick(f, &out)
	if ob.Len() != 0 {
		t.Fatalf("%d frames sent after a move within the margin", ob.Len())
	}
	f.Now, f.View[0] = 300*time.Millisecond, world.BoxAround(world.Point{60, 50}, world.Point{10, 10})
	d.Tick(f, &out)
	if ob.Len() != 1 {
		t.Fatalf("%d frames sent after leaving the subscription, want 1", ob.Len())
	}
	if _, err := NewDirectory(1, DirectoryConfig{PublishPeriod: time.Second, PublishTTL: time.Second}); err == nil {
		t.Fatal("accepted a publish TTL no longer than its period")
	}
	if _, err := NewDirectory(1, DirectoryConfig{CoordFrac: wire.MaxFrac + 1}); err == nil || !strings.Contains(err.Error(), "CoordFrac") {
		t.Fatalf("a 2^-25 coordinate grid: %v, want an error naming CoordFrac", err)
	}
	if _, err := NewBroadcast(1, []wire.NodeID{1, 2, 2}); err == nil {
		t.Fatal("accepted a duplicate broadcast member")
	}
}
