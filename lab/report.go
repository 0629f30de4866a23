package lab

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/overworld/overworld/geo/topo"
	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/cma"
)

// Metric is one headline number of a CMA report: one value per seed, and
// the paper's value when it prints one.
type Metric struct {
	// Section is the paper's section ("§4.1 join", ...).
	Section string
	// Name says what is measured; Method is the paper's name of the method.
	Name, Method string
	// Paper is the paper's value as printed; "" when it gives none (or when
	// the configuration's sizes are not the paper's).
	Paper string
	// Values holds one value per seed, in seed order.
	Values []float64
	// Decimals is the number of decimals to print.
	Decimals int
}

// Mean returns the mean of the values.
func (m Metric) Mean() float64 { return report.Mean(m.Values) }

// SD returns the sample standard deviation of the values (0 for one).
func (m Metric) SD() float64 {
	if len(m.Values) < 2 {
		return 0
	}
	mu, ss := m.Mean(), 0.0
	for _, v := range m.Values {
		ss += (v - mu) * (v - mu)
	}
	return math.Sqrt(ss / float64(len(m.Values)-1))
}

// PaperSizes reports whether the configuration has the paper's sizes, so
// that the paper's numbers are comparable (on BRITE-style data; on real
// data they are only a reference).
func (c CMAConfig) PaperSizes() bool {
	d := DefaultCMAConfig()
	return slices.Equal(c.JoinCapacities, d.JoinCapacities) && c.JoinPlayers == report.Sum(d.JoinCapacities) &&
		slices.Equal(c.DynamicCapacities, d.DynamicCapacities) && c.DynamicPopulate == d.DynamicPopulate &&
		c.DynamicChurn == d.DynamicChurn && c.Bound == d.Bound
}

