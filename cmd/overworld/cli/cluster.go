package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/localcluster"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/live/player"
	osim "github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// clusterOpts describes a local cluster: N player nodes (game slots 1..N,
// in cities.ForNodes), plus a rendezvous node N+1 under the directory.
type clusterOpts struct {
	nodes, perNode int
	duration       time.Duration
	emulate        bool
	seed           uint64
	mapType        string
	arch           string
	frameRate      float64
	keep           string
	logLevel       string
	quiet          bool
	sampleEvery    time.Duration // ground-truth snapshots; 0: every frame
	bots           int           // total bots (0: players-per-node decides)
	botMode        string        // "client": bots join the player endpoints; "node": AI bots inside the nodes
	noFailover     bool          // the nodes run without warm backups and failover
	drainTimeout   time.Duration // the nodes' drain_timeout (0: the daemon's default)
	kills, terms   []string      // faults: NODE@TIME, SIGKILL or SIGTERM
	play           string        // the browser lobby's address ("": none)
	faults         []clusterFault
	netf           netFlags    // --net, --loss, --jitter, --dup, --reorder
	net            geo.Network // what they give (validate)
	placement      string      // "cma": the control plane places the client bots; "none"; "": cma where it applies
	headroom       float64
	prefetch       *float64       // the nodes' and the simulator's prefetch (nil: the architecture's default)
	pushMutual     *bool          // the same for mutual pushes
	fetchAhead     *time.Duration // the same for the fetch-ahead
	episodes       string         // where to write the missing stretches ("": nowhere)
}

// clusterFault is a signal sent to a node during the run.
type clusterFault struct {
	node  wire.NodeID
	after time.Duration
	sig   syscall.Signal
}

