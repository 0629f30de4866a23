package cli

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/overworld/overworld/lab/region"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/estimate"
)

// estimateFlags holds the flags of "overworld estimate".
type estimateFlags struct {
	method, data, matrix, outMatrix, plot string
	neighbours, near, disputed            int
	landmarks, dim, rank                  int
	rate, jitter, churn                   float64
	duration                              time.Duration
	seed                                  uint64
}

func newEstimateCmd(e *env) *cobra.Command {
	var f estimateFlags
	cmd := &cobra.Command{
		Use:   "estimate --method vivaldi|gnp|landmark|mf|mf-geo (--data planetlab[:SLICE]|wonder | --matrix FILE) [flags]",
		Short: "Estimate all-pairs latency from a few measurements and score it against the truth",
		Long: `Estimate every pair's RTT from a small measurement budget, then score the estimates
against the full matrix with the paper's metric, the directed relative error
(estimated − measured) / measured: the share of pairs within 15% and 50%, the median and
90th percentile of |error|, over all pairs and over the pairs not measured directly.

Methods:
  vivaldi   serf's Vivaldi (hashicorp/serf/coordinate); each node probes --neighbours
            random peers at --rate probes/s for --duration, RTT samples from the matrix
            with --jitter, nodes leaving and returning at --churn per minute
  gnp       GNP: --landmarks random landmarks embedded in --dim dimensions, every host
            placed from its RTTs to them (gonum/optimize)
  landmark  Netvigator-style: α·(best path through a landmark) + (1−α)·(triangle lower
            bound) from landmark distance vectors, α fitted on the landmark RTTs
  mf        overworld's robust low-rank factorisation of the log-RTT matrix with
            per-node biases, blended with a Euclidean embedding with heights, both
            fitted to the neighbours' RTTs (same probing as vivaldi)
  mf-geo    mf with the nodes' positions known (--data wonder: the cities'): a second
            model carries the geographic base RTT; the near peers are the geographically
            nearest, and --disputed peers are added where its two models disagree most
            (plain mf on data without positions)

The matrix comes from the embedded PlanetLab data (--data planetlab[:SLICE], 490 hosts),
the embedded WonderNetwork data (--data wonder, 242 cities, 18 pairs missing) or from a file (--matrix, "-" for stdin): n lines of n numbers separated by blanks or
commas. Entries that are NaN, "-", negative or 0 off the diagonal are missing: they are
never used as measurements (a probe to them is lost), they are left out of the scores,
and their number is reported.`,
		Example: `  overworld estimate --method mf --data planetlab:1
  overworld estimate --method vivaldi --data planetlab --neighbours 12 --rate 10 --duration 4m
  overworld estimate --method landmark --landmarks 32 --data planetlab:7 --plot cdf.png --out-matrix est.csv`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEstimate(e, cmd, &f) },
	}
	fl := cmd.Flags()
	d := estimate.DefaultProbeConfig()
	fl.StringVar(&f.method, "method", "", "vivaldi, gnp, landmark or mf (required)")
	fl.StringVar(&f.data, "data", "", "embedded data set: planetlab[:SLICE] (slice 1..18, default 1) or wonder (WonderNetwork, 242 cities)")
	fl.StringVar(&f.matrix, "matrix", "", "RTT matrix file (\"-\" for stdin); missing entries: NaN, -, negative or 0")
	fl.IntVar(&f.neighbours, "neighbours", d.Neighbours, "peers each node probes (vivaldi, mf)")
	fl.IntVar(&f.near, "near", 0, "mf: neighbours added as the nearest by the fits during the run, out of --neighbours (default a quarter of --neighbours; mf-geo an eighth; 0 keeps all random)")
	fl.IntVar(&f.disputed, "disputed", 0, "mf-geo: neighbours added after the nearest, one per pass, where its two models disagree most, out of --neighbours (default a quarter of --neighbours)")
	fl.Float64Var(&f.rate, "rate", d.Rate, "probes per second per node (vivaldi, mf)")
	fl.DurationVar(&f.duration, "duration", d.Duration, "simulated probing time (vivaldi, mf); rounds = rate × duration")
	fl.Float64Var(&f.jitter, "jitter", d.Jitter, "mean queueing delay of a sample relative to its RTT")
	fl.Float64Var(&f.churn, "churn", 0, "share of nodes leaving per minute, each back after a minute (vivaldi, mf)")
	fl.IntVar(&f.landmarks, "landmarks", 0, "landmarks (gnp default 15, landmark default 32)")
	fl.IntVar(&f.dim, "dim", 7, "GNP dimensions")
	fl.IntVar(&f.rank, "rank", estimate.DefaultFactorConfig().Rank, "mf rank")
	fl.Uint64Var(&f.seed, "seed", 1, "seed for neighbours, landmarks, jitter and churn")
	fl.StringVar(&f.outMatrix, "out-matrix", "", "write the estimated matrix as CSV to this file")
	fl.StringVar(&f.plot, "plot", "", "write the CDF of the directed relative error as PNG to this file")
	return cmd
}

