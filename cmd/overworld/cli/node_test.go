package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/wire"
)

// TestMain lets the cluster tests re-execute this test binary as the
// command line (startCluster sets cliMainEnv for its node processes).
func TestMain(m *testing.M) {
	if os.Getenv(cliMainEnv) == "1" {
		os.Exit(Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestNodePrintConfig(t *testing.T) {
	code, out, errs := run(t, "", "node", "--print-config")
	if code != 0 || out != live.DefaultConfigTOML {
		t.Fatalf("exit %d, stderr %q; stdout is not the default configuration", code, errs)
	}
}

func TestCAAndNodeBadInput(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	if code, out, errs := run(t, "", "ca", "init", "--dir", ca); code != 0 || !strings.Contains(out, "created CA") {
		t.Fatalf("ca init: exit %d: %s %s", code, out, errs)
	}
	pem := filepath.Join(dir, "n1.pem")
	if code, _, errs := run(t, "", "ca", "issue", "--dir", ca, "--node", "1", "--out", pem); code != 0 {
		t.Fatalf("ca issue: exit %d: %s", code, errs)
	}
	if st, err := os.Stat(pem); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("node file mode %v, err %v: want 0600", st.Mode().Perm(), err)
	}
	// A valid configuration for node 1 with those files.
	tables := fmt.Sprintf("[tls]\nca_cert = %q\nnode_cert = %q\n[listen]\nnode = \"127.0.0.1:0\"\nadmin = \"\"\n",
		filepath.Join(ca, "ca.crt"), pem)
	good := "id = 1\n" + tables
	top := func(keys string) string { return "id = 1\n" + keys + tables }
	for _, c := range []struct {
		name string
		args []string
		cfg  string // written to a file passed with --config
		want string
	}{
		{"ca init again", []string{"ca", "init", "--dir", ca}, "", "already exists"},
		{"ca init no dir", []string{"ca", "init"}, "", "--dir is required"},
		{"ca issue no CA", []string{"ca", "issue", "--dir", filepath.Join(dir, "none"), "--node", "2", "--out", filepath.Join(dir, "x.pem")}, "", "ca.crt"},
		{"ca issue bad node", []string{"ca", "issue", "--dir", ca, "--node", "-5", "--out", filepath.Join(dir, "x.pem")}, "", "--node -5"},
		{"ca issue overwrite", []string{"ca", "issue", "--dir", ca, "--node", "1", "--out", pem}, "", "already exists"},
		{"ca issue too long", []string{"ca", "issue", "--dir", ca, "--node", "3", "--out", filepath.Join(dir, "y.pem"), "--validity", "200000h"}, "", "outlive the CA"},
		{"node no config", []string{"node"}, "", "--config FILE is required"},
		{"node missing file", []string{"node", "--config", filepath.Join(dir, "nope.toml")}, "", "no such file"},
		{"unknown key", nil, top("colour = \"red\"\n"), "unknown key(s) colour"},
		{"bad toml", nil, "id = [", "bad config"},
		{"bad frame rate", nil, top("frame_rate = 0.0\n"), "frame_rate 0"},
		{"bad address", nil, strings.Replace(good, "127.0.0.1:0", "nowhere", 1), "listen.node \"nowhere\""},
		{"unknown rendezvous", nil, good + "[discovery]\nrendezvous = 9\n", "rendezvous 9"},
		{"duplicate peer", nil, good + "[[peers]]\nid = 2\naddr = \"127.0.0.1:1\"\n[[peers]]\nid = 2\naddr = \"127.0.0.1:2\"\n", "node 2 listed twice"},
		{"unknown city", nil, top("emulate_latency = true\ncity = \"Atlantis\"\n"), "\"Atlantis\" is not a WonderNetwork city"},
		{"wrong certificate", nil, strings.Replace(good, "id = 1", "id = 2\n[discovery]\nrendezvous = 2", 1), "names node 1 but id is 2"},
		{"bad map", nil, good + "[game]\nmap = \"round\"\n", "game.map \"round\""},
		{"slot beyond nodes", nil, good + "[game]\nslot = 3\n", "game.slot 3"},
		{"player endpoint", nil, strings.Replace(good, "admin = \"\"", "admin = \"\"\nplayer_ws = \"127.0.0.1:0\"", 1), "players.coordinator_key is required"},
		{"bad coordinator key", nil, strings.Replace(good, "admin = \"\"", "admin = \"\"\nplayer_quic = \"127.0.0.1:0\"\n[players]\ncoordinator_key = \"nope.pub\"", 1), "players.coordinator_key"},
		{"cluster bad nodes", []string{"cluster", "--nodes", "0"}, "", "--nodes 0"},
		{"cluster bad arch", []string{"cluster", "--arch", "ring"}, "", "--arch \"ring\""},
		{"cluster bots not a multiple", []string{"cluster", "--nodes", "3", "--bots", "10"}, "", "--bots 10"},
	} {
		args := c.args
		if c.cfg != "" {
			path := filepath.Join(t.TempDir(), "node.toml")
			if err := os.WriteFile(path, []byte(c.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			args = []string{"node", "--config", path}
		}
		code, out, errs := run(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, no output, an error containing %q", c.name, code, out, errs, c.want)
		}
	}
}

// TestClusterKill starts 4 node processes (broadcast) on loopback, each
// with a player endpoint, and 16 bots (QUIC clients, 4 per node), kills
// node 2 with SIGKILL, and checks that: the survivors keep running frames
// at their rate; the players that were on the dead node notice and rejoin
// the others with fresh tokens, so that the survivors have all 16
// players; the survivors' player metrics match what the bots did there
// (joins, and leaves for the sessions that ended); their counters only
// grow and nothing was malformed or refused; their connections to the
// dead node close; and within the replica timeout no survivor holds a
// replica of the dead node's objects. Every wait is for an event, with a
// generous deadline (the machine may be loaded: a bot that falls silent
// for a while may move to another node, which the checks allow); the
// whole test takes about 15 s.
func TestClusterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes for about 15 s")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const nodes, perNode, dead = 4, 4, 1 // node index 1 is node 2
	o := clusterOpts{nodes: nodes, perNode: perNode, seed: 1, mapType: "rect", arch: "broadcast", frameRate: 10,
		logLevel: "info", botMode: "client"}
	dir := t.TempDir()
	c, err := startCluster(exe, dir, o, "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopBots := context.WithCancel(context.Background())
	var fleet *botFleet
	defer func() {
		stopBots()
		if fleet != nil {
			fleet.wait()
		}
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
	g, err := arena.New(arena.Config{Map: arena.Rect, Nodes: nodes, PlayersPerNode: perNode, Seed: o.seed})
	if err != nil {
		t.Fatal(err)
	}
	fleet = startFleet(ctx, c.fleetConfig(g, o), nodes*perNode)
	survivors := []int{0, 2, 3}
	metrics := func(i int) map[string]float64 {
		t.Helper()
		m, err := c.metrics(i)
		if err != nil {
			t.Fatalf("node %d: %v", c.ids[i], err)
		}
		return m
	}
	// waitFor polls cond every 100 ms until it holds, or fails after d.
	waitFor := func(d time.Duration, what string, cond func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			ok, why := cond()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v: %s", what, d, why)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// Every bot plays (at first on its home node), the dead-to-be node has
	// players, and every survivor holds a replica of its objects
	// (broadcast: every node replicates every other).
	var onDead []int // the bots on node 2 at the kill
	waitFor(30*time.Second, "16 players in game, replicas of node 2 everywhere", func() (bool, string) {
		onDead = onDead[:0]
		for k, b := range fleet.states() {
			if b.node < 0 || b.stats.Applied == 0 {
				return false, fmt.Sprintf("bot %d: on node index %d, %d states applied (last error %v)", k+1, b.node, b.stats.Applied, b.lastErr)
			}
			if b.node == dead {
				onDead = append(onDead, k)
			}
		}
		sum := 0.0
		for i := range c.ids {
			sum += metrics(i)["overworld_players"]
		}
		if sum != nodes*perNode || len(onDead) == 0 {
			return false, fmt.Sprintf("%v players in all, %d on node 2", sum, len(onDead))
		}
		snaps, err := c.worlds()
		if err != nil {
			return false, err.Error()
		}
		for _, i := range survivors {
			if replicasOf(snaps[i], c.ids[dead]) == 0 {
				return false, fmt.Sprintf("node %d holds no replica of node 2's objects", c.ids[i])
			}
		}
		return true, ""
	})
	joinsBefore := make([]int, nodes*perNode)
	for k, b := range fleet.states() {
		joinsBefore[k] = b.joins
	}
	before := make([]map[string]float64, len(c.ids))
	for _, i := range survivors {
		before[i] = metrics(i)
	}
	killedAt := time.Now()
	if err := c.signal(dead, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.done[dead]

	// The dead node's players rejoin elsewhere: all 16 play on survivors,
	// and the survivors' player metrics agree with the bots' records.
	waitFor(40*time.Second, "the dead node's players rejoined the survivors", func() (bool, string) {
		states := fleet.states()
		for k, b := range states {
			if b.node < 0 || b.node == dead {
				return false, fmt.Sprintf("bot %d: on node index %d (last error %v)", k+1, b.node, b.lastErr)
			}
		}
		for _, k := range onDead {
			if states[k].joins <= joinsBefore[k] {
				return false, fmt.Sprintf("bot %d, on node 2 at the kill, has not rejoined", k+1)
			}
		}
		sum := 0.0
		for _, i := range survivors {
			m := metrics(i)
			sum += m["overworld_players"]
			var joins, ends int
			for _, b := range states {
				joins, ends = joins+b.joinsOn[i], ends+b.endsOn[i]
			}
			if m["overworld_player_joins_total"] != float64(joins) || m["overworld_player_leaves_total"] != float64(ends) {
				return false, fmt.Sprintf("node %d counts %v joins and %v leaves; the bots joined it %d times and left %d",
					c.ids[i], m["overworld_player_joins_total"], m["overworld_player_leaves_total"], joins, ends)
			}
		}
		return sum == nodes*perNode, fmt.Sprintf("%v players on the survivors", sum)
	})
	t.Logf("the dead node's %d players all rejoined within %v of the kill", len(onDead), time.Since(killedAt).Round(time.Millisecond))
	// No survivor keeps a replica of the dead node's objects past the
	// replica timeout (3.5 s), and their connections to it close within
	// the QUIC idle timeout.
	waitFor(live.IdleTimeout+10*time.Second, "the survivors forget node 2", func() (bool, string) {
		snaps, err := c.worlds()
		if err != nil {
			return false, err.Error()
		}
		for _, i := range survivors {
			if snaps[i] == nil {
				return false, fmt.Sprintf("no snapshot from node %d", c.ids[i])
			}
			if n := replicasOf(snaps[i], c.ids[dead]); n > 0 {
				return false, fmt.Sprintf("node %d holds %d replicas of node 2's objects", c.ids[i], n)
			}
			if p := metrics(i)["overworld_peers_connected"]; p > nodes-2 {
				return false, fmt.Sprintf("node %d: %v peers connected, %d are alive", c.ids[i], p, nodes-2)
			}
		}
		return true, ""
	})
	elapsed := time.Since(killedAt).Seconds()
	for _, i := range survivors {
		after := metrics(i)
		if f := after["overworld_frames_total"] - before[i]["overworld_frames_total"]; f < 0.5*10*elapsed {
			t.Errorf("node %d ran %v frames in the %.1f s after the kill, want about %.0f", c.ids[i], f, elapsed, 10*elapsed)
		}
		for k, v := range before[i] {
			if strings.Contains(k, "_total") && !strings.HasPrefix(k, "go_") && after[k] < v {
				t.Errorf("node %d: counter %s went down: %v → %v", c.ids[i], k, v, after[k])
			}
		}
		for k, v := range after {
			if (strings.HasPrefix(k, "overworld_player_refusals_total") || strings.HasPrefix(k, "overworld_malformed_total") ||
				k == "overworld_handshake_refusals_total" || k == "overworld_inbox_drops_total" ||
				k == `overworld_player_inputs_total{result="bad"}`) && v != 0 {
				t.Errorf("node %d: %s = %v, want 0", c.ids[i], k, v)
			}
		}
	}
}

// replicasOf counts the replicas of node id's objects in a snapshot.
func replicasOf(s *live.WorldSnapshot, id wire.NodeID) int {
	n := 0
	if s == nil {
		return 0
	}
	for _, o := range s.Objects {
		if !o.Primary && wire.NodeID(o.ID>>32) == id {
			n++
		}
	}
	return n
}
