package locate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Benchmarks of the ring locator's parts, on the model workload of
// bench_test.go: n players at 1,024 m² each, walking at 10 m/s, each
// interested in a 40 m × 40 m box.

func benchKeyMaps(b *testing.B, n int) map[string]KeyMap {
	side := math.Sqrt(float64(n) * benchArea)
	ext := extentBox(side, side)
	lin, err := NewLinearMap(ext)
	if err != nil {
		b.Fatal(err)
	}
	hil, err := NewHilbertMap(ext, DefaultHilbertOrder, DefaultMaxRanges)
	if err != nil {
		b.Fatal(err)
	}
	fit, err := NewHilbertMap(ext, HilbertOrderFor(ext, 2*benchInterest/4), DefaultMaxRanges)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := NewRegionMap(ext, n)
	if err != nil {
		b.Fatal(err)
	}
	return map[string]KeyMap{"x": lin, "hilbert": hil, "hilbert-fit": fit, "dht": reg}
}

// BenchmarkKeyMap measures one publication's key (point) and one
// subscription's ranges (box) under each mapping; hilbert is the default
// order 10, hilbert-fit the order HilbertOrderFor gives for 10 m cells (a
// quarter of the interest box).
func BenchmarkKeyMap(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		maps := benchKeyMaps(b, n)
		w := newWalkers(n, 5)
		for _, name := range []string{"x", "hilbert", "hilbert-fit", "dht"} {
			m := maps[name]
			b.Run(fmt.Sprintf("%s/point/n=%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				var sink uint64
				for b.Loop() {
					sink += m.PointKey(w.pos[i%n])
					i++
				}
				_ = sink
			})
			b.Run(fmt.Sprintf("%s/box/n=%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				var dst []KeyRange
				i, ranges := 0, 0
				for b.Loop() {
					dst = m.BoxRanges(w.interest(i%n), dst[:0])
					ranges += len(dst)
					i++
				}
				b.ReportMetric(float64(ranges)/float64(i), "ranges/op")
			})
		}
	}
}

// benchStore fills a store with n players' publications and
// subscriptions (one per player, from n/8 nodes of 8 players each).
func benchStore(b *testing.B, n int, km KeyMap) (*Store, *walkers) {
	s, err := NewStore(StoreConfig{Dims: 2, Keys: km})
	if err != nil {
		b.Fatal(err)
	}
	w := newWalkers(n, 6)
	box := make([]world.Box, 1)
	for i := range n {
		node := wire.NodeID(i/8 + 1)
		if _, err := s.Publish(0, Pub{ID: world.ObjectID(i + 1), Node: node, Loc: w.pos[i], At: 0, TTL: 1500 * time.Millisecond}, nil); err != nil {
			b.Fatal(err)
		}
		box[0] = w.interest(i)
		if _, err := s.Subscribe(0, node, uint64(i), box, time.Second, nil); err != nil {
			b.Fatal(err)
		}
	}
	s.Expire(0)
	return s, w
}

// BenchmarkStore measures one publication (a moved object, matched against
// the stored subscriptions) and one changed subscription (a moved box,
// matched against the stored publications) at a rendezvous holding n of
// each; every op advances time so that each item is refreshed within its
// TTL (the expiry heap works too).
func BenchmarkStore(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, op := range []string{"publish", "subscribe"} {
			b.Run(fmt.Sprintf("%s/n=%d", op, n), func(b *testing.B) {
				km := benchKeyMaps(b, n)["x"]
				s, w := benchStore(b, n, km)
				var ms, other []Match
				box := make([]world.Box, 1)
				i, matches := 0, 0
				now := time.Duration(0)
				b.ReportAllocs()
				for b.Loop() {
					k := i % n
					if k == 0 {
						w.step()
						now += 100 * time.Millisecond
					}
					node := wire.NodeID(k/8 + 1)
					var err error
					if op == "publish" {
						ms, err = s.Publish(now, Pub{ID: world.ObjectID(k + 1), Node: node, Loc: w.pos[k], At: now, TTL: 1500 * time.Millisecond}, ms[:0])
						if err == nil {
							box[0] = w.interest(k) // keep the subscriptions alive too
							other, err = s.Subscribe(now, node, uint64(k), box, time.Second, other[:0])
						}
					} else {
						box[0] = w.interest(k)
						ms, err = s.Subscribe(now, node, uint64(k), box, time.Second, ms[:0])
						if err == nil {
							other, err = s.Publish(now, Pub{ID: world.ObjectID(k + 1), Node: node, Loc: w.pos[k], At: now, TTL: 1500 * time.Millisecond}, other[:0])
						}
					}
					if err != nil {
						b.Fatal(err)
					}
					matches += len(ms)
					i++
				}
				b.ReportMetric(float64(matches)/float64(i), "matches/op")
			})
		}
	}
}

// BenchmarkStoreHandoff measures handing an eighth of the key circle
// (Export, Drop, then Import into an empty store) from a rendezvous
// holding n publications and n subscriptions; one op is the whole
// hand-off and its reverse.
func BenchmarkStoreHandoff(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			km := benchKeyMaps(b, n)["x"]
			s, _ := benchStore(b, n, km)
			o, _ := NewStore(StoreConfig{Dims: 2, Keys: km})
			var h Handoff
			lo, hi := uint64(3)<<61, uint64(4)<<61-1
			moved := 0
			b.ReportAllocs()
			for b.Loop() {
				s.Export(lo, hi, &h)
				s.Drop(lo, hi)
				if err := o.Import(0, &h); err != nil {
					b.Fatal(err)
				}
				moved = len(h.Pubs) + len(h.Subs)
				o.Export(lo, hi, &h)
				o.Drop(lo, hi)
				if err := s.Import(0, &h); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(moved), "items")
		})
	}
}

