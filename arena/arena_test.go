package arena

import (
	"errors"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

func mustGame(t testing.TB, cfg Config) *Game {
	t.Helper()
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustRun(t testing.TB, g *Game, seed uint64) *Local {
	t.Helper()
	l, err := Run(g, seed)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{P2P(1, Sqr), P2P(96, Rect), Federated(96, Rect), Federated(1250, Sqr), Quake16()} {
		v, err := c.Validate()
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if c.Interest != 0 || v.Interest != 20 || v.FightRange != 20 || v.ScanEvery != 500*time.Millisecond {
			t.Errorf("defaults not filled on a copy: %+v -> %+v", c, v)
		}
	}
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Map = 0 }, "Map"},
		{func(c *Config) { c.Nodes = 0 }, "Nodes 0"},
		{func(c *Config) { c.PlayersPerNode = -1 }, "PlayersPerNode -1"},
		{func(c *Config) { c.Nodes, c.PlayersPerNode = 1000, 1000 }, "at most"},
		{func(c *Config) { c.Interest = -1 }, "Interest -1"},
		{func(c *Config) { c.Interest = math.NaN() }, "Interest NaN"},
		{func(c *Config) { c.PEngage = 2 }, "PEngage 2"},
		{func(c *Config) { c.PDisengage = -0.5 }, "PDisengage"},
		{func(c *Config) { c.PLinger = math.Inf(1) }, "PLinger"},
		{func(c *Config) { c.ItemsPerPlayer = 1e9 }, "ItemsPerPlayer"},
		{func(c *Config) { c.ScanEvery = time.Millisecond }, "ScanEvery"},
		{func(c *Config) { c.Linger = -time.Second }, "Linger"},
		{func(c *Config) { c.Zipf = -1 }, "Zipf -1"},
		{func(c *Config) { c.Zipf = MaxZipf + 1 }, "Zipf 9"},
		{func(c *Config) { c.Zipf = math.NaN() }, "Zipf NaN"},
		{func(c *Config) { c.TileZipf = -1 }, "TileZipf -1"},
		{func(c *Config) { c.TileZipf = math.Inf(1) }, "TileZipf +Inf"},
	} {
		c := Federated(4, Sqr)
		tc.mod(&c)
		if _, err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want ErrConfig naming %q", err, tc.want)
		}
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("New accepted a bad config: %v", err)
		}
	}
	if _, err := ParseMapType("hex"); !errors.Is(err, ErrConfig) {
		t.Errorf("ParseMapType(hex) = %v", err)
	}
	if m, err := ParseMapType(" RECT "); err != nil || m != Rect {
		t.Errorf("ParseMapType(RECT) = %v, %v", m, err)
	}
}

// TestZipfKnob: the default exponent is 1 and gives NewMap's weights
// exactly (the map and every draw unchanged); a larger one keeps the map
// and ranks but puts more of each tile's weight on its top waypoint.
func TestZipfKnob(t *testing.T) {
	if v, err := Federated(4, Rect).Validate(); err != nil || v.Zipf != 1 {
		t.Fatalf("default Zipf = %v, %v; want 1", v.Zipf, err)
	}
	def, err := New(Federated(4, Rect))
	if err != nil {
		t.Fatal(err)
	}
	w, h := Size(Rect, 32)
	ref, err := NewMap(w, h, rand.New(rand.NewPCG(1, 0x6d6170)))
	if err != nil {
		t.Fatal(err)
	}
	c := Federated(4, Rect)
	c.Zipf = 3
	hot, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Map.Waypoints) != len(ref.Waypoints) || len(hot.Map.Waypoints) != len(ref.Waypoints) {
		t.Fatalf("waypoints %d, %d, NewMap %d", len(def.Map.Waypoints), len(hot.Map.Waypoints), len(ref.Waypoints))
	}
	topShare := func(m *Map) float64 {
		sum, top := 0.0, 0.0
		for i, p := range m.Waypoints {
			if p.Weight != ref.Waypoints[i].Weight && m == def.Map {
				t.Fatalf("waypoint %d: weight %v, NewMap's %v", i, p.Weight, ref.Waypoints[i].Weight)
			}
			sum += p.Weight
			if p.Weight == 1 {
				top++
			}
		}
		return top / sum
	}
	d, hs := topShare(def.Map), topShare(hot.Map)
	for i, p := range hot.Map.Waypoints {
		// Same rank k: 1/k^3 = (1/k)^3.
		if want := math.Pow(ref.Waypoints[i].Weight, 3); math.Abs(p.Weight-want) > 1e-12*want {
			t.Fatalf("waypoint %d: weight %v with Zipf 3, want %v", i, p.Weight, want)
		}
	}
	if !(hs > 3*d) {
		t.Errorf("top waypoints' share of weight %v with Zipf 3, %v with 1: want far more", hs, d)
	}
}

