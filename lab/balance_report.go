package lab

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/balance"
)

// paper numbers quoted in the report
const (
	paperClassicMoved = 1337
	paperHybridMoved  = 4100
	paperBKB          = 719 // KB, Return RATE 100 %, extra_S_players 1,000
)

// AMean is the mean of scenario A over runs.
type AMean struct {
	Overloaded, Extra float64
	Moved             map[string]float64
	NearMax           map[string]float64 // servers at ≥ 95 % of MaxLoad after the round
	Over              map[string]float64 // servers above MaxLoad after the round
	Hosted            map[string]float64 // players sent to player hosts
	PackBetter        int                // runs where Pack moved fewer players than Hybrid
}

// AMeans averages scenario A.
func (r *BalanceReport) AMeans() AMean {
	m := AMean{Moved: map[string]float64{}, NearMax: map[string]float64{}, Over: map[string]float64{}, Hosted: map[string]float64{}}
	maxLoad := balance.ScenarioA().MaxLoad
	for _, a := range r.A {
		m.Overloaded += float64(a.Overloaded)
		m.Extra += float64(a.Extra)
		if a.Moved["pack"] < a.Moved["hybrid"] {
			m.PackBetter++
		}
		for _, k := range aMethods {
			m.Moved[k] += float64(a.Moved[k])
			m.Hosted[k] += float64(a.Hosted[k])
			for _, l := range a.Final[k] {
				if float64(l) >= 0.95*float64(maxLoad) {
					m.NearMax[k]++
				}
				if l > maxLoad {
					m.Over[k]++
				}
			}
		}
	}
	n := float64(len(r.A))
	m.Overloaded /= n
	m.Extra /= n
	for _, k := range aMethods {
		m.Moved[k] /= n
		m.Hosted[k] /= n
		m.NearMax[k] /= n
		m.Over[k] /= n
	}
	return m
}

// BMean is the mean of a set of scenario B runs.
type BMean struct {
	Runs                                     int
	ClusterPerServer, HostedTotal, Online    float64
	Rounds, Moved, Overflowed, HostedMade    float64
	Failovers, NewReplicas, Lost, CSMessages float64
	Reports                                  float64
	MaxLoad                                  float64 // the highest server load sampled
}

func bMean(runs []BRun, keep func(BRun) bool) BMean {
	var m BMean
	for _, b := range runs {
		if b.Res == nil || !keep(b) {
			continue
		}
		res := b.Res
		m.Runs++
		cl, h := 0, 0
		for i := range res.Loads {
			cl += res.Loads[i]
			h += res.HostedFrom[i]
		}
		m.ClusterPerServer += float64(cl) / float64(len(res.Loads))
		m.HostedTotal += float64(h)
		m.Online += float64(res.Online)
		m.Rounds += float64(res.Rounds)
		m.Moved += float64(res.Moved)
		m.Overflowed += float64(res.Overflowed)
		m.HostedMade += float64(res.HostedMade)
		m.Failovers += float64(res.Failovers)
		m.NewReplicas += float64(res.NewReplicas)
		m.Lost += float64(res.Lost)
		m.CSMessages += res.CSMessages
		m.Reports += res.Reports
		for _, s := range res.Series {
			m.MaxLoad = math.Max(m.MaxLoad, float64(s.MaxLoad))
		}
	}
	if m.Runs == 0 {
		return m
	}
	n := float64(m.Runs)
	for _, p := range []*float64{&m.ClusterPerServer, &m.HostedTotal, &m.Online, &m.Rounds, &m.Moved, &m.Overflowed,
		&m.HostedMade, &m.Failovers, &m.NewReplicas, &m.Lost, &m.CSMessages, &m.Reports} {
		*p /= n
	}
	return m
}

// classicCost and hybridCost are Tables 1 and 2's totals for extra players
// e (messages).
func classicCost(e, interaction, f float64) float64 { return 2*e + 2*e*interaction*f }
func hybridCost(e, margin float64) float64          { return 2 * (e + margin) }
func p2pCost(e, margin, rr float64) float64         { return 2*(e+margin) + (e+margin)*rr }

