package localcluster

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// The failover tests run a directory cluster of three player nodes with
// AI bots (4 each) and the rendezvous: four node processes. They follow
// the long-lived objects (bots and items; rockets come and go).

// lasting reports whether an object of kind k lives as long as the game.
func lasting(k string) bool { return k == "arena.bot" || k == "arena.item" }

// placed is where an object is: the nodes holding it as a primary, and
// the backup its primary names.
type placed struct {
	kind      string
	primaries []wire.NodeID
	backup    wire.NodeID
}

// where maps every lasting object of the snapshots to where it is.
func where(snaps []*live.WorldSnapshot) map[uint64]*placed {
	m := map[uint64]*placed{}
	for _, s := range snaps {
		if s == nil {
			continue
		}
		for _, o := range s.Objects {
			if !lasting(o.Kind) {
				continue
			}
			p := m[o.ID]
			if p == nil {
				p = &placed{kind: o.Kind}
				m[o.ID] = p
			}
			if o.Primary {
				p.primaries = append(p.primaries, wire.NodeID(s.Node))
				p.backup = wire.NodeID(o.Backup)
			}
		}
	}
	return m
}

// startFailoverCluster starts the four processes and waits until every
// player node has lasting primaries, each backed up on another node.
func startFailoverCluster(t *testing.T) *Cluster {
	t.Helper()
	cfg := testConfig(t, []string{"New York", "Frankfurt", "Tokyo"}, "directory", false)
	cfg.PlayersPerNode = 4
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(30 * time.Second); err != nil {
		c.Kill()
		t.Fatal(err)
	}
	ids := c.IDs()
	waitUntil(t, c, 30*time.Second, "every player node's lasting primaries backed up elsewhere", func(snaps []*live.WorldSnapshot) string {
		for i := range 3 {
			if snaps[i] == nil {
				return fmt.Sprintf("no snapshot from node %d", ids[i])
			}
			n := 0
			for _, o := range snaps[i].Objects {
				if o.Primary && lasting(o.Kind) {
					n++
					if o.Backup == 0 || wire.NodeID(o.Backup) == ids[i] {
						return fmt.Sprintf("node %d's %s %v has no backup", ids[i], o.Kind, world.ObjectID(o.ID))
					}
				}
			}
			if n == 0 {
				return fmt.Sprintf("node %d has no lasting primary", ids[i])
			}
		}
		return ""
	})
	return c
}

// waitUntil polls every node's world snapshot until cond returns "", or
// fails the test after d with cond's last reason.
func waitUntil(t *testing.T, c *Cluster, d time.Duration, what string, cond func([]*live.WorldSnapshot) string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		snaps, _ := c.Worlds()
		why := cond(snaps)
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, d, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterDrain: SIGTERM a node of a running cluster: it migrates every
// one of its primaries to the live player nodes (not the rendezvous) and
// exits; its drain report (last-run.json) says all were migrated, none
// lost; and every lasting object it held is then a primary on exactly one
// survivor, which logged its installation. Takes about 10 s.
func TestClusterDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes for about 10 s")
	}
	c := startFailoverCluster(t)
	defer stopAndLog(t, c)
	ids := c.IDs()
	const victim = 1 // node 2
	snaps, err := c.Worlds()
	if err != nil {
		t.Fatal(err)
	}
	var held []uint64
	for id, p := range where(snaps) {
		if slices.Contains(p.primaries, ids[victim]) {
			held = append(held, id)
		}
	}
	slices.Sort(held)
	termAt := time.Now()
	if err := c.Signal(victim, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done(victim):
	case <-time.After(15 * time.Second):
		t.Fatal("node 2 did not exit within 15 s of SIGTERM")
	}
	exited := time.Since(termAt)
	r, err := c.LastRun(victim)
	if err != nil {
		t.Fatal(err)
	}
	dr := r.Drain
	if dr.Primaries < len(held) || dr.Migrated+dr.Deleted != dr.Primaries || dr.NotMigrated != 0 || dr.Unconfirmed != 0 || dr.TimedOut || dr.Lost() != 0 {
		t.Errorf("drain report %+v: want all of at least %d primaries migrated", dr, len(held))
	}
	for to := range dr.ByTarget {
		if wire.NodeID(to) == c.Rendezvous() {
			t.Errorf("primaries migrated to the rendezvous: %v", dr.ByTarget)
		}
	}
	if len(dr.ByTarget) != 2 {
		t.Errorf("migrated to %v: want both other player nodes", dr.ByTarget)
	}
	// Every lasting object node 2 held is a primary on one survivor.
	var moved map[uint64]*placed
	waitUntil(t, c, 5*time.Second, "node 2's objects are primaries on the survivors", func(snaps []*live.WorldSnapshot) string {
		moved = where(snaps)
		for _, id := range held {
			p := moved[id]
			if p == nil || len(p.primaries) != 1 || p.primaries[0] == ids[victim] {
				return fmt.Sprintf("object %v: %+v", world.ObjectID(id), p)
			}
		}
		return ""
	})
	installs := 0
	for i := range ids {
		if i == victim {
			continue
		}
		a, err := c.Authority(i)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range a.Events {
			if e.Kind == "installed" && wire.NodeID(e.Node) == ids[victim] {
				installs++
			}
		}
	}
	if installs != dr.Migrated {
		t.Errorf("the survivors logged %d installations from node 2; its drain migrated %d", installs, dr.Migrated)
	}
	t.Logf("SIGTERM drain: %d primaries (%d lasting), %d migrated (%.0f%%) to %v, %d deleted meanwhile, in %.0f ms; exited %v after SIGTERM",
		dr.Primaries, len(held), dr.Migrated, 100*float64(dr.Migrated)/float64(max(1, dr.Primaries-dr.Deleted)), dr.ByTarget, dr.Deleted,
		dr.ElapsedMs, exited.Round(time.Millisecond))
}

