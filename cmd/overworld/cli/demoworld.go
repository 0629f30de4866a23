package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/overworld/overworld/lab/cities"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/harness"
)

// demoWorldFlags holds the flags of "overworld demo".
type demoWorldFlags struct {
	arch, mapType, out string
	keyMap             string
	prefetch           float64
	pushMutual         bool
	fetchAhead         time.Duration
	farMargin          float64
	nodes, perNode     int
	workers            int
	duration           time.Duration
	seed               uint64
	quiet              bool
	tuneHeap           bool
	net                netFlags
	placement          string
	headroom           float64
	session            time.Duration
	regions            string
	regionPolicy       string
	dashboard          string
	pace               float64
}

func newDemoCmd(e *env) *cobra.Command {
	var f demoWorldFlags
	def := harness.DefaultDemoConfig()
	cmd := &cobra.Command{
		Use:   "demo [flags]",
		Short: "Run one game world over many servers in real cities, in the simulator, and measure it",
		Long: `Run the model game (package arena: bots that roam a map, fight with rockets and pick
up items) on N nodes in WonderNetwork cities, each node hosting P bots, with the node
cores of package node driven by the deterministic simulator (package sim) over the
measured city-to-city latencies. The players of each node are drawn from GeoNames
cities by population and assigned to the nodes with place/cma (exact, capacity P per
node); their mean modelled RTT to their node is reported.

--arch chooses how nodes find the replicas they need:
  directory      one rendezvous node (an extra node, at the city with the least mean
                 delay to the others) matches publications with subscriptions
  broadcast      every node sends every update to every other node
  client-server  one central server (an extra node) holds every primary
  colyseus       the distributed locator: every node is a rendezvous for a key range
                 of a Mercury ring (--keymap); interests are predicted and aggregated

The final table gives per-node bandwidth (mean and 95th percentile of 1 s bursts, by
traffic class), missing replicas with 0, 100 and 400 ms of grace, discovery latency,
replica staleness, updates/s, bytes per update and the simulator's speed (it runs
windows of events on --workers goroutines, with the same result for any count). A progress
line is drawn on stderr when it is a terminal. --out writes summary.json (the same
bytes for the same flags), series.csv and nodes.csv.

--net wan adds what a public Internet path does to a packet beside its latency: 1% loss,
10 ms of exponential jitter, 0.1% duplication; --loss, --jitter, --dup and --reorder set
each part on their own.

--dashboard ADDR serves the live dashboard of the run (the page of a node's
/dashboard) at http://ADDR/dashboard while it runs: the world with every
object colored by the node holding its primary and each node's interest
boxes, the nodes at their cities, and time series of bandwidth by class,
missing replicas, discovery latency, frame time, failovers, migrations and
players, read from the simulated nodes every 250 ms of game time. The run
is paced to real time (--pace 1; --pace 4 runs four times faster, --pace 0
as fast as it goes); its result is the same as without the dashboard,
which only reads (but for the nodes' frame times, wall-clock figures that
summary.json then holds too). After the run the page shows its end until Ctrl-C.

The placement-only demo (players joining and leaving servers) is "overworld demo placement".`,
		Example: `  overworld demo
  overworld demo --arch broadcast --nodes 8 --players-per-node 1
  overworld demo --nodes 20 --duration 2m --out out/demo
  overworld demo --arch colyseus --nodes 64 --players-per-node 1 --map sqr --net wan
  overworld demo --dashboard 127.0.0.1:7300 --duration 5m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDemoWorld(e, cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.arch, "arch", string(def.Arch), "architecture: directory, broadcast, client-server or colyseus")
	fl.StringVar(&f.keyMap, "keymap", discovery.KeyMapAuto, "colyseus key mapping (--arch colyseus only): rangedht-hilbert, rangedht-x, dht, or auto (rangedht-x on maps twice as long as wide, else rangedht-hilbert)")
	fl.Float64Var(&f.prefetch, "prefetch", 0, fmt.Sprintf("widen the view replicas are fetched for by this many metres (0: the interest itself; default %g under --arch colyseus, else 0)", discovery.ColyseusPrefetch))
	fl.BoolVar(&f.pushMutual, "push-mutual", false, "push every primary to the nodes whose replicas near it show they need it, before discovery finds it there (default true under --arch colyseus)")
	fl.DurationVar(&f.fetchAhead, "fetch-ahead", 0, fmt.Sprintf("fetch a discovered moving object once it is predicted in the view this far ahead (0 to 1s; default %v under --arch colyseus, else 0)", discovery.ColyseusFetchAhead))
	fl.Float64Var(&f.farMargin, "far-margin", 0, "send a holder an update every 400 ms instead of every frame while the object is this many metres beyond its primaries' interests (0: every frame)")
	fl.IntVar(&f.nodes, "nodes", def.Nodes, "number of nodes (WonderNetwork cities: "+strings.Join(cities.Servers()[:4], ", ")+", ...)")
	fl.IntVar(&f.perNode, "players-per-node", def.PlayersPerNode, "bots per node (1: peer-to-peer, 8: federated servers)")
	fl.DurationVar(&f.duration, "duration", def.Duration, "game time to simulate (1s to 1h)")
	fl.Uint64Var(&f.seed, "seed", def.Seed, "seed of the map, players, bots and network")
	fl.StringVar(&f.mapType, "map", def.Map.String(), "map type: sqr or rect")
	fl.StringVar(&f.out, "out", "", "directory for summary.json, series.csv and nodes.csv (default: none)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress line on stderr")
	addNetFlags(fl, &f.net, geo.NetPerfect)
	addTuneHeapFlag(fl, &f.tuneHeap)
	fl.IntVar(&f.workers, "workers", 0, "goroutines the simulator runs on (0: one per CPU; the result is the same for any value)")
	fl.StringVar(&f.placement, "placement", "", "how players are put on nodes: cma (the control plane), static (nearest node with room, never moved) or none (bot k on node k/P); default cma with --players-per-node 2 or more, none otherwise")
	fl.Float64Var(&f.headroom, "headroom", 1.25, "with placement: seats per node over its share of the players (each node seats ⌈P × headroom⌉)")
	fl.DurationVar(&f.session, "session", 2*time.Minute, "with placement: mean time a player stays before another takes its avatar over (0: no churn)")
	fl.StringVar(&f.regions, "regions", "2x2", "with placement: the grid of regions the plane moves toward their players, COLSxROWS (0: none)")
	fl.StringVar(&f.regionPolicy, "region-policy", "periodic", "with placement: when a region's core selection re-runs: "+strings.Join(harness.RegionPolicies, ", "))
	fl.StringVar(&f.dashboard, "dashboard", "", "serve the run's live dashboard at this address (host:port) while it runs, paced by --pace")
	fl.Float64Var(&f.pace, "pace", 1, "with --dashboard: seconds of game time per second of wall time (0: unpaced)")
	cmd.AddCommand(newDemoPlacementCmd(e))
	return cmd
}

func runDemoWorld(e *env, cmd *cobra.Command, f *demoWorldFlags) error {
	cfg := harness.DefaultDemoConfig()
	arch, err := discovery.ParseArch(f.arch)
	if err != nil {
		return badInputf("--arch %q: want directory, broadcast, client-server or colyseus", f.arch)
	}
	m, err := arena.ParseMapType(f.mapType)
	if err != nil {
		return badInputf("--map %q: want sqr or rect", f.mapType)
	}
	nodeCities := cities.ForNodes(f.nodes)
	switch {
	case f.nodes < 1 || len(nodeCities) < f.nodes:
		return badInputf("--nodes %d: want 1 to %d (one WonderNetwork city per node)", f.nodes, len(cities.ForNodes(1<<20)))
	case f.perNode < 1 || f.perNode > 1000:
		return badInputf("--players-per-node %d: want 1 to 1000", f.perNode)
	case f.duration < time.Second || f.duration > time.Hour:
		return badInputf("--duration %v: want 1s to 1h", f.duration)
	case f.workers < 0 || f.workers > 256:
		return badInputf("--workers %d: want 0 (one per CPU) to 256", f.workers)
	case cmd.Flags().Changed("keymap") && arch != discovery.Colyseus:
		return badInputf("--keymap applies to --arch colyseus (the distributed locator), not %s", arch)
	}
	if cmd.Flags().Changed("pace") && f.dashboard == "" {
		return badInputf("--pace applies with --dashboard")
	}
	if !(f.pace >= 0 && f.pace <= 1000) {
		return badInputf("--pace %v: want 0 (unpaced) to 1000", f.pace)
	}
	if f.dashboard != "" {
		if _, _, err := net.SplitHostPort(f.dashboard); err != nil {
			return badInputf("--dashboard %q: want host:port (%v)", f.dashboard, err)
		}
	}
	net, err := f.net.network()
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := checkOutDir("--out", f.out); err != nil {
			return err
		}
	}
	def := harness.DefaultDemoConfig()
	warnLargeRun(e.stderr, f.nodes*f.perNode, f.duration, def.Nodes*def.PlayersPerNode, def.Duration)
	if f.tuneHeap {
		defer tuneHeap()() // large worlds run faster on huge pages and with the collector less eager
	}
	cfg.Workers = f.workers
	cfg.KeyMap = f.keyMap
	fetching := fetchingFlags(cmd, arch, f.prefetch, f.pushMutual, f.fetchAhead)
	cfg.Prefetch, cfg.PushMutual, cfg.FetchAhead = fetching.Prefetch, fetching.PushMutual, fetching.FetchAhead
	cfg.FarMargin = f.farMargin
	cfg.SetNet(net)
	cfg.Arch, cfg.Map, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Seed = arch, m, f.nodes, f.perNode, f.duration, f.seed
	cfg.Cities = nodeCities
	if cfg.Placement, err = placementFlags(cmd, harness.DemoPlacement(cfg), f.placement, f.headroom, f.session, f.regions, f.regionPolicy); err != nil {
		return err
	}
	var dash *simDashboard
	var watch func(*harness.World, time.Duration)
	if f.dashboard != "" {
		if dash, err = listenSimDashboard(f.dashboard, fmt.Sprintf("overworld demo: %d nodes × %d bots, %s, seed %d", f.nodes, f.perNode, arch, f.seed), f.pace); err != nil {
			return badInputf("--dashboard %s: %v", f.dashboard, err)
		}
		defer dash.Close()
		mw, mh := arena.Size(m, f.nodes*f.perNode)
		watch = func(w *harness.World, now time.Duration) { dash.watch(w, mw, mh, now) }
		cfg.WallFrameTimes = true // the dashboard's frame times (wall clock: summary.json then has them too)
		fmt.Fprintf(e.stderr, "the run's dashboard: %s\n", dash.URL())
	}
	progress, clear := worldProgress(e.stderr, f.quiet, "")
	rep, err := harness.DemoWith(cfg, harness.DemoHooks{Progress: progress, Watch: watch, WatchEvery: simWatchEvery})
	clear()
	if errors.Is(err, lab.ErrConfig) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		files, err := rep.WriteFiles(f.out)
		if err != nil {
			return err
		}
		if !f.quiet {
			names := make([]string, len(files))
			for i, p := range files {
				names[i] = filepath.Base(p)
			}
			fmt.Fprintf(e.stderr, "wrote %s: %s\n", f.out, strings.Join(names, ", "))
		}
	}
	if err := rep.WriteTable(e.stdout); err != nil || dash == nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Fprintf(e.stderr, "the run is over; its dashboard shows its end at %s until Ctrl-C\n", dash.URL())
	<-ctx.Done()
	return nil
}

// largeRun is the bot-seconds of game time above which a simulated world
// run is announced as large (the default demo is 7,680).
const largeRun = 2e6

// warnLargeRun says on stderr when a run of bots for game time is large,
// compared with the default of defBots for defTime.
func warnLargeRun(w io.Writer, bots int, game time.Duration, defBots int, defTime time.Duration) {
	work := float64(bots) * game.Seconds()
	if work <= largeRun {
		return
	}
	fmt.Fprintf(w, "warning: %d bots for %v of game time is a large run, %.0f× the default's (%d bots for %v): "+
		"it can take hours and gigabytes of memory; Ctrl-C stops it\n",
		bots, game, work/(float64(defBots)*defTime.Seconds()), defBots, defTime)
}

// placementFlags reads the placement flags of a simulated world command.
// def is the placement when --placement is not given.
func placementFlags(cmd *cobra.Command, def harness.PlacementMode, mode string, headroom float64, session time.Duration, regions, policy string) (harness.PlacementConfig, error) {
	pc := harness.PlacementConfig{Mode: def}
	if mode != "" {
		m, err := harness.ParsePlacementMode(mode)
		if err != nil {
			return pc, badInputf("--placement %q: want cma, static or none", mode)
		}
		pc.Mode = m
	}
	if pc.Mode == harness.PlaceNone {
		for _, name := range []string{"headroom", "session", "regions", "region-policy"} {
			if cmd.Flags().Changed(name) {
				return pc, badInputf("--%s applies with --placement cma or static, not none (the default with one player per node or client-server)", name)
			}
		}
		return pc, nil
	}
	if !(headroom >= 1 && headroom <= 10) {
		return pc, badInputf("--headroom %v: want 1 to 10", headroom)
	}
	switch {
	case session == 0:
		pc.Session = -1
	case session < time.Second:
		return pc, badInputf("--session %v: want 0 (no churn) or at least 1s", session)
	default:
		pc.Session = session
	}
	pc.Headroom, pc.Policy = headroom, policy
	if !slices.Contains(harness.RegionPolicies, policy) {
		return pc, badInputf("--region-policy %q: want one of %s", policy, strings.Join(harness.RegionPolicies, ", "))
	}
	if regions == "0" {
		pc.NoRegions = true
		return pc, nil
	}
	c, r, ok := strings.Cut(regions, "x")
	cols, err1 := strconv.Atoi(c)
	rows, err2 := strconv.Atoi(r)
	if !ok || err1 != nil || err2 != nil || cols < 1 || rows < 1 || cols*rows > 64 {
		return pc, badInputf("--regions %q: want COLSxROWS with 1 to 64 regions (2x2), or 0 for none", regions)
	}
	pc.Cols, pc.Rows = cols, rows
	return pc, nil
}

// fetchingFlags returns the architecture's default fetching
// (discovery.DefaultFetching) with what the --prefetch, --push-mutual and
// --fetch-ahead flags set in its place.
func fetchingFlags(cmd *cobra.Command, arch discovery.Arch, prefetch float64, push bool, ahead time.Duration) discovery.Fetching {
	f := discovery.DefaultFetching(arch)
	fl := cmd.Flags()
	if fl.Changed("prefetch") {
		f.Prefetch = prefetch
	}
	if fl.Changed("push-mutual") {
		f.PushMutual = push
	}
	if fl.Changed("fetch-ahead") {
		f.FetchAhead = ahead
	}
	return f
}