// WriteTable prints the results beside the paper's.
func (r *BalanceReport) WriteTable(w io.Writer) error {
	cfg := r.Config
	sa, sb := balance.ScenarioA(), balance.ScenarioB()
	margin := float64(sa.MaxLoad) * sa.Margin
	var b strings.Builder
	fmt.Fprintf(&b, "Hybrid cluster/P2P instances paper §5: paper vs overworld\n")
	fmt.Fprintf(&b, "runs        %d seeded runs of scenarios A and B (paper: 1,000); sweeps on the first %d\n", cfg.Runs, cfg.SweepRuns)
	fmt.Fprintf(&b, "cluster     %d servers × %d players (regions of a 1,000 × 1,000 map), instances of 5/10/20/25/40 players (40/30/12/10/8 %%), %d hot spots\n",
		sa.Servers, sa.MaxLoad, sa.HotSpots)
	fmt.Fprintf(&b, "sessions    gamma shape %.6g, scale %.6g h (mean %.1f h, sd %.1f h), players' own means vary (CV %.1f)\n",
		sa.Sessions.K, sa.Sessions.Theta, sa.Sessions.Mean(), sa.Sessions.SD(), sa.Heterogeneity)
	fmt.Fprintf(&b, "latency     players in GeoNames cities, RTTs through WonderNetwork; cluster in %s; +%.0f ms per home end\n\n", cfg.Cluster, cfg.HomeMs)

	am := r.AMeans()
	rows := [][]string{{"§5.1 scenario A", "", "paper", "overworld"},
		{"  starts full, departures 10% above arrivals; snapshot after", fmt.Sprintf("%.0f h", sa.Hours), "", ""},
		{"  overloaded servers in the snapshot", "", "5", report.Fixed(am.Overloaded, 2)},
		{"  extra players (Σ above max_S_load)", "", "–", report.Fixed(am.Extra, 0)},
		{"  players moved", "Classic", fmt.Sprint(paperClassicMoved), report.Fixed(am.Moved["classic"], 0)},
		{"", "Hybrid", fmt.Sprint(paperHybridMoved), report.Fixed(am.Moved["hybrid"], 0)},
		{"", "Hybrid, receivers to target", "–", report.Fixed(am.Moved["hybrid-target"], 0)},
		{"    of which to player hosts", "Hybrid, receivers to target", "–", report.Fixed(am.Hosted["hybrid-target"], 0)},
		{"", "Pack (exact)", "–", report.Fixed(am.Moved["pack"], 0)},
		{"  runs where Pack moved fewer than Hybrid", "", "–", fmt.Sprintf("%d of %d", am.PackBetter, len(r.A))},
		{"  Hybrid ÷ (extra + 10% per overloaded server)", "", report.Fixed(paperHybridMoved/(paperClassicMoved+5*margin), 3), report.Fixed(am.Moved["hybrid"]/(am.Extra+am.Overloaded*margin), 3)},
		{"  servers ≥ 95% of max after", "Classic", "more", report.Fixed(am.NearMax["classic"], 2)},
		{"", "Hybrid", "fewer", report.Fixed(am.NearMax["hybrid"], 2)},
		{"  servers overloaded after", "Classic", "0", report.Fixed(am.Over["classic"], 2)},
		{"", "Hybrid", "0", report.Fixed(am.Over["hybrid"], 2)},
	}
	b.WriteString(report.AlignTable(rows, 2))
	b.WriteString("\nFig. 10 communication cost (messages), Table 1: Classic 2e + 2e·Interaction·F, Hybrid 2(e + 10% max)\n")
	rows = [][]string{{"  extra_S_players e", "Hybrid"}}
	for _, f := range cfg.F {
		rows[0] = append(rows[0], fmt.Sprintf("Classic F=%g", f))
	}
	for _, e := range []float64{100, 250, 500, 1000} {
		row := []string{fmt.Sprintf("  %.0f", e), report.Fixed(hybridCost(e, margin), 0)}
		for _, f := range cfg.F {
			row = append(row, report.Fixed(classicCost(e, cfg.Interaction, f), 0))
		}
		rows = append(rows, row)
	}
	row := []string{"  measured, scenario A mean", report.Fixed(2*am.Moved["hybrid"], 0)}
	for _, f := range cfg.F {
		row = append(row, report.Fixed(classicCost(am.Moved["classic"], cfg.Interaction, f), 0))
	}
	rows = append(rows, row)
	b.WriteString(report.AlignTable(rows, 1))

	bm := bMean(r.B, func(BRun) bool { return true })
	fmt.Fprintf(&b, "\n§5.2 scenario B: arrivals 20%% above departures, from %.0f%% load, %.0f simulated hours, LL, return rate 100%%\n", sb.Start*100, sb.Hours)
	rows = [][]string{{"", "paper", "overworld"},
		{"  players per server in the cluster, end", "≤ 4,950 after a round", report.Fixed(bm.ClusterPerServer, 0)},
		{"  highest server load seen", "≤ 5,500", report.Fixed(bm.MaxLoad, 0)},
		{"  players on player hosts, end", "grows", report.Fixed(bm.HostedTotal, 0)},
		{"  players online, end", "–", report.Fixed(bm.Online, 0)},
		{"  balancing rounds per run", "–", report.Fixed(bm.Rounds, 1)},
		{"  players moved in the cluster / run", "–", report.Fixed(bm.Moved, 0)},
		{"  players sent to player hosts / run", "–", report.Fixed(bm.Overflowed, 0)},
		{"  instances sent to player hosts / run", "–", report.Fixed(bm.HostedMade, 1)},
		{"  failovers (replica promoted) / run", "–", report.Fixed(bm.Failovers, 1)},
		{"  instances lost / run", "only when no player can host", report.Fixed(bm.Lost, 3)},
		{"  Algorithm 3 reports to the cluster / s", "negligible", report.Fixed(bm.Reports/(sb.Hours*3600), 0)},
	}
	b.WriteString(report.AlignTable(rows, 1))
	fmt.Fprintf(&b, "\nFig. 12 cluster messages vs return rate (Table 2: 2(e + 10%% max) + (e + 10%% max)·Return RATE, %g-byte messages)\n", cfg.MessageBytes)
	rows = [][]string{{"  return rate", "e=100", "e=1000", "KB at e=1000", "measured msgs/run", "KB/run", "per round", "Algorithm 3 reports/s"}}
	for _, rr := range cfg.ReturnRates {
		m := bMean(r.Sweep, func(b BRun) bool {
			return b.ReturnRate == rr && b.Criterion == balance.LL && b.Method == balance.Hybrid
		})
		rows = append(rows, []string{fmt.Sprintf("  %.0f%%", rr*100), report.Fixed(p2pCost(100, margin, rr), 0), report.Fixed(p2pCost(1000, margin, rr), 0),
			report.Fixed(p2pCost(1000, margin, rr)*cfg.MessageBytes/1000, 0), report.Fixed(m.CSMessages, 0), report.Fixed(m.CSMessages*cfg.MessageBytes/1000, 0),
			report.Fixed(m.CSMessages/math.Max(m.Rounds, 1), 0), report.Fixed(m.Reports/(r.BSimHours*3600), 0)})
	}
	b.WriteString(report.AlignTable(rows, 1))
	fmt.Fprintf(&b, "  paper: %d KB at Return RATE 100%% and e = 1,000; measured: moves, overflows and returns over the whole run\n", paperBKB)

	b.WriteString("\nTable 4 players' RTT (ms) to the instance's server (LL) vs to the cluster, mean ± sd\n")
	rows = [][]string{{"  latency model", "criterion", "size", "host: paper", "overworld", "cluster: paper", "overworld", "cluster − host"}}
	for _, t := range r.Table4 {
		rows = append(rows, []string{"  " + t.Net, t.Criterion, fmt.Sprint(t.Size), report.Fixed(t.PaperHost, 1),
			fmt.Sprintf("%s ± %s", report.Fixed(t.HostMean, 1), report.Fixed(t.HostSD, 1)), report.Fixed(t.PaperCluster, 1),
			fmt.Sprintf("%s ± %s", report.Fixed(t.ClusterMean, 1), report.Fixed(t.ClusterSD, 1)),
			fmt.Sprintf("%+.1f%%", 100*(t.ClusterMean/t.HostMean-1))})
	}
	b.WriteString(report.AlignTable(rows, 3))
	b.WriteString("  paper: the cluster is 15% (size 5) and 7% (size 10) slower than the P2P host; its host values are derived from those\n")

	b.WriteString("\nTable 5 PD criterion: disconnection probability of the chosen servers and failure probability of the instance\n")
	rows = [][]string{{"  size", "PD(S)", "PD(RS)", "PD(S) if LL", "paper product", "max", "exact (q=PD)", "max", "exact (q=leave before end)"}}
	for _, t := range r.Table5 {
		rows = append(rows, []string{fmt.Sprintf("  %d", t.Size), pct3(t.PDServer), pct3(t.PDReplica), pct3(t.LLServer), pct3(t.Paper), pct3(t.PaperMax),
			pct3(t.Exact), pct3(t.ExactMax), pct3(t.Leave)})
	}
	b.WriteString(report.AlignTable(rows, 1))
	b.WriteString("  paper: the instance's failure probability is under 0.9% (worst case)\n")

	b.WriteString("\nBeyond the paper: host criteria and Pack in scenario B (sweep runs, return rate 100%)\n")
	rows = [][]string{{"  policy", "RTT to host ms (5)", "(10)", "failovers/run", "new replicas/run", "lost/run", "rounds/run", "moved/run", "to hosts/run"}}
	lat := map[string]LatencyRow{}
	for _, t := range r.Table4 {
		if t.FromSim {
			lat[fmt.Sprintf("%s/%d", t.Criterion, t.Size)] = t
		}
	}
	for _, p := range []struct {
		name string
		crit balance.Criterion
		m    balance.Method
	}{{"Algorithm 1, LL", balance.LL, balance.Hybrid}, {"Algorithm 1, PD", balance.PD, balance.Hybrid},
		{"Algorithm 1, score", balance.Score, balance.Hybrid}, {"Pack, LL", balance.LL, balance.HybridPack}} {
		m := bMean(r.Sweep, func(b BRun) bool { return b.ReturnRate == 1 && b.Criterion == p.crit && b.Method == p.m })
		l5, l10 := "–", "–"
		if p.m == balance.Hybrid {
			l5, l10 = report.Fixed(lat[fmt.Sprintf("%s/5", p.crit)].HostMean, 1), report.Fixed(lat[fmt.Sprintf("%s/10", p.crit)].HostMean, 1)
		}
		rows = append(rows, []string{"  " + p.name, l5, l10, report.Fixed(m.Failovers, 1), report.Fixed(m.NewReplicas, 1), report.Fixed(m.Lost, 3),
			report.Fixed(m.Rounds, 1), report.Fixed(m.Moved, 0), report.Fixed(m.Overflowed, 0)})
	}
	b.WriteString(report.AlignTable(rows, 1))
	if r.Seconds > 0 {
		fmt.Fprintf(&b, "\nran in %.1f s; one scenario B run simulates %.0f h\n", r.Seconds, r.BSimHours)
	}
	return report.WriteTrimmed(w, []byte(b.String()))
}

