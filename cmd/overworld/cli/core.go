package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/internal/placefile"
	"github.com/overworld/overworld/place/core"
)

// coreFlags holds the flags of "overworld core".
type coreFlags struct {
	matrix, data, format        string
	players, candidates         string
	randPlayers, randCandidates int
	seed                        uint64
	k                           int
	objective, method           string
	restarts                    int
	json                        bool
}

func newCoreCmd(e *env) *cobra.Command {
	var f coreFlags
	cmd := &cobra.Command{
		Use:   "core (--matrix FILE | --data planetlab[:SLICE]) --k K [flags]",
		Short: "Choose k core servers for a group of players (k-median or k-center)",
		Long: `Choose k core servers for a group of players so that every player is close to its
nearest core: k-median minimises the sum (mean) of player-to-core latency, k-center
the maximum. Prints the cores, the cost, mean and max latency, and the group diameter
(the worst player-to-player latency routed player → core → core → player).

Latencies come from a file (--matrix, "-" for stdin) or from the embedded PlanetLab
data set (--data planetlab[:SLICE], 490 hosts pl000..pl489, slice 1..18, default 1).

Players and candidates:
  - With a square matrix (PlanetLab, or a file whose rows and columns name the same
    endpoints), both are drawn from its endpoints. By default every endpoint is a
    player and every endpoint a candidate, so a core may be a player's own host; the
    core-to-core hop of the diameter comes from the same matrix.
  - With a rectangular matrix, rows are players and columns candidates (all by
    default); the core-to-core hop is unknown and counted as 0, so for k > 1 the
    diameter printed is a lower bound.
  --players and --candidates take indices, index ranges and names separated by
  commas ("0-99", "3,17,42,pl100"); an item that is an endpoint's name means that
  endpoint, otherwise "A-B" is an inclusive index range and "N" an index.
  --random-players N / --random-candidates N draw N at random (--seed).

Methods: exact enumerates every k-subset (refused beyond 5e6 subsets); local is the
single-swap local search from a greedy start plus --restarts random restarts, and
prints a certified lower bound on the optimum, hence the worst-case gap; auto
(default) is exact when that takes well under a second, local otherwise; paper is the
region-migration paper's own selection (§4.1): the k candidates with the smallest individual sum
(median) or maximum (center) of latency to the players, which does not spread the cores out.`,
		Example: `  overworld core --data planetlab --random-players 50 --seed 7 --k 3
  overworld core --data planetlab:4 --players 0-99 --candidates 100-489 --k 5 --objective center
  overworld core --matrix rtt.csv --k 2 --method exact --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCore(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.matrix, "matrix", "", "latency matrix file (\"-\" for stdin)")
	fl.StringVar(&f.data, "data", "", "embedded data set: planetlab[:SLICE] (slice 1..18, default 1)")
	fl.StringVar(&f.format, "format", "", "format of --matrix: csv or planetlab (default: csv if the file name ends in .csv, else planetlab; give it for standard input)")
	fl.StringVar(&f.players, "players", "", "players: indices, ranges and names, e.g. 0-99 or a,b,c (default all)")
	fl.StringVar(&f.candidates, "candidates", "", "candidate servers, same syntax (default all)")
	fl.IntVar(&f.randPlayers, "random-players", 0, "draw N players at random (with --seed)")
	fl.IntVar(&f.randCandidates, "random-candidates", 0, "draw N candidates at random (with --seed)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed for random players/candidates and the local search")
	fl.IntVar(&f.k, "k", 0, "number of cores to choose (required)")
	fl.StringVar(&f.objective, "objective", "median", "median (minimise the sum) or center (minimise the maximum)")
	fl.StringVar(&f.method, "method", "auto", "auto, exact, local or paper")
	fl.IntVar(&f.restarts, "restarts", 0, "random restarts of the local search after the greedy start (default 2 for median, 10 for center)")
	fl.BoolVar(&f.json, "json", false, "print JSON instead of a table")
	return cmd
}

// coreInput is a loaded, validated core-selection request.
type coreInput struct {
	source     string
	players    []string
	candidates []string
	problem    core.Problem
	method     string
}

func runCore(e *env, cmd *cobra.Command, f *coreFlags) error {
	in, err := loadCoreInput(e, cmd, f)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(f.seed, 0x636f7265)) // "core"
	var sol core.Solution
	t := newTicker(e.stderr, false, "core: "+in.method, -1, "")
	defer t.done()
	switch in.method {
	case "auto":
		sol, err = core.Select(in.problem, rng)
	case "exact":
		sol, err = core.Exact(in.problem)
		var tl *core.TooLargeError
		if errors.As(err, &tl) {
			return badInputf("--method exact: too large for exhaustive search: C(%d,%d) = %.3g subsets of candidates, more than the %.3g it enumerates; use --method local or auto",
				tl.Candidates, tl.K, tl.Subsets, tl.Limit)
		}
	case "paper":
		sol, err = core.KMinimum(in.problem)
	case "local":
		opts := core.DefaultOptions(in.problem.Objective)
		if cmd.Flags().Changed("restarts") {
			opts.Restarts = f.restarts
		}
		sol, err = core.LocalSearch(in.problem, rng, opts)
	}
	if err != nil {
		return err
	}
	lb := sol.Cost
	if !sol.Exact {
		if lb, err = core.LowerBound(in.problem); err != nil {
			return err
		}
	}
	rep := newCoreReport(in, sol, lb)
	if f.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.writeTable(e.stdout)
}

func loadCoreInput(e *env, cmd *cobra.Command, f *coreFlags) (*coreInput, error) {
	if !cmd.Flags().Changed("k") {
		return nil, badInputf("--k is required (the number of cores to choose)")
	}
	obj, err := core.ParseObjective(f.objective)
	if err != nil {
		return nil, badInputf("--objective: %q is not median or center", f.objective)
	}
	switch f.method {
	case "auto", "exact", "local", "paper":
	default:
		return nil, badInputf("--method: %q is not auto, exact, local or paper", f.method)
	}
	if f.restarts < 0 {
		return nil, badInputf("--restarts must be ≥ 0, have %d", f.restarts)
	}
	if f.players != "" && f.randPlayers != 0 {
		return nil, badInputf("--players and --random-players are exclusive")
	}
	if f.candidates != "" && f.randCandidates != 0 {
		return nil, badInputf("--candidates and --random-candidates are exclusive")
	}
	m, source, err := loadCoreMatrix(e, f)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(f.seed, 0x67726f7570)) // "group"
	rowNames, colNames := m.RowNames(), m.ColNames()
	players, err := pickEndpoints("--players", f.players, f.randPlayers, rowNames, m.RowIndex, rng)
	if err != nil {
		return nil, err
	}
	cands, err := pickEndpoints("--candidates", f.candidates, f.randCandidates, colNames, m.ColIndex, rng)
	if err != nil {
		return nil, err
	}
	if f.k < 1 || f.k > len(cands) {
		return nil, badInputf("--k %d out of range: choose between 1 and %d (the number of candidates)", f.k, len(cands))
	}
	pc, err := m.Sub(players, cands)
	if err != nil {
		return nil, badInput(err)
	}
	p := core.Problem{PlayerCore: pc, K: f.k, Objective: obj}
	if m.Square() {
		if p.CoreCore, err = m.SubSquare(cands); err != nil {
			return nil, badInput(err)
		}
	}
	if err := p.Validate(); err != nil {
		return nil, badInput(err)
	}
	if err := checkCoreSums(p); err != nil {
		return nil, err
	}
	return &coreInput{source: source, players: pc.RowNames(), candidates: pc.ColNames(), problem: p, method: f.method}, nil
}

// loadCoreMatrix reads --matrix or --data.
func loadCoreMatrix(e *env, f *coreFlags) (*geo.Matrix, string, error) {
	switch {
	case f.matrix != "" && f.data != "":
		return nil, "", badInputf("--matrix and --data are exclusive")
	case f.matrix == "" && f.data == "":
		return nil, "", badInputf("give a latency matrix: --matrix FILE or --data planetlab[:SLICE]")
	case f.data != "":
		if f.format != "" {
			return nil, "", badInputf("--format applies to --matrix, not --data")
		}
		slice, err := parsePlanetLab(f.data)
		if err != nil {
			return nil, "", err
		}
		m, err := geo.PlanetLab(slice)
		if err != nil {
			return nil, "", err
		}
		return m, fmt.Sprintf("planetlab slice %d", slice), nil
	}
	format := f.format
	if format == "" {
		format = "planetlab"
		if strings.EqualFold(filepath.Ext(f.matrix), ".csv") {
			format = "csv"
		}
	}
	var read func(io.Reader) (*geo.Matrix, error)
	switch format {
	case "csv":
		read = geo.ReadMatrixCSV
	case "planetlab":
		read = geo.ReadPlanetLab
	default:
		return nil, "", badInputf("--format %q: want csv or planetlab", f.format)
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
		fmt.Fprintf(e.stderr, "core: reading the --matrix from standard input (end it with Ctrl-D)\n")
	}
	m, err := read(r)
	if err != nil {
		hint := ""
		if f.format == "" && format == "planetlab" && strings.Contains(err.Error(), ",") {
			hint = " (commas: if the matrix is CSV, add --format csv)"
		}
		return nil, "", badInputf("%s: %w%s", f.matrix, err, hint)
	}
	return m, fmt.Sprintf("%s (%s)", f.matrix, format), nil
}

// checkCoreSums rejects latencies so large that the costs computed from
// them would overflow: the sum over players of their largest latency to a
// candidate bounds every k-median cost, and twice the largest latency plus
// the largest core-to-core one bounds the diameter.
func checkCoreSums(p core.Problem) error {
	pc := p.PlayerCore
	var sum, worst float64
	for i := range pc.Rows() {
		m := 0.0
		for j := range pc.Cols() {
			m = max(m, pc.At(i, j))
		}
		sum += m
		worst = max(worst, m)
	}
	cc := 0.0
	if p.CoreCore != nil {
		for i := range p.CoreCore.Rows() {
			for j := range p.CoreCore.Cols() {
				if i != j {
					cc = max(cc, p.CoreCore.At(i, j))
				}
			}
		}
	}
	if !(sum <= placefile.MaxDelaySum) || !(2*worst+cc <= placefile.MaxDelaySum) {
		return badInputf("latencies too large: the players' largest latencies add up to more than %.3g ms, and the costs would overflow", placefile.MaxDelaySum)
	}
	return nil
}

var rangeRE = regexp.MustCompile(`^(\d+)-(\d+)$`)

// pickEndpoints resolves a --players/--candidates spec (or a random draw of
// n) against names; the empty spec means all of them, in order.
func pickEndpoints(flag, spec string, n int, names []string, index func(string) (int, bool), rng *rand.Rand) ([]int, error) {
	total := len(names)
	if n < 0 || n > total {
		return nil, badInputf("--random-%s %d out of range: there are %d", strings.TrimPrefix(flag, "--"), n, total)
	}
	if n > 0 {
		return rng.Perm(total)[:n], nil
	}
	if strings.TrimSpace(spec) == "" {
		all := make([]int, total)
		for i := range all {
			all[i] = i
		}
		return all, nil
	}
	var out []int
	seen := make(map[int]bool)
	add := func(i int, item string) error {
		if i < 0 || i >= total {
			return badInputf("%s: %q is out of range 0..%d", flag, item, total-1)
		}
		if seen[i] {
			return badInputf("%s: %q selects %s twice", flag, item, names[i])
		}
		seen[i] = true
		out = append(out, i)
		return nil
	}
	for _, item := range strings.Split(spec, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, badInputf("%s: empty item in %q", flag, spec)
		}
		if i, ok := index(item); ok {
			if err := add(i, item); err != nil {
				return nil, err
			}
			continue
		}
		if m := rangeRE.FindStringSubmatch(item); m != nil {
			lo, err1 := strconv.Atoi(m[1])
			hi, err2 := strconv.Atoi(m[2])
			if err1 != nil || err2 != nil || lo > hi {
				return nil, badInputf("%s: bad range %q", flag, item)
			}
			if hi >= total {
				return nil, badInputf("%s: range %q goes past the last index %d", flag, item, total-1)
			}
			for i := lo; i <= hi; i++ {
				if err := add(i, item); err != nil {
					return nil, err
				}
			}
			continue
		}
		if i, err := strconv.Atoi(item); err == nil {
			if err := add(i, item); err != nil {
				return nil, err
			}
			continue
		}
		return nil, badInputf("%s: %q is neither an index, a range nor an endpoint name", flag, item)
	}
	return out, nil
}

// coreReport is what "overworld core" prints (its JSON form is stable).
type coreReport struct {
	Source     string `json:"source"`
	Objective  string `json:"objective"`
	K          int    `json:"k"`
	Players    int    `json:"players"`
	Candidates int    `json:"candidates"`
	Method     string `json:"method"` // "exact", "local search" or "paper"
	Exact      bool   `json:"exact"`
	// LowerBound is a certified lower bound on the optimal cost (the cost
	// itself when exact); Gap is cost/LowerBound − 1, absent when unknown.
	LowerBound float64   `json:"lower_bound_ms"`
	Gap        *float64  `json:"gap,omitempty"`
	Cores      []coreUse `json:"cores"`
	Cost       float64   `json:"cost_ms"`
	Mean       float64   `json:"mean_ms"`
	Max        float64   `json:"max_ms"`
	Diameter   float64   `json:"diameter_ms"`
	// DiameterIsLowerBound is true when the core-to-core hop is unknown
	// (rectangular matrix, k > 1).
	DiameterIsLowerBound bool `json:"diameter_is_lower_bound"`
}

// coreUse describes one chosen core and the players attached to it.
type coreUse struct {
	Name    string  `json:"name"`
	Players int     `json:"players"`
	Mean    float64 `json:"mean_ms"`
	Max     float64 `json:"max_ms"`
}

func newCoreReport(in *coreInput, sol core.Solution, lb float64) *coreReport {
	p := in.problem
	r := &coreReport{
		Source: in.source, Objective: "k-" + p.Objective.String(), K: p.K,
		Players: len(in.players), Candidates: len(in.candidates),
		Method: "local search", Exact: sol.Exact, LowerBound: lb,
		Cost: sol.Cost, Mean: sol.Mean, Max: sol.Max, Diameter: sol.Diameter,
		DiameterIsLowerBound: p.CoreCore == nil && p.K > 1,
	}
	if sol.Exact {
		r.Method = "exact"
	}
	if in.method == "paper" {
		r.Method = "paper"
	}
	if lb > 0 {
		g := max(0, sol.Cost/lb-1)
		r.Gap = &g
	} else if sol.Cost == 0 {
		g := 0.0
		r.Gap = &g
	}
	slot := make(map[int]int, len(sol.Cores))
	for i, c := range sol.Cores {
		slot[c] = i
		r.Cores = append(r.Cores, coreUse{Name: in.candidates[c]})
	}
	for pl, c := range sol.Assignment {
		u := &r.Cores[slot[c]]
		d := p.PlayerCore.At(pl, c)
		u.Players++
		u.Mean += d
		u.Max = max(u.Max, d)
	}
	for i := range r.Cores {
		if u := &r.Cores[i]; u.Players > 0 {
			u.Mean /= float64(u.Players)
		}
	}
	return r
}

// provenGap is the gap below which the cost equals the lower bound up to the
// bound's rounding margin (a relative 1e-9).
const provenGap = 1e-7

func (r *coreReport) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	what := "sum"
	if r.Objective == "k-center" {
		what = "max"
	}
	fmt.Fprintf(tw, "source\t%s\n", r.Source)
	fmt.Fprintf(tw, "group\t%d players, %d candidates\n", r.Players, r.Candidates)
	fmt.Fprintf(tw, "objective\t%s (minimise the %s of player-to-core latency), k = %d\n", r.Objective, what, r.K)
	switch {
	case r.Method == "paper":
		name := map[string]string{"sum": "sums (k-minimum-pairwise)", "max": "maxima (k-minimum-eccentricity)"}[what]
		bound := "no useful lower bound"
		if r.Gap != nil {
			bound = fmt.Sprintf("at most %.2f%% above the optimum (lower bound %.1f ms)", 100**r.Gap, r.LowerBound)
		}
		fmt.Fprintf(tw, "method\tthe paper's: the k candidates with the smallest %s; %s\n", name, bound)
	case r.Exact:
		fmt.Fprintf(tw, "method\texact (optimal)\n")
	case r.Gap != nil && *r.Gap <= provenGap:
		fmt.Fprintf(tw, "method\tlocal search, proven optimal (cost equals the lower bound)\n")
	case r.Gap != nil:
		fmt.Fprintf(tw, "method\tlocal search, heuristic: at most %.2f%% above the optimum (lower bound %.1f ms)\n", 100**r.Gap, r.LowerBound)
	default:
		fmt.Fprintf(tw, "method\tlocal search, heuristic (no useful lower bound)\n")
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "core\tplayers\tmean ms\tmax ms\t\n")
	for _, c := range r.Cores {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t\n", c.Name, c.Players, c.Mean, c.Max)
	}
	fmt.Fprintln(tw)
	fmt.Fprintf(tw, "cost (%s)\t%.1f ms\n", what, r.Cost)
	fmt.Fprintf(tw, "mean\t%.1f ms\n", r.Mean)
	fmt.Fprintf(tw, "max\t%.1f ms\n", r.Max)
	note := ""
	if r.DiameterIsLowerBound {
		note = " (at least: core-to-core latency unknown, counted as 0)"
	}
	fmt.Fprintf(tw, "diameter\t%.1f ms%s\n", r.Diameter, note)
	return tw.Flush()
}

// parsePlanetLab parses --data planetlab[:SLICE] (slice 1 by default).
func parsePlanetLab(data string) (int, error) {
	name, arg, hasSlice := strings.Cut(data, ":")
	if name != "planetlab" {
		return 0, badInputf("--data %q: the embedded data sets are: planetlab[:SLICE]", data)
	}
	if !hasSlice {
		return 1, nil
	}
	s, err := strconv.Atoi(arg)
	if err != nil || s < 1 || s > geo.PlanetLabSlices {
		return 0, badInputf("--data %q: slice must be 1..%d", data, geo.PlanetLabSlices)
	}
	return s, nil
}
