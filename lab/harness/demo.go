package harness

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
)

// DefaultDemoConfig is "overworld demo": 16 nodes × 8 bots (128
// players) on a rect map for 60 s of game time, directory architecture,
// nodes in the first 16 WonderNetwork cities of cities.ForNodes, seed 1.
// It runs in a few seconds on 2 cores.
func DefaultDemoConfig() ArenaConfig {
	c := DefaultArenaConfig()
	c.Data = SitesWonder
	c.Slice = 0
	c.Cities = cities.ForNodes(c.Nodes)
	return c
}

// DemoReport is the outcome of Demo.
type DemoReport struct {
	*Result
	// Config is the run's configuration, validated (Result.Config is its
	// harness part).
	Config ArenaConfig
	// InfraSite is where the infrastructure node runs ("" for broadcast).
	InfraSite string
	// Instances is the instance run beside the world (RunInstances with
	// its defaults and the demo's seed), when the control plane places
	// the players; nil otherwise.
	Instances *InstancesReport
}

// Demo runs the world demo: the model game on nodes in WonderNetwork
// cities, in the simulator. cfg.Data must be SitesWonder (empty Cities:
// cities.ForNodes). An empty cfg.Placement.Mode places the players with
// the control plane (PlaceCMA) when the nodes are game servers (more than
// one player per node, and not the client-server architecture, whose
// central server holds every avatar), and PlaceNone otherwise. progress
// may be nil.
func Demo(cfg ArenaConfig, progress func(Progress)) (*DemoReport, error) {
	return DemoWith(cfg, DemoHooks{Progress: progress})
}

// DemoHooks are what a caller of DemoWith watches the run with; every
// field may be left zero.
type DemoHooks struct {
	// Progress is called once per second of game time.
	Progress func(Progress)
	// Watch is called every WatchEvery of game time with the world, which
	// it may read but not change (World.SetWatch).
	Watch      func(w *World, now time.Duration)
	WatchEvery time.Duration
	// Episodes receives every missing stretch of an object in a node's
	// view as it ends (World.TraceEpisodes).
	Episodes func(truth.Episode)
}

