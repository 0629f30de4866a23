package harness

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// baselines are the three baseline architectures of Colyseus §7.1.
var baselines = []discovery.Arch{discovery.ClientServer, discovery.Broadcast, discovery.Directory}

// newArenaWorld is NewArena with an adapter around every node core.
func newArenaWorld(cfg ArenaConfig, wrap func(*node.Node) sim.Core) (*World, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	g, _, err := ArenaGame(cfg)
	if err != nil {
		return nil, err
	}
	return newWorld(cfg.Config, g, wrap)
}

func TestWorldConfigValidate(t *testing.T) {
	ok := DefaultArenaConfig()
	if _, err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*ArenaConfig)
		want string
	}{
		{"arch", func(c *ArenaConfig) { c.Arch = "mesh" }, "architecture"},
		{"nodes", func(c *ArenaConfig) { c.Nodes = 0 }, "nodes 0"},
		{"players", func(c *ArenaConfig) { c.PlayersPerNode = -1 }, "players per node"},
		{"too many", func(c *ArenaConfig) { c.Nodes, c.PlayersPerNode = 10_000, 1000 }, "players"},
		{"map", func(c *ArenaConfig) { c.Map = 9 }, "map"},
		{"duration", func(c *ArenaConfig) { c.Duration = time.Millisecond }, "duration"},
		{"jitter", func(c *ArenaConfig) { c.Jitter = -time.Second }, "jitter"},
		{"loss", func(c *ArenaConfig) { c.Loss = 1 }, "loss"},
		{"dup", func(c *ArenaConfig) { c.Duplicate = -0.1 }, "duplication"},
		{"slice", func(c *ArenaConfig) { c.Slice = 19 }, "slice 19"},
		{"cities on planetlab", func(c *ArenaConfig) { c.Cities = []string{"London"} }, "cities"},
		{"few cities", func(c *ArenaConfig) { c.Data, c.Slice, c.Cities = SitesWonder, 0, []string{"London"} }, "1 WonderNetwork cities for 16 nodes"},
		{"twice", func(c *ArenaConfig) {
			c.Data, c.Slice, c.Nodes, c.Cities = SitesWonder, 0, 2, []string{"London", "London"}
		}, "twice"},
		{"data", func(c *ArenaConfig) { c.Data = "ns2" }, "sites"},
		{"staleness", func(c *ArenaConfig) { c.StalenessCap = -1 }, "staleness"},
		{"zipf", func(c *ArenaConfig) { c.Zipf = -1 }, "zipf"},
		{"zipf high", func(c *ArenaConfig) { c.Zipf = 9 }, "zipf"},
		{"tile zipf", func(c *ArenaConfig) { c.TileZipf = -0.5 }, "tile popularity"},
		{"tile zipf NaN", func(c *ArenaConfig) { c.TileZipf = math.NaN() }, "tile popularity"},
	} {
		c := DefaultArenaConfig()
		tc.mod(&c)
		_, err := c.Validate()
		if !errors.Is(err, lab.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an lab.ErrConfig naming %q", tc.name, err, tc.want)
		}
		if _, err := NewArena(c); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%s: NewArena: %v", tc.name, err)
		}
	}
	c := DefaultArenaConfig()
	c.Data, c.Slice, c.Nodes, c.Cities = SitesWonder, 0, 2, []string{"London", "Atlantis"}
	if _, err := NewArena(c); !errors.Is(err, lab.ErrConfig) || !strings.Contains(err.Error(), "Atlantis") {
		t.Errorf("unknown city: %v", err)
	}
}

// lossy wraps a node core: it loses and duplicates packets the node sends
// (from its own seeded stream) until quiet is set.
type lossy struct {
	*node.Node
	rng       *rand.Rand
	loss, dup float64
	quiet     *bool
	buf       []wire.Packet
}

