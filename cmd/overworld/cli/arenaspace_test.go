package cli

import (
	"testing"

	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/live"
)

// TestNodeDiscoverySpaceIsTheSimulatedWorlds: a live node of the arena
// game gives discovery the same Space as the simulated world of the same
// game, so that both run the same presets (margin, jump, key mapping).
func TestNodeDiscoverySpaceIsTheSimulatedWorlds(t *testing.T) {
	for _, m := range []string{"rect", "sqr"} {
		g := live.DefaultDaemonConfig().Game
		g.Map, g.Nodes, g.PlayersPerNode = m, 12, 3
		game, lg, err := arenaGame(g)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := lg.Discovery, harness.ArenaSpace(game); got != want {
			t.Errorf("%s: the node's discovery space %+v, the simulated world's %+v", m, got, want)
		}
	}
}
