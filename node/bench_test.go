package node

import (
	"fmt"
	"github.com/overworld/overworld/internal/locate"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// denseCluster is the benchmark workload: nodes × 8 walkers moving at up to
// 15 units/s in a square sized so that each walker's 30-unit interest
// covers most of the others (so each node holds about 8·(nodes-1)
// replicas), 30–80 ms one-way latency, no loss.
func denseCluster(tb testing.TB, arch string, nodes int) *cluster {
	g := newGame(60)
	c := newCluster(tb, g, clusterOpts{nodes: nodes, arch: arch, latency: 30 * time.Millisecond,
		spread: 50 * time.Millisecond, seed: 11, margin: 5})
	r := rand.New(rand.NewPCG(11, 11))
	for _, n := range c.nodes {
		for range 8 {
			_, err := n.Spawn(0, g.walker, func(st *world.State) {
				st.SetFloat(wX, r.Float64()*60)
				st.SetFloat(wY, r.Float64()*60)
				st.SetFloat(wVX, (r.Float64()-0.5)*30)
				st.SetFloat(wVY, (r.Float64()-0.5)*30)
				st.SetFloat(wRange, 30)
				st.SetInt(wHP, 100)
			})
			if err != nil {
				tb.Fatal(err)
			}
		}
	}
	c.run(3 * time.Second) // discovery settles
	return c
}

// updateBytes parses update-class packets: it returns the number of object
// updates, the bytes of their updates frames, and the packets' total bytes
// and count (acks and writes share those packets).
type updateBytes struct {
	updates, frameBytes, packetBytes, packets int64
}

func (u *updateBytes) add(p wire.Packet) {
	if p.Class != wire.ClassUpdate {
		return
	}
	fr, err := wire.OpenFrames(p.Payload)
	if err != nil {
		return
	}
	has := false
	for {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		if t == wire.TypeUpdates {
			var m wire.Updates
			_ = m.Decode(body)
			u.updates += int64(len(m.Entries))
			u.frameBytes += int64(len(body)) + 1 + int64(lenLen(len(body)))
			has = true
		}
	}
	if has {
		u.packets++
		u.packetBytes += int64(len(p.Payload))
	}
}

func lenLen(n int) int {
	k := 1
	for n >= 0x80 {
		n >>= 7
		k++
	}
	return k
}

// TestBytesPerUpdate measures the mean size of an object update on the
// dense walker workload and holds it to the 30-byte target
// (including the update's share of the payload and IP/UDP headers).
func TestBytesPerUpdate(t *testing.T) {
	nodes := 13
	if testing.Short() {
		nodes = 6
	}
	c := denseCluster(t, "directory", nodes)
	var u updateBytes
	c.sendHook = u.add
	c.run(c.now + 5*time.Second)
	c.sendHook = nil
	if u.updates == 0 {
		t.Fatal("no updates")
	}
	frame := float64(u.frameBytes) / float64(u.updates)
	// The update frames' share of each packet's header: a packet's version
	// byte and 28 bytes of IPv4+UDP header, split over its update entries
	// (acks in the same packet ride for free: they would need their own
	// packet otherwise).
	withHdr := float64(u.frameBytes+u.packets) / float64(u.updates)
	withIP := float64(u.frameBytes+u.packets*(1+28)) / float64(u.updates)
	all := float64(u.packetBytes+u.packets*28) / float64(u.updates)
	t.Logf("%d nodes: %d updates in %d packets: %.2f B per update in frames, %.2f with the payload header, %.2f with IP/UDP (28 B); %.1f updates per packet; %.2f B per update counting the acks that share the packets",
		nodes, u.updates, u.packets, frame, withHdr, withIP, float64(u.updates)/float64(u.packets), all)
	if withIP > 30 {
		t.Errorf("mean update costs %.2f bytes with headers, want at most 30", withIP)
	}
}

// BenchmarkNodeFrame measures one frame of a node with 8 primaries and
// about 8·(nodes-1) replicas: its Tick and Drain and the Steps that deliver
// the packets it receives in that frame (the whole cluster is run for one
// frame period; the time is divided by the number of nodes).
func BenchmarkNodeFrame(b *testing.B) {
	for _, nodes := range []int{4, 13} {
		b.Run(fmt.Sprintf("replicas=%d", 8*(nodes-1)), func(b *testing.B) {
			c := denseCluster(b, "directory", nodes)
			var u updateBytes
			c.sendHook = u.add
			reps := 0
			for _, in := range c.node(1).Objects(nil) {
				if !in.Primary {
					reps++
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			frames := 0
			for b.Loop() {
				c.run(c.now + c.period)
				frames++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(frames*nodes), "ns/node-frame")
			b.ReportMetric(float64(reps), "replicas/node")
			if u.updates > 0 {
				b.ReportMetric(float64(u.frameBytes+u.packets*29)/float64(u.updates), "B/update")
			}
		})
	}
}

// scanWorld is the workload of BenchmarkEach: walkers at the model game's
// density (1,024 m² of map per walker, 10 m/s, bouncing off the edges),
// each looking around itself every frame with a 40 m × 40 m Each (the
// arena bots' fight-range scan), among 1.5 static items per walker (the
// arena's 24 items per 16-player map).
type scanWorld struct {
	side     float64 // width (x)
	height   float64 // y; 0: side
	scanner  *world.Schema
	registry *world.Registry
	found    int64 // objects the scans visited
}

const (
	sX = iota
	sY
	sVX
	sVY
	sStatic
)

type scanner struct {
	w  *scanWorld
	st *world.State
}

func (s *scanner) State() *world.State { return s.st }
func (s *scanner) Interest(dst []world.Box) []world.Box {
	if s.st.Bool(sStatic) {
		return dst
	}
	return append(dst, world.BoxAround(s.st.Location(), world.Point{20, 20}))
}

func (s *scanner) Think(ctx world.Context) {
	st := s.st
	if st.Bool(sStatic) {
		return
	}
	for d, a := range [2][2]int{{sX, sVX}, {sY, sVY}} {
		p, v := st.Float(a[0]), st.Float(a[1])
		p += v * 0.1
		if hi := s.w.extent(d); p < 0 || p > hi {
			v = -v
			p = max(0, min(hi, p))
		}
		st.SetFloat(a[0], p)
		st.SetFloat(a[1], v)
	}
	ctx.Each(world.BoxAround(st.Location(), world.Point{20, 20, math.Inf(1)}), func(world.Object, bool) bool {
		s.w.found++
		return true
	})
}

func (w *scanWorld) extent(d int) float64 {
	if d == 1 && w.height > 0 {
		return w.height
	}
	return w.side
}

func newScanWorld(walkers int) *scanWorld {
	w := &scanWorld{side: math.Sqrt(float64(walkers) * 1024)}
	w.scanner = world.MustSchema("scanner", world.MustSpace("x", "y"), []world.Field{
		{Name: "x", Type: world.Float, Quantum: 1.0 / 16}, {Name: "y", Type: world.Float, Quantum: 1.0 / 16},
		{Name: "vx", Type: world.Float, Quantum: 1.0 / 8}, {Name: "vy", Type: world.Float, Quantum: 1.0 / 8},
		{Name: "static", Type: world.Bool},
	}, func(st *world.State) world.Object { return &scanner{w: w, st: st} })
	var err error
	w.registry, err = world.NewRegistry(world.MustSpace("x", "y"), w.scanner)
	if err != nil {
		panic(err)
	}
	return w
}

// scanNode returns a client-server server holding the scan workload's
// walkers and items as its own primaries (no clients: the frame is all
// think functions, commits and discovery bookkeeping).
func scanNode(tb testing.TB, walkers int, seed uint64) (*Node, *scanWorld) {
	w := newScanWorld(walkers)
	n, err := New(Config{ID: 1, Registry: w.registry, Discovery: locate.NewClientServer(1, 1),
		Rand: rand.New(rand.NewPCG(seed, 1))})
	if err != nil {
		tb.Fatal(err)
	}
	r := rand.New(rand.NewPCG(seed, 2))
	for i := range walkers + walkers*3/2 {
		_, err := n.Spawn(0, w.scanner, func(st *world.State) {
			st.SetFloat(sX, r.Float64()*w.side)
			st.SetFloat(sY, r.Float64()*w.side)
			if i >= walkers {
				st.SetBool(sStatic, true)
				return
			}
			a := r.Float64() * 2 * math.Pi
			st.SetFloat(sVX, 10*math.Cos(a))
			st.SetFloat(sVY, 10*math.Sin(a))
		})
		if err != nil {
			tb.Fatal(err)
		}
	}
	return n, w
}

// BenchmarkEach measures one frame (Tick) of a node holding n walkers (and
// 1.5·n items) as primaries, every walker calling Context.Each over a
// 40 m box: the client-server server's think phase.
func BenchmarkEach(b *testing.B) {
	for _, walkers := range []int{768, 10000} {
		for _, linear := range []bool{true, false} {
			name := "index"
			if linear {
				name = "linear"
			}
			b.Run(fmt.Sprintf("n=%d/%s", walkers, name), func(b *testing.B) {
				n, w := scanNode(b, walkers, 1)
				n.linear = linear
				now := time.Duration(0)
				for range 3 {
					now += 100 * time.Millisecond
					n.Tick(now)
					n.Drain(nil)
				}
				w.found = 0
				b.ReportAllocs()
				b.ResetTimer()
				frames := 0
				for b.Loop() {
					now += 100 * time.Millisecond
					n.Tick(now)
					n.Drain(nil)
					frames++
				}
				b.ReportMetric(float64(w.found)/float64(frames*walkers), "found/scan")
			})
		}
	}
}

// BenchmarkCluster runs the target workloads on the test harness:
// 96 nodes × 8 walkers (768 players) and 96 nodes × 104 walkers (9,984
// players), on a rect map 128 m high at the model game's density (1,024 m²
// per walker, so 6,144 m or 79,872 m wide), directory architecture (node 1
// is the rendezvous) with a 5 m subscription margin, 30–80 ms latency,
// each walker scanning 40 m around itself every frame. One iteration is
// one second of game time on every node (the harness's own delivery heap
// included); x-realtime is game time over elapsed time.
func BenchmarkCluster(b *testing.B) {
	for _, per := range []int{8, 104} {
		for _, linear := range []bool{true, false} {
			name := "index"
			if linear {
				name = "linear"
			}
			b.Run(fmt.Sprintf("players=%d/%s", 96*per, name), func(b *testing.B) {
				benchCluster(b, 96, per, linear)
			})
		}
	}
}

func benchCluster(b *testing.B, nodes, per int, linear bool) {
	w := newScanWorld(nodes * per)
	w.side, w.height = float64(nodes*per)*1024/128, 128
	c := newCluster(b, &game{registry: w.registry}, clusterOpts{nodes: nodes, arch: "directory",
		latency: 30 * time.Millisecond, spread: 50 * time.Millisecond, seed: 3, margin: 5})
	r := rand.New(rand.NewPCG(3, 3))
	for _, n := range c.nodes {
		n.linear = linear
		if d, ok := n.cfg.Discovery.(*locate.Directory); ok {
			d.SetLinear(linear)
		}
		for range per {
			_, err := n.Spawn(0, w.scanner, func(st *world.State) {
				st.SetFloat(sX, r.Float64()*w.side)
				st.SetFloat(sY, r.Float64()*w.height)
				a := r.Float64() * 2 * math.Pi
				st.SetFloat(sVX, 10*math.Cos(a))
				st.SetFloat(sVY, 10*math.Sin(a))
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	c.run(2 * time.Second)
	reps := 0
	for _, n := range c.nodes {
		reps += n.store.Len() - per
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.run(c.now + time.Second)
	}
	b.ReportMetric(float64(b.N)*1e9/float64(b.Elapsed().Nanoseconds()), "x-realtime")
	b.ReportMetric(float64(reps)/float64(nodes), "replicas/node")
}
