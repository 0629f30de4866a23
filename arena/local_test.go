package arena

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/world"
)

// probe is a scriptable test object.
type probe struct {
	st     *world.State
	think  func(ctx world.Context)
	thinks int
}

func (p *probe) State() *world.State                  { return p.st }
func (p *probe) Interest(dst []world.Box) []world.Box { return dst }
func (p *probe) Think(ctx world.Context) {
	p.thinks++
	if p.think != nil {
		p.think(ctx)
	}
}

var probeFields = []world.Field{
	{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float}, {Name: "z", Type: world.Float},
	{Name: "hp", Type: world.Int}, {Name: "flag", Type: world.Bool},
}

var probeSchema = world.MustSchema("test.probe", world.XYZ, probeFields, func(st *world.State) world.Object { return &probe{st: st} })

func probeAt(l *Local, t *testing.T, node int, x, y float64) (world.ObjectID, *probe) {
	t.Helper()
	id, err := l.Spawn(node, probeSchema, func(s *world.State) { s.SetLocation(world.Point{x, y}) })
	if err != nil {
		t.Fatal(err)
	}
	obj, _, _ := l.Lookup(id)
	return id, obj.(*probe)
}

func TestLocalContextSemantics(t *testing.T) {
	reg, _ := world.NewRegistry(world.XYZ, probeSchema)
	l, err := NewLocal(reg, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	a, pa := probeAt(l, t, 0, 0, 0)
	b, pb := probeAt(l, t, 1, 5, 5)
	var created world.ObjectID
	pa.think = func(ctx world.Context) {
		if ctx.Now() != 0 {
			return
		}
		// Own node: primary; other node: replica.
		if _, prim, ok := ctx.Lookup(a); !ok || !prim {
			t.Error("own object not a primary")
		}
		if _, prim, ok := ctx.Lookup(b); !ok || prim {
			t.Error("other node's object not a replica")
		}
		if err := ctx.Delete(b); !errors.Is(err, world.ErrNotPrimary) {
			t.Errorf("deleting a replica: %v", err)
		}
		if err := ctx.Delete(12345); !errors.Is(err, world.ErrUnknownObject) {
			t.Errorf("deleting an unknown object: %v", err)
		}
		if err := ctx.Write(12345, func(*world.State) {}); !errors.Is(err, world.ErrUnknownObject) {
			t.Errorf("writing an unknown object: %v", err)
		}
		other := world.MustSchema("test.other", world.XYZ, probeFields, func(st *world.State) world.Object { return &probe{st: st} })
		if _, err := ctx.Create(other, nil); !errors.Is(err, world.ErrUnregistered) {
			t.Errorf("creating an unregistered kind: %v", err)
		}
		// A tentative write to the replica: numeric fields add, bools set.
		if err := ctx.Write(b, func(s *world.State) { s.SetInt(3, s.Int(3)-30); s.SetBool(4, true) }); err != nil {
			t.Error(err)
		}
		obj, err := ctx.Create(probeSchema, func(s *world.State) { s.SetLocation(world.Point{1, 1}) })
		if err != nil {
			t.Fatal(err)
		}
		created = obj.State().ID()
		if created.Origin() != 0 {
			t.Errorf("created on node %d, want 0", created.Origin())
		}
		// Visible at once, in ID order.
		var seen []world.ObjectID
		ctx.Each(world.BoxAround(world.Point{}, world.Point{10, 10, 10}), func(o world.Object, _ bool) bool {
			seen = append(seen, o.State().ID())
			return true
		})
		if want := []world.ObjectID{a, created, b}; !slices.Equal(seen, want) {
			t.Errorf("Each saw %v, want %v", seen, want)
		}
	}
	// b deletes itself in frame 1: it must not be found afterwards.
	pb.think = func(ctx world.Context) {
		if ctx.Now() == Frame {
			if err := ctx.Delete(b); err != nil {
				t.Error(err)
			}
		}
	}
	l.Step()
	if pb.st.Int(3) != -30 || !pb.st.Bool(4) {
		t.Errorf("tentative write gave hp %d flag %v, want -30 true", pb.st.Int(3), pb.st.Bool(4))
	}
	obj, _, _ := l.Lookup(created)
	if obj.(*probe).thinks != 0 {
		t.Error("an object created during a frame thought in that frame")
	}
	l.Step()
	if obj.(*probe).thinks != 1 {
		t.Errorf("created object thought %d times after the next frame, want 1", obj.(*probe).thinks)
	}
	if _, _, ok := l.Lookup(b); ok || l.Len() != 2 {
		t.Errorf("deleted object still there (len %d)", l.Len())
	}
	if _, err := l.Spawn(2, probeSchema, nil); err == nil {
		t.Error("spawn on node 2 of 2 accepted")
	}
	if _, err := NewLocal(reg, 0, 1); err == nil {
		t.Error("zero nodes accepted")
	}
}

// TestLocalEachMatchesBruteForce moves objects at random and checks every
// Each against a scan of all objects, seeded.
func TestLocalEachMatchesBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 9))
		reg, _ := world.NewRegistry(world.XYZ, probeSchema)
		l, _ := NewLocal(reg, 3, seed)
		var probes []*probe
		for range 50 + rng.IntN(100) {
			_, p := probeAt(l, t, rng.IntN(3), rng.Float64()*200-50, rng.Float64()*200-50)
			probes = append(probes, p)
			p.think = func(ctx world.Context) {
				if rng.IntN(4) == 0 {
					p.st.SetLocation(world.Point{rng.Float64()*200 - 50, rng.Float64()*200 - 50})
				}
			}
		}
		for range 5 {
			l.Step()
			for range 20 {
				c := world.Point{rng.Float64()*200 - 50, rng.Float64()*200 - 50}
				h := world.Point{rng.Float64() * 60, rng.Float64() * 60, math.Inf(1)}
				if rng.IntN(10) == 0 {
					h[0] = math.Inf(1)
				}
				box := world.BoxAround(c, h)
				var want, got []world.ObjectID
				for _, p := range probes {
					if box.Contains(p.st.Location(), 3) {
						want = append(want, p.st.ID())
					}
				}
				slices.Sort(want)
				localCtx{l: l}.Each(box, func(o world.Object, _ bool) bool {
					got = append(got, o.State().ID())
					return true
				})
				if !slices.Equal(got, want) {
					t.Fatalf("seed %d: Each(%v) = %v, want %v", seed, box, got, want)
				}
			}
		}
	}
}
