package truth

import (
	"cmp"
	"errors"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestGridOffset: the observer's grid starts at the bounds' lower corner
// and clamps what lies outside into the edge cells.
func TestGridOffset(t *testing.T) {
	g := newGridSpec(2, world.Box{Min: world.Point{-100, 50}, Max: world.Point{100, 90}}, 10)
	if g.cols != 10 || g.rows != 2 {
		t.Fatalf("%d × %d cells, want 10 × 2", g.cols, g.rows)
	}
	for _, c := range []struct {
		x, y     float64
		col, row int
	}{{-100, 50, 0, 0}, {-80.5, 69.9, 0, 0}, {-79.9, 70, 1, 1}, {99, 89, 9, 1}, {-1e9, -1e9, 0, 0}, {1e9, 1e9, 9, 1}, {math.NaN(), 60, 0, 0}} {
		if col, row := g.col(c.x), g.row(c.y); col != c.col || row != c.row {
			t.Errorf("(%v, %v): cell (%d, %d), want (%d, %d)", c.x, c.y, col, row, c.col, c.row)
		}
	}
}

// scanReport lists node id's view in the order the observer's report must
// keep (staleness is sampled from it, so the summaries depend on it): box
// by box, the grid cells each box covers row by row, each cell's objects
// in its list's order, an object once (for the first box containing it),
// leaving out the node's own. Any other way of finding the view's objects
// (finer cells, skipping boxes) must give this order.
func scanReport(t *Observer, snap *Snapshot) ([]uint64, []bool) {
	id, view := snap.Node, snap.View
	var ids []uint64
	var held []bool
	seen := map[int32]bool{}
	for _, b := range view {
		c0, c1 := t.col(b.Min[0]), t.col(b.Max[0])
		r0, r1 := t.row(b.Min[1]), t.row(b.Max[1])
		for r := r0; r <= r1; r++ {
			for c := c0; c <= c1; c++ {
				for _, g := range t.grid[r*t.cols+c] {
					s := g.slot
					o := &t.objs[s]
					if !b.Contains(t.locOf(s), t.dims) || seen[s] {
						continue
					}
					seen[s] = true
					if o.owner == id || o.id.Origin() == uint32(id) {
						continue
					}
					_, _, ok := snap.object(o.id)
					ids = append(ids, uint64(o.id))
					held = append(held, ok)
				}
			}
		}
	}
	return ids, held
}

// TestStalenessMatchesHistory: the observer's version ring (its
// newest version and ring position in the object's record, the versions
// beside their times) gives the staleness a full history does, over random
// commits to objects whose slots are freed and reused, for versions inside
// and beyond the remembered ones (a lower bound there, counted in beyond).
func TestStalenessMatchesHistory(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 47))
		tr := &Observer{byID: map[world.ObjectID]int32{}}
		type ver struct {
			v  uint64
			at time.Duration
		}
		const slots = 4
		full := make([][]ver, slots)
		now := time.Duration(0)
		for s := range slots {
			tr.objs = append(tr.objs, tobj{id: world.ObjectID(s + 1)})
			tr.hist = append(tr.hist, thist{})
			tr.byID[world.ObjectID(s+1)] = int32(s)
		}
		for step := range 400 {
			now += time.Duration(1+r.IntN(50)) * time.Millisecond
			s := int32(r.IntN(slots))
			id := tr.objs[s].id
			switch k := r.IntN(10); {
			case k == 0: // the object goes, another takes its slot (as observe does)
				tr.objs[s] = tobj{id: id + slots}
				delete(tr.byID, id)
				tr.byID[id+slots] = s
				full[s] = nil
			case k < 7: // a commit, sometimes of an old version (ignored)
				last := uint64(0)
				if n := len(full[s]); n > 0 {
					last = full[s][n-1].v
				}
				v := last + uint64(r.IntN(3))
				tr.commit(s, v, now)
				if v > last {
					full[s] = append(full[s], ver{v, now})
				}
			default: // the staleness of a random version
				h := full[s]
				top := uint64(0)
				if len(h) > 0 {
					top = h[len(h)-1].v
				}
				v := uint64(r.IntN(int(top) + 2))
				// The reference: 0 for the newest version (or none); else
				// the time since the first version after v, if the last
				// histLen versions include one at or before v; else since
				// the oldest of them (a lower bound).
				want, beyond := time.Duration(0), false
				if v < top {
					lo := max(0, len(h)-histLen)
					first := lo
					for first < len(h) && h[first].v <= v {
						first++
					}
					beyond = first == lo
					want = max(0, now-h[first].at)
				}
				b0 := tr.beyond
				got, ok := tr.StalenessOf(id, v, now)
				if !ok || got != want || (tr.beyond != b0) != beyond {
					t.Fatalf("seed %d step %d: staleness of %d at version %d (history %v): %v %v (beyond %v), want %v (beyond %v)",
						seed, step, id, v, h, got, ok, tr.beyond != b0, want, beyond)
				}
			}
		}
		if _, ok := tr.StalenessOf(world.ObjectID(10_000), 1, now); ok {
			t.Fatalf("seed %d: staleness of an unknown object", seed)
		}
	}
}

