package lab

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/cma"
	"github.com/overworld/overworld/place/mcf"
)

// demoWeights are the relative server capacities of the demo, repeated in
// server order: 3, 1, 2, 3, 1, 2, ... An operator's capacity follows what it
// could rent where, not where players live, so some regions are short of
// seats (with the default servers: Frankfurt, Sao Paulo and Bangalore get a
// third of New York's) and assigning players well matters.
var demoWeights = []int{3, 1, 2}

// DemoConfig configures Demo. Zero fields take the defaults of
// DefaultDemoConfig.
type DemoConfig struct {
	// Players is the number of players that join first (default 2,000).
	Players int
	// Servers are WonderNetwork cities (default: the first 10 of
	// DefaultServers).
	Servers []string
	// Load is Players over the total capacity, in (0, 1] (default 0.9).
	// Capacities are apportioned over the servers by demoWeights.
	Load float64
	// Churn is the number of random events (a join or a leave, equally
	// likely, a join when nobody is connected and a leave when the system
	// is full) after the joins (default: Players).
	Churn int
	// Snapshots is the number of evenly spaced moments during the churn
	// (the last one after the last event) at which delays are measured and
	// the optimum is re-solved from scratch (default 10).
	Snapshots int
	// Seed seeds the players and the events (any value, 0 included).
	Seed uint64
	// Bound is the delay requirement counted in the table (default 100 ms).
	Bound float64
}

// DefaultDemoConfig returns the configuration of "overworld demo".
func DefaultDemoConfig() DemoConfig {
	return DemoConfig{Players: 2000, Servers: DefaultServers()[:10], Load: 0.9, Snapshots: 10, Seed: 1, Bound: 100}
}

// Validate checks the configuration and returns a copy with the defaults
// filled in; errors wrap ErrConfig. Server names are checked by Demo.
func (c DemoConfig) Validate() (DemoConfig, error) {
	d := DefaultDemoConfig()
	c.Servers = slices.Clone(c.Servers)
	if c.Players == 0 {
		c.Players = d.Players
	}
	if len(c.Servers) == 0 {
		c.Servers = d.Servers
	}
	if c.Load == 0 {
		c.Load = d.Load
	}
	if c.Churn == 0 {
		c.Churn = c.Players
	}
	if c.Snapshots == 0 {
		c.Snapshots = d.Snapshots
	}
	if c.Bound == 0 {
		c.Bound = d.Bound
	}
	switch {
	case c.Players < 1 || c.Players > 1_000_000:
		return c, fmt.Errorf("%w: players %d: want 1..1000000", ErrConfig, c.Players)
	case !(c.Load > 0 && c.Load <= 1):
		return c, fmt.Errorf("%w: load %v: want a fraction in (0, 1]", ErrConfig, c.Load)
	case c.Churn < 0:
		return c, fmt.Errorf("%w: churn %d: want ≥ 0", ErrConfig, c.Churn)
	case c.Snapshots < 1 || c.Snapshots > max(1, c.Churn):
		return c, fmt.Errorf("%w: snapshots %d: want 1..%d (the churn events)", ErrConfig, c.Snapshots, max(1, c.Churn))
	case !(c.Bound > 0):
		return c, fmt.Errorf("%w: bound %v: want a positive delay in ms", ErrConfig, c.Bound)
	}
	if capacity := c.capacity(); capacity < len(c.Servers) {
		return c, fmt.Errorf("%w: %d players at load %v give %d seats, fewer than the %d servers", ErrConfig, c.Players, c.Load, capacity, len(c.Servers))
	}
	return c, nil
}

// capacity is the total number of seats: Players / Load, rounded up.
func (c DemoConfig) capacity() int { return int(math.Ceil(float64(c.Players)/c.Load - 1e-9)) }

// DemoReport is the outcome of Demo.
type DemoReport struct {
	// Config is the configuration run, defaults filled in.
	Config DemoConfig
	// Servers are the servers with their capacities.
	Servers []cma.Mirror
	// Rows holds sa, greedy, ignore and optimal, in that order.
	Rows []DemoRow
	// Matched counts the snapshots where SA's total delay equals the
	// optimum's (relative tolerance 1e-9).
	Matched int
}

