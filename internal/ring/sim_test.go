package ring_test

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// TestInSimulator runs the ring in the project's simulator (sim, over
// PlanetLab slice 1, with 5 ms jitter and 1% loss throughout) through
// PacketCore: 64 nodes join one by one, a quarter of them crash, and once
// the ring has healed every member knows its true predecessor and routes
// reach their true owner (or are lost to the loss, never misdelivered).
func TestInSimulator(t *testing.T) {
	sites, err := geo.PlanetLabSites(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Seed, cfg.Jitter, cfg.Loss = 3, 5*time.Millisecond, 0.01
	s, err := sim.New(cfg, sites)
	if err != nil {
		t.Fatal(err)
	}
	const n = 64
	r := rand.New(rand.NewPCG(3, 3))
	perm := r.Perm(sites.Len())
	nodes := make([]*ring.Node, n)
	delivered := map[uint64][]wire.NodeID{}
	var evs []ring.Event
	s.SetObserver(func(sim.Event) {
		for _, nd := range nodes {
			if nd == nil {
				continue
			}
			evs = nd.Events(evs[:0])
			for _, e := range evs {
				if e.Kind == ring.EventDelivered && len(e.Data) == 8 {
					id := binary.BigEndian.Uint64(e.Data)
					delivered[id] = append(delivered[id], nd.ID())
				}
			}
		}
	})
	for i := range n {
		id := wire.NodeID(i)
		nd, err := ring.New(ring.DefaultConfig(id, rand.New(rand.NewPCG(3, uint64(i)))))
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = nd
		if err := s.AddNode(id, sites.Name(perm[i]), ring.PacketCore{Node: nd}); err != nil {
			t.Fatal(err)
		}
		key := r.Uint64()
		at := time.Duration(i) * 100 * time.Millisecond
		if err := s.Schedule(at, func(now time.Duration) {
			if i == 0 {
				_ = nd.Create(now, key)
			} else {
				_ = nd.Join(now, wire.NodeID(r.IntN(i)), key)
			}
			_ = s.Flush(id)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Run(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	for _, i := range r.Perm(n)[:n/4] {
		if err := s.Crash(wire.NodeID(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RunFor(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	// Truth: the live members' keys.
	type member struct {
		key uint64
		id  wire.NodeID
	}
	var live []member
	for i, nd := range nodes {
		if s.Up(wire.NodeID(i)) && nd.Member() {
			live = append(live, member{nd.Key(), nd.ID()})
		}
	}
	slices.SortFunc(live, func(a, b member) int {
		if a.key < b.key {
			return -1
		}
		return 1
	})
	if len(live) < n*3/4-2 {
		t.Fatalf("%d live members, want about %d", len(live), n*3/4)
	}
	for i, m := range live {
		p, ok := nodes[m.id].Pred()
		if want := live[(i-1+len(live))%len(live)]; !ok || p.ID != want.id {
			t.Fatalf("node %d: predecessor %v %v, want %d", m.id, p, ok, want.id)
		}
	}
	owner := func(k uint64) wire.NodeID {
		i, _ := slices.BinarySearchFunc(live, k, func(m member, k uint64) int {
			if m.key < k {
				return -1
			}
			if m.key > k {
				return 1
			}
			return 0
		})
		return live[i%len(live)].id
	}
	want := map[uint64]wire.NodeID{}
	for msg := range uint64(300) {
		from := live[r.IntN(len(live))].id
		k := r.Uint64()
		want[msg] = owner(k)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], msg)
		if err := s.Schedule(s.Now()+time.Duration(msg)*10*time.Millisecond, func(now time.Duration) {
			_ = nodes[from].Route(now, k, wire.ClassDiscovery, b[:])
			_ = s.Flush(from)
		}); err != nil {
			t.Fatal(err)
		}
	}
	// Delivery under 1% loss is best effort; the loss is on for the whole
	// run, so count, and require nearly all.
	if err := s.RunFor(15 * time.Second); err != nil {
		t.Fatal(err)
	}
	ok, wrong := 0, 0
	for msg, w := range want {
		d := delivered[msg]
		switch {
		case len(d) == 1 && d[0] == w:
			ok++
		case len(d) > 0:
			wrong++
		}
	}
	t.Logf("in sim: %d live of %d after crashes; %d of %d routes delivered at their owner, %d elsewhere (1%% loss)",
		len(live), n, ok, len(want), wrong)
	if wrong > 0 || ok < len(want)*95/100 {
		t.Fatalf("%d of %d routes reached their owner and %d another node", ok, len(want), wrong)
	}
}