func runEstimate(e *env, cmd *cobra.Command, f *estimateFlags) error {
	if f.method == "" {
		return badInputf("--method is required: vivaldi, gnp, landmark, mf or mf-geo")
	}
	m, err := estimate.ParseMethod(f.method)
	if err != nil {
		return badInput(err)
	}
	mf := m == estimate.MethodFactor || m == estimate.MethodFactorGeo
	probing := m == estimate.MethodVivaldi || mf
	fl := cmd.Flags()
	for _, c := range []struct {
		flag, methods string
		applies       bool
	}{
		{"neighbours", "vivaldi or mf", probing}, {"rate", "vivaldi or mf", probing}, {"duration", "vivaldi or mf", probing},
		{"churn", "vivaldi or mf", probing}, {"near", "mf", mf}, {"rank", "mf", mf},
		{"disputed", "mf-geo", m == estimate.MethodFactorGeo},
		{"landmarks", "gnp or landmark", !probing}, {"dim", "gnp", m == estimate.MethodGNP},
	} {
		if fl.Changed(c.flag) && !c.applies {
			return badInputf("--%s applies to --method %s, not %s", c.flag, c.methods, m)
		}
	}
	for _, o := range []struct{ flag, path string }{{"--out-matrix", f.outMatrix}, {"--plot", f.plot}} {
		if o.path != "" {
			if err := checkOutFile(o.flag, o.path); err != nil {
				return err
			}
		}
	}
	truth, source, err := loadTruth(e, f)
	if err != nil {
		return err
	}
	n := truth.Len()
	spec := estimate.DefaultSpec(m)
	spec.Probe.Neighbours, spec.Probe.Rate, spec.Probe.Duration = f.neighbours, f.rate, f.duration
	spec.Probe.Jitter, spec.Probe.Churn = f.jitter, f.churn
	switch {
	case mf && fl.Changed("near"):
		spec.Probe.Near = f.near
	case m == estimate.MethodFactorGeo:
		spec.Probe.Near = spec.Probe.Neighbours / 8
	case mf:
		spec.Probe.Near = spec.Probe.Neighbours / 4
	default:
		spec.Probe.Near = 0
	}
	if m == estimate.MethodFactorGeo {
		// The nearest in two passes, then the disputed, one per pass.
		spec.Probe.NearPasses, spec.Probe.Disputed = 2, spec.Probe.Neighbours/4
		if fl.Changed("disputed") {
			spec.Probe.Disputed = f.disputed
		}
	}
	if !probing {
		// The landmark methods probe no neighbours; the session's probe
		// process must still fit the matrix.
		spec.Probe.Neighbours = max(1, min(spec.Probe.Neighbours, n-1))
	}
	if fl.Changed("landmarks") {
		spec.Landmark.Landmarks = f.landmarks
	}
	spec.Landmark.Dim = f.dim
	spec.Factor.Rank = f.rank
	if _, err := spec.Probe.Validate(); err != nil {
		return badInput(err)
	}
	if _, err := spec.Factor.Validate(); err != nil {
		return badInput(err)
	}
	dflt := func(flag string) string {
		if fl.Changed(flag) {
			return ""
		}
		return " (the default for " + string(m) + ")"
	}
	if probing {
		if spec.Probe.Neighbours > n-1 {
			return badInputf("--neighbours %d%s: the matrix has only %d other nodes; give --neighbours %d or fewer", spec.Probe.Neighbours, dflt("neighbours"), n-1, n-1)
		}
	} else {
		if spec.Landmark.Landmarks < 2 || spec.Landmark.Landmarks >= n {
			return badInputf("--landmarks %d%s: want 2 to %d (fewer than the matrix's %d nodes)", spec.Landmark.Landmarks, dflt("landmarks"), n-1, n)
		}
		if m == estimate.MethodGNP && (spec.Landmark.Dim < 1 || spec.Landmark.Dim >= spec.Landmark.Landmarks) {
			return badInputf("--dim %d%s: want 1 to %d (fewer than the %d landmarks)", spec.Landmark.Dim, dflt("dim"), spec.Landmark.Landmarks-1, spec.Landmark.Landmarks)
		}
	}
	t := newTicker(e.stderr, false, "estimate: "+string(m), -1, "")
	defer t.done()
	start := time.Now()
	sess, err := estimate.NewSession(spec, truth, rand.New(rand.NewPCG(f.seed, 0x657374)))
	if errors.Is(err, estimate.ErrConfig) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	est := sess.Estimator()
	all := estimate.Evaluate(est, truth, nil)
	un := estimate.Evaluate(est, truth, sess.EverMeasured)
	if f.outMatrix != "" {
		if err := writeEstimated(est, truth, f.outMatrix); err != nil {
			return err
		}
	}
	if f.plot != "" {
		if err := region.PlotAccuracy(f.plot, fmt.Sprintf("%s on %s", m, source), []string{"all pairs", "unmeasured pairs"}, []estimate.Accuracy{all, un}); err != nil {
			return err
		}
	}
	w := e.stdout
	fmt.Fprintf(w, "source     %s, %d nodes\n", source, truth.Len())
	switch m {
	case estimate.MethodVivaldi, estimate.MethodFactor, estimate.MethodFactorGeo:
		near := ""
		if spec.Probe.Near > 0 {
			near = fmt.Sprintf(" (%d of them added as nearest during the run)", spec.Probe.Near)
		}
		if d := sess.Spec().Probe.Disputed; d > 0 {
			near += fmt.Sprintf(" (%d added where the models disagree)", d)
		}
		fmt.Fprintf(w, "method     %s: %d neighbours/node%s, %g probes/s for %v (%d rounds), jitter %g, churn %g/min\n",
			m, spec.Probe.Neighbours, near, spec.Probe.Rate, spec.Probe.Duration, spec.Probe.Rounds(), spec.Probe.Jitter, spec.Probe.Churn)
	case estimate.MethodGNP:
		fmt.Fprintf(w, "method     gnp: %d landmarks, %d dimensions, %d probes/pair\n", spec.Landmark.Landmarks, spec.Landmark.Dim, spec.Landmark.Samples)
	case estimate.MethodLandmark:
		fmt.Fprintf(w, "method     landmark: %d landmarks, %d probes/pair, α = %.2f\n", spec.Landmark.Landmarks, spec.Landmark.Samples, est.(*estimate.Landmark).Alpha())
	}
	if miss := len(truth.Missing()); miss > 0 || sess.Process().Lost() > 0 {
		fmt.Fprintf(w, "missing    %d directed pairs have no value in the matrix: not used as measurements (%d probes lost), not scored\n", miss, sess.Process().Lost())
	}
	fmt.Fprintf(w, "time       %.2f s\n\n", elapsed.Seconds())
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "pairs:\tscored\tmissing\t≤15%%\t≤50%%\tmedian|e|\tp90|e|\tmedian e\t\n")
	for _, r := range []struct {
		name string
		a    estimate.Accuracy
	}{{"all", all}, {"unmeasured", un}} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%.1f%%\t%.3f\t%.3f\t%+.3f\t\n", r.name, r.a.Pairs, r.a.Missing, 100*r.a.Within15, 100*r.a.Within50, r.a.MedianAbs, r.a.P90Abs, r.a.MedianDir)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ne = (estimated − measured) / measured per pair; unmeasured: pairs the method never probed (held out)\n")
	return nil
}