// DemoRow is one method's line of the demo table.
type DemoRow struct {
	// Method is the cma method name, or "optimal" for the from-scratch
	// re-solve.
	Method string
	// Mean, P95 and Max are the players' delays in ms and Within the share
	// of players within the bound, each averaged over the snapshots.
	Mean, P95, Max, Within float64
	// MovesPerEvent is the number of connected players moved per join or
	// leave (not measured for optimal: NaN).
	MovesPerEvent float64
	// P50 and P99 are the median and 99th percentile of the time per event
	// (optimal: per re-solve at a snapshot).
	P50, P99 time.Duration
}

// Demo runs the demo: Players players from GeoNames cities (drawn by
// population) join servers in WonderNetwork cities, then Churn random joins
// and leaves follow; sa, greedy and ignore handle every event, and at each
// snapshot the assignment is also solved from scratch as a min-cost flow
// (place/mcf), the exact optimum.
func Demo(cfg DemoConfig) (*DemoReport, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	src, err := newRealSource(cfg.Servers)
	if err != nil {
		return nil, err
	}
	caps, err := apportion(demoWeights, len(cfg.Servers), cfg.capacity())
	if err != nil {
		return nil, err
	}
	script, snaps := demoScript(cfg, rand.New(rand.NewPCG(cfg.Seed, streamScript)))
	in, err := src.instance(clientsNeeded(script), len(cfg.Servers), rand.New(rand.NewPCG(cfg.Seed, streamDemo)))
	if err != nil {
		return nil, err
	}
	mirrors := in.mirrorsFor(caps)
	rep := &DemoReport{Config: cfg, Servers: mirrors}
	var saTotals []float64
	for _, m := range []cma.Method{cma.SA, cma.Greedy, cma.Ignore} {
		s, err := newSim(in, mirrors, m, &meter{})
		if err != nil {
			return nil, err
		}
		var durs []time.Duration
		var t Trace
		var stats []cma.Stats
		prev := 0
		for _, end := range snaps {
			if err := s.run(script[prev:end], &t, false, &durs); err != nil {
				return nil, err
			}
			prev = end
			st := cma.Summarize(s.final(), cfg.Bound)
			stats = append(stats, st)
			if m == cma.SA {
				saTotals = append(saTotals, st.Total)
			}
		}
		row := demoRow(m.String(), stats)
		row.MovesPerEvent = float64(t.Moves) / float64(len(script))
		row.P50, row.P99 = report.Quantile(durs, 0.5), report.Quantile(durs, 0.99)
		rep.Rows = append(rep.Rows, row)
	}
	// The optimum at each snapshot, for the clients connected then.
	var stats []cma.Stats
	var durs []time.Duration
	present := make([]bool, len(in.clients))
	prev := 0
	for k, end := range snaps {
		for _, ev := range script[prev:end] {
			present[ev.client] = ev.join
		}
		prev = end
		var rows [][]float64
		for c, ok := range present {
			if ok {
				rows = append(rows, in.delay[c][:len(mirrors)])
			}
		}
		t0 := time.Now()
		assign, total, err := mcf.Transport(rows, caps)
		durs = append(durs, time.Since(t0))
		if err != nil {
			return nil, fmt.Errorf("lab: optimum at snapshot %d: %w", k+1, err)
		}
		ds := make([]float64, len(rows))
		for i, j := range assign {
			ds[i] = rows[i][j]
		}
		st := cma.Summarize(ds, cfg.Bound)
		stats = append(stats, st)
		if abs(saTotals[k]-total) <= 1e-9*max(1, total) {
			rep.Matched++
		}
	}
	row := demoRow("optimal", stats)
	row.MovesPerEvent = math.NaN()
	row.P50, row.P99 = report.Quantile(durs, 0.5), report.Quantile(durs, 0.99)
	rep.Rows = append(rep.Rows, row)
	return rep, nil
}

// demoScript returns the demo's events (Players joins, then Churn random
// joins and leaves) and the end of each snapshot's prefix of the script.
func demoScript(cfg DemoConfig, rng *rand.Rand) (script []event, snaps []int) {
	capacity := cfg.capacity()
	script = joinScript(cfg.Players)
	present := make([]int, cfg.Players)
	for i := range present {
		present[i] = i
	}
	next := cfg.Players
	for range cfg.Churn {
		join := rng.IntN(2) == 0
		if len(present) == 0 {
			join = true
		} else if len(present) >= capacity {
			join = false
		}
		if join {
			script = append(script, event{join: true, client: next})
			present = append(present, next)
			next++
			continue
		}
		i := rng.IntN(len(present))
		script = append(script, event{client: present[i]})
		present[i] = present[len(present)-1]
		present = present[:len(present)-1]
	}
	for k := 1; k <= cfg.Snapshots; k++ {
		snaps = append(snaps, cfg.Players+k*cfg.Churn/cfg.Snapshots)
	}
	return script, snaps
}

