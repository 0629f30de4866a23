package live

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// memCluster is k nodes of the test game over a MemNetwork, each with a
// mesh and a driver, inside a synctest bubble.
type memCluster struct {
	net     *MemNetwork
	eps     []*MemEndpoint
	meshes  []*Mesh
	drivers []*Driver
	nodes   []*node.Node
	cancel  []context.CancelFunc
	done    []chan error
}

func addr(id wire.NodeID) string { return fmt.Sprintf("mem:%d", id) }

func newMemCluster(t *testing.T, k, walkers int, mcfg MeshConfig) *memCluster {
	g := newTestGame()
	c := &memCluster{net: NewMemNetwork()}
	members := make([]wire.NodeID, k)
	peers := map[wire.NodeID]string{}
	for i := range members {
		members[i] = wire.NodeID(i + 1)
		peers[members[i]] = addr(members[i])
	}
	for _, id := range members {
		ep, err := c.net.Listen(id, addr(id))
		if err != nil {
			t.Fatal(err)
		}
		cfg := mcfg
		cfg.Self, cfg.Peers = id, peers
		m, err := NewMesh(cfg, ep)
		if err != nil {
			t.Fatal(err)
		}
		m.Start()
		n := newTestNode(t, g, id, members, walkers)
		d, err := NewDriver(DriverConfig{Node: n, Transport: m, Counters: m.Counters()})
		if err != nil {
			t.Fatal(err)
		}
		c.eps, c.meshes, c.drivers, c.nodes = append(c.eps, ep), append(c.meshes, m), append(c.drivers, d), append(c.nodes, n)
	}
	return c
}

func (c *memCluster) start() {
	for _, d := range c.drivers {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		c.cancel, c.done = append(c.cancel, cancel), append(c.done, done)
	}
}

// stop stops node i: its driver, then its mesh (flushing for up to 1 s).
func (c *memCluster) stop(t *testing.T, i int) int64 {
	c.cancel[i]()
	if err := <-c.done[i]; err != nil {
		t.Errorf("node %d: Run: %v", i+1, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return c.meshes[i].Close(ctx)
}

func (c *memCluster) stopAll(t *testing.T) {
	for i := range c.drivers {
		c.stop(t, i)
	}
}

// replicasOn counts node i's replicas by the node holding the primary.
func (c *memCluster) replicasOn(i int) map[wire.NodeID]int {
	n := map[wire.NodeID]int{}
	for _, info := range c.nodes[i].Objects(nil) {
		if !info.Primary {
			n[info.From]++
		}
	}
	return n
}

// TestClusterReplicates runs three nodes over the in-memory network: every
// node must hold a replica of every other node's walkers, hooks must run
// once per frame after the Tick, and shutdown must leave no goroutine
// behind (synctest.Test fails otherwise).
func TestClusterReplicates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemCluster(t, 3, 4, MeshConfig{})
		var frames, bad int
		c.drivers[0].AddHook(FrameHookFunc(func(now time.Duration, n *node.Node) {
			frames++
			if n.Now() != now || n.Stats().Ticks != int64(frames) {
				bad++
			}
		}))
		c.start()
		time.Sleep(2*time.Second + time.Millisecond)
		c.stopAll(t)
		if frames != 20 || bad != 0 {
			t.Errorf("hook ran %d times (want 20), %d times not right after the Tick", frames, bad)
		}
		for i := range c.nodes {
			got := c.replicasOn(i)
			for j := range c.nodes {
				want := 4
				if i == j {
					want = 0
				}
				if got[wire.NodeID(j+1)] != want {
					t.Errorf("node %d holds %d replicas of node %d's walkers, want %d", i+1, got[wire.NodeID(j+1)], j+1, want)
				}
			}
			ct := c.meshes[i].Counters()
			if ct.MsgsIn[wire.ClassUpdate].Load() == 0 || ct.Malformed.Load() != 0 || ct.QueueDrops.Load() != 0 {
				t.Errorf("node %d: %d updates in, %d malformed, %d queue drops", i+1,
					ct.MsgsIn[wire.ClassUpdate].Load(), ct.Malformed.Load(), ct.QueueDrops.Load())
			}
		}
	})
}

