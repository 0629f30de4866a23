package replica

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// TestExpiringMatchesSweep runs random sets and expiries on an expiring set
// and on a plain map swept whole (what the store did before), with times
// that mostly advance but sometimes go back, and requires the same
// contents after every operation.
func TestExpiringMatchesSweep(t *testing.T) {
	for seed := uint64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewPCG(seed, 23))
		x := newExpiring()
		ref := map[world.ObjectID]time.Duration{}
		now := time.Duration(0)
		ttl := time.Duration(1+r.IntN(50)) * time.Millisecond
		ids := 1 + r.IntN(200)
		back := r.IntN(4) == 0 // this seed lets times go back now and then
		for op := range 3000 {
			now += time.Duration(r.IntN(3)) * time.Millisecond
			if back && r.IntN(100) == 0 {
				now -= time.Duration(r.IntN(20)) * time.Millisecond
			}
			switch r.IntN(5) {
			case 0:
				x.expire(now, ttl)
				for id, at := range ref {
					if now-at > ttl {
						delete(ref, id)
					}
				}
			default:
				id := world.ObjectID(1 + r.IntN(ids))
				x.set(id, now)
				ref[id] = now
			}
			if x.len() != len(ref) {
				t.Fatalf("seed %d op %d: %d IDs held, want %d", seed, op, x.len(), len(ref))
			}
			for id, at := range ref {
				if got, ok := x.get(id); !ok || got != at {
					t.Fatalf("seed %d op %d: %v held at %v (%v), want %v", seed, op, id, got, ok, at)
				}
			}
			id := world.ObjectID(1 + r.IntN(ids))
			at, ok := x.get(id)
			if want, wok := ref[id]; ok != wok || at != want || x.has(id) != wok {
				t.Fatalf("seed %d op %d: get(%v) = %v, %v; want %v, %v", seed, op, id, at, ok, want, wok)
			}
		}
		if len(x.q)-x.head > 4*len(ref)+2048 {
			t.Fatalf("seed %d: %d queued for %d held", seed, len(x.q)-x.head, len(ref))
		}
	}
}
