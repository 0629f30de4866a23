package live

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
)

// longPacket builds a datagram of size bytes starting with a long header:
// typ in QUIC v1's numbering (0 Initial, 1 0-RTT, 2 Handshake, 3 Retry,
// rotated for v2), connection IDs of dcid and scid bytes, and for an
// Initial a token of token bytes.
func longPacket(version uint32, typ uint8, dcid []byte, scid, token, size int) []byte {
	if version == quicV2 {
		typ = (typ + 1) & 3
	}
	b := []byte{0xc0 | typ<<4, byte(version >> 24), byte(version >> 16), byte(version >> 8), byte(version), byte(len(dcid))}
	b = append(b, dcid...)
	b = append(b, byte(scid))
	b = append(b, bytes.Repeat([]byte{0x5}, scid)...)
	if typ == 0 && version != quicV2 || typ == 1 && version == quicV2 {
		b = append(b, 0x40|byte(token>>8), byte(token)) // a two-byte variable-length integer
		b = append(b, bytes.Repeat([]byte{0x7}, token)...)
	}
	for len(b) < size {
		b = append(b, 0xee)
	}
	return b
}

// testCIDs is the connection ID codec of the filters under test.
var testCIDs = newCIDCodec([16]byte{1, 2, 3})

// ours returns a connection ID testCIDs issued.
func ours() []byte {
	id, err := testCIDs.GenerateConnectionID()
	if err != nil {
		panic(err)
	}
	return id.Bytes()
}

// other returns a connection ID of n bytes that testCIDs did not issue.
func other(n int) []byte { return bytes.Repeat([]byte{0xd}, n) }

// shortPacket returns a short-header datagram of size bytes for dcid.
func shortPacket(dcid []byte, size int) []byte {
	b := append([]byte{0x41}, dcid...)
	for len(b) < size {
		b = append(b, 0xee)
	}
	return b
}

func TestCIDCodec(t *testing.T) {
	for range 100 {
		id := ours()
		if len(id) != ourCIDLen || !testCIDs.ours(id) {
			t.Fatalf("%x: not taken for one of ours", id)
		}
		for i := range id {
			forged := bytes.Clone(id)
			forged[i] ^= 1 << (i % 8)
			if testCIDs.ours(forged) {
				t.Fatalf("%x (byte %d changed): taken for one of ours", forged, i)
			}
		}
		if newCIDCodec([16]byte{9}).ours(id) || testCIDs.ours(id[:ourCIDLen-1]) || testCIDs.ours(append(id, 0)) {
			t.Fatalf("%x: taken for ours under another key or at another length", id)
		}
	}
}