func newClusterCmd(e *env) *cobra.Command {
	o := clusterOpts{nodes: 8, perNode: 8, duration: 60 * time.Second, seed: 1, mapType: "rect", arch: "directory", frameRate: 10, botMode: "client"}
	cmd := &cobra.Command{
		Use:   "cluster [flags]",
		Short: "Run a live cluster of node processes on 127.0.0.1 and compare it with the simulator",
		Long: `Start N real "overworld node" processes on 127.0.0.1 (this binary, re-executed with
configuration files and certificates from a fresh CA written to a temporary
directory), plus the directory's rendezvous node. Node i is placed in the i-th demo
city (New York, Frankfurt, Tokyo, Singapore, ...) and the rendezvous where the
simulator puts it; with --emulate-latency every packet between two nodes waits the
one-way latency between their cities (half the WonderNetwork RTT), so the loopback
cluster behaves like the simulated WAN.

Every node runs its frames at the phase the simulator gave the same node, on the
nodes' shared clock. Each player node spawns its share of the model game's items and listens for players
(QUIC, with its cluster certificate). The bots are real clients: one QUIC connection
each, from this process, joining node k/players-per-node with a token signed by a
fresh coordinator key and playing the arena game with the AI bots' client-side brain
(as "overworld bot" does). A bot whose node fails or falls silent for 5 s joins the
next node with a new token. --bot-mode node instead spawns AI bots inside the nodes,
exactly as the simulated world does (no player traffic; the simulator always runs AI
bots).

While it runs, the command scrapes every node's /metrics and, every frame, every
node's /debug/world at once (the ground truth for missing replicas and discovery
latency, fed to the simulator's own Recorder). At the end it
stops the nodes with SIGTERM and prints the live figures beside the simulator's for
the same configuration ("overworld demo" with the same flags): per-node bandwidth by
traffic class, missing replicas, staleness, updates/s, objects per node, frame rate,
frame time and CPU per frame, and CPU per player (the node processes' CPU time, per
second, divided by the players). With client bots it also prints the bots' figures:
joins, state bytes and messages received, the input → state echo time.

The nodes run with warm backups and failover (--failover=false turns them off; the
simulator's nodes run without, so the live control traffic is higher). A node that dies
during the run does not end it: the command reports the death on stderr as it sees it
(which node, when, how) and, in the summary, what failed over: the survivors'
promotions of its objects and how long after its death they came, which of its
primaries are primaries elsewhere at the end, and for a node stopped with SIGTERM its
drain report. --kill NODE@TIME sends node NODE a SIGKILL, --term NODE@TIME a SIGTERM
(the node drains, then exits), TIME after every node is ready; each may be repeated.

With client bots, once every node is ready the command prints a URL to play in a browser
(--play: its address): each visit gets a fresh token and is sent to a player node's /play
(the nodes in turn), where the arena game runs in the page among the bots; the same address
serves the whole cluster's live dashboard at /dashboard.

Ctrl-C (SIGINT), SIGTERM or SIGHUP ends the run early: the node processes (in process
groups of their own, so the terminal's Ctrl-C does not reach them) are stopped in order
(SIGTERM: each drains, then exits), stderr says how each ended, and the figures of the
time run are printed; the exit status is then 0. Interrupted before every node is
ready, the command stops the nodes and exits with status 130; during the simulation
that comes first, Ctrl-C ends it at once (no node runs yet). Progress: on a terminal a
line redrawn in place, otherwise a line every 10 s (--quiet: none).

Missing replicas count, in each player node's snapshot, the objects whose primary
(on another node) lies inside the node's view and of which it holds no copy (the
simulator's 0 ms-grace measure); the moving objects (bots and missiles) are also
given apart, as the simulator's summary gives them, and under --emulate-latency their floor
on both sides (the pairs no protocol could have delivered yet: created less than the shortest
path over the emulated delays from their creating node ago); --episodes FILE writes
every stretch of an object missing from a node's view, on both sides, to a CSV file
(see docs/cli.md). Like the simulator, the live side leaves the
first min(5 s, duration/10) out of missing replicas and discovery latency (from
when every node is ready: the views fill from nothing then). Staleness has the
simulator's definition too, for every replica in a view at every sample: 0 when the
replica has its primary's version, else the time since the primary moved past it,
from the versions and their production times the primary's snapshots showed (so,
like the grace periods and discovery latency, it needs a snapshot every frame: with
--sample-every above a frame the table shows n/a). How long an object has been
missing (against the grace periods) and discovery latency are counted to the frame
on the live side, as the simulator's exact frames count them: a node's frames run a
frame apart give or take its scheduler, half of them a little under. Bandwidth counts payloads plus 28 B of IPv4/UDP header per
packet, as the simulator does.

--net wan (or --loss, --jitter, --dup, --reorder) gives the simulator and every node the
same network conditions beyond latency: the nodes lose, duplicate and hold back what
they send, and a held packet is overtaken by later ones, as in the simulator.`,
		Example: `  overworld cluster --nodes 8 --duration 60s --emulate-latency
  overworld cluster --nodes 8 --duration 60s --emulate-latency --net wan --bot-mode node
  overworld cluster --nodes 4 --bots 64 --duration 30s --emulate-latency
  overworld cluster --nodes 4 --duration 20s --arch broadcast
  overworld cluster --nodes 3 --duration 20s --bot-mode node --kill 2@8s`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runCluster(e, o) },
	}
	fl := cmd.Flags()
	fl.IntVar(&o.nodes, "nodes", o.nodes, "player nodes (the directory adds a rendezvous node)")
	fl.IntVar(&o.perNode, "players-per-node", o.perNode, "bots spawned on each player node")
	fl.IntVar(&o.bots, "bots", 0, "total bots, spread evenly over the nodes (overrides --players-per-node; a multiple of --nodes)")
	fl.DurationVar(&o.duration, "duration", o.duration, "how long the cluster runs")
	fl.BoolVar(&o.emulate, "emulate-latency", false, "delay packets by the one-way latency between the nodes' cities")
	addNetFlags(fl, &o.netf, geo.NetPerfect)
	fl.Uint64Var(&o.seed, "seed", o.seed, "game seed")
	fl.StringVar(&o.mapType, "map", o.mapType, "map type: sqr or rect")
	fl.StringVar(&o.arch, "arch", o.arch, "discovery: directory, broadcast or colyseus (the distributed locator on a ring of the nodes)")
	fl.Float64Var(&o.frameRate, "frame-rate", o.frameRate, "frames per second of every node")
	fl.StringVar(&o.keep, "keep", "", "write the configurations, certificates and node logs to this directory (kept)")
	fl.StringVar(&o.episodes, "episodes", "", "write every stretch of an object missing from a node's view, live and simulated, to this CSV file")
	fl.StringVar(&o.logLevel, "log-level", "info", "the nodes' log level")
	fl.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	fl.StringVar(&o.botMode, "bot-mode", o.botMode, "client: bots join the nodes' player endpoints over QUIC; node: AI bots inside the nodes, as the simulator runs them")
	fl.DurationVar(&o.sampleEvery, "sample-every", 0, "how often to take every node's world snapshot (default: every frame; longer lightens the nodes' CPU)")
	failover := fl.Bool("failover", true, "the nodes keep warm backups and fail over (--failover=false: off)")
	fl.DurationVar(&o.drainTimeout, "drain-timeout", 0, "the nodes' drain timeout on SIGTERM (default: the node's, 5s)")
	fl.StringArrayVar(&o.kills, "kill", nil, "NODE@TIME: send node NODE a SIGKILL TIME after every node is ready (repeatable)")
	fl.StringArrayVar(&o.terms, "term", nil, "NODE@TIME: send node NODE a SIGTERM (it drains, then exits) TIME after every node is ready (repeatable)")
	fl.StringVar(&o.play, "play", "127.0.0.1:0", "where to serve browsers the game (a token and a node's /play) and the cluster's /dashboard (\"\": nowhere)")
	fl.StringVar(&o.placement, "placement", "", "cma: a control plane process (\"overworld control\") places the client bots, drawn from GeoNames cities as the simulator's players, and hands them over between nodes; none: bot k on node k/players-per-node (default cma with client bots and 2 or more per node)")
	fl.Float64Var(&o.headroom, "headroom", 1.25, "with --placement cma: each node seats ⌈players-per-node × headroom⌉")
	prefetch := fl.Float64("prefetch", 0, fmt.Sprintf("widen the view the nodes fetch replicas for by this many metres (default %g under --arch colyseus, else 0), in the simulator too", discovery.ColyseusPrefetch))
	pushMutual := fl.Bool("push-mutual", false, "push every primary to the nodes whose replicas near it show they need it (default true under --arch colyseus), in the simulator too")
	fetchAhead := fl.Duration("fetch-ahead", 0, fmt.Sprintf("fetch a discovered moving object once it is predicted in the view this far ahead (0 to 1s; default %v under --arch colyseus, else 0), in the simulator too", discovery.ColyseusFetchAhead))
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		o.noFailover = !*failover
		if cmd.Flags().Changed("prefetch") {
			o.prefetch = prefetch
		}
		if cmd.Flags().Changed("push-mutual") {
			o.pushMutual = pushMutual
		}
		if cmd.Flags().Changed("fetch-ahead") {
			o.fetchAhead = fetchAhead
		}
	}
	return cmd
}

