package locate

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// mnet is a deterministic network of Mercury locators without node cores:
// each node owns a few moving objects (primaries) with square interests;
// packets wait a per-pair latency drawn from the seed; every live node
// ticks every frame. It checks end to end that the locator finds, for every
// node, every object of another node that has stayed inside one of its
// interests long enough (the exact reference is a scan of every object).
type mnet struct {
	t      *testing.T
	seed   uint64
	rng    *rand.Rand
	now    time.Duration
	frame  time.Duration
	keys   KeyMap
	ext    float64
	mercs  []*Mercury
	alive  []bool
	outs   []wire.Outbox
	lat    map[[2]wire.NodeID]time.Duration
	q      []mpkt
	seq    uint64
	objs   []mobj
	found  []map[world.ObjectID]Found // per node: the latest news of each object
	inside map[[2]uint64]time.Duration
	pkts   []wire.Packet
	lout   Out
	errs   int
	idle   bool // objects stop now and then; news must be close to the truth
}

type mpkt struct {
	at  time.Duration
	seq uint64
	p   wire.Packet
}

type mobj struct {
	id       world.ObjectID
	node     int
	loc, vel world.Point
	half     float64 // interest half-width (0: no interest)
}

const mdims = 2

func newMnet(t *testing.T, seed uint64, n, perNode int, kind string, opts ...func(*MercuryConfig)) *mnet {
	t.Helper()
	m := &mnet{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 7)), frame: 100 * time.Millisecond, ext: 200,
		lat: map[[2]wire.NodeID]time.Duration{}, inside: map[[2]uint64]time.Duration{}}
	km, err := NewKeyMap(KeyMapConfig{Kind: kind, Extent: world.Box{Max: world.Point{m.ext, m.ext}}, Regions: n * perNode, Cell: 10})
	if err != nil {
		t.Fatal(err)
	}
	m.keys = km
	for i := range n {
		id := wire.NodeID(i + 1)
		mc := MercuryConfig{Keys: km, Dims: mdims}
		for _, o := range opts {
			o(&mc)
			m.idle = m.idle || mc.IdleEvery > 0
		}
		me, err := NewMercury(id, mc, rand.New(rand.NewPCG(seed, uint64(id))))
		if err != nil {
			t.Fatal(err)
		}
		m.mercs = append(m.mercs, me)
		m.alive = append(m.alive, true)
		m.found = append(m.found, map[world.ObjectID]Found{})
		for k := range perNode {
			o := mobj{id: world.MakeObjectID(uint32(id), uint32(k+1)), node: i,
				loc: world.Point{m.rng.Float64() * m.ext, m.rng.Float64() * m.ext}, half: 20}
			if k%3 == 2 {
				o.half = 0 // an item: publishes, never subscribes
			}
			m.objs = append(m.objs, o)
		}
	}
	m.outs = make([]wire.Outbox, n)
	members := make([]ring.Peer, n)
	step := ^uint64(0) / uint64(n)
	for i := range members {
		members[i] = ring.Peer{ID: wire.NodeID(i + 1), Key: step * uint64(i+1)}
	}
	for _, me := range m.mercs {
		if err := me.Ring().Bootstrap(0, members); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func (m *mnet) latency(a, b wire.NodeID) time.Duration {
	k := [2]wire.NodeID{min(a, b), max(a, b)}
	d, ok := m.lat[k]
	if !ok {
		d = time.Duration(5+m.rng.IntN(95)) * time.Millisecond
		m.lat[k] = d
	}
	return d
}

// send queues the packets in node i's outbox.
func (m *mnet) send(i int) {
	from := wire.NodeID(i + 1)
	m.pkts = m.outs[i].Packets(from, m.pkts[:0])
	for _, p := range m.pkts {
		m.seq++
		d := time.Duration(0)
		if p.To != from {
			d = m.latency(from, p.To)
		}
		m.q = append(m.q, mpkt{at: m.now + d, seq: m.seq, p: p})
	}
}

// deliver hands one packet to its node as a node core does: every frame
// checked first, then stepped.
func (m *mnet) deliver(p wire.Packet) {
	i := int(p.To) - 1
	if i < 0 || i >= len(m.mercs) || !m.alive[i] {
		return
	}
	me := m.mercs[i]
	fr, err := wire.OpenFrames(p.Payload)
	if err != nil {
		m.t.Fatalf("seed %d: node %d sent a bad payload: %v", m.seed, p.From, err)
	}
	for {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		if !me.Handles(t) {
			m.t.Fatalf("seed %d: %v frame from %d", m.seed, t, p.From)
		}
		if err := me.Check(t, body); err != nil {
			m.t.Fatalf("seed %d: node %d sent a frame its peer refuses: %v", m.seed, p.From, err)
		}
	}
	fr, _ = wire.OpenFrames(p.Payload)
	m.lout = Out{Outbox: &m.outs[i]}
	for {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		if err := me.Step(m.now, p.From, t, body, &m.lout); err != nil {
			m.errs++
		}
	}
	m.take(i)
	m.send(i)
}

func (m *mnet) take(i int) {
	for _, f := range m.lout.Found {
		if old, ok := m.found[i][f.ID]; !ok || !old.Newer(f) {
			m.found[i][f.ID] = f
		}
	}
	m.lout.Reset()
}

// move advances every object: a random walk at up to 10 units/s,
// bouncing off the map's edges, and now and then a teleport (a respawn).
func (m *mnet) move() {
	dt := m.frame.Seconds()
	for k := range m.objs {
		o := &m.objs[k]
		if m.rng.IntN(20) == 0 {
			a := m.rng.Float64() * 2 * math.Pi
			o.vel = world.Point{10 * math.Cos(a), 10 * math.Sin(a)}
			if m.idle && m.rng.IntN(2) == 0 {
				o.vel = world.Point{} // stops: idle from its next publication
			}
		}
		for d := range mdims {
			o.loc[d] += o.vel[d] * dt
			if o.loc[d] < 0 || o.loc[d] > m.ext {
				o.vel[d] = -o.vel[d]
				o.loc[d] = min(max(o.loc[d], 0), m.ext)
			}
		}
	}
}

// tick runs one frame on every live node.
func (m *mnet) tick() {
	m.move()
	for i, me := range m.mercs {
		if !m.alive[i] {
			continue
		}
		id := wire.NodeID(i + 1)
		f := Frame{Now: m.now, Self: id, Dims: mdims}
		for _, o := range m.objs {
			if o.node != i {
				continue
			}
			p := Primary{ID: o.id, Loc: o.loc, Controller: id, New: m.now == 0}
			if o.half > 0 {
				p.Interest = []world.Box{world.BoxAround(o.loc, world.Point{o.half, o.half})}
			}
			f.Primaries = append(f.Primaries, p)
			f.View = append(f.View, p.Interest...)
		}
		m.lout = Out{Outbox: &m.outs[i]}
		me.Tick(&f, &m.lout)
		m.take(i)
		m.send(i)
	}
}

// run advances the network by d.
func (m *mnet) run(d time.Duration, check func()) {
	end := m.now + d
	next := (m.now/m.frame + 1) * m.frame
	if m.now == 0 {
		next = 0
	}
	for m.now < end {
		slices.SortFunc(m.q, func(a, b mpkt) int {
			if c := cmp.Compare(a.at, b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.seq, b.seq)
		})
		if len(m.q) > 0 && m.q[0].at < next {
			p := m.q[0]
			m.q = m.q[1:]
			m.now = p.at
			m.deliver(p.p)
			continue
		}
		m.now = next
		m.tick()
		if check != nil {
			check()
		}
		next += m.frame
	}
}

// checkFound asserts that every node holds live news of every object of
// another node that has been inside one of its interests for at least
// window.
func (m *mnet) checkFound(window time.Duration) (checked int) {
	for i := range m.mercs {
		if !m.alive[i] {
			continue
		}
		for _, o := range m.objs {
			if o.node == i || !m.alive[o.node] {
				continue
			}
			in := false
			for _, s := range m.objs {
				if s.node == i && s.half > 0 && world.BoxAround(s.loc, world.Point{s.half, s.half}).Contains(o.loc, mdims) {
					in = true
					break
				}
			}
			k := [2]uint64{uint64(i), uint64(o.id)}
			if !in {
				delete(m.inside, k)
				continue
			}
			since, ok := m.inside[k]
			if !ok {
				m.inside[k] = m.now
				continue
			}
			if m.now-since < window {
				continue
			}
			checked++
			f, ok := m.found[i][o.id]
			// With idle publications, the newest news must also be close to
			// the truth: a publication period and a delivery at 10 units/s.
			if m.idle && ok && math.Hypot(f.Loc[0]-o.loc[0], f.Loc[1]-o.loc[1]) > 10 {
				m.t.Fatalf("seed %d at %v: node %d's newest news of object %v is at %v, the object at %v",
					m.seed, m.now, i+1, o.id, f.Loc, o.loc)
			}
			if !ok || f.Until < m.now {
				m.t.Fatalf("seed %d at %v: node %d has no live news of object %v (node %d, at %v) inside its interest since %v (news %+v, %v)",
					m.seed, m.now, i+1, o.id, o.node+1, o.loc, since, f, ok)
			}
		}
	}
	return checked
}

// TestMercuryFindsEverything runs small clusters of moving objects under
// each key mapping and checks after every frame that every node has live
// news of every object that has stayed in one of its interests for 1.5 s
// (a publish period, the routing, and slack), against a scan of every
// object.
func TestMercuryFindsEverything(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	for _, kind := range []string{KeyMapHilbert, KeyMapLinear, KeyMapRegions} {
		for s := range uint64(seeds) {
			m := newMnet(t, s+1, 6+int(s)*3, 3, kind)
			checked := 0
			m.run(20*time.Second, func() { checked += m.checkFound(1500 * time.Millisecond) })
			if checked == 0 {
				t.Fatalf("%s seed %d: nothing was ever checked", kind, s+1)
			}
			st := m.stats()
			if st.Malformed+st.Unexpected+st.Rejected+st.NotMember+st.PlanErrors > 0 || m.errs > 0 {
				t.Fatalf("%s seed %d: dropped messages: %+v, step errors %d", kind, s+1, st, m.errs)
			}
			if st.Latency.Count() == 0 || st.Found == 0 {
				t.Fatalf("%s seed %d: no discovery at all: %+v", kind, s+1, st)
			}
		}
	}
}

// TestMercuryIdle is TestMercuryFindsEverything with idle publications:
// objects stop now and then, are then published only every IdleEvery with
// long-lived publications, and the newest news every node holds must stay
// within a period's movement of the truth.
func TestMercuryIdle(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for _, kind := range []string{KeyMapHilbert, KeyMapRegions} {
		var pubs [2]uint64
		for k, every := range []time.Duration{0, 3 * time.Second} {
			for s := range uint64(seeds) {
				m := newMnet(t, s+1, 6+int(s)*3, 3, kind, func(c *MercuryConfig) { c.IdleEvery = every })
				m.idle = true
				checked := 0
				m.run(20*time.Second, func() { checked += m.checkFound(1500 * time.Millisecond) })
				if checked == 0 {
					t.Fatalf("%s seed %d: nothing was ever checked", kind, s+1)
				}
				for _, me := range m.mercs {
					pubs[k] += me.Stats().PubsRouted
				}
			}
		}
		t.Logf("%s: %d publications without idle publication, %d with", kind, pubs[0], pubs[1])
		if pubs[1] >= pubs[0]*9/10 {
			t.Errorf("%s: idle publication saved little: %d publications against %d", kind, pubs[1], pubs[0])
		}
	}
}

func (m *mnet) stats() MercuryStats {
	var s MercuryStats
	for _, me := range m.mercs {
		o := me.Stats()
		s.Malformed += o.Malformed
		s.Unexpected += o.Unexpected
		s.Rejected += o.Rejected
		s.NotMember += o.NotMember
		s.PlanErrors += o.PlanErrors
		s.Found += o.Found
		s.HandoffsSent += o.HandoffsSent
		s.HandoffsTaken += o.HandoffsTaken
		s.Latency.Merge(&o.Latency)
	}
	return s
}

// TestMercuryChurn lets nodes leave gracefully, crash and join again
// during a run, then checks, once the churn stops, that the ring heals
// (every key owned by exactly one live node), that discovery is complete
// again within a few TTLs, and that no store ever holds a subscription or
// publication past its expiry.
func TestMercuryChurn(t *testing.T) {
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	if n := os.Getenv("MERCURY_CHURN_SEEDS"); n != "" {
		seeds, _ = strconv.Atoi(n)
	}
	total := 0
	for s := range uint64(seeds) {
		seed := s + 11
		m := newMnet(t, seed, 12, 2, KeyMapHilbert)
		rng := rand.New(rand.NewPCG(seed, 99))
		expiryCheck := func() {
			for i, me := range m.mercs {
				if !m.alive[i] {
					continue
				}
				for _, sub := range me.Store().Subscriptions(nil) {
					if sub.Until <= m.now {
						t.Fatalf("seed %d at %v: node %d stores subscription %d/%d past its expiry %v", seed, m.now, i+1, sub.Node, sub.Seq, sub.Until)
					}
				}
				for _, p := range me.Store().Publications(nil) {
					if p.Until <= m.now {
						t.Fatalf("seed %d at %v: node %d stores publication %v past its expiry %v", seed, m.now, i+1, p.ID, p.Until)
					}
				}
			}
		}
		m.run(5*time.Second, expiryCheck)
		for step := range 12 {
			i := 1 + rng.IntN(len(m.mercs)-1) // node 1 stays: the seed
			me := m.mercs[i]
			switch {
			case !m.alive[i]:
				// Come back: a fresh locator joins through node 1.
				id := wire.NodeID(i + 1)
				nm, err := NewMercury(id, MercuryConfig{Keys: m.keys, Dims: mdims}, rand.New(rand.NewPCG(seed, uint64(id)+uint64(step)<<8)))
				if err != nil {
					t.Fatal(err)
				}
				if err := nm.Join(m.now, 1); err != nil {
					t.Fatalf("seed %d: join: %v", seed, err)
				}
				m.mercs[i], m.alive[i], m.found[i] = nm, true, map[world.ObjectID]Found{}
				m.outs[i].Reset()
				m.lout = Out{Outbox: &m.outs[i]}
				nm.Tick(&Frame{Now: m.now, Self: id, Dims: mdims}, &m.lout) // moves the join frame out
				m.send(i)
			case rng.IntN(2) == 0 && me.Ring().Member():
				if err := me.Ring().Leave(m.now); err != nil {
					t.Fatalf("seed %d: leave: %v", seed, err)
				}
				m.lout = Out{Outbox: &m.outs[i]}
				me.Tick(&Frame{Now: m.now, Self: wire.NodeID(i + 1), Dims: mdims}, &m.lout)
				m.send(i)
				m.alive[i] = false
			default:
				m.alive[i] = false // crash: silent from now on
			}
			m.run(time.Duration(500+rng.IntN(1500))*time.Millisecond, expiryCheck)
		}
		// Stable again: let failure detection and stabilisation finish.
		m.run(15*time.Second, expiryCheck)
		m.checkRing(seed)
		clear(m.inside)
		checked := 0
		m.run(10*time.Second, func() { expiryCheck(); checked += m.checkFound(1500 * time.Millisecond) })
		total += checked
	}
	if total == 0 {
		t.Fatal("nothing checked after the churn, under any seed")
	}
}

// checkRing asserts that the live nodes' ranges partition the key space.
func (m *mnet) checkRing(seed uint64) {
	type arc struct {
		lo, hi uint64
		id     int
	}
	var arcs []arc
	for i, me := range m.mercs {
		if !m.alive[i] || !me.Ring().Member() {
			if m.alive[i] {
				m.t.Fatalf("seed %d: live node %d is not in the ring (joining %v, ring stats %+v)", seed, i+1, me.Ring().Joining(), me.Ring().Stats())
			}
			continue
		}
		r, ok := me.Ring().Range()
		if !ok {
			m.t.Fatalf("seed %d: node %d does not know its range", seed, i+1)
		}
		arcs = append(arcs, arc{r.Lo, r.Hi, i + 1})
	}
	// Every live node's key is covered by exactly one range: its own.
	for i, me := range m.mercs {
		if !m.alive[i] {
			continue
		}
		k := me.Ring().Key()
		owners := 0
		for _, a := range arcs {
			if (ring.Range{Lo: a.lo, Hi: a.hi}).Contains(k) {
				owners++
			}
		}
		if owners != 1 {
			m.t.Fatalf("seed %d: key of node %d is in %d ranges: %v", seed, i+1, owners, arcs)
		}
	}
	var total uint64
	for _, a := range arcs {
		total += a.hi - a.lo + 1 // keys in [lo, hi], wrapping
	}
	if len(arcs) > 1 && total != 0 { // the sizes of a partition sum to 2^64 ≡ 0
		for i, me := range m.mercs {
			p, okp := me.Ring().Pred()
			m.t.Logf("node %d alive %v member %v key %d pred %v %v succs %v", i+1, m.alive[i], me.Ring().Member(), me.Ring().Key(), p, okp, me.Ring().Succs(nil))
		}
		m.t.Fatalf("seed %d: ranges do not partition the key space (sizes sum to %d): %v", seed, total, arcs)
	}
}

// FuzzMercuryStep feeds arbitrary frames to a ring member's locator, as a
// node does (Check first, Step only on success): nothing panics, and what
// is refused changes no counter but the drop counters.
func FuzzMercuryStep(f *testing.F) {
	km, _ := NewKeyMap(KeyMapConfig{Kind: KeyMapHilbert, Extent: world.Box{Max: world.Point{100, 100}}})
	msgs := []wire.Locate{
		{Kind: wire.LocMatch, Dims: 2, Pubs: []wire.LocPub{{ID: world.MakeObjectID(2, 1), Node: 2, TTL: time.Second}}},
		{Kind: wire.LocHandoff, Dims: 2, Subs: []wire.LocSub{{Node: 3, Seq: 1, TTL: time.Second, Boxes: []world.Box{{Max: world.Point{5, 5}}}}}},
		{Kind: wire.LocPublish, Dims: 2},
	}
	for _, m := range msgs {
		f.Add(uint8(wire.TypeLocate), wire.AppendLocate(nil, &m)[2:])
	}
	f.Add(uint8(wire.TypeRingPing), []byte{1, 2, 3})
	f.Add(uint8(wire.TypeRingRoute), []byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, typ uint8, body []byte) {
		me, err := NewMercury(1, MercuryConfig{Keys: km, Dims: 2}, rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := me.Ring().Bootstrap(0, []ring.Peer{{ID: 1, Key: 1 << 62}, {ID: 2, Key: 1 << 63}}); err != nil {
			t.Fatal(err)
		}
		var ob wire.Outbox
		out := Out{Outbox: &ob}
		tt := wire.Type(typ)
		if !me.Handles(tt) {
			return
		}
		if err := me.Check(tt, body); err != nil {
			return
		}
		_ = me.Step(time.Second, 2, tt, body, &out)
		me.Tick(&Frame{Now: 2 * time.Second, Self: 1, Dims: 2}, &out)
		_ = fmt.Sprint(me.Stats().Malformed)
	})
}

// TestMercuryRejectsBadConfig names the bad field.
func TestMercuryRejectsBadConfig(t *testing.T) {
	km, _ := NewKeyMap(KeyMapConfig{Kind: KeyMapLinear, Extent: world.Box{Max: world.Point{100, 100}}})
	rng := rand.New(rand.NewPCG(1, 1))
	for _, c := range []struct {
		cfg  MercuryConfig
		want string
	}{
		{MercuryConfig{Dims: 2}, "key mapping"},
		{MercuryConfig{Keys: km}, "dims"},
		{MercuryConfig{Keys: km, Dims: 2, PublishPeriod: -1}, "PublishPeriod"},
		{MercuryConfig{Keys: km, Dims: 2, PublishPeriod: time.Second, PublishTTL: time.Second}, "PublishTTL"},
		{MercuryConfig{Keys: km, Dims: 2, Pad: world.Point{math.NaN()}}, "Pad"},
		{MercuryConfig{Keys: km, Dims: 2, MergeEps: math.NaN()}, "MergeEps"},
		{MercuryConfig{Keys: km, Dims: 2, IdleEvery: -time.Second}, "IdleEvery"},
		{MercuryConfig{Keys: km, Dims: 2, IdleEvery: 100 * time.Millisecond}, "IdleEvery"},
		{MercuryConfig{Keys: km, Dims: 2, IdleEvery: time.Second, IdleMove: math.Inf(1)}, "IdleMove"},
		{MercuryConfig{Keys: km, Dims: 2, IdleMove: math.NaN()}, "IdleMove"},
		{MercuryConfig{Keys: km, Dims: 2, CoordFrac: wire.MaxFrac + 1}, "CoordFrac"},
		{MercuryConfig{Keys: km, Dims: 2, CoordFrac: -1}, "CoordFrac"},
	} {
		_, err := NewMercury(1, c.cfg, rng)
		if err == nil || !contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.cfg, err, c.want)
		}
	}
	if _, err := NewMercury(1, MercuryConfig{Keys: km, Dims: 2}, nil); err == nil {
		t.Error("no random source accepted")
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestBridgeRanges checks bridgeRanges on seeded random range lists: the
// result is sorted and disjoint, covers every input range, adds only gaps
// of at most gap keys, and leaves no gap of at most gap keys unbridged.
func TestBridgeRanges(t *testing.T) {
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var in []KeyRange
		k := rng.Uint64N(1 << 20)
		for range rng.IntN(12) {
			lo := k + 2 + rng.Uint64N(1<<12)
			hi := lo + rng.Uint64N(1<<10)
			in = append(in, KeyRange{lo, hi})
			k = hi
		}
		gap := rng.Uint64N(1 << 12)
		out := bridgeRanges(slices.Clone(in), gap)
		for i := range out {
			if out[i].Lo > out[i].Hi || i > 0 && out[i].Lo-out[i-1].Hi <= gap {
				t.Fatalf("seed %d gap %d: %v → %v: range %d unsorted or gap not bridged", seed, gap, in, out, i)
			}
		}
		j := 0
		for _, r := range in {
			for j < len(out) && out[j].Hi < r.Lo {
				j++
			}
			if j == len(out) || out[j].Lo > r.Lo || out[j].Hi < r.Hi {
				t.Fatalf("seed %d gap %d: %v → %v: %v not covered", seed, gap, in, out, r)
			}
		}
		// Every key of out outside the inputs lies in a gap of at most gap.
		for i := 1; i < len(in); i++ {
			inGap := in[i].Lo - in[i-1].Hi - 1
			bridged := slices.ContainsFunc(out, func(o KeyRange) bool { return o.Lo <= in[i-1].Hi && in[i].Lo <= o.Hi })
			if bridged != (inGap < gap) {
				t.Fatalf("seed %d gap %d: %v → %v: gap %d of %d keys bridged=%v", seed, gap, in, out, i, inGap, bridged)
			}
		}
	}
}

