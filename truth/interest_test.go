package truth

import (
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// walker is a game object whose interest is the box of half-width 10
// around it.
type walker struct{ st *world.State }

func (w *walker) State() *world.State { return w.st }
func (w *walker) Interest(dst []world.Box) []world.Box {
	return append(dst, world.BoxAround(w.st.Location(), world.Point{10, 10, 1}))
}
func (w *walker) Think(world.Context) {}

var walkerSchema = world.MustSchema("truth.walker", world.XYZ, []world.Field{
	{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float}, {Name: "z", Type: world.Float},
}, func(st *world.State) world.Object { return &walker{st: st} })

// TestShrunkenViewIsCaught: a node whose own view is wrong (shrunk to a
// sliver, or empty, as a bug in its view computation would leave it) is
// measured against the interest the observer computes from the game's
// definition, so the objects the node should hold and does not count as
// missing; measured against the node's view they would not be in its
// interest at all, and the node would look perfect.
func TestShrunkenViewIsCaught(t *testing.T) {
	at := func(id world.ObjectID, x, y float64) *world.State {
		st := walkerSchema.NewState(id)
		st.SetLocation(world.Point{x, y})
		return st
	}
	mine, near, far := world.MakeObjectID(1, 1), world.MakeObjectID(2, 1), world.MakeObjectID(2, 2)
	node2 := func(s *Snapshot) {
		s.Reset(2, time.Second)
		for _, o := range []Object{{ID: near, Primary: true, Loc: world.Point{105, 100}, Version: 1, State: at(near, 105, 100)},
			{ID: far, Primary: true, Loc: world.Point{300, 300}, Version: 1, State: at(far, 300, 300)}} {
			if err := s.Add(o); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		view []world.Box
	}{
		{"empty view", nil},
		{"sliver", []world.Box{{Min: world.Point{99, 99, -1}, Max: world.Point{101, 101, 1}}}},
		{"correct view", []world.Box{world.BoxAround(world.Point{100, 100}, world.Point{10, 10, 1})}},
	} {
		for _, trust := range []bool{false, true} {
			var rec recLog
			obs, err := New(Config{Dims: 3, Recorder: &rec})
			if err != nil {
				t.Fatal(err)
			}
			var s1, s2 Snapshot
			node2(&s2)
			s1.Reset(1, time.Second)
			if err := s1.Add(Object{ID: mine, Primary: true, Loc: world.Point{100, 100}, Version: 1, State: at(mine, 100, 100)}); err != nil {
				t.Fatal(err)
			}
			if !s1.OwnInterest || len(s1.Interest) != 1 {
				t.Fatalf("%s: the snapshot's own interest is %v (set %v), want the walker's box", c.name, s1.Interest, s1.OwnInterest)
			}
			s1.View = c.view
			if trust { // what a driver that cannot read States gets
				s1.Interest, s1.OwnInterest = nil, false
			}
			if err := obs.Sample([]*Snapshot{&s2, &s1}); err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, v := range rec.views {
				if v.node == 1 {
					got = append(got, v.interest...)
					if slices.Contains(v.held, true) {
						t.Errorf("%s: node 1 holds %v", c.name, v.held)
					}
				}
			}
			want := []uint64{uint64(near)} // missing: node 1 holds nothing
			if trust && c.view == nil || trust && c.name == "sliver" {
				want = nil // the node's own view hides it
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s, node's view trusted %v: node 1's interest %v, want %v", c.name, trust, got, want)
			}
		}
	}
}
