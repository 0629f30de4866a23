package cli

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live/localcluster"
)

// TestClusterColyseus runs 3 node processes under the colyseus
// architecture (the distributed locator on a ring of the three, as in the
// simulated world) with 2 AI bots each, and checks that every node comes
// to hold replicas of both other nodes' objects, found through the ring
// over real sockets, with nothing malformed or refused; then that every
// node stops on SIGTERM.
func TestClusterColyseus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 processes for a few seconds")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o := clusterOpts{nodes: 3, perNode: 2, seed: 1, mapType: "sqr", arch: "colyseus", frameRate: 10, logLevel: "info", botMode: "node"}
	c, err := localcluster.Start(o.clusterConfig(exe, t.TempDir(), ""))
	if err != nil {
		t.Fatal(err)
	}
	ids := c.IDs()
	defer func() {
		if killed := c.Stop(10 * time.Second); len(killed) > 0 {
			t.Errorf("nodes %v did not stop within 10 s of SIGTERM", killed)
		}
		if t.Failed() {
			for i, id := range ids {
				b, _ := os.ReadFile(c.LogFile(i))
				t.Logf("node %d log:\n%s", id, b)
			}
		}
	}()
	if err := c.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		snaps, err := c.Worlds()
		why := ""
		if err != nil {
			why = err.Error()
		}
		for i := range ids {
			if why != "" {
				break
			}
			for j := range ids {
				if j != i && localcluster.ReplicasOf(snaps[i], ids[j]) == 0 {
					why = fmt.Sprintf("node %d holds no replica of node %d's objects", ids[i], ids[j])
					break
				}
			}
		}
		if why == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within 40 s: %s", why)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for i := range ids {
		m, err := c.Metrics(i)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			if (strings.HasPrefix(k, "overworld_malformed_total") || k == "overworld_handshake_refusals_total") && v != 0 {
				t.Errorf("node %d: %s = %v, want 0", ids[i], k, v)
			}
		}
		if m[`overworld_bytes_total{class="discovery",dir="out"}`] == 0 {
			t.Errorf("node %d sent no discovery traffic", ids[i])
		}
	}
}
