package lab

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/cma"
)

// WritePlots draws the first seed's figures as PNG files in dir (created if
// missing) and returns their paths:
//
//   - fig4-join.png: average and maximum delay against the number of joins
//     (J-greedy, J-SA), as the paper's Fig. 4;
//   - fig5-cdf.png: the distribution of player delays after the last join,
//     with the delay bound marked, as Fig. 5, and (dashed) the delays to
//     the nearest mirror with capacity ignored;
//   - fig6-leave.png: average and maximum delay against the number of
//     leaves (L-ignore, L-greedy, L-SA; the optimum from cma.Optimal as
//     markers), as Fig. 6;
//   - fig7-dynamic.png: average and maximum delay against events for the
//     three combinations, the end of the populate phase marked, as Fig. 7;
//   - fig8-speed.png: run time of every method against the number of
//     mirrors, one panel per scenario, log scale, the paper's Fig. 8 values
//     as hollow markers.
//
// Figures of scenarios that were not run are not written.
func (r *CMAReport) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	run := &r.Runs[0]
	suffix := fmt.Sprintf(" (%s, seed %d)", r.Config.Data, run.Seed)
	var files []string
	save := func(name string, w, h vg.Length, plots ...*plot.Plot) error {
		path := filepath.Join(dir, name)
		if err := report.SavePNG(path, w, h, plots...); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	if res := run.Join; res != nil {
		avg, mx := seriesPlots(res, "Fig. 4 join"+suffix, "players joined")
		if err := save("fig4-join.png", 11*vg.Inch, 4*vg.Inch, avg, mx); err != nil {
			return files, err
		}
		if err := save("fig5-cdf.png", 6*vg.Inch, 4.5*vg.Inch, cdfPlot(res, r.Config.Bound, suffix)); err != nil {
			return files, err
		}
	}
	if res := run.Leave; res != nil {
		avg, mx := seriesPlots(res, "Fig. 6 leave"+suffix, "players left")
		if err := save("fig6-leave.png", 11*vg.Inch, 4*vg.Inch, avg, mx); err != nil {
			return files, err
		}
	}
	if res := run.Dynamic; res != nil {
		avg, mx := seriesPlots(res, "Fig. 7 dynamic"+suffix, "events")
		if err := save("fig7-dynamic.png", 11*vg.Inch, 4*vg.Inch, avg, mx); err != nil {
			return files, err
		}
	}
	if lines := r.SpeedTable(); lines != nil {
		var panels []*plot.Plot
		for _, sc := range []Scenario{ScenarioJoin, ScenarioLeave, ScenarioDynamic} {
			panels = append(panels, speedPlot(lines, sc, r.Config.SpeedMirrors, suffix))
		}
		if err := save("fig8-speed.png", 15*vg.Inch, 4.5*vg.Inch, panels...); err != nil {
			return files, err
		}
	}
	return files, nil
}

// methodColor gives every method one colour in every figure.
func methodColor(m cma.Method) color.Color {
	switch m {
	case cma.Greedy:
		return report.Orange
	case cma.Ignore:
		return report.Red
	case cma.SA:
		return report.Blue
	case cma.SARebuild:
		return report.Purple
	}
	return color.Black
}

// seriesPlots draws the average and the maximum delay of every trace
// against the event number, the optimum as markers at about 25 events.
func seriesPlots(res *ScenarioResult, title, x string) (avg, mx *plot.Plot) {
	avg = report.NewPlot(title+": average delay", x, "average delay (ms)")
	mx = report.NewPlot(title+": maximum delay", x, "maximum delay (ms)")
	avgLo, avgHi, maxLo, maxHi := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, t := range res.allTraces() {
		if m, x := nonEmpty(t.Mean), nonEmpty(t.Max); len(m) > 0 && len(x) > 0 {
			avgLo, avgHi = min(avgLo, slices.Min(m)), max(avgHi, slices.Max(m))
			maxLo, maxHi = min(maxLo, slices.Min(x)), max(maxHi, slices.Max(x))
		}
	}
	for _, t := range res.Traces {
		for _, pv := range []struct {
			p  *plot.Plot
			ys []float64
		}{{avg, nonEmpty(t.Mean)}, {mx, nonEmpty(t.Max)}} {
			l, err := plotter.NewLine(xys(pv.ys, 1))
			if err != nil {
				continue // only NaN or Inf, which a trace never holds
			}
			l.Color = methodColor(t.Method)
			l.Width = vg.Points(1.2)
			pv.p.Add(l)
			pv.p.Legend.Add(t.Label, l)
		}
	}
	if o := res.Optimum; o != nil {
		step := max(1, len(o.Mean)/25)
		for _, pv := range []struct {
			p  *plot.Plot
			ys []float64
		}{{avg, nonEmpty(o.Mean)}, {mx, nonEmpty(o.Max)}} {
			s, err := plotter.NewScatter(xys(pv.ys, step))
			if err != nil {
				continue
			}
			s.GlyphStyle.Shape = draw.CircleGlyph{}
			s.GlyphStyle.Radius = vg.Points(2.5)
			s.GlyphStyle.Color = color.Black
			pv.p.Add(s)
			pv.p.Legend.Add("optimum (cma.Optimal)", s)
		}
	}
	if res.PopulateEvents > 0 {
		for _, p := range []*plot.Plot{avg, mx} {
			p.Add(report.VLine{X: float64(res.PopulateEvents)})
		}
		avg.Title.Text += fmt.Sprintf("\npopulate: events 1–%d, then churn", res.PopulateEvents)
		mx.Title.Text += "\n "
	}
	report.Headroom(avg, avgLo, avgHi)
	report.Headroom(mx, maxLo, maxHi)
	return avg, mx
}

