package game

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// field is a one-node world for the game's unit tests: every object is a
// local primary, and frames run each object's Think in ID order, as a node
// does.
type field struct {
	objs map[world.ObjectID]world.Object
	now  time.Duration
	rng  *rand.Rand
	seq  uint32
}

func newField() *field {
	return &field{objs: map[world.ObjectID]world.Object{}, rng: rand.New(rand.NewPCG(1, 2))}
}

func (f *field) Now() time.Duration { return f.now }
func (f *field) Rand() *rand.Rand   { return f.rng }

func (f *field) Lookup(id world.ObjectID) (world.Object, bool, bool) {
	o, ok := f.objs[id]
	return o, ok, ok
}

func (f *field) ids() []world.ObjectID {
	ids := make([]world.ObjectID, 0, len(f.objs))
	for id := range f.objs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (f *field) Each(box world.Box, fn func(world.Object, bool) bool) {
	for _, id := range f.ids() {
		if o := f.objs[id]; box.Contains(o.State().Location(), world.XYZ.Dims()) && !fn(o, true) {
			return
		}
	}
}

func (f *field) Create(s *world.Schema, init func(*world.State)) (world.Object, error) {
	f.seq++
	st := s.NewState(world.MakeObjectID(1, f.seq))
	init(st)
	o := s.NewObject(st)
	f.objs[st.ID()] = o
	return o, nil
}

func (f *field) Delete(id world.ObjectID) error {
	if _, ok := f.objs[id]; !ok {
		return world.ErrUnknownObject
	}
	delete(f.objs, id)
	return nil
}

func (f *field) WriteTo(id world.ObjectID, _ *world.Schema, fn func(*world.State)) error {
	return f.Write(id, fn)
}

func (f *field) Write(id world.ObjectID, fn func(*world.State)) error {
	o, ok := f.objs[id]
	if !ok {
		return world.ErrUnknownObject
	}
	fn(o.State())
	return nil
}

// frame advances the clock by 100 ms and runs every Think.
func (f *field) frame() {
	f.now += 100 * time.Millisecond
	for _, id := range f.ids() {
		if o, ok := f.objs[id]; ok {
			o.Think(f)
		}
	}
}

func newGame(t *testing.T) *Game {
	t.Helper()
	g, err := New(60)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func (f *field) add(t *testing.T, g *Game, x, y float64, it bool) *Player {
	t.Helper()
	o, err := f.Create(g.Player, func(st *world.State) { g.Place(st, x, y, it) })
	if err != nil {
		t.Fatal(err)
	}
	return o.(*Player)
}

func TestNewRejectsBadSize(t *testing.T) {
	for _, size := range []float64{0, -5, 1, math.NaN(), math.Inf(1)} {
		if _, err := New(size); err == nil {
			t.Errorf("New(%v) accepted", size)
		}
	}
	g := newGame(t)
	if k, ok := g.Registry().Kind(g.Player); !ok || k != 1 {
		t.Errorf("player kind %v, %v; want 1", k, ok)
	}
}

// "it" runs at the nearest player, tags it within TagRadius and is then safe
// from being tagged back.
func TestChaseAndTag(t *testing.T) {
	g := newGame(t)
	f := newField()
	it := f.add(t, g, 10, 10, true)
	near := f.add(t, g, 14, 10, false)
	far := f.add(t, g, 10, 22, false)
	var frames int
	for frames = 1; frames <= 60 && it.It(); frames++ {
		f.frame()
	}
	if it.It() || !near.It() || far.It() {
		t.Fatalf("after %d frames: it %v, near %v, far %v; want the near player tagged", frames, it.It(), near.It(), far.It())
	}
	if it.Tags() != 1 || near.Caught() != 1 {
		t.Errorf("tags %d, caught %d; want 1 and 1", it.Tags(), near.Caught())
	}
	// The gap of 3 m closes at ChaseSpeed − RunSpeed = 2 m/s once the
	// runner flees.
	if frames > 25 {
		t.Errorf("tag took %d frames", frames)
	}
	// The new "it" chases the far player, not the one that just tagged it.
	for range int(SafeFor / (100 * time.Millisecond)) {
		f.frame()
		if it.It() {
			t.Fatalf("tagged back at %v, within %v", f.now, SafeFor)
		}
	}
}

// A runner flees from "it" in sight, at RunSpeed, and ignores one beyond
// Sight.
func TestFlee(t *testing.T) {
	g := newGame(t)
	f := newField()
	f.add(t, g, 30, 30, true)
	r := f.add(t, g, 35, 30, false)
	f.frame()
	if v := r.Velocity(); v[0] != RunSpeed || v[1] != 0 {
		t.Errorf("runner velocity %v, want (%v, 0) away from it", v, RunSpeed)
	}
	f2 := newField()
	f2.add(t, g, 5, 5, true)
	r2 := f2.add(t, g, 5+Sight+1, 5, false)
	f2.frame()
	// (velocities are quantised to 1/8 m/s per axis)
	if v := r2.Velocity(); math.Abs(math.Hypot(v[0], v[1])-RunSpeed/2) > 0.1 {
		t.Errorf("runner beyond sight moves at %v, want wandering at %v", math.Hypot(v[0], v[1]), RunSpeed/2)
	}
}

// Over a long game every player stays on the field, exactly one is "it" at
// a time (one node, so writes apply at once), and tags equal catches.
func TestLongGame(t *testing.T) {
	g := newGame(t)
	f := newField()
	r := rand.New(rand.NewPCG(3, 4))
	var players []*Player
	for k := range 20 {
		players = append(players, f.add(t, g, r.Float64()*g.Size, r.Float64()*g.Size, k == 0))
	}
	for range 3000 {
		f.frame()
		its := 0
		for _, p := range players {
			at := p.State().Location()
			if at[0] < 0 || at[0] > g.Size || at[1] < 0 || at[1] > g.Size {
				t.Fatalf("player %v left the field at %v", p.State().ID(), at)
			}
			if p.It() {
				its++
			}
		}
		if its != 1 {
			t.Fatalf("%d players are it at %v", its, f.now)
		}
	}
	var tags, caught int64
	for _, p := range players {
		tags += p.Tags()
		caught += p.Caught()
	}
	if tags != caught || tags < 10 {
		t.Errorf("%d tags, %d catches in 5 minutes; want equal and at least 10", tags, caught)
	}
}

// The interest is the square of half-width Sight around the player, and a
// frame's update is a few bytes.
func TestInterestAndDelta(t *testing.T) {
	g := newGame(t)
	f := newField()
	p := f.add(t, g, 20, 40, false)
	box := p.Interest(nil)
	if len(box) != 1 || box[0].Min[0] != 20-Sight || box[0].Max[1] != 40+Sight || !math.IsInf(box[0].Max[2], 1) {
		t.Fatalf("interest %v", box)
	}
	f.frame()
	before := p.State().Clone()
	f.frame()
	if n := len(world.AppendDelta(nil, before, p.State())); n > 6 {
		t.Errorf("a wandering player's update is %d bytes", n)
	}
}