func (l *lossy) Drain(dst []wire.Packet) []wire.Packet {
	l.buf = l.Node.Drain(l.buf[:0])
	for _, p := range l.buf {
		if !*l.quiet {
			if l.rng.Float64() < l.loss {
				continue
			}
			if l.rng.Float64() < l.dup {
				dst = append(dst, wire.Packet{From: p.From, To: p.To, Class: p.Class, Payload: slices.Clone(p.Payload)})
			}
		}
		dst = append(dst, p)
	}
	clear(l.buf)
	return dst
}

// checker checks the runtime's invariants after every simulated event of a
// world run, against its own record of every primary's states.
type checker struct {
	t        *testing.T
	w        *World
	seed     uint64
	hist     map[world.ObjectID]map[uint64]*world.State
	live     map[world.ObjectID]bool
	deleted  map[world.ObjectID]time.Duration
	maxDelay time.Duration
	quietAt  time.Duration // loss stops here; 0: never
	settle   time.Duration
	bound    time.Duration // staleness bound for replicas in view once quiet
	events   int
	replicas int
	views    int
	ordered  int // sampling frames whose order was checked
	sorted   int // other frames whose ID order was checked
	quietChk int
	// prims is every node's primaries as of its latest frame (the
	// observer's semantics: primaries move only in their node's frames).
	prims map[wire.NodeID][]primAt
}

type primAt struct {
	id  world.ObjectID
	loc world.Point
}

func (c *checker) snapshot(n *node.Node) {
	var ps []primAt
	for _, in := range n.Objects(nil) {
		if in.Primary {
			ps = append(ps, primAt{in.ID, in.State.Location()})
		}
	}
	c.prims[n.ID()] = ps
}

func newChecker(t *testing.T, w *World, seed uint64) *checker {
	c := &checker{t: t, w: w, seed: seed, hist: map[world.ObjectID]map[uint64]*world.State{},
		live: map[world.ObjectID]bool{}, deleted: map[world.ObjectID]time.Duration{}, prims: map[wire.NodeID][]primAt{}}
	for _, n := range w.nodes {
		c.snapshot(n)
	}
	// The longest a packet can take: the largest one-way delay between
	// the run's nodes plus a generous jitter tail.
	sum := w.sim.Summary()
	sites := w.sim.Sites()
	for _, a := range sum.PerNode {
		for _, b := range sum.PerNode {
			i, _ := sites.Index(a.Site)
			j, _ := sites.Index(b.Site)
			c.maxDelay = max(c.maxDelay, sites.OneWay(i, j))
		}
	}
	c.maxDelay += 20 * w.cfg.Jitter
	return c
}

func (c *checker) fail(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("seed %d, %s, t=%v, event %d: %s", c.seed, c.w.cfg.Arch, c.w.sim.Now(), c.events, fmt.Sprintf(format, args...))
}

func (c *checker) event(ev sim.Event) {
	c.events++
	now := c.w.sim.Now()
	prim := map[world.ObjectID]wire.NodeID{}
	for _, n := range c.w.nodes {
		if !c.w.sim.Up(n.ID()) { // crashed: its objects are gone with it
			delete(c.prims, n.ID())
			continue
		}
		for _, in := range n.Objects(nil) {
			if !in.Primary {
				continue
			}
			if other, dup := prim[in.ID]; dup {
				c.fail("object %v has primaries on nodes %d and %d", in.ID, other, n.ID())
			}
			prim[in.ID] = n.ID()
			c.live[in.ID] = true
			h := c.hist[in.ID]
			if h == nil {
				h = map[uint64]*world.State{}
				c.hist[in.ID] = h
			}
			if _, ok := h[in.Version]; !ok {
				h[in.Version] = in.Synced.Clone()
			}
		}
	}
	for id := range c.live {
		if _, ok := prim[id]; !ok {
			delete(c.live, id)
			c.deleted[id] = now
		}
	}
	for _, n := range c.w.nodes {
		if !c.w.sim.Up(n.ID()) {
			continue
		}
		ttl := n.Config().Replica.ReplicaTimeout
		for _, in := range n.Objects(nil) {
			if in.Primary || in.Version == 0 {
				continue
			}
			c.replicas++
			st, ok := c.hist[in.ID][in.Version]
			switch {
			case !ok:
				c.fail("node %d: replica %v at version %d, which its primary never had", n.ID(), in.ID, in.Version)
			case !st.Equal(in.Synced):
				c.fail("node %d: replica %v version %d differs from its primary's state of that version", n.ID(), in.ID, in.Version)
			}
			if d, dead := c.deleted[in.ID]; dead && now > d+ttl+2*arena.Frame+c.maxDelay {
				c.fail("node %d: replica %v outlived its object (deleted at %v)", n.ID(), in.ID, d)
			}
		}
	}
	if ev.Kind == sim.EventTick {
		c.snapshot(c.w.nodes[ev.Node-1])
		c.checkView(ev.Node, now)
	}
}

