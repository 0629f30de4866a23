package cli

import (
	"time"

	"github.com/overworld/overworld/lab/colyseus"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
)

// labArenaFlags holds the flags of "overworld lab arena".
type labArenaFlags struct {
	mapType, out   string
	players        int
	seed           uint64
	duration       time.Duration
	noPlots, quiet bool
	quick          bool
}

func newLabArenaCmd(e *env) *cobra.Command {
	var f labArenaFlags
	cmd := &cobra.Command{
		Use:   "arena [flags]",
		Short: "Validate the model game's mobility against Quake III (Colyseus §2.3, §4.1) and Fortnite traces",
		Long: `Play the model game (package arena) with bots and compare its mobility with the paper's
Quake III measurements (Colyseus, NSDI 2006, Fig. 2 and Fig. 6: path length in regions per
10 s, Zipf-like region popularity) and with 840 real Fortnite games (distance per 10 s,
region popularity). Also reports the size of object deltas (world.AppendDelta between
successive frames) per object kind, beside the paper's 145 bytes (automatic) and Quake II's 22.

The default is the paper's setting for these figures: 16 bots on a 16-player square map
(128 × 128 m, 20 regions of 6.4 m across) for 8 minutes; --quick plays 1 minute.

Writes arena-path, arena-fortnite, arena-popularity, arena-deltas and arena-headline .csv and
arena-popularity, arena-path-cdf and arena-distance-cdf .png into --out; prints the table on
stdout. The output is the same for the same flags.`,
		Example: `  overworld lab arena
  overworld lab arena --quick --no-plots
  overworld lab arena --players 768 --map rect --duration 2m --no-plots`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabArena(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.mapType, "map", "sqr", "map type: sqr or rect")
	fl.IntVar(&f.players, "players", 16, "number of bots (the map grows to keep a 16-player map's density)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the map, the spawns and the bots' choices")
	fl.DurationVar(&f.duration, "duration", 8*time.Minute, "game time to play (at least 10s)")
	fl.StringVar(&f.out, "out", "out/lab-arena", outDirUsage("the CSV and PNG files"))
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV files only")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	fl.BoolVar(&f.quick, "quick", false, "a quick look: 1 minute of game time (an explicit --duration wins); fewer 10 s windows than the paper's")
	return cmd
}

func runLabArena(e *env, cmd *cobra.Command, f *labArenaFlags) error {
	if f.quick && !cmd.Flags().Changed("duration") {
		f.duration = time.Minute
	}
	m, err := arena.ParseMapType(f.mapType)
	if err != nil {
		return badInputf("--map %q: want sqr or rect", f.mapType)
	}
	if f.players < 1 || f.players > arena.MaxPlayers {
		return badInputf("--players %d: want 1 to %d", f.players, arena.MaxPlayers)
	}
	if f.duration < arena.Window || f.duration > 24*time.Hour {
		return badInputf("--duration %v: want 10s to 24h", f.duration)
	}
	cfg := colyseus.DefaultMobilityConfig()
	cfg.Game = arena.Config{Map: m, Nodes: 1, PlayersPerNode: f.players, Seed: f.seed}
	cfg.Duration = f.duration
	rep, _, err := runLab(e, f.quiet, "lab arena", colyseus.Mobility, cfg)
	if err != nil {
		return err
	}
	return writeLabReport(e, rep, f.out, f.noPlots, f.quiet, rep.Elapsed)
}
