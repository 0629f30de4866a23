package cli

import (
	"github.com/overworld/overworld/lab/region"
	"github.com/spf13/cobra"
)

// labEstimateFlags holds the flags of "overworld lab estimate".
type labEstimateFlags struct {
	out                   string
	seed                  uint64
	slices, coreTrials    int
	wonderTrials          int
	noPlots, small, quiet bool
}

func newLabEstimateCmd(e *env) *cobra.Command {
	var f labEstimateFlags
	cmd := &cobra.Command{
		Use:   "estimate [flags]",
		Short: "Reproduce §6.3 of the region-migration paper (latency estimation, Figs. 6–8)",
		Long: `Reproduce §6.3 of the region-migration paper on the embedded PlanetLab matrices (490
hosts, 18 slices) and print the results beside the paper's:

  Fig. 6   accuracy (directed relative error) on slice 1 of Vivaldi (serf) at the paper's
           high and low packet rates and with 4, 8 and 32 neighbours, GNP, a
           Netvigator-style landmark estimator, and overworld's mf
  slices   vivaldi-32, gnp-15, landmark-32 and mf-32 carried over slices 1..18
  Fig. 7   k-median core selection (place/core) on 100 random nodes for k = 1..25 on
           estimates vs measurements: hit ratio and distance to the optimal cores
  Fig. 8   directed relative error of the reported eccentricity
  Wonder   the tracked estimators and core selection on the embedded WonderNetwork data

Writes fig6-accuracy, fig6-cdf, fig6-scatter, slices, fig7-hit, fig7-error, fig8-ecc
(.csv) and fig6-cdf, fig6-scatter, fig7-core, fig8-ecc, slices (.png) into --out.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabEstimate(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "out/lab-estimate", outDirUsage("the CSV and PNG files"))
	fl.Uint64Var(&f.seed, "seed", 1, "seed")
	fl.IntVar(&f.slices, "slices", 18, "PlanetLab slices to carry the estimators over (1..18)")
	fl.IntVar(&f.coreTrials, "core-trials", 10, "core-selection trials, one per slice from slice 1 (0..--slices)")
	fl.IntVar(&f.wonderTrials, "wonder-trials", 10, "core-selection trials on WonderNetwork, each on random cities (0: accuracy only; -1: no WonderNetwork run)")
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV files only")
	addQuickFlag(e, fl, &f.small, "a quick look (fewer configurations, rounds, slices and trials); not comparable with the paper")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	return cmd
}

// quickEstimateConfig is the configuration of "lab estimate --quick". It is
// a variable so that the command's test can run its flags, table and files
// on a smaller run; lab/region's tests run this one.
var quickEstimateConfig = region.SmallConfig

func runLabEstimate(e *env, cmd *cobra.Command, f *labEstimateFlags) error {
	cfg := region.DefaultConfig()
	if f.small {
		cfg = quickEstimateConfig()
	}
	cfg.Seed = f.seed
	if cmd.Flags().Changed("slices") {
		cfg.Slices = f.slices
		cfg.CoreTrials = min(cfg.CoreTrials, max(0, f.slices))
	}
	if cmd.Flags().Changed("core-trials") {
		cfg.CoreTrials = f.coreTrials
	}
	if cmd.Flags().Changed("wonder-trials") {
		cfg.Wonder, cfg.WonderTrials = f.wonderTrials >= 0, max(0, f.wonderTrials)
		if f.wonderTrials < -1 {
			cfg.WonderTrials = f.wonderTrials // rejected by Validate
		}
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return badInput(err)
	}
	rep, elapsed, err := runLab(e, f.quiet, "lab estimate", region.Run, cfg)
	if err != nil {
		return err
	}
	return writeLabReport(e, rep, f.out, f.noPlots, f.quiet, elapsed)
}
