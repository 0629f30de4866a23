package colyseus

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/wire"
)

// BandwidthConfig is the Colyseus Fig. 12(a) comparison: per-node bandwidth
// against the number of nodes for each architecture on the model workload.
type BandwidthConfig struct {
	// Nodes are the node counts to run (the paper's x axis).
	Nodes []int
	// Archs are the architectures to compare.
	Archs []discovery.Arch
	// PlayersPerNode: 1 is the paper's peer-to-peer setting of Fig. 12(a).
	PlayersPerNode int
	// Map: the paper's Fig. 12(a) uses rect maps.
	Map arena.MapType
	// Duration is the game time of each run.
	Duration time.Duration
	// Seed is the seed of every run; Slice the PlanetLab time slice.
	Seed  uint64
	Slice int
	// Net is the network every run emulates (geo.WAN, or the zero
	// Network: the latency table's delays alone, the default).
	Net geo.Network
}

// DefaultBandwidthConfig is the full sweep: 9 to 96 peer-to-peer nodes on
// rect maps, 60 s of game time each, all three architectures. It takes
// about a minute on 2 cores.
func DefaultBandwidthConfig() BandwidthConfig {
	return BandwidthConfig{Nodes: []int{9, 16, 32, 48, 64, 96}, Archs: Baselines(), PlayersPerNode: 1,
		Map: arena.Rect, Duration: 60 * time.Second, Seed: 1, Slice: 1}
}

// QuickBandwidthConfig is a CI-sized sweep: 9, 16 and 32 nodes, 20 s each.
func QuickBandwidthConfig() BandwidthConfig {
	c := DefaultBandwidthConfig()
	c.Nodes = []int{9, 16, 32}
	c.Duration = 20 * time.Second
	return c
}

// Validate checks the configuration; errors wrap lab.ErrConfig.
func (c BandwidthConfig) Validate() (BandwidthConfig, error) {
	c.Nodes, c.Archs = slices.Clone(c.Nodes), slices.Clone(c.Archs)
	if len(c.Nodes) == 0 || len(c.Nodes) > 50 {
		return c, fmt.Errorf("%w: %d node counts: want 1 to 50", lab.ErrConfig, len(c.Nodes))
	}
	if len(c.Archs) == 0 {
		return c, fmt.Errorf("%w: no architectures", lab.ErrConfig)
	}
	switch {
	case c.PlayersPerNode < 1 || c.PlayersPerNode > 1000:
		return c, fmt.Errorf("%w: players per node %d: want 1 to 1000", lab.ErrConfig, c.PlayersPerNode)
	case c.Slice < 1 || c.Slice > 18:
		return c, fmt.Errorf("%w: PlanetLab slice %d: want 1 to 18", lab.ErrConfig, c.Slice)
	case c.Duration < time.Second || c.Duration > time.Hour:
		return c, fmt.Errorf("%w: duration %v: want 1s to 1h", lab.ErrConfig, c.Duration)
	case c.Map != arena.Sqr && c.Map != arena.Rect:
		return c, fmt.Errorf("%w: map %v: want sqr or rect", lab.ErrConfig, c.Map)
	case c.Net.Validate() != nil:
		return c, fmt.Errorf("%w: network: %w", lab.ErrConfig, c.Net.Validate())
	}
	slices.Sort(c.Nodes)
	for i, n := range c.Nodes {
		if i > 0 && n == c.Nodes[i-1] {
			return c, fmt.Errorf("%w: node count %d listed twice", lab.ErrConfig, n)
		}
	}
	for i, a := range c.Archs {
		if _, err := discovery.ParseArch(string(a)); err != nil {
			return c, fmt.Errorf("%w: architecture %q: want directory, broadcast, client-server or colyseus", lab.ErrConfig, a)
		}
		if slices.Contains(c.Archs[:i], a) {
			return c, fmt.Errorf("%w: architecture %s listed twice", lab.ErrConfig, a)
		}
	}
	for _, n := range c.Nodes {
		if _, err := c.world(c.Archs[0], n).Validate(); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c BandwidthConfig) world(a discovery.Arch, n int) harness.ArenaConfig {
	w := harness.DefaultArenaConfig()
	w.Arch, w.Nodes, w.PlayersPerNode, w.Map, w.Duration, w.Seed, w.Slice = a, n, c.PlayersPerNode, c.Map, c.Duration, c.Seed, c.Slice
	w.SetNet(c.Net)
	return w
}

// BandwidthReport is the outcome of Bandwidth: one result per (node count,
// architecture), in that order.
type BandwidthReport struct {
	Config  BandwidthConfig
	Results []*harness.Result
	Elapsed time.Duration
}

// Bandwidth runs the sweep. progress (may be nil) is called with the game
// seconds simulated so far and in all.
func Bandwidth(cfg BandwidthConfig, progress func(done, total int)) (*BandwidthReport, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	secs := int((cfg.Duration + time.Second - 1) / time.Second)
	total := secs * len(cfg.Nodes) * len(cfg.Archs)
	done := 0
	rep := &BandwidthReport{Config: cfg}
	for _, n := range cfg.Nodes {
		for _, a := range cfg.Archs {
			base := done
			res, err := harness.RunArena(cfg.world(a, n), func(p harness.Progress) {
				if progress != nil {
					progress(base+int(p.Virtual/time.Second), total)
				}
			})
			if err != nil {
				return nil, fmt.Errorf("lab world: %s, %d nodes: %w", a, n, err)
			}
			res.DropSeries() // keep the summary only
			rep.Results = append(rep.Results, res)
			done = base + secs
		}
	}
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// result returns the run of (a, n), or nil.
func (r *BandwidthReport) result(a discovery.Arch, n int) *harness.Result {
	for _, res := range r.Results {
		if res.Config.Arch == a && res.Config.Nodes == n {
			return res
		}
	}
	return nil
}

// WriteCSV writes world-bandwidth.csv (one row per run: bandwidth per node,
// its p95 of 1 s bursts, the infrastructure node's, the aggregate, each
// class, the missing replicas, discovery latency, staleness, bytes per
// update and the simulation's speed) into dir and returns its path.
func (r *BandwidthReport) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/colyseus: %w", err)
	}
	path := filepath.Join(dir, "world-bandwidth.csv")
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("lab/colyseus: %w", err)
	}
	err = r.writeCSV(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("lab/colyseus: %s: %w", path, err)
	}
	return []string{path}, nil
}