func (o *clusterOpts) validate() error {
	if o.play != "" {
		if _, _, err := net.SplitHostPort(o.play); err != nil {
			return badInputf("--play %q: want host:port (%v)", o.play, err)
		}
	}
	var err error
	if o.net, err = o.netf.network(); err != nil {
		return err
	}
	if o.bots != 0 {
		if o.nodes < 1 || o.bots < 0 || o.bots%o.nodes != 0 {
			return badInputf("--bots %d: want a positive multiple of --nodes (%d)", o.bots, o.nodes)
		}
		o.perNode = o.bots / o.nodes
	}
	switch {
	case o.nodes < 1 || o.nodes > 64:
		return badInputf("--nodes %d: want 1 to 64 (processes on one machine)", o.nodes)
	case o.perNode < 1 || o.perNode > 1000:
		return badInputf("--players-per-node %d: want 1 to 1000", o.perNode)
	case o.duration < time.Second || o.duration > 24*time.Hour:
		return badInputf("--duration %v: want 1s to 24h", o.duration)
	case o.arch != "directory" && o.arch != "broadcast" && o.arch != "colyseus":
		return badInputf("--arch %q: want directory, broadcast or colyseus", o.arch)
	case !(o.frameRate >= 1 && o.frameRate <= 100):
		return badInputf("--frame-rate %v: want 1 to 100", o.frameRate)
	case o.prefetch != nil && !(*o.prefetch >= 0 && *o.prefetch <= 1e6):
		return badInputf("--prefetch %v: want 0 to 1e6 metres", *o.prefetch)
	case o.fetchAhead != nil && (*o.fetchAhead < 0 || *o.fetchAhead > time.Second):
		return badInputf("--fetch-ahead %v: want 0 to 1s", *o.fetchAhead)
	case o.botMode != "client" && o.botMode != "node":
		return badInputf("--bot-mode %q: want client or node", o.botMode)
	case o.sampleEvery < 0 || o.sampleEvery > time.Minute:
		return badInputf("--sample-every %v: want 0 (every frame) to 1m", o.sampleEvery)
	}
	if _, err := arena.ParseMapType(o.mapType); err != nil {
		return badInputf("--map %q: want sqr or rect", o.mapType)
	}
	switch o.placement {
	case "":
		o.placement = "none"
		if o.botMode == "client" && o.perNode > 1 && o.nodes > 1 {
			o.placement = "cma"
		}
	case "none":
	case "cma":
		if o.botMode != "client" || o.perNode < 2 || o.nodes < 2 {
			return badInputf("--placement cma: the plane places client bots (--bot-mode client) on 2 or more nodes of 2 or more players each")
		}
	default:
		return badInputf("--placement %q: want cma or none", o.placement)
	}
	if !(o.headroom >= 1 && o.headroom <= 10) {
		return badInputf("--headroom %v: want 1 to 10", o.headroom)
	}
	switch o.logLevel {
	case "debug", "info", "warn", "error":
	default:
		return badInputf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	if o.keep != "" {
		if err := checkOutDir("--keep", o.keep); err != nil {
			return err
		}
	}
	if o.drainTimeout < 0 || o.drainTimeout > 10*time.Minute {
		return badInputf("--drain-timeout %v: want 0 (the node's default) to 10m", o.drainTimeout)
	}
	total := o.nodes
	if o.arch == "directory" {
		total++
	}
	o.faults = o.faults[:0]
	for _, f := range []struct {
		flag  string
		specs []string
		sig   syscall.Signal
	}{{"--kill", o.kills, syscall.SIGKILL}, {"--term", o.terms, syscall.SIGTERM}} {
		for _, spec := range f.specs {
			id, at, ok := strings.Cut(spec, "@")
			n, err := strconv.ParseUint(id, 10, 32)
			if !ok || err != nil || n < 1 || int(n) > total {
				return badInputf("%s %q: want NODE@TIME with NODE from 1 to %d", f.flag, spec, total)
			}
			d, err := time.ParseDuration(at)
			if err != nil || d < 0 || d >= o.duration {
				return badInputf("%s %q: TIME %q: want a duration from 0 to --duration (%v)", f.flag, spec, at, o.duration)
			}
			o.faults = append(o.faults, clusterFault{node: wire.NodeID(n), after: d, sig: f.sig})
		}
	}
	return nil
}

// cliMainEnv makes a test binary that re-executes itself act as the
// command line (see TestMain in the package's tests); the real binary
// ignores it.
const cliMainEnv = "OVERWORLD_CLI_MAIN"

// clusterConfig is the local cluster engine's configuration for o: the
// node processes are exe's "node" command, node i in the i-th demo city,
// the rendezvous (directory only) in infraCity; dir receives the files.
func (o clusterOpts) clusterConfig(exe, dir, infraCity string) localcluster.Config {
	return localcluster.Config{Command: []string{exe, "node"}, Env: []string{cliMainEnv + "=1"}, Dir: dir,
		Cities: cities.ForNodes(o.nodes), Arch: o.arch, RendezvousCity: infraCity, EmulateLatency: o.emulate, Net: o.net,
		Map: o.mapType, PlayersPerNode: o.perNode, Seed: o.seed, FrameRate: o.frameRate, LogLevel: o.logLevel,
		Players: o.botMode != "node", NoFailover: o.noFailover, DrainTimeout: o.drainTimeout, Prefetch: o.prefetch,
		PushMutual: o.pushMutual, FetchAhead: o.fetchAhead}
}

func runCluster(e *env, o clusterOpts) error {
	if err := o.validate(); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	// The simulator first: the same game on the same cities (it also
	// chooses the rendezvous's city, the 1-median of the nodes).
	m, _ := arena.ParseMapType(o.mapType)
	wc := harness.DefaultDemoConfig()
	wc.Arch, wc.Map, wc.Nodes, wc.PlayersPerNode, wc.Duration, wc.Seed = discovery.Arch(o.arch), m, o.nodes, o.perNode, o.duration, o.seed
	wc.Cities = cities.ForNodes(o.nodes)
	fetching := o.fetching()
	wc.Prefetch, wc.PushMutual, wc.FetchAhead = fetching.Prefetch, fetching.PushMutual, fetching.FetchAhead // as the nodes
	wc.Failover = !o.noFailover                                                                             // warm backups and heartbeats, as the nodes
	wc.SetNet(o.net)
	wc.Placement.Mode = harness.PlaceNone // the game's own split, as the live bots without a plane
	var rows [][]float64                  // with a plane: each bot's RTT to each node
	if o.placement == "cma" {
		// The simulator's players, without churn (the live bots stay),
		// and its 2 × 2 grid of regions under the periodic policy.
		wc.Placement = harness.PlacementConfig{Mode: harness.PlaceCMA, Headroom: o.headroom, Session: -1}
		if rows, err = harness.PlacedPlayers(wc); err != nil {
			return err
		}
	}
	if len(wc.Cities) < o.nodes {
		return badInputf("--nodes %d: only %d WonderNetwork cities", o.nodes, len(wc.Cities))
	}
	say := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(e.stderr, format, args...)
		}
	}
	show := !o.quiet && isTerminal(e.stderr)
	var episodes *episodeLog
	hooks := harness.DemoHooks{}
	if o.episodes != "" {
		if episodes, err = openEpisodeLog(o.episodes); err != nil {
			return badInputf("--episodes %s: %v", o.episodes, pathErr(err))
		}
		defer episodes.close()
		ids := make([]wire.NodeID, len(wc.Cities))
		for i := range ids {
			ids[i] = wire.NodeID(i + 1) // the simulator's node i+1 is in the i-th city
		}
		var simWarmup time.Duration
		if v, err := wc.Validate(); err == nil {
			simWarmup = v.Warmup
		}
		hooks.Episodes = episodes.tracer("simulator", simWarmup, nodeCities(ids, wc.Cities))
	}
	say("simulating the same configuration ...\n")
	progress, clear := worldProgress(e.stderr, o.quiet, "simulating: ")
	hooks.Progress = progress
	simRep, err := harness.DemoWith(wc, hooks)
	clear()
	if err != nil {
		return err
	}
	dir := o.keep
	if dir == "" {
		if dir, err = os.MkdirTemp("", "overworld-cluster-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return badInputf("--keep %s: %v", o.keep, pathErr(err))
	}
	// From here on SIGINT (Ctrl-C), SIGTERM and SIGHUP end the run early:
	// the nodes, in process groups of their own, do not see the terminal's
	// signals; this process stops them in order and prints the figures of
	// the time run.
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt, syscall.SIGHUP)
	defer stopSignals()
	lc := o.clusterConfig(exe, dir, simRep.InfraSite)
	// Each node keeps the phase of the simulated node's frames: which
	// node's frame comes first, and by how much, decides whether a packet
	// makes a frame, so the two runs differ in that no more.
	if s := simRep.Sim(); s != nil {
		lc.Phases = map[wire.NodeID]time.Duration{}
		for _, id := range s.Nodes() {
			if p, err := s.Phase(id); err == nil {
				lc.Phases[id] = p
			}
		}
	}
	c, err := localcluster.Start(lc)
	if err != nil {
		return err
	}
	say("started %d node processes on 127.0.0.1 (files in %s)\n", len(c.IDs()), dir)
	if err := c.WaitReady(30 * time.Second); err != nil {
		c.Kill()
		return err
	}
	if sigCtx.Err() != nil {
		c.Stop(10 * time.Second)
		return errInterrupted
	}
	// Missing replicas, discovery latency and staleness from ground
	// truth, every frame.
	rec, err := osim.NewRecorder(nil)
	if err != nil {
		c.Kill()
		return err
	}
	// The simulator leaves the first seconds, in which every view fills
	// from nothing, out of its view measures; so does the live side, from
	// when every node runs (the simulated nodes all start at time 0; the
	// processes take a second or two to start), on the nodes' shared clock.
	var warmup time.Duration
	if vwc, err := wc.Validate(); err == nil {
		warmup = time.Since(c.Epoch()) + vwc.Warmup
		rec.SetWarmup(warmup)
	}
	// The nodes' frames run a frame apart give or take the scheduler; the
	// simulator's exactly. Ages are measured to the frame on both sides.
	rec.SetResolution(c.Frame())
	// The nodes' game, for the observer's space and the client bots.
	g, err := arena.New(arena.Config{Map: m, Nodes: o.nodes, PlayersPerNode: o.perNode, Seed: o.seed})
	if err != nil {
		c.Kill()
		return err
	}
	sp := harness.ArenaSpace(g)
	obs, err := truth.New(truth.Config{Dims: sp.Dims, Bounds: sp.Bounds, Interest: sp.Interest, Infra: c.Rendezvous(), Recorder: rec})
	if err != nil {
		c.Kill()
		return err
	}
	// The moving objects' missing replicas, as the simulator's summary
	// gives them: every kind but the items.
	names := make([]string, g.Registry().Len())
	static := make([]bool, len(names))
	kinds := map[string]world.Kind{}
	for i := range names {
		sc := g.Registry().Schema(world.Kind(i + 1))
		names[i], static[i] = sc.Name(), sc == g.Item
		kinds[sc.Name()] = world.Kind(i + 1)
	}
	if err := obs.TrackKinds(names, static, rec.Grace(), warmup); err != nil {
		c.Kill()
		return err
	}
	obs.SetResolution(c.Frame())
	if episodes != nil {
		if err := obs.TraceEpisodes(episodes.tracer("live", warmup, nodeCities(c.IDs(), c.Cities()))); err != nil {
			c.Kill()
			return err
		}
	}
	// The floor (what no protocol could have delivered yet) over the
	// delays the nodes emulate, as the simulator's over its own.
	if o.emulate {
		if err := trackClusterFloor(obs, c); err != nil {
			c.Kill()
			return err
		}
	}
	// The control plane, when it places the bots.
	var pl *localcluster.Plane
	if rows != nil {
		seats := int(math.Ceil(float64(o.perNode) * o.headroom))
		mw, mh := arena.Size(m, o.nodes*o.perNode)
		pc := localcluster.PlaneConfig{Command: []string{exe, "control"}, Env: []string{cliMainEnv + "=1"}, Capacity: seats,
			Grid: "2x2", Bounds: []float64{0, 0, mw, mh}, RegionPolicy: "periodic", InstanceSeats: clusterInstanceSeats}
		if pl, err = c.StartPlane(pc); err == nil {
			err = pl.WaitReady(10 * time.Second)
		}
		if err != nil {
			if pl != nil {
				pl.Kill()
			}
			c.Kill()
			return err
		}
		defer pl.Stop(5 * time.Second)
		say("started the control plane at %s (%d seats per node)\n", pl.URL(), seats)
	}
	// The bots play from now until the figures are taken.
	fleetCtx, stopFleet := context.WithCancel(context.Background())
	defer stopFleet()
	var fleet *localcluster.Fleet
	var placed *placedSampler
	if o.botMode == "client" {
		brain := func(k int) player.Brain { return arenaplay.NewBrain(g, o.seed<<20+uint64(k)) }
		fc := c.FleetConfig(brain)
		if pl != nil {
			fc.Plane = pl.URL()
			fc.Pings = func(k int, id wire.NodeID) float64 { return rows[k][int(id)-1] }
		}
		if fleet, err = localcluster.StartFleet(fleetCtx, fc, o.nodes*o.perNode); err != nil {
			c.Kill()
			return err
		}
		say("started %d bots: QUIC clients of the nodes' player endpoints\n", o.nodes*o.perNode)
		if rows != nil {
			placed = startPlacedSampler(fleetCtx, fleet, rows)
		}
	}
	if o.play != "" && o.botMode != "node" {
		planeURL := ""
		if pl != nil {
			planeURL = pl.URL()
		}
		lb, err := startLobby(o.play, c, g.Map.W, g.Map.H, planeURL)
		if err != nil {
			c.Kill()
			return badInputf("--play %s: %v", o.play, err)
		}
		defer lb.Close()
		fmt.Fprintf(e.stderr, "play in a browser: %s (the cluster's dashboard: %sdashboard)\n", lb.URL(), lb.URL())
	}
	ctx, cancel := context.WithDeadline(sigCtx, c.Epoch().Add(o.duration))
	defer cancel()
	oc := localcluster.ObserveConfig{Every: o.sampleEvery, Truth: obs, Kinds: kinds}
	if show {
		oc.Progress = func(el time.Duration) { fmt.Fprintf(e.stderr, "\r%s / %v", el, o.duration) }
	} else if !o.quiet {
		var last time.Duration
		oc.Progress = func(el time.Duration) {
			if el-last >= plainEvery {
				last = el
				fmt.Fprintf(e.stderr, "running: %s of %v\n", el, o.duration)
			}
		}
	}
	ids := c.IDs()
	for _, f := range o.faults {
		oc.Faults = append(oc.Faults, localcluster.Fault{Index: slices.Index(ids, f.node), After: f.after, Signal: f.sig})
	}
	oc.Died = func(d localcluster.Death) {
		if show {
			fmt.Fprint(e.stderr, "\r\033[K")
		}
		say("node %d (%s) ended at %.1f s: %s%s; the cluster goes on without it\n", d.Node, d.City, d.At.Seconds(), d.How, sentBy(d))
	}
	meas, scrapeErr := c.Observe(ctx, oc)
	if show {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	if sigCtx.Err() != nil {
		say("interrupted at %.1f s of %v: stopping the nodes in order (SIGTERM, up to 10 s), then the figures of the time run\n",
			meas.Elapsed.Seconds(), o.duration)
	}
	var bots []localcluster.BotState
	var planeState *plane.State
	var instLine, nodeLine string
	if pl != nil {
		planeState = fetchPlaneState(pl.URL())
		refits := 0
		if planeState != nil {
			refits = planeState.Stats.NodeRTTs
		}
		nodeLine = nodeRTTLine(pl.URL(), c, refits, o.emulate)
		instLine = openClusterInstances(pl.URL(), o.nodes)
	}
	if fleet != nil {
		stopFleet()
		fleet.Wait()
		bots = fleet.States()
	}
	killed := c.Stop(10 * time.Second)
	if how := stoppedNodes(c, meas.Deaths); how != "" {
		say("%s\n", how)
	}
	if scrapeErr != nil {
		return scrapeErr
	}
	cpuPerPlayer := math.NaN() // CPU seconds per second per player
	if steady := meas.Steady.Seconds(); steady > 0 {
		cpuPerPlayer = meas.CPU / steady / float64(o.nodes*o.perNode)
	}
	coarse := o.sampleEvery > c.Frame()
	writeClusterTable(e.stdout, o, c, meas, rec.Views(), obs, simRep, killed, coarse)
	writeClusterPlayers(e.stdout, o, meas, cpuPerPlayer, bots)
	if placed != nil {
		writeClusterPlacement(e.stdout, o, rows, placed.result(), planeState, nodeLine, bots, simRep)
		if instLine != "" {
			fmt.Fprintln(e.stdout, instLine)
		}
	}
	writeClusterDeaths(e.stdout, meas.Deaths, c.Rendezvous())
	if episodes != nil {
		if err := episodes.close(); err != nil {
			return fmt.Errorf("--episodes %s: %w", o.episodes, err)
		}
		say("%s\n", episodes.summary())
	}
	return nil
}

