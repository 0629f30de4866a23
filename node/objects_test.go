package node

import (
	"github.com/overworld/overworld/world"
)

// The test game: walkers move in a straight line, bounce off the walls of a
// square arena and fire missiles; missiles are attached to their shooter,
// fly, damage the first other walker they reach (a tentative write when the
// target is a replica) and delete themselves.

type game struct {
	frozen   bool    // think functions do nothing (the "quiet" phase)
	size     float64 // arena side
	walker   *world.Schema
	missile  *world.Schema
	registry *world.Registry
	// anticipate: the boxes a walker anticipates (world.Anticipator), by
	// ID; nil for none.
	anticipate map[world.ObjectID][]world.Box
}

// walker fields
const (
	wX = iota
	wY
	wVX
	wVY
	wHP
	wRange
	wFire // fire a missile every wFire frames (0: never)
	wAge
)

// missile fields
const (
	mX = iota
	mY
	mVX
	mVY
	mOwner
	mTTL
)

func newGame(size float64) *game {
	g := &game{size: size}
	g.walker = world.MustSchema("walker", world.MustSpace("x", "y"), []world.Field{
		{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float},
		{Name: "vx", Type: world.Float}, {Name: "vy", Type: world.Float},
		{Name: "hp", Type: world.Int}, {Name: "range", Type: world.Float},
		{Name: "fire", Type: world.Int}, {Name: "age", Type: world.Int},
	}, func(st *world.State) world.Object { return &walker{g: g, st: st} })
	g.missile = world.MustSchema("missile", world.MustSpace("x", "y"), []world.Field{
		{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float},
		{Name: "vx", Type: world.Float}, {Name: "vy", Type: world.Float},
		{Name: "owner", Type: world.Ref}, {Name: "ttl", Type: world.Int},
	}, func(st *world.State) world.Object { return &missile{g: g, st: st} })
	var err error
	g.registry, err = world.NewRegistry(world.MustSpace("x", "y"), g.walker, g.missile)
	if err != nil {
		panic(err)
	}
	return g
}

type walker struct {
	g  *game
	st *world.State
}

func (w *walker) State() *world.State { return w.st }

func (w *walker) Interest(dst []world.Box) []world.Box {
	r := w.st.Float(wRange)
	if r <= 0 {
		return dst
	}
	return append(dst, world.BoxAround(w.st.Location(), world.Point{r, r}))
}

func (w *walker) Anticipate(dst []world.Box) []world.Box {
	return append(dst, w.g.anticipate[w.st.ID()]...)
}

func (w *walker) Think(ctx world.Context) {
	if w.g.frozen {
		return
	}
	st := w.st
	st.SetInt(wAge, st.Int(wAge)+1)
	for _, a := range [2][2]int{{wX, wVX}, {wY, wVY}} {
		p, v := st.Float(a[0]), st.Float(a[1])
		p += v * 0.1
		if p < 0 || p > w.g.size {
			v = -v
			p = max(0, min(w.g.size, p))
		}
		st.SetFloat(a[0], p)
		st.SetFloat(a[1], v)
	}
	if f := st.Int(wFire); f > 0 && st.Int(wAge)%f == 0 {
		_, _ = ctx.Create(w.g.missile, func(m *world.State) {
			m.SetFloat(mX, st.Float(wX))
			m.SetFloat(mY, st.Float(wY))
			m.SetFloat(mVX, 20)
			m.SetRef(mOwner, st.ID())
			m.SetInt(mTTL, 15)
		})
	}
}

type missile struct {
	g  *game
	st *world.State
}

func (m *missile) State() *world.State                  { return m.st }
func (m *missile) Interest(dst []world.Box) []world.Box { return dst }
func (m *missile) AttachTo() world.ObjectID             { return m.st.Ref(mOwner) }

func (m *missile) Think(ctx world.Context) {
	if m.g.frozen {
		return
	}
	st := m.st
	st.SetFloat(mX, st.Float(mX)+st.Float(mVX)*0.1)
	st.SetFloat(mY, st.Float(mY)+st.Float(mVY)*0.1)
	st.SetInt(mTTL, st.Int(mTTL)-1)
	var hit world.ObjectID
	ctx.Each(world.BoxAround(st.Location(), world.Point{1, 1}), func(o world.Object, _ bool) bool {
		if o.State().Schema() == m.g.walker && o.State().ID() != st.Ref(mOwner) {
			hit = o.State().ID()
			return false
		}
		return true
	})
	if hit != 0 {
		_ = ctx.Write(hit, func(t *world.State) { t.SetInt(wHP, t.Int(wHP)-10) })
	}
	if hit != 0 || st.Int(mTTL) <= 0 {
		_ = ctx.Delete(st.ID())
	}
}