// DemoWith is Demo watched by h.
func DemoWith(cfg ArenaConfig, h DemoHooks) (*DemoReport, error) {
	if cfg.Data == "" {
		cfg.Data = SitesWonder
	}
	if cfg.Data != SitesWonder {
		return nil, fmt.Errorf("%w: the world demo runs on WonderNetwork cities, not %q", lab.ErrConfig, cfg.Data)
	}
	if len(cfg.Cities) == 0 {
		cfg.Cities = cities.ForNodes(cfg.Nodes)
	}
	if cfg.Placement.Mode == "" {
		cfg.Placement.Mode = DemoPlacement(cfg)
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	w, err := NewArena(cfg)
	if err != nil {
		return nil, err
	}
	if h.Watch != nil {
		w.SetWatch(h.WatchEvery, func(now time.Duration) { h.Watch(w, now) })
	}
	if h.Episodes != nil {
		w.TraceEpisodes(h.Episodes)
	}
	if err := w.Run(h.Progress); err != nil {
		return nil, err
	}
	rep := &DemoReport{Result: w.Result(), Config: cfg}
	if w.Infra() != 0 {
		rep.InfraSite = rep.Summary.PerNode[len(rep.Summary.PerNode)-1].Site
	}
	if cfg.Placement.Mode == PlaceCMA {
		// The instances and their player hosts run in a world of their
		// own beside the main one (a second, small simulation).
		if rep.Instances, err = RunInstances(InstancesConfig{Seed: cfg.Seed, Workers: cfg.Workers}, nil); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// DemoPlacement is the world demo's default placement for c: PlaceCMA on
// game servers (PlayersPerNode above 1, not client-server), else
// PlaceNone.
func DemoPlacement(c ArenaConfig) PlacementMode {
	if c.PlayersPerNode > 1 && c.Arch != discovery.ClientServer {
		return PlaceCMA
	}
	return PlaceNone
}

// WriteTable prints the demo's final table.
func (r *DemoReport) WriteTable(w io.Writer) error {
	c, s := r.Config, r.Summary
	mw, mh := arena.Size(c.Map, c.Players())
	arch := string(c.Arch)
	if c.Arch == discovery.Colyseus {
		arch += " (" + c.KeyMap + ")"
	}
	fmt.Fprintf(w, "world demo: %d nodes × %d bots = %d players, %s architecture, %s map %.0f × %.0f m, %v of game time, seed %d\n",
		c.Nodes, c.PlayersPerNode, c.Players(), arch, c.Map, mw, mh, c.Duration, c.Seed)
	fmt.Fprintf(w, "network: %s\n", c.Net())
	fmt.Fprintf(w, "nodes:   WonderNetwork cities %s\n", listCities(c.Cities[:c.Nodes]))
	switch c.Arch {
	case discovery.Directory:
		fmt.Fprintf(w, "         + the directory's rendezvous node, at %s (least mean delay to the nodes)\n", r.InfraSite)
	case discovery.ClientServer:
		fmt.Fprintf(w, "         + the central server holding every primary, at %s (least mean delay to the nodes)\n", r.InfraSite)
	}
	if pr := r.Placement; pr != nil {
		pr.writeLines(w)
		if r.Instances != nil {
			r.Instances.WriteLines(w)
			fmt.Fprintln(w)
		}
	} else if c.PlayersPerNode == 1 {
		fmt.Fprintf(w, "players: one per node, each node its player's own machine (placement none)\n\n")
	} else {
		fmt.Fprintf(w, "players: bot k on node k/%d, the game's own split (placement none)\n\n", c.PlayersPerNode)
	}

	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("%-34s %8s %11s", "per-node bandwidth, kB/s in + out", "mean", "p95 of 1 s")
	for cl := range wire.NumClasses {
		p(" %11s", wire.Class(cl))
	}
	p("\n")
	row := func(name string, g NodeGroupBandwidth) {
		p("%-34s %8.1f %11.1f", name, g.Mean.Total/1e3, g.P95.Total/1e3)
		for _, cr := range g.ByClass {
			p(" %11.1f", cr.Total/1e3)
		}
		p("\n")
	}
	row(fmt.Sprintf("player nodes (%d)", r.Players.Nodes), r.Players)
	switch c.Arch {
	case discovery.Directory:
		row("rendezvous", r.Infra)
	case discovery.ClientServer:
		row("central server", r.Infra)
	}
	p("%-34s %8.1f\n\n", "all nodes: kB sent per second", r.Aggregate/1e3)
	p("%-34s", "missing replicas")
	for _, m := range s.Views.Missing {
		p(" %8s", fmt.Sprintf("%g ms", m.GraceMs))
	}
	if r.Config.Warmup > 0 {
		p("   (grace after entering the interest; from %v on)\n%-34s", r.Config.Warmup, "  share of objects in interest")
	} else {
		p("   (grace after entering the interest)\n%-34s", "  share of objects in interest")
	}
	for _, m := range s.Views.Missing {
		p(" %7.2f%%", 100*m.Fraction)
	}
	if len(s.Views.MissingMoving) > 0 {
		p("\n%-34s", "  of moving objects alone")
		for _, m := range s.Views.MissingMoving {
			p(" %7.2f%%", 100*m.Fraction)
		}
	}
	if len(s.Views.Floor) > 0 {
		p("\n%-34s", "  floor: created too recently for")
		for _, m := range s.Views.Floor {
			p(" %7.2f%%", 100*m.Fraction)
		}
		p("   (all objects)\n%-34s", "  any protocol to have delivered")
		for _, m := range s.Views.FloorMoving {
			p(" %7.2f%%", 100*m.Fraction)
		}
		p("   (moving objects)")
	}
	p("\n\n%-34s %8s %8s %8s %8s %8s %8s\n", "ms", "mean", "p50", "p95", "p99", "max", "samples")
	d := s.Views.Discovery
	p("%-34s %8.0f %8.0f %8.0f %8.0f %8.0f %8d\n", "discovery latency", d.Mean, d.P50, d.P95, d.P99, d.Max, d.Count)
	p("%-34s %8d (%.1f%% of the discoveries due: left the interest before they were found)\n", "  abandoned", s.Views.Abandoned, 100*s.Views.AbandonedShare)
	if len(s.Views.Floor) > 0 {
		due := s.Views.Abandoned + uint64(d.Count)
		share := 0.0
		if due > 0 {
			share = float64(s.Views.FloorAbandoned) / float64(due)
		}
		p("%-34s %8d (%.1f%% of the discoveries due: gone before any protocol could have delivered them)\n", "    of them at the floor", s.Views.FloorAbandoned, 100*share)
	}
	st := s.Staleness
	p("%-34s %8.0f %8.0f %8.0f %8.0f %8.0f %8d\n", "replica staleness", st.Mean, st.P50, st.P95, st.P99, st.Max, st.Count)
	fmt.Fprintf(w, "\nbytes per update on the wire: %.1f (all update-class bytes: payloads, IPv4/UDP headers, replica requests);\n", r.BytesPerUpdate)
	fmt.Fprintf(w, "                %.1f in updates frames (entry + frame header); %.0f object updates/s in all (%.0f per node)\n",
		r.FrameBytesPerUpdate, r.UpdatesPerS, r.UpdatesPerS/float64(c.Nodes))
	fmt.Fprintf(w, "simulation: %d events in %.2f s wall: %.2g events/s, %.1f× real time\n",
		r.Events, r.Wall.Seconds(), r.EventsPerS(), r.SpeedFactor())
	if s := r.Sim(); s != nil {
		nc, big := s.Clusters()
		fmt.Fprintf(w, "            on %d workers: %d clusters of nearby nodes (largest %d), %v windows, %d of them in parallel\n",
			s.Config().Workers, nc, big, s.Lookahead(), s.ParallelWindows())
	}
	return nil
}

func listCities(cs []string) string {
	if len(cs) <= 8 {
		return strings.Join(cs, ", ")
	}
	return strings.Join(cs[:8], ", ") + fmt.Sprintf(", … (%d in all)", len(cs))
}
