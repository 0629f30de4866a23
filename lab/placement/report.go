package placement

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/overworld/overworld/lab/report"
)

// WriteTable writes the players' snapshots, the sweep, and the region
// policies.
func (r *Report) WriteTable(w io.Writer) error {
	cfg := r.Config
	p := r.Players
	var b bytes.Buffer
	fmt.Fprintf(&b, "players: %d online on average (GeoNames, by population), sessions %v on average, %v simulated, seed %d\n",
		cfg.Players, cfg.Session, cfg.Duration, cfg.Seed)
	fmt.Fprintf(&b, "nodes:   %d WonderNetwork cities × %d seats (headroom %.2f): %s\n", len(cfg.Servers), p.Capacity, p.Headroom,
		report.Wrap(strings.Join(cfg.Servers, ", "), 90, "         "))
	fmt.Fprintf(&b, "RTTs:    a client pings the first %d nodes before joining, up to %d more the plane names on admission, and the\n"+
		"         ones it asks for later (probe slack %.2f); the plane estimates the rest (Vivaldi); figures are on the\n"+
		"         model's true RTTs\n\n", cfg.JoinProbes, cfg.Probes, p.Slack)
	rows := [][]string{{"time", "players", "plane ms", "optimum ms", "static ms", "plane/opt", "vs static", "plane p95", "static p95", "moves", "est. err"}}
	for _, s := range p.Snapshots {
		rows = append(rows, []string{fmtHM(s.At), fmt.Sprint(s.Players), report.Fixed(s.Plane, 1), report.Fixed(s.Optimum, 1), report.Fixed(s.Static, 1),
			fmt.Sprintf("+%.1f%%", 100*s.Gap()), fmt.Sprintf("%+.1f%%", -100*s.Reduction()), report.Fixed(s.PlaneP95, 0), report.Fixed(s.StaticP95, 0),
			fmt.Sprint(s.Moves), report.Pct(s.EstError)})
	}
	b.WriteString(report.AlignTable(rows, 1))
	fmt.Fprintf(&b, "%d joins (%d refused: no room), %d leaves, %d measurements after joins, %.1f nodes measured per player, %d moves\n",
		p.Joins, p.Rejected, p.Leaves, p.Measures, p.Measured, p.Moves)
	fmt.Fprintf(&b, "worst gap to the optimum %.1f%% (target ≤ 2%%); RTT reduction vs static: least %.1f%%, mean %.1f%% (target ≥ 15%%)\n\n",
		100*p.WorstGap(), 100*p.MinReduction(), 100*p.MeanReduction())
	if len(r.Sweep) > 0 {
		b.WriteString("sweep: the same run with another headroom or probe slack (snapshot means; slack −1: no probes after the admission's)\n")
		rows = [][]string{{"headroom", "seats/node", "slack", "measured/player", "plane ms", "optimum ms", "static ms", "worst gap", "mean vs static", "moves"}}
		for _, s := range append([]*PlayersRun{p}, r.Sweep...) {
			var pl, op, st float64
			for _, sn := range s.Snapshots {
				pl += sn.Plane
				op += sn.Optimum
				st += sn.Static
			}
			n := float64(len(s.Snapshots))
			rows = append(rows, []string{report.Fixed(s.Headroom, 2), fmt.Sprint(s.Capacity), report.Fixed(s.Slack, 2), report.Fixed(s.Measured, 1),
				report.Fixed(pl/n, 1), report.Fixed(op/n, 1), report.Fixed(st/n, 1), fmt.Sprintf("+%.1f%%", 100*s.WorstGap()),
				fmt.Sprintf("%+.1f%%", -100*s.MeanReduction()), fmt.Sprint(s.Moves)})
		}
		b.WriteString(report.AlignTable(rows, 0))
		b.WriteString("\n")
	}
	asked := "no pings asked beyond an admission's"
	if cfg.RegionSlack > 0 {
		asked = fmt.Sprintf("players asked to ping the nodes within %.0f%% of the least aggregate", 100*cfg.RegionSlack)
	}
	fmt.Fprintf(&b, "region: %d players on average, arrivals from Europe %.0f%% → %.0f%% over %d hours of %v, first core %s,\n"+
		"        migration when the aggregate gain ≥ %.0f ms, %s;\n"+
		"        ratio = aggregate true RTT on the core / on the best core, after each hour\n",
		cfg.RegionPlayers, 100*cfg.EuropeFrom, 100*cfg.EuropeTo, cfg.Hours, cfg.Hour, cfg.RegionHome, cfg.MigrationCost, asked)
	rows = [][]string{{"policy", "worst ratio", "hours > 1.10", "selections", "migrations", "pings asked", "final core"}}
	for _, g := range r.Regions {
		over := 0
		for _, x := range g.Ratio {
			if x > 1.10 {
				over++
			}
		}
		rows = append(rows, []string{g.Policy, report.Fixed(g.WorstRatio(), 3), fmt.Sprintf("%d of %d", over, len(g.Ratio)),
			fmt.Sprint(g.Selections), fmt.Sprint(g.Migrations), fmt.Sprint(g.Probes), g.Core[len(g.Core)-1]})
	}
	b.WriteString(report.AlignTable(rows, 1))
	return report.WriteTrimmed(w, b.Bytes())
}

