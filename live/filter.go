package live

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/ipv4"
)

// The packet filter sits between a QUIC listener's UDP socket and quic-go:
// it reads the datagrams quic-go asks for and drops, before quic-go parses
// or answers them, those that cannot lead anywhere (not QUIC, malformed,
// Initials too small to be a client's, 0-RTT, which the listeners never
// accept) and, while the listener is under load, the connection attempts
// beyond a per-source and a global rate: quic-go answers each of those with
// a Retry (an AEAD-sealed token and a sendmsg) or a CONNECTION_CLOSE, the
// most expensive thing a flood of Initial packets makes it do. A client
// whose Initial is dropped sends it again (QUIC retransmits it on its
// probe timeout), so a legitimate client still gets in, later.

// ourCIDLen is the length of the connection IDs the node's transports
// issue (cidCodec): packets for established connections and for
// handshakes past the client's first flight carry one as their
// destination. A client's first Initial carries one of at least 8 bytes
// of its own choosing.
const ourCIDLen = 12

// cidCodec issues a transport's connection IDs (it is the
// quic.Transport's ConnectionIDGenerator) and tells them from forged
// ones: 8 random bytes, then 4 of an AES-128 encryption of them under a
// key of the listener's. A packet for an ID the listener never issued
// cannot belong to any of its connections; an attacker must send 2^31
// packets on average to find one ID that passes.
type cidCodec struct{ block cipher.Block }

// newCIDCodec returns a codec with key.
func newCIDCodec(key [16]byte) *cidCodec {
	b, err := aes.NewCipher(key[:])
	if err != nil { // cannot happen: a 16-byte key
		panic(err)
	}
	return &cidCodec{block: b}
}

func (c *cidCodec) tag(dst, random []byte) {
	var in, out [16]byte
	copy(in[:8], random)
	copy(in[8:], "ow-cid\x00\x01")
	c.block.Encrypt(out[:], in[:])
	copy(dst, out[:4])
}

// GenerateConnectionID implements quic.ConnectionIDGenerator.
func (c *cidCodec) GenerateConnectionID() (quic.ConnectionID, error) {
	var b [ourCIDLen]byte
	if _, err := rand.Read(b[:8]); err != nil {
		return quic.ConnectionID{}, err
	}
	c.tag(b[8:], b[:8])
	return quic.ConnectionIDFromBytes(b[:]), nil
}

// ConnectionIDLen implements quic.ConnectionIDGenerator.
func (c *cidCodec) ConnectionIDLen() int { return ourCIDLen }

// ours reports whether id is one the codec issued.
func (c *cidCodec) ours(id []byte) bool {
	if len(id) != ourCIDLen {
		return false
	}
	var t [4]byte
	c.tag(t[:], id[:8])
	return subtle.ConstantTimeCompare(t[:], id[8:]) == 1
}

// minInitial is the smallest datagram a client may carry an Initial in
// (RFC 9000, section 14.1).
const minInitial = 1200

// The short-header datagrams for a connection ID the listener never
// issued that may be stateless resets for one of its dials (minReset to
// maxReset bytes) pass at resetRate a second.
const (
	minReset  = 21
	maxReset  = 42
	resetRate = 100
)

// loadHold is how long the filter keeps limiting connection attempts after
// the listener's handshakes in flight fell below RetryAbove: attempts let
// through start handshakes that hold places for the handshake timeout, so
// without it the filter would open and close with the flood's own
// handshakes.
const loadHold = 5 * time.Second

// QUIC versions the listeners speak (quic-go's defaults).
const (
	quicV1 = 0x00000001
	quicV2 = 0x6b3343cf
)

// dropReason is why the filter dropped a datagram (passed: let through).
type dropReason uint8

const (
	passed         dropReason = iota
	dropNotQUIC               // short header with the fixed bit clear: not QUIC
	dropMalformed             // a long header that does not parse
	dropSmall                 // an Initial, or a packet of an unknown version, in a datagram smaller than a client must send
	dropZeroRTT               // 0-RTT: the listeners accept no early data
	dropStray                 // a Handshake or Retry packet for no connection ID of ours
	dropSourceRate            // a connection attempt beyond the source's rate under load
	dropTotalRate             // a connection attempt beyond the listener's rate under load
	numReasons
)