// errInterrupted ends a run stopped by a signal before it had figures to
// print (exit status 130, as a shell reports a process ended by SIGINT).
var errInterrupted = errors.New("interrupted before every node was ready; the nodes were stopped")

// stoppedNodes says how the node processes that ran to the end of the run
// ended when Stop stopped them ("" when none did).
func stoppedNodes(c *localcluster.Cluster, deaths []localcluster.Death) string {
	ids := c.IDs()
	hows := map[string][]string{}
	var order []string
	for i, id := range ids {
		if slices.ContainsFunc(deaths, func(d localcluster.Death) bool { return d.Index == i }) {
			continue
		}
		_, how, ok := c.Exited(i)
		if !ok {
			how = "still running"
		}
		if hows[how] == nil {
			order = append(order, how)
		}
		hows[how] = append(hows[how], strconv.Itoa(int(id)))
	}
	if len(order) == 0 {
		return ""
	}
	parts := make([]string, len(order))
	for k, how := range order {
		parts[k] = fmt.Sprintf("%s (node %s)", how, strings.Join(hows[how], ", "))
	}
	return "stopped the nodes with SIGTERM: " + strings.Join(parts, "; ")
}

// sentBy says which fault ended a node, if one did.
func sentBy(d localcluster.Death) string {
	switch d.Signal {
	case syscall.SIGKILL:
		return " (SIGKILL sent by --kill)"
	case syscall.SIGTERM:
		return " (SIGTERM sent by --term)"
	}
	return ""
}