// TestReconnect breaks node 1's connections, then takes node 2 down for
// 2 s: node 1 redials with exponential backoff (50, 100, 200, 400, 800 ms)
// and its updates flow again once node 2 listens again.
func TestReconnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemCluster(t, 2, 2, MeshConfig{})
		c.start()
		time.Sleep(time.Second)
		m1 := c.meshes[0].Counters()
		if d := m1.Dials.Load(); d != 1 {
			t.Fatalf("node 1 dialled %d times before any failure, want 1", d)
		}
		c.net.Sever(addr(1))
		time.Sleep(time.Second)
		synctest.Wait()
		if d := m1.Dials.Load(); d != 2 {
			t.Errorf("after a severed link node 1 dialled %d times in total, want 2", d)
		}
		in2 := c.meshes[1].Counters().MsgsIn[wire.ClassUpdate].Load()

		// Node 2's endpoint goes down (its mesh and core keep running).
		c.net.SetDown(addr(2), true)
		errs0 := m1.DialErrors.Load()
		time.Sleep(2 * time.Second)
		synctest.Wait()
		failed := m1.DialErrors.Load() - errs0
		// Dials at 0, 50, 150, 350, 750, 1550 ms: 6 failures in 2 s.
		if failed != 6 {
			t.Errorf("%d failed dials while node 2 was down 2 s, want 6 (backoff 50 ms doubling)", failed)
		}
		if q := c.meshes[0].QueueLen(2); q == 0 || q > 256 {
			t.Errorf("node 1's queue to node 2 holds %d packets while it is down, want 1..256", q)
		}
		c.net.SetDown(addr(2), false)
		time.Sleep(3 * time.Second)
		if got := c.meshes[1].Counters().MsgsIn[wire.ClassUpdate].Load(); got <= in2 {
			t.Errorf("node 2 received no update after coming back (%d before, %d after)", in2, got)
		}
		if m1.Connected.Load() != 1 {
			t.Errorf("node 1 has %d open connections, want 1", m1.Connected.Load())
		}
		c.stopAll(t)
	})
}

// TestBackPressure fills the queue to an unreachable peer: it stays
// bounded, the oldest updates make room for the newest, reliable packets
// are kept over updates, every drop is counted, and once the peer is up
// the queue drains in order.
func TestBackPressure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewMemNetwork()
		ep1, _ := net.Listen(1, addr(1))
		const qlen = 8
		m, err := NewMesh(MeshConfig{Self: 1, Peers: map[wire.NodeID]string{2: addr(2)}, QueueLen: qlen}, ep1)
		if err != nil {
			t.Fatal(err)
		}
		pkt := func(c wire.Class, k int) wire.Packet {
			return wire.Packet{From: 1, To: 2, Class: c, Payload: []byte{wire.Version, byte(k)}}
		}
		m.Send(pkt(wire.ClassUpdate, 0))
		synctest.Wait() // the peer's goroutine holds packet 0 and backs off
		for k := 1; k < 100; k++ {
			c := wire.ClassUpdate
			if k%25 == 0 {
				c = wire.ClassMaintenance // 25, 50, 75
			}
			m.Send(pkt(c, k))
			if q := m.QueueLen(2); q > qlen {
				t.Fatalf("queue holds %d packets, bound %d", q, qlen)
			}
		}
		if d := m.Counters().QueueDrops.Load(); d != 99-qlen {
			t.Errorf("%d drops, want %d", d, 99-qlen)
		}
		// Node 2 comes up; the queue drains: packet 0, the three
		// maintenance packets, then the newest five updates.
		ep2, _ := net.Listen(2, addr(2))
		m2, _ := NewMesh(MeshConfig{Self: 2}, ep2)
		m2.Start()
		time.Sleep(6 * time.Second)
		var got []int
		for len(m2.Recv()) > 0 {
			p := <-m2.Recv()
			got = append(got, int(p.Payload[1]))
		}
		// Datagrams and the stream are separate channels: compare as sets
		// per class, each in order.
		var upd, rel []int
		for _, k := range got {
			if k%25 == 0 && k > 0 {
				rel = append(rel, k)
			} else {
				upd = append(upd, k)
			}
		}
		if fmt.Sprint(rel) != "[25 50 75]" || fmt.Sprint(upd) != "[0 95 96 97 98 99]" {
			t.Errorf("received reliable %v and updates %v, want [25 50 75] and [0 95 96 97 98 99]", rel, upd)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if lost := m.Close(ctx); lost != 0 {
			t.Errorf("%d packets lost on close, want 0", lost)
		}
		m2.Close(ctx)
	})
}

