package node

import (
	"math"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestPreferBackupInput checks that PreferBackup refuses a bad box or
// order without a change, and that the latest preference holding a
// location wins.
func TestPreferBackupInput(t *testing.T) {
	c := newCluster(t, newGame(100), clusterOpts{nodes: 2, arch: "broadcast", latency: 30 * time.Millisecond, seed: 1})
	n := c.nodes[0]
	box := world.Box{Max: world.Point{10, 10}}
	if err := n.PreferBackup(box, []wire.NodeID{2}); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		box   world.Box
		order []wire.NodeID
	}{
		{world.Box{Min: world.Point{math.NaN()}, Max: world.Point{1}}, []wire.NodeID{2}},
		{box, []wire.NodeID{2, 0}},
		{box, make([]wire.NodeID, 17)},
	}
	for i, b := range bad {
		if err := n.PreferBackup(b.box, b.order); err == nil {
			t.Errorf("bad preference %d accepted", i)
		}
	}
	if got := n.PreferredBackups(world.Point{1, 1}); len(got) != 1 || got[0] != 2 {
		t.Fatalf("after refused preferences: %v, want [2]", got)
	}
	if err := n.PreferBackup(world.Box{Max: world.Point{3, 3}}, []wire.NodeID{7, 8}); err != nil {
		t.Fatal(err)
	}
	if got := n.PreferredBackups(world.Point{1, 1}); len(got) != 2 || got[0] != 7 {
		t.Fatalf("latest preference: %v, want [7 8]", got)
	}
	if err := n.PreferBackup(box, nil); err != nil {
		t.Fatal(err)
	}
	if got := n.PreferredBackups(world.Point{5, 5}); got != nil {
		t.Fatalf("removed preference: %v", got)
	}
}
