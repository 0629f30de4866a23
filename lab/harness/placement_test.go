package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/place/mcf"
	"github.com/overworld/overworld/wire"
)

// placedConfig is a small placed world: 5 nodes × 4 bots with fast churn.
func placedConfig(seed uint64, mode PlacementMode) ArenaConfig {
	c := DefaultDemoConfig()
	c.Nodes, c.PlayersPerNode, c.Duration, c.Seed = 5, 4, 20*time.Second, seed
	c.Cities = cities.ForNodes(c.Nodes)
	c.Placement = PlacementConfig{Mode: mode, Session: 6 * time.Second, Policy: "churn"}
	return c
}

// TestPlacementRandom runs placed worlds on many seeds and checks, after
// every event of the control plane: no node holds more players than its
// seats (in the plane and by static admission), every player is on
// exactly one node, the plane's assignment costs exactly the optimum on
// the RTTs it knows, and no avatar has two primaries. At the end, every
// avatar whose placement settled a while ago is where the placement
// wants it, with its state intact.
func TestPlacementRandom(t *testing.T) {
	seeds := 8
	if testing.Short() {
		seeds = 2
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		for _, mode := range []PlacementMode{PlaceCMA, PlaceStatic} {
			t.Run(fmt.Sprintf("seed=%d/%s", seed, mode), func(t *testing.T) {
				checkPlacedRun(t, placedConfig(seed, mode))
			})
		}
	}
}

func checkPlacedRun(t *testing.T, c ArenaConfig) {
	t.Helper()
	c.Data, c.Cities = SitesWonder, cities.ForNodes(c.Nodes)
	w, err := NewArena(c)
	if err != nil {
		t.Fatalf("seed %d: %v", c.Seed, err)
	}
	pl := w.placer
	events := 0
	pl.check = func(now time.Duration) {
		events++
		if t.Failed() {
			return
		}
		fail := func(format string, args ...any) {
			t.Errorf("seed %d, %s, at %v: %s", c.Seed, c.Placement.Mode, now, fmt.Sprintf(format, args...))
		}
		seen := map[string]bool{}
		rows := make([][]float64, 0, len(pl.avatar))
		for k := range pl.avatar {
			id := pl.players[pl.who[k]].ID
			if seen[id] {
				fail("player %s behind two avatars", id)
			}
			seen[id] = true
			if _, ok := pl.plane.NodeOf(id); !ok {
				fail("player %s online but not placed", id)
			}
			r, _ := pl.plane.Delays(id)
			rows = append(rows, r)
			held := 0
			for _, n := range w.nodes[:c.Nodes] {
				if _, primary, ok := n.Lookup(pl.avatar[k]); ok && primary {
					held++
				}
			}
			if held > 1 {
				fail("avatar %v has %d primaries", pl.avatar[k], held)
			}
		}
		if pl.plane.Len() != len(pl.avatar) {
			fail("plane holds %d players for %d avatars", pl.plane.Len(), len(pl.avatar))
		}
		caps := make([]int, c.Nodes)
		for j := range caps {
			caps[j] = pl.seats
			if l := pl.plane.Load(wire.NodeID(j + 1)); l > pl.seats {
				fail("plane: node %d holds %d players, %d seats", j+1, l, pl.seats)
			}
			if pl.load[j] > pl.seats {
				fail("static: node %d holds %d players, %d seats", j+1, pl.load[j], pl.seats)
			}
		}
		_, opt, err := mcf.Transport(rows, caps)
		if err != nil {
			fail("optimum: %v", err)
			return
		}
		if got := pl.plane.TotalDelay(); math.Abs(got-opt) > 1e-6*max(1, opt) {
			fail("plane's assignment costs %.6f ms, the optimum on its RTTs %.6f", got, opt)
		}
	}
	if err := w.Run(nil); err != nil {
		t.Fatalf("seed %d: %v", c.Seed, err)
	}
	if events == 0 {
		t.Fatalf("seed %d: the plane saw no event", c.Seed)
	}
	end := w.sim.Now()
	for k, id := range pl.avatar {
		if end-pl.since[k] < 3*time.Second {
			continue // still moving
		}
		h := pl.holder(id)
		if h != pl.target[k] {
			t.Errorf("seed %d, %s: avatar %v is on node %d, its placement %d since %v", c.Seed, c.Placement.Mode, id, h, pl.target[k], pl.since[k])
		}
		if c.Placement.Mode == PlaceCMA {
			if n, _ := pl.plane.NodeOf(pl.players[pl.who[k]].ID); n != pl.target[k] {
				t.Errorf("seed %d: avatar %v's target %d, the plane's %d", c.Seed, id, pl.target[k], n)
			}
		}
	}
	rep := w.Result().Placement
	if rep == nil || rep.Replacements == 0 || !(rep.World.Mean > 0) || !(rep.Optimum > 0) {
		t.Fatalf("seed %d: report %+v", c.Seed, rep)
	}
	if c.Placement.Mode == PlaceCMA && rep.Handoffs == 0 {
		t.Errorf("seed %d: no handoff carried out", c.Seed)
	}
}

