package player

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/quic-go/quic-go"
)

// ALPN is the TLS application protocol of the QUIC player endpoint.
const ALPN = "overworld-player/1"

// ErrClosed is returned by a closed Conn.
var ErrClosed = errors.New("player: connection closed")

// ErrTooLarge reports a message over the reader's limit.
var ErrTooLarge = errors.New("player: message too large")

// Pipe returns the two ends of an in-memory connection (for tests and
// in-process clients): each end's messages arrive whole and in order at
// the other, at most buf of them in flight per direction.
func Pipe(buf int) (Conn, Conn) {
	ab, ba := make(chan []byte, buf), make(chan []byte, buf)
	closed := make(chan struct{})
	once := new(sync.Once)
	return &pipeEnd{in: ba, out: ab, closed: closed, once: once}, &pipeEnd{in: ab, out: ba, closed: closed, once: once}
}

type pipeEnd struct {
	in, out chan []byte
	closed  chan struct{}
	once    *sync.Once
}

func (p *pipeEnd) ReadMessage(ctx context.Context, max int) ([]byte, error) {
	select {
	case m := <-p.in:
		return checkLen(m, max)
	default:
	}
	select {
	case m := <-p.in:
		return checkLen(m, max)
	case <-p.closed:
		select { // deliver what was sent before the close
		case m := <-p.in:
			return checkLen(m, max)
		default:
			return nil, ErrClosed
		}
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func checkLen(m []byte, max int) ([]byte, error) {
	if len(m) > max {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, len(m), max)
	}
	return m, nil
}

func (p *pipeEnd) WriteMessage(ctx context.Context, msg []byte) error {
	select {
	case <-p.closed:
		return ErrClosed
	default:
	}
	select {
	case p.out <- append([]byte(nil), msg...):
		return nil
	case <-p.closed:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pipeEnd) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// streamConn frames messages on a QUIC stream: a uvarint length, then the
// message. On the node's side, State messages that fit in a QUIC datagram
// travel as datagrams instead (unreliable and unordered, which the
// protocol tolerates: no head-of-line blocking behind a lost packet); the
// client's side reads both.
type streamConn struct {
	qc  *quic.Conn
	s   *quic.Stream
	r   *bufio.Reader
	buf []byte
	hdr []byte
	wmu sync.Mutex

	sendDgrams bool          // node side: States as datagrams when the peer takes them
	dgrams     *atomic.Int64 // node side: counts them
	merged     bool          // client side: ReadMessage merges the stream and datagrams
	smsg       chan streamMsg
	dmsg       chan []byte
	stop       context.CancelFunc
}

type streamMsg struct {
	b   []byte
	err error
}

func newStreamConn(qc *quic.Conn, s *quic.Stream, node bool) *streamConn {
	c := &streamConn{qc: qc, s: s, r: bufio.NewReader(s)}
	dg := qc.ConnectionState().SupportsDatagrams
	if node {
		c.sendDgrams = dg.Remote && dg.Local
		return c
	}
	if !dg.Local {
		return c
	}
	c.merged = true
	c.smsg, c.dmsg = make(chan streamMsg), make(chan []byte, 8)
	ctx, stop := context.WithCancel(context.Background())
	c.stop = stop
	go func() {
		for {
			m, err := c.readStream(ctx, MaxMessage)
			if err == nil {
				m = append([]byte(nil), m...)
			}
			select {
			case c.smsg <- streamMsg{m, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		for {
			d, err := qc.ReceiveDatagram(ctx)
			if err != nil {
				return
			}
			select {
			case c.dmsg <- d:
			default: // the reader is behind: drop (a newer State follows)
			}
		}
	}()
	return c
}

func (c *streamConn) ReadMessage(ctx context.Context, max int) ([]byte, error) {
	if !c.merged {
		return c.readStream(ctx, max)
	}
	select {
	case m := <-c.smsg:
		if m.err != nil {
			return nil, m.err
		}
		return checkLen(m.b, max)
	case d := <-c.dmsg:
		return checkLen(d, max)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *streamConn) readStream(ctx context.Context, max int) ([]byte, error) {
	stop := context.AfterFunc(ctx, func() { _ = c.s.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	n, err := binary.ReadUvarint(c.r)
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if n > uint64(max) {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, n, max)
	}
	if cap(c.buf) < int(n) {
		c.buf = make([]byte, n)
	}
	c.buf = c.buf[:n]
	if _, err := io.ReadFull(c.r, c.buf); err != nil {
		return nil, ctxErr(ctx, err)
	}
	return c.buf, nil
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (c *streamConn) WriteMessage(ctx context.Context, msg []byte) error {
	if c.sendDgrams && len(msg) > 1 && MsgType(msg[1]) == MsgState {
		var tooLarge *quic.DatagramTooLargeError
		err := c.qc.SendDatagram(msg)
		if err == nil && c.dgrams != nil {
			c.dgrams.Add(1)
		}
		if !errors.As(err, &tooLarge) {
			return err
		}
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	stop := context.AfterFunc(ctx, func() { _ = c.s.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	c.hdr = binary.AppendUvarint(c.hdr[:0], uint64(len(msg)))
	if _, err := c.s.Write(c.hdr); err != nil {
		return ctxErr(ctx, err)
	}
	_, err := c.s.Write(msg)
	return ctxErr(ctx, err)
}

// Close closes the stream gracefully (its data is still delivered) and
// the connection once the peer closes it or after a second.
func (c *streamConn) Close() error {
	if c.stop != nil {
		c.stop()
	}
	err := c.s.Close()
	c.s.CancelRead(0)
	go func() {
		select {
		case <-c.qc.Context().Done():
		case <-time.After(time.Second):
		}
		_ = c.qc.CloseWithError(0, "bye")
	}()
	return err
}

// QUICConfig is the QUIC configuration of player connections: at most one
// stream per connection, datagrams, keep-alives, a 30 s idle timeout.
func QUICConfig() *quic.Config {
	return &quic.Config{MaxIncomingStreams: 1, MaxIncomingUniStreams: -1, MaxIdleTimeout: 30 * time.Second,
		KeepAlivePeriod: 5 * time.Second, EnableDatagrams: true}
}

// ServeQUIC accepts player connections on ln until ctx ends or ln is
// closed, serving each (its first bidirectional stream) with g.Serve.
func (g *Gateway) ServeQUIC(ctx context.Context, ln *quic.Listener) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		qc, err := ln.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, quic.ErrServerClosed) {
				return nil
			}
			return err
		}
		if f := g.onQUIC.Load(); f != nil {
			(*f)(qc)
		}
		p, ok := g.quic.enter(qc.RemoteAddr(), func() { _ = qc.CloseWithError(3, "no token in time") })
		if !ok {
			_ = qc.CloseWithError(2, "too many connections from this address")
			continue
		}
		g.conns.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer g.conns.Add(-1)
			sctx, cancel := context.WithTimeout(ctx, g.cfg.JoinTimeout)
			s, err := qc.AcceptStream(sctx)
			cancel()
			if err != nil {
				p.leave()
				g.st.timeouts.Add(1)
				_ = qc.CloseWithError(1, "no stream")
				return
			}
			p.progress()
			sc := newStreamConn(qc, s, true)
			sc.dgrams = &g.st.datagrams
			if err := g.serve(ctx, sc, p); err != nil {
				g.cfg.Logf("player connection %v: %v", qc.RemoteAddr(), err)
			}
		}()
	}
}

// DialQUIC connects to a node's QUIC player endpoint. tlsConf may be nil
// (no server verification: tests and loopback only); its NextProtos is set
// to ALPN.
func DialQUIC(ctx context.Context, addr string, tlsConf *tls.Config) (Conn, error) {
	if tlsConf == nil {
		tlsConf = &tls.Config{InsecureSkipVerify: true}
	}
	tlsConf = tlsConf.Clone()
	tlsConf.NextProtos = []string{ALPN}
	qc, err := quic.DialAddr(ctx, addr, tlsConf, QUICConfig())
	if err != nil {
		return nil, fmt.Errorf("player: dial %s: %w", addr, err)
	}
	s, err := qc.OpenStreamSync(ctx)
	if err != nil {
		_ = qc.CloseWithError(1, "no stream")
		return nil, fmt.Errorf("player: open stream to %s: %w", addr, err)
	}
	return newStreamConn(qc, s, false), nil
}

// wsConn carries one message per binary WebSocket message.
type wsConn struct {
	c *websocket.Conn
}

func (w *wsConn) ReadMessage(ctx context.Context, max int) ([]byte, error) {
	w.c.SetReadLimit(int64(max))
	typ, b, err := w.c.Read(ctx)
	if errors.Is(err, websocket.ErrMessageTooBig) {
		return nil, fmt.Errorf("%w: %v", ErrTooLarge, err)
	}
	if err != nil {
		return nil, ctxErr(ctx, err)
	}
	if typ != websocket.MessageBinary {
		return nil, fmt.Errorf("%w: a text WebSocket message", ErrMalformed)
	}
	return b, nil
}

func (w *wsConn) WriteMessage(ctx context.Context, msg []byte) error {
	return w.c.Write(ctx, websocket.MessageBinary, msg)
}

func (w *wsConn) Close() error {
	go func() { _ = w.c.Close(websocket.StatusNormalClosure, "") }() // the handshake waits for the peer
	return nil
}

// WSHandler returns an HTTP handler upgrading requests to WebSocket player
// connections served by g. originPatterns lists the browser origins
// allowed besides the handler's own host (see websocket.AcceptOptions).
func (g *Gateway) WSHandler(ctx context.Context, originPatterns ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: originPatterns})
		if err != nil {
			return // Accept wrote the HTTP error
		}
		p, _ := r.Context().Value(passKey{}).(*pass)
		p.progress()
		g.conns.Add(1)
		defer g.conns.Add(-1)
		if err := g.serve(ctx, &wsConn{c}, p); err != nil {
			g.cfg.Logf("player connection %v: %v", r.RemoteAddr, err)
		}
	})
}

// DialWS connects to a node's WebSocket player endpoint (a ws:// or wss://
// URL; wss:// verifies the node's certificate with the system's roots).
func DialWS(ctx context.Context, url string) (Conn, error) { return DialWSTLS(ctx, url, nil) }

// DialWSTLS is DialWS with the TLS configuration of a wss:// URL (nil:
// the system's roots).
func DialWSTLS(ctx context.Context, url string, tlsConf *tls.Config) (Conn, error) {
	var opts *websocket.DialOptions
	if tlsConf != nil {
		opts = &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConf}}}
	}
	c, _, err := websocket.Dial(ctx, url, opts)
	if err != nil {
		return nil, fmt.Errorf("player: dial %s: %w", url, err)
	}
	return &wsConn{c}, nil
}