// BenchmarkPredict measures one object's frame of interest prediction:
// Observe its location, then Predict and Need its interest box.
func BenchmarkPredict(b *testing.B) {
	const n = 1000
	p, err := NewPredictor(DefaultPredictConfig())
	if err != nil {
		b.Fatal(err)
	}
	w := newWalkers(n, 7)
	in := make([]world.Box, 1)
	var dst []world.Box
	now := time.Duration(0)
	for f := range 10 { // fill the windows
		w.step()
		for i := range n {
			p.Observe(world.ObjectID(i+1), time.Duration(f)*100*time.Millisecond, w.pos[i])
		}
		now = time.Duration(f) * 100 * time.Millisecond
	}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		k := i % n
		if k == 0 {
			w.step()
			now += 100 * time.Millisecond
		}
		id := world.ObjectID(k + 1)
		p.Observe(id, now, w.pos[k])
		in[0] = w.interest(k)
		dst = p.Predict(id, world.Point{}, false, in, dst[:0])
		dst = p.Need(in, dst)
		i++
	}
}

// clusteredBoxes returns the predicted interests of n players of one node
// fighting in a few groups (overlapping boxes).
func clusteredBoxes(n int) []world.Box {
	w := newWalkers(n, 8)
	boxes := make([]world.Box, n)
	for i := range n {
		c := w.pos[i%4] // four clusters
		c[0] += float64(i%7) * 3
		c[1] += float64(i%5) * 4
		boxes[i] = world.BoxAround(c, world.Point{benchInterest + 10, benchInterest + 10})
	}
	return boxes
}

// BenchmarkMerge measures the aggregation filter on n overlapping boxes.
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{8, 32, 128} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			boxes := clusteredBoxes(n)
			var dst []world.Box
			var group []int
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, group, err = Merge(boxes, 2, 0.3, dst[:0], group); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(dst)), "boxes")
		})
	}
}

// BenchmarkAggregatorPlan measures one node's frame of subscription
// planning with n primaries walking: Observe, Need, Predict for each, then
// Plan (cache check, merge, record).
func BenchmarkAggregatorPlan(b *testing.B) {
	for _, n := range []int{8, 64} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			p, _ := NewPredictor(DefaultPredictConfig())
			a, err := NewAggregator(2, 50*time.Millisecond, 0.3)
			if err != nil {
				b.Fatal(err)
			}
			w := newWalkers(n, 9)
			in := make([]world.Box, 1)
			var need, pred, out []world.Box
			now := time.Duration(0)
			frames, sent := 0, 0
			b.ReportAllocs()
			for b.Loop() {
				now += 100 * time.Millisecond
				w.step()
				need, pred = need[:0], pred[:0]
				for i := range n {
					id := world.ObjectID(i + 1)
					p.Observe(id, now, w.pos[i])
					in[0] = w.interest(i)
					need = p.Need(in, need)
					pred = p.Predict(id, world.Point{}, false, in, pred)
				}
				if out, err = a.Plan(now, need, pred, p.TTL(), out[:0]); err != nil {
					b.Fatal(err)
				}
				frames++
				sent += len(out)
			}
			b.ReportMetric(float64(sent)/float64(frames), "boxes-sent/frame")
		})
	}
}

// BenchmarkStoreScan is BenchmarkStore on the test's linear-scan
// reference (refStore: maps, every operation scans everything and expires
// by a full pass), for the speed-up of the indexes and the expiry heap.
func BenchmarkStoreScan(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		for _, op := range []string{"publish", "subscribe"} {
			b.Run(fmt.Sprintf("%s/n=%d", op, n), func(b *testing.B) {
				km := benchKeyMaps(b, n)["x"]
				s := newRefStore(2, km, time.Minute)
				w := newWalkers(n, 6)
				box := make([]world.Box, 1)
				for i := range n {
					s.publish(world.ObjectID(i+1), wire.NodeID(i/8+1), w.pos[i], world.Point{}, 0, 1500*time.Millisecond)
					box[0] = w.interest(i)
					s.subscribe(wire.NodeID(i/8+1), uint64(i), box, time.Second)
				}
				i, matches := 0, 0
				now := time.Duration(0)
				b.ReportAllocs()
				for b.Loop() {
					k := i % n
					if k == 0 {
						w.step()
						now += 100 * time.Millisecond
					}
					node := wire.NodeID(k/8 + 1)
					s.expire(now)
					box[0] = w.interest(k)
					if op == "publish" {
						matches += len(s.publish(world.ObjectID(k+1), node, w.pos[k], world.Point{}, 0, 1500*time.Millisecond))
						s.expire(now)
						s.subscribe(node, uint64(k), box, time.Second)
					} else {
						matches += len(s.subscribe(node, uint64(k), box, time.Second))
						s.expire(now)
						s.publish(world.ObjectID(k+1), node, w.pos[k], world.Point{}, 0, 1500*time.Millisecond)
					}
					i++
				}
				b.ReportMetric(float64(matches)/float64(i), "matches/op")
			})
		}
	}
}
