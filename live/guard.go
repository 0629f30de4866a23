package live

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
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
	// Once half of them are taken, a source address (IP) that has its
	// fair share in flight (the other half over the sources with any in
	// flight, itself included) is refused too, so that clients that start
	// handshakes and stall them, from a few addresses, cannot take every
	// place from the others. Default 256.
	MaxInFlight int
	// RetryAbove is the number of handshakes in flight from which a new
	// client must first prove it receives packets at its source address
	// (a QUIC Retry, stateless for the listener; it costs the client one
	// round trip). Default 16; a negative value asks every client.
	RetryAbove int
	// PerSourceRate bounds the handshakes one source address (IP) may
	// start a second, with bursts of PerSourceBurst: a handshake costs
	// the listener a signature and a key exchange, so a few addresses
	// cannot take its CPU. Defaults 100 and 200. Under load (see
	// AttemptRate), the listener's socket also drops the Initials carrying
	// a token beyond this rate from a source, before quic-go opens the
	// token.
	PerSourceRate, PerSourceBurst float64
	// AttemptRate bounds, while the listener is under load (its
	// handshakes in flight reached RetryAbove, and for 5 s after), the
	// connection attempts (Initials without a token, which quic-go
	// answers with a Retry or a CONNECTION_CLOSE) one source address may
	// make a second, with bursts of AttemptBurst; AttemptRateAll and
	// AttemptBurstAll bound those of all sources together. The listener's
	// socket drops the others before quic-go parses them; their clients
	// retransmit. Defaults 10, 20, 2,000 and 2,000.
	AttemptRate, AttemptBurst       float64
	AttemptRateAll, AttemptBurstAll float64
}

// withDefaults returns lim with its zero fields set to their defaults, or
// an error naming a field that is negative (where it may not be), NaN or
// infinite.
func (lim HandshakeLimits) withDefaults() (HandshakeLimits, error) {
	for _, f := range []struct {
		name string
		v    float64
		def  float64
	}{
		{"PerSourceRate", lim.PerSourceRate, 100}, {"PerSourceBurst", lim.PerSourceBurst, 200},
		{"AttemptRate", lim.AttemptRate, 10}, {"AttemptBurst", lim.AttemptBurst, 20},
		{"AttemptRateAll", lim.AttemptRateAll, 2000}, {"AttemptBurstAll", lim.AttemptBurstAll, 2000},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return lim, fmt.Errorf("%w: handshake limits: %s %v (want a finite number ≥ 0; 0 takes the default %v)", ErrConfig, f.name, f.v, f.def)
		}
	}
	if lim.MaxInFlight < 0 {
		return lim, fmt.Errorf("%w: handshake limits: MaxInFlight %d (want ≥ 0; 0 takes the default 256)", ErrConfig, lim.MaxInFlight)
	}
	if lim.MaxInFlight == 0 {
		lim.MaxInFlight = 256
	}
	if lim.RetryAbove == 0 {
		lim.RetryAbove = 16
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&lim.PerSourceRate, 100)
	def(&lim.PerSourceBurst, 200)
	def(&lim.AttemptRate, 10)
	def(&lim.AttemptBurst, 20)
	def(&lim.AttemptRateAll, 2000)
	def(&lim.AttemptBurstAll, 2000)
	for _, b := range []struct {
		name string
		v    float64
	}{{"PerSourceBurst", lim.PerSourceBurst}, {"AttemptBurst", lim.AttemptBurst}, {"AttemptBurstAll", lim.AttemptBurstAll}} {
		if b.v < 1 {
			return lim, fmt.Errorf("%w: handshake limits: %s %v (want ≥ 1: a burst below one packet lets nothing through)", ErrConfig, b.name, b.v)
		}
	}
	return lim, nil
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
// VerifySourceAddress and ConnContext, and a packet filter on its socket,
// below quic-go, with the connection IDs the filter verifies) and counts
// what it refused, with the packets the filter and the transport dropped
// (garbage, unknown connections). Call Established for every connection
// the listener accepts.
type HandshakeGuard struct {
	lim      HandshakeLimits
	inFlight atomic.Int64
	retries  atomic.Int64 // Retry packets asked for
	refused  atomic.Int64 // handshakes refused: MaxInFlight reached
	crowded  atomic.Int64 // handshakes refused: half of MaxInFlight reached and the source has its share in flight
	rated    atomic.Int64 // handshakes refused: PerSourceRate
	unwanted atomic.Int64 // handshakes refused: the endpoint would close the connection (Admit)
	drops    dropCounter
	filter   *packetFilter // its socket's
	cids     *cidCodec     // its transport's connection IDs

	// admit, when set, says whether the endpoint behind the listener
	// would keep a connection from an address (its pre-auth limits).
	admit func(net.Addr) bool

	mu       sync.Mutex
	buckets  map[netip.Addr]*bucket
	bySource map[netip.Addr]int // handshakes in flight by source
}

// NewHandshakeGuard returns a guard with lim (zero fields take their
// defaults), or an error naming a limit out of range.
func NewHandshakeGuard(lim HandshakeLimits) (*HandshakeGuard, error) {
	return newHandshakeGuard(lim, nil)
}

// newHandshakeGuard is NewHandshakeGuard with the key of the connection
// IDs its listener issues (nil: a random one).
func newHandshakeGuard(lim HandshakeLimits, cidKey *[16]byte) (*HandshakeGuard, error) {
	lim, err := lim.withDefaults()
	if err != nil {
		return nil, err
	}
	var key [16]byte
	if cidKey != nil {
		key = *cidKey
	} else if _, err := rand.Read(key[:]); err != nil {
		return nil, err
	}
	cids := newCIDCodec(key)
	return &HandshakeGuard{lim: lim, buckets: map[netip.Addr]*bucket{}, bySource: map[netip.Addr]int{},
		filter: newPacketFilter(lim, cids), cids: cids}, nil
}