// xys returns points (i+1, ys[i]) for every step-th i, and the last.
func xys(ys []float64, step int) plotter.XYs {
	var pts plotter.XYs
	for i := 0; i < len(ys); i += step {
		pts = append(pts, plotter.XY{X: float64(i + 1), Y: ys[i]})
	}
	if n := len(ys); n > 0 && (n-1)%step != 0 {
		pts = append(pts, plotter.XY{X: float64(n), Y: ys[n-1]})
	}
	return pts
}

// cdfPlot draws the fraction of players at or below each delay after the
// last join.
func cdfPlot(res *ScenarioResult, bound float64, suffix string) *plot.Plot {
	p := report.NewPlot("Fig. 5 delays after the last join"+suffix, "delay (ms)", "fraction of players ≤ delay")
	p.Legend.Left = false
	p.Legend.Top = false
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = vg.Points(4)
	for _, t := range res.Traces {
		n := len(t.Final)
		var pts plotter.XYs
		for k, d := range t.Final {
			pts = append(pts, plotter.XY{X: d, Y: float64(k) / float64(n)}, plotter.XY{X: d, Y: float64(k+1) / float64(n)})
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			continue
		}
		l.Color = methodColor(t.Method)
		l.Width = vg.Points(1.2)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("%s: %d of %d ≤ %g ms", t.Label, within(t.Final, bound), n, bound), l)
	}
	if len(res.Nearest) > 0 {
		n := len(res.Nearest)
		var pts plotter.XYs
		for k, d := range res.Nearest {
			pts = append(pts, plotter.XY{X: d, Y: float64(k) / float64(n)}, plotter.XY{X: d, Y: float64(k+1) / float64(n)})
		}
		if l, err := plotter.NewLine(pts); err == nil {
			l.Color = color.Gray{Y: 120}
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
			p.Add(l)
			p.Legend.Add(fmt.Sprintf("nearest mirror, no capacity: %d ≤ %g ms", within(res.Nearest, bound), bound), l)
		}
	}
	p.Add(report.VLine{X: bound})
	p.Y.Min, p.Y.Max = 0, 1
	return p
}

// speedPlot draws one scenario's run times as bars grouped by system size,
// on a log scale, with the paper's values as hollow markers.
func speedPlot(lines []SpeedLine, sc Scenario, mirrors []int, suffix string) *plot.Plot {
	p := report.NewPlot(fmt.Sprintf("Fig. 8 %s run time%s", sc, suffix), "mirrors", "run time of the whole scenario (ms)")
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var mine []SpeedLine
	for _, l := range lines {
		if l.Scenario == sc {
			mine = append(mine, l)
		}
	}
	width := 0.8 / float64(max(1, len(mine)))
	lo, hi := math.Inf(1), math.Inf(-1)
	var paperPts plotter.XYs
	for i, l := range mine {
		b := &logBars{width: width, color: methodColor(l.Method)}
		for g, c := range l.Cells {
			x := float64(g) - 0.4 + width*(float64(i)+0.5)
			b.xs = append(b.xs, x)
			b.ys = append(b.ys, c.Millis)
			lo, hi = min(lo, c.Millis), max(hi, c.Millis)
			if c.HasPaper {
				paperPts = append(paperPts, plotter.XY{X: x, Y: c.Paper})
				lo, hi = min(lo, c.Paper), max(hi, c.Paper)
			}
		}
		p.Add(b)
		p.Legend.Add(fmt.Sprintf("%s (%s)", l.Label, l.Method), b)
	}
	if len(paperPts) > 0 {
		s, err := plotter.NewScatter(paperPts)
		if err == nil {
			s.GlyphStyle.Shape = draw.RingGlyph{}
			s.GlyphStyle.Radius = vg.Points(4)
			s.GlyphStyle.Color = color.Black
			p.Add(s)
			p.Legend.Add("paper, Fig. 8", s)
		}
	}
	names := make([]string, len(mirrors))
	for i, m := range mirrors {
		names[i] = fmt.Sprint(m)
	}
	p.NominalX(names...)
	if lo > 0 && !math.IsInf(lo, 1) {
		p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo)))
		p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi))+0.6) // room for the legend
	}
	return p
}

// logBars draws bars from the bottom of the Y axis, which also works on a
// log scale (plotter.BarChart starts its bars at 0).
type logBars struct {
	xs, ys []float64
	width  float64
	color  color.Color
}

func (b *logBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i := range b.xs {
		x0, x1 := trX(b.xs[i]-b.width/2), trX(b.xs[i]+b.width/2)
		y0, y1 := trY(p.Y.Min), trY(b.ys[i])
		pts := []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
		c.FillPolygon(b.color, c.ClipPolygonXY(pts))
	}
}

func (b *logBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for i := range b.xs {
		xmin, xmax = min(xmin, b.xs[i]-b.width/2), max(xmax, b.xs[i]+b.width/2)
		ymin, ymax = min(ymin, b.ys[i]), max(ymax, b.ys[i])
	}
	return xmin, xmax, ymin, ymax
}

func (b *logBars) Thumbnail(c *draw.Canvas) {
	pts := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}}
	c.FillPolygon(b.color, c.ClipPolygonXY(pts))
}
