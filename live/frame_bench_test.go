package live

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// BenchmarkNodeFrame runs four nodes of the test game (broadcast: every
// node replicates every other node's walkers) in one process, in real time
// at 10 Hz, over QUIC on loopback or over the in-memory network, and
// reports the process's CPU time per node-frame (cpu-ms/node-frame): the
// core's Tick, the driver, the mesh, and for quic the TLS-encrypted
// transport. One iteration is one frame of node 1.
func BenchmarkNodeFrame(b *testing.B) {
	for _, walkers := range []int{8, 32} {
		for _, network := range []string{"mem", "quic"} {
			b.Run(fmt.Sprintf("net=%s/walkers=%d", network, walkers), func(b *testing.B) { benchNodeFrame(b, network, walkers) })
		}
	}
}

func benchNodeFrame(b *testing.B, network string, walkers int) {
	const k = 4
	g := newTestGame()
	members := []wire.NodeID{1, 2, 3, 4}
	mem := NewMemNetwork()
	ca := newTestCA(b)
	nets := make([]Network, k)
	peers := map[wire.NodeID]string{}
	for i, id := range members {
		switch network {
		case "mem":
			ep, err := mem.Listen(id, addr(id))
			if err != nil {
				b.Fatal(err)
			}
			nets[i], peers[id] = ep, addr(id)
		case "quic":
			qn, err := ListenQUIC("127.0.0.1:0", issue(b, ca, id, time.Now(), time.Hour))
			if err != nil {
				b.Fatal(err)
			}
			nets[i], peers[id] = qn, qn.Addr().String()
		}
	}
	counters := make([]*Counters, k)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, k)
	frame := make(chan struct{}, 1)
	meshes := make([]*Mesh, k)
	for i, id := range members {
		counters[i] = new(Counters)
		m, err := NewMesh(MeshConfig{Self: id, Peers: peers, Counters: counters[i]}, nets[i])
		if err != nil {
			b.Fatal(err)
		}
		m.Start()
		meshes[i] = m
		d, err := NewDriver(DriverConfig{Node: newTestNode(b, g, id, members, walkers), Transport: m, Counters: counters[i]})
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			d.AddHook(FrameHookFunc(func(time.Duration, *node.Node) {
				select {
				case frame <- struct{}{}:
				default:
				}
			}))
		}
		go func() { d.Run(ctx); done <- struct{}{} }()
	}
	// Warm up: connections, full states.
	for range 10 {
		<-frame
	}
	var frames0 int64
	for _, c := range counters {
		frames0 += c.Frames.Load()
	}
	cpu0, ok := cpuTime()
	for b.Loop() {
		<-frame
	}
	cpu1, _ := cpuTime()
	var frames int64
	for _, c := range counters {
		frames += c.Frames.Load()
	}
	if ok && frames > frames0 {
		b.ReportMetric(float64(cpu1-cpu0)/1e6/float64(frames-frames0), "cpu-ms/node-frame")
	}
	var bytes int64
	for c := range wire.NumClasses {
		bytes += counters[0].BytesOut[c].Load()
	}
	b.ReportMetric(float64(bytes)/float64(max(1, counters[0].Frames.Load())), "B-out/frame")
	cancel()
	for range k {
		<-done
	}
	for _, m := range meshes {
		cctx, ccancel := context.WithTimeout(context.Background(), time.Second)
		m.Close(cctx)
		ccancel()
	}
}
