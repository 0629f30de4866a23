package player

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Limits bounds one player endpoint's unauthenticated connections: those
// accepted whose token has not verified yet. They hold no player slot;
// each holds a goroutine and a few kilobytes until its deadline.
type Limits struct {
	// MaxUnauth bounds the endpoint's unauthenticated connections. When
	// it is reached, a connection from a source address holding less than
	// its fair share (MaxUnauth over the sources holding any, itself
	// included), or holding them all, closes the oldest that has not yet shown progress (a
	// WebSocket upgrade request, a QUIC stream) to make room, or if every
	// one has, the oldest (counted as evicted); one from a source holding
	// its share or more is closed at once (counted as crowded). So a flood
	// of idle connections from a few addresses cannot keep a player who
	// sends its Join at once from joining, nor churn through the slots:
	// the QUIC endpoint refuses such a source's handshakes before any
	// cryptography (Gateway.QUICAdmits). Default 512.
	MaxUnauth int
	// PerSource bounds the unauthenticated connections from one source
	// address (IP); more are closed at once (counted). Default 16.
	PerSource int
	// Deadline is how long a connection has from its accept (for QUIC,
	// after the handshake) until its token verified; it is closed then
	// (counted as a timeout). Default 3 s.
	Deadline time.Duration
}

func (l Limits) withDefaults() (Limits, error) {
	if l.MaxUnauth == 0 {
		l.MaxUnauth = 512
	}
	if l.PerSource == 0 {
		l.PerSource = 16
	}
	if l.Deadline == 0 {
		l.Deadline = 3 * time.Second
	}
	if l.MaxUnauth < 1 || l.PerSource < 1 || l.Deadline < 0 {
		return l, fmt.Errorf("%w: pre-auth limits MaxUnauth %d, PerSource %d, Deadline %v (want ≥ 1, ≥ 1, ≥ 0)",
			ErrConfig, l.MaxUnauth, l.PerSource, l.Deadline)
	}
	return l, nil
}

// LimitStats counts what one endpoint's pre-auth limits did.
type LimitStats struct {
	Unauth   int64 // unauthenticated connections now
	Source   int64 // connections closed at once: PerSource reached
	Evicted  int64 // unauthenticated connections closed to make room (MaxUnauth reached)
	Crowded  int64 // connections closed at once: MaxUnauth reached and their source held its fair share
	Deadline int64 // connections closed at their deadline, unauthenticated
}

// door is one endpoint's pre-auth limiter. A connection enters it when
// accepted and leaves it when its token verified or it closed.
type door struct {
	lim      Limits
	mu       sync.Mutex
	bySource map[netip.Addr]int
	// fresh and moving hold the passes in arrival order, those that have
	// shown no progress and those that have (some already left or moved
	// on: they are skipped when evicting).
	fresh, moving passQueue
	n             int

	source, evicted, crowded, deadline atomic.Int64
}

// pass is one connection's stay in a door.
type pass struct {
	d      *door
	src    netip.Addr
	cancel func()
	timer  *time.Timer
	left   bool // guarded by d.mu
	moved  bool // guarded by d.mu: showed progress (in d.moving)
}

// passQueue is a FIFO of passes with lazy deletion.
type passQueue struct {
	q    []*pass
	head int
}

func (q *passQueue) push(p *pass) { q.q = append(q.q, p) }

// oldest returns the first pass keep accepts, dropping those before it.
func (q *passQueue) oldest(keep func(*pass) bool) *pass {
	for q.head < len(q.q) && !keep(q.q[q.head]) {
		q.q[q.head] = nil
		q.head++
	}
	q.compact(keep)
	if q.head < len(q.q) {
		return q.q[q.head]
	}
	return nil
}

// compact drops the dead prefix once it is half of the queue.
func (q *passQueue) compact(keep func(*pass) bool) {
	if q.head > len(q.q)/2 {
		live := q.q[:0]
		for _, p := range q.q[q.head:] {
			if keep(p) {
				live = append(live, p)
			}
		}
		clear(q.q[len(live):])
		q.q, q.head = live, 0
	}
}

func isFresh(p *pass) bool  { return !p.left && !p.moved }
func isMoving(p *pass) bool { return !p.left && p.moved }

func newDoor(lim Limits) *door { return &door{lim: lim, bySource: map[netip.Addr]int{}} }

