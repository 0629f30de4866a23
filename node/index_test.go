package node

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/world"
)

// probers is a test game for the location index: probers jump and step
// around a small square, look around with Each over boxes of every shape
// (small, degenerate, empty, huge, unbounded, NaN), nest Each calls,
// write to the objects they find (tentative writes on replicas), create
// probers and delete themselves. Every Each call's visits go to a log.
type probers struct {
	schema *world.Schema
	g      *game
	log    strings.Builder
}

const (
	pX = iota
	pY
	pAge
)

type prober struct {
	w  *probers
	st *world.State
}

func newProbers() *probers {
	w := &probers{}
	w.schema = world.MustSchema("prober", world.MustSpace("x", "y"), []world.Field{
		{Name: "x", Type: world.Float, Quantum: 0.5}, {Name: "y", Type: world.Float, Quantum: 0.5},
		{Name: "age", Type: world.Int},
	}, func(st *world.State) world.Object { return &prober{w: w, st: st} })
	reg, err := world.NewRegistry(world.MustSpace("x", "y"), w.schema)
	if err != nil {
		panic(err)
	}
	w.g = &game{registry: reg}
	return w
}

func (p *prober) State() *world.State { return p.st }
func (p *prober) Interest(dst []world.Box) []world.Box {
	return append(dst, world.BoxAround(p.st.Location(), world.Point{12, 12}))
}

// probeBox draws a query box around c.
func probeBox(r *rand.Rand, c world.Point) world.Box {
	half := float64(r.IntN(5)) * 2 // 0 (a point), 2, 4, 6, 8
	b := world.BoxAround(c, world.Point{half, half})
	switch r.IntN(12) {
	case 0:
		b.Min[0], b.Max[0] = math.Inf(-1), math.Inf(1)
	case 1:
		b = world.Unbounded()
	case 2:
		b.Min[1], b.Max[1] = b.Max[1]+1, b.Min[1] // empty
	case 3:
		b.Min[0], b.Max[0] = -1e18, 1e18
	case 4:
		b.Max[1] = math.NaN()
	case 5:
		b.Min[0] = math.Floor(b.Min[0]) // on a coordinate of the grid of positions
	}
	return b
}

func (p *prober) Think(ctx world.Context) {
	st, r := p.st, ctx.Rand()
	st.SetInt(pAge, st.Int(pAge)+1)
	switch r.IntN(4) {
	case 0:
		st.SetFloat(pX, float64(r.IntN(129))*0.5)
		st.SetFloat(pY, float64(r.IntN(129))*0.5)
	case 1, 2:
		st.SetFloat(pX, st.Float(pX)+float64(r.IntN(9)-4)*0.5)
		st.SetFloat(pY, st.Float(pY)+float64(r.IntN(9)-4)*0.5)
	}
	var seen, ahead []world.ObjectID
	fmt.Fprintf(&p.w.log, "%v %v:", ctx.Now(), st.ID())
	box := probeBox(r, st.Location())
	if r.IntN(3) == 0 {
		// The objects the walk below will visit, some of which it deletes
		// or writes to before their turn.
		ctx.Each(box, func(o world.Object, _ bool) bool { ahead = append(ahead, o.State().ID()); return true })
	}
	ctx.Each(box, func(o world.Object, primary bool) bool {
		fmt.Fprintf(&p.w.log, " %v/%v", o.State().ID(), primary)
		seen = append(seen, o.State().ID())
		if len(ahead) > 0 && r.IntN(60) == 0 {
			id := ahead[r.IntN(len(ahead))]
			if err := ctx.Delete(id); err == nil {
				fmt.Fprintf(&p.w.log, " -%v", id)
			}
		}
		if len(ahead) > 0 && r.IntN(8) == 0 {
			x := float64(r.IntN(129)) * 0.5
			_ = ctx.Write(ahead[r.IntN(len(ahead))], func(s *world.State) { s.SetFloat(pX, x) })
		}
		if r.IntN(20) == 0 {
			p.w.log.WriteString(" [")
			ctx.Each(probeBox(r, o.State().Location()), func(o world.Object, _ bool) bool {
				fmt.Fprintf(&p.w.log, " %v", o.State().ID())
				return true
			})
			p.w.log.WriteString(" ]")
		}
		return r.IntN(30) != 0
	})
	p.w.log.WriteString("\n")
	if len(seen) > 0 && r.IntN(4) == 0 {
		id := seen[r.IntN(len(seen))]
		x, y := float64(r.IntN(129))*0.5, float64(r.IntN(129))*0.5
		_ = ctx.Write(id, func(s *world.State) { s.SetFloat(pX, x); s.SetFloat(pY, y) })
	}
	if r.IntN(60) == 0 {
		loc := st.Location()
		_, _ = ctx.Create(p.w.schema, func(s *world.State) { s.SetFloat(pX, loc[0]); s.SetFloat(pY, loc[1]+0.5) })
	}
	if r.IntN(150) == 0 {
		_ = ctx.Delete(st.ID())
	}
}