// TestCloseCountsLost: closing with a peer unreachable gives up at the
// deadline, counts what was queued as lost, and leaves no goroutine.
func TestCloseCountsLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewMemNetwork()
		ep1, _ := net.Listen(1, addr(1))
		m, _ := NewMesh(MeshConfig{Self: 1, Peers: map[wire.NodeID]string{2: addr(2), 3: addr(3)}}, ep1)
		m.Start()
		ep3, _ := net.Listen(3, addr(3))
		m3, _ := NewMesh(MeshConfig{Self: 3}, ep3)
		m3.Start()
		for k := range 5 {
			m.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version, byte(k)}})
			m.Send(wire.Packet{From: 1, To: 3, Class: wire.ClassControl, Payload: []byte{wire.Version, byte(k)}})
		}
		m.Send(wire.Packet{From: 1, To: 9, Class: wire.ClassControl, Payload: []byte{wire.Version}})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if lost := m.Close(ctx); lost != 5 {
			t.Errorf("Close lost %d packets, want the 5 for the unreachable node", lost)
		}
		if u := m.Counters().Unroutable.Load(); u != 1 {
			t.Errorf("%d unroutable, want 1", u)
		}
		m3.Close(ctx)
		if got := m3.Counters().MsgsIn[wire.ClassControl].Load(); got != 5 {
			t.Errorf("node 3 received %d of the 5 control packets queued before Close", got)
		}
	})
}

// TestMalformedDatagrams: datagrams and stream frames that are too short,
// of an unknown class or with a bad length are dropped and counted, never
// reach the core, and allocate no peer state.
func TestMalformedDatagrams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newMemCluster(t, 1, 1, MeshConfig{})
		before := len(c.nodes[0].Objects(nil))
		c.start()
		ep9, _ := c.net.Listen(9, addr(9))
		conn, err := ep9.Dial(context.Background(), 1, addr(1))
		if err != nil {
			t.Fatal(err)
		}
		// Empty, a record with no length, a bad class, a length beyond
		// the datagram, a good record followed by a bad one.
		for _, d := range [][]byte{{}, {0}, {byte(wire.NumClasses), 1, wire.Version}, {0, 5, 1, 2},
			{0, 1, wire.Version, 255, 1, 0}} {
			if err := conn.SendDatagram(d); err != nil {
				t.Fatal(err)
			}
		}
		// A well-framed packet whose payload the core rejects.
		if err := conn.SendDatagram([]byte{byte(wire.ClassUpdate), 4, 99, 1, 2, 3}); err != nil {
			t.Fatal(err)
		}
		s, _ := conn.OpenStream(context.Background())
		s.Write([]byte{0xff, 0xff, 0xff, 0xff, 0})
		time.Sleep(500 * time.Millisecond)
		ct := c.meshes[0].Counters()
		if ct.Malformed.Load() != 6 {
			t.Errorf("%d malformed counted by the transport, want 6", ct.Malformed.Load())
		}
		c.stopAll(t)
		if m := c.nodes[0].Stats().Malformed; m != 1 {
			t.Errorf("the core counted %d malformed packets, want 1", m)
		}
		if after := len(c.nodes[0].Objects(nil)); after != before || len(c.meshes[0].peers) != 0 {
			t.Errorf("state changed: %d → %d objects, %d peers", before, after, len(c.meshes[0].peers))
		}
		conn.Close()
		ep9.Close()
	})
}