// writeClusterDeaths prints the nodes that ended during the run and what
// became of their objects.
func writeClusterDeaths(w io.Writer, deaths []localcluster.Death, rendezvous wire.NodeID) {
	if len(deaths) == 0 {
		return
	}
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	kinds := func(m map[string]int) (int, string) {
		n, parts := 0, []string(nil)
		for _, k := range localcluster.Kinds(m) {
			n += m[k]
			parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
		}
		if len(parts) == 0 {
			return 0, ""
		}
		return n, " (" + strings.Join(parts, ", ") + ")"
	}
	p("\nnode deaths: %d node process(es) ended during the run; the cluster went on without them\n", len(deaths))
	for _, d := range deaths {
		p("node %d (%s) ended at %.1f s: %s%s\n", d.Node, d.City, d.At.Seconds(), d.How, sentBy(d))
		n, ks := kinds(d.Primaries)
		p("  its primaries in its last snapshot: %d%s\n", n, ks)
		if r := d.Drain; r != nil {
			p("  drain: %d of %d primaries migrated to live peers in %.0f ms (by target node: %v); not migrated %d, unconfirmed %d, deleted meanwhile %d\n",
				r.Migrated, r.Primaries, r.ElapsedMs, r.ByTarget, r.NotMigrated, r.Unconfirmed, r.Deleted)
			if r.NotMigrated > 0 {
				p("  of those not migrated, %d have a backup on a survivor (it takes them over), %d are lost\n", r.BackedUp, r.Lost())
			}
		}
		switch {
		case d.DeclaredDead > 0:
			p("  declared dead by the survivors' failure detectors %.2f s after it ended\n", d.DeclaredDead.Seconds())
		case d.DeclaredDead < 0:
			p("  declared dead by the survivors' failure detectors %.2f s before its process ended (its frames had stopped)\n", -d.DeclaredDead.Seconds())
		}
		if len(d.Promoted) > 0 {
			p("  failover: %d backups promoted on survivors, %.2f s after it ended at the median, %.2f s at p99 (%.2f s at most)\n",
				len(d.Promoted), quantile(d.Promoted, 0.5).Seconds(), quantile(d.Promoted, 0.99).Seconds(), d.Promoted[len(d.Promoted)-1].Seconds())
		} else if d.Drain == nil && n > 0 {
			p("  failover: no backup was promoted (failover off, or none of its objects had a backup)\n")
		}
		if d.Node == rendezvous {
			p("  it was the directory's rendezvous: the standby rendezvous took matching over\n")
		}
		if n > 0 {
			t, tk := kinds(d.TakenOver)
			g, gk := kinds(d.Gone)
			p("  at the end: %d of them are primaries on other nodes%s; held by no node (deleted by the game, or lost): %d%s\n", t, tk, g, gk)
		}
	}
}