// demoRow averages snapshot statistics.
func demoRow(method string, stats []cma.Stats) DemoRow {
	r := DemoRow{Method: method}
	for _, s := range stats {
		r.Mean += s.Mean
		r.P95 += s.P95
		r.Max += s.Max
		if s.Players > 0 {
			r.Within += float64(s.Within) / float64(s.Players)
		}
	}
	n := float64(len(stats))
	r.Mean, r.P95, r.Max, r.Within = r.Mean/n, r.P95/n, r.Max/n, r.Within/n
	return r
}

// WriteTable writes the demo's table and a line saying what it shows.
func (r *DemoReport) WriteTable(w io.Writer) error {
	cfg := r.Config
	var b bytes.Buffer
	capacity := 0
	servers := make([]string, len(r.Servers))
	for i, s := range r.Servers {
		servers[i] = fmt.Sprintf("%s %d", s.ID, s.Capacity)
		capacity += s.Capacity
	}
	fmt.Fprintf(&b, "%d players in GeoNames cities (drawn by population) on %d servers in WonderNetwork cities, seed %d\n", cfg.Players, len(r.Servers), cfg.Seed)
	fmt.Fprintf(&b, "servers: %s\n", report.Wrap(strings.Join(servers, ", "), 100, "         "))
	fmt.Fprintf(&b, "         %d seats, %.0f%% full after the joins; uneven on purpose (weights 3:1:2 in list order)\n", capacity, 100*float64(cfg.Players)/float64(capacity))
	fmt.Fprintf(&b, "events:  %d joins, then %d random joins and leaves; delays are modelled RTT,\n         averaged over %d snapshots during the churn\n\n",
		cfg.Players, cfg.Churn, cfg.Snapshots)
	rows := [][]string{{"method", "mean ms", "p95 ms", "max ms", fmt.Sprintf("≤%g ms", cfg.Bound), "moved/event", "time/event p50", "p99"}}
	for _, row := range r.Rows {
		moved := "–"
		if !math.IsNaN(row.MovesPerEvent) {
			moved = fmt.Sprintf("%.2f", row.MovesPerEvent)
		}
		name := row.Method
		if name == "optimal" {
			name = "optimal*"
		}
		rows = append(rows, []string{name, fmt.Sprintf("%.1f", row.Mean), fmt.Sprintf("%.1f", row.P95), fmt.Sprintf("%.1f", row.Max),
			fmt.Sprintf("%.1f%%", 100*row.Within), moved, fmtDur(row.P50), fmtDur(row.P99)})
	}
	b.WriteString(report.AlignTable(rows, 1))
	sa, greedy, ignore, opt := r.Rows[0], r.Rows[1], r.Rows[2], r.Rows[3]
	fmt.Fprintf(&b, "* optimal: the whole assignment re-solved from scratch (min-cost flow) at each snapshot; time per re-solve.\n")
	fmt.Fprintf(&b, "sa is exact (it equals the optimum at %d of %d snapshots) yet moves only %.2f players per event, in %s (median);\n",
		r.Matched, cfg.Snapshots, sa.MovesPerEvent, fmtDur(sa.P50))
	fmt.Fprintf(&b, "greedy's mean delay is %.1f%% above the optimum and ignore's (nearest server with room, never rebalanced) %.1f%%.\n",
		100*(greedy.Mean/opt.Mean-1), 100*(ignore.Mean/opt.Mean-1))
	return report.WriteTrimmed(w, b.Bytes())
}

// fmtDur prints a duration with three significant digits in µs or ms.
func fmtDur(d time.Duration) string {
	us := float64(d.Nanoseconds()) / 1e3
	switch {
	case us < 10:
		return fmt.Sprintf("%.2f µs", us)
	case us < 1000:
		return fmt.Sprintf("%.0f µs", us)
	case us < 10000:
		return fmt.Sprintf("%.2f ms", us/1000)
	}
	return fmt.Sprintf("%.1f ms", us/1000)
}
