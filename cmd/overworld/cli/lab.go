package cli

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	labcma "github.com/overworld/overworld/lab/cma"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/report"
)

func newLabCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lab EXPERIMENT",
		Short: "Run the experiments that reproduce the papers' evaluations",
		Long: `Run an experiment that reproduces a paper's evaluation, print its numbers beside the
paper's, and write CSV files and PNG figures into --out: by default a directory under
./out of the current directory (out/lab-cma, out/lab-spd, ...), created if missing.
--quick runs a small version of each for a quick look; a progress bar shows on stderr
when it is a terminal (a line every 10 s otherwise; --quiet: none).

Experiments:
  cma       client-to-mirror assignment (Webb & Soh, MMCN 2008, §4: Figs. 4–8)
  spd       server network selection with delay variation (Chen et al. 2011, §IV: Figs. 7–14)
  arena     the model game's mobility vs Quake III (Colyseus, NSDI 2006, Figs. 2, 6) and Fortnite
  world     per-node bandwidth vs node count: client-server, broadcast, directory (Colyseus Fig. 12(a))
  colyseus  the distributed object locator (Colyseus §5–§7: Figs. 7(b)–12(a), Tables 1–2)
  estimate  latency estimation and core selection on estimates (region-migration paper, §6.3: Figs. 6–8)
  balance   instances balanced over a cluster, overflow to player hosts (hybrid
            cluster/P2P paper, §5: scenarios A and B, Figs. 9–12, Tables 4–5)
  faults    object authority under migrations, crashes and lossy links: invariants,
            failover latency, migration pause`,
		Args: cobra.NoArgs,
		// Every experiment writes into --out: a file in its place is bad
		// input, found before the run.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if f := cmd.Flags().Lookup("out"); f != nil && f.Value.String() != "" {
				return checkOutDir("--out", f.Value.String())
			}
			return nil
		},
		RunE: func(*cobra.Command, []string) error {
			return badInputf("lab: name an experiment: cma, spd, arena, world, colyseus, estimate, balance, faults, placement or instances")
		},
	}
	cmd.AddCommand(newLabCMACmd(e))
	cmd.AddCommand(newLabSPDCmd(e))
	cmd.AddCommand(newLabArenaCmd(e))
	cmd.AddCommand(newLabEstimateCmd(e))
	cmd.AddCommand(newLabBalanceCmd(e))
	cmd.AddCommand(newLabWorldCmd(e))
	cmd.AddCommand(newLabColyseusCmd(e))
	cmd.AddCommand(newLabFaultsCmd(e))
	cmd.AddCommand(newLabPlacementCmd(e))
	cmd.AddCommand(newLabInstancesCmd(e))
	return cmd
}

// labCMAFlags holds the flags of "overworld lab cma".
type labCMAFlags struct {
	data, out, scenario, servers string
	seed                         uint64
	seeds, routerLinks           int
	noPlots, small, quiet        bool
}

