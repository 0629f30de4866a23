package node

import (
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// spawnWalker spawns a walker on node n at (x, y), moving at vx along x,
// with an interest rng wide on each side (0: none).
func spawnWalker(t *testing.T, c *cluster, n wire.NodeID, x, y, vx, rng float64) world.Object {
	t.Helper()
	o, err := c.node(n).Spawn(c.now, c.g.walker, func(st *world.State) {
		st.SetFloat(wX, x)
		st.SetFloat(wY, y)
		st.SetFloat(wVX, vx)
		st.SetFloat(wRange, rng)
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

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
	spawnWalker(t, c, 1, 10, 10, 0, 10)
	walker := spawnWalker(t, c, 2, 15, 10, 10, 0) // leaves the seer's view [0, 20] within 0.5 s
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

// onceFound wraps a node's discovery and passes on only the first finding
// of one object: as if every later publication of it were lost or skipped
// this node.
type onceFound struct {
	Discovery
	id   world.ObjectID
	seen bool
}

func (o *onceFound) Tick(f *locate.Frame, out *locate.Out) {
	k := len(out.Found)
	o.Discovery.Tick(f, out)
	o.filter(out, k)
}

func (o *onceFound) Step(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *locate.Out) error {
	k := len(out.Found)
	err := o.Discovery.Step(now, from, t, body, out)
	o.filter(out, k)
	return err
}

func (o *onceFound) filter(out *locate.Out, k int) {
	kept := out.Found[:k]
	for _, f := range out.Found[k:] {
		if f.ID == o.id {
			if o.seen {
				continue
			}
			o.seen = true
		}
		kept = append(kept, f)
	}
	out.Found = kept
}

// TestHeldCandidateOutlivesPublication: a node that held a still object's
// replica for longer than the publication that found it lives, walks
// away, drops the replica and comes back, fetches the object again as soon
// as it is back in view, with no other publication of it: the candidate
// lived on from the replica's location while the replica stood for the
// publications that skip a holder. (Before, it waited for the object's
// next publication that did not skip it, up to an idle object's
// IdleEvery, 5 s, after the drop; here, none comes.)
func TestHeldCandidateOutlivesPublication(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		g := newGame(200)
		c := newCluster(t, g, clusterOpts{nodes: 2, arch: "directory", latency: 20 * time.Millisecond, seed: seed, idle: 5 * time.Second})
		x := 15 + float64(seed)
		item := spawnWalker(t, c, 2, x, 10, 0, 0)
		// Found by an idle publication, which lives 3 × IdleEvery.
		c.run(2 * time.Second)
		seer := spawnWalker(t, c, 1, 10, 10, 0, 10)
		sid, id := seer.State().ID(), item.State().ID()
		n1 := c.node(1)
		n1.disc, n1.cstep = &onceFound{Discovery: n1.disc, id: id}, nil
		walk := func(vx float64) {
			if err := n1.store.Write(sid, func(st *world.State) { st.SetFloat(wVX, vx) }); err != nil {
				t.Fatal(err)
			}
		}
		c.run(c.now + 20*time.Second) // held for longer than the publication's 15 s
		if _, ok := n1.Object(id); !ok {
			t.Fatalf("seed %d: node 1 does not hold the still object in its view", seed)
		}
		walk(20)
		c.run(c.now + 5*time.Second)
		if _, ok := n1.Object(id); ok {
			t.Fatalf("seed %d: node 1 still holds the still object 100 m out of its view", seed)
		}
		walk(-20)
		entered := time.Duration(-1)
		for end := c.now + 6*time.Second; c.now < end; {
			c.run(c.now + 10*time.Millisecond)
			info, _ := n1.Object(sid)
			if entered < 0 && info.State.Float(wX)-10 <= x {
				entered = c.now
			}
			if _, ok := n1.Object(id); ok {
				if entered < 0 || c.now-entered > 250*time.Millisecond {
					t.Fatalf("seed %d: node 1 held the still object again %v after it came back into view (at %v)", seed, c.now-entered, entered)
				}
				break
			}
		}
		if _, ok := n1.Object(id); !ok {
			t.Fatalf("seed %d: node 1 did not hold the still object again within 6 s (back in view at %v)", seed, entered)
		}
	}
}
