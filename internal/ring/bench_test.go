package ring_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

// stableRing builds and settles an n-node ring for the benchmarks.
func stableRing(b *testing.B, n int) *cluster {
	c := newCluster(b, 1, nil)
	c.grow(n, 20*time.Millisecond, 5*time.Second)
	if _, err := c.settle(4, 2*time.Minute); err != nil {
		b.Fatal(err)
	}
	return c
}

// frame encodes m and returns its type and body as Step receives them.
func frame(m *wire.RingRoute) (wire.Type, []byte) {
	fr, _ := wire.OpenFrames(wire.AppendRingRoute(wire.AppendHeader(nil), m))
	t, body, _ := fr.Next()
	return t, body
}

// BenchmarkStep measures one routed message at one node: decode, routing
// decision and encoding of the next hop (forward), or decode and delivery
// event (deliver), with a 100-byte payload; packets are drained every 64
// messages as a driver would per step.
func BenchmarkStep(b *testing.B) {
	for _, n := range []int{64, 256, 1000} {
		c := stableRing(b, n)
		tr := c.truth()
		node := c.nodes[tr.ids[0]]
		own, _ := node.Range()
		payload := make([]byte, 100)
		var pkts []wire.Packet
		var evs []ring.Event
		for _, kind := range []string{"forward", "deliver"} {
			key := own.Hi + 1<<62 // far away: forwarded
			if kind == "deliver" {
				key = own.Hi
			}
			typ, body := frame(&wire.RingRoute{Kind: wire.RouteData, Origin: tr.ids[1], Key: key, Hops: 1,
				Class: wire.ClassDiscovery, Data: payload})
			b.Run(fmt.Sprintf("%s/n=%d", kind, n), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if err := node.Step(c.now, tr.ids[1], typ, body); err != nil {
						b.Fatal(err)
					}
					if i++; i%64 == 0 {
						pkts = node.Drain(pkts[:0])
						evs = node.Events(evs[:0])
					}
				}
			})
		}
	}
}

// BenchmarkRoute measures Route at the origin (with its first hop encoded)
// for uniform keys.
func BenchmarkRoute(b *testing.B) {
	for _, n := range []int{64, 1000} {
		c := stableRing(b, n)
		node := c.members()[0]
		payload := make([]byte, 100)
		keys := make([]uint64, 1024)
		for i := range keys {
			keys[i] = c.rng.Uint64()
		}
		var pkts []wire.Packet
		var evs []ring.Event
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := node.Route(c.now, keys[i%len(keys)], wire.ClassDiscovery, payload); err != nil {
					b.Fatal(err)
				}
				if i++; i%64 == 0 {
					pkts = node.Drain(pkts[:0])
					evs = node.Events(evs[:0])
				}
			}
		})
	}
}

// BenchmarkMaintenance measures one simulated second of an idle stable
// ring (stabilisation, probes, long-link refresh at every node, plus the
// harness's event queue), reported per node.
func BenchmarkMaintenance(b *testing.B) {
	for _, n := range []int{64, 256, 1000} {
		c := stableRing(b, n)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			sent, bytes := c.sent, c.bytes[wire.ClassMaintenance]
			for b.Loop() {
				c.run(c.now + time.Second)
			}
			b.ReportMetric(float64(c.sent-sent)/float64(b.N)/float64(n), "packets/node/s")
			// Payload bytes plus 28 bytes of IPv4/UDP header per packet.
			wireBytes := float64(c.bytes[wire.ClassMaintenance]-bytes) + 28*float64(c.sent-sent)
			b.ReportMetric(wireBytes/float64(b.N)/float64(n), "B/node/s")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/node/s")
		})
	}
}