// checkView recomputes node id's view report by brute force over every
// primary of the cluster and compares it with the observer's, and once the
// network is quiet checks that every replica in the view is fresh.
func (c *checker) checkView(id wire.NodeID, now time.Duration) {
	if id == c.w.infra {
		return
	}
	n := c.w.nodes[id-1]
	view := n.View(nil)
	want := map[uint64]bool{}
	for owner, ps := range c.prims {
		for _, p := range ps {
			if owner == id || node.Home(p.id) == id {
				continue
			}
			for _, b := range view {
				if b.Contains(p.loc, 3) {
					_, _, held := n.Lookup(p.id)
					if _, dup := want[uint64(p.id)]; dup {
						c.fail("object %v is a primary on two nodes' latest frames", p.id)
					}
					want[uint64(p.id)] = held
					break
				}
			}
		}
	}
	tr := c.w.truth
	// The snapshot the observer read holds the node's objects, with their
	// versions and roles.
	snap := &c.w.snaps[id-1].cur().Snapshot
	ins := n.Objects(nil)
	if snap.Len() != len(ins) {
		c.fail("node %d: snapshot of %d objects, the node has %d", id, snap.Len(), len(ins))
	}
	for _, in := range ins {
		if v, primary, ok := snap.Object(in.ID); !ok || v != in.Version || primary != in.Primary {
			c.fail("node %d: snapshot has %v: %v version %d primary %v; the node: version %d primary %v", id, in.ID, ok, v, primary, in.Version, in.Primary)
		}
	}
	interest, held, scanned := tr.LastReport()
	if len(interest) != len(want) {
		c.fail("node %d: the observer reported %d objects in its interest, brute force finds %d", id, len(interest), len(want))
	}
	seen := map[uint64]bool{}
	for k, oid := range interest {
		if h, ok := want[oid]; !ok || h != held[k] || seen[oid] {
			c.fail("node %d: the observer reported object %v (held %v, twice %v); brute force: present %v, held %v", id, world.ObjectID(oid), held[k], seen[oid], ok, h)
		}
		seen[oid] = true
	}
	// On a sampling frame the report is in the order of the grid scan,
	// the order staleness is sampled in (package truth checks that order
	// against a scan of every box); on the others it is in ID order (the
	// recorder's).
	if scanned {
		c.ordered++
	} else {
		for k := 1; k < len(interest); k++ {
			if interest[k-1] >= interest[k] {
				c.fail("node %d: report %v not in ID order", id, interest)
				break
			}
		}
		c.sorted++
	}
	c.views++
	if c.quietAt == 0 || now < c.quietAt+c.settle {
		return
	}
	for _, oid := range interest {
		in, ok := n.Object(world.ObjectID(oid))
		if !ok {
			continue // not yet discovered: the missing-replica measure's business
		}
		if in.Primary || in.Version == 0 {
			continue
		}
		d, ok := tr.StalenessOf(in.ID, in.Version, now)
		if ok && d > c.bound {
			c.fail("node %d: replica %v in its view is %v stale (version %d) on a quiet network", id, in.ID, d, in.Version)
		}
		c.quietChk++
	}
}

