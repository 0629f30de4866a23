package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// Transport carries a node's packets: the driver hands it every packet the
// core drains and reads the packets addressed to the node from Recv. Mesh
// is the implementation; tests may substitute their own.
type Transport interface {
	// Send queues p for p.To without blocking (it may be dropped and
	// counted under back-pressure). Ownership of p.Payload passes to the
	// transport.
	Send(p wire.Packet)
	// Recv delivers received packets, already checked and addressed to
	// this node, with From set to the authenticated peer.
	Recv() <-chan wire.Packet
}

// MeshConfig configures a Mesh. The zero durations and lengths take the
// defaults noted.
type MeshConfig struct {
	// Self is this node.
	Self wire.NodeID
	// Peers is the address book: node ID → network address. A packet for
	// a node not listed is dropped and counted (Counters.Unroutable).
	Peers map[wire.NodeID]string
	// QueueLen bounds each peer's send queue (packets). Default 256: at
	// 10 frames/s and a few packets per frame per peer, seconds of a
	// dead peer's traffic, and far more than a WAN's delay holds.
	QueueLen int
	// InboxLen bounds received packets waiting for the driver. Default
	// 4096.
	InboxLen int
	// Delay, if set, holds each packet for Delay(to) before sending it
	// (WAN emulation, see Latency).
	Delay func(to wire.NodeID) time.Duration
	// Net adds a WAN's conditions beyond latency to every packet sent
	// (geo.Network, as the simulator applies them): a packet is lost with
	// probability Net.Loss (counted as sent, and in Counters.EmulatedLoss),
	// sent twice with probability Net.Duplicate, and held an extra
	// exponential delay of mean Net.Jitter and, with probability
	// Net.Reorder, up to ReorderDelay more. Under jitter or reordering a
	// peer's packets leave in the order they are due, so a held packet is
	// overtaken by the ones behind it, as in the simulator (over the
	// stream too: the reordering happens before it).
	Net geo.Network
	// NetSeed seeds the emulation's random draws.
	NetSeed uint64
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// failed dials. Defaults 50 ms and 5 s.
	MinBackoff, MaxBackoff time.Duration
	// Logger receives connection events. Default: discard.
	Logger *slog.Logger
	// Counters receives the counts. Default: a fresh set (see Mesh.Counters).
	Counters *Counters
}

