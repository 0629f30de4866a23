package colyseus

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/report"
)

// MobilityConfig is the mobility validation of the model game: a game played
// by bots in arena.Local for Duration, compared with the paper's Quake III
// numbers (Colyseus §2.3, §4.1) and the Fortnite traces.
type MobilityConfig struct {
	Game     arena.Config
	Duration time.Duration
}

// DefaultMobilityConfig is 16 bots on a 16-player square map for 8 minutes
// (the length of the paper's runs, §4.2): the size of the Quake III maps
// behind the paper's Figs. 2 and 6.
func DefaultMobilityConfig() MobilityConfig {
	return MobilityConfig{Game: arena.Quake16(), Duration: 8 * time.Minute}
}

// MobilityReport is the result of Mobility.
type MobilityReport struct {
	Config  MobilityConfig
	Cmp     *arena.MobilityComparison
	Elapsed time.Duration // wall-clock time of the game run
}

// Mobility runs the mobility validation. Errors from a bad configuration wrap
// lab.ErrConfig.
func Mobility(cfg MobilityConfig, progress func(done, total int)) (*MobilityReport, error) {
	if _, err := cfg.Game.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	if cfg.Duration < arena.Window || cfg.Duration > 24*time.Hour {
		return nil, fmt.Errorf("%w: duration %v: want %v to 24h", lab.ErrConfig, cfg.Duration, arena.Window)
	}
	start := time.Now()
	c, err := arena.CompareMobility(cfg.Game, cfg.Duration, progress)
	if err != nil {
		return nil, err
	}
	return &MobilityReport{Config: cfg, Cmp: c, Elapsed: time.Since(start)}, nil
}

