package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	dir := t.TempDir()
	c, err := startCluster(exe, dir, o, "")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if killed := c.stop(10 * time.Second); len(killed) > 0 {
			t.Errorf("nodes %v did not stop within 10 s of SIGTERM", killed)
		}
		if t.Failed() {
			for _, id := range c.ids {
				b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node%d.log", id)))
				t.Logf("node %d log:\n%s", id, b)
			}
		}
	}()
	if err := c.waitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for {
		snaps, err := c.worlds()
		why := ""
		if err != nil {
			why = err.Error()
		}
		for i := range c.ids {
			if why != "" {
				break
			}
			for j := range c.ids {
				if j != i && replicasOf(snaps[i], c.ids[j]) == 0 {
					why = fmt.Sprintf("node %d holds no replica of node %d's objects", c.ids[i], c.ids[j])
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
	for i := range c.ids {
		m, err := c.metrics(i)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range m {
			if (strings.HasPrefix(k, "overworld_malformed_total") || k == "overworld_handshake_refusals_total") && v != 0 {
				t.Errorf("node %d: %s = %v, want 0", c.ids[i], k, v)
			}
		}
		if m[`overworld_bytes_total{class="discovery",dir="out"}`] == 0 {
			t.Errorf("node %d sent no discovery traffic", c.ids[i])
		}
	}
}
