package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// trafficCore is the benchmarks' synthetic core: each frame it sends msgs
// datagrams of size bytes to each of its peers (a fixed random set, like the
// nodes holding its replicas) and it recycles the payloads it receives, so
// the whole system is allocation-free in steady state and the benchmark's
// allocations are the simulator's own.
type trafficCore struct {
	id    wire.NodeID
	peers []wire.NodeID
	msgs  int
	size  int
	out   []wire.Packet
	free  *[][]byte // shared by all cores: what one receives another sends
	recvd uint64
}

func (c *trafficCore) Step(now time.Duration, p wire.Packet) {
	c.recvd++
	*c.free = append(*c.free, p.Payload)
}

func (c *trafficCore) Tick(now time.Duration) {
	for _, to := range c.peers {
		for range c.msgs {
			var b []byte
			if n := len(*c.free); n > 0 {
				b = (*c.free)[n-1][:c.size]
				*c.free = (*c.free)[:n-1]
			} else {
				b = make([]byte, c.size)
			}
			c.out = append(c.out, wire.Packet{From: c.id, To: to, Class: wire.ClassUpdate, Payload: b})
		}
	}
}

func (c *trafficCore) Drain(dst []wire.Packet) []wire.Packet {
	dst = append(dst, c.out...)
	clear(c.out)
	c.out = c.out[:0]
	return dst
}

// trafficWorld builds n nodes on random PlanetLab sites, each sending msgs
// datagrams of 60 bytes per frame to each of k random peers.
func trafficWorld(tb testing.TB, n, k, msgs int, jitter time.Duration) *Sim {
	sites, err := geo.PlanetLabSites(1)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Jitter = jitter
	s, err := New(cfg, sites)
	if err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	free := new([][]byte)
	for i := range n {
		c := &trafficCore{id: wire.NodeID(i), msgs: msgs, size: 60, free: free}
		for len(c.peers) < min(k, n-1) {
			p := wire.NodeID(rng.IntN(n))
			if p != c.id {
				c.peers = append(c.peers, p)
			}
		}
		if err := s.AddNode(c.id, sites.Name(rng.IntN(sites.Len())), c); err != nil {
			tb.Fatal(err)
		}
	}
	return s
}

// BenchmarkSim measures the scheduler, WAN and accounting under synthetic
// traffic. One op is one second of virtual time; events/s counts ticks and
// deliveries per second of wall time, x_realtime is virtual seconds per
// wall second, and x_realtime_cpu is virtual seconds per CPU second of the
// process (all threads, GC included), which the shared machine's load
// disturbs less. Shapes: 96 nodes × 8 players federated (each node updates
// 24 peers, 2 packets each per frame), 1,250 nodes × 8 players (10,000
// players), and 10,000 peer-to-peer players (each updates 12 peers).
func BenchmarkSim(b *testing.B) {
	for _, c := range []struct {
		name          string
		n, peers, msg int
	}{
		{"fed96", 96, 24, 2},
		{"fed1250", 1250, 24, 2},
		{"p2p10000", 10000, 12, 1},
	} {
		b.Run(fmt.Sprintf("%s/n=%d/peers=%d/msgs=%d", c.name, c.n, c.peers, c.msg), func(b *testing.B) {
			s := trafficWorld(b, c.n, c.peers, c.msg, 5*time.Millisecond)
			if err := s.RunFor(3 * time.Second); err != nil { // warm up: queue, pools and series at steady size
				b.Fatal(err)
			}
			events := func() uint64 {
				var ticks uint64
				for i := range s.nodes {
					ticks += s.nodes[i].ticks
				}
				return ticks + s.tr.in.Msgs + s.tr.drops[DropDown].Msgs
			}
			e0 := events()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			cpu0, cpuOK := cpuTime()
			ops := 0
			for b.Loop() {
				if err := s.RunFor(time.Second); err != nil {
					b.Fatal(err)
				}
				ops++
			}
			wall := time.Since(start).Seconds()
			if cpu1, ok := cpuTime(); ok && cpuOK {
				b.ReportMetric(float64(ops)/(cpu1-cpu0).Seconds(), "x_realtime_cpu")
			}
			ev := float64(events() - e0)
			b.ReportMetric(ev/float64(ops), "events/op")
			b.ReportMetric(ev/wall, "events/s")
			b.ReportMetric(float64(ops)/wall, "x_realtime")
		})
	}
}

// BenchmarkQueue measures one pop and one push (the popped time plus a
// delay uniform in [0.5, 150] ms, like a packet's flight) on a queue holding
// n events: the timing wheel the simulator uses against a plain 4-ary heap
// of all events (the queue's own overflow heap), in one run.
func BenchmarkQueue(b *testing.B) {
	delay := func(rng *rand.Rand) int64 {
		return int64(500*time.Microsecond) + rng.Int64N(int64(150*time.Millisecond))
	}
	for _, n := range []int{1_000, 100_000} {
		b.Run(fmt.Sprintf("kind=wheel/n=%d", n), func(b *testing.B) {
			var q queue
			rng := rand.New(rand.NewPCG(1, 1))
			for range n {
				q.push(delay(rng), entry{kind: evDeliver})
			}
			b.ReportAllocs()
			for b.Loop() {
				e := q.pop()
				q.push(e.at+delay(rng), entry{kind: evDeliver})
			}
		})
		b.Run(fmt.Sprintf("kind=heap/n=%d", n), func(b *testing.B) {
			var h heap
			rng := rand.New(rand.NewPCG(1, 1))
			seq := uint64(0)
			for range n {
				seq++
				h.push(entry{at: delay(rng), seq: seq, kind: evDeliver})
			}
			b.ReportAllocs()
			for b.Loop() {
				e := h.pop()
				seq++
				h.push(entry{at: e.at + delay(rng), seq: seq, kind: evDeliver})
			}
		})
	}
}

// BenchmarkRecorderView measures one View report of k objects in interest,
// a tenth of which change each frame, as the integrator makes for every
// node every frame.
func BenchmarkRecorderView(b *testing.B) {
	for _, k := range []int{10, 100} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			r, err := NewRecorder(nil)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			ids := make([]uint64, k)
			held := make([]bool, k)
			for i := range ids {
				ids[i] = uint64(i)
			}
			next := uint64(k)
			now := time.Duration(0)
			b.ReportAllocs()
			for b.Loop() {
				for range k / 10 {
					ids[rng.IntN(k)] = next
					next++
				}
				for i := range held {
					held[i] = rng.IntN(4) > 0
				}
				now += 100 * time.Millisecond
				if err := r.View(1, now, ids, held); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