func TestPacketFilterClassify(t *testing.T) {
	lim, err := HandshakeLimits{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	src := netip.MustParseAddr("10.0.0.1")
	now := time.Unix(1000, 0)
	for _, c := range []struct {
		name   string
		p      []byte
		loaded dropReason // the verdict under load, for a source with tokens
		idle   dropReason
	}{
		{"empty", nil, dropNotQUIC, dropNotQUIC},
		{"no fixed bit", []byte{0x00, 1, 2, 3}, dropNotQUIC, dropNotQUIC},
		{"short header for us", shortPacket(ours(), 60), passed, passed},
		{"short header for no one", shortPacket(other(ourCIDLen), 60), dropStray, dropStray},
		{"short header, cut", []byte{0x40, 1, 2}, dropStray, dropStray},
		{"short header of a stateless reset's size", shortPacket(other(ourCIDLen), 42), passed, passed},
		{"short header under a stateless reset's size", shortPacket(other(ourCIDLen), 20), dropStray, dropStray},
		{"cut long header", []byte{0xc0, 0, 0, 0, 1}, dropMalformed, dropMalformed},
		{"dcid over 20", append([]byte{0xc0, 0, 0, 0, 1, 21}, make([]byte, 40)...), dropMalformed, dropMalformed},
		{"dcid past the end", []byte{0xc0, 0, 0, 0, 1, 9, 1, 2}, dropMalformed, dropMalformed},
		{"scid over 20", append([]byte{0xc0, 0, 0, 0, 1, 0, 30}, make([]byte, 40)...), dropMalformed, dropMalformed},
		{"initial without token length", []byte{0xc0, 0, 0, 0, 1, 0, 0}, dropMalformed, dropMalformed},
		{"initial, token length cut", []byte{0xc0, 0, 0, 0, 1, 0, 0, 0x80, 0}, dropMalformed, dropMalformed},
		{"version negotiation", longPacket(0, 0, ours(), 8, 0, 60), passed, passed},
		{"version negotiation for no one", longPacket(0, 0, other(8), 8, 0, 60), dropStray, dropStray},
		{"unknown version, small", longPacket(0xbabababa, 0, other(8), 8, 0, 600), dropSmall, dropSmall},
		{"unknown version, client size", longPacket(0xbabababa, 0, other(8), 8, 0, 1200), passed, passed},
		{"0-RTT", longPacket(quicV1, 1, other(8), 8, 0, 1200), dropZeroRTT, dropZeroRTT},
		{"0-RTT v2", longPacket(quicV2, 1, other(8), 8, 0, 1200), dropZeroRTT, dropZeroRTT},
		{"handshake for us", longPacket(quicV1, 2, ours(), 8, 0, 100), passed, passed},
		{"handshake for no one", longPacket(quicV1, 2, other(ourCIDLen), 8, 0, 100), dropStray, dropStray},
		{"retry for us", longPacket(quicV1, 3, ours(), 8, 0, 100), passed, passed},
		{"retry v2 for no one", longPacket(quicV2, 3, other(12), 8, 0, 100), dropStray, dropStray},
		{"initial of a handshake, small (a server's ACK)", longPacket(quicV1, 0, ours(), 8, 0, 100), passed, passed},
		{"initial, connection ID too short for a new one", longPacket(quicV1, 0, other(7), 8, 0, 1200), dropStray, dropStray},
		{"new initial, small", longPacket(quicV1, 0, other(8), 8, 0, 1199), dropSmall, dropSmall},
		{"new initial", longPacket(quicV1, 0, other(8), 8, 0, 1200), passed, passed},
		{"new initial with a forged connection ID of our length", longPacket(quicV1, 0, other(ourCIDLen), 8, 0, 1200), passed, passed},
		{"new initial v2", longPacket(quicV2, 0, other(20), 0, 0, 1300), passed, passed},
		{"initial with token, small", longPacket(quicV1, 0, ours(), 8, 40, 900), dropSmall, dropSmall},
		{"initial with token", longPacket(quicV1, 0, ours(), 8, 40, 1200), passed, passed},
	} {
		for _, loaded := range []bool{false, true} {
			f := newPacketFilter(lim, testCIDs)
			want := c.idle
			if loaded {
				want = c.loaded
			}
			if got := f.check(c.p, src, now, loaded); got != want {
				t.Errorf("%s (loaded %v): %v, want %v", c.name, loaded, got, want)
			}
		}
	}
}

// TestPacketFilterRates checks the rates under load and that they end
// loadHold after the load.
func TestPacketFilterRates(t *testing.T) {
	lim, _ := HandshakeLimits{AttemptRate: 10, AttemptBurst: 5, AttemptRateAll: 100, AttemptBurstAll: 8, PerSourceRate: 1, PerSourceBurst: 2}.withDefaults()
	f := newPacketFilter(lim, testCIDs)
	now := time.Unix(1000, 0)
	a, b := netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2")
	initial := longPacket(quicV1, 0, other(8), 8, 0, 1200)
	passes := func(n int, src netip.Addr, p []byte, loaded bool) (k int) {
		for range n {
			if f.check(p, src, now, loaded) == passed {
				k++
			}
		}
		return k
	}
	if k := passes(50, a, initial, false); k != 50 {
		t.Fatalf("not under load: %d of 50 attempts passed", k)
	}
	if k := passes(50, a, initial, true); k != 5 {
		t.Fatalf("under load: %d of 50 attempts from one source passed, want its burst 5", k)
	}
	if k := passes(50, b, initial, true); k != 3 {
		t.Fatalf("under load: %d of 50 attempts from a second source passed, want the 3 left of the burst of all", k)
	}
	if k := passes(5, a, longPacket(quicV1, 0, ours(), 8, 30, 1200), true); k != 2 {
		t.Fatalf("under load: %d of 5 Initials with a token passed, want the per-source burst 2", k)
	}
	if k := passes(5, a, longPacket(quicV1, 2, ours(), 8, 0, 100), true); k != 5 {
		t.Fatalf("under load: %d of 5 Handshake packets passed, want all", k)
	}
	now = now.Add(loadHold - time.Millisecond) // the load ended as the last packets came in
	if k := passes(50, a, initial, false); k != 5 {
		t.Fatalf("within the hold after the load: %d of 50 passed, want 5 (the source's burst again)", k)
	}
	now = now.Add(2 * time.Millisecond)
	if k := passes(50, a, initial, false); k != 50 {
		t.Fatalf("after the hold: %d of 50 passed, want all", k)
	}
	// a: 45 beyond its burst, twice; b: 45 beyond its burst, 2 beyond
	// the burst of all; 3 Initials with a token.
	want := map[string]int64{"source_rate": 45 + 45 + 45 + 3, "total_rate": 2}
	if got := f.snapshot(); len(got) != len(want) || got["source_rate"] != want["source_rate"] || got["total_rate"] != want["total_rate"] {
		t.Fatalf("counted %v, want %v", got, want)
	}
}

// randomPacket returns a datagram of one of the kinds the filter tells
// apart, or random bytes.
func randomPacket(r *rand.Rand) []byte {
	versions := []uint32{quicV1, quicV2, 0, 0xfaceb00c}
	v := versions[r.IntN(len(versions))]
	dcid := [][]byte{ours(), other(8), other(ourCIDLen), other(20), other(4)}[r.IntN(5)]
	size := []int{50, 1199, 1200, 1350}[r.IntN(4)]
	switch r.IntN(6) {
	case 0:
		b := make([]byte, r.IntN(1300))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	case 1:
		return shortPacket(dcid, r.IntN(1300))
	case 2:
		return longPacket(v, 0, dcid, r.IntN(21), 0, size)
	case 3:
		return longPacket(v, 0, dcid, r.IntN(21), 1+r.IntN(100), size)
	default:
		return longPacket(v, uint8(r.IntN(4)), dcid, r.IntN(21), 0, size)
	}
}

// TestPacketFilterRandom feeds seeded random datagrams from a few sources
// through a filter, with the load switching on and off and time moving on
// by random steps, and checks: the same seed gives the same verdicts; no
// connection attempt is refused for a rate unless the listener was under
// load within loadHold; under load, the attempts without a token passed
// from a source and from all stay within the bursts plus the rates times
// the time since the first of them; what is dropped for anything but a rate
// does not depend on the load, the time or the past.
func TestPacketFilterRandom(t *testing.T) {
	run := func(seed uint64) []dropReason {
		r := rand.New(rand.NewPCG(seed, 7))
		lim, err := HandshakeLimits{AttemptRate: 1 + 50*r.Float64(), AttemptBurst: 1 + float64(r.IntN(20)),
			AttemptRateAll: 1 + 500*r.Float64(), AttemptBurstAll: 1 + float64(r.IntN(50)),
			PerSourceRate: 1 + 50*r.Float64(), PerSourceBurst: 1 + float64(r.IntN(20))}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		f := newPacketFilter(lim, testCIDs)
		now := time.Unix(0, 0).Add(time.Duration(r.Int64N(int64(time.Hour))))
		var lastLoad time.Time
		loaded := false
		type count struct {
			first time.Time
			n     int
		}
		bySource := map[netip.Addr]*count{}
		var all *count
		var out []dropReason
		for step := range 3000 {
			if r.IntN(200) == 0 {
				loaded = !loaded
			}
			now = now.Add(time.Duration(r.Int64N(int64(20 * time.Millisecond))))
			src := netip.AddrFrom4([4]byte{10, 0, 0, byte(r.IntN(5))})
			p := randomPacket(r)
			if loaded {
				lastLoad = now
			}
			v := f.check(p, src, now, loaded)
			out = append(out, v)
			limited := !lastLoad.IsZero() && now.Sub(lastLoad) < loadHold
			if v == dropSourceRate || v == dropTotalRate {
				if !limited {
					t.Fatalf("seed %d step %d: %v with no load for %v", seed, step, v, now.Sub(lastLoad))
				}
				continue
			}
			// A stray datagram of a stateless reset's size passes within
			// a rate of its own.
			resetSized := len(p) >= minReset && len(p) <= maxReset && p[0]&0xc0 == 0x40
			if fresh := newPacketFilter(lim, testCIDs).check(p, src, now, false); fresh != v && !(resetSized && v == dropStray) {
				t.Fatalf("seed %d step %d: %v, where a fresh filter not under load says %v", seed, step, v, fresh)
			}
			h, ok := parseLongHeader(p)
			ok = ok && p[0]&0x80 != 0 // a short header's bytes may parse as a long one's
			if v != passed || !limited || !ok || h.token || h.version == 0 || (h.version == quicV1 || h.version == quicV2) && (h.typ != 0 || testCIDs.ours(h.dcid)) {
				continue
			}
			c := bySource[src]
			if c == nil {
				c = &count{first: now}
				bySource[src] = c
			}
			if all == nil {
				all = &count{first: now}
			}
			c.n++
			all.n++
			if float64(c.n) > lim.AttemptBurst+lim.AttemptRate*now.Sub(c.first).Seconds()+1e-9 {
				t.Fatalf("seed %d step %d: %d attempts from %v passed in %v (burst %v, rate %v)", seed, step, c.n, src, now.Sub(c.first), lim.AttemptBurst, lim.AttemptRate)
			}
			if float64(all.n) > lim.AttemptBurstAll+lim.AttemptRateAll*now.Sub(all.first).Seconds()+1e-9 {
				t.Fatalf("seed %d step %d: %d attempts passed in %v (burst %v, rate %v)", seed, step, all.n, now.Sub(all.first), lim.AttemptBurstAll, lim.AttemptRateAll)
			}
		}
		return out
	}
	for seed := range uint64(40) {
		a, b := run(seed), run(seed)
		if len(a) != len(b) {
			t.Fatalf("seed %d: %d and %d verdicts", seed, len(a), len(b))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("seed %d step %d: %v, then %v with the same seed", seed, i, a[i], b[i])
			}
		}
	}
}