// TestClusterKillFailover: kill -9 a node of a running cluster: every
// lasting object it held, each backed up on a live node, is promoted by
// its backup within 1.5 s of the kill (the promotions' times on the
// nodes' shared clock), and is then a primary on exactly that node. The
// test logs the promotion latencies' median and p99. Takes about 10 s.
func TestClusterKillFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes for about 10 s")
	}
	c := startFailoverCluster(t)
	defer stopAndLog(t, c)
	ids := c.IDs()
	const victim = 1 // node 2
	// The backups of node 2's lasting primaries, in the latest snapshot
	// before the kill (a backup changes only when a node dies).
	snaps, err := c.Worlds()
	if err != nil {
		t.Fatal(err)
	}
	backups := map[uint64]wire.NodeID{}
	for id, p := range where(snaps) {
		if slices.Contains(p.primaries, ids[victim]) {
			if p.backup == 0 || p.backup == ids[victim] {
				t.Fatalf("object %v has no backup", world.ObjectID(id))
			}
			backups[id] = p.backup
		}
	}
	killAt := time.Since(c.Epoch())
	if err := c.Signal(victim, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Done(victim)
	waitUntil(t, c, 10*time.Second, "node 2's objects are primaries on their backups", func(snaps []*live.WorldSnapshot) string {
		now := where(snaps)
		for id, b := range backups {
			if p := now[id]; p == nil || !slices.Equal(p.primaries, []wire.NodeID{b}) {
				return fmt.Sprintf("object %v, backed up on node %d: %+v", world.ObjectID(id), b, p)
			}
		}
		return ""
	})
	observed := time.Since(c.Epoch()) - killAt
	var lat []time.Duration
	declared := time.Duration(0)
	for i := range ids {
		if i == victim {
			continue
		}
		a, err := c.Authority(i)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range a.Events {
			if wire.NodeID(e.Node) != ids[victim] {
				continue
			}
			switch e.Kind {
			case "promoted":
				if b, ok := backups[e.ID]; ok {
					if b != ids[i] {
						t.Errorf("object %v promoted on node %d, backed up on node %d", world.ObjectID(e.ID), ids[i], b)
					}
					lat = append(lat, time.Duration(e.AtNs)-killAt)
				}
			case "dead":
				if d := time.Duration(e.AtNs) - killAt; declared == 0 || d < declared {
					declared = d
				}
			}
		}
	}
	if len(lat) != len(backups) {
		t.Fatalf("%d promotions of node 2's %d lasting objects", len(lat), len(backups))
	}
	slices.Sort(lat)
	for _, l := range lat {
		if l > 1500*time.Millisecond || l < 0 {
			t.Errorf("a promotion %v after the kill: want within 1.5 s", l)
		}
	}
	q := func(f float64) time.Duration {
		return lat[min(len(lat)-1, int(f*float64(len(lat))))].Round(time.Millisecond)
	}
	t.Logf("kill -9: %d lasting objects promoted; declared dead %v after the kill; promotion latency p50 %v, p99 %v, max %v; all seen as primaries by %v",
		len(lat), declared.Round(time.Millisecond), q(0.5), q(0.99), lat[len(lat)-1].Round(time.Millisecond), observed.Round(time.Millisecond))
	if !strings.Contains(readLog(t, c, victim), "node running") {
		t.Error("node 2's log does not say it ran")
	}
}

func readLog(t *testing.T, c *Cluster, i int) string {
	b, err := os.ReadFile(c.LogFile(i))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// wholeWorld is the query of a box holding every object of the world, for
// the nodes' region endpoints (prefer-backup, migrate-region).
const wholeWorld = "x0=-1e9&y0=-1e9&x1=1e9&y1=1e9"

// adminPost posts to path on node i's admin endpoint and fails t unless
// the node answers 2xx.
func adminPost(t *testing.T, c *Cluster, i int, path string) {
	t.Helper()
	resp, err := http.Post("http://"+c.AdminAddr(i)+path, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("node %d %s: %s %s", c.IDs()[i], path, resp.Status, b)
	}
}