// TestTileZipf: tile popularity scales each tile's weights by 1/j^t for
// its random rank j (the per-tile ranks unchanged), so that spawns crowd
// into a few tiles; the default (0) leaves every tile alike.
func TestTileZipf(t *testing.T) {
	c := Federated(32, Rect) // 16 tiles
	if v, err := c.Validate(); err != nil || v.TileZipf != 0 {
		t.Fatalf("default TileZipf = %v, %v; want 0", v.TileZipf, err)
	}
	flat, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	c.TileZipf = 1
	hot, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	tileW := func(m *Map) map[[2]int]float64 {
		out := map[[2]int]float64{}
		for _, p := range m.Waypoints {
			out[[2]int{int(p.X / Diameter16), int(p.Y / Diameter16)}] += p.Weight
		}
		return out
	}
	fw, hw := tileW(flat.Map), tileW(hot.Map)
	var scales []float64
	for k, w := range hw {
		scales = append(scales, w/fw[k])
	}
	slices.Sort(scales)
	slices.Reverse(scales)
	if len(scales) != 16 {
		t.Fatalf("%d tiles, want 16", len(scales))
	}
	for j, f := range scales {
		if want := 1 / float64(j+1); math.Abs(f-want) > 1e-9 {
			t.Fatalf("tile ranked %d: weights scaled by %v, want %v", j+1, f, want)
		}
	}
	// Spawns follow the weights: the hottest tile gets about 1/H(16) of
	// them, against 1/16 with every tile alike.
	rng := rand.New(rand.NewPCG(7, 7))
	count := map[[2]int]int{}
	for range 20000 {
		p := hot.Map.Waypoints[hot.Map.DrawWaypoint(rng)]
		count[[2]int{int(p.X / Diameter16), int(p.Y / Diameter16)}]++
	}
	top := 0
	for _, n := range count {
		top = max(top, n)
	}
	if share := float64(top) / 20000; share < 0.25 || share > 0.35 {
		t.Errorf("hottest tile draws %.3f of spawns, want about 1/H(16) = 0.295 (seed 7)", share)
	}
}

func TestSizeKeepsDensity(t *testing.T) {
	for _, n := range []int{16, 64, 768, 10000} {
		for _, m := range []MapType{Sqr, Rect} {
			w, h := Size(m, n)
			if d := float64(n) / (w * h); math.Abs(d*Diameter16*Diameter16-16) > 1e-9 {
				t.Errorf("%v n=%d: density %v players per 16-player map area, want 16", m, n, d*Diameter16*Diameter16)
			}
			if m == Rect && h != Diameter16 {
				t.Errorf("rect height %v, want %v", h, Diameter16)
			}
		}
	}
}

