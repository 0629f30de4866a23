package localcluster

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/player"
)

// TestClusterDrainHandsOffPlayers: SIGTERM to a node with players hands
// each of them to a live peer before the node exits (make-before-break):
// no bot loses its session or joins again as a fresh avatar, each keeps
// its avatar, and States keep coming with a gap of about a frame at the
// switch.
func TestClusterDrainHandsOffPlayers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes and 6 bots for about 15 s")
	}
	const perNode, seed, victim = 2, 1, 1 // node index 1 is node 2
	cfg := testConfig(t, []string{"New York", "Frankfurt", "Tokyo"}, "directory", true)
	cfg.PlayersPerNode = perNode
	c, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
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
	g, err := arena.New(arena.Config{Map: arena.Rect, Nodes: 3, PlayersPerNode: perNode, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	brain := func(k int) player.Brain { return arenaplay.NewBrain(g, seed<<20+uint64(k)) }
	if fleet, err = StartFleet(ctx, c.FleetConfig(brain), 3*perNode); err != nil {
		t.Fatal(err)
	}
	waitBots := func(d time.Duration, what string, cond func(k int, b BotState) string) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			why := ""
			for k, b := range fleet.States() {
				if why = cond(k, b); why != "" {
					break
				}
			}
			if why == "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within %v: %s", what, d, why)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitBots(30*time.Second, "every bot in game", func(k int, b BotState) string {
		if b.Node < 0 || b.Stats.Applied < 10 {
			return fmt.Sprintf("bot %d: node index %d, %d states applied (%v)", k+1, b.Node, b.Stats.Applied, b.LastErr)
		}
		return ""
	})
	before := fleet.States()
	var moving []int
	for k, b := range before {
		if b.Node == victim {
			moving = append(moving, k)
		}
	}
	if len(moving) != perNode {
		t.Fatalf("%d bots on node 2, want %d", len(moving), perNode)
	}
	if err := c.Signal(victim, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done(victim):
	case <-time.After(15 * time.Second):
		t.Fatal("node 2 did not exit within 15 s of SIGTERM")
	}
	r, err := c.LastRun(victim)
	if err != nil {
		t.Fatal(err)
	}
	if r.PlayersHandedOff != perNode {
		t.Errorf("node 2 handed %d players off, want %d", r.PlayersHandedOff, perNode)
	}
	// The bots of node 2 play on: their sessions never ended, and States
	// keep coming from their new nodes.
	applied := map[int]int64{}
	for _, k := range moving {
		applied[k] = fleet.States()[k].Stats.Applied
	}
	waitBots(10*time.Second, "the handed-off bots play on", func(k int, b BotState) string {
		if !slices.Contains(moving, k) {
			return ""
		}
		switch {
		case b.Joins != 1 || b.LastErr != nil:
			return fmt.Sprintf("bot %d joined %d times (last error %v): its session ended", k+1, b.Joins, b.LastErr)
		case b.Stats.Handoffs != 1:
			return fmt.Sprintf("bot %d: %d handoffs", k+1, b.Stats.Handoffs)
		case b.Stats.Applied < applied[k]+20:
			return fmt.Sprintf("bot %d: %d states applied since node 2 exited", k+1, b.Stats.Applied-applied[k])
		case b.Stats.Avatar != before[k].Stats.Avatar:
			return fmt.Sprintf("bot %d plays avatar %v, was %v", k+1, b.Stats.Avatar, before[k].Stats.Avatar)
		}
		return ""
	})
	for _, k := range moving {
		b := fleet.States()[k]
		t.Logf("bot %d: gap at the switch %v", k+1, b.Stats.HandoffGaps)
		for _, gap := range b.Stats.HandoffGaps {
			if gap > 500*time.Millisecond {
				t.Errorf("bot %d: %v between the last State of node 2 and the first of its new node", k+1, gap)
			}
		}
	}
}
