package lab

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/cma"
)

// WriteCSV writes one CSV file per figure into dir (created if missing) and
// returns their paths:
//
//   - fig4-join.csv: seed, joins, then the mean and max delay (ms) of every
//     method after that many joins (J-greedy, J-SA, and the optimum when
//     verified);
//   - fig5-cdf.csv: seed, method, rank, delay_ms, fraction: every player's
//     delay after the last join, ascending, with the fraction of players at
//     or below it; method "nearest" is the delay to the nearest mirror with
//     capacity ignored;
//   - fig6-leave.csv: seed, leaves, mean and max delay of L-ignore,
//     L-greedy, L-SA and the optimum;
//   - fig7-dynamic.csv: seed, event, phase (populate or churn), mean and max
//     delay of each combination and the optimum;
//   - fig8-speed.csv: seed, scenario, method, impl, mirrors, events, median,
//     min and max run time in ms over the repeats, moves, moves per event,
//     and the paper's run time when it gives one;
//   - headline.csv: section, metric, method, paper, seed, value: the numbers
//     of WriteTable, one row per seed.
//
// Files of scenarios that were not run are not written. Delays and times are
// written in the shortest form that reads back as the same float64.
func (r *CMAReport) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	var files []string
	write := func(name string, rows [][]string) error {
		path := filepath.Join(dir, name)
		if err := report.WriteCSV(path, rows); err != nil {
			return err
		}
		files = append(files, path)
		return nil
	}
	first := r.Runs[0]
	series := []struct {
		name, x string
		get     func(*CMARun) *ScenarioResult
	}{
		{"fig4-join.csv", "joins", func(run *CMARun) *ScenarioResult { return run.Join }},
		{"fig6-leave.csv", "leaves", func(run *CMARun) *ScenarioResult { return run.Leave }},
		{"fig7-dynamic.csv", "event", func(run *CMARun) *ScenarioResult { return run.Dynamic }},
	}
	for _, s := range series {
		if s.get(&first) == nil {
			continue
		}
		var rows [][]string
		for i := range r.Runs {
			res := s.get(&r.Runs[i])
			traces := res.allTraces()
			if i == 0 {
				hdr := []string{"seed", s.x}
				if res.Scenario == ScenarioDynamic {
					hdr = append(hdr, "phase")
				}
				for _, t := range traces {
					hdr = append(hdr, t.Label+"_mean_ms", t.Label+"_max_ms")
				}
				rows = append(rows, hdr)
			}
			for e := range res.Events {
				row := []string{fmtUint(r.Runs[i].Seed), strconv.Itoa(e + 1)}
				if res.Scenario == ScenarioDynamic {
					row = append(row, map[bool]string{true: "populate", false: "churn"}[e < res.PopulateEvents])
				}
				for _, t := range traces {
					row = append(row, report.Float(t.Mean[e]), report.Float(t.Max[e]))
				}
				rows = append(rows, row)
			}
		}
		if err := write(s.name, rows); err != nil {
			return files, err
		}
	}
	if first.Join != nil {
		rows := [][]string{{"seed", "method", "rank", "delay_ms", "fraction"}}
		for _, run := range r.Runs {
			for _, t := range append(run.Join.Traces[:len(run.Join.Traces):len(run.Join.Traces)], Trace{Label: "nearest", Final: run.Join.Nearest}) {
				for k, d := range t.Final {
					rows = append(rows, []string{fmtUint(run.Seed), t.Label, strconv.Itoa(k + 1), report.Float(d), report.Float(float64(k+1) / float64(len(t.Final)))})
				}
			}
		}
		if err := write("fig5-cdf.csv", rows); err != nil {
			return files, err
		}
	}
	if first.Speed != nil {
		rows := [][]string{{"seed", "scenario", "method", "impl", "mirrors", "events", "median_ms", "min_ms", "max_ms", "moves", "moves_per_event", "paper_ms"}}
		for _, run := range r.Runs {
			for _, row := range run.Speed.Rows {
				paper := ""
				if p, ok := paperMillis(row.Scenario, row.Label, row.Mirrors); ok && row.Method != cma.SA && r.Config.PaperSizes() {
					paper = report.Float(p)
				}
				lo, hi := row.Millis[0], row.Millis[0]
				for _, x := range row.Millis {
					lo, hi = min(lo, x), max(hi, x)
				}
				rows = append(rows, []string{fmtUint(run.Seed), string(row.Scenario), row.Label, row.Method.String(), strconv.Itoa(row.Mirrors),
					strconv.Itoa(row.Events), report.Float(row.Median), report.Float(lo), report.Float(hi), strconv.Itoa(row.Moves), report.Float(row.MovesPerEvent()), paper})
			}
		}
		if err := write("fig8-speed.csv", rows); err != nil {
			return files, err
		}
	}
	rows := [][]string{{"section", "metric", "method", "paper", "seed", "value"}}
	for _, m := range r.Metrics() {
		for i, v := range m.Values {
			rows = append(rows, []string{m.Section, m.Name, m.Method, m.Paper, fmtUint(r.Runs[i].Seed), report.Float(v)})
		}
	}
	if err := write("headline.csv", rows); err != nil {
		return files, err
	}
	slices.Sort(files)
	return files, nil
}

// allTraces returns the traces followed by the optimum's, if any.
func (r *ScenarioResult) allTraces() []Trace {
	ts := r.Traces
	if r.Optimum != nil {
		ts = append(ts[:len(ts):len(ts)], *r.Optimum)
	}
	return ts
}

func fmtUint(x uint64) string { return strconv.FormatUint(x, 10) }
