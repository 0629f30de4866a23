package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/overworld/overworld/lab/cities"
	labcma "github.com/overworld/overworld/lab/cma"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/lab"
)

// demoFlags holds the flags of "overworld demo".
type demoFlags struct {
	players, serversN, churn int
	servers                  string
	seed                     uint64
	load                     float64
}

func newDemoPlacementCmd(e *env) *cobra.Command {
	var f demoFlags
	cmd := &cobra.Command{
		Use:   "placement [flags]",
		Short: "Assign real-world players to servers as they join and leave, four ways, and compare",
		Long: `Players from real cities (GeoNames, drawn by population) join game servers in
WonderNetwork cities, then join and leave at random. Each event is handled by three
assignment methods of place/cma, and at 10 snapshots the assignment is also solved
from scratch (min-cost flow), the exact optimum:

  sa       exact incremental assignment: may move a few connected players per event
  greedy   nearest server with room; on a leave, pulls the players that gain most
  ignore   nearest server with room; a leave changes nothing else
  optimal  the whole assignment re-solved from scratch (the reference; slow)

Delays are round-trip times modelled from WonderNetwork's measurements. Total
capacity is players / load, spread over the servers with weights 3, 1, 2, 3, 1, 2, ...
in list order (deliberately uneven: capacity rarely sits where the players are).
The table shows mean, 95th-percentile and maximum delay, the share of players within
100 ms, players moved per event, and the time per event. Everything but the times is
the same for the same flags.`,
		Example: `  overworld demo placement
  overworld demo placement --players 5000 --servers-n 20 --load 0.95
  overworld demo placement --servers "London,Frankfurt,Tokyo,New York" --seed 7`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemo(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.players, "players", 2000, "players that join before the churn")
	fl.StringVar(&f.servers, "servers", "", "comma-separated WonderNetwork cities to put servers in (default: the first --servers-n of lab/cities' default server cities)")
	fl.IntVar(&f.serversN, "servers-n", 10, fmt.Sprintf("number of servers: the first K of %s (K ≤ %d)", strings.Join(cities.Servers()[:5], ", ")+", ...", len(cities.Servers())))
	fl.Uint64Var(&f.seed, "seed", 1, "seed for players and events")
	fl.Float64Var(&f.load, "load", 0.9, "players / total capacity after the joins, in (0, 1]")
	fl.IntVar(&f.churn, "churn", 0, "random joins and leaves after the joins (default: as many as --players)")
	return cmd
}

func runDemo(e *env, cmd *cobra.Command, f *demoFlags) error {
	cfg := labcma.DefaultDemoConfig()
	defaults := cities.Servers()
	switch {
	case f.players < 1:
		return badInputf("--players %d: want at least 1", f.players)
	case !(f.load > 0 && f.load <= 1):
		return badInputf("--load %v: want a fraction in (0, 1]", f.load)
	case f.churn < 0:
		return badInputf("--churn %d: want at least 0 (0: as many as --players)", f.churn)
	case f.servers != "" && cmd.Flags().Changed("servers-n"):
		return badInputf("--servers and --servers-n are exclusive")
	case f.serversN < 1 || f.serversN > len(defaults):
		return badInputf("--servers-n %d: want 1..%d", f.serversN, len(defaults))
	}
	cfg.Players, cfg.Load, cfg.Churn, cfg.Seed = f.players, f.load, f.churn, f.seed
	cfg.Servers = defaults[:f.serversN]
	if f.servers != "" {
		s, err := splitList(f.servers)
		if err != nil {
			return badInputf("--servers: %v", err)
		}
		cfg.Servers = s
	}
	if cfg.Churn > 0 && cfg.Churn < cfg.Snapshots {
		cfg.Snapshots = cfg.Churn
	}
	rep, err := labcma.Demo(cfg)
	if errors.Is(err, lab.ErrConfig) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	return rep.WriteTable(e.stdout)
}
