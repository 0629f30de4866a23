package node

import (
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// TestMigrationFenceKeepsACopy: a migration whose object has a backup
// other than the target makes the target the backup and asks the old
// backup to release its copy; the release must wait until the target
// holds a copy, so that a primary that crashes right after Migrate (before
// its next frame sends the target anything) is still failed over by the
// old backup.
func TestMigrationFenceKeepsACopy(t *testing.T) {
	g := newGame(100)
	c := newCluster(t, g, clusterOpts{nodes: 5, arch: "broadcast", latency: 20 * time.Millisecond, spread: 30 * time.Millisecond,
		seed: 7, failover: true})
	n1 := c.node(1)
	obj, err := n1.Spawn(c.now, g.walker, func(st *world.State) {
		st.SetFloat(wX, 50)
		st.SetFloat(wY, 50)
		st.SetInt(wHP, 100)
	})
	if err != nil {
		t.Fatal(err)
	}
	id := obj.State().ID()
	c.buf = n1.Drain(c.buf[:0])
	c.send(c.buf)
	c.run(c.now + 2*time.Second)
	old, ok := n1.BackupOf(id)
	if !ok {
		t.Fatal("no backup after 2 s")
	}
	target := old%5 + 1
	if target == 1 {
		target = 2
	}
	if _, err := n1.Migrate(c.now, id, target); err != nil {
		t.Fatal(err)
	}
	c.buf = n1.Drain(c.buf[:0])
	c.send(c.buf)
	c.crash(1)
	c.run(c.now + 4*time.Second)
	if !slices.Contains(c.liveIDs(), id) {
		t.Fatalf("object %v (backup %d, migrating to %d) has no primary after its node crashed", id, old, target)
	}
}
