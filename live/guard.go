package live

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// HandshakeLimits bounds a QUIC listener's handshakes, so that a flood of
// Initial packets (from spoofed addresses or not) costs bounded memory and
// goroutines: quic-go starts a connection, with its goroutines and
// buffers, for every Initial packet it does not refuse.
type HandshakeLimits struct {
	// MaxInFlight bounds the handshakes in flight (connections started and
	// neither established and accepted nor closed); more are refused with
	// CONNECTION_REFUSED, a packet that costs the listener no state.
	// Default 256.
	MaxInFlight int
	// RetryAbove is the number of handshakes in flight from which a new
	// client must first prove it receives packets at its source address
	// (a QUIC Retry, stateless for the listener; it costs the client one
	// round trip). Default 16; a negative value asks every client.
	RetryAbove int
	// PerSourceRate bounds the handshakes one source address (IP) may
	// start a second, with bursts of PerSourceBurst: a handshake costs
	// the listener a signature and a key exchange, so a few addresses
	// cannot take its CPU. Defaults 100 and 200.
	PerSourceRate, PerSourceBurst float64
}

// maxBuckets bounds the per-source rate table: when full, it is cleared
// (every source starts with a full burst again), so spoofed sources cost
// bounded memory.
const maxBuckets = 1 << 16

// bucket is one source's token bucket.
type bucket struct {
	tokens float64
	at     time.Time
}

// HandshakeGuard enforces HandshakeLimits on a quic.Transport (its
// VerifySourceAddress and ConnContext) and counts what it refused, with
// the packets the transport dropped (garbage, unknown connections). Call
// Established for every connection the listener accepts.
type HandshakeGuard struct {
	lim      HandshakeLimits
	inFlight atomic.Int64
	retries  atomic.Int64 // Retry packets asked for
	refused  atomic.Int64 // handshakes refused: MaxInFlight reached
	rated    atomic.Int64 // handshakes refused: PerSourceRate
	drops    dropCounter

	mu      sync.Mutex
	buckets map[netip.Addr]*bucket
}

// NewHandshakeGuard returns a guard with lim (zero fields take their
// defaults).
func NewHandshakeGuard(lim HandshakeLimits) *HandshakeGuard {
	if lim.MaxInFlight <= 0 {
		lim.MaxInFlight = 256
	}
	if lim.RetryAbove == 0 {
		lim.RetryAbove = 16
	}
	if lim.PerSourceRate <= 0 {
		lim.PerSourceRate = 100
	}
	if lim.PerSourceBurst < 1 {
		lim.PerSourceBurst = 200
	}
	return &HandshakeGuard{lim: lim, buckets: map[netip.Addr]*bucket{}}
}

// errHandshakesFull refuses a connection in ConnContext.
var errHandshakesFull = errors.New("live: too many QUIC handshakes in flight")

type handshakeKey struct{}

// handshake is one connection's place among the handshakes in flight.
type handshake struct {
	g    *HandshakeGuard
	once sync.Once
}

func (h *handshake) done() { h.once.Do(func() { h.g.inFlight.Add(-1) }) }

// verifySourceAddress is the transport's VerifySourceAddress: a Retry
// when the handshakes in flight reach RetryAbove.
func (g *HandshakeGuard) verifySourceAddress(net.Addr) bool {
	if g.lim.RetryAbove < 0 || g.inFlight.Load() >= int64(g.lim.RetryAbove) {
		g.retries.Add(1)
		return true
	}
	return false
}

// connContext is the transport's ConnContext: it takes a place among the
// handshakes in flight (refusing the connection when there is none), given
// back when the connection is accepted or ends.
func (g *HandshakeGuard) connContext(ctx context.Context, ci *quic.ClientInfo) (context.Context, error) {
	if !g.allow(ci.RemoteAddr, time.Now()) {
		g.rated.Add(1)
		return ctx, errHandshakesFull
	}
	if g.inFlight.Add(1) > int64(g.lim.MaxInFlight) {
		g.inFlight.Add(-1)
		g.refused.Add(1)
		return ctx, errHandshakesFull
	}
	h := &handshake{g: g}
	context.AfterFunc(ctx, h.done)
	return context.WithValue(ctx, handshakeKey{}, h), nil
}