func (r *BandwidthReport) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	head := []string{"arch", "nodes", "players", "node_mean_Bps", "node_p95_Bps", "node_mean_in_Bps", "node_mean_out_Bps",
		"infra_mean_Bps", "infra_p95_Bps", "aggregate_sent_Bps"}
	for c := range wire.NumClasses {
		head = append(head, "node_"+wire.Class(c).String()+"_Bps")
	}
	head = append(head, "missing_0ms", "missing_100ms", "missing_400ms", "discovery_mean_ms", "discovery_p95_ms",
		"staleness_mean_ms", "staleness_p95_ms", "updates_per_s", "bytes_per_update", "frame_bytes_per_update", "events", "wall_s")
	if err := cw.Write(head); err != nil {
		return err
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, res := range r.Results {
		s := res.Summary
		row := []string{string(res.Config.Arch), strconv.Itoa(res.Config.Nodes), strconv.Itoa(res.Config.Nodes * r.Config.PlayersPerNode),
			g(res.Players.Mean.Total), g(res.Players.P95.Total), g(res.Players.Mean.In), g(res.Players.Mean.Out),
			g(res.Infra.Mean.Total), g(res.Infra.P95.Total), g(res.Aggregate)}
		for _, cr := range res.Players.ByClass {
			row = append(row, g(cr.Total))
		}
		for k := range 3 {
			v := 0.0
			if k < len(s.Views.Missing) {
				v = s.Views.Missing[k].Fraction
			}
			row = append(row, g(v))
		}
		row = append(row, g(s.Views.Discovery.Mean), g(s.Views.Discovery.P95), g(s.Staleness.Mean), g(s.Staleness.P95),
			g(res.UpdatesPerS), g(res.BytesPerUpdate), g(res.FrameBytesPerUpdate), strconv.FormatUint(res.Events, 10),
			g(res.Wall.Seconds()))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// archColor gives every architecture one colour in every figure.
func archColor(a discovery.Arch) color.Color {
	switch a {
	case discovery.ClientServer:
		return report.Red
	case discovery.Broadcast:
		return report.Orange
	}
	return report.Blue
}

// WritePlots draws into dir:
//
//   - world-bandwidth.png: Fig. 12(a): mean per-node bandwidth (in + out)
//     against the number of nodes, with the 95th percentile of 1 s bursts
//     as the error bar, per architecture; the central server's and the
//     rendezvous's own bandwidth dashed; the directory's aggregate (bytes
//     sent by all nodes per second) dotted; log scale;
//   - world-classes.png: the player nodes' mean bandwidth by traffic class
//     against the number of nodes, one panel per architecture.
func (r *BandwidthReport) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/colyseus: %w", err)
	}
	c := r.Config
	title := fmt.Sprintf("per-node bandwidth, %s, %d player(s) per node, %v runs (seed %d)", c.Map, c.PlayersPerNode, c.Duration, c.Seed)
	p := report.NewPlot(title, "nodes", "kB/s (in + out), log scale")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for _, a := range c.Archs {
		var pts plotter.XYs
		var errs plotter.YErrors
		var infra, agg plotter.XYs
		for _, n := range c.Nodes {
			res := r.result(a, n)
			if res == nil {
				continue
			}
			m := res.Players.Mean.Total / 1e3
			pts = append(pts, plotter.XY{X: float64(n), Y: m})
			errs = append(errs, struct{ Low, High float64 }{0, max(0, res.Players.P95.Total/1e3-m)})
			if a.HasInfra() {
				infra = append(infra, plotter.XY{X: float64(n), Y: res.Infra.Mean.Total / 1e3})
			}
			if a == discovery.Directory {
				agg = append(agg, plotter.XY{X: float64(n), Y: res.Aggregate / 1e3})
			}
		}
		if len(pts) == 0 {
			continue
		}
		col := archColor(a)
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("lab/colyseus: %w", err)
		}
		l.Color, s.Color = col, col
		p.Add(l, s)
		p.Legend.Add(string(a)+" (player node, bar: p95 of 1 s)", l, s)
		eb := &plotter.YErrorBars{XYs: pts, YErrors: errs, LineStyle: draw.LineStyle{Color: col, Width: vg.Points(1)}, CapWidth: vg.Points(5)}
		p.Add(eb)
		if len(infra) > 0 {
			li, err := plotter.NewLine(infra)
			if err != nil {
				return nil, fmt.Errorf("lab/colyseus: %w", err)
			}
			li.Color, li.Dashes = col, []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(li)
			name := "central server"
			if a == discovery.Directory {
				name = "directory: rendezvous node"
			}
			p.Legend.Add(name, li)
		}
		if len(agg) > 0 {
			la, err := plotter.NewLine(agg)
			if err != nil {
				return nil, fmt.Errorf("lab/colyseus: %w", err)
			}
			la.Color, la.Dashes = col, []vg.Length{vg.Points(1), vg.Points(3)}
			p.Add(la)
			p.Legend.Add("directory: aggregate (all nodes, sent)", la)
		}
	}
	var files []string
	path := filepath.Join(dir, "world-bandwidth.png")
	if err := report.SavePNG(path, 8*vg.Inch, 5.5*vg.Inch, p); err != nil {
		return nil, err
	}
	files = append(files, path)

	var panels []*plot.Plot
	classCols := []color.Color{report.Blue, report.Orange,
		report.Green, report.Purple, color.Gray{Y: 100}}
	for _, a := range c.Archs {
		q := report.NewPlot(fmt.Sprintf("%s: player node by class", a), "nodes", "kB/s (in + out)")
		for cl := range wire.NumClasses {
			var pts plotter.XYs
			nonzero := false
			for _, n := range c.Nodes {
				if res := r.result(a, n); res != nil {
					v := res.Players.ByClass[cl].Total / 1e3
					nonzero = nonzero || v > 0
					pts = append(pts, plotter.XY{X: float64(n), Y: v})
				}
			}
			if !nonzero {
				continue
			}
			l, s, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, fmt.Errorf("lab/colyseus: %w", err)
			}
			l.Color, s.Color = classCols[cl%len(classCols)], classCols[cl%len(classCols)]
			q.Add(l, s)
			q.Legend.Add(wire.Class(cl).String(), l, s)
		}
		panels = append(panels, q)
	}
	path = filepath.Join(dir, "world-classes.png")
	if err := report.SavePNG(path, vg.Length(len(panels))*4.5*vg.Inch, 4*vg.Inch, panels...); err != nil {
		return files, err
	}
	return append(files, path), nil
}