// Metrics returns the report's headline numbers, section by section.
func (r *CMAReport) Metrics() []Metric {
	cfg := r.Config
	paper := func(s string) string {
		if cfg.PaperSizes() {
			return s
		}
		return ""
	}
	var out []Metric
	add := func(sec, name, method, p string, dec int, f func(run *CMARun) float64) {
		m := Metric{Section: sec, Name: name, Method: method, Paper: paper(p), Decimals: dec}
		for i := range r.Runs {
			m.Values = append(m.Values, f(&r.Runs[i]))
		}
		out = append(out, m)
	}
	trace := func(res *ScenarioResult, label string) *Trace {
		for i := range res.Traces {
			if res.Traces[i].Label == label {
				return &res.Traces[i]
			}
		}
		return nil
	}
	first := &r.Runs[0]
	n := cfg.JoinPlayers
	if first.Join != nil {
		const sec = "§4.1 join"
		for _, l := range []struct {
			label string
			paper int
		}{{"J-greedy", paperWithinGreedy}, {"J-SA", paperWithinSA}} {
			add(sec, fmt.Sprintf("players ≤ %g ms after %d joins", cfg.Bound, n), l.label, fmt.Sprint(l.paper), 0, func(run *CMARun) float64 {
				return float64(within(trace(run.Join, l.label).Final, cfg.Bound))
			})
		}
		add(sec, fmt.Sprintf("players ≤ %g ms after %d joins", cfg.Bound, n), "J-SA − J-greedy", fmt.Sprint(paperWithinSA-paperWithinGreedy), 0, func(run *CMARun) float64 {
			return float64(within(trace(run.Join, "J-SA").Final, cfg.Bound) - within(trace(run.Join, "J-greedy").Final, cfg.Bound))
		})
		add(sec, fmt.Sprintf("players ≤ %g ms at their nearest mirror", cfg.Bound), "no capacity", fmt.Sprintf("≥ %d", paperWithinSA), 0, func(run *CMARun) float64 {
			return float64(within(run.Join.Nearest, cfg.Bound))
		})
		for _, l := range []string{"J-greedy", "J-SA"} {
			add(sec, fmt.Sprintf("mean delay after %d joins, ms", n), l, "", 1, func(run *CMARun) float64 { return last(trace(run.Join, l).Mean) })
		}
		add(sec, fmt.Sprintf("mean delay after %d joins, ms", n), "no capacity", "", 1, func(run *CMARun) float64 { return report.Mean(run.Join.Nearest) })
		for _, l := range []string{"J-greedy", "J-SA"} {
			add(sec, fmt.Sprintf("max delay after %d joins, ms", n), l, "", 1, func(run *CMARun) float64 { return last(trace(run.Join, l).Max) })
		}
		add(sec, "joins before the first mirror is full", "J-greedy", fmt.Sprintf("≈%d", paperGreedyOptimalUntil), 0, func(run *CMARun) float64 {
			return float64(trace(run.Join, "J-greedy").FirstFull - 1)
		})
		add(sec, "joins before J-greedy falls behind the optimum", "J-greedy", fmt.Sprintf("≈%d", paperGreedyOptimalUntil), 0, func(run *CMARun) float64 {
			return float64(firstWorse(trace(run.Join, "J-greedy").Mean, trace(run.Join, "J-SA").Mean))
		})
		if first.Join.Optimum != nil {
			add(sec, fmt.Sprintf("joins where J-SA ≠ optimum (of %d)", n), "J-SA", "", 0, func(run *CMARun) float64 { return float64(run.Join.Check.TotalDiffers) })
		}
	}
	if first.Leave != nil {
		const sec = "§4.2 leave"
		for _, l := range []string{"L-ignore", "L-greedy", "L-SA"} {
			add(sec, "mean delay, averaged over the leaves, ms", l, "", 1, func(run *CMARun) float64 { return report.Mean(nonEmpty(trace(run.Leave, l).Mean)) })
		}
		for _, l := range []string{"L-ignore", "L-greedy", "L-SA"} {
			add(sec, "max delay, averaged over the leaves, ms", l, "", 1, func(run *CMARun) float64 { return report.Mean(nonEmpty(trace(run.Leave, l).Max)) })
		}
		if first.Leave.Optimum != nil {
			add(sec, fmt.Sprintf("leaves where L-SA ≠ optimum (of %d)", n), "L-SA", "0 (\"match BF\")", 0, func(run *CMARun) float64 { return float64(run.Leave.Check.TotalDiffers) })
		}
	}
	if first.Dynamic != nil {
		const sec = "§4.3 dynamic"
		ev := first.Dynamic.Events
		for _, l := range []string{"J-greedy/L-ignore", "J-greedy/L-greedy", "J-SA/L-SA"} {
			add(sec, fmt.Sprintf("mean delay, averaged over the %d events, ms", ev), l, "", 1, func(run *CMARun) float64 { return report.Mean(trace(run.Dynamic, l).Mean) })
		}
		for _, l := range []string{"J-greedy/L-ignore", "J-greedy/L-greedy", "J-SA/L-SA"} {
			add(sec, fmt.Sprintf("max delay, averaged over the %d events, ms", ev), l, "", 1, func(run *CMARun) float64 { return report.Mean(trace(run.Dynamic, l).Max) })
		}
		if first.Dynamic.Optimum != nil {
			add(sec, fmt.Sprintf("events where J-SA/L-SA ≠ optimum (of %d)", ev), "J-SA/L-SA", "", 0, func(run *CMARun) float64 { return float64(run.Dynamic.Check.TotalDiffers) })
		}
	}
	const sec = "moves"
	perEvent := func(res func(*CMARun) *ScenarioResult, l string) func(*CMARun) float64 {
		return func(run *CMARun) float64 {
			s := res(run)
			return float64(trace(s, l).Moves) / float64(s.Events)
		}
	}
	if first.Join != nil {
		add(sec, "players moved per event", "J-SA", paperMoves, 2, perEvent(func(r *CMARun) *ScenarioResult { return r.Join }, "J-SA"))
	}
	if first.Leave != nil {
		add(sec, "players moved per event", "L-SA", paperMoves, 2, perEvent(func(r *CMARun) *ScenarioResult { return r.Leave }, "L-SA"))
		add(sec, "players moved per event", "L-greedy", "", 2, perEvent(func(r *CMARun) *ScenarioResult { return r.Leave }, "L-greedy"))
	}
	if first.Dynamic != nil {
		add(sec, "players moved per event", "J-SA/L-SA", paperMoves, 2, perEvent(func(r *CMARun) *ScenarioResult { return r.Dynamic }, "J-SA/L-SA"))
		add(sec, "players moved per event", "J-greedy/L-greedy", "", 2, perEvent(func(r *CMARun) *ScenarioResult { return r.Dynamic }, "J-greedy/L-greedy"))
	}
	return out
}

// SpeedCell is one cell of the speed table: a method's run time at one
// system size, averaged over the seeds.
type SpeedCell struct {
	Mirrors int
	// Millis is the mean over seeds of the median run time, in ms; Min and
	// Max the smallest and largest median over seeds.
	Millis, Min, Max float64
	// MovesPerEvent is the mean over seeds of the players moved per event.
	MovesPerEvent float64
	// Paper is the paper's run time in ms, when it gives one.
	Paper    float64
	HasPaper bool
}

// SpeedLine is one row of the speed table.
type SpeedLine struct {
	Scenario Scenario
	Label    string
	Method   cma.Method
	Cells    []SpeedCell // one per system size, as configured
}