// quantile returns the q-quantile of sorted ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(k, len(ds)-1))]
}

// writeClusterPlayers prints the CPU per player and, with client bots,
// the bots' figures.
func writeClusterPlayers(w io.Writer, o clusterOpts, meas localcluster.Measure, cpuPerPlayer float64, bots []localcluster.BotState) {
	figs := meas.Nodes
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	players := o.nodes * o.perNode
	p("\nCPU per player: %.2f ms of the node processes' CPU per second (%.2f%% of a core), %d players at %.0f Hz\n",
		1e3*cpuPerPlayer, 100*cpuPerPlayer, players, o.frameRate)
	if o.botMode == "node" {
		p("bots: %d AI bots inside the nodes, as in the simulator (--bot-mode node)\n", players)
		return
	}
	joins, failed, all := localcluster.Totals(bots)
	var playing int
	var gwBytes, gwStates float64
	for i, f := range figs[:o.nodes] {
		gwBytes, gwStates = gwBytes+f.PlayerBytes, gwStates+f.PlayerStates
		if !slices.ContainsFunc(meas.Deaths, func(d localcluster.Death) bool { return d.Index == i }) {
			playing += int(f.Players)
		}
	}
	p("bots: %d QUIC clients of the player nodes' endpoints (the simulator runs as many AI bots inside its nodes)\n", players)
	p("  joins %d (rejoins %d), failed dials or joins %d, in game at the end %d\n", joins, joins-len(bots), failed, playing)
	if sec := all.Duration.Seconds(); sec > 0 {
		p("  per bot: %.2f kB/s of state, %.1f states/s, %.0f B per state; input → state echo p50 %v, p95 %v\n",
			float64(all.StateBytes)/sec/1e3, float64(all.States)/sec, float64(all.StateBytes)/max(1, float64(all.States)),
			all.RTTQuantile(0.5).Round(time.Millisecond), all.RTTQuantile(0.95).Round(time.Millisecond))
	}
	p("  player traffic is not in the node bandwidth above (that is node-to-node, as the simulator counts); the\n")
	p("  player nodes wrote %.0f states, %.1f kB/s each on average\n", gwStates, gwBytes/float64(o.nodes)/1e3)
}