func TestWaitAfter(t *testing.T) {
	for _, c := range []struct {
		n, dropped int
		want       time.Duration
	}{
		{0, 0, 0}, {-1, 0, 0}, {1, 0, 0}, {1, 1, floodWait}, {4, 3, floodWait}, {4, 2, 0}, {64, 64, 0}, {63, 63, floodWait}, {10, 11, floodWait},
	} {
		if got := waitAfter(c.n, c.dropped, 64); got != c.want {
			t.Errorf("waitAfter(%d, %d, 64) = %v, want %v", c.n, c.dropped, got, c.want)
		}
	}
}

func TestHandshakeLimitsBad(t *testing.T) {
	for _, c := range []struct {
		lim  HandshakeLimits
		name string
	}{
		{HandshakeLimits{MaxInFlight: -1}, "MaxInFlight"},
		{HandshakeLimits{PerSourceRate: math.NaN()}, "PerSourceRate"},
		{HandshakeLimits{PerSourceBurst: 0.5}, "PerSourceBurst"},
		{HandshakeLimits{AttemptRate: -3}, "AttemptRate"},
		{HandshakeLimits{AttemptBurst: math.Inf(1)}, "AttemptBurst"},
		{HandshakeLimits{AttemptRateAll: math.Inf(-1)}, "AttemptRateAll"},
		{HandshakeLimits{AttemptBurstAll: 0.1}, "AttemptBurstAll"},
	} {
		g, err := NewHandshakeGuard(c.lim)
		if err == nil || g != nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("%+v: %v, %v; want an ErrConfig naming %s", c.lim, g, err, c.name)
		}
	}
	if _, err := NewHandshakeGuard(HandshakeLimits{RetryAbove: -1}); err != nil {
		t.Errorf("RetryAbove -1 (a Retry for every client): %v", err)
	}
}