// TestPlacementDeterministic: the same seed gives byte-identical
// summaries and the same placement report, on any number of workers.
func TestPlacementDeterministic(t *testing.T) {
	run := func(workers int) ([]byte, PlacementReport) {
		c := placedConfig(3, PlaceCMA)
		c.Workers = workers
		rep, err := Demo(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(rep.Summary); err != nil {
			t.Fatal(err)
		}
		return b.Bytes(), *rep.Placement
	}
	a, pa := run(1)
	b, pb := run(2)
	if !bytes.Equal(a, b) || pa != pb {
		t.Errorf("seed 3: runs differ:\n%+v\n%+v", pa, pb)
	}
}

// TestPlacementBadConfig: placements the world cannot run are refused
// before anything runs.
func TestPlacementBadConfig(t *testing.T) {
	for name, mod := range map[string]func(*ArenaConfig){
		"planetlab":       func(c *ArenaConfig) { c.Data, c.Cities = SitesPlanetLab, nil },
		"client-server":   func(c *ArenaConfig) { c.Arch = discovery.ClientServer },
		"peer-to-peer":    func(c *ArenaConfig) { c.PlayersPerNode = 1 },
		"headroom":        func(c *ArenaConfig) { c.Placement.Headroom = 0.5 },
		"mode":            func(c *ArenaConfig) { c.Placement.Mode = "nearest" },
		"policy":          func(c *ArenaConfig) { c.Placement.Policy = "sometimes" },
		"grid":            func(c *ArenaConfig) { c.Placement.Cols, c.Placement.Rows = 9, 9 },
		"session":         func(c *ArenaConfig) { c.Placement.Session = time.Millisecond },
		"no-regions+grid": func(c *ArenaConfig) { c.Placement.NoRegions, c.Placement.Cols = true, 2 },
	} {
		c := placedConfig(1, PlaceCMA)
		mod(&c)
		if _, err := NewArena(c); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%s: %v, want lab.ErrConfig", name, err)
		}
	}
}

// TestPlacedPlayers: the players PlacedPlayers draws are the run's first
// ones, the same for the same seed.
func TestPlacedPlayers(t *testing.T) {
	c := placedConfig(5, PlaceCMA)
	rows, err := PlacedPlayers(c)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewArena(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != c.Nodes*c.PlayersPerNode {
		t.Fatalf("%d players, want %d", len(rows), c.Nodes*c.PlayersPerNode)
	}
	for k := range rows {
		if fmt.Sprint(rows[k]) != fmt.Sprint(w.placer.rows[k]) {
			t.Fatalf("player %d: %v, the run's %v", k, rows[k], w.placer.rows[k])
		}
	}
	c.Placement.Mode = PlaceNone
	if _, err := PlacedPlayers(c); !errors.Is(err, lab.ErrConfig) {
		t.Errorf("placement none: %v", err)
	}
}
