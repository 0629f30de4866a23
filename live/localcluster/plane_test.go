package localcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/place/mcf"
	"github.com/overworld/overworld/wire"
)

// planeEnv makes this test binary, re-executed by StartPlane, run the
// control plane (runPlane) instead of the tests.
const planeEnv = "OVERWORLD_LOCALCLUSTER_PLANE"

// runPlane runs the control plane of the configuration "--config FILE"
// names until SIGTERM or SIGINT: what "overworld control" does.
func runPlane(args []string) int {
	if len(args) != 2 || args[0] != "--config" {
		fmt.Fprintf(os.Stderr, "plane: want --config FILE, have %q\n", args)
		return 2
	}
	f, err := plane.LoadFile(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg, err := f.Config()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s, err := plane.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ln, err := net.Listen("tcp", f.Listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go http.Serve(ln, s.Handler())
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	s.Run(ctx)
	return 0
}

// botRTT is the bots' modelled RTT to the nodes: every bot is nearest
// node 2, then node 1, then node 3, by a margin that grows with k.
func botRTT(k int, id wire.NodeID) float64 {
	return map[wire.NodeID]float64{1: 60, 2: 20, 3: 140}[id] + float64(k*7%23)*float64(id)
}

// TestClusterPlane: a control plane that starts after the bots joined
// their nodes places them where place/cma wants them (within capacity, at
// the least total RTT) and hands them over to get them there, without
// ending a session. kill -9 of the plane: the nodes and the bots go on.
// Restarted, the plane rebuilds the placement from the nodes without a
// new join and without moving anyone. kill -9 of a node: its bots take
// their avatars back where they failed over, and the plane hands them
// where it wants them.
func TestClusterPlane(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes and 6 bots for about 20 s")
	}
	const bots, seats = 6, 3
	cfg := testConfig(t, []string{"New York", "Frankfurt", "Tokyo"}, "directory", true)
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stopBots := context.WithCancel(context.Background())
	var fleet *Fleet
	var pl *Plane
	defer func() {
		stopBots()
		if fleet != nil {
			fleet.Wait()
		}
		if pl != nil {
			pl.Stop(5 * time.Second)
			if t.Failed() {
				b, _ := os.ReadFile(pl.LogFile())
				t.Logf("plane log:\n%s", b)
			}
		}
		stopAndLog(t, c)
	}()
	if err := c.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	// The plane comes up after the bots: they join their own nodes (k /
	// 2), it rebuilds from the nodes (which hold no samples of them), and
	// their pings place them, moving some.
	exe, _ := os.Executable()
	pl, err = c.StartPlane(PlaneConfig{Command: []string{exe}, Env: []string{planeEnv + "=1"}, Capacity: seats, Poll: 500 * time.Millisecond, Later: true})
	if err != nil {
		t.Fatal(err)
	}
	g, err := arena.New(arena.Config{Map: arena.Rect, Nodes: 3, PlayersPerNode: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	fc := c.FleetConfig(func(k int) player.Brain { return arenaplay.NewBrain(g, 1<<20+uint64(k)) })
	fc.Plane, fc.Pings = pl.URL(), botRTT
	if fleet, err = StartFleet(ctx, fc, bots); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "every bot in game on its own node", func() string {
		for k, b := range fleet.States() {
			if b.Node != k/2 || b.Stats.Applied < 10 {
				return fmt.Sprintf("bot %d: node index %d, %d states (%v)", k+1, b.Node, b.Stats.Applied, b.LastErr)
			}
		}
		return ""
	})
	if err := pl.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pl.WaitReady(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	state := func() plane.State {
		var st plane.State
		resp, err := http.Get(pl.URL() + "/v1/state")
		if err != nil {
			return st
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&st)
		return st
	}
	ids := c.IDs()
	settled := func() string {
		st := state()
		if len(st.Players) != bots {
			return fmt.Sprintf("the plane places %d players, want %d", len(st.Players), bots)
		}
		for k, b := range fleet.States() {
			want := st.Players[fmt.Sprintf("bot-%d", k+1)]
			switch {
			case b.Node < 0 || b.Stats.Applied < 10:
				return fmt.Sprintf("bot %d: node index %d, %d states (%v, plane %v)", k+1, b.Node, b.Stats.Applied, b.LastErr, b.PlaneErr)
			case uint32(ids[b.Node]) != want:
				return fmt.Sprintf("bot %d plays on node %d, the plane wants %d", k+1, ids[b.Node], want)
			}
		}
		return ""
	}
	waitFor(t, 30*time.Second, "every bot where the plane wants it", settled)
	// The placement is the optimum on the bots' RTTs, within capacity.
	st := state()
	rows := make([][]float64, bots)
	total := 0.0
	load := map[uint32]int{}
	for k := range bots {
		for _, id := range ids[:3] {
			rows[k] = append(rows[k], botRTT(k, id))
		}
		n := st.Players[fmt.Sprintf("bot-%d", k+1)]
		total += botRTT(k, wire.NodeID(n))
		load[n]++
	}
	_, opt, err := mcf.Transport(rows, []int{seats, seats, seats})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(total-opt) > 1e-6 {
		t.Errorf("the plane's placement costs %.1f ms, the optimum %.1f (state %+v)", total, opt, st)
	}
	for n, l := range load {
		if l > seats {
			t.Errorf("node %d holds %d bots, %d seats", n, l, seats)
		}
	}
	if st.Stats.Handoffs == 0 {
		t.Errorf("the plane asked for no handoff: every bot is nearest node 2, which has 3 seats and held 2 (%+v)", st.Stats)
	}
	for k, b := range fleet.States() {
		if b.Joins != 1 {
			t.Errorf("bot %d joined %d times: a handoff ended its session", k+1, b.Joins)
		}
	}
	// kill -9 the plane: the world goes on.
	pl.Kill()
	before := fleet.States()
	time.Sleep(3 * time.Second)
	for k, b := range fleet.States() {
		if b.Joins != before[k].Joins || b.Stats.Applied < before[k].Stats.Applied+10 {
			t.Errorf("bot %d without the plane: joins %d → %d, states %d → %d", k+1, before[k].Joins, b.Joins, before[k].Stats.Applied, b.Stats.Applied)
		}
	}
	// Restarted, it rebuilds: every bot placed where it plays, no join,
	// no move.
	if err := pl.Start(); err != nil {
		t.Fatal(err)
	}
	if err := pl.WaitReady(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the rebuilt plane places every bot where it plays", settled)
	if st := state(); st.Stats.Joins != 0 || st.Stats.Moves != 0 || st.Stats.Handoffs != 0 || !st.Stats.Rebuilt {
		t.Errorf("the rebuilt plane: %+v, want no join, move or handoff", st.Stats)
	}
	// kill -9 node 2: its bots take their avatars back where their
	// backups took over (Resume), without joining afresh, and the plane,
	// which re-admitted them elsewhere, hands them where it wants them.
	before = fleet.States()
	var victims []int
	for k, b := range before {
		if b.Node == 1 {
			victims = append(victims, k)
		}
	}
	if len(victims) == 0 {
		t.Fatal("no bot on node 2")
	}
	if err := c.Signal(1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "node 2's bots back on their avatars", func() string {
		for _, k := range victims {
			b := fleet.States()[k]
			switch {
			case b.Resumed != 1 || b.Joins != before[k].Joins+1:
				return fmt.Sprintf("bot %d: resumed %d, joins %d → %d (last error %v)", k+1, b.Resumed, before[k].Joins, b.Joins, b.LastErr)
			case b.Stats.Avatar != before[k].Stats.Avatar:
				return fmt.Sprintf("bot %d plays avatar %v, had %v", k+1, b.Stats.Avatar, before[k].Stats.Avatar)
			case b.Node == 1 || b.Node < 0:
				return fmt.Sprintf("bot %d on node index %d", k+1, b.Node)
			}
		}
		return ""
	})
	waitFor(t, 20*time.Second, "every bot where the plane wants it, node 2 down", func() string {
		st := state()
		for _, n := range st.Nodes {
			if n.ID == 2 && n.Up {
				return "the plane sees node 2 up"
			}
		}
		return settled()
	})
}

// waitFor polls cond (a reason it does not hold yet, "" when it does)
// until it holds or d passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		why := cond()
		if why == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, d, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
