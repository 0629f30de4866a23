package cli

import (
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/lab/colyseus"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/geo"
)

// labColyseusFlags holds the flags of "overworld lab colyseus".
type labColyseusFlags struct {
	net                                                  netFlags
	only, nodes, maps, keymaps, fedNodes, predTimes, out string
	fedPlayers, predNodes, balanceNodes, slice, workers  int
	seed                                                 uint64
	duration, fedDuration, balanceDuration               time.Duration
	quick, noPlots, quiet, paperRouting                  bool
	tuneHeap                                             bool
	prefetch, hotSpots                                   float64
}

func newLabColyseusCmd(e *env) *cobra.Command {
	var f labColyseusFlags
	def := colyseus.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "colyseus [flags]",
		Short: "Reproduce Colyseus' evaluation of its distributed object locator (Figs. 7(b)–12(a), Tables 1–2)",
		Long: `Run the model game (package arena) on node cores with the colyseus architecture (the
distributed object locator of Colyseus §6: locate.Mercury on the ring of internal/ring)
in the simulator over PlanetLab latencies, and reproduce the evaluation of Bharambe et
al., "Colyseus: A Distributed Architecture for Online Multiplayer Games" (NSDI 2006):

  fig7b   share of updates that bypass discovery, per object kind (bots, missiles, items)
  table1  missing missiles with proactive replication on and off (fed-rect, 28/50/96 nodes)
  fig8    PredTime sweep in a 50-fed-rect game: bandwidth and missing player replicas
  fig9    per-node outbound locator bandwidth (routing, matching, maintenance) vs node
          count, per key mapping (dht, rangedht-x, rangedht-hilbert) and map (sqr, rect),
          with overworld's routing and the paper's (--paper-routing)
  fig10   median discovery latency, split into routing and matching, vs node count
  fig11   missing replicas with 0, 100 and 400 ms of grace vs node count
  table2  load balancing in a 96-fed-rect game: per-node bandwidth spread and maximum,
          on the model workload and on a hot-spot one (--hot-spots)
  fig12   per-node bandwidth vs node count for colyseus, broadcast and client-server,
          with colyseus' aggregate (p2p-rect)

fig7b and figs. 9–12 share one peer-to-peer scale sweep (--nodes × --maps × --keymaps);
fig12 adds broadcast and client-server runs. table1, fig8 and table2 run federated worlds
(--fed-players bots per node, rect maps). --only selects experiments; each world runs
once however many experiments read it, one after another.

The default (every experiment) takes about ten minutes on 2 cores; --quick runs each at
CI size in about a minute (explicit flags win). Writes colyseus-runs.csv and the
colyseus-fig8/9/10/11/12a PNGs of the selected figures into --out; prints every table
beside the paper's numbers on stdout. Everything but the wall-clock columns is the same
for the same flags.`,
		Example: `  overworld lab colyseus
  overworld lab colyseus --quick
  overworld lab colyseus --only fig9,fig10,fig11 --nodes 16,64 --maps sqr
  overworld lab colyseus --only table1 --fed-nodes 28,50 --fed-duration 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runLabColyseus(e, cmd, &f) },
	}
	fl := cmd.Flags()
	addNetFlags(fl, &f.net, geo.NetPerfect)
	fl.StringVar(&f.only, "only", "", "comma-separated experiments: "+strings.Join(colyseus.Experiments(), ", ")+" (default all)")
	fl.StringVar(&f.nodes, "nodes", joinInts(def.ScaleNodes), "node counts of the peer-to-peer scale sweep")
	fl.StringVar(&f.maps, "maps", "sqr,rect", "map shapes of the scale sweep")
	fl.StringVar(&f.keymaps, "keymaps", strings.Join(def.KeyMaps, ","), "key mappings of the scale sweep; the first is also fig7b's, fig12's, table1's and fig8's")
	fl.DurationVar(&f.duration, "duration", def.ScaleDuration, "game time per scale-sweep run (1s to 1h)")
	fl.IntVar(&f.fedPlayers, "fed-players", def.FedPlayers, "bots per node of the federated runs (table1, fig8, table2)")
	fl.DurationVar(&f.fedDuration, "fed-duration", def.FedDuration, "game time per table1 and fig8 run (1s to 1h)")
	fl.StringVar(&f.fedNodes, "fed-nodes", joinInts(def.ProactiveNodes), "table1's node counts")
	fl.IntVar(&f.predNodes, "pred-nodes", def.PredNodes, "fig8's node count")
	fl.StringVar(&f.predTimes, "pred-times", "0s,250ms,500ms,1s,2s,4s", "fig8's prediction times")
	fl.IntVar(&f.balanceNodes, "balance-nodes", def.BalanceNodes, "table2's node count")
	fl.DurationVar(&f.balanceDuration, "balance-duration", def.BalanceDuration, "game time per table2 run (1s to 1h)")
	fl.BoolVar(&f.paperRouting, "paper-routing", def.PaperRouting, "fig9 also runs the sweep with the paper's routing (no route cache, 4 long links)")
	fl.Float64Var(&f.hotSpots, "hot-spots", def.BalanceTileZipf, "table2 also runs a hot-spot workload: tile popularity exponent (arena TileZipf; 0: left out)")
	fl.Float64Var(&f.prefetch, "prefetch", def.Prefetch, "fig11's overworld series: the sweep on sqr maps with replicas fetched this many metres beyond the view, with colyseus's mutual pushes and fetch-ahead (0: left out)")
	fl.Uint64Var(&f.seed, "seed", def.Seed, "seed of every run")
	fl.IntVar(&f.slice, "slice", def.Slice, "PlanetLab time slice (1..18)")
	fl.IntVar(&f.workers, "workers", 0, "goroutines per simulation (0: one per CPU; the results are the same for any value)")
	fl.BoolVar(&f.quick, "quick", false, "a CI-sized run of every experiment (about a minute; explicit flags win)")
	fl.StringVar(&f.out, "out", "out/lab-colyseus", outDirUsage("the CSV and PNG files"))
	fl.BoolVar(&f.noPlots, "no-plots", false, "write the CSV file only")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress bar and no list of files on stderr")
	addTuneHeapFlag(fl, &f.tuneHeap)
	return cmd
}

// parseNodeList parses a comma-separated list of node counts.
func parseNodeList(flag, s string) ([]int, error) {
	return parseList(flag, s, "node counts from 2 to 2000", func(p string) (int, bool) {
		n, err := strconv.Atoi(p)
		return n, err == nil && n >= 2 && n <= 2000
	})
}

func runLabColyseus(e *env, cmd *cobra.Command, f *labColyseusFlags) error {
	if f.tuneHeap {
		defer tuneHeap()() // large worlds run faster on huge pages and with the collector less eager
	}
	cfg := colyseus.DefaultConfig()
	if f.quick {
		cfg = colyseus.QuickConfig()
	}
	set := func(name string) bool { return !f.quick || cmd.Flags().Changed(name) }
	var err error
	if cmd.Flags().Changed("only") {
		if cfg.Only, err = splitList(f.only); err != nil {
			return badInputf("--only: %v", err)
		}
	}
	if set("nodes") {
		if cfg.ScaleNodes, err = parseNodeList("--nodes", f.nodes); err != nil {
			return err
		}
	}
	if set("fed-nodes") {
		if cfg.ProactiveNodes, err = parseNodeList("--fed-nodes", f.fedNodes); err != nil {
			return err
		}
	}
	if set("maps") {
		if cfg.ScaleMaps, err = parseList("--maps", f.maps, "sqr or rect", func(p string) (arena.MapType, bool) {
			m, err := arena.ParseMapType(p)
			return m, err == nil
		}); err != nil {
			return err
		}
	}
	if set("keymaps") {
		if cfg.KeyMaps, err = splitList(f.keymaps); err != nil {
			return badInputf("--keymaps: %v", err)
		}
	}
	if set("pred-times") {
		if cfg.PredTimes, err = parseList("--pred-times", f.predTimes, "durations such as 0s, 500ms, 1s", func(p string) (time.Duration, bool) {
			d, err := time.ParseDuration(p)
			return d, err == nil
		}); err != nil {
			return err
		}
	}
	durs := []struct {
		name string
		v    time.Duration
		dst  *time.Duration
	}{{"duration", f.duration, &cfg.ScaleDuration}, {"fed-duration", f.fedDuration, &cfg.FedDuration},
		{"balance-duration", f.balanceDuration, &cfg.BalanceDuration}}
	for _, d := range durs {
		if !set(d.name) {
			continue
		}
		if d.v < time.Second || d.v > time.Hour {
			return badInputf("--%s %v: want 1s to 1h", d.name, d.v)
		}
		*d.dst = d.v
	}
	if set("prefetch") {
		cfg.Prefetch = f.prefetch
	}
	if set("paper-routing") {
		cfg.PaperRouting = f.paperRouting
	}
	if set("hot-spots") {
		cfg.BalanceTileZipf = f.hotSpots
	}
	if set("pred-nodes") {
		cfg.PredNodes = f.predNodes
	}
	if set("balance-nodes") {
		cfg.BalanceNodes = f.balanceNodes
	}
	if set("fed-players") {
		cfg.FedPlayers = f.fedPlayers
	}
	cfg.Seed, cfg.Slice, cfg.Workers = f.seed, f.slice, f.workers
	net, err := f.net.network()
	if err != nil {
		return err
	}
	cfg.Net = net
	if _, err := cfg.Validate(); err != nil {
		return badInput(err)
	}
	rep, _, err := runLab(e, f.quiet, "lab colyseus", colyseus.Run, cfg)
	if err != nil {
		return err
	}
	return writeLabReport(e, rep, f.out, f.noPlots, f.quiet, rep.Elapsed)
}
