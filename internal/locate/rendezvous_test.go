package locate

import (
	"cmp"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// refStore is the specification of Store: maps and linear scans.
type refStore struct {
	dims   int
	keys   KeyMap
	maxTTL time.Duration
	sweep  time.Duration // StoreConfig.Sweep
	now    time.Duration
	pubs   map[world.ObjectID]Publication
	subs   map[subName]Subscription
}

func newRefStore(dims int, keys KeyMap, maxTTL time.Duration) *refStore {
	return &refStore{dims: dims, keys: keys, maxTTL: maxTTL, pubs: map[world.ObjectID]Publication{}, subs: map[subName]Subscription{}}
}

func (r *refStore) expire(now time.Duration) {
	r.now = now
	for id, p := range r.pubs {
		if p.Until <= now {
			delete(r.pubs, id)
		}
	}
	for n, s := range r.subs {
		if s.Until <= now {
			delete(r.subs, n)
		}
	}
}

func (r *refStore) ranges(boxes []world.Box) []KeyRange {
	var rs []KeyRange
	for _, b := range boxes {
		rs = r.keys.BoxRanges(b, rs)
	}
	return mergeRanges(rs)
}

// vel is the velocity a publication is stored with: v if the store sweeps.
func (r *refStore) vel(v world.Point) world.Point {
	if r.sweep <= 0 {
		return world.Point{}
	}
	for d := r.dims; d < world.MaxDims; d++ {
		v[d] = 0
	}
	return v
}

// meets: one of boxes contains loc or, moving, the box around the segment
// from loc to loc + vel × sweep.
func (r *refStore) meets(loc, vel world.Point, boxes []world.Box) bool {
	if vel == (world.Point{}) {
		return inAny(loc, boxes, r.dims)
	}
	seg := world.Box{Min: loc, Max: loc}
	for d := range r.dims {
		e := loc[d] + vel[d]*r.sweep.Seconds()
		seg.Min[d], seg.Max[d] = min(loc[d], e), max(loc[d], e)
	}
	for _, b := range boxes {
		if !b.Empty(r.dims) && b.Intersects(seg, r.dims) {
			return true
		}
	}
	return false
}

func (r *refStore) publish(id world.ObjectID, node wire.NodeID, loc, vel world.Point, at, ttl time.Duration, skip ...wire.NodeID) []Match {
	if old, ok := r.pubs[id]; ok && old.Node == node && old.At > at {
		return nil // overtaken by a newer one from the same node
	}
	if len(skip) > MaxSkip {
		skip = skip[:MaxSkip]
	}
	vel = r.vel(vel)
	p := Publication{ID: id, Node: node, Loc: loc, Vel: vel, Key: r.keys.PointKey(loc), Until: r.now + min(ttl, r.maxTTL), At: at}
	if len(skip) > 0 {
		p.Skip = slices.Clone(skip)
	}
	r.pubs[id] = p
	var to []wire.NodeID
	for _, s := range r.subs {
		if s.Node != node && !slices.Contains(skip, s.Node) && r.meets(loc, vel, s.Boxes) && !slices.Contains(to, s.Node) {
			to = append(to, s.Node)
		}
	}
	slices.Sort(to)
	var ms []Match
	m := p
	m.Skip = nil // a match does not carry the list
	for _, n := range to {
		ms = append(ms, Match{To: n, Pub: m})
	}
	return ms
}

func (r *refStore) subscribe(node wire.NodeID, seq uint64, boxes []world.Box, ttl time.Duration) []Match {
	name := subName{node, seq}
	if len(boxes) == 0 {
		delete(r.subs, name)
		return nil
	}
	old, ok := r.subs[name]
	until := r.now + min(ttl, r.maxTTL)
	if ok && slices.Equal(old.Boxes, boxes) {
		old.Until = until
		r.subs[name] = old
		return nil
	}
	r.subs[name] = Subscription{Node: node, Seq: seq, Boxes: slices.Clone(boxes), Ranges: r.ranges(boxes), Until: until}
	var ms []Match
	for _, p := range r.pubs {
		if p.Node != node && !slices.Contains(p.Skip, node) && r.meets(p.Loc, p.Vel, boxes) && !r.told(node, seq, p.Loc, p.Vel) {
			p.Skip = nil
			ms = append(ms, Match{To: node, Pub: p})
		}
	}
	slices.SortFunc(ms, func(a, b Match) int { return cmp.Compare(a.Pub.ID, b.Pub.ID) })
	return ms
}

// told: another live subscription of node meets the publication.
func (r *refStore) told(node wire.NodeID, seq uint64, loc, vel world.Point) bool {
	for n, s := range r.subs {
		if n.node == node && n.seq != seq && r.meets(loc, vel, s.Boxes) {
			return true
		}
	}
	return false
}

func (r *refStore) export(lo, hi uint64) Handoff {
	var h Handoff
	for _, p := range r.pubs {
		if InArc(p.Key, lo, hi) {
			h.Pubs = append(h.Pubs, p)
		}
	}
	for _, s := range r.subs {
		for _, k := range s.Ranges {
			if InArc(k.Lo, lo, hi) || InArc(k.Hi, lo, hi) || InArc(lo, k.Lo, k.Hi) {
				h.Subs = append(h.Subs, s)
				break
			}
		}
	}
	slices.SortFunc(h.Pubs, func(a, b Publication) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(h.Subs, compareSubs)
	return h
}

func (r *refStore) drop(lo, hi uint64) {
	for id, p := range r.pubs {
		if InArc(p.Key, lo, hi) {
			delete(r.pubs, id)
		}
	}
	for n, s := range r.subs {
		inside := true
		for _, k := range s.Ranges { // every key of k in the arc: both ends in it, and no wrap gap between
			if !(InArc(k.Lo, lo, hi) && InArc(k.Hi, lo, hi) && (lo <= hi || k.Lo >= lo == (k.Hi >= lo))) {
				inside = false
			}
		}
		if inside {
			delete(r.subs, n)
		}
	}
}

func (r *refStore) imp(h *Handoff) {
	for _, p := range h.Pubs {
		if old, ok := r.pubs[p.ID]; p.Until <= r.now || ok && !(old.Node == p.Node && old.At != p.At && p.At > old.At ||
			(old.Node != p.Node || old.At == p.At) && p.Until > old.Until) {
			continue
		}
		p.Until = min(p.Until, r.now+r.maxTTL)
		p.Key = r.keys.PointKey(p.Loc)
		p.Vel = r.vel(p.Vel)
		r.pubs[p.ID] = p
	}
	for _, s := range h.Subs {
		name := subName{s.Node, s.Seq}
		if old, ok := r.subs[name]; s.Until <= r.now || len(s.Boxes) == 0 || ok && old.Until >= s.Until {
			continue
		}
		r.subs[name] = Subscription{Node: s.Node, Seq: s.Seq, Boxes: slices.Clone(s.Boxes), Ranges: r.ranges(s.Boxes),
			Until: min(s.Until, r.now+r.maxTTL)}
	}
}

func (r *refStore) state() ([]Publication, []Subscription) {
	var ps []Publication
	for _, p := range r.pubs {
		ps = append(ps, p)
	}
	var ss []Subscription
	for _, s := range r.subs {
		ss = append(ss, s)
	}
	slices.SortFunc(ps, func(a, b Publication) int { return cmp.Compare(a.ID, b.ID) })
	slices.SortFunc(ss, compareSubs)
	return ps, ss
}

// checkStore compares a store's whole state with its reference and checks
// the invariant: nothing stored has outlived its TTL.
func checkStore(t *testing.T, seed uint64, step int, s *Store, r *refStore) {
	t.Helper()
	ps, ss := s.Publications(nil), s.Subscriptions(nil)
	rp, rs := r.state()
	if !equalish(ps, rp) || !equalish(ss, rs) {
		t.Fatalf("seed %d step %d: store state differs from the scan:\n pubs %v\n want %v\n subs %v\n want %v", seed, step, ps, rp, ss, rs)
	}
	for _, p := range ps {
		if p.Until <= s.now {
			t.Fatalf("seed %d step %d: publication %v outlived its TTL (until %v, now %v)", seed, step, p.ID, p.Until, s.now)
		}
	}
	for _, sub := range ss {
		if sub.Until <= s.now {
			t.Fatalf("seed %d step %d: subscription %d/%d outlived its TTL (until %v, now %v)", seed, step, sub.Node, sub.Seq, sub.Until, s.now)
		}
	}
	if np, ns := s.Len(); np != len(rp) || ns != len(rs) {
		t.Fatalf("seed %d step %d: Len %d, %d; want %d, %d", seed, step, np, ns, len(rp), len(rs))
	}
}

// equalish is reflect.DeepEqual treating nil and empty slices alike.
func equalish[T any](a, b []T) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func randStoreLoc(r *rand.Rand, side float64) world.Point {
	var p world.Point
	for d := range world.MaxDims {
		p[d] = r.Float64() * side
		if r.IntN(8) == 0 {
			p[d] = math.Round(p[d]/8) * 8 // on box borders
		}
	}
	return p
}

func randStoreBoxes(r *rand.Rand, side float64) []world.Box {
	bs := make([]world.Box, r.IntN(4))
	for i := range bs {
		c := randStoreLoc(r, side)
		half := world.Point{8 + r.Float64()*30, 8 + r.Float64()*30, 8 + r.Float64()*30, 8 + r.Float64()*30}
		if r.IntN(10) == 0 {
			half[r.IntN(world.MaxDims)] = math.Inf(1)
		}
		bs[i] = world.BoxAround(c, half)
		if r.IntN(3) == 0 {
			bs[i].Min[0], bs[i].Max[0] = math.Round(bs[i].Min[0]/8)*8, math.Round(bs[i].Max[0]/8)*8
		}
	}
	return bs
}

func randArc(r *rand.Rand, km KeyMap, side float64) (lo, hi uint64) {
	if r.IntN(4) == 0 {
		return r.Uint64(), r.Uint64() // may wrap
	}
	a, b := km.PointKey(randStoreLoc(r, side)), km.PointKey(randStoreLoc(r, side))
	return a, b
}

// TestStoreMatchesScan runs seeded random sequences of publications,
// subscriptions, withdrawals, expiries, bad input and key range hand-offs
// between two stores, and after every step compares each store's matches
// and whole state with a linear-scan reference and checks that nothing
// outlived its TTL.
func TestStoreMatchesScan(t *testing.T) {
	seeds, steps := 120, 500
	if testing.Short() {
		seeds = 25
	}
	var nMatches, nMoved, nRejected int
	defer func() {
		t.Logf("%d matches, %d publications and subscriptions handed off, %d bad inputs rejected", nMatches, nMoved, nRejected)
	}()
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 21))
		dims := 1 + r.IntN(world.MaxDims)
		side := 100 + r.Float64()*400
		var km KeyMap
		switch r.IntN(3) {
		case 0:
			km, _ = NewLinearMap(extentBox(side, side))
		case 1:
			km, _ = NewHilbertMap(extentBox(side, side), 1+r.IntN(10), 1+r.IntN(8))
		default:
			km, _ = NewRegionMap(extentBox(side, side), 1+r.IntN(50))
		}
		maxTTL := time.Duration(1+r.IntN(5)) * time.Second
		var sweep time.Duration // moving publications match their segments
		if r.IntN(2) == 0 {
			sweep = time.Duration(1+r.IntN(1000)) * time.Millisecond
		}
		var st [2]*Store
		var ref [2]*refStore
		for i := range st {
			var err error
			if st[i], err = NewStore(StoreConfig{Dims: dims, Keys: km, MaxTTL: maxTTL, MaxBoxes: 3, Sweep: sweep}); err != nil {
				t.Fatal(err)
			}
			ref[i] = newRefStore(dims, km, maxTTL)
			ref[i].sweep = sweep
		}
		now := time.Duration(0)
		var h Handoff
		var matched [2]uint64
		var rejected uint64
		for step := range steps {
			if r.IntN(3) == 0 {
				now += time.Duration(r.IntN(400)) * time.Millisecond
			}
			i := r.IntN(2)
			s, rf := st[i], ref[i]
			ttl := time.Duration(50+r.IntN(3000)) * time.Millisecond
			if r.IntN(40) == 0 {
				ttl = -ttl
			}
			at := now
			if r.IntN(60) == 0 {
				at = now - time.Millisecond // time going backwards: rejected
			}
			bad := at < s.now || ttl <= 0
			var got, want []Match
			var err error
			switch op := r.IntN(20); {
			case op < 8:
				id := world.MakeObjectID(uint32(1+r.IntN(6)), uint32(r.IntN(8)))
				node := wire.NodeID(1 + r.IntN(6))
				loc := randStoreLoc(r, side)
				if r.IntN(50) == 0 {
					loc[r.IntN(dims)] = math.NaN()
					bad = true
				}
				pubAt := at - time.Duration(r.IntN(4))*100*time.Millisecond // overtaken now and then
				var skip []wire.NodeID                                      // holders that need no match, up to MaxSkip+2
				for range r.IntN(3) * r.IntN(MaxSkip+3) / 2 {
					skip = append(skip, wire.NodeID(1+r.IntN(6)))
				}
				var vel world.Point
				if r.IntN(3) > 0 {
					for d := range dims {
						vel[d] = (r.Float64() - 0.5) * 60
					}
				}
				got, err = s.Publish(at, Pub{ID: id, Node: node, Loc: loc, Vel: vel, At: pubAt, TTL: ttl, Skip: skip}, nil)
				if !bad {
					rf.expire(at)
					want = rf.publish(id, node, loc, vel, pubAt, ttl, skip...)
				}
			case op < 15:
				node, seq := wire.NodeID(1+r.IntN(6)), uint64(r.IntN(3))
				boxes := randStoreBoxes(r, side)
				if r.IntN(4) == 0 { // a refresh with the same boxes
					if old, ok := rf.subs[subName{node, seq}]; ok {
						boxes = slices.Clone(old.Boxes)
					}
				}
				if r.IntN(40) == 0 {
					boxes = append(boxes, world.Box{Min: world.Point{math.NaN()}})
					bad = true
				}
				if len(boxes) > 3 {
					bad = true
				}
				got, err = s.Subscribe(at, node, seq, boxes, ttl, nil)
				if !bad {
					rf.expire(at)
					want = rf.subscribe(node, seq, boxes, ttl)
				}
			case op == 15:
				node, seq := wire.NodeID(1+r.IntN(6)), uint64(r.IntN(3))
				bad = at < s.now
				err = s.Unsubscribe(at, node, seq)
				if !bad {
					rf.expire(at)
					delete(rf.subs, subName{node, seq})
				}
			case op == 16:
				id := world.MakeObjectID(uint32(1+r.IntN(6)), uint32(r.IntN(8)))
				bad = at < s.now
				err = s.Unpublish(at, id)
				if !bad {
					rf.expire(at)
					delete(rf.pubs, id)
				}
			case op == 17:
				bad = at < s.now
				err = s.Expire(at)
				if !bad {
					rf.expire(at)
				}
			default: // hand the state of an arc to the other store
				lo, hi := randArc(r, km, side)
				s.Export(lo, hi, &h)
				if wantH := rf.export(lo, hi); !equalish(h.Pubs, wantH.Pubs) || !equalish(h.Subs, wantH.Subs) {
					t.Fatalf("seed %d step %d: export [%#x, %#x] = %+v, want %+v", seed, step, lo, hi, h, wantH)
				}
				s.Drop(lo, hi)
				rf.drop(lo, hi)
				nMoved += len(h.Pubs) + len(h.Subs)
				o, ro := st[1-i], ref[1-i]
				bad = now < o.now
				err = o.Import(now, &h)
				if !bad {
					ro.expire(now)
					ro.imp(&h)
				}
				checkStore(t, seed, step, o, ro)
			}
			if bad != (err != nil) {
				t.Fatalf("seed %d step %d: error %v, want an error: %v", seed, step, err, bad)
			}
			if err != nil && !errors.Is(err, ErrRendezvous) {
				t.Fatalf("seed %d step %d: error %v is not ErrRendezvous", seed, step, err)
			}
			nMatches += len(got)
			matched[i] += uint64(len(got))
			if err != nil {
				nRejected++
				rejected++
			}
			if !equalish(got, want) {
				t.Fatalf("seed %d step %d: matches\n %+v\nwant\n %+v", seed, step, got, want)
			}
			checkStore(t, seed, step, s, rf)
		}
		for i := range st {
			if got := st[i].Stats(); got.Matches != matched[i] {
				t.Fatalf("seed %d: store %d counted %d matches, returned %d", seed, i, got.Matches, matched[i])
			}
		}
		if got := st[0].Stats().Rejected + st[1].Stats().Rejected; got != rejected {
			t.Fatalf("seed %d: the stores counted %d rejections, returned %d errors", seed, got, rejected)
		}
	}
}

