package sim_test

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// pinger is a minimal core: every frame it sends a 32-byte update to its
// peer, and it counts what it receives.
type pinger struct {
	id, peer wire.NodeID
	out      []wire.Packet
	got      int
	first    time.Duration
}

func (p *pinger) Step(now time.Duration, pkt wire.Packet) {
	if p.got == 0 {
		p.first = now
	}
	p.got++
}

func (p *pinger) Tick(now time.Duration) {
	p.out = append(p.out, wire.Packet{From: p.id, To: p.peer, Class: wire.ClassUpdate, Payload: make([]byte, 32)})
}

func (p *pinger) Drain(dst []wire.Packet) []wire.Packet {
	dst = append(dst, p.out...)
	p.out = p.out[:0]
	return dst
}

// Two nodes in WonderNetwork cities update each other at 10 Hz for 10 s of
// virtual time; London crashes at 5 s.
func Example() {
	sites, err := geo.WonderNetworkSites([]string{"London", "New York"})
	if err != nil {
		panic(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 1
	s, err := sim.New(cfg, sites)
	if err != nil {
		panic(err)
	}
	lon := &pinger{id: 1, peer: 2}
	nyc := &pinger{id: 2, peer: 1}
	_ = s.AddNode(1, "London", lon)
	_ = s.AddNode(2, "New York", nyc)
	_ = s.Schedule(5*time.Second, func(time.Duration) { _ = s.Crash(1) })
	if err := s.Run(10 * time.Second); err != nil {
		panic(err)
	}
	fmt.Printf("one-way London→New York %v\n", sites.OneWay(0, 1))
	fmt.Printf("New York's first packet at %v, %d received\n", nyc.first, nyc.got)
	sum := s.Summary()
	for _, n := range sum.PerNode {
		fmt.Printf("node %d %-8s %-7s up %4.1fs  %3d frames  out %5.0f B/s  p95 %4.0f B/s\n",
			n.ID, n.Site, n.State, n.UpS, n.Frames, n.Mean.Out, n.P95.Out)
	}
	t := s.Totals()
	fmt.Printf("sent %d, delivered %d, dropped at a down node %d\n", t.Sent.Msgs, t.Delivered.Msgs, t.Dropped[sim.DropDown].Msgs)
	// Output:
	// one-way London→New York 35.5ms
	// New York's first packet at 92.790991ms, 50 received
	// node 1 London   crashed up  5.0s   50 frames  out   600 B/s  p95  600 B/s
	// node 2 New York up      up 10.0s  100 frames  out   600 B/s  p95  600 B/s
	// sent 150, delivered 100, dropped at a down node 50
}