// TestInIsContains: the observer's box test on a cell entry (three
// coordinates there, a fourth in the record) agrees with Box.Contains on
// the whole location, in spaces of one to four dimensions, for points on,
// inside and outside the faces, infinities and NaNs.
func TestInIsContains(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 53))
	coord := func(lo, hi float64) float64 {
		switch r.IntN(8) {
		case 0:
			return lo
		case 1:
			return hi
		case 2:
			return math.NaN()
		case 3:
			return math.Inf(2*r.IntN(2) - 1)
		default:
			return lo - 1 + r.Float64()*(hi-lo+2)
		}
	}
	for dims := 1; dims <= world.MaxDims; dims++ {
		tr := &Observer{dims: dims, objs: make([]tobj, 1)}
		for range 20000 {
			var b world.Box
			var p world.Point
			for d := range world.MaxDims {
				b.Min[d] = float64(r.IntN(5))
				b.Max[d] = b.Min[d] + float64(r.IntN(3))
				p[d] = coord(b.Min[d], b.Max[d])
			}
			g := &gcell{x: p[0], y: p[1], z: p[2]}
			tr.objs[0].w = p[3]
			if got, want := tr.in(&b, g), b.Contains(p, dims); got != want {
				t.Fatalf("dims %d: in(%v, %v) = %v, Contains %v", dims, b, p, got, want)
			}
		}
	}
}

// recLog is a Recorder that keeps every report and staleness sample.
type recLog struct {
	views []viewRep
	stale []time.Duration
}

type viewRep struct {
	node     wire.NodeID
	now      time.Duration
	interest []uint64
	held     []bool
}

func (r *recLog) View(node wire.NodeID, now time.Duration, interest []uint64, held []bool) error {
	r.views = append(r.views, viewRep{node, now, slices.Clone(interest), slices.Clone(held)})
	return nil
}

func (r *recLog) Staleness(d time.Duration) error {
	r.stale = append(r.stale, d)
	return nil
}

// model is a random cluster the observer is checked against: objects with
// owners, locations and versions, which the nodes move, create, delete,
// hand off and replicate at random, and views of random boxes.
type model struct {
	r        *rand.Rand
	dims     int
	bounds   world.Box
	interest float64
	players  int // nodes 1..players; the infrastructure node is players+1
	objs     map[world.ObjectID]*mobj
	replicas []map[world.ObjectID]uint64 // by node index: the versions held
	views    [][]world.Box               // by node index
	seq      []uint32                    // by node index: objects created
	// linger is, by node index, the objects it handed off at its latest
	// step that its snapshot still lists as primaries (the new owner may
	// list them before the old one stops).
	linger []map[world.ObjectID]mobj
}

type mobj struct {
	owner    wire.NodeID
	loc      world.Point
	version  uint64
	produced time.Duration
	kind     world.Kind
}

// newModel returns a random cluster of 2 to 6 player nodes and an
// infrastructure node, with no object yet, in 1 to 4 dimensions (by seed).
func newModel(r *rand.Rand, seed uint64) *model {
	m := &model{r: r, dims: 1 + int(seed%world.MaxDims), interest: 5 + r.Float64()*20, players: 2 + r.IntN(5),
		objs: map[world.ObjectID]*mobj{}}
	for d := range world.MaxDims {
		m.bounds.Min[d] = float64(r.IntN(200) - 100)
		m.bounds.Max[d] = m.bounds.Min[d] + 20 + float64(r.IntN(200))
	}
	total := m.players + 1
	m.replicas = make([]map[world.ObjectID]uint64, total)
	for i := range m.replicas {
		m.replicas[i] = map[world.ObjectID]uint64{}
	}
	m.views, m.seq, m.linger = make([][]world.Box, total), make([]uint32, total), make([]map[world.ObjectID]mobj, total)
	for i := range m.linger {
		m.linger[i] = map[world.ObjectID]mobj{}
	}
	return m
}

func (m *model) point() world.Point {
	var p world.Point
	for d := range world.MaxDims {
		lo, hi := m.bounds.Min[d], m.bounds.Max[d]
		// A tenth of the points lie outside the bounds.
		p[d] = lo - (hi-lo)/10 + m.r.Float64()*(hi-lo)*1.2
	}
	return p
}

func (m *model) create(id wire.NodeID, now time.Duration) {
	m.seq[id-1]++
	m.objs[world.MakeObjectID(uint32(id), m.seq[id-1])] = &mobj{owner: id, loc: m.point(), version: 1, produced: now,
		kind: world.Kind(1 + m.r.IntN(2))}
}