// TestWorldInvariants runs small seeded worlds under each architecture with
// jitter, and with 10% loss and 5% duplication until the network turns
// quiet, checking after every simulated event: exactly one primary per live
// object; every replica's state equals a past state of its primary; no
// replica outlives its object beyond the replica timeout (plus two frames
// and the longest delivery); the observer's view reports equal a brute-force
// recomputation; and once the network is quiet, every replica in a node's
// view is at most a bound stale (it converges to its primary, which keeps
// moving).
func TestWorldInvariants(t *testing.T) {
	// Under -short, one seed: still 30 s, which the smallest worlds (three
	// nodes under client-server) need for the events the run must see.
	seeds := 5
	dur := 30 * time.Second
	if testing.Short() {
		seeds = 1
	}
	for _, arch := range discovery.Archs() {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", arch, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 77))
				cfg := DefaultArenaConfig()
				cfg.Arch, cfg.Seed, cfg.Duration = arch, seed, dur
				cfg.Nodes, cfg.PlayersPerNode = 3+r.IntN(5), 2+r.IntN(4)
				cfg.Map = []arena.MapType{arena.Sqr, arena.Rect}[r.IntN(2)]
				cfg.Jitter = time.Duration(5+r.IntN(20)) * time.Millisecond
				quiet := false
				w, err := newArenaWorld(cfg, func(n *node.Node) sim.Core {
					return &lossy{Node: n, rng: rand.New(rand.NewPCG(seed, uint64(n.ID()))), loss: 0.1, dup: 0.05, quiet: &quiet}
				})
				if err != nil {
					t.Fatal(err)
				}
				c := newChecker(t, w, seed)
				c.quietAt, c.settle = dur*2/3, 3*time.Second
				// Once quiet, an update reaches a replica within a frame,
				// the delivery and a retransmission.
				c.bound = 2*arena.Frame + 2*c.maxDelay + 300*time.Millisecond
				w.SetCheck(c.event)
				if err := w.sim.Schedule(c.quietAt, func(time.Duration) { quiet = true }); err != nil {
					t.Fatal(err)
				}
				if err := w.Run(nil); err != nil {
					t.Fatal(err)
				}
				if c.events < 2000 || c.replicas == 0 || len(c.deleted) == 0 || c.quietChk == 0 || c.ordered == 0 || c.sorted == 0 {
					t.Fatalf("seed %d: a weak run: %d events, %d replica observations, %d deletions, %d quiet checks, %d scan-order and %d ID-order checks",
						seed, c.events, c.replicas, len(c.deleted), c.quietChk, c.ordered, c.sorted)
				}
				t.Logf("%d nodes × %d, %s: %d events, %d deletions, %d view checks (%d of their scan order, %d of their ID order), %d quiet staleness checks",
					cfg.Nodes, cfg.PlayersPerNode, cfg.Map, c.events, len(c.deleted), c.views, c.ordered, c.sorted, c.quietChk)
			})
		}
	}
}