// speedText formats a speed factor (× real time) with two significant
// digits below 10, so that a run slower than real time does not read as 1.
func speedText(f float64) string {
	switch {
	case f >= 10:
		return fmt.Sprintf("%.0f", f)
	case f >= 1:
		return fmt.Sprintf("%.1f", f)
	}
	return fmt.Sprintf("%.2f", f)
}

// WriteTable prints the sweep and the paper's claims beside ours.
func (r *BandwidthReport) WriteTable(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "Colyseus Fig. 12(a) (Bharambe et al., NSDI 2006, §7.1): per-node bandwidth vs node count\n")
	fmt.Fprintf(w, "workload    the model game (arena), %d bot(s) per node, %s maps at a 16-player map's density, %v of game time per run, seed %d\n",
		c.PlayersPerNode, c.Map, c.Duration, c.Seed)
	fmt.Fprintf(w, "network     PlanetLab slice %d (nodes on distinct hosts drawn from the seed); bandwidth = bytes/s in + out incl. 28-byte IPv4/UDP headers\n", c.Slice)
	if !c.Net.Perfect() {
		fmt.Fprintf(w, "            beside the latencies, every packet: %s\n", c.Net)
	}
	fmt.Fprintf(w, "            directory and client-server add one node (rendezvous / central server) at the host with the least mean delay\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("arch\tnodes\tnode kB/s\tp95 1 s\tserver/rdv kB/s\taggregate kB/s\tmissing 0/100/400 ms\tdiscovery ms\tstaleness ms\tB/update\tevents\t× real time\t\n")
	for _, res := range r.Results {
		s := res.Summary
		miss := ""
		for k, m := range s.Views.Missing {
			if k > 0 {
				miss += " / "
			}
			miss += fmt.Sprintf("%.1f%%", 100*m.Fraction)
		}
		infra := "–"
		if res.Config.Arch.HasInfra() {
			infra = fmt.Sprintf("%.1f", res.Infra.Mean.Total/1e3)
		}
		p("%s\t%d\t%.2f\t%.2f\t%s\t%.1f\t%s\t%.0f\t%.0f\t%.1f\t%d\t%s\t\n", res.Config.Arch, res.Config.Nodes,
			res.Players.Mean.Total/1e3, res.Players.P95.Total/1e3, infra, res.Aggregate/1e3, miss,
			s.Views.Discovery.Mean, s.Staleness.Mean, res.BytesPerUpdate, res.Events, speedText(res.SpeedFactor()))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n")
	lo, hi := c.Nodes[0], c.Nodes[len(c.Nodes)-1]
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p = func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("claim (paper §7.1, §6.3)\tpaper\toverworld\t\n")
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f×", a/b)
	}
	dirLo, bcLo := r.result(discovery.Directory, lo), r.result(discovery.Broadcast, lo)
	if dirLo != nil && bcLo != nil {
		p("at %d nodes: directory node ÷ broadcast node\t> 1 (location overhead; 9 players)\t%s\t\n", lo,
			ratio(dirLo.Players.Mean.Total, bcLo.Players.Mean.Total))
	}
	dirHi, bcHi, csHi := r.result(discovery.Directory, hi), r.result(discovery.Broadcast, hi), r.result(discovery.ClientServer, hi)
	if dirHi != nil && bcHi != nil {
		p("at %d nodes: broadcast node ÷ directory node\t≈ 10× (an order of magnitude)\t%s\t\n", hi,
			ratio(bcHi.Players.Mean.Total, dirHi.Players.Mean.Total))
	}
	if dirHi != nil && csHi != nil {
		p("at %d nodes: central server ÷ directory node\t≈ 10× (an order of magnitude)\t%s\t\n", hi,
			ratio(csHi.Infra.Mean.Total, dirHi.Players.Mean.Total))
		p("at %d nodes: directory aggregate ÷ central server\t≈ 5 (overall overhead factor)\t%s\t\n", hi,
			ratio(dirHi.Aggregate, csHi.Infra.Mean.Total))
	}
	if dirLo != nil && dirHi != nil && bcLo != nil && bcHi != nil {
		p("growth %d → %d nodes: directory node / broadcast node\tdirectory rises much more slowly\t%s / %s\t\n", lo, hi,
			ratio(dirHi.Players.Mean.Total, dirLo.Players.Mean.Total), ratio(bcHi.Players.Mean.Total, bcLo.Players.Mean.Total))
	}
	if dirHi != nil && dirHi.Players.Mean.Total > 0 {
		p("at %d nodes: update share of a directory node's traffic\t> 75%% (Fig. 12(c), Quake II)\t%.0f%%\t\n", hi,
			100*dirHi.Players.ByClass[wire.ClassUpdate].Total/dirHi.Players.Mean.Total)
	}
	at := hi
	for _, n := range c.Nodes {
		if n <= 64 {
			at = n
		}
	}
	for _, a := range c.Archs {
		if res := r.result(a, at); res != nil {
			m := res.Summary.Views.Missing
			if len(m) == 3 {
				paper := "–"
				if a == discovery.Directory {
					paper = "≈ 4% / 2% / 1% (64 nodes)"
				}
				p("missing replicas, 0/100/400 ms grace, %s, %d nodes\t%s\t%.1f%% / %.1f%% / %.1f%%\t\n", a, at, paper,
					100*m[0].Fraction, 100*m[1].Fraction, 100*m[2].Fraction)
			}
		}
	}
	return tw.Flush()
}

// Baselines lists the three baseline architectures of Colyseus §7.1 in the
// order the lab reports them.
func Baselines() []discovery.Arch {
	return []discovery.Arch{discovery.ClientServer, discovery.Broadcast, discovery.Directory}
}
