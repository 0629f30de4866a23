package live

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/overworld/overworld/live/player"
)

// siegeResult is what a siege measured.
type siegeResult struct {
	joins  []time.Duration // real players' dial-to-JoinOK times
	failed int             // real players refused or timed out
	// unauthenticated connections the attackers opened at each endpoint
	attackersWS, attackersQUIC int64
	// unauthenticated connections each endpoint held when the real
	// players began, and as many as it takes (or the attackers have)
	heldWS, heldQUIC, full int64
}

// siegeAttack holds idle connections open against a daemon's player
// endpoints until ctx ends: perEndpoint at each (WebSocket at wsAddr and
// QUIC at quicAddr, either may be empty), from source addresses 127.0.0.2
// up (perSource from each), each reopened 500 ms after the node closes it.
// It counts the connections it opened at each endpoint in ws and qc.
func siegeAttack(ctx context.Context, wsAddr, quicAddr string, perEndpoint, perSource int, ws, qc *atomic.Int64) {
	var wg sync.WaitGroup
	var trs []*quic.Transport
	defer func() { // the dials end with ctx, then their transports close
		<-ctx.Done()
		wg.Wait()
		for _, tr := range trs {
			tr.Close()
		}
	}()
	src := func(i int) net.IP { return net.IPv4(127, 0, byte(1+(2+i/perSource)/250), byte((2+i/perSource)%250)) }
	pause := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(500 * time.Millisecond):
			return true
		}
	}
	for i := range perEndpoint {
		if wsAddr == "" {
			break
		}
		wg.Go(func() { // WebSocket: a TCP connection that never sends a byte
			d := net.Dialer{LocalAddr: &net.TCPAddr{IP: src(i)}, Timeout: time.Second}
			buf := make([]byte, 64)
			for ctx.Err() == nil {
				if c, err := d.DialContext(ctx, "tcp", wsAddr); err == nil {
					ws.Add(1)
					stop := context.AfterFunc(ctx, func() { c.Close() })
					for {
						if _, err := c.Read(buf); err != nil {
							break
						}
					}
					stop()
					c.Close()
				}
				if !pause() {
					return
				}
			}
		})
	}
	if quicAddr == "" {
		return
	}
	qa, err := net.ResolveUDPAddr("udp", quicAddr)
	if err != nil {
		return
	}
	tlsConf := &tls.Config{InsecureSkipVerify: true, NextProtos: []string{player.ALPN}}
	for a := range (perEndpoint + perSource - 1) / perSource {
		udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: src(a * perSource)})
		if err != nil {
			continue
		}
		tr := &quic.Transport{Conn: udp}
		trs = append(trs, tr)
		for range min(perSource, perEndpoint-a*perSource) {
			wg.Go(func() { // QUIC: a handshake, then no stream
				for ctx.Err() == nil {
					dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
					c, err := tr.Dial(dctx, qa, tlsConf, player.QUICConfig())
					dcancel()

					if err == nil {
						qc.Add(1)
						select {
						case <-c.Context().Done():
						case <-ctx.Done():
							c.CloseWithError(0, "")
						}
					}
					if !pause() {
						return
					}
				}
			})
		}
	}
}

