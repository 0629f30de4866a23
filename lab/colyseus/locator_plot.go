package colyseus

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/wire"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

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
		return fmt.Errorf("lab/colyseus: %w", err)
	}
	l.Color, s.Color = col, col
	l.Dashes = colyDashes[d%len(colyDashes)]
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

// figures collects the PNG files one WritePlots call writes into dir.
type figures struct {
	dir   string
	files []string
}

// save draws panels side by side into dir/name.
func (f *figures) save(name string, w, h vg.Length, panels ...*plot.Plot) error {
	path := filepath.Join(f.dir, name)
	if err := report.SavePNG(path, w, h, panels...); err != nil {
		return err
	}
	f.files = append(f.files, path)
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
func (r *Report) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/colyseus: %w", err)
	}
	c := r.Config
	f := &figures{dir: dir}
	for _, fig := range []struct {
		on   bool
		draw func(*figures) error
	}{
		{c.has(ExpFig8), r.plotFig8}, {c.has(ExpFig9), r.plotFig9}, {c.has(ExpFig10), r.plotFig10},
		{c.has(ExpFig11), r.plotFig11}, {c.has(ExpFig12), r.plotFig12},
	} {
		if fig.on {
			if err := fig.draw(f); err != nil {
				return f.files, err
			}
		}
	}
	return f.files, nil
}

// plotFig8 draws colyseus-fig8.png (Fig. 8): per-node bandwidth and missing player
// replicas against PredTime.
func (r *Report) plotFig8(f *figures) error {
	c := r.Config
	blue, orange := report.Blue, report.Orange
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
		return err
	}
	if err := colyLine(bw, "routing", pr, blue, 1); err != nil {
		return err
	}
	if err := colyLine(bw, "matching", pmt, blue, 2); err != nil {
		return err
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
		return err
	}
	if err := colyLine(miss, "100 ms grace", pl, orange, 1); err != nil {
		return err
	}
	if err := f.save("colyseus-fig8.png", 10*vg.Inch, 4*vg.Inch, bw, miss); err != nil {
		return err
	}
	return nil
}

// plotFig9 draws colyseus-fig9.png (Fig. 9): per-node outbound locator bandwidth
// against node count, a row of panels per routing.
func (r *Report) plotFig9(f *figures) error {
	c := r.Config
	lines := func(run *WorldRun) []float64 {
		return []float64{run.Out[wire.ClassDiscovery] / 1e3, run.Out[wire.ClassMatching] / 1e3, run.Out[wire.ClassMaintenance] / 1e3}
	}
	labels := []string{"routing", "matching", "maintenance"}
	var rows [][]*plot.Plot
	for _, paper := range []bool{false, true} {
		if paper && !c.PaperRouting {
			continue
		}
		row, err := r.scaleRow(paper, "per-node outbound kB/s", false, lines, labels, nil)
		if err != nil {
			return err
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
	path := filepath.Join(f.dir, "colyseus-fig9.png")
	if err := report.SaveGrid(path, vg.Length(len(rows[0]))*5.5*vg.Inch, vg.Length(len(rows))*5*vg.Inch, rows); err != nil {
		return err
	}
	f.files = append(f.files, path)
	return nil
}

// plotFig10 draws colyseus-fig10.png (Fig. 10): median discovery latency against
// node count.
func (r *Report) plotFig10(f *figures) error {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	err := r.scaleFig(f, "colyseus-fig10.png", "median discovery latency (ms)", false, func(run *WorldRun) []float64 {
		st := &run.Ring.Stats
		return []float64{ms(st.Latency.Quantile(0.5)), ms(st.Routing.Quantile(0.5)), ms(st.Matching.Quantile(0.5))}
	}, []string{"total", "routing", "matching"}, nil)
	if err != nil {
		return err
	}
	return nil
}

// plotFig11 draws colyseus-fig11.png (Fig. 11): missing replicas against node
// count, with overworld's prefetch series on sqr maps.
func (r *Report) plotFig11(f *figures) error {
	c := r.Config
	err := r.scaleFig(f, "colyseus-fig11.png", "% replicas missing", false, func(run *WorldRun) []float64 {
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
			if err := colyLine(p, fmt.Sprintf("%s + prefetch %g m and pushes %s", c.KeyMaps[0], c.Prefetch, label), pts, color.Black, g); err != nil {
				return top, err
			}
		}
		return top, nil
	})
	if err != nil {
		return err
	}
	return nil
}

// plotFig12 draws colyseus-fig12a.png (Fig. 12(a)): per-node bandwidth of colyseus
// and the baselines against node count.
func (r *Report) plotFig12(f *figures) error {
	c := r.Config
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
			return err
		}
		if err := colyLine(p, "client-server: central server", infra, archColor(a), 1); err != nil {
			return err
		}
		if err := colyLine(p, "colyseus aggregate (all nodes, sent)", agg, archColor(a), 2); err != nil {
			return err
		}
	}
	if err := f.save("colyseus-fig12a.png", 8*vg.Inch, 5.5*vg.Inch, p); err != nil {
		return err
	}
	return nil
}

func (r *Report) scaleRow(paper bool, ylabel string, log bool, lines func(run *WorldRun) []float64, labels []string,
	extra func(m arena.MapType, p *plot.Plot) (float64, error)) ([]*plot.Plot, error) {
	c := r.Config
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

func (r *Report) scaleFig(f *figures, name, ylabel string, log bool, lines func(run *WorldRun) []float64, labels []string,
	extra func(m arena.MapType, p *plot.Plot) (float64, error)) error {
	panels, err := r.scaleRow(false, ylabel, log, lines, labels, extra)
	if err != nil {
		return err
	}
	return f.save(name, vg.Length(len(panels))*5.5*vg.Inch, 5*vg.Inch, panels...)
}