// WriteTable prints the comparison: path length beside the paper's
// Fig. 2(b), distance per 10 s beside Fortnite, region popularity, and the
// delta sizes beside the paper's 145 and 22 bytes.
func (r *MobilityReport) WriteTable(w io.Writer) error {
	c := r.Cmp
	g := c.Config
	mw, mh := arena.Size(g.Map, g.Players())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	fmt.Fprintf(w, "model game: %d bots on a %s %.0f × %.0f m map, %v of game time, seed %d\n\n",
		g.Players(), g.Map, mw, mh, c.Duration, g.Seed)
	p("path length in 10 s (regions of %.1f m, map 20 regions across)\tpaper (Quake III)\toverworld\t\n", arena.RegionSize)
	s := c.PathRegions
	p("mean\t%.1f\t%.1f\t\n", arena.PaperPathMean, s.Mean)
	p("standard deviation\t%.1f\t%.1f\t\n", arena.PaperPathSD, s.SD)
	p("median\t%d\t%.1f\t\n", arena.PaperPathMedian, s.Median)
	p("95th percentile\t%d\t%.1f\t\n", arena.PaperPathP95, s.P95)
	p("windows\t\t%d\t\n", s.N)
	p("\t\t\t\n")
	p("distance in 10 s (m)\toverworld 10 Hz\toverworld 1 Hz\tFortnite 1 Hz\t\n")
	a, b, f := c.GameMetres, c.Game1HzMetres, c.FortniteMetres
	p("mean\t%.1f\t%.1f\t%.1f\t\n", a.Mean, b.Mean, f.Mean)
	p("median\t%.1f\t%.1f\t%.1f\t\n", a.Median, b.Median, f.Median)
	p("95th percentile\t%.1f\t%.1f\t%.1f\t\n", a.P95, b.P95, f.P95)
	p("median ÷ (run speed × 10 s)\t%.2f\t%.2f\t%.2f\t\n", a.Median/(arena.RunSpeed*10), b.Median/(arena.RunSpeed*10), f.Median/(arena.FortniteRunSpeed*10))
	p("windows\t%d\t%d\t%d\t\n", a.N, b.N, f.N)
	p("\t\t\t\n")
	p("region popularity (time share, ranked)\tpaper\toverworld\tFortnite\t\n")
	go1, fo := c.GameOccupancy, c.FortniteOccupancy
	p("Zipf exponent (log-log fit)\tZipf-like\t%.2f\t%.2f\t\n", go1.Exponent, fo.Exponent)
	p("R² of the fit\t–\t%.2f\t%.2f\t\n", go1.R2, fo.R2)
	p("share of the top 10%% of visited regions\t–\t%.0f%%\t%.0f%%\t\n", 100*go1.Top10, 100*fo.Top10)
	p("regions visited / on the map\t–\t%d / %d\t%d / %d\t\n", go1.Regions, c.Game.Regions, fo.Regions, c.Fortnite.Regions)
	p("entries: Zipf exponent (Fig. 6 popularity)\tZipf-like\t%.2f\t%.2f\t\n", c.GameEntries.Exponent, c.FortniteEntries.Exponent)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nFortnite: %d games, %d on-foot samples (1 px = %.2f m, run speed %.1f m/s); the game: %.1f deaths per bot-minute, %.0f%% of bot time in fights\n\n",
		c.FortniteTraces, c.FortniteSamples, arena.FortniteMetresPerPix, arena.FortniteRunSpeed, c.DeathsPerBotMinute, 100*c.FightsShare)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	p = func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	p("object updates (world.AppendDelta payload)\tupdates\tmean bytes\tmax bytes\tchanged frames\tfull state bytes\t\n")
	var bytes, n int64
	for _, k := range c.Stats {
		full := 0.0
		if k.Created > 0 {
			full = float64(k.FullBytes) / float64(k.Created)
		}
		changed := 0.0
		if k.ObjectFrames > 0 {
			changed = float64(k.Updates) / float64(k.ObjectFrames)
		}
		p("%s\t%d\t%.2f\t%d\t%.0f%%\t%s\t\n", k.Name, k.Updates, k.MeanDelta(), k.MaxDelta, 100*changed, fullStr(k.Created, full))
		bytes, n = bytes+k.DeltaBytes, n+k.Updates
	}
	mean := 0.0
	if n > 0 {
		mean = float64(bytes) / float64(n)
	}
	p("all objects\t%d\t%.2f\t\t\t\t\n", n, mean)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "paper: automatic field-wise deltas 145 bytes, Quake II hand-tuned messages 22 bytes; target ≤ 30\n")
	return err
}

func fullStr(created int64, mean float64) string {
	if created == 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", mean)
}

