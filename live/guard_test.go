package live

import (
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"

	"github.com/quic-go/quic-go"
)

// TestHandshakeGuardRandom runs seeded random sequences of handshakes
// starting and ending through a HandshakeGuard, checking after every step
// that the places in flight never pass MaxInFlight and add up by source,
// that a refusal below MaxInFlight came from a source holding its share
// after half the places were taken, and that the endpoint's Admit is
// asked first.
func TestHandshakeGuardRandom(t *testing.T) {
	for seed := range uint64(200) {
		r := rand.New(rand.NewPCG(seed, 3))
		lim := HandshakeLimits{MaxInFlight: 2 + r.IntN(20), PerSourceRate: 1e9, PerSourceBurst: 1e9}
		g, err := NewHandshakeGuard(lim)
		if err != nil {
			t.Fatal(err)
		}
		unwanted := netip.AddrFrom4([4]byte{10, 9, 9, 9})
		g.Admit(func(a net.Addr) bool { return sourceIP(a) != unwanted })
		sources := 1 + r.IntN(8)
		var open []*handshake
		for step := range 400 {
			ip := netip.AddrFrom4([4]byte{10, 0, 0, byte(1 + r.IntN(sources))})
			if r.IntN(20) == 0 {
				ip = unwanted
			}
			if r.IntN(3) > 0 || len(open) == 0 {
				g.mu.Lock()
				n, held, nsrc := int(g.inFlight.Load()), g.bySource[ip], len(g.bySource)
				g.mu.Unlock()
				ctx, err := g.connContext(context.Background(), &quic.ClientInfo{RemoteAddr: &net.UDPAddr{IP: ip.AsSlice(), Port: 1}})
				switch {
				case ip == unwanted:
					if err == nil {
						t.Fatalf("seed %d step %d: a source the endpoint would close was let through", seed, step)
					}
				case err == nil:
					open = append(open, ctx.Value(handshakeKey{}).(*handshake))
				case n < lim.MaxInFlight:
					if held == 0 {
						nsrc++
					}
					half := lim.MaxInFlight / 2
					if n < half || held < max(1, half/nsrc) || held == n {
						t.Fatalf("seed %d step %d: refused with %d in flight of %d, %d from this source of %d sources", seed, step, n, lim.MaxInFlight, held, nsrc)
					}
				}
			} else {
				i := r.IntN(len(open))
				open[i].done()
				open[i].done() // idempotent
				open = append(open[:i], open[i+1:]...)
			}
			g.mu.Lock()
			total := 0
			for _, c := range g.bySource {
				total += c
			}
			if n := int(g.inFlight.Load()); total != n || n != len(open) || n > lim.MaxInFlight {
				t.Fatalf("seed %d step %d: %d in flight by source, %d counted, %d open, cap %d", seed, step, total, n, len(open), lim.MaxInFlight)
			}
			g.mu.Unlock()
		}
	}
}