// TestStorePartitioned checks the key mappings and the store together:
// rendezvous nodes owning random arcs of the circle, each publication
// routed to the owner of its key and each subscription to every owner of
// one of its ranges, deliver exactly the matches one global store does.
func TestStorePartitioned(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 12
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 22))
		side := 200 + r.Float64()*800
		var km KeyMap
		switch seed % 3 {
		case 0:
			km, _ = NewLinearMap(extentBox(side, side))
		case 1:
			km, _ = NewHilbertMap(extentBox(side, side), 2+r.IntN(9), 1+r.IntN(8))
		default:
			km, _ = NewRegionMap(extentBox(side, side), 1+r.IntN(100))
		}
		// Owners: node i owns [bounds[i], bounds[i+1]-1], the last one wraps.
		n := 1 + r.IntN(12)
		bounds := make([]uint64, n)
		for i := range bounds {
			bounds[i] = r.Uint64()
		}
		slices.Sort(bounds)
		bounds = slices.Compact(bounds)
		owner := func(k uint64) int {
			i, found := slices.BinarySearch(bounds, k)
			if found {
				return i
			}
			return (i - 1 + len(bounds)) % len(bounds)
		}
		global, _ := NewStore(StoreConfig{Dims: 2, Keys: km})
		nodes := make([]*Store, len(bounds))
		for i := range nodes {
			nodes[i], _ = NewStore(StoreConfig{Dims: 2, Keys: km})
		}
		now := time.Duration(0)
		var rs []KeyRange
		for step := range 300 {
			now += time.Duration(r.IntN(100)) * time.Millisecond
			var want, got []Match
			if r.IntN(2) == 0 {
				id := world.MakeObjectID(uint32(1+r.IntN(8)), uint32(r.IntN(20)))
				node, loc := wire.NodeID(1+r.IntN(8)), randStoreLoc(r, side)
				want, _ = global.Publish(now, Pub{ID: id, Node: node, Loc: loc, At: now, TTL: time.Second}, nil)
				o := owner(km.PointKey(loc))
				got, _ = nodes[o].Publish(now, Pub{ID: id, Node: node, Loc: loc, At: now, TTL: time.Second}, nil)
				for j := range nodes { // a moved object's previous publication is elsewhere until
					if j != o { // its TTL runs out: the subscriber re-checks; here, withdraw it
						nodes[j].Unpublish(now, id)
					}
				}
			} else {
				node, boxes := wire.NodeID(1+r.IntN(8)), randStoreBoxes(r, side)
				want, _ = global.Subscribe(now, node, 0, boxes, 2*time.Second, nil)
				rs = rs[:0]
				for _, b := range boxes {
					rs = km.BoxRanges(b, rs)
				}
				var to []int
				for _, k := range rs { // every owner whose arc the range reaches
					for o := range nodes {
						lo, hi := bounds[o], bounds[(o+1)%len(bounds)]-1
						if len(bounds) == 1 {
							lo, hi = 0, math.MaxUint64
						}
						if arcIntersects(k, lo, hi) && !slices.Contains(to, o) {
							to = append(to, o)
						}
					}
				}
				for o := range nodes {
					if slices.Contains(to, o) {
						got, _ = nodes[o].Subscribe(now, node, 0, boxes, 2*time.Second, got)
					} else {
						nodes[o].Unsubscribe(now, node, 0) // its boxes moved away
					}
				}
				slices.SortFunc(got, func(a, b Match) int { return cmp.Compare(a.Pub.ID, b.Pub.ID) })
			}
			// A refresh with unchanged boxes is matched only where the
			// subscription is new: compare sets of (to, id) only when the
			// global store matched.
			if len(want) > 0 || len(got) > 0 {
				key := func(m Match) [2]uint64 { return [2]uint64{uint64(m.To), uint64(m.Pub.ID)} }
				w, g := make([][2]uint64, 0, len(want)), make([][2]uint64, 0, len(got))
				for _, m := range want {
					w = append(w, key(m))
				}
				for _, m := range got {
					g = append(g, key(m))
				}
				slices.SortFunc(w, func(a, b [2]uint64) int { return cmp.Compare(a[0]<<32^a[1], b[0]<<32^b[1]) })
				slices.SortFunc(g, func(a, b [2]uint64) int { return cmp.Compare(a[0]<<32^a[1], b[0]<<32^b[1]) })
				g = slices.Compact(g)
				if !slices.Equal(w, g) {
					t.Fatalf("seed %d step %d (%T, %d owners): partitioned matches %v, global %v", seed, step, km, len(nodes), g, w)
				}
			}
		}
	}
}

