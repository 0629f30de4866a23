package report

import (
	"fmt"
	"image/color"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The palette every figure shares: one method, architecture or key
// mapping keeps its colour from figure to figure.
var (
	Blue   = color.RGBA{R: 30, G: 90, B: 200, A: 255}
	Orange = color.RGBA{R: 230, G: 130, B: 0, A: 255}
	Red    = color.RGBA{R: 200, G: 40, B: 40, A: 255}
	Green  = color.RGBA{R: 40, G: 160, B: 60, A: 255}
	Purple = color.RGBA{R: 130, G: 60, B: 170, A: 255}
)

// NewPlot returns a plot with a title, axis labels, a grid, the legend in
// the top left corner and tick labels without trailing zeros.
func NewPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.X.Tick.Marker = plainTicks{}
	p.Y.Tick.Marker = plainTicks{}
	return p
}

// plainTicks are plot.DefaultTicks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmt.Sprintf("%.6g", ts[i].Value)
		}
	}
	return ts
}

// Headroom sets p's Y range to the data's, lo to hi, plus a third on top,
// where the legend goes. It leaves p alone unless hi > lo.
func Headroom(p *plot.Plot, lo, hi float64) {
	if !(hi > lo) {
		return
	}
	p.Y.Min = max(0, lo-0.03*(hi-lo))
	p.Y.Max = hi + 0.35*(hi-lo)
}

// VLine is a dashed grey vertical line at X across the whole plot (a
// bound, the end of a phase).
type VLine struct{ X float64 }

// Plot draws the line (plot.Plotter).
func (v VLine) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(v.X)
	ls := draw.LineStyle{Color: color.Gray{Y: 90}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	c.StrokeLine2(ls, x, c.Min.Y, x, c.Max.Y)
}

// SavePNG draws plots side by side into one PNG of w × h at 120 dpi at
// path.
func SavePNG(path string, w, h vg.Length, plots ...*plot.Plot) error {
	return SaveGrid(path, w, h, [][]*plot.Plot{plots})
}

// SaveGrid draws rows of plots (every row as long as the first) into one
// PNG of w × h at 120 dpi at path.
func SaveGrid(path string, w, h vg.Length, rows [][]*plot.Plot) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(120))
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(rows), Cols: len(rows[0]), PadX: vg.Points(18), PadY: vg.Points(12), PadTop: vg.Points(6),
		PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(12)}
	canvases := plot.Align(rows, t, dc)
	for i, row := range rows {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("report: %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// AddCDF draws the empirical CDF of xs on p as a step line of colour col,
// with label in the legend (nothing for no xs).
func AddCDF(p *plot.Plot, xs []float64, col color.Color, label string) {
	if len(xs) == 0 {
		return
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	var pts plotter.XYs
	for k, x := range s {
		pts = append(pts, plotter.XY{X: x, Y: float64(k) / n}, plotter.XY{X: x, Y: float64(k+1) / n})
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return
	}
	l.Color, l.Width = col, vg.Points(1.4)
	p.Add(l)
	p.Legend.Add(label, l)
}
