package live

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
)

// initialShaped writes into b (1,200 bytes) a packet shaped like a QUIC v1
// Initial: long header, version 1, random connection IDs, no token, a
// length, and random bytes where the encrypted payload would be. A
// listener that does not check the source address starts a connection for
// each.
func initialShaped(b []byte, r *mrand.Rand) {
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	b[0] = 0xc0 | b[0]&0x0f
	binary.BigEndian.PutUint32(b[1:], 1)
	dcid := 8 + r.IntN(13)
	b[5] = byte(dcid)
	p := 6 + dcid
	scid := r.IntN(21)
	b[p] = byte(scid)
	p += 1 + scid
	b[p] = 0 // token length
	p++
	binary.BigEndian.PutUint16(b[p:], 0x4000|uint16(len(b)-p-2))
}

// flood sends rate packets a second to addr until ctx ends, from 32
// source addresses (127.0.0.2 to 127.0.0.33), half of them garbage and
// half QUIC-Initial-shaped. It returns the packets sent.
func flood(ctx context.Context, addr string, rate int) (sent int64) {
	ua, _ := net.ResolveUDPAddr("udp", addr)
	var socks []*net.UDPConn
	for i := range 32 {
		c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))})
		if err == nil {
			_ = c.SetWriteBuffer(1 << 20)
			socks = append(socks, c)
		}
	}
	defer func() {
		for _, c := range socks {
			c.Close()
		}
	}()
	r := mrand.New(mrand.NewPCG(uint64(rate), 1))
	b := make([]byte, 1200)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return sent
		case <-tick.C:
		}
		due := int64(time.Since(start).Seconds() * float64(rate))
		for ; sent < due; sent++ {
			if sent%1024 == 0 && ctx.Err() != nil { // a starved flooder catching up stops on time
				return sent
			}
			n := 1200
			if sent%2 == 0 {
				initialShaped(b, r)
			} else {
				n = 20 + r.IntN(1180)
				_, _ = rand.Read(b[:n])
			}
			_, _ = socks[int(sent)%len(socks)].WriteToUDP(b[:n], ua)
		}
	}
}

// tcpGarbage opens rate connections a second to addr, each sending a
// kilobyte of random bytes, until ctx ends.
func tcpGarbage(ctx context.Context, addr string, rate int) (sent int64) {
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	start := time.Now()
	b := make([]byte, 1024)
	_, _ = rand.Read(b)
	for {
		select {
		case <-ctx.Done():
			return sent
		case <-tick.C:
		}
		due := int64(time.Since(start).Seconds() * float64(rate))
		for ; sent < due && ctx.Err() == nil; sent++ {
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+sent%32))}, Timeout: 100 * time.Millisecond}
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				continue
			}
			_ = c.SetDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(b)
			c.Close()
		}
	}
}

// rssBytes returns this process's resident set size (Linux), or 0.
func rssBytes() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// floodPhase is what one phase of TestFlood measured.
type floodPhase struct {
	frameHz    float64 // frames a second over the phase
	minFrameHz float64 // in the slowest second
	echoP95    time.Duration
	maxRSS     int64
	maxGor     int
	sent       int64
	sentRate   float64       // packets and connections a second the attackers sent
	joinTook   time.Duration // a player who joined halfway through the flood took this long
	joinErr    error         // or failed to join
	cores      float64       // CPU the test process used, in cores (the node, its 8 players, and the attackers when in the process)
	load       string        // the machine's load averages at the phase's end (/proc/loadavg)
}

