package node

import (
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// TestExpectFetches: a node told to expect a box (a handoff about to bring
// an object that sees it) gets replicas of what is in the box, though none
// of its primaries is interested, keeps them until the expectation ends,
// and lets them go after; bad expectations are refused and change nothing.
func TestExpectFetches(t *testing.T) {
	for _, arch := range []string{"directory", "broadcast"} {
		t.Run(arch, func(t *testing.T) {
			g := newGame(100)
			g.frozen = true
			c := newCluster(t, g, clusterOpts{nodes: 3, arch: arch, latency: 20 * time.Millisecond, seed: 1, margin: 2})
			spawn := func(n *Node, x, y, r float64) world.ObjectID {
				obj, err := n.Spawn(c.now, g.walker, func(st *world.State) {
					st.SetFloat(wX, x)
					st.SetFloat(wY, y)
					st.SetFloat(wRange, r)
				})
				if err != nil {
					t.Fatal(err)
				}
				return obj.State().ID()
			}
			spawn(c.node(2), 10, 10, 5)
			far := spawn(c.node(3), 80, 80, 0)
			c.run(2 * time.Second)
			if _, ok := c.node(2).Object(far); ok && arch != "broadcast" {
				t.Fatalf("node 2 holds %v before expecting it", far)
			}
			n := c.node(2)
			box := world.BoxAround(world.Point{80, 80}, world.Point{5, 5})
			if err := n.Expect(c.now, box, c.now); err == nil {
				t.Fatal("an expectation that ends now was taken")
			}
			if err := n.Expect(c.now, world.Box{Min: world.Point{5, 5}, Max: world.Point{1, 1}}, c.now+time.Second); err == nil {
				t.Fatal("an inverted box was taken")
			}
			if n.Expected() != 0 {
				t.Fatalf("refused expectations left %d boxes", n.Expected())
			}
			if err := n.Expect(c.now, box, c.now+5*time.Second); err != nil {
				t.Fatal(err)
			}
			c.run(4 * time.Second)
			if _, ok := n.Object(far); !ok {
				t.Fatalf("node 2 does not hold %v inside the box it expects", far)
			}
			c.run(12 * time.Second)
			if n.Expected() != 0 {
				t.Fatalf("%d boxes still expected after their end", n.Expected())
			}
			if _, ok := n.Object(far); ok && arch != "broadcast" {
				t.Fatalf("node 2 still holds %v long after the expectation ended", far)
			}
		})
	}
}

// TestExpectBounded: a node takes at most MaxExpected boxes at once.
func TestExpectBounded(t *testing.T) {
	g := newGame(100)
	c := newCluster(t, g, clusterOpts{nodes: 2, arch: "directory", latency: 20 * time.Millisecond, seed: 1})
	n := c.node(1)
	box := world.BoxAround(world.Point{50, 50}, world.Point{1, 1})
	for i := range MaxExpected {
		if err := n.Expect(c.now, box, c.now+time.Minute); err != nil {
			t.Fatalf("box %d: %v", i, err)
		}
	}
	if err := n.Expect(c.now, box, c.now+time.Minute); err == nil {
		t.Fatalf("box %d taken", MaxExpected+1)
	}
}