// allow takes a token from addr's bucket.
func (g *HandshakeGuard) allow(addr net.Addr, now time.Time) bool {
	var ip netip.Addr
	if ua, ok := addr.(*net.UDPAddr); ok {
		ip, _ = netip.AddrFromSlice(ua.IP)
		ip = ip.Unmap()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.buckets[ip]
	if b == nil {
		if len(g.buckets) >= maxBuckets {
			clear(g.buckets)
		}
		b = &bucket{tokens: g.lim.PerSourceBurst, at: now}
		g.buckets[ip] = b
	}
	b.tokens = min(g.lim.PerSourceBurst, b.tokens+now.Sub(b.at).Seconds()*g.lim.PerSourceRate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Established gives back the place of an accepted connection's handshake.
func (g *HandshakeGuard) Established(c *quic.Conn) {
	if h, ok := c.Context().Value(handshakeKey{}).(*handshake); ok {
		h.done()
	}
}

// GuardStats is what a HandshakeGuard counted.
type GuardStats struct {
	InFlight int64            // handshakes in flight now
	Retries  int64            // clients asked to prove their address (Retry)
	Refused  int64            // handshakes refused: MaxInFlight reached
	Rated    int64            // handshakes refused: PerSourceRate
	Dropped  map[string]int64 // packets the transport dropped, by qlog reason (garbage, unknown connection, ...)
}

// Stats returns the guard's counters.
func (g *HandshakeGuard) Stats() GuardStats {
	return GuardStats{InFlight: g.inFlight.Load(), Retries: g.retries.Load(), Refused: g.refused.Load(), Rated: g.rated.Load(), Dropped: g.drops.snapshot()}
}

// dropCounter is a qlog recorder on a transport that counts the packets it
// dropped, by reason, and nothing else.
type dropCounter struct {
	mu sync.Mutex
	by map[qlog.PacketDropReason]int64
}

func (d *dropCounter) RecordEvent(e qlogwriter.Event) {
	pd, ok := e.(qlog.PacketDropped)
	if !ok {
		return
	}
	d.mu.Lock()
	if d.by == nil {
		d.by = map[qlog.PacketDropReason]int64{}
	}
	if len(d.by) < 32 || d.by[pd.Trigger] > 0 { // the reasons are quic-go's constants: bounded anyway
		d.by[pd.Trigger]++
	}
	d.mu.Unlock()
}

func (d *dropCounter) Close() error { return nil }

func (d *dropCounter) snapshot() map[string]int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := make(map[string]int64, len(d.by))
	for k, v := range d.by {
		m[string(k)] = v
	}
	return m
}

// listenGuarded opens a UDP socket at addr and a QUIC listener on it whose
// handshakes g bounds. resetKey may be nil.
func listenGuarded(addr string, tc *tls.Config, qc *quic.Config, g *HandshakeGuard, reset *quic.StatelessResetKey) (*quic.Transport, *quic.Listener, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: address %q: %v", ErrConfig, addr, err)
	}
	udp, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, nil, err
	}
	tr := &quic.Transport{Conn: udp, StatelessResetKey: reset, VerifySourceAddress: g.verifySourceAddress,
		ConnContext: g.connContext, Tracer: &g.drops}
	ln, err := tr.Listen(tc, qc)
	if err != nil {
		udp.Close()
		return nil, nil, err
	}
	return tr, ln, nil
}

// guardCollector exports guards' counters, each under its endpoint label.
type guardCollector []struct {
	endpoint string
	g        *HandshakeGuard
}

var (
	descHSInFlight = prometheus.NewDesc("overworld_quic_handshakes_in_flight", "QUIC handshakes in flight, by endpoint (node, player).", []string{"endpoint"}, nil)
	descHSRefused  = prometheus.NewDesc("overworld_quic_refusals_total",
		"QUIC connection attempts refused or deflected before any per-connection state, by endpoint and reason: retry (the client was asked to prove its address), handshakes_full (too many handshakes in flight), source_rate (too many handshakes a second from one address), dropped_<qlog reason> (packets the transport dropped: garbage, unknown connection IDs, ...).",
		[]string{"endpoint", "reason"}, nil)
)

func (c guardCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descHSInFlight
	ch <- descHSRefused
}

func (c guardCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c {
		s := e.g.Stats()
		ch <- prometheus.MustNewConstMetric(descHSInFlight, prometheus.GaugeValue, float64(s.InFlight), e.endpoint)
		ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(s.Retries), e.endpoint, "retry")
		ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(s.Refused), e.endpoint, "handshakes_full")
		ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(s.Rated), e.endpoint, "source_rate")
		for r, v := range s.Dropped {
			ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(v), e.endpoint, "dropped_"+r)
		}
	}
}
