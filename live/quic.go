package live

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/wire"
)

// ALPN is the TLS application protocol of node-to-node connections.
const ALPN = "overworld-node/1"

// IdleTimeout is how long a connection to a silent peer stays open.
const IdleTimeout = 5 * time.Second

// QUICNetwork is the Network of a live node: one UDP socket shared by a
// QUIC listener and the node's outgoing connections, mutual TLS with the
// cluster's certificates (package pki), datagrams enabled. A peer whose
// certificate does not chain to the cluster CA, has expired, or names
// another node than the one dialled fails the handshake; Accept never sees
// it, so no per-peer state exists for it (it is counted through
// pki.Identity.OnRefuse). Its handshakes are bounded by a HandshakeGuard
// (Retry under load, a cap in flight), so a flood of Initial packets costs
// bounded memory.
type QUICNetwork struct {
	id    *pki.Identity
	udp   net.PacketConn
	tr    *quic.Transport
	ln    *quic.Listener
	conf  *quic.Config
	guard *HandshakeGuard
}

// quicConfig: datagrams on; idle connections are kept alive well inside
// the idle timeout (a ping a second), so a quiet peer is not disconnected,
// and a dead one is noticed within IdleTimeout (its connection closes and
// the next packet for it redials).
func quicConfig() *quic.Config {
	return &quic.Config{
		EnableDatagrams:      true,
		MaxIdleTimeout:       IdleTimeout,
		KeepAlivePeriod:      time.Second,
		HandshakeIdleTimeout: 3 * time.Second,
	}
}

// ListenQUIC opens the node's UDP socket at addr ("127.0.0.1:7000"; port 0
// picks one) and starts the QUIC listener.
func ListenQUIC(addr string, id *pki.Identity) (*QUICNetwork, error) {
	// Peers dial from few addresses (a loopback cluster from one): a
	// higher per-source rate than a player endpoint's.
	g, err := newHandshakeGuard(HandshakeLimits{PerSourceRate: 500, PerSourceBurst: 1000}, cidKey(id))
	if err != nil {
		return nil, err
	}
	q := &QUICNetwork{id: id, conf: quicConfig(), guard: g}
	if q.tr, q.ln, err = listenGuarded(addr, id.ServerConfig(ALPN), q.conf, q.guard, resetKey(id)); err != nil {
		return nil, err
	}
	q.udp = q.tr.Conn
	return q, nil
}

// Guard returns the listener's handshake guard (its counters).
func (q *QUICNetwork) Guard() *HandshakeGuard { return q.guard }

// resetKey derives the node's QUIC stateless-reset key from its private
// key, so that a restarted node answers packets of its previous life's
// connections with a stateless reset and its peers redial at once instead
// of waiting for the idle timeout. QUIC resets only packets longer than 42
// bytes, so a peer that sends nothing but keepalive pings to the restarted
// node still waits for the idle timeout; any update packet triggers the
// reset.
func resetKey(id *pki.Identity) *quic.StatelessResetKey {
	h := sha256.New()
	h.Write([]byte("overworld stateless reset key\x00"))
	if der, err := x509.MarshalPKCS8PrivateKey(id.Cert.PrivateKey); err == nil {
		h.Write(der)
	} else {
		return nil // no stable secret: no resets (peers wait for the idle timeout)
	}
	var k quic.StatelessResetKey
	copy(k[:], h.Sum(nil))
	return &k
}

// cidKey derives the key of the node's QUIC connection IDs (cidCodec)
// from its private key, so that after a restart the packets of its
// previous life's connections still pass its socket's filter and get the
// stateless reset that makes their peers redial at once. nil: no stable
// secret (a random key).
func cidKey(id *pki.Identity) *[16]byte {
	der, err := x509.MarshalPKCS8PrivateKey(id.Cert.PrivateKey)
	if err != nil {
		return nil
	}
	h := sha256.New()
	h.Write([]byte("overworld connection id key\x00"))
	h.Write(der)
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return &k
}

// Addr returns the bound UDP address.
func (q *QUICNetwork) Addr() net.Addr { return q.udp.LocalAddr() }

// Dial implements Network.
func (q *QUICNetwork) Dial(ctx context.Context, peer wire.NodeID, addr string) (Conn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	c, err := q.tr.Dial(ctx, ua, q.id.ClientConfig(ALPN, peer), q.conf)
	if err != nil {
		return nil, err
	}
	return &quicConn{c: c, peer: peer}, nil
}

// Accept implements Network.
func (q *QUICNetwork) Accept(ctx context.Context) (Conn, error) {
	for {
		c, err := q.ln.Accept(ctx)
		if err != nil {
			if errors.Is(err, quic.ErrServerClosed) || errors.Is(err, net.ErrClosed) {
				return nil, ErrClosed
			}
			return nil, err
		}
		q.guard.Established(c)
		peer, err := pki.PeerID(c.ConnectionState().TLS)
		if err != nil { // cannot happen after VerifyPeerCertificate; refuse anyway
			c.CloseWithError(1, "no node identity")
			continue
		}
		return &quicConn{c: c, peer: peer}, nil
	}
}

// StopAccepting closes the listener: no new connection is accepted, and
// the established ones and outgoing dials keep working (Mesh.Close calls
// it before flushing).
func (q *QUICNetwork) StopAccepting() error { return q.ln.Close() }

// Close implements Network.
func (q *QUICNetwork) Close() error {
	q.ln.Close()
	err := q.tr.Close()
	q.udp.Close()
	return err
}

type quicConn struct {
	c    *quic.Conn
	peer wire.NodeID
}

func (c *quicConn) Peer() wire.NodeID { return c.peer }

func (c *quicConn) SendDatagram(b []byte) error {
	err := c.c.SendDatagram(b)
	var tooLarge *quic.DatagramTooLargeError
	if errors.As(err, &tooLarge) {
		return ErrTooLarge
	}
	return err
}

func (c *quicConn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	return c.c.ReceiveDatagram(ctx)
}

func (c *quicConn) OpenStream(ctx context.Context) (io.ReadWriteCloser, error) {
	return c.c.OpenStreamSync(ctx)
}

func (c *quicConn) AcceptStream(ctx context.Context) (io.ReadWriteCloser, error) {
	return c.c.AcceptStream(ctx)
}

func (c *quicConn) Done() <-chan struct{} { return c.c.Context().Done() }

func (c *quicConn) Close() error { return c.c.CloseWithError(0, "closed") }

// RTT is the least round trip QUIC has measured on the connection (its
// acknowledgements' timing, less the peer's reported ack delay): the
// path's propagation delay, queueing left out. 0 before the first.
func (c *quicConn) RTT() time.Duration { return c.c.ConnectionStats().MinRTT }