// loadAvg returns the first three fields of /proc/loadavg, or "unknown".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// TestFlood measures a daemon under floods: garbage and QUIC-Initial-
// shaped UDP packets to its node port and its QUIC player port, and
// connections sending garbage to its WebSocket port, while real players
// play over QUIC. It compares the frame rate, the players' echo p95, the
// peak RSS (of the test process) and the peak goroutines with the same
// run unloaded; it fails if the memory or the goroutines pass their bounds
// (150 MB, 1,000). CI floods for 3 s at 20,000 packets/s a port from the
// test process, and is skipped (after its checks) when the busy machine
// left the flooders under 90% of that rate; OVERWORLD_FLOOD=SECONDS
// floods for that long (the docs' figure: 60) from a process of its own
// (startAttackers), reports the rate the flooders reached, and fails
// under 90%.
func TestFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("a loopback flood of a few seconds")
	}
	secs, rate, apart := 3, 20000, false
	if v := os.Getenv("OVERWORLD_FLOOD"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("OVERWORLD_FLOOD=%q: want seconds", v)
		}
		secs, apart = n, true
	}
	dir := t.TempDir()
	_, ca := testNodeConfig(t, dir)
	if _, err := player.InitKeys(filepath.Join(dir, "coord"), nil); err != nil {
		t.Fatal(err)
	}
	priv, err := player.LoadPrivateKey(filepath.Join(dir, "coord"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := hostileConfig(t, dir, ca, 1)
	cfg.Listen.PlayerQUIC = "127.0.0.1:0"
	cfg.FrameRate = 10
	g := newTestGame()
	d, err := NewDaemon(cfg, Game{Registry: g.registry, Players: walkers{g}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var frames atomic.Int64
	d.AddHook(FrameHookFunc(func(time.Duration, *node.Node) { frames.Add(1) }))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

	const players = 8
	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	clients := make([]*player.Client, players)
	for i := range clients {
		tok, _ := player.IssueToken(priv, player.PlayerID(fmt.Sprintf("p%d", i)), player.Audience{World: "main", Node: 1}, time.Now(), time.Minute, nil)
		jctx, jc := context.WithTimeout(cctx, 5*time.Second)
		conn, err := player.DialQUIC(jctx, d.PlayerQUICAddr().String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if clients[i], err = player.Join(jctx, conn, tok); err != nil {
			t.Fatal(err)
		}
		jc()
		go func() { _ = clients[i].Run(cctx, oneByte{}, 0) }()
	}
	// join joins a new player over QUIC and leaves: how long a real
	// player takes to get in (the dial, its Retry under load, the join).
	var joined atomic.Int64
	join := func() (time.Duration, error) {
		start := time.Now()
		tok, err := player.IssueToken(priv, player.PlayerID(fmt.Sprintf("late%d", joined.Add(1))), player.Audience{World: "main", Node: 1}, time.Now(), time.Minute, nil)
		if err != nil {
			return 0, err
		}
		jctx, jc := context.WithTimeout(cctx, 10*time.Second)
		defer jc()
		conn, err := player.DialQUIC(jctx, d.PlayerQUICAddr().String(), nil)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		if _, err := player.Join(jctx, conn, tok); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	phase := func(name string, dur time.Duration, loaded bool) floodPhase {
		var ph floodPhase
		echo0 := make([]int, players)
		for i, c := range clients {
			echo0[i] = len(c.Stats().RTT)
		}
		fctx, fcancel := context.WithTimeout(context.Background(), dur)
		defer fcancel()
		var att *attackers
		if loaded {
			att = startAttackers(t, attackSpec{Seconds: dur.Seconds() + 5, UDP: []string{d.NodeAddr().String(), d.PlayerQUICAddr().String()},
				UDPRate: rate, TCP: d.PlayerWSAddr().String(), TCPRate: 500}, apart)
		}
		lateJoin := make(chan struct{})
		if loaded { // a player joins halfway through the flood
			go func() {
				defer close(lateJoin)
				select {
				case <-time.After(dur / 2):
				case <-fctx.Done():
				}
				ph.joinTook, ph.joinErr = join()
			}()
		} else {
			close(lateJoin)
		}
		f0, t0 := frames.Load(), time.Now()
		cpu0, _ := cpuTime()
		ph.minFrameHz = math.Inf(1)
		for prev, prevT := f0, t0; ; {
			select {
			case <-fctx.Done():
			case <-time.After(time.Second):
			}
			now, f := time.Now(), frames.Load()
			if now.Sub(prevT) > 900*time.Millisecond {
				ph.minFrameHz = min(ph.minFrameHz, float64(f-prev)/now.Sub(prevT).Seconds())
			}
			prev, prevT = f, now
			ph.maxRSS = max(ph.maxRSS, rssBytes())
			ph.maxGor = max(ph.maxGor, runtime.NumGoroutine())
			if fctx.Err() != nil {
				break
			}
		}
		<-lateJoin
		if att != nil {
			r := att.stop()
			ph.sent, ph.sentRate = r.Sent, float64(r.Sent)/max(r.Seconds, 1e-9)
		}
		ph.frameHz = float64(frames.Load()-f0) / time.Since(t0).Seconds()
		if cpu1, ok := cpuTime(); ok {
			ph.cores = (cpu1 - cpu0).Seconds() / time.Since(t0).Seconds()
		}
		ph.load = loadAvg()
		var rtts []time.Duration
		for i, c := range clients {
			rtts = append(rtts, c.Stats().RTT[echo0[i]:]...)
		}
		ph.echoP95 = quantile(rtts, 0.95)
		t.Logf("%s (%v): %.1f frames/s (slowest second %.1f), echo p95 %v over %d samples, peak RSS %.0f MB, peak goroutines %d, %d packets and connections sent (%.0f a second); the test process used %.2f cores; load average %s",
			name, dur, ph.frameHz, ph.minFrameHz, ph.echoP95.Round(time.Millisecond), len(rtts), float64(ph.maxRSS)/(1<<20), ph.maxGor, ph.sent, ph.sentRate, ph.cores, ph.load)
		if loaded {
			t.Logf("%s: a player joining halfway through took %v (error: %v)", name, ph.joinTook.Round(time.Millisecond), ph.joinErr)
		}
		return ph
	}
	base := phase("unloaded", time.Duration(min(secs, 10))*time.Second, false)
	hit := phase(fmt.Sprintf("flooded at %d packets/s a UDP port, 500 garbage connections/s", rate), time.Duration(secs)*time.Second, true)
	if hit.joinErr != nil {
		t.Errorf("a player could not join during the flood: %v", hit.joinErr)
	}
	guards := []*HandshakeGuard{d.net.Guard(), d.players.guard}
	stats := []GuardStats{guards[0].Stats(), guards[1].Stats()}
	if apart {
		// The same flood with the sockets' filters letting everything
		// through (quic-go answers every Initial with a Retry): the
		// baseline of the filter's effect, measured in the same run.
		for _, g := range guards {
			g.filter.off.Store(true)
		}
		off := phase("flooded the same, the sockets' filters off (baseline)", time.Duration(min(secs, 20))*time.Second, true)
		for _, g := range guards {
			g.filter.off.Store(false)
		}
		t.Logf("the filters on against off: the test process used %.2f against %.2f cores (%.2f×), echo p95 %v against %v",
			hit.cores, off.cores, hit.cores/max(off.cores, 1e-9), hit.echoP95.Round(time.Millisecond), off.echoP95.Round(time.Millisecond))
	}
	// The attack took place: the attackers reached most of their rate,
	// and each port saw most of what was sent to it (every packet the
	// node read is counted once: dropped by its socket's filter or by
	// quic-go, or answered with a Retry).
	want := float64(2*rate + 500)
	weak := hit.sentRate < 0.9*want
	if weak && apart {
		t.Errorf("the attackers sent %.0f packets and connections a second, want at least 90%% of %.0f: the figures above understate the attack", hit.sentRate, want)
	}
	for _, p := range []struct {
		name string
		st   GuardStats
	}{{"node port", stats[0]}, {"player port", stats[1]}} {
		var filtered, dropped int64
		for _, v := range p.st.Filtered {
			filtered += v
		}
		for _, v := range p.st.Dropped {
			dropped += v
		}
		sent := float64(rate) * hit.sentRate / want * float64(secs)
		t.Logf("%s: %d packets dropped by the socket's filter %v, %d by quic-go %v, %d Retry packets sent, %d handshakes refused (full %d, crowded %d, source rate %d, pre-auth %d)",
			p.name, filtered, p.st.Filtered, dropped, p.st.Dropped, p.st.Retries, p.st.Refused+p.st.Crowded+p.st.Rated+p.st.Unwanted, p.st.Refused, p.st.Crowded, p.st.Rated, p.st.Unwanted)
		if seen := float64(filtered + dropped + p.st.Retries); seen < sent/2 {
			t.Errorf("%s: the node counted %.0f packets of the about %.0f sent to it: the flood did not reach it", p.name, seen, sent)
		}
	}
	// Memory and goroutines are bounds the node must keep on any machine;
	// the frame rate and the echo depend on the CPU the machine leaves the
	// node beside the flooders, and are reported against their targets.
	if hit.maxRSS > 150<<20 || hit.maxGor >= 1000 {
		t.Errorf("under the flood: RSS %.0f MB (want < 150), goroutines %d (want < 1000)", float64(hit.maxRSS)/(1<<20), hit.maxGor)
	}
	t.Logf("targets: %.1f frames/s (≥ 9: %v), echo p95 %v against %v unloaded = %.2f× (≤ 2×: %v); the echo and the frame rate depend on the CPU the rest of the machine leaves the node (load average at the end %s)",
		hit.frameHz, hit.frameHz >= 9, hit.echoP95.Round(time.Millisecond), base.echoP95.Round(time.Millisecond),
		float64(hit.echoP95)/float64(max(base.echoP95, 1)), hit.echoP95 <= 2*base.echoP95, hit.load)
	if weak && !apart {
		// A machine busy with other tests cannot produce the flood; the
		// bounds above held, but the attack was weaker than it says.
		t.Skipf("the attackers reached only %.0f of %.0f packets and connections a second (load average %s): the flood was weaker than intended; OVERWORLD_FLOOD=SECONDS measures it on an idle machine",
			hit.sentRate, want, hit.load)
	}
}