// step changes node id's objects, replicas and view as its frame at now
// would.
func (m *model) step(id wire.NodeID, now time.Duration) {
	r := m.r
	clear(m.linger[id-1])
	var own []world.ObjectID
	for oid, o := range m.objs {
		if o.owner == id {
			own = append(own, oid)
		}
	}
	slices.Sort(own)
	for _, oid := range own {
		o := m.objs[oid]
		switch k := r.IntN(100); {
		case k < 60: // a step
			for d := range world.MaxDims {
				o.loc[d] += (r.Float64()*2 - 1) * m.interest
			}
		case k < 65: // a jump
			o.loc = m.point()
		case k < 68:
			delete(m.objs, oid)
			continue
		case k < 71: // handed off
			if r.IntN(2) == 0 {
				m.linger[id-1][oid] = *o
			}
			o.owner = wire.NodeID(1 + r.IntN(m.players))
		}
		if r.IntN(5) > 0 {
			o.version++
			o.produced = now
		}
	}
	if r.IntN(4) == 0 {
		m.create(id, now)
	}
	held := m.replicas[id-1]
	for oid := range held {
		if _, ok := m.objs[oid]; !ok && r.IntN(3) == 0 {
			delete(held, oid)
		}
	}
	for oid, o := range m.objs {
		if o.owner == id {
			delete(held, oid)
			continue
		}
		switch k := r.IntN(10); {
		case k == 0:
			delete(held, oid)
		case k < 4:
			held[oid] = uint64(r.IntN(int(o.version) + 1))
		}
	}
	m.views[id-1] = m.views[id-1][:0]
	for range 1 + r.IntN(3) {
		c := m.point()
		if len(own) > 0 && r.IntN(2) == 0 {
			if o, ok := m.objs[own[r.IntN(len(own))]]; ok {
				c = o.loc
			}
		}
		half := r.Float64() * 1.5 * m.interest
		if r.IntN(20) == 0 {
			half = 1e9 // beyond the bounds on every side
		}
		var b world.Box
		for d := range world.MaxDims {
			b.Min[d], b.Max[d] = c[d]-half, c[d]+half
		}
		m.views[id-1] = append(m.views[id-1], b)
	}
}

// snapshot returns node id's snapshot at now.
func (m *model) snapshot(id wire.NodeID, now time.Duration) *Snapshot {
	type ent struct {
		id world.ObjectID
		o  Object
	}
	var ents []ent
	for oid, o := range m.objs {
		if o.owner == id {
			ents = append(ents, ent{oid, Object{ID: oid, Version: o.version, Primary: true, Produced: o.produced, Loc: o.loc, Kind: o.kind}})
		}
	}
	for oid, o := range m.linger[id-1] {
		if m.objs[oid] != nil && m.objs[oid].owner != id {
			ents = append(ents, ent{oid, Object{ID: oid, Version: o.version, Primary: true, Produced: o.produced, Loc: o.loc, Kind: o.kind}})
		}
	}
	for oid, v := range m.replicas[id-1] {
		if _, ok := m.linger[id-1][oid]; !ok {
			ents = append(ents, ent{oid, Object{ID: oid, Version: v}})
		}
	}
	slices.SortFunc(ents, func(a, b ent) int { return cmp.Compare(a.id, b.id) })
	s := &Snapshot{}
	s.Reset(id, now)
	for _, e := range ents {
		if err := s.Add(e.o); err != nil {
			panic(err)
		}
	}
	s.View = slices.Clone(m.views[id-1])
	return s
}

// refTable is the observer's definition written plainly: every primary of
// each node's latest snapshot (a later snapshot listing an object takes
// it over; a node's snapshot that no longer lists an object it owned
// removes it).
type refTable map[world.ObjectID]refPrim

type refPrim struct {
	owner wire.NodeID
	loc   world.Point
}

func (tab refTable) observe(s *Snapshot) {
	in := map[world.ObjectID]bool{}
	for _, p := range s.prims {
		tab[p.id] = refPrim{s.Node, p.loc}
		in[p.id] = true
	}
	for oid, p := range tab {
		if p.owner == s.Node && !in[oid] {
			delete(tab, oid)
		}
	}
}

// view returns node s.Node's report as a set: the objects in its view
// that are neither its primaries nor created by it, and whether it holds
// each.
func (tab refTable) view(s *Snapshot, dims int) map[uint64]bool {
	want := map[uint64]bool{}
	for oid, p := range tab {
		if p.owner == s.Node || oid.Origin() == uint32(s.Node) {
			continue
		}
		for _, b := range s.View {
			if b.Contains(p.loc, dims) {
				_, _, held := s.Object(oid)
				want[uint64(oid)] = held
				break
			}
		}
	}
	return want
}

func sameSet(ids []uint64, held []bool, want map[uint64]bool) bool {
	if len(ids) != len(want) || len(held) != len(ids) {
		return false
	}
	seen := map[uint64]bool{}
	for k, id := range ids {
		h, ok := want[id]
		if !ok || h != held[k] || seen[id] {
			return false
		}
		seen[id] = true
	}
	return true
}