// TestIdleConnectionLoss: a connection that breaks while nothing is being
// sent is noticed at once (Connected drops), and the next packet redials.
func TestIdleConnectionLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewMemNetwork()
		ep1, _ := net.Listen(1, addr(1))
		ep2, _ := net.Listen(2, addr(2))
		m1, _ := NewMesh(MeshConfig{Self: 1, Peers: map[wire.NodeID]string{2: addr(2)}}, ep1)
		m2, _ := NewMesh(MeshConfig{Self: 2}, ep2)
		m1.Start()
		m2.Start()
		m1.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version}})
		<-m2.Recv()
		synctest.Wait()
		if !m1.Connected(2) || m1.Counters().Connected.Load() != 1 {
			t.Fatal("not connected after the first packet")
		}
		net.Sever(addr(2))
		synctest.Wait()
		if m1.Connected(2) || m1.Counters().Connected.Load() != 0 {
			t.Error("a broken idle connection still counts as connected")
		}
		m1.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version, 1}})
		p := <-m2.Recv()
		if len(p.Payload) != 2 || m1.Counters().Dials.Load() != 2 || m1.Counters().SendErrors.Load() != 0 {
			t.Errorf("after the break: payload %v, %d dials (want 2), %d send errors (want 0)",
				p.Payload, m1.Counters().Dials.Load(), m1.Counters().SendErrors.Load())
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		m1.Close(ctx)
		m2.Close(ctx)
	})
}

// TestNetEmulation: with MeshConfig.Net, the mesh loses its share of the
// packets (counted as sent and as emulated loss), sends its share twice,
// and holds every packet an extra jitter; packets leave in the order they
// are due, so the jitter reorders them (before the reliable stream, which
// keeps that order), as the simulator does.
func TestNetEmulation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewMemNetwork()
		ep1, _ := net.Listen(1, addr(1))
		ep2, _ := net.Listen(2, addr(2))
		const n = 4000
		m, err := NewMesh(MeshConfig{Self: 1, Peers: map[wire.NodeID]string{2: addr(2)}, QueueLen: n * 2,
			Net: geo.Network{Loss: 0.1, Duplicate: 0.05, Jitter: 10 * time.Millisecond, Reorder: 0.1}, NetSeed: 7}, ep1)
		if err != nil {
			t.Fatal(err)
		}
		m2, _ := NewMesh(MeshConfig{Self: 2, InboxLen: n * 2}, ep2)
		m.Start()
		m2.Start()
		for k := range n {
			m.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version, byte(k >> 8), byte(k)}})
		}
		time.Sleep(10 * time.Second)
		lost := m.Counters().EmulatedLoss.Load()
		if f := float64(lost) / n; f < 0.08 || f > 0.12 {
			t.Errorf("lost %d of %d, want about 10%%", lost, n)
		}
		if sent := m.Counters().MsgsOut[wire.ClassControl].Load(); sent < n {
			t.Errorf("%d counted as sent, want at least the %d handed over (lost ones included)", sent, n)
		}
		var got []int
		for len(m2.Recv()) > 0 {
			p := <-m2.Recv()
			got = append(got, int(p.Payload[1])<<8|int(p.Payload[2]))
		}
		dup := len(got) - (n - int(lost))
		if f := float64(dup) / float64(n-int(lost)); f < 0.03 || f > 0.07 {
			t.Errorf("%d duplicates among %d packets delivered, want about 5%%", dup, len(got))
		}
		inversions := 0
		for i := 1; i < len(got); i++ {
			if got[i] < got[i-1] {
				inversions++
			}
		}
		if inversions < len(got)/20 {
			t.Errorf("%d of %d packets arrived before one sent earlier, want the jitter to reorder more", inversions, len(got))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		m.Close(ctx)
		m2.Close(ctx)
	})
}