// SpeedTable returns the speed scenario averaged over seeds (nil when it was
// not run). Paper values are given only for the rows that run the paper's
// algorithms: greedy, ignore, and sa-rebuild for J-SA and L-SA.
func (r *CMAReport) SpeedTable() []SpeedLine {
	if len(r.Runs) == 0 || r.Runs[0].Speed == nil {
		return nil
	}
	var lines []SpeedLine
	find := func(sc Scenario, label string, m cma.Method) *SpeedLine {
		for i := range lines {
			if l := &lines[i]; l.Scenario == sc && l.Label == label && l.Method == m {
				return l
			}
		}
		lines = append(lines, SpeedLine{Scenario: sc, Label: label, Method: m})
		return &lines[len(lines)-1]
	}
	for _, row := range r.Runs[0].Speed.Rows {
		find(row.Scenario, row.Label, row.Method)
	}
	for i := range lines {
		l := &lines[i]
		for _, m := range r.Config.SpeedMirrors {
			c := SpeedCell{Mirrors: m, Min: math.Inf(1), Max: math.Inf(-1)}
			var meds, moves []float64
			for _, run := range r.Runs {
				for _, row := range run.Speed.Rows {
					if row.Scenario == l.Scenario && row.Label == l.Label && row.Method == l.Method && row.Mirrors == m {
						meds = append(meds, row.Median)
						moves = append(moves, row.MovesPerEvent())
					}
				}
			}
			c.Millis, c.MovesPerEvent = report.Mean(meds), report.Mean(moves)
			c.Min, c.Max = slices.Min(meds), slices.Max(meds)
			if l.Method != cma.SA && r.Config.PaperSizes() {
				c.Paper, c.HasPaper = paperMillis(l.Scenario, l.Label, m)
			}
			l.Cells = append(l.Cells, c)
		}
	}
	return lines
}

// Describe returns a one-line description of the data a configuration runs
// on.
func (c CMAConfig) Describe() string {
	if c.Data == DataReal {
		return fmt.Sprintf("real: players drawn from GeoNames cities by population, mirrors in WonderNetwork cities (%s), modelled RTT",
			strings.Join(c.Servers[:c.mirrorPool()], ", "))
	}
	t := c.Topology
	return fmt.Sprintf("BRITE-style topology, %d nodes (%d Barabási–Albert ASes × %d Waxman routers), link delays %s; clients and mirrors are random nodes",
		t.AS.N*t.Router.N, t.AS.N, t.Router.N, delayDesc(t.Router.Delay))
}

func delayDesc(d topo.DelayModel) string {
	switch d.Kind {
	case topo.DelayDefault:
		return fmt.Sprintf("uniform in [%g, %g] ms", topo.DefaultMinDelay, topo.DefaultMaxDelay)
	case topo.DelayUniform:
		return fmt.Sprintf("uniform in [%g, %g] ms", d.Min, d.Max)
	}
	return "proportional to length"
}