// SelfSignedTLS returns a server TLS configuration with a fresh
// self-signed ECDSA certificate for hosts (names or IP addresses), valid
// for a day, with NextProtos set to ALPN: for loopback tests and local
// clusters.
func SelfSignedTLS(hosts ...string) (*tls.Config, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "overworld player endpoint"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos: []string{ALPN}, MinVersion: tls.VersionTLS13}, nil
}

// RedirectDialer returns a dialer for Client.SetDialer: it connects to the
// QUIC endpoint a Redirect names, with the TLS configuration quicTLS
// gives for that node (nil: no server verification, tests and loopback
// only), or to its WebSocket URL when it names no QUIC endpoint or wsFirst
// is set.
func RedirectDialer(quicTLS func(node uint32) *tls.Config, wsFirst bool) func(context.Context, Redirect) (Conn, error) {
	return func(ctx context.Context, r Redirect) (Conn, error) {
		if r.QUIC != "" && (!wsFirst || r.WS == "") {
			var tc *tls.Config
			if quicTLS != nil {
				tc = quicTLS(r.Node)
			}
			return DialQUIC(ctx, r.QUIC, tc)
		}
		if r.WS == "" {
			return nil, fmt.Errorf("player: redirect to node %d names no endpoint", r.Node)
		}
		return DialWS(ctx, r.WS)
	}
}
