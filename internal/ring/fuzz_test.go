package ring_test

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

// FuzzNodeStep drives one node (a ring creator, or a joiner) with an
// arbitrary sequence of frames from arbitrary senders, interleaved with
// ticks and API calls: it must never panic, and its successor list must
// stay well formed (no self, no repeats, strictly clockwise, at most r).
func FuzzNodeStep(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	var seeds [][]byte
	add := func(from byte, b []byte) {
		fr, _ := wire.OpenFrames(append([]byte{wire.Version}, b...))
		typ, body, _ := fr.Next()
		seeds = append(seeds, append([]byte{from, byte(typ), byte(len(body))}, body...))
	}
	add(2, wire.AppendRingRoute(nil, &wire.RingRoute{Kind: wire.RouteJoin, Origin: 2, Key: 1 << 62, Hops: 1}))
	add(3, wire.AppendRingStabilize(nil, &wire.RingStabilize{Key: 1 << 63}))
	add(3, wire.AppendRingNeighbours(nil, wire.TypeRingStabilizeReply, &wire.RingNeighbours{Key: 1 << 63, HasPred: true,
		Pred: ring.Peer{ID: 1, Key: 5}, Succs: []ring.Peer{{ID: 4, Key: 1 << 60}}}))
	add(4, wire.AppendRingNeighbours(nil, wire.TypeRingLeave, &wire.RingNeighbours{Key: 1 << 60, Succs: []ring.Peer{{ID: 5, Key: 9}}}))
	add(2, wire.AppendRingProbe(nil, wire.TypeRingPing, &wire.RingProbe{Seq: 1, Key: 1 << 62, Load: 5000}))
	add(2, wire.AppendRingOwner(nil, &wire.RingOwner{Tag: 1, Key: 7, Owner: ring.Peer{ID: 2, Key: 8}, Lo: 3}))
	add(2, wire.AppendRingSplit(nil, wire.TypeRingSplit, &wire.RingSplit{Load: 1}))
	add(0, wire.AppendRingJoinReply(nil, &wire.RingJoinReply{Accepted: true, Key: 77, Pred: ring.Peer{ID: 9, Key: 3},
		Succs: []ring.Peer{{ID: 10, Key: 100}}}))
	for i := range seeds {
		f.Add(seeds[i], r.Uint64())
	}
	f.Add([]byte{}, uint64(0))
	f.Fuzz(func(t *testing.T, script []byte, seed uint64) {
		cfg := ring.DefaultConfig(1, rand.New(rand.NewPCG(seed, 0)))
		cfg.Balance = true
		n, err := ring.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if seed%2 == 0 {
			_ = n.Create(0, seed)
		} else {
			_ = n.Join(0, 0, seed)
		}
		now := time.Duration(0)
		var pkts []wire.Packet
		var evs []ring.Event
		for len(script) >= 3 {
			from, typ, l := wire.NodeID(script[0]%8), wire.Type(script[1]), int(script[2])
			script = script[3:]
			l = min(l, len(script))
			body := script[:l]
			script = script[l:]
			now += time.Duration(from) * 100 * time.Millisecond
			switch typ % 16 {
			case 0:
				n.Tick(now)
			case 1:
				_ = n.Route(now, binary.LittleEndian.Uint64(append(body, make([]byte, 8)...)), wire.ClassDiscovery, body)
			case 2:
				n.AddLoad(now, uint64(l)<<56, l)
			default:
				_ = n.Step(now, from, wire.TypeRingRoute+(typ%16-3)%10, body)
			}
			if err := wellFormed(n); err != nil {
				t.Fatal(err)
			}
			pkts = n.Drain(pkts[:0])
			evs = n.Events(evs[:0])
		}
		n.Tick(now + time.Minute)
		if err := wellFormed(n); err != nil {
			t.Fatal(err)
		}
	})
}

func wellFormed(n *ring.Node) error {
	succs := n.Succs(nil)
	if len(succs) > n.Config().Succs {
		return fmt.Errorf("%d successors", len(succs))
	}
	seen := map[wire.NodeID]bool{}
	prev := uint64(0)
	for _, s := range succs {
		d := s.Key - n.Key()
		if s.ID == n.ID() || seen[s.ID] || d == 0 || d <= prev && prev != 0 {
			return fmt.Errorf("successors %v of node at %#x", succs, n.Key())
		}
		seen[s.ID], prev = true, d
	}
	return nil
}