// WriteCSV writes into dir (created if missing) and returns the paths:
//
//   - arena-path.csv: window, regions, metres, metres_1hz: every bot's
//     10 s windows;
//   - arena-fortnite.csv: window, metres: every Fortnite 10 s window;
//   - arena-popularity.csv: rank, then the time share and entry share of
//     the region of that rank in the game and in the Fortnite traces;
//   - arena-deltas.csv: kind, object_frames, updates, delta_bytes,
//     mean_delta, max_delta, created, full_bytes, writes, write_bytes;
//   - arena-headline.csv: metric, paper, overworld, fortnite.
func (r *MobilityReport) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/colyseus: %w", err)
	}
	c := r.Cmp
	var files []string
	write := func(name string, rows [][]string) error {
		path := filepath.Join(dir, name)
		if err := report.WriteCSV(path, rows); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	rows := [][]string{{"window", "regions", "metres", "metres_1hz"}}
	for i := range c.Game.PathRegions {
		rows = append(rows, []string{strconv.Itoa(i), report.Float(c.Game.PathRegions[i]), report.Float(c.Game.Metres[i]), report.Float(c.Game1Hz.Metres[i])})
	}
	if err := write("arena-path.csv", rows); err != nil {
		return files, err
	}
	rows = [][]string{{"window", "metres"}}
	for i, m := range c.Fortnite.Metres {
		rows = append(rows, []string{strconv.Itoa(i), report.Float(m)})
	}
	if err := write("arena-fortnite.csv", rows); err != nil {
		return files, err
	}
	rows = [][]string{{"rank", "game_time_share", "game_entry_share", "fortnite_time_share", "fortnite_entry_share"}}
	at := func(s []float64, i int) string {
		if i < len(s) {
			return report.Float(s[i])
		}
		return ""
	}
	for i := range max(len(c.Game.Occupancy), len(c.Fortnite.Occupancy)) {
		rows = append(rows, []string{strconv.Itoa(i + 1), at(c.Game.Occupancy, i), at(c.Game.Entries, i), at(c.Fortnite.Occupancy, i), at(c.Fortnite.Entries, i)})
	}
	if err := write("arena-popularity.csv", rows); err != nil {
		return files, err
	}
	rows = [][]string{{"kind", "object_frames", "updates", "delta_bytes", "mean_delta", "max_delta", "created", "full_bytes", "writes", "write_bytes"}}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	for _, k := range c.Stats {
		rows = append(rows, []string{k.Name, i64(k.ObjectFrames), i64(k.Updates), i64(k.DeltaBytes), report.Float(k.MeanDelta()),
			strconv.Itoa(k.MaxDelta), i64(k.Created), i64(k.FullBytes), i64(k.Writes), i64(k.WriteBytes)})
	}
	if err := write("arena-deltas.csv", rows); err != nil {
		return files, err
	}
	s := c.PathRegions
	rows = [][]string{
		{"metric", "paper", "overworld", "fortnite"},
		{"path length mean (regions/10 s)", report.Float(arena.PaperPathMean), report.Float(s.Mean), ""},
		{"path length sd", report.Float(arena.PaperPathSD), report.Float(s.SD), ""},
		{"path length median", strconv.Itoa(arena.PaperPathMedian), report.Float(s.Median), ""},
		{"path length p95", strconv.Itoa(arena.PaperPathP95), report.Float(s.P95), ""},
		{"distance median (m/10 s, 1 Hz)", "", report.Float(c.Game1HzMetres.Median), report.Float(c.FortniteMetres.Median)},
		{"distance p95 (m/10 s, 1 Hz)", "", report.Float(c.Game1HzMetres.P95), report.Float(c.FortniteMetres.P95)},
		{"zipf exponent (time share)", "", report.Float(c.GameOccupancy.Exponent), report.Float(c.FortniteOccupancy.Exponent)},
		{"zipf r2 (time share)", "", report.Float(c.GameOccupancy.R2), report.Float(c.FortniteOccupancy.R2)},
	}
	return files, write("arena-headline.csv", rows)
}

