package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab/faults"
)

// labFaultsFlags holds the flags of "overworld lab faults".
type labFaultsFlags struct {
	arch, mapType, out              string
	seed                            uint64
	nodes, perNode, slice           int
	migrations, crashes, partitions int
	writeRate                       float64
	duration, budget, restartAfter  time.Duration
	noFailover, noPlots, quiet      bool
	net                             netFlags
}

func newLabFaultsCmd(e *env) *cobra.Command {
	var f labFaultsFlags
	def := faults.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "faults [flags]",
		Short: "Migrations, crashes and lossy links against object authority: invariants, failover and pause",
		Long: `Run the model game (package arena) on node cores with warm backups and failover on, in the
simulator over PlanetLab latencies, and throw a seeded fault schedule at it: random
migrations (a random primary to a random other live node), writes by ID to random bots,
node crashes each followed by a restart (one node down at a time, once the previous
failover settled), network partitions if asked, and packet loss, duplication, jitter and
reordering (--net wan, or --loss, --dup, --jitter and --reorder).

After every simulated event it checks that no two live nodes hold the primary of one
object at one epoch (duplicate_primaries) and that no object the game did not delete
stays without a primary on a live node for longer than --failover-budget after a crash
(objects_lost); at the end, from the nodes' authority events, that no acknowledged write
is missing from its object's lineage (acked_writes_lost) and none was applied twice
(writes_applied_twice). It measures the failover latency (a crash to a new primary that
accepts writes) and the migration pause (the old node handing an object over to the new
one installing it), beside missing replicas and per-node bandwidth.

Writes faults.json, faults-migrations.csv (every handoff's pause beside 100 ms + the
round trip between the two nodes), faults-failovers.csv and faults-cdf.png into --out;
prints the table on stdout. Exits with status 1, naming the invariant, if any failed.
Everything but the run time is the same for the same flags.`,
		Example: `  overworld lab faults
  overworld lab faults --migrations 1000 --crashes 10 --loss 0.05 --dup 0.01 --jitter 20ms --seed 7
  overworld lab faults --arch colyseus --nodes 64 --players-per-node 1 --migrations 0 --crashes 0 --write-rate 0 --no-failover`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabFaults(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", def.Seed, "seed of the world, the network and the fault schedule")
	fl.StringVar(&f.out, "out", "out/lab-faults", outDirUsage("faults.json, the CSV files and the PNG"))
	fl.StringVar(&f.arch, "arch", string(def.Arch), "architecture: directory, broadcast, client-server or colyseus")
	fl.IntVar(&f.nodes, "nodes", def.Nodes, "player nodes (2 to 1000)")
	fl.IntVar(&f.perNode, "players-per-node", def.PlayersPerNode, "bots per node")
	fl.StringVar(&f.mapType, "map", def.Map.String(), "map type: sqr or rect")
	fl.IntVar(&f.slice, "slice", def.Slice, "PlanetLab time slice (1..18)")
	fl.DurationVar(&f.duration, "duration", def.Duration, "game time (5s to 1h)")
	fl.IntVar(&f.migrations, "migrations", def.Migrations, "random migrations, spread over the run")
	fl.IntVar(&f.crashes, "crashes", def.Crashes, "node crashes, each followed by a restart")
	fl.DurationVar(&f.restartAfter, "restart-after", def.RestartAfter, "how long a crashed node stays down")
	fl.IntVar(&f.partitions, "partitions", def.Partitions, "network partitions (two random sides, 0.5 to 2 s each)")
	addNetFlags(fl, &f.net, geo.NetPerfect)
	fl.Float64Var(&f.writeRate, "write-rate", def.WriteRate, "writes by ID per second of game time")
	fl.DurationVar(&f.budget, "failover-budget", def.FailoverBudget, "how long an object may be without a primary on a live node after a crash")
	fl.BoolVar(&f.noFailover, "no-failover", false, "warm backups and failover off (the steady-state cost baseline)")
	fl.BoolVar(&f.noPlots, "no-plots", false, "write faults.json and the CSV files only")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	return cmd
}

func runLabFaults(e *env, cmd *cobra.Command, f *labFaultsFlags) error {
	net, err := f.net.network()
	if err != nil {
		return err
	}
	cfg := faults.DefaultConfig()
	arch, err := discovery.ParseArch(f.arch)
	if err != nil {
		return badInputf("--arch %q: want directory, broadcast, client-server or colyseus", f.arch)
	}
	m, err := arena.ParseMapType(f.mapType)
	if err != nil {
		return badInputf("--map %q: want sqr or rect", f.mapType)
	}
	for _, c := range []struct {
		name string
		v    int
		min  int
	}{{"nodes", f.nodes, 2}, {"players-per-node", f.perNode, 1}, {"slice", f.slice, 1}, {"migrations", f.migrations, 0},
		{"crashes", f.crashes, 0}, {"partitions", f.partitions, 0}} {
		if c.v < c.min {
			return badInputf("--%s %d: want at least %d", c.name, c.v, c.min)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", f.duration}, {"failover-budget", f.budget}, {"restart-after", f.restartAfter}} {
		if d.v <= 0 {
			return badInputf("--%s %v: want a positive duration", d.name, d.v)
		}
	}
	cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Map, cfg.Slice, cfg.Seed = arch, f.nodes, f.perNode, m, f.slice, f.seed
	cfg.Duration, cfg.Migrations, cfg.Crashes, cfg.RestartAfter, cfg.Partitions = f.duration, f.migrations, f.crashes, f.restartAfter, f.partitions
	cfg.Loss, cfg.Duplicate, cfg.Jitter, cfg.Reorder, cfg.WriteRate = net.Loss, net.Duplicate, net.Jitter, net.Reorder, f.writeRate
	cfg.FailoverBudget, cfg.NoFailover = f.budget, f.noFailover
	if cfg, err = cfg.Validate(); err != nil {
		return badInput(err)
	}
	rep, elapsed, err := runLab(e, f.quiet, "lab faults", faults.Run, cfg)
	if err != nil {
		return err
	}
	if err := writeLabReport(e, rep, f.out, f.noPlots, f.quiet, elapsed); err != nil {
		return err
	}
	if failed := rep.Failed(); len(failed) > 0 {
		msg := "invariant failed: " + strings.Join(failed, ", ")
		if len(rep.Violations) > 0 {
			msg += fmt.Sprintf(" (first: %s)", rep.Violations[0])
		}
		return fmt.Errorf("lab faults: %s", msg)
	}
	return nil
}
