package ring_test

import (
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

// TestSteadyStateAllocs checks that a member's hot paths do not allocate
// once its buffers have grown: Tick (timers, failure checks, probes),
// forwarding and delivering routed messages, and draining events.
func TestSteadyStateAllocs(t *testing.T) {
	c := newCluster(t, 2, nil)
	c.grow(32, 20*time.Millisecond, 5*time.Second)
	if _, err := c.settle(4, time.Minute); err != nil {
		t.Fatal(err)
	}
	tr := c.truth()
	n := c.nodes[tr.ids[0]]
	own, _ := n.Range()
	typ, farBody := frame(&wire.RingRoute{Kind: wire.RouteData, Origin: tr.ids[1], Key: own.Hi + 1<<62, Hops: 1,
		Class: wire.ClassDiscovery, Data: make([]byte, 50)})
	_, ownBody := frame(&wire.RingRoute{Kind: wire.RouteData, Origin: tr.ids[1], Key: own.Hi, Hops: 1,
		Class: wire.ClassDiscovery, Data: make([]byte, 50)})
	evs := make([]ring.Event, 0, 64)
	now := c.now
	// Warm up: grow every buffer.
	for range 100 {
		now += 10 * time.Millisecond
		n.Tick(now)
		_ = n.Step(now, tr.ids[1], typ, farBody)
		_ = n.Step(now, tr.ids[1], typ, ownBody)
		evs = n.Events(evs[:0])
		n.Drain(nil)
	}
	allocs := testing.AllocsPerRun(200, func() {
		now += 10 * time.Millisecond
		n.Tick(now)
		_ = n.Step(now, tr.ids[1], typ, farBody)
		_ = n.Step(now, tr.ids[1], typ, ownBody)
		evs = n.Events(evs[:0])
	})
	n.Drain(nil)
	if allocs > 0 {
		t.Errorf("%.2f allocations per Tick + forward + deliver + Events", allocs)
	}
}