// WritePlots draws into dir (created if missing) and returns the paths:
//
//   - arena-popularity.png: region time share against rank, log-log, for
//     the game and the Fortnite traces, with the fitted Zipf lines (the
//     paper's Figs. 2(a) and 6(b));
//   - arena-path-cdf.png: the CDF of the path length in regions per 10 s,
//     with the paper's median and 95th percentile marked (Figs. 2(b), 6(c));
//   - arena-distance-cdf.png: the CDF of the distance per 10 s for the game
//     (sampled at 10 Hz and at 1 Hz) and for Fortnite.
func (r *MobilityReport) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/colyseus: %w", err)
	}
	c := r.Cmp
	var files []string
	save := func(name string, p *plot.Plot) error {
		path := filepath.Join(dir, name)
		if err := report.SavePNG(path, 6*vg.Inch, 4.5*vg.Inch, p); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	blue, orange, grey := report.Blue, report.Orange, color.Gray{Y: 110}
	suffix := fmt.Sprintf(" (%d bots, %s, seed %d)", c.Config.Players(), c.Config.Map, c.Config.Seed)

	pop := report.NewPlot("Region popularity"+suffix, "rank", "share of time in the region")
	pop.X.Scale, pop.Y.Scale = plot.LogScale{}, plot.LogScale{}
	pop.X.Tick.Marker, pop.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	pop.Legend.Left, pop.Legend.Top = false, true
	for _, s := range []struct {
		label  string
		shares []float64
		fit    arena.ZipfFit
		col    color.Color
	}{{"overworld", c.Game.Occupancy, c.GameOccupancy, blue}, {"Fortnite", c.Fortnite.Occupancy, c.FortniteOccupancy, orange}} {
		var pts plotter.XYs
		for i, v := range s.shares {
			if v > 0 {
				pts = append(pts, plotter.XY{X: float64(i + 1), Y: v})
			}
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			continue
		}
		sc.GlyphStyle.Color, sc.GlyphStyle.Radius, sc.GlyphStyle.Shape = s.col, vg.Points(1.5), draw.CircleGlyph{}
		pop.Add(sc)
		pop.Legend.Add(fmt.Sprintf("%s: Zipf exponent %.2f (R² %.2f)", s.label, s.fit.Exponent, s.fit.R2), sc)
		if len(pts) > 1 {
			// The least-squares line through the points, for reference.
			a := meanLog(pts, s.fit.Exponent)
			ln, err := plotter.NewLine(plotter.XYs{{X: 1, Y: math.Exp(a)}, {X: pts[len(pts)-1].X, Y: math.Exp(a - s.fit.Exponent*math.Log(pts[len(pts)-1].X))}})
			if err == nil {
				ln.Color, ln.Dashes = s.col, []vg.Length{vg.Points(4), vg.Points(3)}
				pop.Add(ln)
			}
		}
	}
	if err := save("arena-popularity.png", pop); err != nil {
		return files, err
	}

	path := report.NewPlot("Path length in 10 s"+suffix, "regions entered in 10 s", "fraction of windows ≤ x")
	path.Legend.Left = true
	report.AddCDF(path, c.Game.PathRegions, blue, fmt.Sprintf("overworld: median %.0f, p95 %.0f", c.PathRegions.Median, c.PathRegions.P95))
	paper, err := plotter.NewScatter(plotter.XYs{{X: arena.PaperPathMedian, Y: 0.5}, {X: arena.PaperPathP95, Y: 0.95}})
	if err == nil {
		paper.GlyphStyle.Shape, paper.GlyphStyle.Radius, paper.GlyphStyle.Color = draw.RingGlyph{}, vg.Points(5), color.Black
		path.Add(paper)
		path.Legend.Add(fmt.Sprintf("paper (Quake III): median %d, p95 %d", arena.PaperPathMedian, arena.PaperPathP95), paper)
	}
	path.Y.Min, path.Y.Max = 0, 1
	if err := save("arena-path-cdf.png", path); err != nil {
		return files, err
	}

	dist := report.NewPlot("Distance in 10 s"+suffix, "metres in 10 s", "fraction of windows ≤ x")
	dist.Legend.Left = false
	dist.Legend.Top = false
	report.AddCDF(dist, c.Game.Metres, blue, fmt.Sprintf("overworld, 10 Hz: median %.0f m", c.GameMetres.Median))
	report.AddCDF(dist, c.Game1Hz.Metres, grey, fmt.Sprintf("overworld, 1 Hz: median %.0f m", c.Game1HzMetres.Median))
	report.AddCDF(dist, c.Fortnite.Metres, orange, fmt.Sprintf("Fortnite, 1 Hz: median %.0f m", c.FortniteMetres.Median))
	dist.X.Max = max(c.GameMetres.Max, c.FortniteMetres.P95*2)
	dist.Y.Min, dist.Y.Max = 0, 1
	return files, save("arena-distance-cdf.png", dist)
}

// meanLog returns the intercept of the line of slope -exp through the
// points' logs.
func meanLog(pts plotter.XYs, exp float64) float64 {
	s := 0.0
	for _, p := range pts {
		s += math.Log(p.Y) + exp*math.Log(p.X)
	}
	return s / float64(len(pts))
}