func (c MeshConfig) validate() (MeshConfig, error) {
	c.Peers = maps.Clone(c.Peers)
	if c.QueueLen == 0 {
		c.QueueLen = 256
	}
	if c.InboxLen == 0 {
		c.InboxLen = 4096
	}
	if c.MinBackoff == 0 {
		c.MinBackoff = 50 * time.Millisecond
	}
	if c.MaxBackoff == 0 {
		c.MaxBackoff = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Counters == nil {
		c.Counters = new(Counters)
	}
	if err := c.Net.Validate(); err != nil {
		return c, fmt.Errorf("%w: network emulation: %w", ErrConfig, err)
	}
	switch {
	case c.QueueLen < 1 || c.QueueLen > 1<<16:
		return c, fmt.Errorf("%w: queue length %d: want 1 to 65536", ErrConfig, c.QueueLen)
	case c.InboxLen < 1 || c.InboxLen > 1<<20:
		return c, fmt.Errorf("%w: inbox length %d: want 1 to 1048576", ErrConfig, c.InboxLen)
	case c.MinBackoff < 0 || c.MaxBackoff < c.MinBackoff:
		return c, fmt.Errorf("%w: backoff %v..%v: want 0 ≤ min ≤ max", ErrConfig, c.MinBackoff, c.MaxBackoff)
	}
	for id, addr := range c.Peers {
		if addr == "" {
			return c, fmt.Errorf("%w: node %d has an empty address", ErrConfig, id)
		}
	}
	return c, nil
}

// Mesh is a Transport over a Network: one bounded queue and one sending
// goroutine per peer (dial on demand, redial with backoff), one reading
// goroutine per incoming connection and stream.
type Mesh struct {
	cfg   MeshConfig
	net   Network
	c     *Counters
	inbox chan wire.Packet

	ctx     context.Context
	cancel  context.CancelFunc
	closing chan struct{} // closed when Close starts: peers flush, then exit

	netMu   sync.Mutex // guards netRand (MeshConfig.Net)
	netRand *rand.Rand

	mu      sync.Mutex
	peers   map[wire.NodeID]*peer
	conns   map[Conn]struct{} // incoming connections
	started bool
	closed  bool

	peerWG sync.WaitGroup // sending goroutines
	wg     sync.WaitGroup // every other goroutine
}

// NewMesh returns a mesh over network; call Start to accept connections
// (sending works without it).
func NewMesh(cfg MeshConfig, network Network) (*Mesh, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if network == nil {
		return nil, fmt.Errorf("%w: nil network", ErrConfig)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Mesh{cfg: cfg, net: network, c: cfg.Counters, inbox: make(chan wire.Packet, cfg.InboxLen),
		ctx: ctx, cancel: cancel, closing: make(chan struct{}),
		peers: map[wire.NodeID]*peer{}, conns: map[Conn]struct{}{},
		netRand: rand.New(rand.NewPCG(cfg.NetSeed, uint64(cfg.Self)))}, nil
}

// Counters returns the mesh's counters.
func (m *Mesh) Counters() *Counters { return m.c }

// Recv implements Transport.
func (m *Mesh) Recv() <-chan wire.Packet { return m.inbox }

// Start starts accepting incoming connections. It may be called once.
func (m *Mesh) Start() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.started || m.closed {
		return
	}
	m.started = true
	m.wg.Add(1)
	go m.acceptLoop()
}

// SetPeer adds or changes a peer's address, or says that a new run of the
// peer took its place: an open connection to the peer is closed, and the
// next packet dials addr. (A connection to a run that is gone would
// otherwise swallow what is sent until its idle timeout.)
func (m *Mesh) SetPeer(id wire.NodeID, addr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cfg.Peers[id] = addr
	if p := m.peers[id]; p != nil {
		p.mu.Lock()
		p.addr = addr
		c := p.conn
		p.mu.Unlock()
		if c != nil {
			c.Close()
		}
	}
}

// Send implements Transport.
func (m *Mesh) Send(p wire.Packet) {
	if p.To == m.cfg.Self || !p.Class.Valid() {
		m.c.Unroutable.Add(1)
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		m.c.LostOnClose.Add(1)
		return
	}
	pr := m.peers[p.To]
	if pr == nil {
		addr, ok := m.cfg.Peers[p.To]
		if !ok {
			m.mu.Unlock()
			m.c.Unroutable.Add(1)
			return
		}
		pr = &peer{id: p.To, addr: addr, wake: make(chan struct{}, 1)}
		m.peers[p.To] = pr
		m.peerWG.Add(1)
		go m.runPeer(pr)
	}
	m.mu.Unlock()
	var d time.Duration
	if m.cfg.Delay != nil {
		d = m.cfg.Delay(p.To)
	}
	copies := 1
	if !m.cfg.Net.Perfect() {
		var lost bool
		lost, copies, d = m.emulate(d)
		if lost {
			m.c.countOut(p)
			m.c.EmulatedLoss.Add(1)
			return
		}
	}
	for k := range copies {
		q := p
		if k > 0 {
			q.Payload = append([]byte(nil), p.Payload...)
		}
		var due time.Time
		if d > 0 {
			due = time.Now().Add(d)
		}
		if pr.enqueue(item{p: q, due: due}, m.cfg.QueueLen) {
			m.c.QueueDrops.Add(1)
		}
	}
}

// ReorderDelay bounds the extra delay of a packet held back by the
// emulation's Net.Reorder, as sim.DefaultReorderDelay does in the
// simulator.
const ReorderDelay = 50 * time.Millisecond

// emulate draws a packet's fate under MeshConfig.Net: lost, how many
// copies to send (1 or 2), and its delay d plus the jitter and any
// holding back.
func (m *Mesh) emulate(d time.Duration) (lost bool, copies int, delay time.Duration) {
	n := m.cfg.Net
	m.netMu.Lock()
	defer m.netMu.Unlock()
	r := m.netRand
	if n.Loss > 0 && r.Float64() < n.Loss {
		return true, 0, 0
	}
	copies = 1
	if n.Duplicate > 0 && r.Float64() < n.Duplicate {
		copies = 2
	}
	if n.Jitter > 0 {
		d += time.Duration(r.ExpFloat64() * float64(n.Jitter))
	}
	if n.Reorder > 0 && r.Float64() < n.Reorder {
		d += time.Duration(r.Int64N(int64(ReorderDelay) + 1))
	}
	return false, copies, d
}

// Connected reports whether the mesh has an open connection to peer id.
func (m *Mesh) Connected(id wire.NodeID) bool {
	m.mu.Lock()
	pr := m.peers[id]
	m.mu.Unlock()
	if pr == nil {
		return false
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.conn != nil
}

// PeerRTTs returns the round-trip time measured to every peer the mesh
// has an open connection to whose network measures one (RTTer, QUIC's
// least RTT), plus, under latency emulation, the emulated delay both ways
// (Delay to the peer, twice: the peer holds its packets back as long
// under the same table). A peer not connected yet, or not measured yet,
// is left out.
func (m *Mesh) PeerRTTs() map[wire.NodeID]time.Duration {
	m.mu.Lock()
	prs := make([]*peer, 0, len(m.peers))
	for _, pr := range m.peers {
		prs = append(prs, pr)
	}
	m.mu.Unlock()
	out := map[wire.NodeID]time.Duration{}
	for _, pr := range prs {
		pr.mu.Lock()
		c := pr.conn
		pr.mu.Unlock()
		r, ok := c.(RTTer)
		if !ok {
			continue
		}
		rtt := r.RTT()
		if rtt <= 0 {
			continue
		}
		if m.cfg.Delay != nil {
			rtt += 2 * m.cfg.Delay(pr.id)
		}
		out[pr.id] = rtt
	}
	return out
}

// QueueLen returns the number of packets queued for peer id.
func (m *Mesh) QueueLen(id wire.NodeID) int {
	m.mu.Lock()
	pr := m.peers[id]
	m.mu.Unlock()
	if pr == nil {
		return 0
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.q.len()
}

// Close stops the mesh: it stops accepting connections, lets every peer's
// goroutine send what is queued until ctx is done, then closes every
// connection and the network and waits for every goroutine. Packets still queued are counted in
// Counters.LostOnClose, which is also returned.
func (m *Mesh) Close(ctx context.Context) int64 {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return 0
	}
	m.closed = true
	close(m.closing)
	m.mu.Unlock()
	// Stop accepting first (a network that can keep sending without its
	// listener says so), then flush.
	if sa, ok := m.net.(interface{ StopAccepting() error }); ok {
		sa.StopAccepting()
	}

	flushed := make(chan struct{})
	go func() { m.peerWG.Wait(); close(flushed) }()
	select {
	case <-flushed:
	case <-ctx.Done():
	}
	m.cancel()
	m.mu.Lock()
	for c := range m.conns {
		c.Close()
	}
	for _, p := range m.peers {
		p.mu.Lock()
		if p.conn != nil {
			p.conn.Close()
		}
		p.mu.Unlock()
	}
	m.mu.Unlock()
	m.net.Close()
	<-flushed
	m.wg.Wait()
	var lost int64
	for _, p := range m.peers {
		lost += int64(p.q.len())
		p.q = ring{}
	}
	m.c.LostOnClose.Add(lost)
	return lost
}

// delaySlack is the resolution of emulated delays: a packet due within
// this long is sent now, so a frame's packets to one peer (queued
// microseconds apart) leave together, in one wake-up and one datagram, as
// the simulator's 1 ms scheduling buckets would deliver them.
const delaySlack = time.Millisecond

// item is one queued packet and the time it may leave (zero: at once).
type item struct {
	p   wire.Packet
	due time.Time
}

// peer is one destination's queue and connection.
type peer struct {
	id   wire.NodeID
	wake chan struct{} // capacity 1: something was queued

	mu   sync.Mutex
	addr string
	q    ring
	conn Conn // the outgoing connection, nil while disconnected
}

// ring is a FIFO of items in a circular buffer that grows up to the
// queue bound and no further.
type ring struct {
	buf     []item
	head, n int
}

func (r *ring) len() int       { return r.n }
func (r *ring) at(i int) *item { return &r.buf[(r.head+i)%len(r.buf)] }

// grow reallocates the buffer with capacity c > n.
func (r *ring) grow(c int) {
	nb := make([]item, c)
	for i := range r.n {
		nb[i] = *r.at(i)
	}
	r.buf, r.head = nb, 0
}

// push appends it; the caller keeps n below max (the buffer grows
// geometrically up to max).
func (r *ring) push(it item, max int) {
	if r.n == len(r.buf) {
		r.grow(min(max, 2*len(r.buf)+8))
	}
	*r.at(r.n) = it
	r.n++
}

func (r *ring) pop() item {
	it := *r.at(0)
	*r.at(0) = item{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return it
}

// pushFront puts it back at the head (the one item a sending goroutine
// held may take the queue one past its bound until it is counted lost).
func (r *ring) pushFront(it item) {
	if r.n == len(r.buf) {
		r.grow(len(r.buf) + 1)
	}
	r.head = (r.head - 1 + len(r.buf)) % len(r.buf)
	*r.at(0) = it
	r.n++
}

// earliest returns the index of the first item due soonest (the
// queue is not empty).
func (r *ring) earliest() int {
	best := 0
	for i := 1; i < r.n; i++ {
		if r.at(i).due.Before(r.at(best).due) {
			best = i
		}
	}
	return best
}

// remove deletes the i-th item, shifting the earlier ones up (i is
// usually 0: the oldest update is near the head).
func (r *ring) remove(i int) {
	for k := i; k > 0; k-- {
		*r.at(k) = *r.at(k - 1)
	}
	*r.at(0) = item{}
	r.head = (r.head + 1) % len(r.buf)
	r.n--
}

// enqueue appends it, keeping the queue within max: when full, the oldest
// queued update makes room (an update carries the newest state, so the
// older one is superseded); with no update queued, an update is refused
// and a reliable packet replaces the oldest reliable one. It reports
// whether a packet was dropped.
func (p *peer) enqueue(it item, max int) (dropped bool) {
	p.mu.Lock()
	if p.q.len() >= max {
		dropped = true
		victim := -1
		for i := range p.q.len() {
			if p.q.at(i).p.Droppable() {
				victim = i
				break
			}
		}
		if victim < 0 {
			if it.p.Droppable() {
				p.mu.Unlock()
				return true
			}
			victim = 0
		}
		// The time order of the queue is kept: a later packet never
		// leaves before an earlier one (Delay is per peer).
		p.q.remove(victim)
	}
	p.q.push(it, max)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return dropped
}

// next pops the head of the queue, blocking until there is one; it returns
// false when the mesh is closing and the queue is empty, or closed. While
// it waits, a closed connection (gone) is reported through lost and
// forgotten.
func (m *Mesh) next(p *peer, gone <-chan struct{}, lost func()) (item, bool) {
	// Under jitter or reordering the packet due soonest leaves first, and
	// one queued while the goroutine waits for a later one can overtake
	// it; otherwise the queue is first in, first out (every packet to a
	// peer has the same delay) and the caller waits for the head's.
	reorder := m.cfg.Net.Jitter > 0 || m.cfg.Net.Reorder > 0
	closing, closed := m.closing, false
	for {
		var due <-chan time.Time
		var timer *time.Timer
		p.mu.Lock()
		if closed && p.q.len() == 0 {
			p.mu.Unlock()
			return item{}, false
		}
		if p.q.len() > 0 {
			i := 0
			if reorder {
				i = p.q.earliest()
			}
			it := *p.q.at(i)
			wait := time.Until(it.due)
			if !reorder || it.due.IsZero() || wait <= delaySlack {
				p.q.remove(i)
				p.mu.Unlock()
				return it, true
			}
			timer = time.NewTimer(wait)
			due = timer.C
		}
		p.mu.Unlock()
		select {
		case <-due:
		case <-p.wake:
		case <-closing:
			closing, closed = nil, true // send what is queued, then end
		case <-m.ctx.Done():
			stop(timer)
			return item{}, false
		case <-gone:
			lost()
			gone = nil
		}
		stop(timer)
	}
}

// stop stops t, if any.
func stop(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// sleep waits d or until the mesh is cancelled (false).
func (m *Mesh) sleep(d time.Duration) bool {
	if d <= 0 {
		return m.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-m.ctx.Done():
		return false
	}
}

// runPeer is peer p's sending goroutine.
func (m *Mesh) runPeer(p *peer) {
	defer m.peerWG.Done()
	var stream io.WriteCloser
	var conn Conn
	disconnect := func() {
		if conn == nil {
			return
		}
		conn.Close()
		p.mu.Lock()
		p.conn = nil
		p.mu.Unlock()
		conn, stream = nil, nil
		m.c.Connected.Add(-1)
	}
	defer disconnect()
	backoff := m.cfg.MinBackoff
	var buf []byte
	var batch []wire.Packet
	connLost := func() {
		m.cfg.Logger.Info("peer connection closed", "peer", p.id)
		disconnect()
	}
	for {
		var gone <-chan struct{}
		if conn != nil {
			gone = conn.Done()
		}
		it, ok := m.next(p, gone, connLost)
		if !ok {
			return
		}
		if wait := time.Until(it.due); !it.due.IsZero() && wait > delaySlack && !m.sleep(wait) {
			p.requeue(it)
			return
		}
		for conn == nil {
			c, s, err := m.dial(p)
			if err == nil {
				conn, stream = c, s
				backoff = m.cfg.MinBackoff
				break
			}
			select {
			case <-m.closing:
				// Shutting down and the peer is unreachable: what is
				// queued is lost (counted by Close).
				p.requeue(it)
				return
			default:
			}
			if !m.sleep(backoff) {
				p.requeue(it)
				return
			}
			backoff = min(2*backoff, m.cfg.MaxBackoff)
		}
		var err error
		if recordLen(it.p) <= MaxDatagram && !m.isClosing() {
			// Packets waiting behind this one, already due, share its
			// datagram while they fit.
			batch = append(batch[:0], it.p)
			size := recordLen(it.p)
			p.mu.Lock()
			for p.q.len() > 0 {
				nx := p.q.at(0)
				if size+recordLen(nx.p) > MaxDatagram || time.Until(nx.due) > delaySlack {
					break
				}
				size += recordLen(nx.p)
				batch = append(batch, p.q.pop().p)
			}
			p.mu.Unlock()
			buf = buf[:0]
			for _, bp := range batch {
				buf = appendRecord(buf, bp)
			}
			err = conn.SendDatagram(buf)
			if errors.Is(err, ErrTooLarge) { // the path's datagram is smaller: use the stream
				err = nil
				for _, bp := range batch {
					buf = appendFrame(buf[:0], bp)
					if _, err = stream.Write(buf); err != nil {
						break
					}
				}
			}
		} else {
			// Too large for a datagram, or flushed by Close, which waits
			// for the stream's writes and not for datagrams: on the
			// stream, whole.
			batch = append(batch[:0], it.p)
			buf = appendFrame(buf[:0], it.p)
			_, err = stream.Write(buf)
		}
		if err != nil {
			m.c.SendErrors.Add(int64(len(batch)))
			m.cfg.Logger.Info("peer connection lost", "peer", p.id, "err", err)
			disconnect()
			continue
		}
		for i, bp := range batch {
			m.c.countOut(bp)
			batch[i] = wire.Packet{}
		}
	}
}

// isClosing reports whether Close has started.
func (m *Mesh) isClosing() bool {
	select {
	case <-m.closing:
		return true
	default:
		return false
	}
}

// requeue puts it back at the head of p's queue (when the goroutine stops
// holding it), so Close counts it as lost.
func (p *peer) requeue(it item) {
	p.mu.Lock()
	p.q.pushFront(it)
	p.mu.Unlock()
}

// dial connects to p and opens the stream.
func (m *Mesh) dial(p *peer) (Conn, io.WriteCloser, error) {
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	m.c.Dials.Add(1)
	ctx, cancel := context.WithTimeout(m.ctx, 5*time.Second)
	defer cancel()
	c, err := m.net.Dial(ctx, p.id, addr)
	if err != nil {
		m.c.DialErrors.Add(1)
		m.cfg.Logger.Debug("dial failed", "peer", p.id, "addr", addr, "err", err)
		return nil, nil, err
	}
	s, err := c.OpenStream(ctx)
	if err != nil {
		c.Close()
		m.c.DialErrors.Add(1)
		return nil, nil, err
	}
	p.mu.Lock()
	p.conn = c
	p.mu.Unlock()
	if m.ctx.Err() != nil { // Close ran while dialling: it did not see c
		c.Close()
	}
	m.c.Connected.Add(1)
	m.cfg.Logger.Debug("connected", "peer", p.id, "addr", addr)
	return c, s, nil
}

// acceptLoop accepts incoming connections until the mesh closes.
func (m *Mesh) acceptLoop() {
	defer m.wg.Done()
	for {
		c, err := m.net.Accept(m.ctx)
		if err != nil {
			if m.ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			m.cfg.Logger.Debug("accept failed", "err", err)
			if !m.sleep(10 * time.Millisecond) {
				return
			}
			continue
		}
		m.mu.Lock()
		if m.ctx.Err() != nil {
			m.mu.Unlock()
			c.Close()
			return
		}
		m.conns[c] = struct{}{}
		m.wg.Add(2)
		m.mu.Unlock()
		m.c.Accepted.Add(1)
		go m.readDatagrams(c)
		go m.acceptStreams(c)
	}
}

// CloseAccepted closes the accepted connections whose peer keep refuses
// (a node withdrawn from the cluster or revoked), and returns how many.
// Outgoing connections go only to the configured peers.
func (m *Mesh) CloseAccepted(keep func(wire.NodeID) bool) int {
	m.mu.Lock()
	var gone []Conn
	for c := range m.conns {
		if !keep(c.Peer()) {
			gone = append(gone, c)
		}
	}
	m.mu.Unlock()
	for _, c := range gone {
		c.Close()
	}
	return len(gone)
}

func (m *Mesh) forget(c Conn) {
	m.mu.Lock()
	delete(m.conns, c)
	m.mu.Unlock()
	c.Close()
}

func (m *Mesh) deliver(p wire.Packet) {
	m.c.countIn(p)
	select {
	case m.inbox <- p:
	default:
		m.c.InboxDrops.Add(1)
	}
}

func (m *Mesh) readDatagrams(c Conn) {
	defer m.wg.Done()
	var pkts []wire.Packet
	for {
		d, err := c.ReceiveDatagram(m.ctx)
		if err != nil {
			m.forget(c)
			return
		}
		if pkts, err = parseDatagram(pkts[:0], d, c.Peer(), m.cfg.Self); err != nil {
			m.c.Malformed.Add(1)
			continue
		}
		for i, p := range pkts {
			m.deliver(p)
			pkts[i] = wire.Packet{}
		}
	}
}

func (m *Mesh) acceptStreams(c Conn) {
	defer m.wg.Done()
	for {
		s, err := c.AcceptStream(m.ctx)
		if err != nil {
			m.forget(c)
			return
		}
		m.wg.Add(1)
		go m.readStream(c, s)
	}
}

func (m *Mesh) readStream(c Conn, s io.ReadWriteCloser) {
	defer m.wg.Done()
	defer s.Close()
	var hdr [4]byte
	for {
		p, err := readFrame(s, &hdr, c.Peer(), m.cfg.Self)
		if err != nil {
			if errors.Is(err, ErrMalformed) {
				// A bad length or class desynchronises the stream: drop it.
				m.c.Malformed.Add(1)
			}
			return
		}
		m.deliver(p)
	}
}