var dropNames = [numReasons]string{"", "not_quic", "malformed", "small_initial", "zero_rtt", "stray", "source_rate", "total_rate"}

func (r dropReason) String() string { return dropNames[r] }

// packetFilter is the filter's core, without I/O: it takes each datagram
// with its source address, the time and whether the listener is under
// load, and says whether quic-go gets it. It is not safe for concurrent
// use (one goroutine reads a socket); its counters are.
type packetFilter struct {
	lim         HandshakeLimits
	cids        *cidCodec
	loadedUntil time.Time
	attempts    map[netip.Addr]*bucket // connection attempts without a token, by source
	tokens      map[netip.Addr]*bucket // Initials carrying a token, by source
	total       bucket
	resets      bucket // short datagrams that may be stateless resets
	counts      [numReasons]atomic.Int64
	// off lets every datagram through uncounted (and the reader never
	// waits): set by the flood test to measure the node without the
	// filter in the same run.
	off atomic.Bool
}

func newPacketFilter(lim HandshakeLimits, cids *cidCodec) *packetFilter {
	return &packetFilter{lim: lim, cids: cids, attempts: map[netip.Addr]*bucket{}, tokens: map[netip.Addr]*bucket{},
		total: bucket{tokens: lim.AttemptBurstAll}, resets: bucket{tokens: resetRate}}
}

// take takes a token from src's bucket in m (created full).
func take(m map[netip.Addr]*bucket, src netip.Addr, now time.Time, rate, burst float64) bool {
	b := m[src]
	if b == nil {
		if len(m) >= maxBuckets {
			clear(m)
		}
		b = &bucket{tokens: burst, at: now}
		m[src] = b
	}
	return b.take(now, rate, burst)
}

