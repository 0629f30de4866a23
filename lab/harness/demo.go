package harness

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/place/cma"
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
	// Delay is the players' modelled RTT to their node (ms) after
	// place/cma's exact assignment (SA) of Players() players drawn from
	// GeoNames cities by population to the nodes, PlayersPerNode seats each.
	Delay cma.Stats
}

// Demo runs the world demo: the players of each node are drawn with
// geo.Population and assigned to the nodes (WonderNetwork cities) with
// place/cma, then the game runs on the nodes in the simulator. cfg.Data
// must be SitesWonder (empty Cities: cities.ForNodes). progress may be nil.
func Demo(cfg ArenaConfig, progress func(Progress)) (*DemoReport, error) {
	if cfg.Data == "" {
		cfg.Data = SitesWonder
	}
	if cfg.Data != SitesWonder {
		return nil, fmt.Errorf("%w: the world demo runs on WonderNetwork cities, not %q", lab.ErrConfig, cfg.Data)
	}
	if len(cfg.Cities) == 0 {
		cfg.Cities = cities.ForNodes(cfg.Nodes)
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	delay, err := demoAssign(cfg)
	if err != nil {
		return nil, err
	}
	w, err := NewArena(cfg)
	if err != nil {
		return nil, err
	}
	if err := w.Run(progress); err != nil {
		return nil, err
	}
	rep := &DemoReport{Result: w.Result(), Config: cfg, Delay: delay}
	if w.Infra() != 0 {
		rep.InfraSite = rep.Summary.PerNode[len(rep.Summary.PerNode)-1].Site
	}
	return rep, nil
}

// streamDemo is the random stream of the demo's players, from the seed.
const streamDemo = 0x64656d6f // "demo"

// demoAssign draws the players and assigns them to the nodes' cities.
func demoAssign(cfg ArenaConfig) (cma.Stats, error) {
	pop, pings, err := cities.Population()
	if err != nil {
		return cma.Stats{}, err
	}
	servers, err := cities.Indices(pings, cfg.Cities[:cfg.Nodes])
	if err != nil {
		return cma.Stats{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, streamDemo))
	m, err := pop.Matrix(pop.Draw(cfg.Players(), rng), servers)
	if err != nil {
		return cma.Stats{}, fmt.Errorf("lab/harness: delays: %w", err)
	}
	mirrors := make([]cma.Mirror, cfg.Nodes)
	for j := range mirrors {
		mirrors[j] = cma.Mirror{ID: cfg.Cities[j], Capacity: cfg.PlayersPerNode}
	}
	a, err := cma.New(mirrors, cma.SA)
	if err != nil {
		return cma.Stats{}, fmt.Errorf("lab/harness: %w", err)
	}
	for i, name := range m.RowNames() {
		if _, err := a.Join(fmt.Sprintf("%d:%s", i, name), m.Row(i)); err != nil {
			return cma.Stats{}, fmt.Errorf("lab/harness: assign: %w", err)
		}
	}
	return a.Stats(100), nil
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
	fmt.Fprintf(w, "players: drawn from GeoNames cities by population, assigned to the nodes by place/cma (SA, %d seats each);\n", c.PlayersPerNode)
	fmt.Fprintf(w, "         player-to-node RTT mean %.1f ms, p95 %.1f ms, max %.1f ms (modelled, geo.Population)\n\n", r.Delay.Mean, r.Delay.P95, r.Delay.Max)

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
	p("\n\n%-34s %8s %8s %8s %8s %8s %8s\n", "ms", "mean", "p50", "p95", "p99", "max", "samples")
	d := s.Views.Discovery
	p("%-34s %8.0f %8.0f %8.0f %8.0f %8.0f %8d\n", "discovery latency", d.Mean, d.P50, d.P95, d.P99, d.Max, d.Count)
	p("%-34s %8d (%.1f%% of the discoveries due: left the interest before they were found)\n", "  abandoned", s.Views.Abandoned, 100*s.Views.AbandonedShare)
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