// TestSetPeerRedials: when a peer's record changes (a new run of the node,
// here at a new address, while the connection to the earlier run is still
// open), the next packet goes to the new address, not over the old
// connection.
func TestSetPeerRedials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewMemNetwork()
		ep1, _ := net.Listen(1, addr(1))
		epOld, _ := net.Listen(2, addr(2))
		epNew, _ := net.Listen(2, "mem:2-new")
		m1, _ := NewMesh(MeshConfig{Self: 1, Peers: map[wire.NodeID]string{2: addr(2)}}, ep1)
		old, _ := NewMesh(MeshConfig{Self: 2}, epOld)
		cur, _ := NewMesh(MeshConfig{Self: 2}, epNew)
		for _, m := range []*Mesh{m1, old, cur} {
			m.Start()
		}
		m1.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version}})
		<-old.Recv()
		synctest.Wait()
		m1.SetPeer(2, "mem:2-new")
		synctest.Wait()
		m1.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version, 1}})
		synctest.Wait()
		select {
		case p := <-cur.Recv():
			if len(p.Payload) != 2 {
				t.Errorf("the new run got %v", p.Payload)
			}
		case p := <-old.Recv():
			t.Errorf("after SetPeer the packet %v went to the earlier run's address", p.Payload)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, m := range []*Mesh{m1, old, cur} {
			m.Close(ctx)
		}
	})
}

// countingNet counts the datagrams and stream writes of the connections
// it dials.
type countingNet struct {
	Network
	datagrams, writes *atomic.Int64
}

func (n countingNet) Dial(ctx context.Context, peer wire.NodeID, addr string) (Conn, error) {
	c, err := n.Network.Dial(ctx, peer, addr)
	if err != nil {
		return nil, err
	}
	return countingConn{c, n}, nil
}

type countingConn struct {
	Conn
	n countingNet
}

func (c countingConn) SendDatagram(b []byte) error {
	c.n.datagrams.Add(1)
	return c.Conn.SendDatagram(b)
}

func (c countingConn) OpenStream(ctx context.Context) (io.ReadWriteCloser, error) {
	s, err := c.Conn.OpenStream(ctx)
	if err != nil {
		return nil, err
	}
	return countingStream{s, c.n.writes}, nil
}

type countingStream struct {
	io.ReadWriteCloser
	writes *atomic.Int64
}

func (s countingStream) Write(b []byte) (int, error) {
	s.writes.Add(1)
	return s.ReadWriteCloser.Write(b)
}

// TestDatagramsForAll: a packet of any class that fits a datagram goes as
// one (packets due together share it), a larger one on the stream, and
// what Close flushes on the stream; the peer receives them all.
func TestDatagramsForAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		net := NewMemNetwork()
		ep1, _ := net.Listen(1, addr(1))
		ep2, _ := net.Listen(2, addr(2))
		var dg, wr atomic.Int64
		m, _ := NewMesh(MeshConfig{Self: 1, Peers: map[wire.NodeID]string{2: addr(2)}}, countingNet{ep1, &dg, &wr})
		m2, _ := NewMesh(MeshConfig{Self: 2}, ep2)
		m2.Start()
		m.Start()
		pkt := func(c wire.Class, size int) wire.Packet {
			b := make([]byte, size)
			b[0] = wire.Version
			return wire.Packet{From: 1, To: 2, Class: c, Payload: b}
		}
		for c := range wire.Class(wire.NumClasses) {
			m.Send(pkt(c, 40))
			synctest.Wait()
		}
		if dg.Load() != wire.NumClasses || wr.Load() != 0 {
			t.Errorf("%d datagrams and %d stream writes for one small packet of each class, want %d and 0", dg.Load(), wr.Load(), wire.NumClasses)
		}
		m.Send(pkt(wire.ClassControl, 100))
		m.Send(pkt(wire.ClassDiscovery, 100))
		synctest.Wait()
		if dg.Load() != wire.NumClasses+1 {
			t.Errorf("two small packets due together: %d more datagrams, want 1", dg.Load()-wire.NumClasses)
		}
		m.Send(pkt(wire.ClassMatching, 2*MaxDatagram))
		synctest.Wait()
		if wr.Load() != 1 {
			t.Errorf("a packet larger than a datagram: %d stream writes, want 1", wr.Load())
		}
		if got := m2.Counters().MsgsIn[wire.ClassControl].Load() + m2.Counters().MsgsIn[wire.ClassDiscovery].Load() +
			m2.Counters().MsgsIn[wire.ClassMatching].Load(); got != 6 {
			t.Errorf("node 2 received %d control, discovery and matching packets, want 6", got)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if lost := m.Close(ctx); lost != 0 {
			t.Errorf("%d lost on close", lost)
		}
		m2.Close(ctx)
	})
}