// TestStoreConfig rejects bad configurations.
func TestStoreConfig(t *testing.T) {
	km, _ := NewLinearMap(extentBox(10, 10))
	for _, c := range []StoreConfig{{Dims: 0, Keys: km}, {Dims: 5, Keys: km}, {Dims: 2},
		{Dims: 2, Keys: km, MaxTTL: -1}, {Dims: 2, Keys: km, MaxBoxes: -1}} {
		if _, err := NewStore(c); !errors.Is(err, ErrLocateConfig) {
			t.Errorf("%+v: %v, want ErrLocateConfig", c, err)
		}
	}
}

// TestStoreImportRejects checks that a hand-off with a bad entry changes
// nothing, and that imported expiries are capped at MaxTTL.
func TestStoreImportRejects(t *testing.T) {
	km, _ := NewLinearMap(extentBox(100, 100))
	s, _ := NewStore(StoreConfig{Dims: 2, Keys: km, MaxTTL: time.Second, MaxBoxes: 2})
	good := Publication{ID: 1, Node: 2, Loc: world.Point{5, 5}, Until: time.Hour}
	for _, h := range []Handoff{
		{Pubs: []Publication{good, {ID: 3, Loc: world.Point{math.NaN(), 1}, Until: time.Hour}}},
		{Pubs: []Publication{good}, Subs: []Subscription{{Node: 1, Boxes: []world.Box{{Max: world.Point{math.NaN()}}}, Until: time.Hour}}},
		{Pubs: []Publication{good}, Subs: []Subscription{{Node: 1, Boxes: make([]world.Box, 3), Until: time.Hour}}},
	} {
		if err := s.Import(0, &h); !errors.Is(err, ErrRendezvous) {
			t.Errorf("import %+v: %v, want ErrRendezvous", h, err)
		}
		if p, n := s.Len(); p != 0 || n != 0 {
			t.Fatalf("a rejected import stored %d publications, %d subscriptions", p, n)
		}
	}
	if err := s.Import(0, &Handoff{Pubs: []Publication{good}}); err != nil {
		t.Fatal(err)
	}
	if ps := s.Publications(nil); len(ps) != 1 || ps[0].Until != time.Second || ps[0].Key != km.PointKey(good.Loc) {
		t.Errorf("imported %+v, want the publication until MaxTTL with its key", ps)
	}
	s.Expire(time.Second)
	if p, _ := s.Len(); p != 0 {
		t.Errorf("the imported publication outlived MaxTTL")
	}
}

// TestStoreSkipFor: a publication's Skip list holds SkipFor after it
// arrived; a listed node that subscribes later is matched.
func TestStoreSkipFor(t *testing.T) {
	km, _ := NewLinearMap(extentBox(100, 100))
	s, err := NewStore(StoreConfig{Dims: 2, Keys: km, SkipFor: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	id := world.MakeObjectID(2, 1)
	if _, err := s.Publish(0, Pub{ID: id, Node: 2, Loc: world.Point{50, 50}, At: 0, TTL: 15 * time.Second, Skip: []wire.NodeID{3}}, nil); err != nil {
		t.Fatal(err)
	}
	box := []world.Box{{Min: world.Point{40, 40}, Max: world.Point{60, 60}}}
	got, err := s.Subscribe(500*time.Millisecond, 3, 1, box, time.Second, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("within SkipFor: matches %v (%v), want none", got, err)
	}
	box[0].Max[0] = 61 // a new subscription (moved boxes)
	got, err = s.Subscribe(1500*time.Millisecond, 3, 2, box, time.Second, nil)
	if err != nil || len(got) != 1 || got[0].Pub.ID != id {
		t.Fatalf("after SkipFor: matches %v (%v), want the publication", got, err)
	}
}