// siege runs siegeAttack against a daemon (startAttackers: in a child
// process of low priority when apart is set) while
// real players from 127.0.0.1 join one after the other (half over QUIC,
// half over WebSocket), each leaving once it has joined. It returns the
// real players' join times.
func siege(t *testing.T, cfg DaemonConfig, key func(p string) []byte, perEndpoint, perSource int, players int, apart bool) siegeResult {
	t.Helper()
	h := startHostile(t, cfg)
	defer h.shutdown(t)
	wsAddr, quicAddr := h.d.PlayerWSAddr().String(), h.d.PlayerQUICAddr().String()
	att := startAttackers(t, attackSpec{Seconds: 600, SiegeWS: wsAddr, SiegeQUIC: quicAddr, PerEndpoint: perEndpoint, PerSource: perSource}, apart)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Let the siege build up: both endpoints hold as many unauthenticated
	// connections as they take (or the attackers have), at least 2 s.
	start, full := time.Now(), min(perEndpoint, cfg.Players.MaxUnauth)
	for time.Since(start) < 30*time.Second {
		st := h.d.PlayerStats()
		if time.Since(start) >= 2*time.Second && st.QUICLimits.Unauth >= int64(full)*9/10 && st.WSLimits.Unauth >= int64(full)*9/10 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	st0 := h.d.PlayerStats()
	t.Logf("siege built up in %v: %d QUIC and %d WebSocket unauthenticated connections held (the endpoints take %d)",
		time.Since(start).Round(100*time.Millisecond), st0.QUICLimits.Unauth, st0.WSLimits.Unauth, full)
	res := siegeResult{heldWS: st0.WSLimits.Unauth, heldQUIC: st0.QUICLimits.Unauth, full: int64(full)}
	for k := range players {
		start := time.Now()
		jctx, jcancel := context.WithTimeout(ctx, 5*time.Second)
		var conn player.Conn
		var err error
		if k%2 == 0 {
			conn, err = player.DialQUIC(jctx, quicAddr, nil)
		} else {
			conn, err = player.DialWS(jctx, "ws://"+wsAddr+"/")
		}
		dialed := time.Since(start)
		if err == nil {
			if _, err = player.Join(jctx, conn, key(fmt.Sprintf("real-%d", k))); err == nil {
				res.joins = append(res.joins, time.Since(start))
				if time.Since(start) > 500*time.Millisecond {
					t.Logf("real player %d (quic %v): dialled in %v, joined in %v", k, k%2 == 0, dialed, time.Since(start))
				}
				_ = conn.WriteMessage(jctx, player.AppendLeave(nil))
			}
			conn.Close()
		}
		jcancel()
		if err != nil {
			res.failed++
			t.Logf("real player %d: %v", k, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := h.d.PlayerStats()
	hs := h.d.players.guard.Stats()
	ar := att.stop()
	res.attackersWS, res.attackersQUIC = ar.OpenedWS, ar.OpenedQUIC
	t.Logf("attackers opened %d WebSocket and %d QUIC connections in %.0f s; node: quic %+v, ws %+v; QUIC handshakes %+v",
		ar.OpenedWS, ar.OpenedQUIC, ar.Seconds, st.QUICLimits, st.WSLimits, hs)
	return res
}

func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// TestIdleSiege: idle unauthenticated connections held open at both
// player endpoints (each closed one reopened) do not keep real players
// out: they all join, p99 within 1 s. CI runs 150 per endpoint against
// limits of 64 (8 per address), the attackers in the test process;
// OVERWORLD_SIEGE=1 runs the figure of the docs, 1,000 per endpoint
// against the default limits, the attackers in a process of their own
// (startAttackers). It fails if the endpoints were not full of the
// attackers' connections when the real players came.
func TestIdleSiege(t *testing.T) {
	if testing.Short() {
		t.Skip("a loopback siege of a few seconds")
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
	n, perSource, players, apart := 150, 8, 20, false
	cfg.Players.MaxUnauth, cfg.Players.PerSource = 64, 8
	if os.Getenv("OVERWORLD_SIEGE") != "" {
		n, perSource, players, apart = 1000, 16, 100, true
		cfg.Players.MaxUnauth, cfg.Players.PerSource = 512, 16
	}
	key := func(p string) []byte {
		tok, err := player.IssueToken(priv, player.PlayerID(p), player.Audience{World: "main", Node: 1}, time.Now(), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	res := siege(t, cfg, key, n, perSource, players, apart)
	p50, p99 := quantile(res.joins, 0.5), quantile(res.joins, 0.99)
	t.Logf("%d idle connections per endpoint: %d real players joined, %d failed; join p50 %v, p99 %v",
		n, len(res.joins), res.failed, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	// Every real player joins; the p99 against its 1 s target depends on
	// the CPU the machine leaves the node beside the attackers, and is
	// reported.
	if res.failed > 0 {
		t.Errorf("%d of %d real players failed to join", res.failed, players)
	}
	t.Logf("target: join p99 within 1 s: %v", p99 <= time.Second)
	// The siege took place: both endpoints were full of the attackers'
	// connections when the real players came. (The attackers need not
	// open n: the node refuses an address at its share before the
	// handshake.)
	if res.heldWS < res.full*9/10 || res.heldQUIC < res.full*9/10 {
		t.Errorf("the endpoints held only %d WebSocket and %d QUIC connections of the attackers' (want ≥ 90%% of %d each): the siege did not take place",
			res.heldWS, res.heldQUIC, res.full)
	}
}