func writeEstimated(est estimate.Estimator, t *estimate.Truth, path string) error {
	m, err := estimate.Matrix(est, t.Names(), estimate.All(t.Len()), estimate.All(t.Len()))
	if err != nil {
		return err
	}
	file, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := m.WriteCSV(file); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

// loadTruth reads --data or --matrix.
func loadTruth(e *env, f *estimateFlags) (*estimate.Truth, string, error) {
	switch {
	case f.matrix != "" && f.data != "":
		return nil, "", badInputf("--matrix and --data are exclusive")
	case f.matrix == "" && f.data == "":
		return nil, "", badInputf("give a latency matrix: --matrix FILE or --data planetlab[:SLICE] or --data wonder")
	case f.data == "wonder":
		t, err := estimate.WonderNetwork()
		return t, "wondernetwork (242 cities)", err
	case f.data != "":
		if name, _, _ := strings.Cut(f.data, ":"); name != "planetlab" {
			return nil, "", badInputf("--data %q: the embedded data sets are planetlab[:SLICE] and wonder", f.data)
		}
		slice, err := parsePlanetLab(f.data)
		if err != nil {
			return nil, "", err
		}
		t, err := estimate.PlanetLab(slice)
		return t, fmt.Sprintf("planetlab slice %d", slice), err
	}
	r := e.stdin
	if f.matrix != "-" {
		file, err := openFile("--matrix", f.matrix)
		if err != nil {
			return nil, "", err
		}
		defer file.Close()
		r = file
	} else if isTerminal(e.stdin) {
		fmt.Fprintf(e.stderr, "estimate: reading the --matrix from standard input (end it with Ctrl-D)\n")
	}
	src := f.matrix
	if src == "-" {
		src = "standard input"
	}
	t, err := estimate.ReadTruth(r)
	if err != nil {
		return nil, "", badInputf("%s: %w", src, err)
	}
	return t, src, nil
}
