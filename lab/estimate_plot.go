package lab

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"

	"github.com/overworld/overworld/estimate"
	"github.com/overworld/overworld/lab/report"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// estPalette gives the experiment's configurations distinct colours, in
// configuration order.
var estPalette = []color.Color{
	report.Orange,
	report.Red,
	color.RGBA{R: 150, G: 150, B: 150, A: 255},
	color.RGBA{R: 110, G: 80, B: 40, A: 255},
	color.RGBA{R: 240, G: 90, B: 160, A: 255},
	report.Purple,
	color.RGBA{R: 20, G: 150, B: 60, A: 255},
	color.RGBA{R: 0, G: 170, B: 190, A: 255},
	report.Blue,
}

func (r *EstimateReport) color(label string) color.Color {
	for i, a := range r.Config.Configs {
		if a.Label == label {
			return estPalette[i%len(estPalette)]
		}
	}
	for i, c := range r.Core { // calibration rows: greys, darker for less noise
		if c.Label == label {
			return color.Gray{Y: uint8(min(200, 40+40*i/max(1, len(r.Core))*2))}
		}
	}
	return color.Black
}

// WritePlots draws the experiment's figures as PNG files in dir:
// fig6-cdf.png (CDF of the directed relative error of every
// configuration), fig6-scatter.png (measured RTT against directed error for
// the tracked configurations, as the paper's Fig. 6), fig7-core.png (hit
// ratio against k, and the CDF of the distance from each core chosen on
// estimates to the nearest optimal core), fig8-ecc.png (CDF of the
// reported eccentricity's directed error) and slices.png (accuracy across
// the PlanetLab slices).
func (r *EstimateReport) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var files []string
	save := func(name string, w, h vg.Length, plots ...*plot.Plot) error {
		path := filepath.Join(dir, name)
		if err := report.SavePNG(path, w, h, plots...); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	// Fig. 6 CDF.
	p := report.NewPlot("Fig. 6 directed relative error, PlanetLab slice 1", "(estimated − measured) / measured", "fraction of pairs ≤ x")
	p.Legend.Top, p.Legend.Left = true, true
	for _, a := range r.Accuracy {
		var pts plotter.XYs
		for q := 0; q <= 400; q++ {
			pts = append(pts, plotter.XY{X: errQuantile(a.All.Errors, float64(q)/400), Y: float64(q) / 400})
		}
		addLine(p, pts, r.color(a.Label), fmt.Sprintf("%s: %s ≤15%%, %s ≤50%%", a.Label, report.Pct(a.All.Within15), report.Pct(a.All.Within50)))
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -1, 1, 0, 1
	p.Add(report.VLine{X: -0.15}, report.VLine{X: 0.15})
	if err := save("fig6-cdf.png", 8*vg.Inch, 5.5*vg.Inch, p); err != nil {
		return files, err
	}
	// Fig. 6 scatter, one panel per tracked configuration.
	var panels []*plot.Plot
	for _, l := range r.Config.Tracked {
		sp := report.NewPlot("Fig. 6 "+l, "measured RTT (ms)", "directed relative error")
		var pts plotter.XYs
		for _, v := range r.Scatter[l] {
			pts = append(pts, plotter.XY{X: v[0], Y: max(-1, min(2, v[1]))})
		}
		if s, err := plotter.NewScatter(pts); err == nil {
			s.GlyphStyle.Shape = draw.CircleGlyph{}
			s.GlyphStyle.Radius = vg.Points(0.8)
			s.GlyphStyle.Color = r.color(l)
			sp.Add(s)
		}
		sp.Y.Min, sp.Y.Max, sp.X.Min, sp.X.Max = -1, 2, 0, 500
		panels = append(panels, sp)
	}
	if len(panels) > 0 {
		if err := save("fig6-scatter.png", vg.Length(len(panels))*4*vg.Inch, 4*vg.Inch, panels...); err != nil {
			return files, err
		}
	}
	if len(r.Core) > 0 && r.Config.CoreTrials > 0 {
		hp := report.NewPlot("Fig. 7a core-node selection hit ratio", "k (cores)", "hit ratio")
		ep := report.NewPlot("Fig. 7b distance to the nearest optimal core", "measured RTT (ms)", "fraction of cores ≤ x")
		xp := report.NewPlot("Fig. 8 reported vs real eccentricity", "(reported − real) / real", "fraction of core sets ≤ x")
		hp.Legend.Top, hp.Legend.Left = false, false
		ep.Legend.Top, ep.Legend.Left = false, false
		for _, c := range r.Core {
			var hs plotter.XYs
			for k, h := range c.Hit {
				hs = append(hs, plotter.XY{X: float64(k + 1), Y: h})
			}
			addLine(hp, hs, r.color(c.Label), c.Label)
			addLine(ep, cdfPoints(c.MinErr), r.color(c.Label), fmt.Sprintf("%s: %s ≤ 10 ms", c.Label, report.Pct(Within(c.MinErr, 10))))
			addLine(xp, cdfPoints(c.EccErr), r.color(c.Label), c.Label)
		}
		hp.Y.Min, hp.Y.Max = 0, 1.05
		ep.X.Min, ep.X.Max, ep.Y.Min, ep.Y.Max = 0, 60, 0, 1
		xp.X.Min, xp.X.Max, xp.Y.Min, xp.Y.Max = -1, 1, 0, 1
		if err := save("fig7-core.png", 11*vg.Inch, 4.5*vg.Inch, hp, ep); err != nil {
			return files, err
		}
		if err := save("fig8-ecc.png", 6*vg.Inch, 4.5*vg.Inch, xp); err != nil {
			return files, err
		}
	}
	if len(r.Slices) > 0 {
		wp := report.NewPlot("Accuracy across PlanetLab slices (carried over)", "slice", "pairs within 15%")
		mp := report.NewPlot("", "slice", "median |relative error|")
		wp.Legend.Top, wp.Legend.Left = false, false
		for _, l := range r.Config.Tracked {
			var w, m plotter.XYs
			for _, s := range r.Slices {
				if s.Label == l {
					w = append(w, plotter.XY{X: float64(s.Slice), Y: s.Acc.Within15})
					m = append(m, plotter.XY{X: float64(s.Slice), Y: s.Acc.MedianAbs})
				}
			}
			addLine(wp, w, r.color(l), l)
			addLine(mp, m, r.color(l), l)
		}
		wp.Y.Min, wp.Y.Max, mp.Y.Min = 0, 1, 0
		if err := save("slices.png", 11*vg.Inch, 4*vg.Inch, wp, mp); err != nil {
			return files, err
		}
	}
	return files, nil
}

func errQuantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return max(-1, min(1, sorted[min(len(sorted)-1, int(q*float64(len(sorted)-1)+0.5))]))
}