// TestFilteredConn sends datagrams the filter drops and keeps to a
// filtered socket on loopback, more than a batch of quic-go's, and checks
// that ReadBatch hands over exactly the kept ones, whole, with their
// source, in order.
func TestFilteredConn(t *testing.T) {
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	g, err := NewHandshakeGuard(HandshakeLimits{})
	if err != nil {
		t.Fatal(err)
	}
	fc := newFilteredConn(udp, g.filter, g.loaded)
	tx, err := net.DialUDP("udp", nil, udp.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	var want [][]byte
	for i := range 40 {
		garbage := []byte{0x00, byte(i)}
		if _, err := tx.Write(garbage); err != nil {
			t.Fatal(err)
		}
		kept := shortPacket(g.cids.mustGenerate(), 30+i)
		if i%3 == 0 {
			kept = longPacket(quicV1, 0, other(8), 8, 0, 1200+i)
			kept[10] = byte(i)
		}
		if _, err := tx.Write(kept); err != nil {
			t.Fatal(err)
		}
		want = append(want, kept)
	}
	ms := make([]ipv4.Message, 8)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, readBufSize)}
		ms[i].OOB = make([]byte, 128)
	}
	_ = udp.SetReadDeadline(time.Now().Add(5 * time.Second))
	var got [][]byte
	for len(got) < len(want) {
		n, err := fc.ReadBatch(ms, 0)
		if err != nil {
			t.Fatalf("after %d datagrams: %v", len(got), err)
		}
		if n == 0 || n > len(ms) {
			t.Fatalf("ReadBatch returned %d of a batch of %d", n, len(ms))
		}
		for _, m := range ms[:n] {
			if a := m.Addr.(*net.UDPAddr); a.Port != tx.LocalAddr().(*net.UDPAddr).Port {
				t.Fatalf("source %v, want %v", a, tx.LocalAddr())
			}
			got = append(got, bytes.Clone(m.Buffers[0][:m.N]))
		}
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("datagram %d: %x…, want %x…", i, got[i][:min(8, len(got[i]))], want[i][:8])
		}
	}
	if d := g.Stats().Filtered["not_quic"]; d != 40 {
		t.Fatalf("counted %d datagrams that are not QUIC, want 40", d)
	}
	if _, err := tx.Write(shortPacket(g.cids.mustGenerate(), 50)); err != nil {
		t.Fatal(err)
	}
	if _, err := fc.ReadBatch([]ipv4.Message{{}}, 0); err == nil || !strings.Contains(err.Error(), "without buffers") {
		t.Fatalf("a batch without buffers: %v", err)
	}
}

