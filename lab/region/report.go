package region

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/estimate"
	"github.com/overworld/overworld/lab/report"
)

// The region-migration paper's printed numbers for §6.3 (Figs. 6–8 are
// otherwise curves; Table 3's Vivaldi rates are not in the text).
const (
	paperNetvigatorWithin15 = 0.80 // "80% of the estimations within a 15% relative error"
	paperVivaldiWithin50    = 0.80 // high packet rate, 4-min log time
	paperNetvigatorHit      = 0.80 // "stabilizes around 80% core-node selection hit ratio"
	paperNetvigatorWithin10 = 0.95 // "95% of the core-nodes within 10 ms of an optimal core-node"
	paperVivaldiWithin10    = 0.85
)

// paperFor returns the paper's figure closest to a configuration: which of
// its estimators it stands for and that estimator's numbers.
func paperFor(m estimate.Method) (name string, w15, w50, hit, within10 string) {
	switch m {
	case estimate.MethodVivaldi:
		return "Vivaldi", "–", report.Pct(paperVivaldiWithin50), "< 80% for k < 10", report.Pct(paperVivaldiWithin10)
	case estimate.MethodLandmark, estimate.MethodGNP:
		return "Netvigator", report.Pct(paperNetvigatorWithin15), "–", "≈" + report.Pct(paperNetvigatorHit), report.Pct(paperNetvigatorWithin10)
	}
	return "–", "–", "–", "–", "–"
}

