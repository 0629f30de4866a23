// Command tag plays the game of tag (package game) on simulated nodes over
// the embedded PlanetLab latencies, and prints what the ground-truth
// observer of lab/harness measured: missing replicas, discovery latency,
// staleness and bandwidth.
//
//	go run ./tag --seconds 5
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"example.com/overworld-examples/tag/game"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/world"
)

func main() {
	seconds := flag.Float64("seconds", 10, "game time to simulate, in seconds")
	nodes := flag.Int("nodes", 8, "player nodes")
	players := flag.Int("players", 4, "players per node")
	arch := flag.String("arch", "directory", "discovery: directory, broadcast, client-server or colyseus")
	seed := flag.Uint64("seed", 1, "seed of the sites, the network, the nodes and the players' places")
	flag.Parse()
	if err := run(os.Stdout, *seconds, *nodes, *players, *arch, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "tag:", err)
		os.Exit(1)
	}
}

// run sets the game up on the harness, runs it and prints what it measured
// to out.
func run(out io.Writer, seconds float64, nodes, players int, arch string, seed uint64) error {
	g, err := game.New(60)
	if err != nil {
		return err
	}
	if players < 1 || players > 1000 {
		return fmt.Errorf("players per node %d: want 1 to 1000", players)
	}
	a, err := discovery.ParseArch(arch)
	if err != nil {
		return err
	}
	spec := harness.Game{Registry: g.Registry(), Interest: game.Sight, Speed: game.ChaseSpeed,
		Bounds: world.Box{Max: world.Point{g.Size, g.Size}}}
	r := rand.New(rand.NewPCG(seed, 0))
	var ids []world.ObjectID // each player's ID, to read the score at the end
	for k := range nodes * players {
		x, y, it := r.Float64()*g.Size, r.Float64()*g.Size, k%8 == 0 // one player in eight starts as "it"
		spec.Spawns = append(spec.Spawns, harness.Spawn{Node: k % nodes, Schema: g.Player, Init: func(st *world.State) {
			ids = append(ids, st.ID())
			g.Place(st, x, y, it)
		}})
	}
	cfg := harness.DefaultConfig()
	cfg.Arch, cfg.Nodes, cfg.Seed = a, nodes, seed
	cfg.Duration = time.Duration(seconds * float64(time.Second))
	w, err := harness.New(cfg, spec)
	if err != nil {
		return err
	}
	if err := w.Run(nil); err != nil {
		return err
	}
	report(out, w.Result())
	var tags, caught int64
	for _, n := range w.Nodes() {
		for _, id := range ids {
			if obj, primary, ok := n.Lookup(id); ok && primary {
				p := obj.(*game.Player)
				tags, caught = tags+p.Tags(), caught+p.Caught()
			}
		}
	}
	fmt.Fprintf(out, "game: %d players, %d tags made, %d received by the tagged players' nodes\n", len(ids), tags, caught)
	return nil
}

// report prints the measures of a run.
func report(out io.Writer, res *harness.Result) {
	s := res.Summary
	fmt.Fprintf(out, "%s, %s nodes (%s), %.0f s of game time\n", s.Labels["arch"], s.Labels["nodes"], s.Labels["sites"], s.DurationS)
	for _, m := range s.Views.Missing {
		fmt.Fprintf(out, "missing replicas (grace %3.0f ms): %6.3f%% of %d object-views\n", m.GraceMs, 100*m.Fraction, s.Views.Interesting)
	}
	d := s.Views.Discovery
	fmt.Fprintf(out, "discovery latency: mean %.0f ms, p95 %.0f ms (%d objects missing on entry)\n", d.Mean, d.P95, d.Count)
	fmt.Fprintf(out, "staleness: mean %.0f ms, p95 %.0f ms\n", s.Staleness.Mean, s.Staleness.P95)
	b := res.Players
	fmt.Fprintf(out, "bandwidth per player node: in %.0f B/s, out %.0f B/s (p95 in+out %.0f B/s)\n", b.Mean.In, b.Mean.Out, b.P95.Total)
	if res.Infra.Nodes > 0 {
		fmt.Fprintf(out, "bandwidth of the infrastructure node: %.0f B/s\n", res.Infra.Mean.Total)
	}
	fmt.Fprintf(out, "updates: %.0f per s, %.1f B each on the wire\n", res.UpdatesPerS, res.BytesPerUpdate)
}