func (b *bucket) take(now time.Time, rate, burst float64) bool {
	if dt := now.Sub(b.at); dt > 0 { // a clock that went back refills nothing
		b.tokens = min(burst, b.tokens+dt.Seconds()*rate)
		b.at = now
	}
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// longHeader is what the filter reads of a long header.
type longHeader struct {
	version uint32
	typ     uint8 // v1 numbering: 0 Initial, 1 0-RTT, 2 Handshake, 3 Retry
	dcid    []byte
	token   bool // an Initial with a token
}

// parseLongHeader reads a long header's fields up to an Initial's token
// length, the rest being quic-go's to check. ok is false when the header
// is cut short or a connection ID is longer than 20 bytes.
func parseLongHeader(p []byte) (h longHeader, ok bool) {
	if len(p) < 7 {
		return h, false
	}
	h.version = binary.BigEndian.Uint32(p[1:5])
	h.typ = (p[0] >> 4) & 3
	if h.version == quicV2 { // RFC 9369: the types are rotated
		h.typ = (h.typ + 3) & 3
	}
	n := int(p[5])
	if n > 20 || len(p) < 7+n {
		return h, false
	}
	h.dcid = p[6 : 6+n]
	i := 6 + n
	scid := int(p[i])
	i++
	if scid > 20 || len(p) < i+scid {
		return h, false
	}
	i += scid
	if (h.version == quicV1 || h.version == quicV2) && h.typ == 0 {
		if len(p) <= i {
			return h, false
		}
		n := 1 << (p[i] >> 6) // a variable-length integer: 1, 2, 4 or 8 bytes
		if len(p) < i+n {
			return h, false
		}
		h.token = p[i]&0x3f != 0
		for _, c := range p[i+1 : i+n] {
			h.token = h.token || c != 0
		}
	}
	return h, true
}

// check says whether quic-go gets the datagram p from src at now; loaded
// is whether the listener asks new clients for a Retry (its handshakes in
// flight reached RetryAbove). It counts the drops.
func (f *packetFilter) check(p []byte, src netip.Addr, now time.Time, loaded bool) dropReason {
	if f.off.Load() {
		return passed
	}
	r := f.classify(p, src, now, loaded)
	if r != passed {
		f.counts[r].Add(1)
	}
	return r
}

func (f *packetFilter) classify(p []byte, src netip.Addr, now time.Time, loaded bool) dropReason {
	if len(p) == 0 || p[0]&0xc0 == 0 {
		return dropNotQUIC // quic-go hands such packets to ReadNonQUICPacket, which no one calls
	}
	if p[0]&0x80 == 0 { // short header: an established connection's, or a stateless reset
		if len(p) >= 1+ourCIDLen && f.cids.ours(p[1:1+ourCIDLen]) {
			return passed
		}
		// A stateless reset looks like a packet for a random connection
		// ID; quic-go's are 42 bytes long, and any is at least 21 and
		// shorter than what provoked it. Such datagrams pass within a
		// rate of their own, the others cannot belong to a connection:
		// quic-go would look them up, find nothing, and answer a
		// stateless reset on the node port.
		if len(p) >= minReset && len(p) <= maxReset && f.resets.take(now, resetRate, resetRate) {
			return passed
		}
		return dropStray
	}
	h, ok := parseLongHeader(p)
	if !ok {
		return dropMalformed
	}
	var attempt bool // would start a handshake or earn a Retry or a Version Negotiation
	ours := f.cids.ours(h.dcid)
	switch {
	case h.version == 0: // Version Negotiation, for one of our dials
		if !ours {
			return dropStray
		}
		return passed
	case h.version != quicV1 && h.version != quicV2:
		if len(p) < minInitial {
			return dropSmall // quic-go answers only datagrams of a client's size
		}
		attempt = true
	case h.typ == 1:
		return dropZeroRTT
	case h.typ != 0: // Handshake, Retry
		if !ours {
			return dropStray
		}
		return passed
	case ours && !h.token:
		// An Initial of an established handshake: a client's second
		// flight, or a server's answer to one of our dials (which may be
		// smaller than a client's, being ACK-only).
		return passed
	case len(p) < minInitial:
		return dropSmall
	case !h.token && len(h.dcid) < 8:
		return dropStray // quic-go drops it: a client's first connection ID has at least 8 bytes
	default:
		attempt = true
	}
	if loaded {
		f.loadedUntil = now.Add(loadHold)
	}
	if !attempt || !now.Before(f.loadedUntil) {
		return passed
	}
	if h.token {
		// A Retry's token (valid or forged: quic-go opens it to know) or a
		// resumption token; a valid one starts a handshake, which the
		// guard's PerSourceRate bounds.
		if !take(f.tokens, src, now, f.lim.PerSourceRate, f.lim.PerSourceBurst) {
			return dropSourceRate
		}
		return passed
	}
	if !take(f.attempts, src, now, f.lim.AttemptRate, f.lim.AttemptBurst) {
		return dropSourceRate
	}
	if !f.total.take(now, f.lim.AttemptRateAll, f.lim.AttemptBurstAll) {
		return dropTotalRate
	}
	return passed
}

// snapshot returns the drops by reason.
func (f *packetFilter) snapshot() map[string]int64 {
	m := map[string]int64{}
	for r := passed + 1; r < numReasons; r++ {
		if v := f.counts[r].Load(); v > 0 {
			m[r.String()] = v
		}
	}
	return m
}

// readBatch is how many datagrams the filter reads a system call: more
// than quic-go's batch (8), so that a flood is read in few calls.
const readBatch = 64

// readBufSize is the size of a datagram the filter reads (quic-go's
// protocol.MaxPacketBufferSize: quic-go reads no larger ones either).
const readBufSize = 1452

// floodWait is how long the filter waits before its next read after a
// read of less than a full batch in which it dropped at least three
// datagrams in four: a flood then costs the reader one wake-up and one
// system call for every floodWait instead of one every few datagrams, and
// legitimate datagrams wait at most floodWait more in the socket's buffer.
const floodWait = time.Millisecond

// waitAfter says how long to wait before the next read after one of n
// datagrams (of a batch of size) of which the filter dropped dropped.
func waitAfter(n, dropped, size int) time.Duration {
	if n <= 0 || n >= size || dropped*4 < n*3 {
		return 0
	}
	return floodWait
}

// filteredConn is a listener's UDP socket as quic-go sees it: every read
// goes through the filter. It keeps what quic-go needs of a *net.UDPConn
// to read in batches (ReadBatch, recvmmsg), to read ECN bits and to send
// with GSO (SyscallConn, ReadMsgUDP, WriteMsgUDP, SetReadBuffer).
type filteredConn struct {
	*net.UDPConn
	batch  *ipv4.PacketConn
	f      *packetFilter
	loaded func() bool
	now    func() time.Time

	msgs       []ipv4.Message // the filter's own batch
	next, kept int            // msgs[next:kept] passed and are not yet handed to quic-go
	wait       time.Duration  // before the next read
}

func newFilteredConn(c *net.UDPConn, f *packetFilter, loaded func() bool) *filteredConn {
	fc := &filteredConn{UDPConn: c, batch: ipv4.NewPacketConn(c), f: f, loaded: loaded, now: time.Now,
		msgs: make([]ipv4.Message, readBatch)}
	for i := range fc.msgs {
		fc.msgs[i].Buffers = [][]byte{make([]byte, readBufSize)}
		fc.msgs[i].OOB = make([]byte, 128)
	}
	return fc
}

func udpSource(a net.Addr) netip.Addr {
	if ua, ok := a.(*net.UDPAddr); ok {
		ip, _ := netip.AddrFromSlice(ua.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// ReadBatch fills ms (quic-go's batch, whose buffers quic-go tracks by
// index) with datagrams the filter passed, reading a batch of the
// filter's own when it has none left. It is called from one goroutine
// (quic-go's reader) only.
func (c *filteredConn) ReadBatch(ms []ipv4.Message, flags int) (int, error) {
	for c.next == c.kept {
		if c.wait > 0 {
			time.Sleep(c.wait)
		}
		n, err := c.batch.ReadBatch(c.msgs, flags)
		if err != nil {
			return 0, err
		}
		now, loaded := c.now(), c.loaded()
		k := 0
		for i := range n {
			m := &c.msgs[i]
			if c.f.check(m.Buffers[0][:m.N], udpSource(m.Addr), now, loaded) != passed {
				continue
			}
			c.msgs[k], c.msgs[i] = c.msgs[i], c.msgs[k] // our own buffers: they move with their message
			k++
		}
		size := len(c.msgs)
		if runtime.GOOS != "linux" {
			size = 1 // one datagram a read (no recvmmsg): waiting would only slow the reader
		}
		c.next, c.kept, c.wait = 0, k, waitAfter(n, n-k, size)
	}
	j := 0
	for ; j < len(ms) && c.next < c.kept; j++ {
		m, d := &c.msgs[c.next], &ms[j]
		if len(d.Buffers) == 0 {
			return 0, errors.New("live: a read batch without buffers")
		}
		d.N = copy(d.Buffers[0], m.Buffers[0][:m.N])
		d.NN = copy(d.OOB, m.OOB[:m.NN])
		d.Addr, d.Flags = m.Addr, m.Flags
		c.next++
	}
	return j, nil
}

// ReadMsgUDP reads the next datagram the filter passes.
func (c *filteredConn) ReadMsgUDP(b, oob []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	for {
		n, oobn, flags, addr, err = c.UDPConn.ReadMsgUDP(b, oob)
		if err != nil || c.f.check(b[:n], udpSource(addr), c.now(), c.loaded()) == passed {
			return n, oobn, flags, addr, err
		}
	}
}

// ReadFrom reads the next datagram the filter passes.
func (c *filteredConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.UDPConn.ReadFrom(b)
		if err != nil || c.f.check(b[:n], udpSource(addr), c.now(), c.loaded()) == passed {
			return n, addr, err
		}
	}
}
