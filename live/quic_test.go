package live

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"path/filepath"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/wire"
)

// quicNode is one node's QUIC network and mesh on a loopback port.
type quicNode struct {
	id   *pki.Identity
	net  *QUICNetwork
	mesh *Mesh
	c    *Counters
}

func issue(t testing.TB, ca *pki.CA, id wire.NodeID, from time.Time, validity time.Duration) *pki.Identity {
	t.Helper()
	data, err := ca.Issue(id, from, validity)
	if err != nil {
		t.Fatal(err)
	}
	ident, err := pki.ParseNode(data, ca)
	if err != nil {
		t.Fatal(err)
	}
	return ident
}

func newQUICNode(t testing.TB, ident *pki.Identity, peers map[wire.NodeID]string) *quicNode {
	t.Helper()
	c := new(Counters)
	ident.OnRefuse = func(error) { c.Refused.Add(1) }
	qn, err := ListenQUIC("127.0.0.1:0", ident)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMesh(MeshConfig{Self: ident.ID, Peers: peers, Counters: c, MaxBackoff: 200 * time.Millisecond}, qn)
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	n := &quicNode{id: ident, net: qn, mesh: m, c: c}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		m.Close(ctx)
	})
	return n
}

// pemOf re-encodes an identity as a node file.
func pemOf(t testing.TB, id *pki.Identity) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(id.Cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: id.Leaf.Raw})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})...)
}

func newTestCA(t testing.TB) *pki.CA {
	t.Helper()
	ca, err := pki.InitCA(filepath.Join(t.TempDir(), "ca"), "", time.Now().Add(-72*time.Hour), 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// recvWithin waits up to d for a packet on m.
func recvWithin(m *Mesh, d time.Duration) (wire.Packet, bool) {
	select {
	case p := <-m.Recv():
		return p, true
	case <-time.After(d):
		return wire.Packet{}, false
	}
}

// TestQUICMutualTLS sends one update datagram, one oversized update and one
// control frame between two nodes with certificates from the cluster CA,
// then checks that a node with a certificate from another CA, an expired
// certificate, or a certificate for another node than the address's is
// refused in the handshake, counted, and never accepted by the mesh.
func TestQUICMutualTLS(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t)
	b := newQUICNode(t, issue(t, ca, 2, now, time.Hour), nil)
	baddr := b.net.Addr().String()
	a := newQUICNode(t, issue(t, ca, 1, now, time.Hour), map[wire.NodeID]string{2: baddr})
	big := make([]byte, 3000)
	big[0] = wire.Version
	for _, p := range []wire.Packet{
		{From: 1, To: 2, Class: wire.ClassUpdate, Payload: []byte{wire.Version, 1}},
		{From: 1, To: 2, Class: wire.ClassUpdate, Payload: big},
		{From: 1, To: 2, Class: wire.ClassControl, Payload: []byte{wire.Version, 3}},
	} {
		a.mesh.Send(p)
		got, ok := recvWithin(b.mesh, 5*time.Second)
		if !ok {
			t.Fatalf("packet of class %v, %d bytes not received", p.Class, len(p.Payload))
		}
		if got.From != 1 || got.To != 2 || got.Class != p.Class || len(got.Payload) != len(p.Payload) {
			t.Fatalf("received %v/%v/%v/%d bytes, sent %v/%v/%v/%d", got.From, got.To, got.Class, len(got.Payload),
				p.From, p.To, p.Class, len(p.Payload))
		}
	}
	if b.c.Accepted.Load() != 1 || b.c.Refused.Load() != 0 {
		t.Fatalf("b accepted %d, refused %d; want 1, 0", b.c.Accepted.Load(), b.c.Refused.Load())
	}

	// An impostor trusts the cluster CA (it could skip verification
	// anyway) but holds a certificate from another CA.
	other := newTestCA(t)
	impostor := issue(t, other, 5, now, time.Hour)
	impostor.CA = ca
	for _, c := range []struct {
		name   string
		ident  *pki.Identity
		dialTo wire.NodeID
		// who refuses: the server (b) or the dialler
		serverRefuses bool
	}{
		{"another CA", impostor, 2, true},
		{"expired", issue(t, ca, 6, now.Add(-48*time.Hour), time.Hour), 2, true},
		{"wrong node at the address", issue(t, ca, 7, now, time.Hour), 3, false},
	} {
		refused0, accepted0 := b.c.Refused.Load(), b.c.Accepted.Load()
		x := newQUICNode(t, c.ident, map[wire.NodeID]string{c.dialTo: baddr})
		x.mesh.Send(wire.Packet{From: c.ident.ID, To: c.dialTo, Class: wire.ClassControl, Payload: []byte{wire.Version}})
		if _, ok := recvWithin(b.mesh, time.Second); ok {
			t.Errorf("%s: b received a packet", c.name)
		}
		if got := b.c.Accepted.Load() - accepted0; got != 0 {
			t.Errorf("%s: b accepted %d connections", c.name, got)
		}
		if c.serverRefuses && b.c.Refused.Load() == refused0 {
			t.Errorf("%s: b counted no refusal", c.name)
		}
		if !c.serverRefuses && x.c.Refused.Load() == 0 {
			t.Errorf("%s: the dialler counted no refusal", c.name)
		}
		// In TLS 1.3 the client's certificate travels in its last
		// flight, so only a dialler that refuses sees its dial fail.
		if !c.serverRefuses && x.c.DialErrors.Load() == 0 {
			t.Errorf("%s: the dial did not fail", c.name)
		}
	}
}

// TestQUICPeerRestart: a node that restarts on the same address (same
// certificate) answers its peer's old connection with a stateless reset,
// so the peer redials at once and its packets flow again well within the
// idle timeout.
func TestQUICPeerRestart(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t)
	bid := issue(t, ca, 2, now, time.Hour)
	b := newQUICNode(t, bid, nil)
	baddr := b.net.Addr().String()
	a := newQUICNode(t, issue(t, ca, 1, now, time.Hour), map[wire.NodeID]string{2: baddr})
	// QUIC answers with a stateless reset only packets longer than 42
	// bytes (quic-go's protocol.MinStatelessResetSize: a reset must be
	// smaller than what provoked it), so the test sends packets of an
	// update's usual size; a peer that sends only keepalive pings notices
	// the restart at the idle timeout instead.
	send := func(k byte) {
		payload := make([]byte, 64)
		payload[0], payload[1] = wire.Version, k
		a.mesh.Send(wire.Packet{From: 1, To: 2, Class: wire.ClassUpdate, Payload: payload})
	}
	send(1)
	if _, ok := recvWithin(b.mesh, 5*time.Second); !ok {
		t.Fatal("first packet not received")
	}
	// The node dies abruptly: its socket closes without a CONNECTION_CLOSE.
	b.net.udp.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	b.mesh.Close(ctx)
	cancel()
	// The same node comes back on the same port.
	ident2, err := pki.ParseNode(pemOf(t, bid), ca)
	if err != nil {
		t.Fatal(err)
	}
	c := new(Counters)
	qn, err := ListenQUIC(baddr, ident2)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := NewMesh(MeshConfig{Self: 2, Counters: c}, qn)
	if err != nil {
		t.Fatal(err)
	}
	b2.Start()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		b2.Close(ctx)
	}()
	start := time.Now()
	for k := byte(2); time.Since(start) < IdleTimeout; k++ {
		send(k)
		if _, ok := recvWithin(b2, 100*time.Millisecond); ok {
			t.Logf("packets flow again %v after the restart (%d dials)", time.Since(start).Round(time.Millisecond), a.c.Dials.Load())
			return
		}
	}
	t.Fatalf("no packet reached the restarted node within the idle timeout (%v)", IdleTimeout)
}

