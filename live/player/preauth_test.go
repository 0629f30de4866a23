package player

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestDoor checks one endpoint's pre-auth limits: the per-source cap
// refuses at once, the global cap closes the oldest unauthenticated
// connection for a newcomer below its fair share and refuses one at it,
// the deadline closes the silent, and a connection that authenticated
// leaves the count.
func TestDoor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newDoor(Limits{MaxUnauth: 3, PerSource: 2, Deadline: 2 * time.Second})
		addr := func(ip string) net.Addr { return &net.UDPAddr{IP: net.ParseIP(ip), Port: 4000} }
		var closed [8]atomic.Bool
		enter := func(i int, ip string) (*pass, bool) { return d.enter(addr(ip), func() { closed[i].Store(true) }) }
		p0, ok0 := enter(0, "10.0.0.1")
		_, ok1 := enter(1, "10.0.0.1")
		_, ok2 := enter(2, "10.0.0.1")
		if !ok0 || !ok1 || ok2 {
			t.Fatalf("per-source cap: entered %v %v %v, want true true false", ok0, ok1, ok2)
		}
		p0.leave() // authenticated
		p0.leave() // idempotent
		if st := d.stats(); st.Unauth != 1 || st.Source != 1 {
			t.Fatalf("after a leave: %+v", st)
		}
		_, ok3 := enter(3, "10.0.0.2")
		p4, ok4 := enter(4, "10.0.0.3")
		if !ok3 || !ok4 || closed[1].Load() {
			t.Fatal("room left, yet refused or evicted")
		}
		// Full: the oldest unauthenticated one (1) is closed for the newcomer.
		_, ok := enter(5, "10.0.0.4")
		synctest.Wait()
		if !ok || !closed[1].Load() || closed[3].Load() {
			t.Fatalf("global cap: newcomer %v, oldest closed %v, next closed %v", ok, closed[1].Load(), closed[3].Load())
		}
		if st := d.stats(); st.Unauth != 3 || st.Evicted != 1 {
			t.Fatalf("after an eviction: %+v", st)
		}
		// 4 showed progress: newcomers evict 3 (older, idle), then 5 (idle),
		// not 4.
		p4.progress()
		enter(6, "10.0.0.5")
		// Full, and 10.0.0.5 holds its fair share (3 over 3 sources): a
		// second from it is closed at once, evicting no one.
		if _, ok := enter(7, "10.0.0.5"); ok || closed[5].Load() || d.stats().Crowded != 1 {
			t.Fatalf("a crowded source's newcomer: admitted %v, evicted %v, %+v", ok, closed[5].Load(), d.stats())
		}
		enter(7, "10.0.0.6")
		synctest.Wait()
		if !closed[3].Load() || !closed[5].Load() || closed[4].Load() {
			t.Fatalf("evictions: 3 %v, 5 %v, 4 %v; want the idle 3 and 5 closed, 4 kept", closed[3].Load(), closed[5].Load(), closed[4].Load())
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		for _, i := range []int{4, 6, 7} {
			if !closed[i].Load() {
				t.Errorf("connection %d outlived its deadline", i)
			}
		}
		if st := d.stats(); st.Unauth != 0 || st.Deadline != 3 || len(d.bySource) != 0 {
			t.Fatalf("after the deadline: %+v, %d sources", st, len(d.bySource))
		}
	})
}

