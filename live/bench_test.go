package live

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

// BenchmarkDatagramThroughput sends update datagrams one way between two
// endpoints on loopback as fast as the sender can, and reports delivered
// datagrams per second (dgrams/s) and the share lost (loss-%):
//
//   - raw-udp: a UDP socket writing to another, which reads them (the
//     baseline: no encryption, no framing, no queue);
//   - mesh: Mesh.Send on one node, through its bounded per-peer queue and
//     sending goroutine, a QUIC datagram (TLS 1.3 AEAD), to the other
//     node's Mesh.Recv, checked and addressed like any packet.
//
// The two run in the same invocation, so their ratio compares like with
// like on the machine at hand (BENCHMARKS.md).
func BenchmarkDatagramThroughput(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("raw-udp/bytes=%d", size), func(b *testing.B) { benchRawUDP(b, size) })
		b.Run(fmt.Sprintf("mesh/bytes=%d", size), func(b *testing.B) { benchMesh(b, size) })
	}
}

func benchRawUDP(b *testing.B, size int) {
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	rx.SetReadBuffer(4 << 20)
	tx, err := net.DialUDP("udp", nil, rx.LocalAddr().(*net.UDPAddr))
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	var got atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, err := rx.Read(buf); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	sent := 0
	for b.Loop() {
		tx.Write(msg)
		sent++
	}
	settle(&got, int64(sent))
	report(b, got.Load(), sent)
	rx.Close()
	<-done
}

// settle waits until got reaches want or stops growing.
func settle(got *atomic.Int64, want int64) {
	last, still := int64(-1), 0
	for got.Load() < want && still < 5 {
		time.Sleep(20 * time.Millisecond)
		if n := got.Load(); n == last {
			still++
		} else {
			last, still = n, 0
		}
	}
}

func report(b *testing.B, got int64, sent int) {
	b.ReportMetric(float64(got)/b.Elapsed().Seconds(), "dgrams/s")
	b.ReportMetric(100*(1-float64(got)/float64(max(1, sent))), "loss-%")
}

func benchMesh(b *testing.B, size int) {
	ca := newTestCA(b)
	now := time.Now()
	rx := newQUICNode(b, issue(b, ca, 2, now, time.Hour), nil)
	tx := newQUICNode(b, issue(b, ca, 1, now, time.Hour), map[wire.NodeID]string{2: rx.net.Addr().String()})
	// Connect first.
	tx.mesh.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version}})
	if _, ok := recvWithin(rx.mesh, 5*time.Second); !ok {
		b.Fatal("no connection")
	}
	var got atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-rx.mesh.Recv():
				got.Add(1)
			case <-ctx.Done():
				return
			}
		}
	}()
	payload := make([]byte, size)
	payload[0] = wire.Version
	b.SetBytes(int64(size))
	b.ReportAllocs()
	sent := 0
	for b.Loop() {
		// A producer that does not outrun the network: Send never blocks,
		// so the benchmark sleeps while the peer's queue is nearly full
		// (the UDP baseline's writes block on a full socket buffer).
		for tx.mesh.QueueLen(2) > 200 {
			time.Sleep(50 * time.Microsecond)
		}
		// The mesh owns what it is given: a fresh payload per packet, as
		// the core's Drain hands over.
		p := make([]byte, size)
		copy(p, payload)
		tx.mesh.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassUpdate, Payload: p})
		sent++
	}
	settle(&got, int64(sent))
	report(b, got.Load(), sent)
	b.ReportMetric(float64(tx.c.QueueDrops.Load())/float64(max(1, sent))*100, "coalesced-%")
	cancel()
	<-done
}