// TestPeerRTTs: a mesh over QUIC reports the RTT it measures to a peer it
// has talked to (QUIC's least RTT; on loopback well under 100 ms), plus
// the emulated delay both ways when it emulates latency; a peer it never
// talked to is left out.
func TestPeerRTTs(t *testing.T) {
	now := time.Now()
	ca := newTestCA(t)
	b := newQUICNode(t, issue(t, ca, 2, now, time.Hour), nil)
	a := newQUICNode(t, issue(t, ca, 1, now, time.Hour), map[wire.NodeID]string{2: b.net.Addr().String(), 3: "127.0.0.1:1"})
	delayed := newQUICNode(t, issue(t, ca, 4, now, time.Hour), map[wire.NodeID]string{2: b.net.Addr().String()})
	delayed.mesh.cfg.Delay = func(wire.NodeID) time.Duration { return 30 * time.Millisecond }
	for _, n := range []*quicNode{a, delayed} {
		var rtt time.Duration
		for i := 0; i < 100 && rtt == 0; i++ {
			n.mesh.Send(wire.Packet{From: n.id.ID, To: 2, Class: wire.ClassUpdate, Payload: []byte{wire.Version, byte(i)}})
			recvWithin(b.mesh, time.Second)
			time.Sleep(10 * time.Millisecond)
			rtt = n.mesh.PeerRTTs()[2]
		}
		var lo time.Duration
		if d := n.mesh.cfg.Delay; d != nil {
			lo = 2 * d(2)
		}
		if rtt <= lo || rtt > lo+100*time.Millisecond {
			t.Errorf("node %d: RTT to node 2 %v, want over %v by under 100 ms", n.id.ID, rtt, lo)
		}
	}
	if rtts := a.mesh.PeerRTTs(); len(rtts) != 1 {
		t.Errorf("node 1 reports %v, want node 2 only", rtts)
	}
}
