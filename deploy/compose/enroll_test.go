//go:build docker

package compose

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
)

// enrolledAs returns the node IDs a game server container's log says it
// enrolled as, in order, and the time each enrollment took.
func enrolledAs(log string) (ids []uint32, took []time.Duration) {
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Msg  string  `json:"msg"`
			Node uint32  `json:"node"`
			Took float64 `json:"took"`
		}
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.Msg == "enrolled" {
			ids = append(ids, m.Node)
			took = append(took, time.Duration(m.Took))
		}
	}
	return ids, took
}

// third returns the game server of ids that is neither a nor b.
func third(ids map[string]uint32, a, b string) string {
	for id := range ids {
		if id != a && id != b {
			return id
		}
	}
	return ""
}

// replicasFrom counts the replicas w holds of node from's primaries.
func replicasFrom(w *live.WorldSnapshot, from uint32) int {
	n := 0
	for _, o := range w.Objects {
		if !o.Primary && o.From == from {
			n++
		}
	}
	return n
}

// TestEnrollScale: game servers scaled from one configuration get their
// identity at start, on real containers (deploy/compose/enroll). The
// plane and the rendezvous run; the game server service is scaled to 2:
// every container, from the same configuration file and enrollment
// secret, enrolls for its own node ID, and the two join by gossip and hold
// replicas of each other's objects. A container stopped and started
// again (its certificate was on a tmpfs) enrolls again, gets the same ID
// for its name and is admitted again by gossip; scaled to 3, the new one
// gets a third ID and exchanges replicas with the game server that was not
// restarted, without the others being touched; the restarted one and the
// other hold replicas of each other's objects again.
func TestEnrollScale(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	project := fmt.Sprintf("owtest-enroll-%d", os.Getpid())
	c, err := StartEnroll(ctx, dk, root, project, image, filepath.Join(t.TempDir(), "cluster"))
	if c != nil {
		defer func() {
			if t.Failed() {
				// The whole logs go to files; the test prints their ends.
				dir := filepath.Join(os.TempDir(), project+"-logs")
				_ = os.MkdirAll(dir, 0o755)
				logs := map[string]string{}
				for _, s := range []string{Plane, "rendezvous"} {
					logs[s] = c.Logs(context.Background(), s)
				}
				ids, _ := c.GameServerContainers(context.Background())
				for _, id := range ids {
					logs["gs-"+id[:12]] = c.ContainerLog(context.Background(), id)
				}
				for name, log := range logs {
					_ = os.WriteFile(filepath.Join(dir, name+".log"), []byte(log), 0o644)
					t.Logf("%s log (all of it in %s):\n%s", name, dir, tail(log, 12))
				}
			}
			if err := c.Down(context.Background()); err != nil {
				t.Errorf("down: %v", err)
			}
		}()
	}
	if err != nil {
		t.Fatal(err)
	}
	wait := func(what string, d time.Duration, cond func() string) time.Duration {
		t.Helper()
		took, err := waitFor(ctx, d, cond)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return took
	}
	wait("the plane and the rendezvous up", 60*time.Second, func() string {
		rv, err := c.Container(ctx, "rendezvous")
		if err != nil {
			return err.Error()
		}
		if _, err := c.ContainerWorld(ctx, rv); err != nil {
			return "rendezvous: " + err.Error()
		}
		if _, err := c.HostStats(ctx); err != nil {
			return err.Error()
		}
		return ""
	})

	// enrolled waits until every game server container has enrolled, the
	// ones in before once more than before, and returns how many times
	// each did.
	ids := map[string]uint32{}
	enrolled := func(before map[string]int) map[string]int {
		t.Helper()
		now := map[string]int{}
		wait("every game server enrolled", 60*time.Second, func() string {
			cs, err := c.GameServerContainers(ctx)
			if err != nil {
				return err.Error()
			}
			for _, id := range cs {
				got, took := enrolledAs(c.ContainerLog(ctx, id))
				if len(got) <= before[id] {
					return fmt.Sprintf("game server %s has not enrolled", id[:12])
				}
				now[id] = len(got)
				if prev, ok := ids[id]; ok && prev != got[len(got)-1] {
					t.Fatalf("game server %s enrolled as node %d, then %d", id[:12], prev, got[len(got)-1])
				}
				if _, ok := ids[id]; !ok {
					t.Logf("game server %s enrolled as node %d in %v", id[:12], got[len(got)-1], took[len(took)-1])
				}
				ids[id] = got[len(got)-1]
			}
			return ""
		})
		return now
	}
	// exchanged waits until every pair of the game servers in which (all
	// when nil) hold replicas of each other's objects.
	exchanged := func(what string, which map[string]bool) time.Duration {
		t.Helper()
		return wait(what, 60*time.Second, func() string {
			worlds := map[string]*live.WorldSnapshot{}
			for id := range ids {
				if which != nil && !which[id] {
					continue
				}
				w, err := c.ContainerWorld(ctx, id)
				if err != nil {
					return fmt.Sprintf("game server %s: %v", id[:12], err)
				}
				if w.Node != ids[id] {
					return fmt.Sprintf("game server %s runs as node %d, enrolled as %d", id[:12], w.Node, ids[id])
				}
				worlds[id] = w
			}
			for a, wa := range worlds {
				for b := range worlds {
					if a != b && replicasFrom(wa, ids[b]) == 0 {
						return fmt.Sprintf("node %d holds no replica of node %d's objects", ids[a], ids[b])
					}
				}
			}
			return ""
		})
	}

	start := time.Now()
	if err := c.ScaleGameServers(ctx, 2); err != nil {
		t.Fatal(err)
	}
	counts := enrolled(nil)
	if len(ids) != 2 {
		t.Fatalf("%d game servers enrolled, want 2", len(ids))
	}
	seen := map[uint32]bool{}
	for _, id := range ids {
		if seen[id] || id < 100 || id > 199 {
			t.Fatalf("game servers enrolled as %v: want distinct IDs of 100…199", ids)
		}
		seen[id] = true
	}
	exchanged("the two game servers exchange replicas", nil)
	var nodes []uint32
	for _, id := range ids {
		nodes = append(nodes, id)
	}
	t.Logf("2 game servers from one configuration: enrolled as nodes %v, replicas exchanged %v after scaling up", nodes, time.Since(start).Round(time.Millisecond))

	var first string
	for id := range ids {
		first = id
		break
	}
	// A restart: the container's tmpfs is gone, so it enrolls again, and
	// the plane gives its name the same ID; it runs as that node and the
	// others admit it again (gossip).
	var other string
	for id := range ids {
		if id != first {
			other = id
		}
	}
	restarted := time.Now()
	if err := c.RestartContainer(ctx, first, 10*time.Second, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	enrolled(map[string]int{first: counts[first]})
	wait("the restarted game server admitted again", 60*time.Second, func() string {
		w, err := c.ContainerWorld(ctx, first)
		if err != nil || w.Node != ids[first] {
			return fmt.Sprintf("game server %s: %v %v", first[:12], err, w)
		}
		joins := 0
		for _, line := range strings.Split(c.ContainerLog(ctx, other), "\n") {
			if strings.Contains(line, `"msg":"membership: peer joined"`) && strings.Contains(line, fmt.Sprintf(`"node":%d,"inc"`, ids[first])) {
				joins++
			}
		}
		if joins < 2 {
			return fmt.Sprintf("node %d has not admitted node %d again", ids[other], ids[first])
		}
		return ""
	})
	t.Logf("game server %s stopped and started again: node %d again, admitted by node %d %v after the stop began",
		first[:12], ids[first], ids[other], time.Since(restarted).Round(time.Millisecond))
	exchanged("the restarted game server and the other exchange replicas again", map[string]bool{first: true, other: true})
	t.Logf("nodes %d and %d hold replicas of each other's objects again %v after the stop began",
		ids[first], ids[other], time.Since(restarted).Round(time.Millisecond))

	scaled := time.Now()
	if err := c.ScaleGameServers(ctx, 3); err != nil {
		t.Fatal(err)
	}
	enrolled(nil)
	if len(ids) != 3 {
		t.Fatalf("%d game servers enrolled, want 3", len(ids))
	}
	exchanged("the third game server joins", map[string]bool{other: true, third(ids, first, other): true})
	t.Logf("scaled to 3: node %d enrolled, exchanging replicas with node %d %v after scaling", ids[third(ids, first, other)], ids[other], time.Since(scaled).Round(time.Millisecond))
	st, err := c.HostStats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Issued != 4 || len(st.GameServers) != 3 {
		t.Fatalf("plane: %d certificates issued to %v, want 4 to 3 game servers", st.Issued, st.GameServers)
	}
	for _, n := range st.Refused {
		if n != 0 {
			t.Fatalf("plane refused requests: %v", st.Refused)
		}
	}
}