func writeClusterTable(w io.Writer, o clusterOpts, c *localcluster.Cluster, meas localcluster.Measure, lv osim.Views,
	obs *truth.Observer, simRep *harness.DemoReport, killed []wire.NodeID, coarse bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	figs, elapsed := meas.Nodes, meas.Elapsed.Seconds()
	ids, cities, infra := c.IDs(), c.Cities(), c.Rendezvous()
	lat := "loopback latency (not emulated: compare bandwidth, not missing replicas)"
	if o.emulate {
		lat = "latency emulated: each packet waits half the WonderNetwork RTT between the nodes' cities"
	}
	if !o.net.Perfect() {
		lat += "; network " + o.net.String() + " on both sides"
	}
	p("live cluster: %d node processes × %d bots = %d players, %s, %s map, %.0f s, seed %d, on 127.0.0.1\n",
		o.nodes, o.perNode, o.nodes*o.perNode, o.arch, o.mapType, elapsed, o.seed)
	p("nodes:   %s\n", strings.Join(cities[:o.nodes], ", "))
	if infra != 0 {
		p("         + the rendezvous node %d, at %s\n", infra, cities[len(cities)-1])
	}
	p("         %s\n", lat)
	if o.noFailover {
		p("         failover off: a node that dies loses its primaries\n\n")
	} else {
		p("         failover on: warm backups and heartbeats, in the simulator too\n\n")
	}

	players := figs[:o.nodes]
	mean := func(fs []localcluster.Figures, f func(localcluster.Figures) float64) float64 {
		if len(fs) == 0 {
			return 0
		}
		var s float64
		for _, x := range fs {
			s += f(x)
		}
		return s / float64(len(fs))
	}
	p("%-36s %10s %10s\n", "per-node bandwidth, kB/s in + out", "live", "simulator")
	p("%-36s %10.1f %10.1f\n", fmt.Sprintf("player nodes (%d), all classes", o.nodes), mean(players, localcluster.Figures.Total)/1e3, simRep.Players.Mean.Total/1e3)
	for cl := range wire.NumClasses {
		p("%-36s %10.1f %10.1f\n", "  "+wire.Class(cl).String(),
			mean(players, func(f localcluster.Figures) float64 { return f.In[cl] + f.Out[cl] })/1e3, simRep.Players.ByClass[cl].Total/1e3)
	}
	if infra != 0 {
		p("%-36s %10.1f %10.1f\n", "rendezvous", figs[len(figs)-1].Total()/1e3, simRep.Infra.Mean.Total/1e3)
	}
	sv := simRep.Summary.Views
	p("%-36s", "missing replicas, grace")
	for _, m := range sv.Missing {
		p(" %10s", fmt.Sprintf("%g ms", m.GraceMs))
	}
	p("\n")
	p("%-36s", "  live")
	for g, m := range sv.Missing {
		if g < len(lv.Missing) && lv.Interesting > 0 && (m.GraceMs == 0 || !coarse) {
			p(" %9.2f%%", 100*lv.Missing[g].Fraction)
		} else {
			p(" %10s", "n/a")
		}
	}
	p("   (%d node snapshots, %d objects in views)\n", lv.Reports, lv.Interesting)
	p("%-36s", "  simulator")
	for _, m := range sv.Missing {
		p(" %9.2f%%", 100*m.Fraction)
	}
	p("\n")
	// pair prints a live row of fractions by grace period (n/a where the
	// live side has none, or a grace period needs every frame sampled)
	// and the simulator's row below it.
	pair := func(label string, live []truth.Missing, simRow []osim.Missing, note string) {
		p("%-36s", "  "+label+", live")
		for g := range simRow {
			if g < len(live) && (simRow[g].GraceMs == 0 || !coarse) {
				p(" %9.2f%%", 100*live[g].Fraction)
			} else {
				p(" %10s", "n/a")
			}
		}
		p("   (%s)\n", note)
		p("%-36s", "  "+label+", simulator")
		for _, m := range simRow {
			p(" %9.2f%%", 100*m.Fraction)
		}
		p("\n")
	}
	if mv := obs.MovingView(); len(sv.MissingMoving) > 0 {
		live := mv.Missing
		if mv.Interesting == 0 {
			live = nil
		}
		pair("moving objects", live, sv.MissingMoving, "bots and missiles")
	}
	if fv := obs.FloorView(); fv.On && len(sv.FloorMoving) > 0 {
		pair("floor, moving objects", fv.Moving, sv.FloorMoving, "no protocol could have delivered them yet")
	}
	if coarse {
		p("%-36s %10s %10.0f   (grace and discovery need a snapshot every frame: --sample-every 0)\n",
			"discovery latency, mean ms", "n/a", sv.Discovery.Mean)
	} else {
		p("%-36s %10s %10s\n", "discovery latency, ms", "live", "simulator")
		p("%-36s %10.0f %10.0f\n", "  mean", lv.Discovery.Mean, sv.Discovery.Mean)
		p("%-36s %10.0f %10.0f\n", "  p95", lv.Discovery.P95, sv.Discovery.P95)
		p("%-36s %10d %10d\n", "  samples", lv.Discovery.Count, sv.Discovery.Count)
	}
	var upd float64
	for _, f := range figs {
		upd += f.Updates
	}
	p("%-36s %10.0f %10.0f\n", "object updates/s, all nodes", upd/elapsed, simRep.UpdatesPerS)
	staleMean := math.NaN()
	if staleSum, staleN := obs.StalenessSamples(); staleN > 0 {
		staleMean = float64(staleSum.Milliseconds()) / float64(staleN)
	}
	if coarse {
		// Versions made between two samples go unseen: the time since the
		// primary moved past a replica would be under-counted.
		p("%-36s %10s %10.0f   (staleness needs a snapshot every frame too)\n",
			"replica staleness, mean ms", "n/a", simRep.Summary.Staleness.Mean)
	} else {
		p("%-36s %10.0f %10.0f   (replicas in views; live: from the versions at each sample, see --help)\n",
			"replica staleness, mean ms", staleMean, simRep.Summary.Staleness.Mean)
	}
	p("\n%-6s %-14s %9s %9s %9s %9s %8s %9s %9s %8s\n", "node", "city", "primaries", "replicas", "kB/s in", "kB/s out", "frames/s", "frame ms", "CPU ms/fr", "drops")
	for i, f := range figs {
		var in, out float64
		for cl := range wire.NumClasses {
			in, out = in+f.In[cl], out+f.Out[cl]
		}
		frameMs, cpuMs := 0.0, 1e3*f.CPUPerFrame
		if f.FrameN > 0 {
			frameMs = 1e3 * f.FrameSum / f.FrameN
		}
		fps := 0.0
		if f.Elapsed > 0 {
			fps = f.Frames / f.Elapsed
		}
		p("%-6d %-14s %9.0f %9.0f %9.1f %9.1f %8.1f %9.3f %9.3f %8.0f", ids[i], cities[i], f.Primaries, f.Replicas,
			in/1e3, out/1e3, fps, frameMs, cpuMs, f.Drops)
		for _, d := range meas.Deaths {
			if d.Index == i {
				p("   ended at %.1f s (figures to its last scrape)", d.At.Seconds())
			}
		}
		p("\n")
	}
	p("\nbandwidth counts payloads plus 28 B of IPv4/UDP header per packet, as the simulator does (QUIC's own\n")
	p("overhead, about 30 B per packet plus acknowledgements, is not counted); CPU ms/fr is each process's CPU\n")
	p("time (its node core, transport, TLS and metrics) per frame, after start-up.\n")
	if len(killed) > 0 {
		p("nodes killed after not stopping within 10 s of SIGTERM: %v\n", killed)
	}
}