// runProbers runs a 3-node directory cluster of probers and returns its
// Each log and final objects.
func runProbers(t *testing.T, seed uint64, linear bool, d time.Duration) (string, string) {
	w := newProbers()
	c := newCluster(t, w.g, clusterOpts{nodes: 3, arch: "directory", latency: 20 * time.Millisecond,
		spread: 30 * time.Millisecond, seed: seed, margin: 2, loss: 0.05})
	r := rand.New(rand.NewPCG(seed, 5))
	for _, n := range c.nodes {
		n.linear = linear
		for range 8 {
			x, y := float64(r.IntN(129))*0.5, float64(r.IntN(129))*0.5
			if _, err := n.Spawn(0, w.schema, func(s *world.State) { s.SetFloat(pX, x); s.SetFloat(pY, y) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.run(d)
	var objs strings.Builder
	c.dump(&objs)
	return w.log.String(), objs.String()
}

// TestEachIndexMatchesScan runs the same random prober games with
// Context.Each answered by the location index and by scanning every
// object, and requires identical Each visits, in the same order, and
// identical final states on every node.
func TestEachIndexMatchesScan(t *testing.T) {
	seeds, d := 8, 8*time.Second
	if testing.Short() {
		seeds, d = 3, 4*time.Second
	}
	for seed := range uint64(seeds) {
		logA, objsA := runProbers(t, seed, true, d)
		logB, objsB := runProbers(t, seed, false, d)
		if strings.Count(logA, "/") < 1000 {
			t.Fatalf("seed %d: only %d visits: the workload does not exercise Each", seed, strings.Count(logA, "/"))
		}
		if strings.Count(logA, "/false") < 100 {
			t.Fatalf("seed %d: only %d replica visits", seed, strings.Count(logA, "/false"))
		}
		if strings.Count(logA, " -") < 5 {
			t.Fatalf("seed %d: only %d deletions during a walk", seed, strings.Count(logA, " -"))
		}
		if logA != logB {
			t.Fatalf("seed %d: Each visits differ:\n%s", seed, firstDiff(logB, logA))
		}
		if objsA != objsB {
			t.Fatalf("seed %d: final objects differ:\n%s", seed, firstDiff(objsB, objsA))
		}
	}
}

// checkIndex brings n's location index up to date (as the next Tick would)
// and requires it to hold exactly the store's objects at their current
// locations: the store reports every change the index must follow.
func checkIndex(n *Node) error {
	if n.linear {
		return nil
	}
	n.syncIndex()
	count := 0
	var err error
	n.store.Range(func(obj world.Object, primary bool) bool {
		count++
		id := obj.State().ID()
		loc, v, ok := n.idx.Get(id)
		switch {
		case !ok:
			err = fmt.Errorf("node %d: %v is not in the location index", n.ID(), id)
		case v.obj != obj:
			err = fmt.Errorf("node %d: %v is indexed with another object", n.ID(), id)
		case v.primary != primary:
			err = fmt.Errorf("node %d: %v is indexed as primary %v, is %v", n.ID(), id, v.primary, primary)
		case loc != obj.State().Location():
			err = fmt.Errorf("node %d: %v indexed at %v, located at %v", n.ID(), id, loc, obj.State().Location())
		}
		return err == nil
	})
	if err == nil && count != n.idx.Len() {
		err = fmt.Errorf("node %d: %d objects indexed, %d in the store", n.ID(), n.idx.Len(), count)
	}
	return err
}

// TestViewIndexMatchesScan checks the view index, scanned (small views)
// or gridded (large ones), against a scan of the boxes, on random views
// rebuilt over and over (as every frame does) and random points.
func TestViewIndexMatchesScan(t *testing.T) {
	for seed := uint64(1); seed <= 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		dims := 1 + r.IntN(3)
		v := viewIndex{boxes: locate.NewBoxes(dims, locate.DefaultCell), dims: dims}
		for frame := range 6 {
			view := make([]world.Box, r.IntN(3*smallView))
			for i := range view {
				var b world.Box
				for d := range dims {
					lo := r.Float64() * 500
					b.Min[d], b.Max[d] = lo, lo+r.Float64()*r.Float64()*200
					switch r.IntN(40) {
					case 0: // unbounded sides (as arena's z)
						b.Min[d], b.Max[d] = math.Inf(-1), math.Inf(1)
					case 1: // flat
						b.Max[d] = b.Min[d]
					case 2: // empty
						b.Min[d], b.Max[d] = b.Max[d]+1, b.Min[d]
					}
				}
				view[i] = b
			}
			v.build(view, false)
			for range 300 {
				var p world.Point
				for d := range dims {
					p[d] = r.Float64()*800 - 100
				}
				if r.IntN(4) == 0 && len(view) > 0 {
					p = view[r.IntN(len(view))].Max // on an edge
				}
				if r.IntN(50) == 0 {
					p[0] = math.NaN()
				}
				want := false
				for _, b := range view {
					want = want || b.Contains(p, dims)
				}
				if got := v.Contains(p); got != want {
					t.Fatalf("seed %d frame %d: %d boxes, point %v: index says %v, scan %v", seed, frame, len(view), p, got, want)
				}
			}
		}
	}
}
