package live

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"github.com/overworld/overworld/wire"
)

// MemNetwork is an in-memory Network for tests (no sockets, so it runs
// inside a testing/synctest bubble): endpoints listen on string addresses,
// a dial reaches the endpoint listening at the address only if its node ID
// is the one expected (standing in for the TLS identity check), datagrams
// are dropped when the receiver's buffer is full (as UDP would), and
// streams are net.Pipe pairs. Sever and endpoint Close break connections
// to exercise reconnects.
type MemNetwork struct {
	mu        sync.Mutex
	endpoints map[string]*MemEndpoint
	// DatagramsDropped counts datagrams lost to a full receive buffer.
	DatagramsDropped atomic.Int64
}

// NewMemNetwork returns an empty in-memory network.
func NewMemNetwork() *MemNetwork { return &MemNetwork{endpoints: map[string]*MemEndpoint{}} }

// memBuffer is a memConn's datagram receive buffer (datagrams).
const memBuffer = 256

// Listen returns node self's endpoint at addr.
func (n *MemNetwork) Listen(self wire.NodeID, addr string) (*MemEndpoint, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.endpoints[addr]; ok {
		return nil, fmt.Errorf("live: memnet: address %s in use", addr)
	}
	e := &MemEndpoint{net: n, self: self, addr: addr, accept: make(chan *memConn, 16),
		done: make(chan struct{}), conns: map[*memConn]struct{}{}}
	n.endpoints[addr] = e
	return e, nil
}

// Sever breaks every connection to or from the endpoint at addr (its
// listener stays up).
func (n *MemNetwork) Sever(addr string) {
	n.mu.Lock()
	e := n.endpoints[addr]
	n.mu.Unlock()
	if e != nil {
		e.closeConns()
	}
}

// SetDown takes the endpoint at addr down (dials to it are refused and its
// connections break) or brings it back up.
func (n *MemNetwork) SetDown(addr string, down bool) {
	n.mu.Lock()
	e := n.endpoints[addr]
	n.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	e.down = down
	e.mu.Unlock()
	if down {
		e.closeConns()
	}
}

// MemEndpoint is one node's attachment to a MemNetwork; it implements
// Network.
type MemEndpoint struct {
	net    *MemNetwork
	self   wire.NodeID
	addr   string
	accept chan *memConn
	done   chan struct{}
	once   sync.Once

	mu    sync.Mutex
	conns map[*memConn]struct{}
	down  bool
}

// Dial implements Network.
func (e *MemEndpoint) Dial(ctx context.Context, peer wire.NodeID, addr string) (Conn, error) {
	e.net.mu.Lock()
	t := e.net.endpoints[addr]
	e.net.mu.Unlock()
	if t != nil {
		t.mu.Lock()
		down := t.down
		t.mu.Unlock()
		if down {
			t = nil
		}
	}
	if t == nil {
		return nil, fmt.Errorf("live: memnet: dial %s: connection refused", addr)
	}
	if t.self != peer {
		return nil, fmt.Errorf("live: memnet: dial %s: node %d answered, want node %d", addr, t.self, peer)
	}
	l := &memLink{done: make(chan struct{})}
	a := &memConn{link: l, peer: peer, dgrams: make(chan []byte, memBuffer), streams: make(chan net.Conn, 4), net: e.net}
	b := &memConn{link: l, peer: e.self, dgrams: make(chan []byte, memBuffer), streams: make(chan net.Conn, 4), net: e.net}
	a.other, b.other = b, a
	select {
	case t.accept <- b:
	case <-t.done:
		return nil, fmt.Errorf("live: memnet: dial %s: connection refused", addr)
	case <-e.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	e.track(a)
	t.track(b)
	return a, nil
}

func (e *MemEndpoint) track(c *memConn) {
	e.mu.Lock()
	e.conns[c] = struct{}{}
	e.mu.Unlock()
}

// Accept implements Network.
func (e *MemEndpoint) Accept(ctx context.Context) (Conn, error) {
	select {
	case c := <-e.accept:
		return c, nil
	case <-e.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (e *MemEndpoint) closeConns() {
	e.mu.Lock()
	cs := e.conns
	e.conns = map[*memConn]struct{}{}
	e.mu.Unlock()
	for c := range cs {
		c.Close()
	}
}

// Close implements Network: the endpoint stops listening (its address is
// free again) and its connections break.
func (e *MemEndpoint) Close() error {
	e.once.Do(func() {
		close(e.done)
		e.net.mu.Lock()
		if e.net.endpoints[e.addr] == e {
			delete(e.net.endpoints, e.addr)
		}
		e.net.mu.Unlock()
		e.closeConns()
	})
	return nil
}

// memLink is the shared state of a connection's two ends.
type memLink struct {
	once  sync.Once
	done  chan struct{}
	mu    sync.Mutex
	pipes []net.Conn
}

func (l *memLink) close() {
	l.once.Do(func() {
		close(l.done)
		l.mu.Lock()
		for _, p := range l.pipes {
			p.Close()
		}
		l.mu.Unlock()
	})
}

type memConn struct {
	link    *memLink
	peer    wire.NodeID
	other   *memConn
	dgrams  chan []byte
	streams chan net.Conn
	net     *MemNetwork
}

func (c *memConn) Peer() wire.NodeID { return c.peer }

func (c *memConn) SendDatagram(b []byte) error {
	if len(b) > MaxDatagram {
		return ErrTooLarge
	}
	select {
	case <-c.link.done:
		return ErrClosed
	default:
	}
	select {
	case c.other.dgrams <- append([]byte(nil), b...):
	default:
		c.net.DatagramsDropped.Add(1)
	}
	return nil
}

func (c *memConn) ReceiveDatagram(ctx context.Context) ([]byte, error) {
	select {
	case d := <-c.dgrams:
		return d, nil
	case <-c.link.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) OpenStream(ctx context.Context) (io.ReadWriteCloser, error) {
	x, y := net.Pipe()
	c.link.mu.Lock()
	c.link.pipes = append(c.link.pipes, x, y)
	c.link.mu.Unlock()
	select {
	case <-c.link.done:
		x.Close()
		y.Close()
		return nil, ErrClosed
	default:
	}
	select {
	case c.other.streams <- y:
		return x, nil
	case <-c.link.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) AcceptStream(ctx context.Context) (io.ReadWriteCloser, error) {
	select {
	case s := <-c.streams:
		return s, nil
	case <-c.link.done:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *memConn) Done() <-chan struct{} { return c.link.done }

func (c *memConn) Close() error {
	c.link.close()
	return nil
}