// fetching is how the nodes fetch replicas ahead of need: the flags given,
// and the architecture's default for the others, as the nodes take them
// (live.DiscoveryConfig.Fetching).
func (o clusterOpts) fetching() discovery.Fetching {
	dc := live.DiscoveryConfig{Arch: o.arch, Prefetch: o.prefetch, PushMutual: o.pushMutual}
	if o.fetchAhead != nil {
		dc.FetchAhead = &live.Duration{Duration: *o.fetchAhead}
	}
	return dc.Fetching()
}

// trackClusterFloor turns on obs's floor over the shortest paths between
// the cluster's nodes on the delays their latency emulation gives every
// packet (live.Delays between their cities), the simulator's base delays
// for the same cities.
func trackClusterFloor(obs *truth.Observer, c *localcluster.Cluster) error {
	ids, cities := c.IDs(), c.Cities()
	at := make(map[wire.NodeID]string, len(ids))
	for i, id := range ids {
		if int(id) != i+1 {
			return fmt.Errorf("cluster: node %d is not the %dth: the floor needs nodes 1..%d", id, i+1, len(ids))
		}
		at[id] = cities[i]
	}
	between, err := live.Delays(at)
	if err != nil {
		return err
	}
	n := len(ids)
	d, err := harness.ShortestDelays(n, func(a, b wire.NodeID) (time.Duration, error) { return between(a, b), nil })
	if err != nil {
		return err
	}
	return obs.TrackFloor(func(a, b wire.NodeID) time.Duration {
		if a < 1 || b < 1 || int(a) > n || int(b) > n {
			return 0 // not a node of the cluster: no bound
		}
		return d[int(a-1)*n+int(b-1)]
	})
}