// dijkstra is the exact reference for Map.Path.
func dijkstra(m *Map, a, b int) float64 {
	dist := make([]float64, len(m.Waypoints))
	for i := range dist {
		dist[i] = math.Inf(1)
	}
	done := make([]bool, len(dist))
	dist[a] = 0
	for {
		v := -1
		for i := range dist {
			if !done[i] && !math.IsInf(dist[i], 1) && (v < 0 || dist[i] < dist[v]) {
				v = i
			}
		}
		if v < 0 || v == b {
			return dist[b]
		}
		done[v] = true
		for _, u := range m.Neighbours(v) {
			if d := dist[v] + m.dist(int32(v), u); d < dist[u] {
				dist[u] = d
			}
		}
	}
}

func TestMapInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 1))
		w, h := Size(MapType(1+seed%2), int(16+rng.IntN(200)))
		m, err := NewMap(w, h, rng)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i, p := range m.Waypoints {
			if !m.free(p.X, p.Y, BotRadius) || !(p.Weight > 0 && p.Weight <= 1) {
				t.Fatalf("seed %d: waypoint %d at (%v, %v) weight %v is not free or badly weighted", seed, i, p.X, p.Y, p.Weight)
			}
			for _, j := range m.Neighbours(i) {
				q := m.Waypoints[j]
				if !m.Clear(p.X, p.Y, q.X, q.Y) || !slicesContain(m.Neighbours(int(j)), int32(i)) {
					t.Fatalf("seed %d: edge %d-%d blocked or one-way", seed, i, j)
				}
			}
		}
		// Connected, and A* is exact against Dijkstra.
		for k := range 30 {
			a, b := rng.IntN(len(m.Waypoints)), rng.IntN(len(m.Waypoints))
			path := m.Path(nil, a, b)
			length, prev := 0.0, int32(a)
			for _, v := range path {
				if !slicesContain(m.Neighbours(int(prev)), v) {
					t.Fatalf("seed %d pair %d: path steps %d->%d along no edge", seed, k, prev, v)
				}
				length += m.dist(prev, v)
				prev = v
			}
			if prev != int32(b) {
				t.Fatalf("seed %d: path from %d ends at %d, want %d", seed, a, prev, b)
			}
			if want := dijkstra(m, a, b); math.Abs(length-want) > 1e-9 {
				t.Fatalf("seed %d: A* path %d->%d has length %v, Dijkstra %v", seed, a, b, length, want)
			}
		}
	}
	if _, err := NewMap(0, 10, rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrMap) {
		t.Errorf("zero-width map: %v", err)
	}
}