func fmtHM(d time.Duration) string {
	m := int(d.Minutes() + 0.5)
	return fmt.Sprintf("%d:%02d", m/60, m%60)
}

// WriteCSV writes placement-snapshots.csv, placement-sweep.csv and
// placement-regions.csv into dir.
func (r *Report) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	rows := [][]string{{"headroom", "probe_slack", "seconds", "players", "plane_ms", "optimum_ms", "static_ms", "plane_p95_ms", "static_p95_ms", "moves", "estimate_error"}}
	for _, s := range append([]*PlayersRun{r.Players}, r.Sweep...) {
		for _, sn := range s.Snapshots {
			rows = append(rows, []string{report.Float(s.Headroom), report.Float(s.Slack), report.Float(sn.At.Seconds()), fmt.Sprint(sn.Players),
				report.Float(sn.Plane), report.Float(sn.Optimum), report.Float(sn.Static), report.Float(sn.PlaneP95), report.Float(sn.StaticP95),
				fmt.Sprint(sn.Moves), report.Float(sn.EstError)})
		}
	}
	path := filepath.Join(dir, "placement-snapshots.csv")
	if err := report.WriteCSV(path, rows); err != nil {
		return files, err
	}
	files = append(files, path)
	rows = [][]string{{"policy", "hour", "ratio", "europe_share", "core", "selections", "migrations"}}
	for _, g := range r.Regions {
		for h := range g.Ratio {
			rows = append(rows, []string{g.Policy, fmt.Sprint(h + 1), report.Float(g.Ratio[h]), report.Float(g.Europe[h]), g.Core[h],
				fmt.Sprint(g.Selections), fmt.Sprint(g.Migrations)})
		}
	}
	path = filepath.Join(dir, "placement-regions.csv")
	if err := report.WriteCSV(path, rows); err != nil {
		return files, err
	}
	return append(files, path), nil
}

// WritePlots writes placement-rtt.png (mean RTT at each snapshot) and
// placement-regions.png (each policy's ratio per hour).
func (r *Report) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	p := report.NewPlot("Mean player RTT, "+fmt.Sprint(r.Config.Players)+" players", "simulated time (min)", "mean RTT (ms)")
	for _, line := range []struct {
		label string
		get   func(Snapshot) float64
		col   int
	}{{"control plane (CMA)", func(s Snapshot) float64 { return s.Plane }, 0}, {"exact optimum", func(s Snapshot) float64 { return s.Optimum }, 1},
		{"static nearest with room", func(s Snapshot) float64 { return s.Static }, 2}} {
		var pts plotter.XYs
		for _, s := range r.Players.Snapshots {
			pts = append(pts, plotter.XY{X: s.At.Minutes(), Y: line.get(s)})
		}
		addLine(p, pts, line.col, line.label)
	}
	var files []string
	path := filepath.Join(dir, "placement-rtt.png")
	if err := report.SavePNG(path, 6*vg.Inch, 4*vg.Inch, p); err != nil {
		return files, err
	}
	files = append(files, path)
	q := report.NewPlot("Region relocation: aggregate RTT on the core / best core", "hour", "ratio")
	for i, g := range r.Regions {
		var pts plotter.XYs
		for h, x := range g.Ratio {
			pts = append(pts, plotter.XY{X: float64(h + 1), Y: x})
		}
		addLine(q, pts, i, g.Policy)
	}
	path = filepath.Join(dir, "placement-regions.png")
	if err := report.SavePNG(path, 7*vg.Inch, 4*vg.Inch, q); err != nil {
		return files, err
	}
	return append(files, path), nil
}

var palette = []color.Color{report.Blue, report.Green, report.Orange, report.Red, report.Purple, color.Black}

// addLine draws pts in the palette's colour col with a legend entry.
func addLine(p *plot.Plot, pts plotter.XYs, col int, label string) {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return // no points: nothing to draw
	}
	l.Color = palette[col%len(palette)]
	l.Width = vg.Points(1.3)
	p.Add(l)
	p.Legend.Add(label, l)
}