func pct3(x float64) string { return fmt.Sprintf("%.3f%%", 100*x) }

// WriteCSV writes balance-a.csv (per run and method), balance-b.csv (per
// run of scenario B and of the sweeps) and balance-tables.csv.
func (r *BalanceReport) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	a := [][]string{{"run", "overloaded", "extra", "method", "moved", "loads_before", "loads_after"}}
	for k, x := range r.A {
		for _, m := range aMethods {
			a = append(a, []string{fmt.Sprint(k), fmt.Sprint(x.Overloaded), fmt.Sprint(x.Extra), m, fmt.Sprint(x.Moved[m]), report.Ints(x.Initial), report.Ints(x.Final[m])})
		}
	}
	bRows := [][]string{{"run", "set", "method", "criterion", "return_rate", "rounds", "moved", "overflowed", "hosted_made", "failovers", "new_replicas", "lost", "cs_messages", "online", "cluster_loads", "hosted_from"}}
	add := func(set string, k int, b BRun) {
		res := b.Res
		bRows = append(bRows, []string{fmt.Sprint(k), set, b.Method.String(), b.Criterion.String(), report.Float(b.ReturnRate), fmt.Sprint(res.Rounds),
			fmt.Sprint(res.Moved), fmt.Sprint(res.Overflowed), fmt.Sprint(res.HostedMade), fmt.Sprint(res.Failovers), fmt.Sprint(res.NewReplicas),
			fmt.Sprint(res.Lost), report.Float(res.CSMessages), fmt.Sprint(res.Online), report.Ints(res.Loads), report.Ints(res.HostedFrom)})
	}
	for k, b := range r.B {
		add("main", k, b)
	}
	for k, b := range r.Sweep {
		add("sweep", k, b)
	}
	t := [][]string{{"table", "net", "criterion", "size", "host_mean", "host_sd", "cluster_mean", "cluster_sd", "paper_host", "paper_cluster"}}
	for _, x := range r.Table4 {
		t = append(t, []string{"4", x.Net, x.Criterion, fmt.Sprint(x.Size), report.Float(x.HostMean), report.Float(x.HostSD), report.Float(x.ClusterMean), report.Float(x.ClusterSD), report.Float(x.PaperHost), report.Float(x.PaperCluster)})
	}
	t5 := [][]string{{"table", "size", "pd_server", "pd_replica", "pd_server_ll", "paper_failure", "paper_max", "exact_failure", "exact_max", "exact_leave"}}
	for _, x := range r.Table5 {
		t5 = append(t5, []string{"5", fmt.Sprint(x.Size), report.Float(x.PDServer), report.Float(x.PDReplica), report.Float(x.LLServer), report.Float(x.Paper), report.Float(x.PaperMax), report.Float(x.Exact), report.Float(x.ExactMax), report.Float(x.Leave)})
	}
	var files []string
	for _, f := range []struct {
		name string
		rows [][]string
	}{{"balance-a.csv", a}, {"balance-b.csv", bRows}, {"balance-table4.csv", t}, {"balance-table5.csv", t5}} {
		p := filepath.Join(dir, f.name)
		if err := report.WriteCSV(p, f.rows); err != nil {
			return nil, err
		}
		files = append(files, p)
	}
	return files, nil
}

