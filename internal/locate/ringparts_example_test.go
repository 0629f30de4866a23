package locate_test

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/world"
)

// A rendezvous stores publications and subscriptions as soft state and
// matches them in both directions: a subscription at once against the
// stored publications, a publication against the stored subscriptions.
func ExampleStore() {
	keys, _ := locate.NewLinearMap(world.Box{Max: world.Point{1000, 1000}})
	s, _ := locate.NewStore(locate.StoreConfig{Dims: 2, Keys: keys})

	// Node 2 publishes its object 2.1 at (100, 100) for 1.5 s.
	s.Publish(0, locate.Pub{ID: world.MakeObjectID(2, 1), Node: 2, Loc: world.Point{100, 100}, At: 0, TTL: 1500 * time.Millisecond}, nil)
	// Node 3 subscribes to a box around (110, 90) for 1 s: matched at once.
	box := world.BoxAround(world.Point{110, 90}, world.Point{20, 20})
	ms, _ := s.Subscribe(100*time.Millisecond, 3, 0, []world.Box{box}, time.Second, nil)
	for _, m := range ms {
		fmt.Printf("to node %d: %v at %v until %v\n", m.To, m.Pub.ID, m.Pub.Loc[:2], m.Pub.Until)
	}
	// Node 4's object moves into the box: matched against the subscription.
	ms, _ = s.Publish(200*time.Millisecond, locate.Pub{ID: world.MakeObjectID(4, 7), Node: 4, Loc: world.Point{120, 95}, At: 200 * time.Millisecond, TTL: time.Second}, nil)
	for _, m := range ms {
		fmt.Printf("to node %d: %v at %v\n", m.To, m.Pub.ID, m.Pub.Loc[:2])
	}
	// At 1.1 s the subscription has expired, at 1.2 s the second
	// publication, at 1.5 s the first.
	for _, at := range []time.Duration{1100, 1200, 1500} {
		s.Expire(at * time.Millisecond)
		pubs, subs := s.Len()
		fmt.Printf("at %v: %d publications, %d subscriptions\n", at*time.Millisecond, pubs, subs)
	}
	// Output:
	// to node 3: 2.1 at [100 100] until 1.5s
	// to node 3: 4.7 at [120 95]
	// at 1.1s: 2 publications, 0 subscriptions
	// at 1.2s: 1 publications, 0 subscriptions
	// at 1.5s: 0 publications, 0 subscriptions
}

// The Hilbert mapping turns a box into a few contiguous key ranges; the
// x mapping into one range that spans the box's whole x extent.
func ExampleHilbertMap() {
	ext := world.Box{Max: world.Point{1024, 1024}}
	h, _ := locate.NewHilbertMap(ext, 10, 4)
	x, _ := locate.NewLinearMap(ext)
	box := world.BoxAround(world.Point{500, 300}, world.Point{20, 20})
	span := func(rs []locate.KeyRange) float64 {
		var s float64
		for _, r := range rs {
			s += float64(r.Hi-r.Lo) + 1
		}
		return 100 * s / (1 << 64)
	}
	hr, xr := h.BoxRanges(box, nil), x.BoxRanges(box, nil)
	fmt.Printf("hilbert: %d ranges over %.2f%% of the circle\n", len(hr), span(hr))
	fmt.Printf("x:       %d range over %.2f%% of the circle\n", len(xr), span(xr))
	// Output:
	// hilbert: 4 ranges over 0.27% of the circle
	// x:       1 range over 3.91% of the circle
}

// Interest prediction widens a box by how far the object moves within
// PredTime (per direction) plus how far an entering object moves while its
// publication is stale or in flight.
func ExamplePredictor() {
	p, _ := locate.NewPredictor(locate.PredictConfig{PredTime: time.Second, PubTime: 100 * time.Millisecond,
		PubTTL: 400 * time.Millisecond, PubSpeed: world.Point{10, 10}, Window: 5})
	for i := range 6 { // walking at (+8, -3) units/s
		p.Observe(1, time.Duration(i)*100*time.Millisecond, world.Point{0.8 * float64(i), -0.3 * float64(i)})
	}
	v := p.Velocity(1)
	fmt.Printf("velocity (%.1f, %.1f)\n", v[0], v[1])
	interest := []world.Box{world.BoxAround(world.Point{4, -1.5}, world.Point{20, 20})}
	pred := p.Predict(1, world.Point{}, false, interest, nil)
	fmt.Printf("x %.1f..%.1f, y %.1f..%.1f, TTL %v\n", pred[0].Min[0], pred[0].Max[0], pred[0].Min[1], pred[0].Max[1], p.TTL())
	// Output:
	// velocity (8.0, -3.0)
	// x -21.0..37.0, y -29.5..23.5, TTL 1s
}

// The aggregator sends a predicted box only when the box the object needs
// now is no longer covered by a live subscription, merging what it sends.
func ExampleAggregator() {
	a, _ := locate.NewAggregator(2, 0, 0.5)
	need := []world.Box{world.BoxAround(world.Point{0, 0}, world.Point{20, 20}), world.BoxAround(world.Point{10, 0}, world.Point{20, 20})}
	pred := []world.Box{world.BoxAround(world.Point{0, 0}, world.Point{30, 30}), world.BoxAround(world.Point{10, 0}, world.Point{30, 30})}
	out, _ := a.Plan(0, need, pred, time.Second, nil)
	fmt.Println("frame 0:", len(out), "box sent:", out)
	out, _ = a.Plan(100*time.Millisecond, need, pred, time.Second, nil)
	fmt.Println("frame 1:", len(out), "boxes sent")
	out, _ = a.Plan(time.Second, need, pred, time.Second, nil)
	fmt.Println("after the TTL:", len(out), "box sent")
	// Output:
	// frame 0: 1 box sent: [{[-30 -30 0 0] [40 30 0 0]}]
	// frame 1: 0 boxes sent
	// after the TTL: 1 box sent
}