// TestDoorRandom runs seeded random sequences of arrivals, progress,
// authentications and closes through a door, checking after every step
// that admits agreed with enter, that the caps hold, that a refusal at the
// global cap came from a source holding its fair share, and that a source
// holding every connection (players behind one proxy) is never locked out.
func TestDoorRandom(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 7))
		lim := Limits{MaxUnauth: 1 + r.IntN(12), PerSource: 1 + r.IntN(6), Deadline: time.Hour}
		if r.IntN(4) == 0 {
			lim.PerSource = lim.MaxUnauth // one source may hold all
		}
		d := newDoor(lim)
		sources := 1 + r.IntN(6)
		var open []*pass
		for step := range 300 {
			ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + r.IntN(sources))})
			src := &net.UDPAddr{IP: ip.AsSlice(), Port: 1}
			switch op := r.IntN(10); {
			case op < 6:
				d.mu.Lock()
				held, n, nsrc := d.bySource[ip], d.n, len(d.bySource)
				d.mu.Unlock()
				want := d.admits(src)
				p, ok := d.enter(src, func() {})
				if ok != want {
					t.Fatalf("seed %d step %d: admits %v, enter %v", seed, step, want, ok)
				}
				if !ok && held < lim.PerSource {
					if n < lim.MaxUnauth {
						t.Fatalf("seed %d step %d: refused below the global cap (%d of %d)", seed, step, n, lim.MaxUnauth)
					}
					if held == n {
						t.Fatalf("seed %d step %d: the only source locked out", seed, step)
					}
					if held == 0 {
						nsrc++ // the newcomer's source counts itself
					}
					if share := max(1, lim.MaxUnauth/nsrc); held < share {
						t.Fatalf("seed %d step %d: refused at %d held, below its share %d", seed, step, held, share)
					}
				}
				if ok {
					open = append(open, p)
				}
			case op < 8 && len(open) > 0:
				open[r.IntN(len(open))].progress()
			case len(open) > 0:
				i := r.IntN(len(open))
				open[i].leave()
				open = append(open[:i], open[i+1:]...)
			}
			d.mu.Lock()
			total := 0
			for a, c := range d.bySource {
				if c > lim.PerSource || c <= 0 {
					t.Fatalf("seed %d step %d: source %v holds %d (cap %d)", seed, step, a, c, lim.PerSource)
				}
				total += c
			}
			if total != d.n || d.n > lim.MaxUnauth {
				t.Fatalf("seed %d step %d: %d held by sources, n %d, cap %d", seed, step, total, d.n, lim.MaxUnauth)
			}
			d.mu.Unlock()
		}
		for _, p := range open {
			p.leave()
		}
	}
}

// FuzzFirstMessage: whatever a connection sends first (all it can make a
// node parse before its token verifies) is refused with an error that
// names the problem, or is a Join or Rejoin whose token then verifies or
// is refused; a refused token leaves no nonce behind, and nothing panics.
func FuzzFirstMessage(f *testing.F) {
	pub, priv := testKey(1)
	now := time.Unix(1_800_000_000, 0)
	tok, _ := IssueToken(priv, "alice", testAud, now, time.Minute, nil)
	f.Add(AppendJoin(nil, tok))
	f.Add(AppendRejoin(nil, Rejoin{Token: tok, Avatar: 5, Seq: 2}))
	f.Add(AppendInput(nil, 1, []byte{1}))
	f.Add([]byte{Version, byte(MsgJoin), 200})
	jwtTok := "eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJhdWQiOiJ0ZXN0LzEiLCJzdWIiOiJhbGljZSJ9.c2ln"
	f.Add(AppendJoin(nil, []byte(jwtTok)))
	f.Fuzz(func(t *testing.T, msg []byte) {
		v, err := NewVerifier(VerifierConfig{Key: pub, Audience: testAud, JWTKey: pub})
		if err != nil {
			t.Fatal(err)
		}
		tok, rejoin, err := parseFirst(msg)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("refusal %v does not wrap ErrMalformed", err)
			}
			return
		}
		verify := v.Verify
		if rejoin != nil {
			verify = v.VerifyRejoin
		}
		if _, err := verify(tok, now); err != nil {
			if !errors.Is(err, ErrToken) {
				t.Fatalf("token refusal %v does not wrap ErrToken", err)
			}
			if v.Nonces() != 0 {
				t.Fatal("a refused token left a nonce")
			}
		}
	})
}
