package node

import (
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// staleHint wraps a node's discovery and reports, once, one finding valid
// for 15 s: an object at a location it is about to leave (as an idle
// object's long-lived publication can be).
type staleHint struct {
	Discovery
	f locate.Found
}

func (s *staleHint) Tick(f *locate.Frame, out *locate.Out) {
	s.Discovery.Tick(f, out)
	if s.f.ID != 0 {
		h := s.f
		h.Until = f.Now + 15*time.Second
		out.Found = append(out.Found, h)
		s.f.ID = 0
	}
}

// TestHeldReplicaCorrectsCandidate: while a node holds a replica, its
// discovery candidate takes the replica's location, so a stale finding
// that keeps pointing into the view does not fetch the object again and
// again after the replica left the view and was dropped.
func TestHeldReplicaCorrectsCandidate(t *testing.T) {
	g := newGame(200)
	c := newCluster(t, g, clusterOpts{nodes: 2, arch: "directory", latency: 20 * time.Millisecond, seed: 1})
	_, err := c.node(1).Spawn(c.now, g.walker, func(st *world.State) {
		st.SetFloat(wX, 10)
		st.SetFloat(wY, 10)
		st.SetFloat(wRange, 10)
	})
	if err != nil {
		t.Fatal(err)
	}
	walker, err := c.node(2).Spawn(c.now, g.walker, func(st *world.State) {
		st.SetFloat(wX, 15)
		st.SetFloat(wY, 10)
		st.SetFloat(wVX, 10) // leaves the seer's view [0, 20] within 0.5 s
	})
	if err != nil {
		t.Fatal(err)
	}
	id := walker.State().ID()
	n1 := c.node(1)
	n1.disc = &staleHint{Discovery: n1.disc, f: locate.Found{ID: id, Node: 2, Loc: world.Point{15, 10}}}
	registers := 0
	c.sendHook = func(p wire.Packet) {
		if p.From != 1 || p.To != 2 {
			return
		}
		fr, err := wire.OpenFrames(p.Payload)
		if err != nil {
			t.Fatal(err)
		}
		for {
			typ, body, ok := fr.Next()
			if !ok {
				break
			}
			if typ == wire.TypeRegister {
				var ids wire.IDs
				if err := ids.Decode(body); err == nil {
					for _, x := range ids.IDs {
						if x == id {
							registers++
						}
					}
				}
			}
		}
	}
	c.run(300 * time.Millisecond)
	if _, ok := n1.Object(id); !ok {
		t.Fatalf("node 1 does not hold %v inside its view", id)
	}
	c.run(4 * time.Second) // the walker is 40 m away: dropped after the linger
	if _, ok := n1.Object(id); ok {
		t.Fatalf("node 1 still holds %v, 40 m out of its view", id)
	}
	before := registers
	c.run(8 * time.Second)
	if _, ok := n1.Object(id); ok || registers != before {
		t.Fatalf("node 1 fetched %v again on a stale finding (held %v, %d registrations after the drop)", id, ok, registers-before)
	}
}