// WriteTable writes the headline numbers and the speed table as text,
// the paper's numbers in the column "paper" and this run's in "overworld".
func (r *CMAReport) WriteTable(w io.Writer) error {
	cfg := r.Config
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "CMA paper §4 (Webb & Soh, MMCN 2008): paper vs overworld\n")
	fmt.Fprintf(tw, "data\t%s\n", cfg.Describe())
	seeds := fmt.Sprintf("%d (seed %d)", cfg.Seeds, cfg.Seed)
	if cfg.Seeds > 1 {
		seeds = fmt.Sprintf("%d (seeds %d..%d): overworld = mean ± sd over seeds, [min, max]", cfg.Seeds, cfg.Seed, cfg.Seed+uint64(cfg.Seeds)-1)
	}
	fmt.Fprintf(tw, "seeds\t%s; the paper reports one random instance\n", seeds)
	if first := r.Runs[0]; first.Join != nil || first.Leave != nil {
		fmt.Fprintf(tw, "join/leave\t%d players, %d mirrors, capacities %s\n", cfg.JoinPlayers, len(cfg.JoinCapacities), report.Ints(cfg.JoinCapacities))
	}
	if r.Runs[0].Dynamic != nil {
		fmt.Fprintf(tw, "dynamic\t%d clients, %d mirrors, capacities %s; populate to %d, then %d joins and %d leaves\n",
			cfg.dynamicPool(), len(cfg.DynamicCapacities), report.Ints(cfg.DynamicCapacities), cfg.DynamicPopulate, cfg.DynamicChurn, cfg.DynamicChurn)
	}
	if !cfg.PaperSizes() {
		fmt.Fprintf(tw, "note\tsizes differ from the paper's: its numbers are not shown\n")
	} else if cfg.Data == DataReal {
		fmt.Fprintf(tw, "note\tthe paper's numbers are for its BRITE topology; on real data they are a reference only\n")
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	sec, name := "", ""
	for _, m := range r.Metrics() {
		if m.Section != sec {
			if sec != "" {
				fmt.Fprintln(tw, "\t\t\t\t")
			}
			sec, name = m.Section, ""
			spread := ""
			if cfg.Seeds > 1 {
				spread = "\t[min, max]"
			}
			fmt.Fprintf(tw, "%s\tmethod\tpaper\toverworld%s\n", sec, spread)
		}
		p := m.Paper
		if p == "" {
			p = "–"
		}
		val := report.Fixed(m.Mean(), m.Decimals)
		spread := ""
		if cfg.Seeds > 1 {
			val += " ± " + report.Fixed(m.SD(), m.Decimals)
			spread = fmt.Sprintf("\t[%s, %s]", report.Fixed(slices.Min(m.Values), m.Decimals), report.Fixed(slices.Max(m.Values), m.Decimals))
		}
		shown := m.Name
		if shown == name {
			shown = ""
		}
		name = m.Name
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s%s\n", shown, m.Method, p, val, spread)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if lines := r.SpeedTable(); lines != nil {
		over := fmt.Sprintf("overworld (median of %d)", cfg.SpeedRepeats)
		if cfg.Seeds > 1 {
			over = fmt.Sprintf("overworld (median of %d, seed mean)", cfg.SpeedRepeats)
		}
		fmt.Fprintf(&b, "\n§4.4 run time of a whole scenario, ms, and players moved per event\n")
		wsc, wl, wi := len("scenario"), len("method"), len("impl")
		for _, l := range lines {
			wsc, wl, wi = max(wsc, len(l.Scenario)), max(wl, utf8.RuneCountInString(l.Label)), max(wi, len(l.Method.String()))
		}
		k := len(cfg.SpeedMirrors)
		titles := []string{"paper (Fig. 8)", over, "moves/event"}
		widths := []int{8, 9, 7}
		for g, t := range titles {
			widths[g] = max(widths[g], (utf8.RuneCountInString(t)+2+k-1)/k)
		}
		fmt.Fprintf(&b, "%*s", wsc+wl+wi+4, "")
		for g, t := range titles {
			fmt.Fprintf(&b, "%*s", k*widths[g], t)
		}
		b.WriteString("\n")
		fmt.Fprintf(&b, "%-*s  %-*s  %-*s", wsc, "scenario", wl, "method", wi, "impl")
		for _, wd := range widths {
			for _, m := range cfg.SpeedMirrors {
				fmt.Fprintf(&b, "%*s", wd, fmt.Sprintf("m=%d", m))
			}
		}
		b.WriteString("\n")
		prev := Scenario("")
		for _, l := range lines {
			sc := string(l.Scenario)
			if l.Scenario == prev {
				sc = ""
			}
			prev = l.Scenario
			fmt.Fprintf(&b, "%-*s  %-*s  %-*s", wsc, sc, wl, l.Label, wi, l.Method)
			for _, c := range l.Cells {
				p := "–"
				if c.HasPaper {
					p = report.Fixed(c.Paper, 0)
				}
				fmt.Fprintf(&b, "%*s", widths[0], p)
			}
			for _, c := range l.Cells {
				fmt.Fprintf(&b, "%*s", widths[1], fmtMillis(c.Millis))
			}
			for _, c := range l.Cells {
				fmt.Fprintf(&b, "%*.2f", widths[2], c.MovesPerEvent)
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "impl: sa-rebuild is the paper's J-SA/L-SA (MC and MP rebuilt on every event, O(nm)); sa keeps them\n")
		fmt.Fprintf(&b, "up to date (O(m² + m log n) per event). The paper timed a 2008 machine: compare ratios, not absolute times.\n")
	}
	return report.WriteTrimmed(w, b.Bytes())
}

// within counts delays ≤ bound.
func within(ds []float64, bound float64) int {
	n := 0
	for _, d := range ds {
		if d <= bound {
			n++
		}
	}
	return n
}

// firstWorse returns how many events pass before a's mean first exceeds
// b's (relative tolerance 1e-9); len(a) if never.
func firstWorse(a, b []float64) int {
	for i := range a {
		if a[i] > b[i]+1e-9*max(1, b[i]) {
			return i
		}
	}
	return len(a)
}

func last(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)-1]
}

// nonEmpty drops the trailing zeros of a leave trace: after the last
// leave there is nobody to average over.
func nonEmpty(xs []float64) []float64 {
	for len(xs) > 0 && xs[len(xs)-1] == 0 {
		xs = xs[:len(xs)-1]
	}
	return xs
}

// fmtMillis prints a run time with about three significant digits.
func fmtMillis(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3f", x)
}