// WritePlots writes fig9-loads, fig10-cost, fig11-hosted, fig12-cost and
// b-series (.png) into dir.
func (r *BalanceReport) WritePlots(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	cfg := r.Config
	sa := balance.ScenarioA()
	margin := float64(sa.MaxLoad) * sa.Margin
	var files []string
	save := func(name string, w vg.Length, ps ...*plot.Plot) error {
		p := filepath.Join(dir, name)
		files = append(files, p)
		return report.SavePNG(p, w, 4*vg.Inch, ps...)
	}
	// Fig. 9: run 0, per server
	a := r.A[0]
	p := report.NewPlot(fmt.Sprintf("Fig. 9 scenario A, run 0: load per server (max %d)", sa.MaxLoad), "server", "players")
	series := []struct {
		name  string
		loads []int
	}{{"initial", a.Initial}, {"Classic", a.Final["classic"]}, {"Hybrid", a.Final["hybrid"]}, {"Pack", a.Final["pack"]}}
	bw := vg.Points(9)
	lo, hi := math.Inf(1), 0.0
	for k, s := range series {
		v := make(plotter.Values, len(s.loads))
		for i, l := range s.loads {
			v[i] = float64(l)
			lo, hi = math.Min(lo, v[i]), math.Max(hi, v[i])
		}
		bars, err := plotter.NewBarChart(v, bw)
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		bars.Color = plotutil.Color(k)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(k-len(series)/2) * bw
		p.Add(bars)
		p.Legend.Add(s.name, bars)
	}
	line, _ := plotter.NewLine(plotter.XYs{{X: -0.5, Y: float64(sa.MaxLoad)}, {X: float64(len(a.Initial)) - 0.5, Y: float64(sa.MaxLoad)}})
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Y.Min, p.Y.Max = lo*0.9, hi*1.08
	if err := save("fig9-loads.png", 9*vg.Inch, p); err != nil {
		return nil, err
	}
	// Fig. 10: cost vs extra
	p = report.NewPlot("Fig. 10 scenario A: communication cost", "extra_S_players", "messages")
	var hyb plotter.XYs
	cls := make([]plotter.XYs, len(cfg.F))
	for e := 100.0; e <= 1000; e += 50 {
		hyb = append(hyb, plotter.XY{X: e, Y: hybridCost(e, margin)})
		for k, f := range cfg.F {
			cls[k] = append(cls[k], plotter.XY{X: e, Y: classicCost(e, cfg.Interaction, f)})
		}
	}
	addBalanceLine(p, "Hybrid", hyb, 0)
	for k, f := range cfg.F {
		addBalanceLine(p, fmt.Sprintf("Classic F=%g", f), cls[k], k+1)
	}
	var mh, mc plotter.XYs
	for _, x := range r.A {
		if x.Extra > 0 && x.Extra <= 1000 {
			mh = append(mh, plotter.XY{X: float64(x.Extra), Y: 2 * float64(x.Moved["hybrid"])})
			mc = append(mc, plotter.XY{X: float64(x.Extra), Y: classicCost(float64(x.Moved["classic"]), cfg.Interaction, cfg.F[0])})
		}
	}
	if len(mh) > 0 {
		addPoints(p, "Hybrid, measured runs", mh, 0)
		addPoints(p, fmt.Sprintf("Classic F=%g, measured runs", cfg.F[0]), mc, 1)
	}
	// Fig. 11: run 0, per server cluster vs hosted
	b := r.B[0].Res
	p11 := report.NewPlot(fmt.Sprintf("Fig. 11 scenario B, run 0, after %.0f h", b.Config.Hours), "server", "players")
	for k, s := range []struct {
		name string
		v    []int
	}{{"in the cluster", b.Loads}, {"on player hosts (from this server)", b.HostedFrom}} {
		v := make(plotter.Values, len(s.v))
		for i, x := range s.v {
			v[i] = float64(x)
		}
		bars, err := plotter.NewBarChart(v, vg.Points(14))
		if err != nil {
			return nil, fmt.Errorf("lab: %w", err)
		}
		bars.Color = plotutil.Color(k)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(2*k-1) * vg.Points(7)
		p11.Add(bars)
		p11.Legend.Add(s.name, bars)
	}
	line, _ = plotter.NewLine(plotter.XYs{{X: -0.5, Y: float64(sa.MaxLoad) - margin}, {X: float64(len(b.Loads)) - 0.5, Y: float64(sa.MaxLoad) - margin}})
	line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p11.Add(line)
	p11.Y.Max = float64(sa.MaxLoad) * 1.3
	if err := save("fig10-11.png", 11*vg.Inch, p, p11); err != nil {
		return nil, err
	}
	// Fig. 12: cost vs return rate, formula and measured
	p = report.NewPlot("Fig. 12 scenario B: cluster messages", "return rate (%)", "messages")
	for k, e := range []float64{100, 500, 1000} {
		var xy plotter.XYs
		for rr := 0.0; rr <= 1.0001; rr += 0.1 {
			xy = append(xy, plotter.XY{X: rr * 100, Y: p2pCost(e, margin, rr)})
		}
		addBalanceLine(p, fmt.Sprintf("Table 2, e=%.0f", e), xy, k)
	}
	pm := report.NewPlot("scenario B: measured per run", "return rate (%)", "messages per run")
	var xy plotter.XYs
	for _, rr := range cfg.ReturnRates {
		m := bMean(r.Sweep, func(b BRun) bool {
			return b.ReturnRate == rr && b.Criterion == balance.LL && b.Method == balance.Hybrid
		})
		if m.Runs > 0 {
			xy = append(xy, plotter.XY{X: rr * 100, Y: m.CSMessages})
		}
	}
	if len(xy) > 0 {
		addBalanceLine(pm, "measured (moves, overflows, returns)", xy, 3)
	}
	// time series of run 0
	ps := report.NewPlot("scenario B, run 0", "hours", "players")
	var on, cl, ho plotter.XYs
	for _, s := range b.Series {
		on = append(on, plotter.XY{X: s.Hours, Y: float64(s.Online)})
		cl = append(cl, plotter.XY{X: s.Hours, Y: float64(s.Cluster)})
		ho = append(ho, plotter.XY{X: s.Hours, Y: float64(s.Hosted)})
	}
	addBalanceLine(ps, "online", on, 0)
	addBalanceLine(ps, "in the cluster", cl, 1)
	addBalanceLine(ps, "on player hosts", ho, 2)
	if err := save("fig12-b.png", 13*vg.Inch, p, pm, ps); err != nil {
		return nil, err
	}
	return files, nil
}

func addBalanceLine(p *plot.Plot, name string, xy plotter.XYs, k int) {
	l, err := plotter.NewLine(xy)
	if err != nil {
		return
	}
	l.Color = plotutil.Color(k)
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
}

func addPoints(p *plot.Plot, name string, xy plotter.XYs, k int) {
	s, err := plotter.NewScatter(xy)
	if err != nil {
		return
	}
	s.Color = plotutil.Color(k)
	s.Radius = vg.Points(1.2)
	p.Add(s)
	p.Legend.Add(name, s)
}