func cdfPoints(xs []float64) plotter.XYs {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	var pts plotter.XYs
	step := max(1, n/400)
	for k := 0; k < n; k += step {
		pts = append(pts, plotter.XY{X: s[k], Y: float64(k+1) / float64(n)})
	}
	if n > 0 {
		pts = append(pts, plotter.XY{X: s[n-1], Y: 1})
	}
	return pts
}

func addLine(p *plot.Plot, pts plotter.XYs, c color.Color, label string) {
	if len(pts) == 0 {
		return
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return
	}
	l.Color = c
	l.Width = vg.Points(1.3)
	p.Add(l)
	if label != "" {
		p.Legend.Add(label, l)
	}
}

// PlotAccuracy writes one PNG with the CDF of the directed relative error
// of each accuracy (labels in the same order), as Fig. 6 of the paper.
func PlotAccuracy(path, title string, labels []string, accs []estimate.Accuracy) error {
	if len(labels) != len(accs) {
		return fmt.Errorf("lab: %d labels for %d accuracies", len(labels), len(accs))
	}
	p := report.NewPlot(title, "(estimated − measured) / measured", "fraction of pairs ≤ x")
	for i, a := range accs {
		var pts plotter.XYs
		for q := 0; q <= 400; q++ {
			pts = append(pts, plotter.XY{X: errQuantile(a.Errors, float64(q)/400), Y: float64(q) / 400})
		}
		addLine(p, pts, estPalette[(len(estPalette)-1-i+len(estPalette))%len(estPalette)], fmt.Sprintf("%s: %s ≤15%%, %s ≤50%%", labels[i], report.Pct(a.Within15), report.Pct(a.Within50)))
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -1, 1, 0, 1
	p.Add(report.VLine{X: -0.15}, report.VLine{X: 0.15})
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("lab: %w", err)
		}
	}
	return report.SavePNG(path, 8*vg.Inch, 5.5*vg.Inch, p)
}