// loaded reports whether the listener asks new clients for a Retry.
func (g *HandshakeGuard) loaded() bool {
	return g.lim.RetryAbove < 0 || g.inFlight.Load() >= int64(g.lim.RetryAbove)
}

// Admit makes the guard refuse, before the handshake, a connection the
// endpoint would close as soon as it is accepted: f reports whether it
// would keep one from an address (player.Gateway.QUICAdmits). Call it
// before the listener starts.
func (g *HandshakeGuard) Admit(f func(net.Addr) bool) { g.admit = f }

// errHandshakesFull refuses a connection in ConnContext.
var errHandshakesFull = errors.New("live: too many QUIC handshakes in flight")

type handshakeKey struct{}

// handshake is one connection's place among the handshakes in flight.
type handshake struct {
	g    *HandshakeGuard
	src  netip.Addr
	once sync.Once
}

func (h *handshake) done() {
	h.once.Do(func() {
		g := h.g
		g.mu.Lock()
		if g.bySource[h.src]--; g.bySource[h.src] <= 0 {
			delete(g.bySource, h.src)
		}
		g.inFlight.Add(-1)
		g.mu.Unlock()
	})
}

// verifySourceAddress is the transport's VerifySourceAddress: a Retry
// when the handshakes in flight reach RetryAbove.
func (g *HandshakeGuard) verifySourceAddress(net.Addr) bool {
	if g.loaded() {
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
	if g.admit != nil && !g.admit(ci.RemoteAddr) {
		g.unwanted.Add(1)
		return ctx, errHandshakesFull
	}
	ip := sourceIP(ci.RemoteAddr)
	g.mu.Lock()
	n, held := g.inFlight.Load(), g.bySource[ip]
	if n >= int64(g.lim.MaxInFlight) {
		g.mu.Unlock()
		g.refused.Add(1)
		return ctx, errHandshakesFull
	}
	if half := g.lim.MaxInFlight / 2; n >= int64(half) {
		sources := len(g.bySource)
		if held == 0 {
			sources++
		}
		if held >= max(1, half/sources) && int64(held) < n {
			g.mu.Unlock()
			g.crowded.Add(1)
			return ctx, errHandshakesFull
		}
	}
	if held == 0 && len(g.bySource) >= maxBuckets {
		g.mu.Unlock() // spoofed sources, more than the table holds
		g.refused.Add(1)
		return ctx, errHandshakesFull
	}
	g.bySource[ip]++
	g.inFlight.Add(1)
	g.mu.Unlock()
	h := &handshake{g: g, src: ip}
	context.AfterFunc(ctx, h.done)
	return context.WithValue(ctx, handshakeKey{}, h), nil
}

// sourceIP returns the IP of a UDP address (the zero Addr for any other).
func sourceIP(addr net.Addr) netip.Addr {
	var ip netip.Addr
	if ua, ok := addr.(*net.UDPAddr); ok {
		ip, _ = netip.AddrFromSlice(ua.IP)
		ip = ip.Unmap()
	}
	return ip
}

// allow takes a token from addr's bucket.
func (g *HandshakeGuard) allow(addr net.Addr, now time.Time) bool {
	ip := sourceIP(addr)
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
	Crowded  int64            // handshakes refused: half of MaxInFlight reached and the source had its share in flight
	Rated    int64            // handshakes refused: PerSourceRate
	Unwanted int64            // handshakes refused: the endpoint's pre-auth limits would close the connection
	Dropped  map[string]int64 // packets the transport dropped, by qlog reason (garbage, unknown connection, ...)
	Filtered map[string]int64 // packets the socket's filter dropped before the transport saw them, by reason (not_quic, malformed, small_initial, zero_rtt, stray, source_rate, total_rate)
}

// Stats returns the guard's counters.
func (g *HandshakeGuard) Stats() GuardStats {
	return GuardStats{InFlight: g.inFlight.Load(), Retries: g.retries.Load(), Refused: g.refused.Load(), Crowded: g.crowded.Load(), Rated: g.rated.Load(), Unwanted: g.unwanted.Load(), Dropped: g.drops.snapshot(),
		Filtered: g.filter.snapshot()}
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
	tr := &quic.Transport{Conn: newFilteredConn(udp, g.filter, g.loaded), ConnectionIDGenerator: g.cids,
		StatelessResetKey: reset, VerifySourceAddress: g.verifySourceAddress, ConnContext: g.connContext, Tracer: &g.drops}
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
		"QUIC connection attempts refused or deflected before any per-connection state, by endpoint and reason: retry (the client was asked to prove its address), handshakes_full (too many handshakes in flight), handshakes_crowded (half the places in flight taken and this address holding its share of them), source_rate (too many handshakes a second from one address), preauth_full (the player endpoint's pre-auth limits would close the connection at once: its address holds its share of the unauthenticated connections), dropped_<qlog reason> (packets the transport dropped: garbage, unknown connection IDs, ...), filtered_<reason> (packets the listener's socket dropped before the transport parsed them: not_quic, malformed, small_initial, zero_rtt, stray, and under load source_rate and total_rate, connection attempts beyond the rates of one address and of all).",
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
		ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(s.Crowded), e.endpoint, "handshakes_crowded")
		ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(s.Rated), e.endpoint, "source_rate")
		ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(s.Unwanted), e.endpoint, "preauth_full")
		for r, v := range s.Dropped {
			ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(v), e.endpoint, "dropped_"+r)
		}
		for r, v := range s.Filtered {
			ch <- prometheus.MustNewConstMetric(descHSRefused, prometheus.CounterValue, float64(v), e.endpoint, "filtered_"+r)
		}
	}
}