// TestFrameMatchesDefinition drives observers with random clusters in
// spaces of one to four dimensions (objects moving within and across grid
// cells and outside the bounds, created, deleted and handed off; views of
// one to three boxes, some beyond the bounds) and checks every report
// against the definition computed plainly (refTable): the same objects
// and held flags, in the order of a scan of every box on the reports that
// sample staleness and in ID order on the others; a single-cell observer
// reports the same sets; the infrastructure node reports nothing; the
// Recorder receives each report and every staleness sample.
func TestFrameMatchesDefinition(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		r := rand.New(rand.NewPCG(seed, 91))
		m := newModel(r, seed)
		total := m.players + 1
		infra := wire.NodeID(total)
		var rec, rec1 recLog
		cfg := Config{Dims: m.dims, Bounds: m.bounds, Interest: m.interest, Infra: infra, Recorder: &rec,
			StalenessEvery: r.IntN(4), StalenessCap: r.IntN(4)}
		obs, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if seed%3 == 0 {
			if err := obs.TrackKinds([]string{"a", "b"}, nil, []time.Duration{0, 100 * time.Millisecond}, 0); err != nil {
				t.Fatal(err)
			}
		}
		cfg.Interest, cfg.Recorder = 0, &rec1
		one, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for id := range wire.NodeID(m.players) {
			for range 1 + r.IntN(6) {
				m.create(id+1, 0)
			}
		}
		tab := refTable{}
		for id := wire.NodeID(1); id <= infra; id++ {
			s := m.snapshot(id, 0)
			tab.observe(s)
			if obs.Observe(s) != nil || one.Observe(s) != nil {
				t.Fatal("initial snapshot rejected")
			}
		}
		now := time.Duration(0)
		scans, sorted := 0, 0
		for step := range 400 {
			now += time.Duration(1+r.IntN(20)) * time.Millisecond
			id := wire.NodeID(1 + r.IntN(total))
			if id != infra {
				m.step(id, now)
			} else {
				m.views[id-1] = []world.Box{{Min: world.Point{-1e9, -1e9, -1e9, -1e9}, Max: world.Point{1e9, 1e9, 1e9, 1e9}}}
			}
			s := m.snapshot(id, now)
			tab.observe(s)
			before := len(rec.views)
			if err := obs.Frame(s); err != nil {
				t.Fatal(err)
			}
			if err := one.Frame(s); err != nil {
				t.Fatal(err)
			}
			if id == infra {
				if len(rec.views) != before {
					t.Fatalf("seed %d step %d: the infrastructure node reported its view", seed, step)
				}
				continue
			}
			want := tab.view(s, m.dims)
			ids, held, scanned := obs.LastReport()
			if !sameSet(ids, held, want) {
				t.Fatalf("seed %d step %d (%d dims): node %d reported %v %v, the definition gives %v", seed, step, m.dims, id, ids, held, want)
			}
			if got := rec.views[len(rec.views)-1]; got.node != id || got.now != now || !slices.Equal(got.interest, ids) || !slices.Equal(got.held, held) {
				t.Fatalf("seed %d step %d: the recorder got %+v", seed, step, got)
			}
			if scanned {
				scans++
				if sids, sheld := scanReport(obs, s); !slices.Equal(sids, ids) || !slices.Equal(sheld, held) {
					t.Fatalf("seed %d step %d: report %v (held %v), a scan of every box: %v (held %v)", seed, step, ids, held, sids, sheld)
				}
			} else {
				sorted++
				if !slices.IsSorted(ids) {
					t.Fatalf("seed %d step %d: report %v not in ID order", seed, step, ids)
				}
			}
			if ids1, held1, _ := one.LastReport(); !sameSet(ids1, held1, want) {
				t.Fatalf("seed %d step %d: the single-cell observer reported %v %v, want %v", seed, step, ids1, held1, want)
			}
		}
		if scans == 0 || (sorted == 0 && cfg.StalenessEvery > 1 && seed%3 != 0) {
			t.Fatalf("seed %d: %d scan-order and %d ID-order reports", seed, scans, sorted)
		}
		sum, n := obs.StalenessSamples()
		var recSum time.Duration
		for _, d := range rec.stale {
			recSum += d
		}
		if n != int64(len(rec.stale)) || sum != recSum {
			t.Fatalf("seed %d: %d staleness samples summing %v, the recorder got %d summing %v", seed, n, sum, len(rec.stale), recSum)
		}
		if len(rec1.views) != len(rec.views) {
			t.Fatalf("seed %d: %d and %d reports", seed, len(rec.views), len(rec1.views))
		}
	}
}

