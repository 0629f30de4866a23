package cli

import (
	labspd "github.com/overworld/overworld/lab/spd"
	"github.com/spf13/cobra"
)

type labSPDFlags struct {
	out, servers          string
	seed                  uint64
	networks              int
	noPlots, small, quiet bool
	noReal                bool
}

func newLabSPDCmd(e *env) *cobra.Command {
	var f labSPDFlags
	cmd := &cobra.Command{
		Use:   "spd [flags]",
		Short: "Reproduce §IV of the server network selection paper (delay bound, delay variation)",
		Long: `Reproduce §IV of Chen et al., "On the Game Server Network Selection with Delay and Delay
Variation Constraints" (2011) with place/spd, and print the results.

Random networks of 20, 25 and 30 servers (Waxman overlay, links 30% faster than the plane
distance) with 30, 50, 80, 100 and 120 players, 30 networks each, Γ scaled to 500 ms, bounds
f·Γ for f = 1.0 … 1.5. Client-server: alg-m, spdcs-h, k-best; peer-to-peer: alg-mp,
spdp2p-h, zizo, k-best; SPDVR-CS / SPDVR-P2P after each. The exact solver runs on small
networks (10 servers, 4–8 players) for every algorithm and on the paper's networks
(client-server) where its work limit allows; the gaps are reported. The real-data variant
puts servers in 20 WonderNetwork cities (overlay = half the measured RTT, 30% faster) and
draws players from GeoNames cities.

Writes spd-runs.csv, spd-summary.csv, fig7-cs, fig8-p2p-delay, fig9-p2p-servers,
fig10-cs-variation, fig11-cs-delay-fair, fig12-p2p-variation, fig13-p2p-delay-fair,
fig14-p2p-delay-fair and real-variation (.png) into --out; prints the tables on stdout.
Everything but run times is the same for the same flags.`,
		Example: `  overworld lab spd
  overworld lab spd --quick --no-plots`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabSPD(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the networks")
	fl.IntVar(&f.networks, "networks", 0, "networks per size (default 30, as the paper; 2 with --quick)")
	fl.StringVar(&f.out, "out", "out/lab-spd", outDirUsage("the CSV and PNG files"))
	fl.StringVar(&f.servers, "servers", "", "comma-separated WonderNetwork cities for the real-data variant (default: the 20 default server cities)")
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV files only")
	fl.BoolVar(&f.noReal, "no-real", false, "skip the real-data variant")
	addQuickFlag(e, fl, &f.small, "a quick look: 20 and 25 servers, 30 and 80 players, 2 networks, f = 1.0, 1.3, 1.5")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	return cmd
}

func runLabSPD(e *env, cmd *cobra.Command, f *labSPDFlags) error {
	cfg := labspd.DefaultConfig()
	if f.small {
		cfg = labspd.SmallConfig()
	}
	cfg.Seed = f.seed
	if cmd.Flags().Changed("networks") {
		if f.networks < 1 || f.networks > 10000 {
			return badInputf("--networks %d: want 1 to 10000", f.networks)
		}
		cfg.Networks = f.networks
	}
	if f.servers != "" {
		if f.noReal {
			return badInputf("--servers applies to the real-data variant, which --no-real skips")
		}
		s, err := splitList(f.servers)
		if err != nil {
			return badInputf("--servers: %v", err)
		}
		cfg.RealServers = s
	}
	cfg.NoReal = f.noReal
	if f.noReal {
		cfg.RealServers = nil
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return badInput(err)
	}
	rep, elapsed, err := runLab(e, f.quiet, "lab spd", labspd.Run, cfg)
	if err != nil {
		return err
	}
	return writeLabReport(e, rep, f.out, f.noPlots, f.quiet, elapsed)
}
