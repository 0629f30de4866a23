package lab

import (
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/lab/report"
	osim "github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// The paper's printed numbers (Colyseus, NSDI 2006).
var (
	// paperDirect is Fig. 7(b): % of updates that bypass discovery.
	paperDirect = map[string]float64{kindBot: 98.97, kindMissile: 64.80, "all": 91.69}
	// paperProactive is Table 1: mean % missing missiles, on and off, by
	// node count (8 players per node).
	paperProactive = map[int][2]float64{28: {27.5, 72.9}, 50: {23.9, 64.5}, 96: {27.2, 72.9}}
	// paperMissing64 is Fig. 11 at 64 nodes: % missing at 0, 100, 400 ms;
	// overworld's targets are half of it.
	paperMissing64 = [3]float64{4, 2, 1}
)

// paperBalance is Table 2 (96-fed-rect): per-node total and matching
// bandwidth normalised by the mean (std-dev, max), and % missing.
var paperBalance = []struct {
	label                          string
	totStd, totMax, matStd, matMax float64
	missing                        string
}{
	{"dht", 0.30, 1.93, 1.01, 4.41, "8% ± 6%"},
	{"loadbal (rangedht)", 0.15, 1.45, 0.57, 2.57, "10% ± 9%"},
}

// WriteCSV writes colyseus-runs.csv (one row per world: its setting, the
// per-node bandwidth in and out by class, the spread over nodes, the missing
// replicas overall and per kind, the share of direct updates per kind,
// discovery latency, route hops, route frames and cache hits, the ring load
// spread before and after load balancing) into dir and returns its path.
func (r *LabColyseusReport) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	head := []string{"group", "arch", "keymap", "map", "nodes", "players_per_node", "players", "duration_s", "pred_time_s",
		"balance", "proactive", "prefetch_m", "node_mean_Bps", "node_p95_Bps", "node_out_Bps"}
	for c := range wire.NumClasses {
		head = append(head, "node_out_"+wire.Class(c).String()+"_Bps")
	}
	for c := range wire.NumClasses {
		head = append(head, "node_"+wire.Class(c).String()+"_Bps")
	}
	head = append(head, "infra_mean_Bps", "aggregate_sent_Bps", "total_std_norm", "total_max_norm", "matching_std_norm",
		"matching_max_norm", "missing_node_std", "missing_0ms", "missing_100ms", "missing_400ms")
	kinds := []string{kindBot, kindMissile, kindItem}
	for _, k := range kinds {
		short := k[len("arena."):]
		head = append(head, short+"_missing_0ms", short+"_missing_100ms", short+"_missing_400ms", short+"_direct_share",
			short+"_held_on_entry_share", short+"_updates")
	}
	head = append(head, "discovery_entry_mean_ms", "discovery_entry_p50_ms", "match_latency_p50_ms", "match_routing_p50_ms",
		"match_matching_p50_ms", "match_latency_mean_ms", "matches", "hops_mean", "hops_p99", "balance_moves", "events", "wall_s",
		"paper_routing", "zipf", "tile_zipf", "routes", "route_frames", "route_cache_hits", "route_frames_per_sub",
		"load_max_norm_before", "load_max_norm_after")
	rows := [][]string{head}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	msf := func(d time.Duration) string { return g(float64(d) / float64(time.Millisecond)) }
	for _, run := range r.Runs {
		res, c, s := run.Result, run.Config(), run.Result.Summary
		km := c.KeyMap
		if c.Arch != discovery.Colyseus {
			km = ""
		}
		row := []string{run.Group, string(c.Arch), km, c.Map.String(), strconv.Itoa(c.Nodes), strconv.Itoa(c.PlayersPerNode),
			strconv.Itoa(c.Players()), g(c.Duration.Seconds()), g(max(c.PredTime, 0).Seconds()), strconv.FormatBool(c.Balance),
			strconv.FormatBool(!c.NoProactive), g(c.Prefetch), g(res.Players.Mean.Total), g(res.Players.P95.Total), g(run.OutTotal)}
		for _, v := range run.Out {
			row = append(row, g(v))
		}
		for _, cr := range res.Players.ByClass {
			row = append(row, g(cr.Total))
		}
		ts, tm := run.Total.Norm()
		ms, mm := run.Matching.Norm()
		row = append(row, g(res.Infra.Mean.Total), g(res.Aggregate), g(ts), g(tm), g(ms), g(mm), g(run.MissingNodes.Std))
		for k := range 3 {
			v := 0.0
			if k < len(s.Views.Missing) {
				v = s.Views.Missing[k].Fraction
			}
			row = append(row, g(v))
		}
		for _, name := range kinds {
			kv, _ := run.Kind(name)
			row = append(row, g(kv.MissingAt(0)), g(kv.MissingAt(1)), g(kv.MissingAt(2)), g(kv.DirectShare()),
				g(kv.HeldOnEntryShare()), strconv.FormatUint(kv.Updates, 10))
		}
		st := &run.Ring.Stats
		row = append(row, g(s.Views.Discovery.Mean), g(s.Views.Discovery.P50), msf(st.Latency.Quantile(0.5)),
			msf(st.Routing.Quantile(0.5)), msf(st.Matching.Quantile(0.5)), msf(st.Latency.Mean()),
			strconv.FormatUint(st.Latency.Count(), 10), g(run.Ring.Hops), strconv.Itoa(run.Ring.HopsP99),
			strconv.FormatUint(run.Moves, 10), strconv.FormatUint(res.Events, 10), g(res.Wall.Seconds()))
		_, lb := run.LoadBefore.Norm()
		_, la := run.LoadAfter.Norm()
		rr := run.Ring
		row = append(row, strconv.FormatBool(c.PaperRouting), g(c.Zipf), g(c.TileZipf), strconv.FormatUint(rr.Routed, 10),
			strconv.FormatUint(rr.Forwarded, 10), strconv.FormatUint(rr.CacheHits, 10), g(rr.FramesPerSub()), g(lb), g(la))
		rows = append(rows, row)
	}
	path := filepath.Join(dir, "colyseus-runs.csv")
	if err := report.WriteCSV(path, rows); err != nil {
		return nil, err
	}
	return []string{path}, nil
}

