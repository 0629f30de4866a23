package cli

import (
	labplacement "github.com/overworld/overworld/lab/placement"

	"github.com/spf13/cobra"
)

type labPlacementFlags struct {
	out                          string
	seed                         uint64
	players                      int
	headroom, slack, regionSlack float64
	probes                       int
	noPlots, small, quiet        bool
}

func newLabPlacementCmd(e *env) *cobra.Command {
	var f labPlacementFlags
	cmd := &cobra.Command{
		Use:   "placement [flags]",
		Short: "Measure the control plane: players on nodes under churn, and region relocation per activation policy",
		Long: `Run the control plane (package control) in simulation on the embedded data.

  players  GeoNames players arrive and leave on 16 WonderNetwork nodes with equal capacities;
           clients ping a few nodes and the plane estimates the rest; at every snapshot the
           plane's mean true RTT is compared with the exact optimum and with static admission
           to the nearest node with room; a sweep varies the headroom and the probe count
  regions  one region whose players shift from Europe to North America over a compressed
           day, under each activation policy (none, churn, arrivals, load, periodic):
           aggregate RTT on the core over the best core after each hour, and migrations

Writes placement-snapshots.csv, placement-regions.csv, placement-rtt.png and
placement-regions.png into --out; prints the tables on stdout. The same flags give the
same figures.`,
		Example: `  overworld lab placement
  overworld lab placement --quick --no-plots`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabPlacement(e, &f) },
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the runs")
	fl.IntVar(&f.players, "players", 0, "mean players online (default 2000)")
	fl.Float64Var(&f.headroom, "headroom", 0, "total seats over players, split equally over the nodes (default 1.25)")
	fl.IntVar(&f.probes, "probes", 0, "nodes an Admit asks a new client to ping (default 3)")
	fl.Float64Var(&f.slack, "probe-slack", 0, "how far an unmeasured estimate may be too high before the plane asks for a ping (default 0.5; negative: never)")
	fl.Float64Var(&f.regionSlack, "region-slack", 0, "how far above the least a node's aggregate RTT over a region's players may be and still have them ping it (default 0.1; negative: never)")
	fl.StringVar(&f.out, "out", "out/lab-placement", outDirUsage("the CSV and PNG files"))
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV files only")
	fl.BoolVar(&f.small, "quick", false, "a quick look: 400 players for 1 h, no sweep, a region of 200 over 12 hours")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	return cmd
}

func runLabPlacement(e *env, f *labPlacementFlags) error {
	cfg := labplacement.DefaultConfig()
	if f.small {
		cfg = labplacement.SmallConfig()
	}
	cfg.Seed = f.seed
	if f.players < 0 {
		return badInputf("--players %d: want at least 1", f.players)
	}
	if f.players > 0 {
		cfg.Players = f.players
	}
	if f.headroom != 0 {
		cfg.Headroom = f.headroom
	}
	if f.slack != 0 {
		cfg.ProbeSlack = f.slack
	}
	if f.regionSlack != 0 {
		cfg.RegionSlack = f.regionSlack
	}
	if f.probes < 0 {
		return badInputf("--probes %d: want 0 or more", f.probes)
	}
	if f.probes > 0 {
		cfg.Probes = f.probes
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return badInput(err)
	}
	rep, elapsed, err := runLab(e, f.quiet, "lab placement", labplacement.Run, cfg)
	if err != nil {
		return err
	}
	rep.Seconds = elapsed.Seconds()
	return writeLabReport(e, rep, f.out, f.noPlots, f.quiet, elapsed)
}
