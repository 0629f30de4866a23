package cli

import (
	"strings"

	labbalance "github.com/overworld/overworld/lab/balance"

	"github.com/spf13/cobra"
)

type labBalanceFlags struct {
	out, cluster          string
	seed                  uint64
	runs, sweep, samples  int
	noPlots, small, quiet bool
}

func newLabBalanceCmd(e *env) *cobra.Command {
	var f labBalanceFlags
	cmd := &cobra.Command{
		Use:   "balance [flags]",
		Short: "Reproduce §5 of the hybrid cluster/P2P instances paper (scenarios A and B, Tables 4 and 5)",
		Long: `Reproduce §5 of the hybrid client-server/P2P MMORPG paper with place/balance, and print
the results beside the paper's.

  scenario A  the cluster (10 servers × 5,500) starts full, departures 10% above arrivals;
              the snapshot is balanced by Classic (Bezerra's microcells), Hybrid
              (Algorithm 1) and Pack (exact): loads, players moved, Figs. 9–10
  scenario B  arrivals 20% above departures; Algorithm 1 overflows instances to player
              hosts (LL); players in the cluster and on hosts per server (Fig. 11),
              cluster messages vs return rate (Fig. 12), failovers and losses
  Table 4     players' RTT to the LL host vs to the cluster (GeoNames players with
              WonderNetwork RTTs, and the paper's synthetic plane)
  Table 5     disconnection and failure probabilities under PD, the paper's product
              beside the exact probability
  beyond      host criteria LL, PD and score; Pack in scenario B

Writes balance-a.csv, balance-b.csv, balance-table4.csv, balance-table5.csv,
fig9-loads.png, fig10-11.png and fig12-b.png into --out; prints the tables on stdout.
Everything but run times is the same for the same flags.`,
		Example: `  overworld lab balance
  overworld lab balance --quick --no-plots`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabBalance(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the runs")
	fl.IntVar(&f.runs, "runs", 0, "runs of scenarios A and B, 1 to 100000 (default 1000, as the paper; 10 with --quick)")
	fl.IntVar(&f.sweep, "sweep", 0, "runs (the first ones) that also sweep return rates and host criteria, 0 to --runs (default 20; 3 with --quick)")
	fl.IntVar(&f.samples, "samples", 0, "sampled instances per size for Tables 4 and 5 (default 20000; 2000 with --quick)")
	fl.StringVar(&f.cluster, "cluster", "", "WonderNetwork city of the cluster (default Frankfurt)")
	fl.StringVar(&f.out, "out", "out/lab-balance", outDirUsage("the CSV and PNG files"))
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV files only")
	addQuickFlag(e, fl, &f.small, "a quick look: 10 runs, 3 in the sweeps, 2000 samples")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	return cmd
}

func runLabBalance(e *env, cmd *cobra.Command, f *labBalanceFlags) error {
	cfg := labbalance.DefaultConfig()
	if f.small {
		cfg = labbalance.SmallConfig()
	}
	cfg.Seed = f.seed
	fl := cmd.Flags()
	if fl.Changed("runs") {
		if f.runs < 1 || f.runs > 100000 {
			return badInputf("--runs %d: want 1 to 100000", f.runs)
		}
		cfg.Runs = f.runs
	}
	if fl.Changed("sweep") {
		if f.sweep < 0 || f.sweep > cfg.Runs {
			return badInputf("--sweep %d: want 0 to the number of runs, %d", f.sweep, cfg.Runs)
		}
		cfg.SweepRuns = f.sweep
	}
	if fl.Changed("samples") {
		if f.samples < 1 || f.samples > 10_000_000 {
			return badInputf("--samples %d: want 1 to 10000000", f.samples)
		}
		cfg.Samples = f.samples
	}
	if f.cluster != "" {
		cfg.Cluster = strings.TrimSpace(f.cluster)
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return badInput(err)
	}
	rep, elapsed, err := runLab(e, f.quiet, "lab balance", labbalance.Run, cfg)
	if err != nil {
		return err
	}
	rep.Seconds = elapsed.Seconds()
	return writeLabReport(e, rep, f.out, f.noPlots, f.quiet, elapsed)
}