// TestMercurySparesPredictableMatches: with Sweep, a rendezvous sends a
// subscriber an object's first publication, then only those its last one
// does not predict (the object turned, or the last one would run out before
// the next publication), each subscriber on its own; Found.Where follows a
// candidate along its velocity until the candidate expires.
func TestMercurySparesPredictableMatches(t *testing.T) {
	km, err := NewLinearMap(extentBox(100, 100))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMercury(1, MercuryConfig{Keys: km, Dims: 2, Sweep: true}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	const s = time.Second
	ttl := m.Config().PublishTTL // 1.5 s
	pub := func(to wire.NodeID, at time.Duration, x, y, vx, vy float64) Match {
		return Match{To: to, Pub: Publication{ID: 7, Node: 3, Loc: world.Point{x, y}, Vel: world.Point{vx, vy}, At: at, Until: at + ttl}}
	}
	steps := []struct {
		now  time.Duration
		in   []Match
		sent int
	}{
		{0, []Match{pub(2, 0, 0, 0, 10, 0)}, 1},                             // first: sent
		{s / 2, []Match{pub(2, s/2, 5, 0, 10, 0)}, 0},                       // on the line: spared
		{s / 2, []Match{pub(2, s/2, 5, 0, 10, 0)}, 0},                       // a duplicate: spared
		{s, []Match{pub(2, s, 10.5, 0, 10, 0), pub(4, s, 10, 0, 10, 0)}, 2}, // on the line but the first runs out soon; node 4's first
		{3 * s / 2, []Match{pub(2, 3*s/2, 15, 0, 10, 0)}, 0},                // spared (the one sent at 1 s lives to 2.5 s)
		{2 * s, []Match{pub(2, 2*s, 20, 3, 0, 10)}, 1},                      // turned: sent
	}
	for i, st := range steps {
		m.matches = append(m.matches[:0], st.in...)
		before := m.stats.MatchesSpared
		m.spare(st.now)
		want := len(st.in) - st.sent
		if got := int(m.stats.MatchesSpared - before); got != want {
			t.Fatalf("step %d at %v: %d spared, want %d (kept %+v)", i, st.now, got, want, m.matches)
		}
	}
	f := Found{Loc: world.Point{1, 2}, Vel: world.Point{10, -4}, Heard: s, Until: s + s/2}
	if got := f.Where(s+s/4, 2); got != (world.Point{3.5, 1}) {
		t.Errorf("Where after 250 ms: %v, want (3.5, 1)", got)
	}
	if got := f.Where(3*s, 2); got != (world.Point{6, 0}) {
		t.Errorf("Where after 2 s: %v, want (6, 0): no farther than Until", got)
	}
}

// TestMercuryMatchesAgain: with MatchAgain, a subscriber's first match of
// an object standing still is sent once more at the first tick MatchAgain
// later, unless a newer publication of it was sent meanwhile or the
// publication ran out; matches after the first, and first matches of
// moving objects, are not repeated.
func TestMercuryMatchesAgain(t *testing.T) {
	km, err := NewLinearMap(extentBox(100, 100))
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMercury(1, MercuryConfig{Keys: km, Dims: 2, Sweep: true, MatchAgain: 150 * time.Millisecond}, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	const ms = time.Millisecond
	pub := func(to wire.NodeID, id world.ObjectID, at time.Duration, x, vx float64, ttl time.Duration) Match {
		return Match{To: to, Pub: Publication{ID: id, Node: 3, Loc: world.Point{x, 0}, Vel: world.Point{vx, 0}, At: at, Until: at + ttl}}
	}
	var ob wire.Outbox
	out := &Out{Outbox: &ob}
	sentTo := func() map[wire.NodeID]int {
		got := map[wire.NodeID]int{}
		for _, p := range ob.Packets(1, nil) {
			fr, err := wire.OpenFrames(p.Payload)
			if err != nil {
				t.Fatal(err)
			}
			for {
				_, body, ok := fr.Next()
				if !ok {
					break
				}
				var msg wire.Locate
				if err := msg.Decode(body); err != nil {
					t.Fatal(err)
				}
				if msg.Kind == wire.LocMatch {
					got[p.To] += len(msg.Pubs)
				}
			}
		}
		return got
	}
	step := func(now time.Duration, in ...Match) map[wire.NodeID]int {
		m.matches = append(m.matches[:0], in...)
		m.sendMatches(now, now, 2, out)
		m.sendAgain(now, out)
		return sentTo()
	}
	long := 15 * time.Second
	checks := []struct {
		now  time.Duration
		in   []Match
		want map[wire.NodeID]int
	}{
		// First matches: object 7 to nodes 2 and 4, object 8 (short-lived) to 5.
		{0, []Match{pub(2, 7, 0, 0, 0, long), pub(4, 7, 0, 0, 0, long), pub(5, 8, 0, 0, 0, 100*ms)}, map[wire.NodeID]int{2: 1, 4: 1, 5: 1}},
		// Not due yet; a newer, unpredictable publication of 7 goes to 4.
		{100 * ms, []Match{pub(4, 7, 100*ms, 50, 0, long)}, map[wire.NodeID]int{4: 1}},
		// Due: node 2's first again; node 4's was replaced (and its newer
		// one is not a first); object 8 ran out; object 9 moves.
		{200 * ms, nil, map[wire.NodeID]int{2: 1}},
		// Nothing more, and an idle republication to node 2 is spared.
		{500 * ms, []Match{pub(2, 7, 500*ms, 0, 0, long)}, map[wire.NodeID]int{}},
	}
	for i, c := range checks {
		if got := step(c.now, c.in...); !maps.Equal(got, c.want) {
			t.Errorf("step %d at %v: matches sent %v, want %v", i, c.now, got, c.want)
		}
	}
	if got := m.Stats().MatchesAgain; got != 1 {
		t.Errorf("%d matches sent again, want 1", got)
	}
}