// FuzzPacketFilter checks that any datagram gets a verdict without a
// panic, that a long header read as such names connection IDs of at most
// 20 bytes, and that the verdict does not depend on the filter's state
// when no rate applies.
func FuzzPacketFilter(f *testing.F) {
	for _, p := range [][]byte{
		nil, {0x40}, {0xc0, 0, 0, 0, 1, 8}, longPacket(quicV1, 0, other(8), 8, 0, 1200), longPacket(quicV2, 0, other(8), 8, 3, 1200),
		longPacket(quicV1, 2, ours(), 4, 0, 100), longPacket(0, 0, ours(), 4, 0, 40), {0xc0, 0, 0, 0, 1, 0, 0, 0xc0, 1, 2}, shortPacket(ours(), 40),
	} {
		f.Add(p, true)
	}
	lim, _ := HandshakeLimits{}.withDefaults()
	src := netip.MustParseAddr("10.1.2.3")
	f.Fuzz(func(t *testing.T, p []byte, loaded bool) {
		if h, ok := parseLongHeader(p); ok && len(h.dcid) > 20 {
			t.Fatalf("connection ID of %d bytes", len(h.dcid))
		}
		fl := newPacketFilter(lim, testCIDs)
		now := time.Unix(50, 0)
		v := fl.check(p, src, now, loaded)
		if v >= numReasons {
			t.Fatalf("verdict %d", v)
		}
		if v2 := fl.check(p, src, now, false); v != dropSourceRate && v != dropTotalRate && v2 != v {
			t.Fatalf("verdict %v, then %v", v, v2)
		}
	})
}

// mustGenerate returns a connection ID c issued.
func (c *cidCodec) mustGenerate() []byte {
	id, err := c.GenerateConnectionID()
	if err != nil {
		panic(err)
	}
	return id.Bytes()
}