// sourceOf returns the IP of a net.Addr (the zero Addr when it has none:
// such connections share one per-source count).
func sourceOf(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.UDPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	if a == nil {
		return netip.Addr{}
	}
	if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// refusal says why a connection from ip would be refused now: "" when
// it would be admitted.
func (d *door) refusal(ip netip.Addr) string {
	held := d.bySource[ip]
	if held >= d.lim.PerSource {
		return "source"
	}
	if d.n >= d.lim.MaxUnauth {
		sources := len(d.bySource)
		if held == 0 {
			sources++
		}
		// A source holding them all (every player behind one proxy)
		// takes the oldest of its own.
		if held >= max(1, d.lim.MaxUnauth/sources) && held < d.n {
			return "crowded"
		}
	}
	return ""
}

// admits reports whether a connection from src would be admitted now,
// changing nothing.
func (d *door) admits(src net.Addr) bool {
	ip := sourceOf(src)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refusal(ip) == ""
}

// enter admits a connection from src, whose cancel closes it, or reports
// false (PerSource reached, or MaxUnauth reached and src's source holds
// its fair share: the caller closes it). It may close the oldest
// unauthenticated connection to make room.
func (d *door) enter(src net.Addr, cancel func()) (*pass, bool) {
	ip := sourceOf(src)
	d.mu.Lock()
	switch d.refusal(ip) {
	case "source":
		d.mu.Unlock()
		d.source.Add(1)
		return nil, false
	case "crowded":
		d.mu.Unlock()
		d.crowded.Add(1)
		return nil, false
	}
	var evict *pass
	if d.n >= d.lim.MaxUnauth {
		if evict = d.fresh.oldest(isFresh); evict == nil {
			evict = d.moving.oldest(isMoving)
		}
		d.leaveLocked(evict)
		d.evicted.Add(1)
	}
	p := &pass{d: d, src: ip, cancel: cancel}
	d.bySource[ip]++
	d.n++
	d.fresh.push(p)
	p.timer = time.AfterFunc(d.lim.Deadline, func() {
		d.mu.Lock()
		left := p.left
		d.leaveLocked(p)
		d.mu.Unlock()
		if !left {
			d.deadline.Add(1)
			p.cancel()
		}
	})
	d.tidy()
	d.mu.Unlock()
	if evict != nil {
		go evict.cancel() // closing a QUIC connection waits for it: not on the accept loop
	}
	return p, true
}

// tidy drops the queues' dead prefixes (bounding them by the live passes).
func (d *door) tidy() {
	d.fresh.oldest(isFresh)
	d.moving.oldest(isMoving)
}

// progress records that the connection showed progress toward a join (a
// WebSocket upgrade request, a QUIC stream): it is evicted only after
// every connection that did not. Nil-safe.
func (p *pass) progress() {
	if p == nil {
		return
	}
	p.d.mu.Lock()
	if !p.left && !p.moved {
		p.moved = true
		p.d.moving.push(p)
		p.d.tidy()
	}
	p.d.mu.Unlock()
}

func (d *door) leaveLocked(p *pass) {
	if p.left {
		return
	}
	p.left = true
	if p.timer != nil {
		p.timer.Stop()
	}
	if d.bySource[p.src]--; d.bySource[p.src] <= 0 {
		delete(d.bySource, p.src)
	}
	d.n--
}

// leave ends the connection's unauthenticated stay (its token verified,
// or it closed). It is idempotent and nil-safe.
func (p *pass) leave() {
	if p == nil {
		return
	}
	p.d.mu.Lock()
	p.d.leaveLocked(p)
	p.d.tidy()
	p.d.mu.Unlock()
}

func (d *door) stats() LimitStats {
	d.mu.Lock()
	n := d.n
	d.mu.Unlock()
	return LimitStats{Unauth: int64(n), Source: d.source.Load(), Evicted: d.evicted.Load(), Crowded: d.crowded.Load(), Deadline: d.deadline.Load()}
}

// countWriter counts the lines written to it.
type countWriter struct{ n *atomic.Int64 }

func (w countWriter) Write(b []byte) (int, error) {
	w.n.Add(1)
	return len(b), nil
}

// passKey carries a WebSocket connection's pass from the listener to the
// handler through the request's context.
type passKey struct{}

// wsListener puts every accepted TCP connection through the WebSocket
// endpoint's door.
type wsListener struct {
	net.Listener
	d       *door
	garbage *atomic.Int64 // connections whose first byte cannot start HTTP or TLS
}

type passConn struct {
	net.Conn
	p       *pass
	once    sync.Once
	read    atomic.Bool // the first byte was read
	garbage *atomic.Int64
}

// startsHTTP reports whether a connection whose first byte is b may be
// HTTP (a request line starts with a method, in capitals: a WebSocket
// upgrade with GET) or TLS (a handshake record, 0x16).
func startsHTTP(b byte) bool { return b >= 'A' && b <= 'Z' || b == 0x16 }

// Read reads from the connection; a connection whose first byte cannot
// start HTTP or TLS ends there (io.EOF: the HTTP server closes it without
// parsing or answering it) and is counted.
func (c *passConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.read.Swap(true) && !startsHTTP(b[0]) {
		c.garbage.Add(1)
		return 0, io.EOF
	}
	return n, err
}

func (c *passConn) Close() error {
	c.once.Do(c.p.leave)
	return c.Conn.Close()
}

func (l *wsListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		p, ok := l.d.enter(c.RemoteAddr(), func() { _ = c.Close() })
		if !ok {
			_ = c.Close()
			continue
		}
		return &passConn{Conn: c, p: p, garbage: l.garbage}, nil
	}
}

// WSServer returns the HTTP server of the WebSocket player endpoint and
// the listener to serve it on (ln wrapped so that every connection, from
// its TCP accept until its token verifies, counts against the endpoint's
// Limits): srv.Serve(wrapped), or srv.ServeTLS(wrapped, ...) for wss://
// (or set srv.TLSConfig and use tls.NewListener). The handler is
// WSHandler's at every path.
func (g *Gateway) WSServer(ctx context.Context, ln net.Listener, originPatterns ...string) (srv *http.Server, wrapped net.Listener) {
	srv = &http.Server{Handler: g.WSHandler(ctx, originPatterns...), ReadHeaderTimeout: g.ws.lim.Deadline,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*passConn); ok {
				return context.WithValue(ctx, passKey{}, pc.p)
			}
			if tc, ok := c.(interface{ NetConn() net.Conn }); ok { // a TLS connection over ours
				if pc, ok := tc.NetConn().(*passConn); ok {
					return context.WithValue(ctx, passKey{}, pc.p)
				}
			}
			return ctx
		},
		MaxHeaderBytes: 8 << 10,
		// The server's complaints (garbage instead of HTTP, failed TLS
		// handshakes) are counted, not logged: a flood would fill the logs.
		ErrorLog: log.New(countWriter{&g.st.httpErrors}, "", 0),
	}
	return srv, &wsListener{Listener: ln, d: g.ws, garbage: &g.st.httpErrors}
}