// keyMapColor gives every key mapping one colour in every figure.
func keyMapColor(km string) color.Color {
	switch km {
	case locate.KeyMapRegions:
		return report.Red
	case locate.KeyMapLinear:
		return report.Green
	}
	return report.Blue
}

// dashes: solid, dashed, dotted, dash-dot.
var colyDashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(1.5), vg.Points(3)}, {vg.Points(6), vg.Points(3), vg.Points(1.5), vg.Points(3)}}

// colyLine adds a line with points to p, in col with dash style d.
func colyLine(p *plot.Plot, name string, pts plotter.XYs, col color.Color, d int) error {
	if len(pts) == 0 {
		return nil
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	l.Color, s.Color = col, col
	l.Dashes = colyDashes[d%len(colyDashes)]
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// WritePlots draws, for the selected experiments, into dir:
//
//   - colyseus-fig8.png: mean per-node bandwidth (in + out) and missing
//     player replicas against PredTime (Fig. 8);
//   - colyseus-fig9.png: mean per-node outbound bandwidth of routing,
//     matching and maintenance against node count, one panel per map, a
//     colour per key mapping, and a second row of panels with the paper's
//     routing when Config.PaperRouting (Fig. 9);
//   - colyseus-fig10.png: median discovery latency (match received minus
//     publication or subscription sent), routing and matching, against
//     node count, one panel per map (Fig. 10);
//   - colyseus-fig11.png: missing replicas at 0, 100 and 400 ms of grace
//     against node count, one panel per map (Fig. 11);
//   - colyseus-fig12a.png: per-node bandwidth against node count for
//     colyseus, broadcast and client-server (its server dashed), and
//     colyseus' aggregate, log scale (Fig. 12(a)).
func (r *LabColyseusReport) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	c := r.Config
	var files []string
	save := func(name string, w, h vg.Length, panels ...*plot.Plot) error {
		path := filepath.Join(dir, name)
		if err := report.SavePNG(path, w, h, panels...); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	blue, orange := report.Blue, report.Orange
	if c.has(ExpFig8) {
		bw := report.NewPlot(fmt.Sprintf("Fig. 8: %d-fed-rect, %s", c.PredNodes, c.KeyMaps[0]), "PredTime (s)", "per-node kB/s (in + out)")
		miss := report.NewPlot("missing player (bot) replicas", "PredTime (s)", "% missing")
		var pb, pr, pmt, pm, pl plotter.XYs
		for _, p := range c.PredTimes {
			run := r.fed(c.PredNodes, c.KeyMaps[0], c.FedDuration, predTime(p), false, false)
			if run == nil {
				continue
			}
			pb = append(pb, plotter.XY{X: p.Seconds(), Y: run.Result.Players.Mean.Total / 1e3})
			pr = append(pr, plotter.XY{X: p.Seconds(), Y: run.Result.Players.ByClass[wire.ClassDiscovery].Total / 1e3})
			pmt = append(pmt, plotter.XY{X: p.Seconds(), Y: run.Result.Players.ByClass[wire.ClassMatching].Total / 1e3})
			kv, _ := run.Kind(kindBot)
			pm = append(pm, plotter.XY{X: p.Seconds(), Y: 100 * kv.MissingAt(0)})
			pl = append(pl, plotter.XY{X: p.Seconds(), Y: 100 * kv.MissingAt(1)})
		}
		if err := colyLine(bw, "total", pb, blue, 0); err != nil {
			return files, err
		}
		if err := colyLine(bw, "routing", pr, blue, 1); err != nil {
			return files, err
		}
		if err := colyLine(bw, "matching", pmt, blue, 2); err != nil {
			return files, err
		}
		top := func(pts plotter.XYs) float64 {
			m := 0.0
			for _, q := range pts {
				m = max(m, q.Y)
			}
			return m
		}
		report.Headroom(bw, 0, top(pb))
		report.Headroom(miss, 0, top(pm))
		bw.Legend.Left, miss.Legend.Left = false, false
		if err := colyLine(miss, "0 ms grace", pm, orange, 0); err != nil {
			return files, err
		}
		if err := colyLine(miss, "100 ms grace", pl, orange, 1); err != nil {
			return files, err
		}
		if err := save("colyseus-fig8.png", 10*vg.Inch, 4*vg.Inch, bw, miss); err != nil {
			return files, err
		}
	}
	scaleRow := func(paper bool, ylabel string, log bool, lines func(run *ColyseusRun) []float64, labels []string,
		extra func(m arena.MapType, p *plot.Plot) (float64, error)) ([]*plot.Plot, error) {
		var panels []*plot.Plot
		for _, m := range c.ScaleMaps {
			title := fmt.Sprintf("p2p-%s", m)
			if paper {
				title += ", the paper's routing (no route cache, 4 long links)"
			}
			p := report.NewPlot(title, "nodes", ylabel)
			if log {
				p.Y.Scale = plot.LogScale{}
				p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
			}
			top := 0.0
			for _, km := range c.KeyMaps {
				for li, label := range labels {
					var pts plotter.XYs
					for _, n := range c.ScaleNodes {
						if run := r.scaleRouting(m, km, n, paper); run != nil {
							v := lines(run)[li]
							if log && v <= 0 {
								continue
							}
							pts = append(pts, plotter.XY{X: float64(n), Y: v})
							top = max(top, v)
						}
					}
					if err := colyLine(p, km+" "+label, pts, keyMapColor(km), li); err != nil {
						return nil, err
					}
				}
			}
			if extra != nil {
				t, err := extra(m, p)
				if err != nil {
					return nil, err
				}
				top = max(top, t)
			}
			if !log && top > 0 {
				// Room on top for the legend: one line per key mapping and label.
				p.Y.Min, p.Y.Max = 0, top*(1.15+0.08*float64(len(c.KeyMaps)*len(labels)))
			}
			panels = append(panels, p)
		}
		return panels, nil
	}
	scaleFig := func(name string, ylabel string, log bool, lines func(run *ColyseusRun) []float64, labels []string,
		extra func(m arena.MapType, p *plot.Plot) (float64, error)) error {
		panels, err := scaleRow(false, ylabel, log, lines, labels, extra)
		if err != nil {
			return err
		}
		return save(name, vg.Length(len(panels))*5.5*vg.Inch, 5*vg.Inch, panels...)
	}
	if c.has(ExpFig9) {
		lines := func(run *ColyseusRun) []float64 {
			return []float64{run.Out[wire.ClassDiscovery] / 1e3, run.Out[wire.ClassMatching] / 1e3, run.Out[wire.ClassMaintenance] / 1e3}
		}
		labels := []string{"routing", "matching", "maintenance"}
		var rows [][]*plot.Plot
		for _, paper := range []bool{false, true} {
			if paper && !c.PaperRouting {
				continue
			}
			row, err := scaleRow(paper, "per-node outbound kB/s", false, lines, labels, nil)
			if err != nil {
				return files, err
			}
			rows = append(rows, row)
		}
		if len(rows) == 2 {
			// The same y scale in both rows, to compare the routings.
			for j := range rows[0] {
				top := max(rows[0][j].Y.Max, rows[1][j].Y.Max)
				rows[0][j].Y.Max, rows[1][j].Y.Max = top, top
			}
		}
		path := filepath.Join(dir, "colyseus-fig9.png")
		if err := report.SaveGrid(path, vg.Length(len(rows[0]))*5.5*vg.Inch, vg.Length(len(rows))*5*vg.Inch, rows); err != nil {
			return files, err
		}
		files = append(files, path)
	}
	if c.has(ExpFig10) {
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		err := scaleFig("colyseus-fig10.png", "median discovery latency (ms)", false, func(run *ColyseusRun) []float64 {
			st := &run.Ring.Stats
			return []float64{ms(st.Latency.Quantile(0.5)), ms(st.Routing.Quantile(0.5)), ms(st.Matching.Quantile(0.5))}
		}, []string{"total", "routing", "matching"}, nil)
		if err != nil {
			return files, err
		}
	}
	if c.has(ExpFig11) {
		err := scaleFig("colyseus-fig11.png", "% replicas missing", false, func(run *ColyseusRun) []float64 {
			out := make([]float64, 3)
			for k, m := range run.Result.Summary.Views.Missing {
				if k < 3 {
					out[k] = 100 * m.Fraction
				}
			}
			return out
		}, []string{"0 ms", "100 ms", "400 ms"}, func(m arena.MapType, p *plot.Plot) (float64, error) {
			// overworld's series: the same locator with prefetch.
			top := 0.0
			if m != arena.Sqr || c.Prefetch <= 0 {
				return top, nil
			}
			for g, label := range []string{"0 ms", "100 ms", "400 ms"} {
				var pts plotter.XYs
				for _, n := range c.ScaleNodes {
					if run := r.overworld(n); run != nil && g < len(run.Result.Summary.Views.Missing) {
						v := 100 * run.Result.Summary.Views.Missing[g].Fraction
						pts = append(pts, plotter.XY{X: float64(n), Y: v})
						top = max(top, v)
					}
				}
				if err := colyLine(p, fmt.Sprintf("%s + prefetch %g m %s", c.KeyMaps[0], c.Prefetch, label), pts, color.Black, g); err != nil {
					return top, err
				}
			}
			return top, nil
		})
		if err != nil {
			return files, err
		}
	}
	if c.has(ExpFig12) {
		p := report.NewPlot("Fig. 12(a): p2p-rect, per-node bandwidth", "nodes", "kB/s (in + out), log scale")
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		for _, a := range []discovery.Arch{discovery.Colyseus, discovery.Broadcast, discovery.ClientServer} {
			var pts, infra, agg plotter.XYs
			for _, n := range c.ScaleNodes {
				run := r.baseline(a, n)
				if run == nil {
					continue
				}
				res := run.Result
				pts = append(pts, plotter.XY{X: float64(n), Y: res.Players.Mean.Total / 1e3})
				if a == discovery.ClientServer {
					infra = append(infra, plotter.XY{X: float64(n), Y: res.Infra.Mean.Total / 1e3})
				}
				if a == discovery.Colyseus {
					agg = append(agg, plotter.XY{X: float64(n), Y: res.Aggregate / 1e3})
				}
			}
			name := string(a) + " (player node)"
			if a == discovery.Colyseus {
				name = "colyseus, shape-picked key map (node)"
			}
			if err := colyLine(p, name, pts, archColor(a), 0); err != nil {
				return files, err
			}
			if err := colyLine(p, "client-server: central server", infra, archColor(a), 1); err != nil {
				return files, err
			}
			if err := colyLine(p, "colyseus aggregate (all nodes, sent)", agg, archColor(a), 2); err != nil {
				return files, err
			}
		}
		if err := save("colyseus-fig12a.png", 8*vg.Inch, 5.5*vg.Inch, p); err != nil {
			return files, err
		}
	}
	return files, nil
}

// WriteTable prints every selected experiment beside the paper's numbers.
func (r *LabColyseusReport) WriteTable(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "Colyseus (Bharambe et al., NSDI 2006) §5–§7: the distributed object locator (locate.Mercury on internal/ring)\n")
	fmt.Fprintf(w, "network   PlanetLab slice %d, seed %d; bandwidth = bytes/s incl. 28-byte IPv4/UDP headers; p2p = 1 bot per node, fed = %d\n",
		c.Slice, c.Seed, c.FedPlayers)
	fmt.Fprintf(w, "runs      %d worlds; scale sweep %v each, federated %v (load balancing: %v); the paper's runs are 8 min, measured over 5\n\n",
		len(r.Runs), c.ScaleDuration, c.FedDuration, c.BalanceDuration)
	pct := func(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }
	var tw *tabwriter.Writer
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	flush := func() error {
		if err := tw.Flush(); err != nil {
			return err
		}
		_, err := fmt.Fprintln(w)
		return err
	}
	newTW := func() { tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }

	if c.has(ExpFig7b) {
		m := c.fig7bMap()
		fmt.Fprintf(w, "Fig. 7(b): updates that bypass discovery (object already in the node's view at its previous frame), p2p-%s, %s\n", m, c.KeyMaps[0])
		fmt.Fprintf(w, "          (the paper: 96-fed-rect as if every player were on its own node); held = already replicated when it entered the view\n")
		newTW()
		p("nodes\tbots direct\tmissiles direct\titems direct\tall direct\tbots held\tmissiles held\titems held\t\n")
		for _, n := range c.ScaleNodes {
			run := r.scale(m, c.KeyMaps[0], n)
			if run == nil {
				continue
			}
			var upd, dir uint64
			cells := make([]string, 0, 7)
			for _, k := range []string{kindBot, kindMissile, kindItem} {
				kv, _ := run.Kind(k)
				upd += kv.Updates
				dir += kv.Direct
				cells = append(cells, pct(kv.DirectShare()))
			}
			cells = append(cells, pct(ratio(dir, upd)))
			for _, k := range []string{kindBot, kindMissile, kindItem} {
				kv, _ := run.Kind(k)
				cells = append(cells, pct(kv.HeldOnEntryShare()))
			}
			p("%d\t%s\t\n", n, strings.Join(cells, "\t"))
		}
		p("paper\t%.2f%%\t%.2f%%\t–\t%.2f%%\t\t\t\t\n", paperDirect[kindBot], paperDirect[kindMissile], paperDirect["all"])
		if err := flush(); err != nil {
			return err
		}
	}
	if c.has(ExpTable1) {
		fmt.Fprintf(w, "Table 1: missing missiles, proactive replication on / off, fed-rect (%d bots per node), %s\n", c.FedPlayers, c.KeyMaps[0])
		newTW()
		p("nodes\tplayers\ton 0 ms\toff 0 ms\ton 100 ms\toff 100 ms\tpaper on / off (0 ms)\tall objects on / off\t\n")
		for _, n := range c.ProactiveNodes {
			on := r.fed(n, c.KeyMaps[0], c.FedDuration, discovery.DefaultPredTime, false, false)
			off := r.fed(n, c.KeyMaps[0], c.FedDuration, discovery.DefaultPredTime, false, true)
			if on == nil || off == nil {
				continue
			}
			kon, _ := on.Kind(kindMissile)
			koff, _ := off.Kind(kindMissile)
			paper := "–"
			if v, ok := paperProactive[n]; ok {
				paper = fmt.Sprintf("%.1f%% / %.1f%%", v[0], v[1])
			}
			p("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s / %s\t\n", n, n*c.FedPlayers, pct(kon.MissingAt(0)), pct(koff.MissingAt(0)),
				pct(kon.MissingAt(1)), pct(koff.MissingAt(1)), paper,
				pct(on.Result.Summary.Views.Missing[0].Fraction), pct(off.Result.Summary.Views.Missing[0].Fraction))
		}
		if err := flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "paper (on / off): 28 nodes %.1f%% / %.1f%%, 50 nodes %.1f%% / %.1f%%, 96 nodes %.1f%% / %.1f%%; at 400 players, 100 ms after\n",
			paperProactive[28][0], paperProactive[28][1], paperProactive[50][0], paperProactive[50][1], paperProactive[96][0], paperProactive[96][1])
		fmt.Fprintf(w, "creation, 3.4%% of missiles missing on vs 28%% off\n\n")
	}
	if c.has(ExpFig8) {
		fmt.Fprintf(w, "Fig. 8: PredTime sweep, %d-fed-rect, %s (paper: bandwidth lowest near 1 s; missing players flat)\n", c.PredNodes, c.KeyMaps[0])
		newTW()
		p("PredTime\tnode kB/s\trouting\tmatching\tmaintenance\tupdate\tmissing bots 0 ms\t100 ms\tall 0 ms\t\n")
		best, bestBW := time.Duration(-1), 0.0
		for _, pt := range c.PredTimes {
			run := r.fed(c.PredNodes, c.KeyMaps[0], c.FedDuration, predTime(pt), false, false)
			if run == nil {
				continue
			}
			res := run.Result
			kv, _ := run.Kind(kindBot)
			bc := res.Players.ByClass
			p("%v\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t\n", pt, res.Players.Mean.Total/1e3, bc[wire.ClassDiscovery].Total/1e3,
				bc[wire.ClassMatching].Total/1e3, bc[wire.ClassMaintenance].Total/1e3, bc[wire.ClassUpdate].Total/1e3,
				pct(kv.MissingAt(0)), pct(kv.MissingAt(1)), pct(res.Summary.Views.Missing[0].Fraction))
			if best < 0 || res.Players.Mean.Total < bestBW {
				best, bestBW = pt, res.Players.Mean.Total
			}
		}
		if err := flush(); err != nil {
			return err
		}
		fmt.Fprintf(w, "sweet spot (least bandwidth): %v (paper ≈ 1 s)\n\n", best)
	}
	if c.has(ExpFig9, ExpFig10, ExpFig11) {
		fmt.Fprintf(w, "Figs. 9–11: p2p scale sweep. out = per-node outbound kB/s (Fig. 9); discovery = median ms from sending a publication or\n")
		fmt.Fprintf(w, "subscription to receiving its match, and its routing and matching parts (Fig. 10); missing at 0/100/400 ms grace (Fig. 11)\n")
		newTW()
		p("map\tkeymap\tnodes\tout kB/s\trouting\tmatching\tmaint.\tupdate\tdisc. ms\trouting\tmatching\thops\tmissing 0/100/400 ms\tentry→held mean ms\t× real time\t\n")
		for _, m := range c.ScaleMaps {
			for _, km := range c.KeyMaps {
				for _, n := range c.ScaleNodes {
					run := r.scale(m, km, n)
					if run == nil {
						continue
					}
					st, s := &run.Ring.Stats, run.Result.Summary
					o := run.Out
					p("%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%.2f\t%s\t%.0f\t%s\t\n", m, km, n, run.OutTotal/1e3,
						o[wire.ClassDiscovery]/1e3, o[wire.ClassMatching]/1e3, o[wire.ClassMaintenance]/1e3, o[wire.ClassUpdate]/1e3,
						ms(st.Latency.Quantile(0.5)), ms(st.Routing.Quantile(0.5)), ms(st.Matching.Quantile(0.5)), run.Ring.Hops,
						missing3(s.Views.Missing), s.Views.Discovery.Mean, speedText(run.Result.SpeedFactor()))
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		newTW()
		p("claim\tpaper\toverworld\t\n")
		at := headlineNodes(c.ScaleNodes, 64)
		for _, m := range c.ScaleMaps {
			for _, km := range c.KeyMaps {
				run := r.scale(m, km, at)
				if run == nil {
					continue
				}
				st := &run.Ring.Stats
				if c.has(ExpFig11) {
					paper := "–"
					if m == arena.Sqr && at == 64 {
						paper = fmt.Sprintf("≈ %.0f%% / %.0f%% / %.0f%% (target ≤ %.0f%% / %.0f%% / %.1f%%)", paperMissing64[0], paperMissing64[1],
							paperMissing64[2], paperMissing64[0]/2, paperMissing64[1]/2, paperMissing64[2]/2)
					}
					p("missing 0/100/400 ms, p2p-%s, %s, %d nodes\t%s\t%s\t\n", m, km, at, paper, missing3(run.Result.Summary.Views.Missing))
					if ow := r.overworld(at); ow != nil && m == arena.Sqr && km == c.KeyMaps[0] {
						p("missing 0/100/400 ms, p2p-sqr, %s + prefetch %g m, %d nodes (%.1f kB/s per node)\t%s\t%s\t\n", km, c.Prefetch, at,
							ow.Result.Players.Mean.Total/1e3, "target ≤ 2% / 1% / 0.5%", missing3(ow.Result.Summary.Views.Missing))
					}
				}
				if c.has(ExpFig10) {
					p("median discovery, p2p-%s, %s, %d nodes\ttarget < 200 ms; hops ≤ 3\t%s ms; hops mean %.2f, p99 %d\t\n", m, km, at,
						ms(st.Latency.Quantile(0.5)), run.Ring.Hops, run.Ring.HopsP99)
				}
			}
		}
		if c.has(ExpFig9) && slices.Contains(c.KeyMaps, locate.KeyMapRegions) {
			hi := c.ScaleNodes[len(c.ScaleNodes)-1]
			for _, m := range c.ScaleMaps {
				d := r.scale(m, locate.KeyMapRegions, hi)
				for _, km := range c.KeyMaps {
					rr := r.scale(m, km, hi)
					if km == locate.KeyMapRegions || d == nil || rr == nil {
						continue
					}
					p("locator out (routing+matching+maint.), p2p-%s, %d nodes: %s ÷ dht\t< 1 (rangedht cheaper)\t%.2f\t\n", m, hi, km,
						locatorOut(rr)/max(locatorOut(d), 1e-9))
					dp, rp := r.scaleRouting(m, locate.KeyMapRegions, hi, true), r.scaleRouting(m, km, hi, true)
					if c.PaperRouting && dp != nil && rp != nil {
						p("same, the paper's routing (no route cache, 4 long links)\t< 1 (rangedht cheaper)\t%.2f\t\n",
							locatorOut(rp)/max(locatorOut(dp), 1e-9))
					}
				}
			}
		}
		if err := flush(); err != nil {
			return err
		}
		if c.has(ExpFig9) && c.PaperRouting {
			if err := r.writeRouting(w); err != nil {
				return err
			}
		}
	}
	if c.has(ExpTable2) {
		fmt.Fprintf(w, "Table 2: load balancing, %d-fed-rect, %v: per-node bandwidth (in + out) normalised by the mean; missing at 0 ms, mean ± std over nodes;\n",
			c.BalanceNodes, c.BalanceDuration)
		fmt.Fprintf(w, "ring load (publications and subscriptions routed to a node per second, 30 s window) max ÷ mean when the window first fills\n")
		fmt.Fprintf(w, "(before any move) and at the end; a node moves when it is below 0.5× and a sampled peer above 2× the mean it sees\n")
		newTW()
		p("workload\tsetting\ttotal std\ttotal max\tmatching std\tmatching max\tmissing\tnode kB/s\tmoves\tload max before → after\t\n")
		for _, z := range c.balanceTiles() {
			var dhtMat float64
			wl := "model"
			if z > 0 {
				wl = fmt.Sprintf("hot spots (tile Zipf %g)", z)
			}
			for _, b := range balanceRuns {
				run := r.fedTiles(c.BalanceNodes, b.keyMap, c.BalanceDuration, discovery.DefaultPredTime, b.balance, false, z)
				if run == nil {
					continue
				}
				ts, tm := run.Total.Norm()
				mstd, mm := run.Matching.Norm()
				label := b.keyMap
				if b.balance {
					label += " + loadbal"
				}
				if b.keyMap == locate.KeyMapRegions {
					dhtMat = mm
				}
				rel := ""
				if dhtMat > 0 && b.keyMap != locate.KeyMapRegions {
					rel = fmt.Sprintf(" (%+.0f%% vs dht)", 100*(mm/dhtMat-1))
				}
				_, lb := run.LoadBefore.Norm()
				_, la := run.LoadAfter.Norm()
				p("%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f%s\t%.0f%% ± %.0f%%\t%.1f\t%d\t%.2f → %.2f\t\n", wl, label, ts, tm, mstd, mm, rel,
					100*run.MissingNodes.Mean, 100*run.MissingNodes.Std, run.Total.Mean/1e3, run.Moves, lb, la)
			}
		}
		for _, pb := range paperBalance {
			p("paper\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\t\t\t\n", pb.label, pb.totStd, pb.totMax, pb.matStd, pb.matMax, pb.missing)
		}
		p("paper\tloadbal max matching vs dht\t\t\t\t−42%%\t\t\t\t\t\n")
		if err := flush(); err != nil {
			return err
		}
		var moves uint64
		loadMax := 0.0
		for _, b := range balanceRuns {
			run := r.fedTiles(c.BalanceNodes, b.keyMap, c.BalanceDuration, discovery.DefaultPredTime, b.balance, false, 0)
			if run == nil || b.keyMap == locate.KeyMapRegions {
				continue
			}
			moves += run.Moves
			_, lb := run.LoadBefore.Norm()
			loadMax = max(loadMax, lb)
		}
		fmt.Fprintf(w, "The model workload: %d moves in all under rangedht, whose ring load is at most %.2f× the mean before any move.\n", moves, loadMax)
		fmt.Fprintf(w, "Popularity is ranked per 16-player tile and bots choose nearby goals, so player density is the same in every tile\n")
		fmt.Fprintf(w, "and a node's range averages over part of one; the rule wants a light node to sample a peer above 2× its mean.\n")
		fmt.Fprintf(w, "Hot-spot tiles (a few tiles get most spawns, respawns and visits) skew the load as the paper's traces do.\n\n")
	}
	if c.has(ExpFig12) {
		fmt.Fprintf(w, "Fig. 12(a): per-node bandwidth (in + out), p2p-rect; colyseus with the key mapping the map's shape picks (%s from 32 nodes on)\n",
			harness.AutoKeyMap(arena.Rect, 32))
		newTW()
		p("nodes\tcolyseus kB/s\taggregate kB/s\tbroadcast kB/s\tclient-server node\tcentral server\tbroadcast ÷ colyseus\tserver ÷ colyseus\taggregate ÷ server\t\n")
		for _, n := range c.ScaleNodes {
			co, bc, cs := r.baseline(discovery.Colyseus, n), r.baseline(discovery.Broadcast, n), r.baseline(discovery.ClientServer, n)
			if co == nil || bc == nil || cs == nil {
				continue
			}
			cn := co.Result.Players.Mean.Total
			p("%d\t%.2f\t%.1f\t%.2f\t%.2f\t%.1f\t%.2f×\t%.2f×\t%.2f×\t\n", n, cn/1e3, co.Result.Aggregate/1e3,
				bc.Result.Players.Mean.Total/1e3, cs.Result.Players.Mean.Total/1e3, cs.Result.Infra.Mean.Total/1e3,
				bc.Result.Players.Mean.Total/cn, cs.Result.Infra.Mean.Total/cn, co.Result.Aggregate/cs.Result.Infra.Mean.Total)
		}
		p("paper\t\t\t\t\t\t≈ 10× at scale (< 1 at 9)\t≈ 10×\t≈ 5\t\n")
		p("target\t\t\t\t\t\t≥ 10× at 96+ nodes\t\t\t\n")
		if err := flush(); err != nil {
			return err
		}
	}
	return nil
}

// writeRouting prints Fig. 9's comparison of overworld's routing with the
// paper's, per map and key mapping at 64 nodes (or the nearest) and the
// largest node count, with the explanation.
func (r *LabColyseusReport) writeRouting(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "Fig. 9, routing: overworld's ring (a route cache of 2·log2(n) entries, %d long links) against the paper's\n", discovery.RingLinks)
	fmt.Fprintf(w, "(no route cache, %d long links). hops = to a publication's or a range's first owner; cache = share of routes that\n", discovery.PaperRingLinks)
	fmt.Fprintf(w, "took a route-cache hop; frames/sub = route frames per subscription: its key ranges × hops, plus one per further\n")
	fmt.Fprintf(w, "owner a range walk reaches\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "map\tkeymap\tnodes\trouting\tlocator out kB/s\trouting\tmatching\tmaint.\thops\tcache\tranges/sub\towners/sub\tframes/sub\t÷ dht\t\n")
	nodes := []int{headlineNodes(c.ScaleNodes, 64)}
	if hi := c.ScaleNodes[len(c.ScaleNodes)-1]; hi != nodes[0] {
		nodes = append(nodes, hi)
	}
	for _, m := range c.ScaleMaps {
		for _, n := range nodes {
			for _, paper := range []bool{false, true} {
				d := r.scaleRouting(m, locate.KeyMapRegions, n, paper)
				for _, km := range c.KeyMaps {
					run := r.scaleRouting(m, km, n, paper)
					if run == nil {
						continue
					}
					name, rel := "overworld", "–"
					if paper {
						name = "paper"
					}
					if d != nil && km != locate.KeyMapRegions {
						rel = fmt.Sprintf("%.2f", locatorOut(run)/max(locatorOut(d), 1e-9))
					}
					st, o := &run.Ring.Stats, run.Out
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f%%\t%.2f\t%.2f\t%.1f\t%s\t\n", m, km, n, name,
						locatorOut(run)/1e3, o[wire.ClassDiscovery]/1e3, o[wire.ClassMatching]/1e3, o[wire.ClassMaintenance]/1e3, run.Ring.Hops,
						100*ratio(run.Ring.CacheHits, run.Ring.Routed), ratio(st.RangesRouted, st.SubsSent), ratio(st.SubsStored, st.SubsSent),
						run.Ring.FramesPerSub(), rel)
				}
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	for _, line := range []string{
		"Why (the columns above): dht splits a subscription into one lookup per region it meets (ranges/sub), rangedht-x",
		"routes one range that walks every owner it covers (owners/sub: constant on rect maps, growing as √n on sqr ones).",
		"Without a route cache every lookup pays the ring's full hop count, so dht's lookups cost more route frames than a",
		"range walk wherever the walk is short, and the paper's ranking appears (÷ dht < 1; not for rangedht-x on large sqr",
		"maps, whose walks grow). With overworld's cache a lookup takes about one hop under every key",
		"mapping: a player's regions stay the same for seconds, so their few owners stay cached although the keys are",
		"hashed (the paper's \"lack of locality\" does not defeat a route cache), and dht's lookups become nearly direct",
		"while a range walk still costs one frame per owner. The cache decides, not the long links (README).",
	} {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	return nil
}

// locatorOut is a run's per-node outbound locator bandwidth: routing,
// matching and maintenance.
func locatorOut(run *ColyseusRun) float64 {
	return run.Out[wire.ClassDiscovery] + run.Out[wire.ClassMatching] + run.Out[wire.ClassMaintenance]
}

func missing3(m []osim.Missing) string {
	s := ""
	for k, x := range m {
		if k > 0 {
			s += " / "
		}
		s += fmt.Sprintf("%.1f%%", 100*x.Fraction)
	}
	return s
}

// ratio is a over b, 0 when b is 0.
func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
