package localcluster

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestClusterPinnedFailover: the node side of an instance overflowed to
// a player host, with real processes. Node 1's objects (the instance)
// get node 3 as their preferred backup on every node (POST
// /admin/prefer-backup), and move to node 2 (the host) through node 3
// (the replicated host: a migrated primary's first backup is the node it
// came from), by POST /admin/migrate-region; each is then a primary on
// node 2 backed up on node 3. kill -9 of node 2: node 3 promotes every
// one within 1.5 s. Takes about 15 s.
func TestClusterPinnedFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes for about 15 s")
	}
	c := startFailoverCluster(t)
	defer stopAndLog(t, c)
	ids := c.IDs()
	host, rep := 1, 2 // node 2 hosts, node 3 keeps the replica
	snaps, err := c.Worlds()
	if err != nil {
		t.Fatal(err)
	}
	var inst []uint64 // node 1's lasting objects: the instance
	for id, p := range where(snaps) {
		if slices.Contains(p.primaries, ids[0]) {
			inst = append(inst, id)
		}
	}
	if len(inst) == 0 {
		t.Fatal("node 1 holds no lasting object")
	}
	post := func(i int, path string) { adminPost(t, c, i, path) }
	for i := range 3 {
		post(i, fmt.Sprintf("/admin/prefer-backup?%s&nodes=%d", wholeWorld, ids[rep]))
	}
	post(0, fmt.Sprintf("/admin/migrate-region?%s&node=%d", wholeWorld, ids[rep]))
	waitUntil(t, c, 10*time.Second, "node 1's objects on node 3", func(snaps []*live.WorldSnapshot) string {
		now := where(snaps)
		for _, id := range inst {
			if p := now[id]; p == nil || !slices.Equal(p.primaries, []wire.NodeID{ids[rep]}) {
				return fmt.Sprintf("object %v: %+v", world.ObjectID(id), p)
			}
		}
		return ""
	})
	post(rep, fmt.Sprintf("/admin/migrate-region?%s&node=%d", wholeWorld, ids[host]))
	waitUntil(t, c, 10*time.Second, "node 1's objects on node 2, backed up on node 3", func(snaps []*live.WorldSnapshot) string {
		now := where(snaps)
		for _, id := range inst {
			if p := now[id]; p == nil || !slices.Equal(p.primaries, []wire.NodeID{ids[host]}) || p.backup != ids[rep] {
				return fmt.Sprintf("object %v: %+v", world.ObjectID(id), p)
			}
		}
		return ""
	})
	killAt := time.Since(c.Epoch())
	if err := c.Signal(host, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Done(host)
	waitUntil(t, c, 10*time.Second, "the instance's objects are primaries on node 3", func(snaps []*live.WorldSnapshot) string {
		now := where(snaps)
		for _, id := range inst {
			if p := now[id]; p == nil || !slices.Equal(p.primaries, []wire.NodeID{ids[rep]}) {
				return fmt.Sprintf("object %v: %+v", world.ObjectID(id), p)
			}
		}
		return ""
	})
	a, err := c.Authority(rep)
	if err != nil {
		t.Fatal(err)
	}
	var lat []time.Duration
	for _, e := range a.Events {
		if e.Kind == "promoted" && wire.NodeID(e.Node) == ids[host] && slices.Contains(inst, e.ID) {
			lat = append(lat, time.Duration(e.AtNs)-killAt)
		}
	}
	if len(lat) != len(inst) {
		t.Fatalf("node 3 logged %d promotions of the instance's %d objects", len(lat), len(inst))
	}
	slices.Sort(lat)
	for _, l := range lat {
		if l < 0 || l > 1500*time.Millisecond {
			t.Errorf("a promotion %v after the kill: want within 1.5 s", l)
		}
	}
	t.Logf("kill -9 of the player host: %d objects promoted on the replicated host, p50 %v, max %v",
		len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
}
