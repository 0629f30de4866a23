package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/player"
)

// nodeEnv makes this test binary, re-executed by the engine, run one node
// (runNode) instead of the tests.
const nodeEnv = "OVERWORLD_LOCALCLUSTER_NODE"

func TestMain(m *testing.M) {
	if os.Getenv(nodeEnv) == "1" {
		os.Exit(runNode(os.Args[1:]))
	}
	if os.Getenv(planeEnv) == "1" {
		os.Exit(runPlane(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// runNode runs the live daemon of the configuration "--config FILE" names,
// with the arena game (arenaplay.NodeGame), until SIGTERM or SIGINT: what
// "overworld node" does, minus the colyseus locator the tests do not use.
func runNode(args []string) int {
	if len(args) != 2 || args[0] != "--config" {
		fmt.Fprintf(os.Stderr, "node: want --config FILE, have %q\n", args)
		return 2
	}
	cfg, err := live.LoadDaemonConfig(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, game, err := arenaplay.NodeGame(cfg.Game)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	d, err := live.NewDaemon(cfg, game, live.NewLogger(cfg, os.Stderr))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := d.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testConfig is a cluster of this test binary's nodes in a fresh
// directory: one per city, 2 players each, seed 1, rect map, 10 Hz.
func testConfig(t *testing.T, cities []string, arch string, players bool) Config {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return Config{Command: []string{exe}, Env: []string{nodeEnv + "=1"}, Dir: t.TempDir(), Cities: cities, Arch: arch,
		Map: "rect", PlayersPerNode: 2, Seed: 1, FrameRate: 10, LogLevel: "info", Players: players}
}

// stopAndLog stops c, failing t for a node that did not stop within 10 s
// of SIGTERM, and logs every node's log if t failed.
func stopAndLog(t *testing.T, c *Cluster) {
	t.Helper()
	if killed := c.Stop(10 * time.Second); len(killed) > 0 {
		t.Errorf("nodes %v did not stop within 10 s of SIGTERM", killed)
	}
	if t.Failed() {
		for i, id := range c.IDs() {
			b, _ := os.ReadFile(c.LogFile(i))
			t.Logf("node %d log:\n%s", id, b)
		}
	}
}

// startReady starts cfg's cluster, stops it when t ends (stopAndLog),
// and waits until every node is ready.
func startReady(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopAndLog(t, c) })
	if err := c.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestStartRejectsBadConfig: a Config the engine cannot run is an
// ErrConfig naming the problem, and nothing is written.
func TestStartRejectsBadConfig(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"no command", func(c *Config) { c.Command = nil }, "no command"},
		{"no directory", func(c *Config) { c.Dir = "" }, "no directory"},
		{"missing directory", func(c *Config) { c.Dir += "/none" }, "does not exist"},
		{"no cities", func(c *Config) { c.Cities = nil }, "no cities"},
		{"bad arch", func(c *Config) { c.Arch = "ring" }, `arch "ring"`},
		{"no players", func(c *Config) { c.PlayersPerNode = 0 }, "0 players per node"},
		{"bad frame rate", func(c *Config) { c.FrameRate = 0 }, "frame rate 0"},
		{"bad log level", func(c *Config) { c.LogLevel = "loud" }, `node 1: live: bad config: log_level "loud"`},
		{"unknown city", func(c *Config) { c.EmulateLatency, c.Cities = true, []string{"Atlantis"} }, `"Atlantis" is not a WonderNetwork city`},
	} {
		cfg := testConfig(t, []string{"London"}, "broadcast", false)
		c.edit(&cfg)
		_, err := Start(cfg)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrConfig containing %q", c.name, err, c.want)
		}
		if entries, _ := os.ReadDir(cfg.Dir); len(entries) > 0 {
			t.Errorf("%s: %d files written", c.name, len(entries))
		}
	}
	if _, err := StartFleet(context.Background(), FleetConfig{}, 1); !errors.Is(err, ErrConfig) {
		t.Errorf("a fleet without player endpoints: %v", err)
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
	const nodes, perNode, dead, seed = 4, 4, 1, 1 // node index 1 is node 2
	cfg := testConfig(t, []string{"New York", "Frankfurt", "Tokyo", "Singapore"}, "broadcast", true)
	cfg.PlayersPerNode = perNode
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ids := c.IDs()
	ctx, stopBots := context.WithCancel(context.Background())
	var fleet *Fleet
	defer func() {
		stopBots()
		if fleet != nil {
			fleet.Wait()
		}
		stopAndLog(t, c)
	}()
	if err := c.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	g, err := arena.New(arena.Config{Map: arena.Rect, Nodes: nodes, PlayersPerNode: perNode, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	brain := func(k int) player.Brain { return arenaplay.NewBrain(g, seed<<20+uint64(k)) }
	if fleet, err = StartFleet(ctx, c.FleetConfig(brain), nodes*perNode); err != nil {
		t.Fatal(err)
	}
	survivors := []int{0, 2, 3}
	metrics := func(i int) map[string]float64 {
		t.Helper()
		m, err := c.Metrics(i)
		if err != nil {
			t.Fatalf("node %d: %v", ids[i], err)
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
		for k, b := range fleet.States() {
			if b.Node < 0 || b.Stats.Applied == 0 {
				return false, fmt.Sprintf("bot %d: on node index %d, %d states applied (last error %v)", k+1, b.Node, b.Stats.Applied, b.LastErr)
			}
			if b.Node == dead {
				onDead = append(onDead, k)
			}
		}
		sum := 0.0
		for i := range ids {
			sum += metrics(i)["overworld_players"]
		}
		if sum != nodes*perNode || len(onDead) == 0 {
			return false, fmt.Sprintf("%v players in all, %d on node 2", sum, len(onDead))
		}
		snaps, err := c.Worlds()
		if err != nil {
			return false, err.Error()
		}
		for _, i := range survivors {
			if ReplicasOf(snaps[i], ids[dead]) == 0 {
				return false, fmt.Sprintf("node %d holds no replica of node 2's objects", ids[i])
			}
		}
		return true, ""
	})
	joinsBefore := make([]int, nodes*perNode)
	for k, b := range fleet.States() {
		joinsBefore[k] = b.Joins
	}
	before := make([]map[string]float64, len(ids))
	for _, i := range survivors {
		before[i] = metrics(i)
	}
	killedAt := time.Now()
	if err := c.Signal(dead, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Done(dead)

	// The dead node's players rejoin elsewhere: all 16 play on survivors,
	// and the survivors' player metrics agree with the bots' records.
	waitFor(40*time.Second, "the dead node's players rejoined the survivors", func() (bool, string) {
		states := fleet.States()
		for k, b := range states {
			if b.Node < 0 || b.Node == dead {
				return false, fmt.Sprintf("bot %d: on node index %d (last error %v)", k+1, b.Node, b.LastErr)
			}
		}
		for _, k := range onDead {
			if states[k].Joins <= joinsBefore[k] {
				return false, fmt.Sprintf("bot %d, on node 2 at the kill, has not rejoined", k+1)
			}
		}
		sum := 0.0
		for _, i := range survivors {
			m := metrics(i)
			sum += m["overworld_players"]
			var joins, ends int
			for _, b := range states {
				joins, ends = joins+b.JoinsOn[i], ends+b.EndsOn[i]
			}
			if m["overworld_player_joins_total"] != float64(joins) || m["overworld_player_leaves_total"] != float64(ends) {
				return false, fmt.Sprintf("node %d counts %v joins and %v leaves; the bots joined it %d times and left %d",
					ids[i], m["overworld_player_joins_total"], m["overworld_player_leaves_total"], joins, ends)
			}
		}
		return sum == nodes*perNode, fmt.Sprintf("%v players on the survivors", sum)
	})
	t.Logf("the dead node's %d players all rejoined within %v of the kill", len(onDead), time.Since(killedAt).Round(time.Millisecond))
	// No survivor keeps a replica of the dead node's objects past the
	// replica timeout (3.5 s), and their connections to it close within
	// the QUIC idle timeout.
	waitFor(live.IdleTimeout+10*time.Second, "the survivors forget node 2", func() (bool, string) {
		snaps, err := c.Worlds()
		if err != nil {
			return false, err.Error()
		}
		for _, i := range survivors {
			if snaps[i] == nil {
				return false, fmt.Sprintf("no snapshot from node %d", ids[i])
			}
			if n := ReplicasOf(snaps[i], ids[dead]); n > 0 {
				return false, fmt.Sprintf("node %d holds %d replicas of node 2's objects", ids[i], n)
			}
			if p := metrics(i)["overworld_peers_connected"]; p > nodes-2 {
				return false, fmt.Sprintf("node %d: %v peers connected, %d are alive", ids[i], p, nodes-2)
			}
		}
		return true, ""
	})
	elapsed := time.Since(killedAt).Seconds()
	for _, i := range survivors {
		after := metrics(i)
		if f := after["overworld_frames_total"] - before[i]["overworld_frames_total"]; f < 0.5*10*elapsed {
			t.Errorf("node %d ran %v frames in the %.1f s after the kill, want about %.0f", ids[i], f, elapsed, 10*elapsed)
		}
		for k, v := range before[i] {
			if strings.Contains(k, "_total") && !strings.HasPrefix(k, "go_") && after[k] < v {
				t.Errorf("node %d: counter %s went down: %v → %v", ids[i], k, v, after[k])
			}
		}
		for k, v := range after {
			if (strings.HasPrefix(k, "overworld_player_refusals_total") || strings.HasPrefix(k, "overworld_malformed_total") ||
				k == "overworld_handshake_refusals_total" || k == "overworld_inbox_drops_total" ||
				k == `overworld_player_inputs_total{result="bad"}`) && v != 0 {
				t.Errorf("node %d: %s = %v, want 0", ids[i], k, v)
			}
		}
	}
}