// TestSample: a sample observes every node's primaries before it reports
// any view; a node that did not answer (nil) reports nothing, and a node
// missing from a sample holds no primary until it answers again; the
// infrastructure node reports nothing; a bad snapshot is rejected with
// the others still observed.
func TestSample(t *testing.T) {
	var rec recLog
	obs, err := New(Config{Dims: 2, Infra: 9, Recorder: &rec})
	if err != nil {
		t.Fatal(err)
	}
	box := []world.Box{{Max: world.Point{10, 10}}}
	snap := func(id wire.NodeID, objs ...Object) *Snapshot {
		s := &Snapshot{}
		s.Reset(id, time.Second)
		for _, o := range objs {
			if err := s.Add(o); err != nil {
				t.Fatal(err)
			}
		}
		s.View = box
		return s
	}
	a, b, c := world.MakeObjectID(1, 1), world.MakeObjectID(1, 2), world.MakeObjectID(2, 1)
	n1 := snap(1, Object{ID: a, Primary: true, Loc: world.Point{5, 5}, Version: 7}, Object{ID: b, Primary: true, Loc: world.Point{50, 50}, Version: 1})
	n2 := snap(2, Object{ID: a, Version: 7}, Object{ID: c, Primary: true, Loc: world.Point{1, 1}, Version: 1})
	n4 := snap(4)
	infra := snap(9)
	infra.View = []world.Box{{Min: world.Point{-1e9, -1e9}, Max: world.Point{1e9, 1e9}}}
	// Node 1 is listed first: its report already sees node 2's object c.
	if err := obs.Sample([]*Snapshot{n1, n2, n4, infra, nil}); err != nil {
		t.Fatal(err)
	}
	got := map[wire.NodeID]map[uint64]bool{}
	for _, v := range rec.views {
		got[v.node] = map[uint64]bool{}
		for k, id := range v.interest {
			got[v.node][id] = v.held[k]
		}
	}
	want := map[wire.NodeID]map[uint64]bool{1: {uint64(c): false}, 2: {uint64(a): true}, 4: {uint64(a): false, uint64(c): false}}
	if len(rec.views) != 3 || !maps.EqualFunc(got, want, maps.Equal) {
		t.Fatalf("reports %v, want %v", got, want)
	}
	if _, n := obs.StalenessSamples(); n != 1 {
		t.Errorf("%d staleness samples, want 1 (node 2's replica of a)", n)
	}
	// Node 2 does not answer: its object c is gone from the truth.
	rec.views = nil
	n4.At = 2 * time.Second
	if err := obs.Sample([]*Snapshot{nil, nil, n4}); err != nil {
		t.Fatal(err)
	}
	if ids, _, _ := obs.LastReport(); len(rec.views) != 1 || len(ids) != 0 {
		t.Errorf("node 4 reported %v after nodes 1 and 2 fell silent, want nothing", ids)
	}
	// A node twice and a node 0 are rejected; the rest is observed.
	n4.At = 3 * time.Second
	n1.At = 3 * time.Second
	if err := obs.Sample([]*Snapshot{n4, n1, n4, snap(0)}); err == nil {
		t.Error("a sample with a node twice and a node 0 accepted")
	}
	if ids, _, _ := obs.LastReport(); len(ids) != 0 {
		t.Errorf("node 1 reported %v, want nothing (node 2 silent)", ids)
	}
	if err := obs.Frame(snap(0)); err == nil {
		t.Error("a frame of node 0 accepted")
	}
}