func summaryJSON(t *testing.T, cfg ArenaConfig) []byte {
	t.Helper()
	res, err := RunArena(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.Summary.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestWorldDeterminism: the same seed gives a byte-identical summary, with
// jitter, loss and duplication in the network; another seed does not.
func TestWorldDeterminism(t *testing.T) {
	for _, arch := range baselines {
		cfg := DefaultArenaConfig()
		cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Seed = arch, 5, 3, 6*time.Second, 11
		cfg.Jitter, cfg.Loss, cfg.Duplicate = 10*time.Millisecond, 0.05, 0.02
		a, b := summaryJSON(t, cfg), summaryJSON(t, cfg)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: two runs with seed 11 differ", arch)
		}
		cfg.Seed = 12
		if c := summaryJSON(t, cfg); bytes.Equal(a, c) {
			t.Fatalf("%s: seeds 11 and 12 give the same summary", arch)
		}
	}
}

// TestWorldParallelIsSerial: the simulation on parallel workers gives the
// serial run's summary, byte for byte, under every architecture.
func TestWorldParallelIsSerial(t *testing.T) {
	for _, arch := range discovery.Archs() {
		cfg := DefaultArenaConfig()
		cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Seed = arch, 40, 4, 3*time.Second, 5
		cfg.Jitter, cfg.Loss, cfg.Duplicate = 5*time.Millisecond, 0.02, 0.01
		if testing.Short() {
			cfg.Nodes, cfg.Duration = 24, 2*time.Second
		}
		cfg.Workers = 1
		want := summaryJSON(t, cfg)
		for _, w := range []int{2, 4} {
			cfg.Workers = w
			res, err := RunArena(cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			// Client-server has too few events per window at this size
			// (about one packet per client per frame) to wake workers.
			if res.sim.ParallelWindows() == 0 && arch != discovery.ClientServer {
				t.Fatalf("%s: no parallel window with %d workers (lookahead %v)", arch, w, res.sim.Lookahead())
			}
			var b bytes.Buffer
			if err := res.Summary.WriteJSON(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.Bytes(), want) {
				t.Fatalf("%s: %d workers give another summary than 1", arch, w)
			}
		}
	}
}

// TestWorldGolden compares a tiny run's summary with the checked-in one
// (go test ./lab/harness -run TestWorldGolden -update rewrites it).
func TestWorldGolden(t *testing.T) {
	cfg := DefaultArenaConfig()
	cfg.Data, cfg.Slice, cfg.Cities = SitesWonder, 0, []string{"New York", "Frankfurt", "Tokyo"} // the demo's first three
	cfg.Nodes, cfg.PlayersPerNode, cfg.Duration = 3, 2, 5*time.Second
	got := summaryJSON(t, cfg)
	path := filepath.Join("testdata", "world-tiny.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("summary differs from %s (rerun with -update if the change is intended):\n%s", path, firstLineDiff(string(got), string(want)))
	}
	sum, err := sim.ReadSummary(bytes.NewReader(got))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Labels["arch"] != "directory" || sum.Nodes.Added != 4 || sum.Views.Reports == 0 || sum.Counters["updates_sent"] == 0 {
		t.Fatalf("implausible tiny summary: labels %v, %d nodes, %d reports, counters %v", sum.Labels, sum.Nodes.Added, sum.Views.Reports, sum.Counters)
	}
}

func firstLineDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, la[i], lb[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(la), len(lb))
}

// TestWorldMeasures checks what a default-sized run reports against what
// the architectures imply.
func TestWorldMeasures(t *testing.T) {
	res := map[discovery.Arch]*Result{}
	for _, a := range baselines {
		cfg := DefaultArenaConfig()
		cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration = a, 12, 1, 15*time.Second
		r, err := RunArena(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		res[a] = r
		s := r.Summary
		if s.Traffic.Rejected.Msgs != 0 || s.Counters["packets_malformed"] != 0 {
			t.Errorf("%s: %d rejected, %d malformed packets", a, s.Traffic.Rejected.Msgs, s.Counters["packets_malformed"])
		}
		if r.BytesPerUpdate <= 0 || r.FrameBytesPerUpdate <= 0 || r.FrameBytesPerUpdate >= r.BytesPerUpdate {
			t.Errorf("%s: bytes per update %.1f, in frames %.1f", a, r.BytesPerUpdate, r.FrameBytesPerUpdate)
		}
		if m := s.Views.Missing; len(m) != 3 || !(m[0].Fraction >= m[1].Fraction && m[1].Fraction >= m[2].Fraction) || m[2].Fraction > 0.05 {
			t.Errorf("%s: missing replicas %+v", a, m)
		}
		if (r.Infra.Nodes == 1) != a.HasInfra() || r.Players.Nodes != 12 {
			t.Errorf("%s: %d player nodes, %d infra", a, r.Players.Nodes, r.Infra.Nodes)
		}
	}
	// Broadcast sends every update to every node; the central server sends
	// each client only what it needs but carries the whole game.
	if bc, dir := res[discovery.Broadcast].Players.Mean.Total, res[discovery.Directory].Players.Mean.Total; bc <= dir {
		t.Errorf("broadcast node %.0f B/s ≤ directory node %.0f B/s at 12 nodes", bc, dir)
	}
	if cs := res[discovery.ClientServer]; cs.Infra.Mean.Total <= cs.Players.Mean.Total {
		t.Errorf("central server %.0f B/s ≤ its clients' %.0f B/s", cs.Infra.Mean.Total, cs.Players.Mean.Total)
	}
	if res[discovery.ClientServer].Players.ByClass[wire.ClassMatching].Total != 0 {
		t.Errorf("client-server has matching traffic")
	}
}

// TestAutoKeyMap: the x key on maps at least twice as long as wide, the
// Hilbert curve elsewhere; Validate resolves "" and "auto" to it.
func TestAutoKeyMap(t *testing.T) {
	for _, c := range []struct {
		m    arena.MapType
		n    int
		want string
	}{
		{arena.Rect, 96, discovery.KeyMapLinear}, {arena.Rect, 32, discovery.KeyMapLinear}, {arena.Rect, 16, discovery.KeyMapHilbert},
		{arena.Rect, 9, discovery.KeyMapHilbert}, {arena.Sqr, 96, discovery.KeyMapHilbert}, {arena.Sqr, 1000, discovery.KeyMapHilbert},
	} {
		if got := AutoKeyMap(c.m, c.n); got != c.want {
			t.Errorf("%v map, %d players: %s, want %s", c.m, c.n, got, c.want)
		}
		for _, km := range []string{"", discovery.KeyMapAuto} {
			cfg := DefaultArenaConfig()
			cfg.Arch, cfg.Map, cfg.Nodes, cfg.PlayersPerNode, cfg.KeyMap = discovery.Colyseus, c.m, c.n, 1, km
			if v, err := cfg.Validate(); err != nil || v.KeyMap != c.want {
				t.Errorf("%v map, %d players, KeyMap %q: validated to %q (%v), want %s", c.m, c.n, km, v.KeyMap, err, c.want)
			}
		}
	}
}

// TestWorldStandby: under directory, every node's locator has the same
// standby rendezvous, player nodes of the least mean delay to the other
// player nodes, nearest first; the other architectures have none.
func TestWorldStandby(t *testing.T) {
	for _, arch := range discovery.Archs() {
		cfg := DefaultArenaConfig()
		cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Seed = arch, 7, 1, 3
		w, err := newArenaWorld(cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		sb := w.Standby()
		if arch != discovery.Directory {
			if sb != nil {
				t.Errorf("%s: standbys %v", arch, sb)
			}
			continue
		}
		if len(sb) != discovery.Standbys {
			t.Fatalf("directory: standbys %v, want %d", sb, discovery.Standbys)
		}
		sum := w.sim.Summary()
		sites := w.sim.Sites()
		mean := func(id wire.NodeID) time.Duration {
			i, _ := sites.Index(sum.PerNode[id-1].Site)
			var s time.Duration
			for k := range cfg.Nodes {
				if j, _ := sites.Index(sum.PerNode[k].Site); wire.NodeID(k+1) != id {
					s += sites.OneWay(i, j)
				}
			}
			return s
		}
		for k, id := range sb {
			if id < 1 || int(id) > cfg.Nodes {
				t.Fatalf("directory: standby %d is not a player node", id)
			}
			if k > 0 && mean(id) < mean(sb[k-1]) {
				t.Errorf("directory: standby %d is nearer the others than %d before it", id, sb[k-1])
			}
			for o := wire.NodeID(1); int(o) <= cfg.Nodes; o++ {
				if !slices.Contains(sb, o) && mean(o) < mean(id) {
					t.Errorf("directory: node %d (mean delay sum %v) is nearer the others than standby %d (%v)", o, mean(o), id, mean(id))
				}
			}
		}
		for i, d := range w.Discoveries() {
			if got := d.(*locate.Directory).Config().Standby; !slices.Equal(got, sb) {
				t.Errorf("directory: node %d's standbys %v, want %v", i+1, got, sb)
			}
		}
	}
}