// WriteTable prints the experiment's figures beside the paper's.
func (r *Report) WriteTable(w io.Writer) error {
	c := r.Config
	var rows [][]string
	add := func(cells ...string) { rows = append(rows, cells) }
	fmt.Fprintf(w, "Latency estimation (region-migration paper §6.3, Figs. 6–8): paper vs overworld\n")
	fmt.Fprintf(w, "data   PlanetLab, 490 hosts (Zhu et al.), slice 1 for Fig. 6; seed %d; probes carry 5%% mean exponential jitter\n", c.Seed)
	fmt.Fprintf(w, "paper  215 PlanetLab hosts, Netvigator (PlanetLab's service, a black box) and Vivaldi (group size ≤ 12)\n\n")
	fmt.Fprintf(w, "Fig. 6  accuracy on slice 1: directed relative error (est − meas)/meas over all %d pairs\n", r.Accuracy[0].All.Pairs+r.Accuracy[0].All.Missing)
	add("config", "budget/node", "rounds", "≤15%", "≤50%", "median|e|", "p90|e|", "unmeasured ≤15%", "median|e|", "paper", "≤15%", "≤50%")
	for _, a := range r.Accuracy {
		p, p15, p50, _, _ := paperFor(a.Method)
		rounds := "–"
		if a.Rounds > 0 {
			rounds = strconv.Itoa(a.Rounds)
		}
		add(a.Label, strconv.Itoa(a.PerNode), rounds, report.Pct(a.All.Within15), report.Pct(a.All.Within50), report.Fixed(a.All.MedianAbs, 3), report.Fixed(a.All.P90Abs, 3),
			report.Pct(a.Unmeasured.Within15), report.Fixed(a.Unmeasured.MedianAbs, 3), p, p15, p50)
	}
	if err := report.WriteTrimmed(w, []byte(report.AlignTable(rows, 1))); err != nil {
		return err
	}
	fmt.Fprintf(w, "budget: neighbours probed (vivaldi, mf) or landmarks measured (gnp, landmark) per node; unmeasured: held-out\npairs, never measured at any point of the run (for landmark methods, pairs without a landmark)\n\n")
	if len(r.Slices) > 0 {
		rows = rows[:0]
		fmt.Fprintf(w, "Time variation: the same estimator carried over slices 1..%d, the same budget spent again per slice; held out:\npairs never measured at any point of the run up to that slice\n", c.Slices)
		add("config", "pairs", "slice 1 ≤15%", "median|e|", "worst slice ≤15%", "median|e|", "worst median|e|", "mean ≤15%", "mean median|e|")
		for _, l := range c.Tracked {
			for _, held := range []bool{false, true} {
				var first, worst estimate.Accuracy
				sum15, sumMed, worstMed, cnt := 0.0, 0.0, 0.0, 0
				for _, s := range r.Slices {
					if s.Label != l {
						continue
					}
					a := s.Acc
					if held {
						a = s.HeldOut
					}
					if s.Slice == 1 {
						first, worst = a, a
					}
					if a.Within15 < worst.Within15 {
						worst = a
					}
					worstMed = max(worstMed, a.MedianAbs)
					sum15 += a.Within15
					sumMed += a.MedianAbs
					cnt++
				}
				which := "all"
				if held {
					which = "held out"
				}
				add(l, which, report.Pct(first.Within15), report.Fixed(first.MedianAbs, 3), report.Pct(worst.Within15), report.Fixed(worst.MedianAbs, 3), report.Fixed(worstMed, 3), report.Pct(sum15/float64(cnt)), report.Fixed(sumMed/float64(cnt), 3))
			}
		}
		if err := report.WriteTrimmed(w, []byte(report.AlignTable(rows, 1))); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(r.Core) > 0 && c.CoreTrials > 0 {
		title := fmt.Sprintf("Figs. 7–8  k-median core selection on %d random nodes (players = candidates), k = 1..%d, %d trials (slices 1..%d)", c.CoreNodes, c.MaxK, c.CoreTrials, c.CoreTrials)
		if err := r.writeCore(w, title); err != nil {
			return err
		}
	}
	if r.Wonder != nil {
		return r.Wonder.writeWonder(w)
	}
	return nil
}

// writeWonder prints the WonderNetwork run: accuracy over all and
// held-out pairs, and core selection.
func (r *Report) writeWonder(w io.Writer) error {
	c := r.Config
	var rows [][]string
	fmt.Fprintf(w, "\nWonderNetwork (242 cities, November 2018, one snapshot): the tracked configurations, the same settings\n")
	rows = append(rows, []string{"config", "budget/node", "≤15%", "median|e|", "held out ≤15%", "median|e|", "held-out pairs"})
	for _, a := range r.Accuracy {
		rows = append(rows, []string{a.Label, strconv.Itoa(a.PerNode), report.Pct(a.All.Within15), report.Fixed(a.All.MedianAbs, 3), report.Pct(a.Unmeasured.Within15), report.Fixed(a.Unmeasured.MedianAbs, 3), strconv.Itoa(a.Unmeasured.Pairs)})
	}
	if err := report.WriteTrimmed(w, []byte(report.AlignTable(rows, 1))); err != nil {
		return err
	}
	if len(r.Core) == 0 || c.CoreTrials == 0 {
		return nil
	}
	fmt.Fprintln(w)
	return r.writeCore(w, fmt.Sprintf("WonderNetwork core selection on %d random cities with every pair measured, k = 1..%d, %d trials", c.CoreNodes, c.MaxK, c.CoreTrials))
}

// writeCore prints the core-selection tables under title.
func (r *Report) writeCore(w io.Writer, title string) error {
	c := r.Config
	var rows [][]string
	add := func(cells ...string) { rows = append(rows, cells) }
	{
		fmt.Fprintln(w, title)
		ks := []int{1, 2, 5, 10, 15, 20, 25}
		head := []string{"config"}
		for _, k := range ks {
			if k <= c.MaxK {
				head = append(head, fmt.Sprintf("hit k=%d", k))
			}
		}
		head = append(head, "min hit k≥5", "mean k≥5", "tie-aware min k≥5", "mean", "cores ≤10 ms", "≤20 ms", "ecc err ≤15%", fmt.Sprintf("cost gap k=%d", min(5, c.MaxK)), fmt.Sprintf("k=%d", c.MaxK), "probed", "paper", "hit", "≤10 ms")
		add(head...)
		for _, cr := range r.Core {
			cells := []string{cr.Label}
			for _, k := range ks {
				if k <= c.MaxK {
					cells = append(cells, report.Pct(cr.Hit[k-1]))
				}
			}
			minHit, minTie, meanHit, meanTie := cr.HitStats(5)
			method := estimate.Method("")
			for _, a := range r.Accuracy {
				if a.Label == cr.Label {
					method = a.Method
				}
			}
			p, _, _, ph, p10 := paperFor(method)
			probed := "–"
			if (cr.Verify || cr.Pool > 0 || cr.Budget > 0) && len(cr.Probed) > 0 {
				probed = fmt.Sprintf("%.1f", meanInts(cr.Probed))
			}
			cells = append(cells, report.Pct(minHit), report.Pct(meanHit), report.Pct(minTie), report.Pct(meanTie), report.Pct(Within(cr.MinErr, 10)), report.Pct(Within(cr.MinErr, 20)), report.Pct(Within(cr.EccErr, 0.15)),
				report.Fixed(100*cr.GapAt(min(5, c.MaxK), c.MaxK), 1)+"%", report.Fixed(100*cr.GapAt(c.MaxK, c.MaxK), 1)+"%", probed, p, ph, p10)
			add(cells...)
		}
		if err := report.WriteTrimmed(w, []byte(report.AlignTable(rows, 1))); err != nil {
			return err
		}
		fmt.Fprintf(w, "hit: share of the cores chosen on estimates that are also chosen on measurements (mean over trials; the paper's\n"+
			"definition, against the proven optimum on measurements, see below); tie-aware: a chosen core that can replace\n"+
			"an optimal core at ≤0.1%% extra measured cost also counts (largest matching; the strict hit is the paper's metric);\n"+
			"cores ≤10 ms: cores chosen on estimates within 10 ms (measured) of an optimal core (Fig. 7b);\n"+
			"ecc err: reported eccentricity within 15%% of the cores' measured eccentricity (Fig. 8);\n"+
			"cost gap: measured k-median cost of the cores chosen on estimates above that of the cores chosen on\n"+
			"measurements;\n"+
			"+verify: select on estimates, measure every player's RTT to the chosen cores, re-select until the chosen\n"+
			"cores are all measured; probed: mean number of candidates measured that way per (trial, k), of %d;\n"+
			"+poolMk: rank candidates on the estimates (the estimated optimum's cores, then how often %d re-solves on\n"+
			"estimates perturbed by their own uncertainty choose them), measure every player's RTT to the top M·k (probed),\n"+
			"solve on those measurements alone (core.Prove); +poolMk+verify: measure that pool, then verify as above, the\n"+
			"final set confirmed by core.Prove on the corrected matrix;\n"+
			"truth±σ: the measured matrix times e^N(0,σ²) per pair, a calibration of how much error core selection tolerates;\n"+
			"X paper: the paper's own selection (k-minimum-pairwise, core.KMinimum) on estimates, against the same selection\n"+
			"on measurements (the paper's hit ratio); its cost gap is the rise of the paper's objective;\n"+
			"+verify≤Bk: verify within a budget of B·k measured candidate columns, then the optimum over the measured\n"+
			"columns; paper+verify≤Bk: measure the B·k candidates with the least estimated totals, keep the k least measured\n", c.CoreNodes, poolPerturb)
		if err := r.writeTotals(w); err != nil {
			return err
		}
		if err := r.writeRefs(w); err != nil {
			return err
		}
	}
	return nil
}

// HitStats returns the smallest and mean strict and tie-aware hit ratios
// over k ≥ from (all k when MaxK < from).
func (c CoreResult) HitStats(from int) (minHit, minTie, meanHit, meanTie float64) {
	from = min(from, len(c.Hit))
	minHit, minTie = 1, 1
	cnt := 0
	for k := max(1, from); k <= len(c.Hit); k++ {
		minHit, minTie = min(minHit, c.Hit[k-1]), min(minTie, c.HitTie[k-1])
		meanHit += c.Hit[k-1]
		meanTie += c.HitTie[k-1]
		cnt++
	}
	return minHit, minTie, meanHit / float64(max(1, cnt)), meanTie / float64(max(1, cnt))
}

// writeTotals prints, per row, the measured total latency of the chosen
// cores above the facility-location optimum's (TotalGap), the figure on
// which the paper's selection and facility location compare.
func (r *Report) writeTotals(w io.Writer) error {
	c := r.Config
	var rows [][]string
	head := []string{"config"}
	ks := []int{1, 2, 5, 10, 25}
	if !slices.Contains(ks, c.MaxK) {
		ks = append(ks, c.MaxK)
	}
	for _, k := range ks {
		if k <= c.MaxK {
			head = append(head, fmt.Sprintf("k=%d", k))
		}
	}
	rows = append(rows, head)
	for _, cr := range r.Core {
		cells := []string{cr.Label}
		for _, k := range ks {
			if k <= c.MaxK {
				cells = append(cells, report.Fixed(100*medianAt(cr.TotalGap, k, c.MaxK), 1)+"%")
			}
		}
		rows = append(rows, cells)
	}
	fmt.Fprintf(w, "\nTotal latency: measured sum over players of the latency to the nearest chosen core, above the facility-location\n"+
		"optimum's (median over trials)\n")
	return report.WriteTrimmed(w, []byte(report.AlignTable(rows, 1)))
}

// paperRefs summarises the paper's selection on the measurements against
// the facility-location optimum: in how many (trial, k) it chose the same
// cores, its median total-latency rise at k = 5 and MaxK, and the median
// time of one KMinimum, Select and Prove.
func (r *Report) paperRefs() (same int, rise5, riseMax float64, tPaper, tSelect, tProve time.Duration) {
	var r5, rm []float64
	var tp, ts, tv []time.Duration
	for _, f := range r.Refs {
		if f.PaperSame {
			same++
		}
		if f.Sum > 0 && f.K == min(5, r.Config.MaxK) {
			r5 = append(r5, (f.PaperSum-f.Sum)/f.Sum)
		}
		if f.Sum > 0 && f.K == r.Config.MaxK {
			rm = append(rm, (f.PaperSum-f.Sum)/f.Sum)
		}
		tp, ts, tv = append(tp, f.PaperTime), append(ts, f.SelectTime), append(tv, f.ProveTime)
	}
	slices.Sort(r5)
	slices.Sort(rm)
	med := func(d []time.Duration) time.Duration {
		if len(d) == 0 {
			return 0
		}
		slices.Sort(d)
		return d[len(d)/2]
	}
	return same, estimate.Quantile(r5, 0.5), estimate.Quantile(rm, 0.5), med(tp), med(ts), med(tv)
}

// writeRefs describes the reference: how it was proven, how far the
// previous one (core.Select) was from it, and its ties.
func (r *Report) writeRefs(w io.Writer) error {
	if len(r.Refs) == 0 {
		return nil
	}
	proven, selWorse, selOther, nodes := 0, 0, 0, 0
	maxGap, maxSelGap := 0.0, 0.0
	cores, colocated, tied := 0, 0, 0
	nonUnique, big := 0, 0
	for _, f := range r.Refs {
		if f.Optimal {
			proven++
		}
		nodes = max(nodes, f.Nodes)
		if f.Sum > 0 {
			maxGap = max(maxGap, (f.Sum-f.Bound)/f.Sum)
			if f.SelectSum > f.Sum*(1+1e-9) {
				selWorse++
				maxSelGap = max(maxSelGap, (f.SelectSum-f.Sum)/f.Sum)
			}
		}
		if !f.SelectSame {
			selOther++
		}
		if f.K < 5 {
			continue
		}
		big++
		unique := true
		for i := range f.Ties {
			cores++
			if f.Colocated[i] > 0 {
				colocated++
			}
			if f.Ties[i] > 0 {
				tied++
				unique = false
			}
		}
		if !unique {
			nonUnique++
		}
	}
	_, err := fmt.Fprintf(w, "\nreference: the k-median optimum on measurements by core.Prove (Lagrangian branch and bound): proven optimal\n"+
		"for %d of %d (trial, k) (largest gap to the bound %.3g%%, at most %d nodes); core.Select, the previous reference,\n"+
		"chose other cores in %d and a costlier set in %d (by up to %.2f%%).\n"+
		"ties (k ≥ 5): %s of optimal cores have another candidate within %g ms (co-located); %s can be replaced by\n"+
		"another candidate at ≤%g%% extra cost; the optimum is non-unique within %g%% in %s of the %d (trial, k).\n",
		proven, len(r.Refs), 100*maxGap, nodes, selOther, selWorse, 100*maxSelGap,
		report.Pct(float64(colocated)/float64(max(1, cores))), colocatedMs, report.Pct(float64(tied)/float64(max(1, cores))), 100*tieCost, 100*tieCost,
		report.Pct(float64(nonUnique)/float64(max(1, big))), big)
	if err != nil {
		return err
	}
	same, r5, rm, tp, ts, tv := r.paperRefs()
	_, err = fmt.Fprintf(w, "the paper's selection (k-minimum-pairwise) on measurements: the optimum's cores in %d of %d (trial, k); total\n"+
		"latency above the optimum's (median) %.1f%% at k = %d, %.1f%% at k = %d; one selection takes %v (core.KMinimum),\n"+
		"%v (core.Select), %v (core.Prove) (median, timing varies with load).\n",
		same, len(r.Refs), 100*r5, min(5, r.Config.MaxK), 100*rm, r.Config.MaxK, tp.Round(time.Microsecond), ts.Round(10*time.Microsecond), tv.Round(10*time.Microsecond))
	return err
}

// medianAt returns the median over trials of xs at k (xs holds maxK values
// per trial, k ascending).
func medianAt(xs []float64, k, maxK int) float64 {
	var g []float64
	for i := k - 1; i < len(xs); i += maxK {
		g = append(g, xs[i])
	}
	slices.Sort(g)
	return estimate.Quantile(g, 0.5)
}

func meanInts(xs []int) float64 {
	s := 0
	for _, x := range xs {
		s += x
	}
	return float64(s) / float64(max(1, len(xs)))
}

// GapAt returns the median over trials of the cost gap at k (CostGap holds
// maxK values per trial, k ascending).
func (c CoreResult) GapAt(k, maxK int) float64 {
	var g []float64
	for i := k - 1; i < len(c.CostGap); i += maxK {
		g = append(g, c.CostGap[i])
	}
	slices.Sort(g)
	return estimate.Quantile(g, 0.5)
}

// WriteCSV writes the experiment's data into dir and returns the paths:
// fig6-accuracy.csv (one row per configuration), fig6-cdf.csv (label,
// quantile, directed relative error at 201 quantiles), fig6-scatter.csv
// (label, measured ms, directed error), slices.csv (label, slice, figures),
// fig7-hit.csv (label, k, hit ratio, tie-aware hit ratio, median cost gap),
// fig7-error.csv (label, kind min|ecc, value ms), fig8-ecc.csv (label,
// directed relative error), reference.csv (per trial and k: the proven
// optimum, its bound, the previous reference's sum, per optimal core the
// co-located and interchangeable candidates), and for the WonderNetwork
// run wonder-accuracy.csv and wonder-hit.csv (the same columns).
func (r *Report) WriteCSV(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab/region: %w", err)
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
	accRow := func(a estimate.Accuracy) []string {
		return []string{strconv.Itoa(a.Pairs), strconv.Itoa(a.Missing), report.Float(a.Within15), report.Float(a.Within50), report.Float(a.MedianAbs), report.Float(a.P90Abs), report.Float(a.MedianDir)}
	}
	rows := [][]string{{"label", "method", "per_node", "rounds", "pairs", "missing", "within15", "within50", "median_abs", "p90_abs", "median_dir",
		"unmeasured_pairs", "unmeasured_missing", "unmeasured_within15", "unmeasured_within50", "unmeasured_median_abs", "unmeasured_p90_abs", "unmeasured_median_dir"}}
	cdf := [][]string{{"label", "quantile", "directed_error"}}
	for _, a := range r.Accuracy {
		rows = append(rows, append(append([]string{a.Label, string(a.Method), strconv.Itoa(a.PerNode), strconv.Itoa(a.Rounds)}, accRow(a.All)...), accRow(a.Unmeasured)...))
		for q := 0; q <= 200; q++ {
			cdf = append(cdf, []string{a.Label, report.Float(float64(q) / 200), report.Float(estimate.Quantile(a.All.Errors, float64(q)/200))})
		}
	}
	if err := write("fig6-accuracy.csv", rows); err != nil {
		return files, err
	}
	if err := write("fig6-cdf.csv", cdf); err != nil {
		return files, err
	}
	sc := [][]string{{"label", "measured_ms", "directed_error"}}
	for _, a := range r.Accuracy {
		for _, p := range r.Scatter[a.Label] {
			sc = append(sc, []string{a.Label, report.Float(p[0]), report.Float(p[1])})
		}
	}
	if err := write("fig6-scatter.csv", sc); err != nil {
		return files, err
	}
	sl := [][]string{{"label", "slice", "pairs", "missing", "within15", "within50", "median_abs", "p90_abs", "median_dir",
		"heldout_pairs", "heldout_missing", "heldout_within15", "heldout_within50", "heldout_median_abs", "heldout_p90_abs", "heldout_median_dir"}}
	for _, s := range r.Slices {
		sl = append(sl, append(append([]string{s.Label, strconv.Itoa(s.Slice)}, accRow(s.Acc)...), accRow(s.HeldOut)...))
	}
	if err := write("slices.csv", sl); err != nil {
		return files, err
	}
	if r.Wonder != nil {
		wa := [][]string{{"label", "per_node", "pairs", "missing", "within15", "within50", "median_abs", "p90_abs", "median_dir",
			"heldout_pairs", "heldout_missing", "heldout_within15", "heldout_within50", "heldout_median_abs", "heldout_p90_abs", "heldout_median_dir"}}
		for _, a := range r.Wonder.Accuracy {
			wa = append(wa, append(append([]string{a.Label, strconv.Itoa(a.PerNode)}, accRow(a.All)...), accRow(a.Unmeasured)...))
		}
		if err := write("wonder-accuracy.csv", wa); err != nil {
			return files, err
		}
		wh := [][]string{{"label", "k", "hit_ratio", "hit_ratio_tie_aware", "median_cost_gap", "median_total_gap"}}
		for _, c := range r.Wonder.Core {
			for k, h := range c.Hit {
				wh = append(wh, []string{c.Label, strconv.Itoa(k + 1), report.Float(h), report.Float(c.HitTie[k]), report.Float(c.GapAt(k+1, r.Config.MaxK)), report.Float(medianAt(c.TotalGap, k+1, r.Config.MaxK))})
			}
		}
		if err := write("wonder-hit.csv", wh); err != nil {
			return files, err
		}
	}
	if len(r.Core) == 0 || r.Config.CoreTrials == 0 {
		return files, nil
	}
	hit := [][]string{{"label", "k", "hit_ratio", "hit_ratio_tie_aware", "median_cost_gap", "median_total_gap"}}
	er := [][]string{{"label", "kind", "ms"}}
	ecc := [][]string{{"label", "directed_error"}}
	for _, c := range r.Core {
		for k, h := range c.Hit {
			hit = append(hit, []string{c.Label, strconv.Itoa(k + 1), report.Float(h), report.Float(c.HitTie[k]), report.Float(c.GapAt(k+1, r.Config.MaxK)), report.Float(medianAt(c.TotalGap, k+1, r.Config.MaxK))})
		}
		for _, v := range c.MinErr {
			er = append(er, []string{c.Label, "min", report.Float(v)})
		}
		for _, v := range c.MaxErr {
			er = append(er, []string{c.Label, "ecc", report.Float(v)})
		}
		for _, v := range c.EccErr {
			ecc = append(ecc, []string{c.Label, report.Float(v)})
		}
	}
	refs := [][]string{{"trial", "k", "optimal_sum", "lower_bound", "proven", "nodes", "select_sum", "select_same", "colocated", "ties", "paper_sum", "paper_same", "paper_us", "select_us", "prove_us"}}
	for _, f := range r.Refs {
		refs = append(refs, []string{strconv.Itoa(f.Trial), strconv.Itoa(f.K), report.Float(f.Sum), report.Float(f.Bound), strconv.FormatBool(f.Optimal),
			strconv.Itoa(f.Nodes), report.Float(f.SelectSum), strconv.FormatBool(f.SelectSame), joinInts(f.Colocated), joinInts(f.Ties),
			report.Float(f.PaperSum), strconv.FormatBool(f.PaperSame), micro(f.PaperTime), micro(f.SelectTime), micro(f.ProveTime)})
	}
	for _, f := range []struct {
		name string
		rows [][]string
	}{{"fig7-hit.csv", hit}, {"fig7-error.csv", er}, {"fig8-ecc.csv", ecc}, {"reference.csv", refs}} {
		if err := write(f.name, f.rows); err != nil {
			return files, err
		}
	}
	return files, nil
}

func micro(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " ")
}