func TestSnapshotAddInOrder(t *testing.T) {
	var s Snapshot
	s.Reset(3, 0)
	for _, id := range []world.ObjectID{2, 5, 70} {
		if err := s.Add(Object{ID: id, Version: uint64(id), Primary: id == 5}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Add(Object{ID: 70}); err == nil {
		t.Error("a repeated ID accepted")
	}
	if err := s.Add(Object{ID: 4}); err == nil {
		t.Error("an ID out of order accepted")
	}
	if v, primary, ok := s.Object(5); !ok || !primary || v != 5 || s.Len() != 3 {
		t.Errorf("object 5: version %d, primary %v, present %v; %d objects", v, primary, ok, s.Len())
	}
	if _, primary, ok := s.Object(70); !ok || primary {
		t.Error("object 70 missing or a primary")
	}
	if _, _, ok := s.Object(3); ok {
		t.Error("object 3 present")
	}
	// 64 objects and more: the primary flags span words.
	s.Reset(3, 0)
	for k := range 200 {
		if err := s.Add(Object{ID: world.ObjectID(k + 1), Primary: k%3 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	for k := range 200 {
		if _, primary, ok := s.Object(world.ObjectID(k + 1)); !ok || primary != (k%3 == 0) {
			t.Fatalf("object %d: primary %v present %v", k+1, primary, ok)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	ok := Config{Dims: 3, Bounds: world.Box{Max: world.Point{100, 100}}, Interest: 10}
	for _, c := range []struct {
		name string
		mod  func(*Config)
	}{
		{"dims 0", func(c *Config) { c.Dims = 0 }},
		{"dims 5", func(c *Config) { c.Dims = world.MaxDims + 1 }},
		{"negative interest", func(c *Config) { c.Interest = -1 }},
		{"NaN interest", func(c *Config) { c.Interest = math.NaN() }},
		{"empty bounds", func(c *Config) { c.Bounds = world.Box{} }},
		{"infinite bounds", func(c *Config) { c.Bounds.Max[0] = math.Inf(1) }},
		{"too many cells", func(c *Config) { c.Bounds.Max = world.Point{1e9, 1e9} }},
		{"staleness", func(c *Config) { c.StalenessCap = -1 }},
	} {
		cfg := ok
		c.mod(&cfg)
		if _, err := New(cfg); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", c.name, err)
		}
	}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
	single := Config{Dims: 2}
	if _, err := New(single); err != nil {
		t.Errorf("a single-cell observer: %v", err)
	}
}

// forgetLog is a recLog that can forget a node (as sim.Recorder can).
type forgetLog struct {
	recLog
	forgot []wire.NodeID
}

func (r *forgetLog) Forget(node wire.NodeID) { r.forgot = append(r.forgot, node) }

// down removes node id's primaries from the table: a node that went down
// holds none.
func (tab refTable) down(id wire.NodeID) {
	for oid, p := range tab {
		if p.owner == id {
			delete(tab, oid)
		}
	}
}

// TestDownMatchesDefinition drives observers with random clusters in which
// player nodes crash (Down) and come back empty: some of a crashed node's
// objects fail over to another node, whose next snapshot lists them as its
// primaries, the rest are lost. Every report must match the definition
// with a down node holding no primary (refTable.down): a crashed node's
// objects are expected nowhere until another node lists them, and then
// count again. Down has the Recorder forget the node, empties its kind
// measures' view, and rejects node 0.
func TestDownMatchesDefinition(t *testing.T) {
	failovers, relisted := 0, 0
	for seed := uint64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewPCG(seed, 93))
		m := newModel(r, seed)
		infra := wire.NodeID(m.players + 1)
		rec := &forgetLog{}
		obs, err := New(Config{Dims: m.dims, Bounds: m.bounds, Interest: m.interest, Infra: infra, Recorder: rec,
			StalenessEvery: 3, StalenessCap: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := obs.TrackKinds([]string{"a", "b"}, nil, []time.Duration{0}, 0); err != nil {
			t.Fatal(err)
		}
		if err := obs.Down(0); err == nil {
			t.Fatal("Down(0) accepted")
		}
		for id := range wire.NodeID(m.players) {
			for range 1 + r.IntN(6) {
				m.create(id+1, 0)
			}
		}
		tab := refTable{}
		for id := wire.NodeID(1); id <= infra; id++ {
			s := m.snapshot(id, 0)
			tab.observe(s)
			if err := obs.Observe(s); err != nil {
				t.Fatal(err)
			}
		}
		down := make([]bool, m.players)
		failed := map[world.ObjectID]bool{} // failed over, not yet listed by the new owner
		now := time.Duration(0)
		for step := range 500 {
			now += time.Duration(1+r.IntN(20)) * time.Millisecond
			id := wire.NodeID(1 + r.IntN(m.players))
			switch {
			case !down[id-1] && r.IntN(12) == 0:
				var up []wire.NodeID
				for k := range m.players {
					if !down[k] && wire.NodeID(k+1) != id {
						up = append(up, wire.NodeID(k+1))
					}
				}
				own := slices.Sorted(maps.Keys(m.objs))
				for _, oid := range own {
					o := m.objs[oid]
					if o.owner != id {
						continue
					}
					if len(up) > 0 && r.IntN(2) == 0 {
						o.owner = up[r.IntN(len(up))]
						delete(m.replicas[o.owner-1], oid) // the replica becomes the primary
						delete(m.linger[o.owner-1], oid)
						failed[oid] = true
						failovers++
					} else {
						delete(m.objs, oid)
					}
				}
				clear(m.linger[id-1])
				clear(m.replicas[id-1])
				m.views[id-1] = nil
				down[id-1] = true
				if err := obs.Down(id); err != nil {
					t.Fatal(err)
				}
				tab.down(id)
				if n := len(rec.forgot); n == 0 || rec.forgot[n-1] != id {
					t.Fatalf("seed %d step %d: the recorder was not told to forget node %d", seed, step, id)
				}
				if n := len(obs.kinds.node(int(id) - 1).pairs); n != 0 {
					t.Fatalf("seed %d step %d: node %d down with %d objects in its kind view", seed, step, id, n)
				}
				continue
			case down[id-1]:
				if r.IntN(3) == 0 {
					down[id-1] = false // back, empty: its next frame reports
				}
				continue
			}
			m.step(id, now)
			for oid, o := range m.objs {
				if down[o.owner-1] { // no handoff to a node that is down
					o.owner = id
					delete(m.replicas[id-1], oid)
					delete(m.linger[id-1], oid)
				}
			}
			s := m.snapshot(id, now)
			for _, p := range s.prims {
				if failed[p.id] {
					delete(failed, p.id)
					relisted++
				}
			}
			tab.observe(s)
			if err := obs.Frame(s); err != nil {
				t.Fatal(err)
			}
			want := tab.view(s, m.dims)
			if ids, held, _ := obs.LastReport(); !sameSet(ids, held, want) {
				t.Fatalf("seed %d step %d (%d dims): node %d reported %v %v, the definition gives %v", seed, step, m.dims, id, ids, held, want)
			}
		}
	}
	if failovers == 0 || relisted == 0 {
		t.Fatalf("%d objects failed over, %d listed again by their new owner", failovers, relisted)
	}
}

// TestSampleUnborn: in a Sample whose snapshots are taken at different
// times (a live cluster's nodes answer at their own next frames), an
// object first listed by a node whose snapshot is later than a viewer's,
// and created after the viewer's (or at an unknown time), is not in that
// viewer's interest for that Sample; created before it, or listed again
// at a later Sample, it is.
func TestSampleUnborn(t *testing.T) {
	ms := time.Millisecond
	box := []world.Box{{Max: world.Point{10, 10}}}
	snap := func(id wire.NodeID, at time.Duration, objs ...Object) *Snapshot {
		return viewSnap(t, id, at, box, objs...)
	}
	interest := func(rec *recLog, node wire.NodeID) []uint64 {
		for _, v := range rec.views {
			if v.node == node {
				return v.interest
			}
		}
		return nil
	}
	old, fresh, early, later := world.MakeObjectID(2, 1), world.MakeObjectID(2, 2), world.MakeObjectID(2, 3), world.MakeObjectID(2, 4)
	for _, c := range []struct {
		name    string
		obj     Object
		ownerAt time.Duration
		want    bool // in node 1's interest at 100 ms
	}{
		{"created after the viewer's snapshot", Object{ID: fresh, Primary: true, Loc: world.Point{5, 5}, Version: 1, Produced: 120 * ms}, 150 * ms, false},
		{"created before it", Object{ID: early, Primary: true, Loc: world.Point{5, 5}, Version: 1, Produced: 90 * ms}, 150 * ms, true},
		{"creation unknown (a later version)", Object{ID: later, Primary: true, Loc: world.Point{5, 5}, Version: 3, Produced: 140 * ms}, 150 * ms, false},
		{"owner's snapshot earlier than the viewer's", Object{ID: fresh, Primary: true, Loc: world.Point{5, 5}, Version: 1, Produced: 60 * ms}, 80 * ms, true},
	} {
		var rec recLog
		obs, err := New(Config{Dims: 2, Infra: 9, Recorder: &rec})
		if err != nil {
			t.Fatal(err)
		}
		base := Object{ID: old, Primary: true, Loc: world.Point{6, 6}, Version: 1}
		// A first Sample: the owner's old object, which every later one knows.
		if err := obs.Sample([]*Snapshot{snap(1, 0), snap(2, 10*ms, base)}); err != nil {
			t.Fatal(err)
		}
		rec.views = nil
		base.Version = 2
		if err := obs.Sample([]*Snapshot{snap(1, 100*ms), snap(2, c.ownerAt, base, c.obj)}); err != nil {
			t.Fatal(err)
		}
		got := interest(&rec, 1)
		if !slices.Contains(got, uint64(old)) || slices.Contains(got, uint64(c.obj.ID)) != c.want {
			t.Errorf("%s: node 1's interest %v, want %v there: %v", c.name, got, c.obj.ID, c.want)
		}
		// Listed again, it is in everyone's interest.
		rec.views = nil
		c.obj.Version++
		base.Version++
		if err := obs.Sample([]*Snapshot{snap(1, 200*ms), snap(2, 250*ms, base, c.obj)}); err != nil {
			t.Fatal(err)
		}
		if got := interest(&rec, 1); !slices.Contains(got, uint64(c.obj.ID)) {
			t.Errorf("%s: at the next Sample, node 1's interest %v lacks %v", c.name, got, c.obj.ID)
		}
	}
}

// viewSnap is node id's snapshot at time at, with view box and the
// objects objs.
func viewSnap(t *testing.T, id wire.NodeID, at time.Duration, box []world.Box, objs ...Object) *Snapshot {
	t.Helper()
	s := &Snapshot{}
	s.Reset(id, at)
	for _, o := range objs {
		if err := s.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	s.View = box
	return s
}

// TestSampleUnbornViewerBehind: a viewer whose snapshots fell a frame
// behind the owner's (a live sampler takes each node's next frame, so a
// node behind stays behind) does not count an object created after its
// snapshot's time, though an earlier Sample listed it; from its first
// snapshot after the creation on, it does.
func TestSampleUnbornViewerBehind(t *testing.T) {
	ms := time.Millisecond
	box := []world.Box{{Max: world.Point{10, 10}}}
	snap := func(id wire.NodeID, at time.Duration, objs ...Object) *Snapshot {
		return viewSnap(t, id, at, box, objs...)
	}
	var rec recLog
	obs, err := New(Config{Dims: 2, Infra: 9, Recorder: &rec})
	if err != nil {
		t.Fatal(err)
	}
	old, fresh := world.MakeObjectID(2, 1), world.MakeObjectID(2, 2)
	base := Object{ID: old, Primary: true, Loc: world.Point{6, 6}} // version 1, made at 0, in the first Sample
	obj := Object{ID: fresh, Primary: true, Loc: world.Point{5, 5}, Version: 1, Produced: 150 * ms}
	for k, c := range []struct {
		viewer, owner time.Duration
		list          bool // the owner lists the fresh object
		want          bool // the fresh object in the viewer's interest
	}{
		{0, 50 * ms, false, false},
		{19 * ms, 150 * ms, true, false},  // the viewer a frame behind: unborn in the Sample that lists it
		{119 * ms, 250 * ms, true, false}, // and in the next, still before the creation
		{219 * ms, 350 * ms, true, true},
	} {
		rec.views = nil
		base.Version++
		objs := []Object{base}
		if c.list {
			objs = append(objs, obj)
			obj.Version++
		}
		if err := obs.Sample([]*Snapshot{snap(1, c.viewer), snap(2, c.owner, objs...)}); err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, v := range rec.views {
			if v.node == 1 {
				got = v.interest
			}
		}
		if !slices.Contains(got, uint64(old)) || slices.Contains(got, uint64(fresh)) != c.want {
			t.Errorf("Sample %d (viewer at %v, owner at %v): node 1's interest %v, want %v there: %v", k+1, c.viewer, c.owner, got, fresh, c.want)
		}
	}
}

// TestSampleGhost: an object its owner's snapshot no longer lists stays,
// for that Sample, in the interest of a viewer whose snapshot is older
// (the simulator's observer would see it as of the owner's frame before);
// not in a later viewer's, nor in the next Sample. Listed by another node
// in the same Sample (handed over), it stays.
func TestSampleGhost(t *testing.T) {
	ms := time.Millisecond
	box := []world.Box{{Max: world.Point{10, 10}}}
	snap := func(id wire.NodeID, at time.Duration, objs ...Object) *Snapshot {
		return viewSnap(t, id, at, box, objs...)
	}
	x := Object{ID: world.MakeObjectID(2, 1), Primary: true, Loc: world.Point{5, 5}}
	for _, c := range []struct {
		name          string
		viewer, owner time.Duration // the second Sample's times
		handed        bool          // node 3 lists it in the second Sample
		want          bool          // in node 1's interest in the second Sample
	}{
		{"deleted after the viewer's snapshot", 60 * ms, 110 * ms, false, true},
		{"deleted before it", 120 * ms, 110 * ms, false, false},
		{"handed to another node", 120 * ms, 110 * ms, true, true},
	} {
		var rec recLog
		obs, err := New(Config{Dims: 2, Infra: 9, Recorder: &rec})
		if err != nil {
			t.Fatal(err)
		}
		obj := x
		if err := obs.Sample([]*Snapshot{snap(1, 0), snap(2, 10*ms, obj), snap(3, 5*ms)}); err != nil {
			t.Fatal(err)
		}
		second := []*Snapshot{snap(1, c.viewer), snap(2, c.owner), snap(3, c.owner)}
		if c.handed {
			obj.Version++
			second[2] = snap(3, c.owner, obj)
		}
		rec.views = nil
		if err := obs.Sample(second); err != nil {
			t.Fatal(err)
		}
		in := func() bool {
			for _, v := range rec.views {
				if v.node == 1 {
					return slices.Contains(v.interest, uint64(x.ID))
				}
			}
			return false
		}
		if got := in(); got != c.want {
			t.Errorf("%s: in node 1's interest %v, want %v", c.name, got, c.want)
		}
		rec.views = nil
		third := []*Snapshot{snap(1, c.viewer+100*ms), snap(2, c.owner+100*ms), snap(3, c.owner+100*ms)}
		if c.handed {
			obj.Version++
			third[2] = snap(3, c.owner+100*ms, obj)
		}
		if err := obs.Sample(third); err != nil {
			t.Fatal(err)
		}
		if got := in(); got != c.handed {
			t.Errorf("%s: at the next Sample, in node 1's interest %v, want %v", c.name, got, c.handed)
		}
	}
}

// TestSamplePlacesAtViewerTime: in a Sample, an object whose owner's
// snapshot is later (or earlier) than the viewer's is placed where it was
// at the viewer's time, along the line from its owner's previous snapshot
// (a live cluster's snapshots are up to a frame apart): moving
// across an edge of the viewer's box [0, 10], it is in the viewer's
// interest exactly when it was inside at the viewer's time.
func TestSamplePlacesAtViewerTime(t *testing.T) {
	ms := time.Millisecond
	box := []world.Box{{Max: world.Point{10, 10}}}
	id := world.MakeObjectID(2, 1)
	for _, c := range []struct {
		name          string
		viewer, owner time.Duration // the second Sample's snapshot times
		x0, x1        float64       // the object's x at the owner's first (0 ms) and second snapshots
		want          bool
	}{
		{"owner's snapshot later, entered after the viewer's time", 100 * ms, 150 * ms, -15, 0.5, false},  // x −4.7 at 100 ms
		{"owner's snapshot later, left after the viewer's time", 100 * ms, 150 * ms, -4, 11, true},        // x 6 at 100 ms
		{"owner's snapshot earlier, entered before the viewer's time", 150 * ms, 100 * ms, -20, -2, true}, // x 7 at 150 ms
		{"owner's snapshot earlier, left before the viewer's time", 150 * ms, 100 * ms, 0, 8, false},      // x 12 at 150 ms
		{"same time", 100 * ms, 100 * ms, 0, 9, true},
	} {
		var rec recLog
		obs, err := New(Config{Dims: 2, Infra: 9, Recorder: &rec})
		if err != nil {
			t.Fatal(err)
		}
		snap := func(node wire.NodeID, at time.Duration, objs ...Object) *Snapshot {
			return viewSnap(t, node, at, box, objs...)
		}
		o := Object{ID: id, Primary: true, Loc: world.Point{c.x0, 5}, Version: 1}
		if err := obs.Sample([]*Snapshot{snap(1, 0), snap(2, 0, o)}); err != nil {
			t.Fatal(err)
		}
		rec.views = nil
		o.Loc, o.Version = world.Point{c.x1, 5}, 2
		if err := obs.Sample([]*Snapshot{snap(1, c.viewer), snap(2, c.owner, o)}); err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, v := range rec.views {
			if v.node == 1 {
				got = v.interest
			}
		}
		if slices.Contains(got, uint64(id)) != c.want {
			t.Errorf("%s: node 1's interest %v, want the object there: %v", c.name, got, c.want)
		}
	}
}
