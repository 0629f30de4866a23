package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/lab/colyseus"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
)

// labWorldFlags holds the flags of "overworld lab world".
type labWorldFlags struct {
	net                        netFlags
	nodes, archs, mapType, out string
	perNode, slice             int
	seed                       uint64
	duration                   time.Duration
	quick, noPlots, quiet      bool
	tuneHeap                   bool
}

func newLabWorldCmd(e *env) *cobra.Command {
	var f labWorldFlags
	def := colyseus.DefaultBandwidthConfig()
	cmd := &cobra.Command{
		Use:   "world [flags]",
		Short: "Per-node bandwidth vs node count for client-server, broadcast and directory (Colyseus Fig. 12(a))",
		Long: `Run the model game (package arena) on node cores (package node) in the simulator (package
sim) over PlanetLab latencies, for every node count and architecture, and compare the
per-node bandwidth as Colyseus' Fig. 12(a) does (Bharambe et al., NSDI 2006, §7.1):

  client-server  one central server holds every primary; player nodes are its clients
  broadcast      every node sends every update to every other node
  directory      one rendezvous node matches publications and subscriptions; replicas
                 then sync directly (the single-node form of Colyseus' locator)

Per-node bandwidth is bytes/s in + out with IPv4/UDP headers: the mean over player nodes,
with the 95th percentile of 1 s bursts as the error bar; the central server's and the
rendezvous's own bandwidth and the directory's aggregate are drawn too. Also reports
missing replicas at 0, 100 and 400 ms of grace (paper §6.3), discovery latency, staleness
and bytes per update, and the paper's claims beside ours.

The default sweep is 9, 16, 32, 48, 64 and 96 peer-to-peer nodes (one bot each) on rect
maps, 60 s of game time per run; --quick runs 9, 16 and 32 nodes for 20 s.
Writes world-bandwidth.csv, world-bandwidth.png and world-classes.png into --out;
prints the table on stdout. Everything but the wall-clock columns is the same for the
same flags.`,
		Example: `  overworld lab world
  overworld lab world --quick
  overworld lab world --nodes 16,64 --players-per-node 8 --arch directory,broadcast`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabWorld(e, cmd, &f) },
	}
	fl := cmd.Flags()
	addNetFlags(fl, &f.net, geo.NetPerfect)
	fl.StringVar(&f.nodes, "nodes", joinInts(def.Nodes), "comma-separated node counts")
	fl.StringVar(&f.archs, "arch", "client-server,broadcast,directory", "comma-separated architectures")
	fl.IntVar(&f.perNode, "players-per-node", def.PlayersPerNode, "bots per node (1: peer-to-peer as in Fig. 12(a), 8: federated)")
	fl.StringVar(&f.mapType, "map", def.Map.String(), "map type: sqr or rect")
	fl.DurationVar(&f.duration, "duration", def.Duration, "game time per run (1s to 1h)")
	fl.Uint64Var(&f.seed, "seed", def.Seed, "seed of every run")
	fl.IntVar(&f.slice, "slice", def.Slice, "PlanetLab time slice (1..18)")
	fl.BoolVar(&f.quick, "quick", false, "a CI-sized sweep: 9, 16 and 32 nodes, 20 s each (explicit --nodes and --duration win)")
	fl.StringVar(&f.out, "out", "out/lab-world", outDirUsage("the CSV and PNG files"))
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV file only")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	addTuneHeapFlag(fl, &f.tuneHeap)
	return cmd
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func runLabWorld(e *env, cmd *cobra.Command, f *labWorldFlags) error {
	if f.tuneHeap {
		defer tuneHeap()() // large worlds run faster on huge pages and with the collector less eager
	}
	cfg := colyseus.DefaultBandwidthConfig()
	if f.quick {
		cfg = colyseus.QuickBandwidthConfig()
	}
	if !f.quick || cmd.Flags().Changed("nodes") {
		nodes, err := parseList("--nodes", f.nodes, "node counts from 1 to 2000", func(p string) (int, bool) {
			n, err := strconv.Atoi(p)
			return n, err == nil && n >= 1 && n <= 2000
		})
		if err != nil {
			return err
		}
		cfg.Nodes = nodes
	}
	if !f.quick || cmd.Flags().Changed("duration") {
		if f.duration < time.Second || f.duration > time.Hour {
			return badInputf("--duration %v: want 1s to 1h", f.duration)
		}
		cfg.Duration = f.duration
	}
	archs, err := parseList("--arch", f.archs, "client-server, broadcast or directory", func(p string) (discovery.Arch, bool) {
		a, err := discovery.ParseArch(p)
		return a, err == nil
	})
	if err != nil {
		return err
	}
	cfg.Archs = archs
	m, err := arena.ParseMapType(f.mapType)
	if err != nil {
		return badInputf("--map %q: want sqr or rect", f.mapType)
	}
	cfg.Map, cfg.PlayersPerNode, cfg.Seed, cfg.Slice = m, f.perNode, f.seed, f.slice
	net, err := f.net.network()
	if err != nil {
		return err
	}
	cfg.Net = net
	if _, err := cfg.Validate(); err != nil {
		return badInput(err)
	}
	rep, _, err := runLab(e, f.quiet, "lab world", colyseus.Bandwidth, cfg)
	if err != nil {
		return err
	}
	return writeLabReport(e, rep, f.out, f.noPlots, f.quiet, rep.Elapsed)
}
