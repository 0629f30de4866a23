package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// TestAnticipatedBoxesAreFetched: a walker that anticipates a box far from
// its interest gets replicas of what is in that box under every
// architecture, and the box is not part of its node's view; once it stops
// anticipating, the replicas go.
func TestAnticipatedBoxesAreFetched(t *testing.T) {
	for _, arch := range []string{"directory", "client-server", "broadcast"} {
		t.Run(arch, func(t *testing.T) {
			g := newGame(100)
			g.frozen = true
			c := newCluster(t, g, clusterOpts{nodes: 3, arch: arch, latency: 20 * time.Millisecond, seed: 1, margin: 2})
			spawn := func(n *Node, x, y, r float64) world.ObjectID {
				id, err := n.Spawn(c.now, g.walker, func(st *world.State) {
					st.SetFloat(wX, x)
					st.SetFloat(wY, y)
					st.SetFloat(wRange, r)
				})
				if err != nil {
					t.Fatal(err)
				}
				return id.State().ID()
			}
			seer := spawn(c.node(2), 10, 10, 5)
			far := spawn(c.node(3), 80, 80, 0)
			c.run(2 * time.Second)
			if _, ok := c.node(2).Object(far); ok && arch != "broadcast" {
				t.Fatalf("node 2 holds %v before anticipating it", far)
			}
			g.anticipate = map[world.ObjectID][]world.Box{seer: {world.BoxAround(world.Point{80, 80}, world.Point{5, 5})}}
			c.run(4 * time.Second)
			if _, ok := c.node(2).Object(far); !ok {
				t.Fatalf("node 2 does not hold %v inside the box its walker anticipates", far)
			}
			for _, b := range c.node(2).View(nil) {
				if b.Contains(world.Point{80, 80}, 2) {
					t.Fatalf("the anticipated box is in node 2's view %v", fmt.Sprint(c.node(2).View(nil)))
				}
			}
			g.anticipate = nil
			c.run(8 * time.Second)
			if _, ok := c.node(2).Object(far); ok && arch != "broadcast" {
				t.Fatalf("node 2 still holds %v 4 s after it stopped anticipating it", far)
			}
		})
	}
}