func slicesContain(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// digest hashes every live object's state.
func digest(l *Local) uint64 {
	h := fnv.New64a()
	var buf []byte
	l.Range(func(obj world.Object, node int) bool {
		buf = world.AppendDelta(buf[:0], nil, obj.State())
		buf = append(buf, byte(node))
		var id [8]byte
		for i := range id {
			id[i] = byte(obj.State().ID() >> (8 * i))
		}
		h.Write(id[:])
		h.Write(buf)
		return true
	})
	return h.Sum64()
}

func TestDeterminism(t *testing.T) {
	cfg := Federated(4, Rect)
	var runs [3][]uint64
	for r, seed := range []uint64{7, 7, 8} {
		cfg.Seed = seed
		l := mustRun(t, mustGame(t, cfg), seed)
		for range 600 {
			l.Step()
			runs[r] = append(runs[r], digest(l))
		}
	}
	for f := range runs[0] {
		if runs[0][f] != runs[1][f] {
			t.Fatalf("same seed: runs differ at frame %d", f)
		}
	}
	if runs[0][len(runs[0])-1] == runs[2][len(runs[2])-1] {
		t.Error("different seeds ended in the same state")
	}
}

// TestBotsStayInBounds runs games and checks every bot after every frame:
// inside the map, BotRadius clear of every obstacle (less the position
// quantum), and on a graph edge.
func TestBotsStayInBounds(t *testing.T) {
	frames := 1200
	if testing.Short() {
		frames = 300
	}
	for _, cfg := range []Config{Federated(6, Rect), P2P(40, Sqr)} {
		cfg.Seed = 3
		g := mustGame(t, cfg)
		l := mustRun(t, g, 3)
		missileBorn := map[world.ObjectID]int64{}
		for f := range frames {
			l.Step()
			l.Range(func(obj world.Object, _ int) bool {
				st := obj.State()
				switch st.Schema() {
				case g.Bot:
					x, y := st.Float(BotX), st.Float(BotY)
					if !g.Map.free(x, y, BotRadius-posQuantum) {
						t.Fatalf("%v frame %d: bot %v at (%v, %v) is in an obstacle or off the map", cfg.Map, f, st.ID(), x, y)
					}
					if st.Int(BotMode) == ModeDead {
						// Dead: "to" is the waypoint it respawns on.
						if wp := st.Int(BotTo); wp < 0 || wp >= int64(len(g.Map.Waypoints)) {
							t.Fatalf("frame %d: dead bot %v respawns on waypoint %d of %d", f, st.ID(), wp, len(g.Map.Waypoints))
						}
						return true
					}
					a, b := g.Map.Waypoints[st.Int(BotFrom)], g.Map.Waypoints[st.Int(BotTo)]
					if _, d := closest(a.X, a.Y, b.X, b.Y, x, y); d > 2*posQuantum { // two roundings
						t.Fatalf("frame %d: bot %v is %v m off its edge", f, st.ID(), d)
					}
					if hp := st.Int(BotHealth); hp > MaxHealth {
						t.Fatalf("bot health %d", hp)
					}
				case g.Missile:
					born, ok := missileBorn[st.ID()]
					if !ok {
						missileBorn[st.ID()], born = l.Frame(), l.Frame()
					}
					if age := l.Frame() - born; age > int64(MissileLife/Frame)+1 {
						t.Fatalf("missile %v is %d frames old", st.ID(), age)
					}
				}
				return true
			})
		}
		if len(missileBorn) == 0 {
			t.Errorf("%v: no missile fired in %d frames", cfg.Map, frames)
		}
	}
}

// TestMissilesExpire fires a rocket into an empty map's open space and
// checks it expires or explodes within MissileLife, deleting itself.
func TestMissilesExpire(t *testing.T) {
	cfg := Quake16()
	cfg.ItemsPerPlayer = 0
	g := mustGame(t, cfg)
	l, _ := NewLocal(g.Registry(), 1, 1)
	p := g.Map.Waypoints[0]
	id, err := l.Spawn(0, g.Missile, func(s *world.State) {
		s.SetFloat(MissileX, p.X)
		s.SetFloat(MissileY, p.Y)
		s.SetFloat(MissileVX, 0.001) // practically still: only expiry ends it
		s.SetInt(MissileExpires, int64(MissileLife/Frame))
	})
	if err != nil {
		t.Fatal(err)
	}
	for f := range int(MissileLife/Frame) + 1 {
		if _, _, ok := l.Lookup(id); !ok {
			t.Fatalf("missile gone at frame %d, before its expiry", f)
		}
		l.Step()
	}
	if _, _, ok := l.Lookup(id); ok || l.Len() != 0 {
		t.Fatalf("missile still alive after %v", MissileLife)
	}
}

// TestDamageThroughTentativeWrites puts a victim on node 1 and two rockets
// from shooters on nodes 0 and 2 that hit it in the same frame: the
// damage arrives as tentative writes (the victim is a replica on the
// shooters' nodes) and both count.
func TestDamageThroughTentativeWrites(t *testing.T) {
	cfg := Quake16()
	cfg.ItemsPerPlayer = 0
	g := mustGame(t, cfg)
	l, _ := NewLocal(g.Registry(), 3, 1)
	l.MeasureDeltas(true)
	// A waypoint with a clear 3 m line on both sides along x.
	var p Waypoint
	for _, w := range g.Map.Waypoints {
		if g.Map.Clear(w.X-3, w.Y, w.X+3, w.Y) {
			p = w
			break
		}
	}
	victim, _ := l.Spawn(1, g.Bot, func(s *world.State) {
		g.placeBot(s, 0, 1)
		s.SetFloat(BotX, p.X)
		s.SetFloat(BotY, p.Y)
		s.SetInt(BotHealth, 250) // survives both
		s.SetInt(BotMode, ModeLinger)
		s.SetInt(BotUntil, 1000)
	})
	var shooters []world.ObjectID
	for node, dir := range map[int]float64{0: 1, 2: -1} {
		sh, _ := l.Spawn(node, g.Bot, func(s *world.State) {
			g.placeBot(s, 0, 1)
			s.SetInt(BotMode, ModeLinger)
			s.SetInt(BotUntil, 1000)
			s.SetFloat(BotX, -100) // far away: no splash, no fight
		})
		shooters = append(shooters, sh)
		if _, err := l.Spawn(node, g.Missile, func(s *world.State) {
			s.SetFloat(MissileX, p.X-dir*2)
			s.SetFloat(MissileY, p.Y)
			s.SetFloat(MissileVX, dir*MissileSpeed)
			s.SetRef(MissileOwner, sh)
			s.SetInt(MissileExpires, 100)
		}); err != nil {
			t.Fatal(err)
		}
	}
	l.Step()
	obj, _, _ := l.Lookup(victim)
	st := obj.State()
	if hp := st.Int(BotHealth); hp != 250-2*MissileDamage {
		t.Fatalf("victim health %d, want %d (two direct hits)", hp, 250-2*MissileDamage)
	}
	if hb := st.Ref(BotHitBy); hb != shooters[0] && hb != shooters[1] {
		t.Errorf("hit by %v, want one of the shooters", hb)
	}
	if ks := l.Stats()[0]; ks.Writes != 2 {
		t.Errorf("tentative writes on bots: %d, want 2", ks.Writes)
	}
	if l.Len() != 3 {
		t.Errorf("%d objects left, want 3 (the rockets exploded)", l.Len())
	}
}

func TestDeltaSizeTarget(t *testing.T) {
	l := mustRun(t, mustGame(t, Federated(8, Rect)), 1)
	l.MeasureDeltas(true)
	for range 1200 {
		l.Step()
	}
	var bytes, n int64
	for _, k := range l.Stats() {
		if k.Updates == 0 {
			t.Fatalf("%s: no updates", k.Name)
		}
		if k.MeanDelta() > 8 {
			t.Errorf("%s: mean delta %.2f bytes", k.Name, k.MeanDelta())
		}
		bytes += k.DeltaBytes
		n += k.Updates
	}
	if mean := float64(bytes) / float64(n); mean > 30 {
		t.Errorf("mean delta %.2f bytes, target ≤ 30", mean)
	}
}

func TestMobilityMatchesPaper(t *testing.T) {
	d := 8 * time.Minute
	if testing.Short() {
		d = 2 * time.Minute
	}
	c, err := CompareMobility(Quake16(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := c.PathRegions
	t.Logf("path length: %+v; Zipf %+v; Fortnite %+v", p, c.GameOccupancy, c.FortniteOccupancy)
	if math.Abs(p.Mean-PaperPathMean) > 1.5 || math.Abs(p.Median-PaperPathMedian) > 2 || math.Abs(p.P95-PaperPathP95) > 3 {
		t.Errorf("path length %+v, paper mean %v median %v p95 %v", p, PaperPathMean, PaperPathMedian, PaperPathP95)
	}
	if z := c.GameOccupancy; z.Exponent < 0.5 || z.Top10 < 0.2 {
		t.Errorf("region popularity not Zipf-like: %+v", z)
	}
	if c.FortniteTraces != 840 || c.FortniteMetres.N < 30000 {
		t.Errorf("Fortnite: %d traces, %d windows", c.FortniteTraces, c.FortniteMetres.N)
	}
	if _, err := CompareMobility(Quake16(), time.Second, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("1 s run accepted: %v", err)
	}
}

func TestSummariseAndZipf(t *testing.T) {
	s := Summarise([]float64{5, 1, 3, 2, 4})
	if s.N != 5 || s.Mean != 3 || s.Median != 3 || s.Max != 5 || math.Abs(s.SD-math.Sqrt(2.5)) > 1e-12 || math.Abs(s.P95-4.8) > 1e-12 {
		t.Errorf("Summarise = %+v", s)
	}
	var zipf []float64
	for k := 1; k <= 50; k++ {
		zipf = append(zipf, 1/math.Pow(float64(k), 1.3))
	}
	if f := FitZipf(shares(zipf)); math.Abs(f.Exponent-1.3) > 1e-9 || math.Abs(f.R2-1) > 1e-9 || f.Regions != 50 {
		t.Errorf("FitZipf of an exact Zipf = %+v", f)
	}
}

// TestDeadBotsAnticipateRespawn: a dead bot anticipates exactly the
// interest box around the waypoint it will respawn on, and respawns there;
// a live bot anticipates nothing.
func TestDeadBotsAnticipateRespawn(t *testing.T) {
	g := mustGame(t, P2P(40, Sqr))
	l := mustRun(t, g, 5)
	pending := map[world.ObjectID]int64{} // dead bot → its respawn waypoint
	respawns := 0
	for f := range 1500 {
		l.Step()
		l.Range(func(obj world.Object, _ int) bool {
			st := obj.State()
			if st.Schema() != g.Bot {
				return true
			}
			a := obj.(world.Anticipator).Anticipate(nil)
			if st.Int(BotMode) != ModeDead {
				if len(a) != 0 {
					t.Fatalf("frame %d: live bot %v anticipates %v", f, st.ID(), a)
				}
				if wp, ok := pending[st.ID()]; ok {
					p := g.Map.Waypoints[wp]
					if math.Abs(st.Float(BotX)-p.X) > posQuantum || math.Abs(st.Float(BotY)-p.Y) > posQuantum {
						t.Fatalf("frame %d: bot %v respawned at (%v, %v), not on waypoint %d (%v, %v)",
							f, st.ID(), st.Float(BotX), st.Float(BotY), wp, p.X, p.Y)
					}
					delete(pending, st.ID())
					respawns++
				}
				return true
			}
			wp := st.Int(BotTo)
			if old, ok := pending[st.ID()]; ok && old != wp {
				t.Fatalf("frame %d: dead bot %v changed its respawn waypoint %d → %d", f, st.ID(), old, wp)
			}
			pending[st.ID()] = wp
			p, h := g.Map.Waypoints[wp], g.Config().Interest
			want := world.BoxAround(world.Point{p.X, p.Y, 0}, world.Point{h, h, math.Inf(1)})
			if len(a) != 1 || a[0] != want {
				t.Fatalf("frame %d: dead bot %v anticipates %v, want %v", f, st.ID(), a, want)
			}
			return true
		})
	}
	if respawns == 0 {
		t.Fatal("no bot died and respawned in 1500 frames")
	}
	t.Logf("%d respawns checked", respawns)
}

// TestMapObstacleTests checks Inside, Visible and Clear, which walk the
// obstacle grid's cells, against a test of every obstacle, for random
// points and segments (short ones, long ones, along an axis, degenerate,
// and ending outside the map) over random maps.
func TestMapObstacleTests(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		w, h := 30+rng.Float64()*150, 30+rng.Float64()*150
		m, err := NewMap(w, h, rng)
		if err != nil {
			continue
		}
		inside := func(x, y float64) bool {
			if !(x >= 0 && x <= w && y >= 0 && y <= h) {
				return false
			}
			for _, o := range m.Obstacles {
				if o.Contains(x, y, 0) {
					return false
				}
			}
			return true
		}
		clear := func(x0, y0, x1, y1, margin float64) bool {
			for _, o := range m.Obstacles {
				if o.segmentHits(x0, y0, x1, y1, margin) {
					return false
				}
			}
			return true
		}
		point := func() (float64, float64) {
			return -5 + rng.Float64()*(w+10), -5 + rng.Float64()*(h+10)
		}
		for k := range 3000 {
			x0, y0 := point()
			var x1, y1 float64
			switch k % 4 {
			case 0: // anywhere
				x1, y1 = point()
			case 1: // short
				x1, y1 = x0+rng.NormFloat64()*3, y0+rng.NormFloat64()*3
			case 2: // along an axis
				x1, y1 = x0, y0+rng.NormFloat64()*20
				if rng.IntN(2) == 0 {
					x1, y1 = x0+rng.NormFloat64()*20, y0
				}
			default: // a point
				x1, y1 = x0, y0
			}
			if got, want := m.Inside(x0, y0), inside(x0, y0); got != want {
				t.Fatalf("seed %d: Inside(%v, %v) = %v, want %v", seed, x0, y0, got, want)
			}
			if got, want := m.Visible(x0, y0, x1, y1), clear(x0, y0, x1, y1, 0); got != want {
				t.Fatalf("seed %d: Visible(%v, %v, %v, %v) = %v, want %v", seed, x0, y0, x1, y1, got, want)
			}
			if got, want := m.Clear(x0, y0, x1, y1), clear(x0, y0, x1, y1, BotRadius); got != want {
				t.Fatalf("seed %d: Clear(%v, %v, %v, %v) = %v, want %v", seed, x0, y0, x1, y1, got, want)
			}
		}
	}
}

// TestScanFiltersByType checks the premise of the Each callbacks' type
// tests (opponent, the rockets' scans, pickUp): an object has the bot
// (item) schema exactly when it is a *Bot (*Item), and opponent agrees with
// a reference that tests the schema first, for every pair of a bot and an
// object of a game in its steady state (rockets in flight, items taken).
func TestScanFiltersByType(t *testing.T) {
	g := mustGame(t, Federated(12, Rect))
	l := mustRun(t, g, 5)
	ref := func(b *Bot, obj world.Object) (*world.State, bool) {
		o := obj.State()
		if o.Schema() != b.g.Bot || o.ID() == b.st.ID() || o.Int(BotMode) == ModeDead || o.Int(BotHealth) <= 0 {
			return nil, false
		}
		x, y := b.st.Float(BotX), b.st.Float(BotY)
		ox, oy := o.Float(BotX), o.Float(BotY)
		if math.Hypot(ox-x, oy-y) > b.g.cfg.FightRange || !b.g.Map.Visible(x, y, ox, oy) {
			return nil, false
		}
		return o, true
	}
	kinds := map[string]int{}
	pairs, found := 0, 0
	for frame := range 400 {
		l.Step()
		if frame%50 != 49 {
			continue
		}
		var objs []world.Object
		l.Range(func(obj world.Object, _ int) bool {
			objs = append(objs, obj)
			return true
		})
		for _, obj := range objs {
			s := obj.State().Schema()
			_, isBot := obj.(*Bot)
			_, isItem := obj.(*Item)
			_, isMissile := obj.(*Missile)
			if isBot != (s == g.Bot) || isItem != (s == g.Item) || isMissile != (s == g.Missile) {
				t.Fatalf("frame %d: a %T has schema %q", frame, obj, s.Name())
			}
			kinds[s.Name()]++
		}
		for _, a := range objs {
			b, ok := a.(*Bot)
			if !ok {
				continue
			}
			for _, obj := range objs {
				got, gok := b.opponent(obj)
				want, wok := ref(b, obj)
				if got != want || gok != wok {
					t.Fatalf("frame %d: opponent(%v, %v) = %v, want %v", frame, b.st.ID(), obj.State().ID(), gok, wok)
				}
				pairs++
				if gok {
					found++
				}
			}
		}
	}
	if kinds["arena.missile"] == 0 || found == 0 {
		t.Fatalf("no rockets (%v) or no opponents (%d of %d pairs): the test tests nothing", kinds, found, pairs)
	}
}