func newLabCMACmd(e *env) *cobra.Command {
	var f labCMAFlags
	cmd := &cobra.Command{
		Use:   "cma [flags]",
		Short: "Reproduce §4 of the client-to-mirror assignment paper (join, leave, dynamic, speed)",
		Long: `Reproduce §4 of Webb & Soh, "Adaptive Client to Mirrored-Server Assignment for MMOGs"
(MMCN 2008) with the algorithms of place/cma, and print the results beside the paper's.

  join     1,000 players join 5 mirrors (capacities 100..300): J-greedy vs J-SA (Figs. 4, 5)
  leave    then all leave in join order: L-ignore, L-greedy, L-SA (Fig. 6)
  dynamic  1,300 clients, capacities 50..150: populate to 400, then 500 joins and
           500 leaves: J-greedy/L-ignore, J-greedy/L-greedy, J-SA/L-SA (Fig. 7)
  speed    run time of all three with 5, 10 and 20 mirrors (Fig. 8), for the paper's
           J-SA/L-SA (sa-rebuild) and ours (sa)

SA is checked against cma.Optimal (re-solved from scratch after every event).

--data brite (default) generates the paper's BRITE-style topology (5,000 nodes) from
the seed and picks clients and mirrors among its nodes; --data real draws players
from GeoNames cities by population and puts mirrors in WonderNetwork cities (--servers,
default: New York, Frankfurt, Tokyo, Singapore, Sao Paulo, then Los Angeles, London,
Bangalore, Sydney, Johannesburg, then 10 more; an m-mirror system uses the first m).

Writes fig4-join, fig5-cdf, fig6-leave, fig7-dynamic and fig8-speed as .csv and
.png, and headline.csv, into --out (by default out/lab-cma under the current
directory); prints the table on stdout. Everything but run
times is the same for the same flags.`,
		Example: `  overworld lab cma
  overworld lab cma --seeds 10 --no-plots
  overworld lab cma --data real --scenario join,leave --out out/real`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabCMA(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.data, "data", "brite", "where delays come from: brite (the paper's topology) or real (GeoNames players, WonderNetwork servers)")
	fl.Uint64Var(&f.seed, "seed", 1, "first seed")
	fl.IntVar(&f.seeds, "seeds", 1, "number of seeds (seed, seed+1, ...); the table shows mean ± sd and the range")
	fl.StringVar(&f.out, "out", "out/lab-cma", outDirUsage("the CSV and PNG files")+"; out/lab-cma-real with --data real")
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV files only")
	fl.StringVar(&f.scenario, "scenario", "all", "comma-separated scenarios: join, leave, dynamic, speed")
	fl.StringVar(&f.servers, "servers", "", "comma-separated WonderNetwork cities for --data real, in order (an m-mirror system uses the first m)")
	addQuickFlag(e, fl, &f.small, "a 10× smaller instance (500 nodes, 100 players) for a quick look; not comparable with the paper")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	fl.IntVar(&f.routerLinks, "router-links", 0, "links per new router in each AS's Waxman graph for --data brite (default: BRITE's shipped 2; the paper does not say, and 3 gives path lengths that match its 949 players under 100 ms)")
	return cmd
}

func runLabCMA(e *env, cmd *cobra.Command, f *labCMAFlags) error {
	cfg := labcma.DefaultConfig()
	if f.small {
		cfg = labcma.SmallConfig()
	}
	data, err := labcma.ParseData(f.data)
	if err != nil {
		return badInputf("--data %q: want brite or real", f.data)
	}
	cfg.Data = data
	cfg.Seed, cfg.Seeds = f.seed, f.seeds
	if f.seeds < 1 {
		return badInputf("--seeds %d: want at least 1", f.seeds)
	}
	if cfg.Scenarios, err = labcma.ParseScenarios(f.scenario); err != nil {
		return badInputf("--scenario %q: want a comma-separated list of join, leave, dynamic, speed (or all)", f.scenario)
	}
	if f.servers != "" {
		if data != labcma.DataReal {
			return badInputf("--servers applies to --data real; BRITE mirrors are random nodes of the topology")
		}
		if cfg.Servers, err = splitList(f.servers); err != nil {
			return badInputf("--servers: %v", err)
		}
	}
	if cmd.Flags().Changed("router-links") {
		if data != labcma.DataBRITE {
			return badInputf("--router-links applies to --data brite")
		}
		if f.routerLinks < 1 {
			return badInputf("--router-links %d: want at least 1", f.routerLinks)
		}
		cfg.Topology.Router.M = f.routerLinks
	}
	out := f.out
	if !cmd.Flags().Changed("out") && data == labcma.DataReal {
		out = "out/lab-cma-real"
	}
	if cfg, err = cfg.Validate(); err != nil {
		return badInput(err)
	}
	rep, elapsed, err := runLab(e, f.quiet, "lab cma", labcma.Run, cfg)
	if err != nil {
		return err
	}
	return writeLabReport(e, rep, out, f.noPlots, f.quiet, elapsed)
}

// runLab runs a lab experiment (labcma.Run, colyseus.Mobility, ...) on cfg under a
// progress bar titled title and returns its report and wall-clock time; a
// configuration error comes back as bad input (exit status 2).
func runLab[C, R any](e *env, quiet bool, title string, run func(C, func(done, total int)) (R, error), cfg C) (R, time.Duration, error) {
	bar := newProgress(e.stderr, quiet, title)
	start := time.Now()
	rep, err := run(cfg, bar.update)
	bar.done()
	if errors.Is(err, lab.ErrConfig) {
		err = badInput(err)
	}
	return rep, time.Since(start), err
}

// writeLabReport writes rep's CSV files and, unless noPlots, its PNG figures
// into dir, prints its table on stdout and, unless quiet, names the files
// and the run time on stderr.
func writeLabReport(e *env, rep report.Report, dir string, noPlots, quiet bool, elapsed time.Duration) error {
	files, err := report.WriteFiles(rep, dir, !noPlots)
	if err != nil {
		return err
	}
	if err := rep.WriteTable(e.stdout); err != nil {
		return err
	}
	if !quiet {
		names := make([]string, len(files))
		for i, p := range files {
			names[i] = filepath.Base(p)
		}
		fmt.Fprintf(e.stderr, "ran in %.1f s; wrote %s: %s\n", elapsed.Seconds(), dir, strings.Join(names, ", "))
	}
	return nil
}

// addQuickFlag adds --quick, a lab's quick mode, and its old name --small,
// deprecated: it still works, says so on stderr and is left out of the help.
func addQuickFlag(e *env, fl *pflag.FlagSet, v *bool, usage string) {
	fl.BoolVar(v, "quick", false, usage)
	fl.BoolVar(v, "small", false, "the old name of --quick")
	_ = fl.MarkDeprecated("small", "use --quick")
	fl.SetOutput(e.stderr) // the deprecation notice goes to stderr, not stdout
}

// outDirUsage is the usage of a lab's --out flag: the default directory is
// relative to the current one.
func outDirUsage(what string) string {
	return "directory for " + what + ", created if missing (the default is under ./out of the current directory)"
}

// splitList splits a comma-separated list, trimming blanks; empty items are
// an error.
func splitList(s string) ([]string, error) {
	var out []string
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return nil, fmt.Errorf("empty item in %q", s)
		}
		out = append(out, item)
	}
	return out, nil
}

// parseList parses the comma-separated value s of flag with parse, which
// reports whether one item is valid; a bad list or item is bad input that
// names the flag, the item and want.
func parseList[T any](flag, s, want string, parse func(string) (T, bool)) ([]T, error) {
	parts, err := splitList(s)
	if err != nil {
		return nil, badInputf("%s: %v", flag, err)
	}
	out := make([]T, 0, len(parts))
	for _, p := range parts {
		v, ok := parse(p)
		if !ok {
			return nil, badInputf("%s: %q: want %s", flag, p, want)
		}
		out = append(out, v)
	}
	return out, nil
}

// progress reports a lab run's progress on stderr (see ticker).
type progress struct{ t *ticker }

func newProgress(w io.Writer, quiet bool, title string) *progress {
	return &progress{newTicker(w, quiet, title, -1, "events")}
}

// update is the progress callback of the lab runs.
func (p *progress) update(done, total int) { p.t.set(int64(done), int64(total)) }

// done removes the bar.
func (p *progress) done() { p.t.done() }
