package cli

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	osim "github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// clusterOpts describes a local cluster: N player nodes (game slots 1..N,
// in lab.DemoCities), plus a rendezvous node N+1 under the directory.
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

Each player node spawns its share of the model game's items and listens for players
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

Missing replicas count, in each player node's snapshot, the objects whose primary
(on another node) lies inside the node's view and of which it holds no copy (the
simulator's 0 ms-grace measure). Like the simulator, the live side leaves the
first min(5 s, duration/10) out of missing replicas and discovery latency (from
when every node is ready: the views fill from nothing then). Staleness is 0 for a
replica in view that has its primary's version, else its age minus one frame (the time since the primary moved
past it, for an object that changes every frame); the simulator measures it exactly
from each primary's version history. Bandwidth counts payloads plus 28 B of
IPv4/UDP header per packet, as the simulator does.`,
		Example: `  overworld cluster --nodes 8 --duration 60s --emulate-latency
  overworld cluster --nodes 4 --bots 64 --duration 30s --emulate-latency
  overworld cluster --nodes 4 --duration 20s --arch broadcast`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return runCluster(e, o) },
	}
	fl := cmd.Flags()
	fl.IntVar(&o.nodes, "nodes", o.nodes, "player nodes (the directory adds a rendezvous node)")
	fl.IntVar(&o.perNode, "players-per-node", o.perNode, "bots spawned on each player node")
	fl.IntVar(&o.bots, "bots", 0, "total bots, spread evenly over the nodes (overrides --players-per-node; a multiple of --nodes)")
	fl.DurationVar(&o.duration, "duration", o.duration, "how long the cluster runs")
	fl.BoolVar(&o.emulate, "emulate-latency", false, "delay packets by the one-way latency between the nodes' cities")
	fl.Uint64Var(&o.seed, "seed", o.seed, "game seed")
	fl.StringVar(&o.mapType, "map", o.mapType, "map type: sqr or rect")
	fl.StringVar(&o.arch, "arch", o.arch, "discovery: directory, broadcast or colyseus (the distributed locator on a ring of the nodes)")
	fl.Float64Var(&o.frameRate, "frame-rate", o.frameRate, "frames per second of every node")
	fl.StringVar(&o.keep, "keep", "", "write the configurations, certificates and node logs to this directory (kept)")
	fl.StringVar(&o.logLevel, "log-level", "info", "the nodes' log level")
	fl.BoolVar(&o.quiet, "quiet", false, "no progress on stderr")
	fl.StringVar(&o.botMode, "bot-mode", o.botMode, "client: bots join the nodes' player endpoints over QUIC; node: AI bots inside the nodes, as the simulator runs them")
	fl.DurationVar(&o.sampleEvery, "sample-every", 0, "how often to take every node's world snapshot (default: every frame; longer lightens the nodes' CPU)")
	return cmd
}

func (o *clusterOpts) validate() error {
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
	case o.botMode != "client" && o.botMode != "node":
		return badInputf("--bot-mode %q: want client or node", o.botMode)
	case o.sampleEvery < 0 || o.sampleEvery > time.Minute:
		return badInputf("--sample-every %v: want 0 (every frame) to 1m", o.sampleEvery)
	}
	if _, err := arena.ParseMapType(o.mapType); err != nil {
		return badInputf("--map %q: want sqr or rect", o.mapType)
	}
	return nil
}

// localCluster is a running set of node processes.
type localCluster struct {
	dir    string
	ids    []wire.NodeID
	cities []string
	admin  []string
	infra  wire.NodeID // 0 under broadcast
	epoch  time.Time
	procs  []*exec.Cmd
	done   []chan struct{}
	logs   []*os.File
	client *http.Client

	// With client bots: the player nodes' QUIC player endpoints, the
	// coordinator key signing the bots' tokens, the cluster CA.
	playerAddrs []string
	key         ed25519.PrivateKey
	ca          *pki.CA
}

// freeAddr returns a free 127.0.0.1 port for udp or tcp.
func freeAddr(network string) (string, error) {
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer c.Close()
		return c.LocalAddr().String(), nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startCluster writes a CA, certificates and configurations into dir and
// starts the node processes (exe node --config). infraCity is the
// rendezvous's city (directory only).
func startCluster(exe, dir string, o clusterOpts, infraCity string) (*localCluster, error) {
	c := &localCluster{dir: dir, epoch: time.Now(), client: &http.Client{Timeout: 5 * time.Second}}
	c.cities = lab.DemoCities(o.nodes)
	total := o.nodes
	if o.arch == "directory" {
		total++
		c.infra = wire.NodeID(total)
		c.cities = append(c.cities, infraCity)
	}
	ca, err := pki.InitCA(filepath.Join(dir, "ca"), "overworld local cluster CA", time.Now(), 30*24*time.Hour)
	if err != nil {
		return nil, err
	}
	c.ca = ca
	clientBots := o.botMode != "node"
	if clientBots {
		if _, err := player.InitKeys(filepath.Join(dir, "coord"), nil); err != nil {
			return nil, err
		}
		if c.key, err = player.LoadPrivateKey(filepath.Join(dir, "coord")); err != nil {
			return nil, err
		}
	}
	nodeAddrs := make([]string, total)
	for i := range total {
		id := wire.NodeID(i + 1)
		c.ids = append(c.ids, id)
		if nodeAddrs[i], err = freeAddr("udp"); err != nil {
			return nil, err
		}
		a, err := freeAddr("tcp")
		if err != nil {
			return nil, err
		}
		c.admin = append(c.admin, a)
		data, err := ca.Issue(id, time.Now(), 7*24*time.Hour)
		if err != nil {
			return nil, err
		}
		if err := pki.WriteNodeFile(filepath.Join(dir, fmt.Sprintf("node%d.pem", id)), data); err != nil {
			return nil, err
		}
	}
	for i, id := range c.ids {
		cfg := live.DefaultDaemonConfig()
		cfg.ID = uint32(id)
		cfg.DataDir = fmt.Sprintf("data%d", id)
		cfg.FrameRate = o.frameRate
		cfg.Epoch = c.epoch.UTC().Format(time.RFC3339Nano)
		cfg.City = c.cities[i]
		cfg.EmulateLatency = o.emulate
		cfg.LogLevel = o.logLevel
		cfg.Listen = live.ListenConfig{Node: nodeAddrs[i], Admin: c.admin[i]}
		cfg.TLS = live.TLSConfig{CACert: "ca/" + pki.CACertFile, NodeCert: fmt.Sprintf("node%d.pem", id)}
		cfg.Discovery = live.DiscoveryConfig{Arch: o.arch, Rendezvous: uint32(c.infra)}
		if o.arch != "directory" {
			cfg.Discovery.Rendezvous = cfg.ID
		}
		cfg.Game = live.GameConfig{Map: o.mapType, Nodes: o.nodes, PlayersPerNode: o.perNode, Seed: o.seed, Slot: int(id), AIBots: !clientBots}
		if id == c.infra {
			cfg.Game.Slot = 0
		} else if clientBots {
			a, err := freeAddr("udp")
			if err != nil {
				return nil, err
			}
			c.playerAddrs = append(c.playerAddrs, a)
			cfg.Listen.PlayerQUIC = a
			cfg.Players = live.PlayersConfig{CoordinatorKey: filepath.Join("coord", player.PublicKeyFile),
				MaxPlayers: max(64, o.nodes*o.perNode)}
		}
		for j, pid := range c.ids {
			if pid != id {
				cfg.Peers = append(cfg.Peers, live.PeerConfig{ID: uint32(pid), Addr: nodeAddrs[j], City: c.cities[j]})
			}
		}
		b, err := cfg.Encode()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d.toml", id)), b, 0o644); err != nil {
			return nil, err
		}
	}
	for _, id := range c.ids {
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("node%d.log", id)))
		if err != nil {
			c.kill()
			return nil, err
		}
		cmd := exec.Command(exe, "node", "--config", filepath.Join(dir, fmt.Sprintf("node%d.toml", id)))
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env = append(os.Environ(), cliMainEnv+"=1")
		if err := cmd.Start(); err != nil {
			logf.Close()
			c.kill()
			return nil, err
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		c.procs, c.done, c.logs = append(c.procs, cmd), append(c.done, done), append(c.logs, logf)
	}
	return c, nil
}

// cliMainEnv makes a test binary that re-executes itself act as the
// command line (see TestMain in the package's tests); the real binary
// ignores it.
const cliMainEnv = "OVERWORLD_CLI_MAIN"

// alive reports whether node process i is still running.
func (c *localCluster) alive(i int) bool {
	select {
	case <-c.done[i]:
		return false
	default:
		return true
	}
}

// waitReady waits until every node answers /readyz with 200.
func (c *localCluster) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i := range c.ids {
		for {
			if !c.alive(i) {
				return fmt.Errorf("node %d exited during start-up (see %s)", c.ids[i], c.logs[i].Name())
			}
			resp, err := c.client.Get("http://" + c.admin[i] + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("node %d not ready after %v", c.ids[i], timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// metrics scrapes node i's /metrics into "name{labels}" → value.
func (c *localCluster) metrics(i int) (map[string]float64, error) {
	resp, err := c.client.Get("http://" + c.admin[i] + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return parseMetrics(resp.Body)
}

// parseMetrics reads the Prometheus text format's samples (no timestamps).
func parseMetrics(r io.Reader) (map[string]float64, error) {
	m := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		k := strings.LastIndexByte(line, ' ')
		if k < 0 {
			return nil, fmt.Errorf("metrics: bad line %q", line)
		}
		v, err := strconv.ParseFloat(line[k+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: bad value in %q", line)
		}
		m[line[:k]] = v
	}
	return m, sc.Err()
}

// worlds fetches every live node's /debug/world concurrently (each answers
// at its next frame, so the snapshots are at most a frame apart).
func (c *localCluster) worlds() ([]*live.WorldSnapshot, error) {
	out := make([]*live.WorldSnapshot, len(c.ids))
	errs := make([]error, len(c.ids))
	var wg sync.WaitGroup
	for i := range c.ids {
		if !c.alive(i) {
			continue
		}
		wg.Go(func() {
			resp, err := c.client.Get("http://" + c.admin[i] + "/debug/world")
			if err != nil {
				errs[i] = err
				return
			}
			defer resp.Body.Close()
			var s live.WorldSnapshot
			if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
				errs[i] = err
				return
			}
			out[i] = &s
		})
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// truthCounts accumulates ground-truth measures over snapshots: missing
// replicas and discovery latency through the simulator's own Recorder
// (the same definitions, reported once per node per sample instead of
// once per frame), and staleness.
type truthCounts struct {
	rec      *osim.Recorder
	staleSum time.Duration
	staleN   int
	ids      []uint64
	held     []bool
}

// add reports to the Recorder, for each player node's snapshot (taken
// within a frame of each other), the objects inside its view (primaries
// anywhere else in the cluster) and whether it holds a copy; and for each
// replica in view it samples
// its staleness: 0 when it has its primary's version, else the time since
// the primary moved past it, estimated as its age minus one frame (the
// primary's next version, for an object that changes every frame).
func (t *truthCounts) add(snaps []*live.WorldSnapshot, infra wire.NodeID, frame time.Duration) {
	type obj struct {
		owner   uint32
		loc     []float64
		version uint64
	}
	prims := map[uint64]obj{}
	for _, s := range snaps {
		if s == nil {
			continue
		}
		for _, o := range s.Objects {
			if o.Primary {
				prims[o.ID] = obj{s.Node, o.Loc, o.Version}
			}
		}
	}
	for _, s := range snaps {
		if s == nil || wire.NodeID(s.Node) == infra {
			continue
		}
		held := map[uint64]live.SnapObject{}
		for _, o := range s.Objects {
			held[o.ID] = o
		}
		t.ids, t.held = t.ids[:0], t.held[:0]
		for id, o := range prims {
			if o.owner == s.Node || !inBoxes(o.loc, s.View) {
				continue
			}
			r, ok := held[id]
			t.ids, t.held = append(t.ids, id), append(t.held, ok)
			if !ok {
				continue
			}
			t.staleN++
			if r.Version < o.version {
				t.staleSum += max(0, time.Duration(s.NowNs-r.ProducedNs)-frame)
			}
		}
		if t.rec != nil {
			// A snapshot older than the node's previous one cannot happen
			// (each answers at its next frame); the error is ignored.
			_ = t.rec.View(wire.NodeID(s.Node), time.Duration(s.NowNs), t.ids, t.held)
		}
	}
}

func inBoxes(p []float64, boxes [][2][]float64) bool {
	for _, b := range boxes {
		in := len(b[0]) == len(p)
		for d := 0; in && d < len(p); d++ {
			in = b[0][d] <= p[d] && p[d] <= b[1][d]
		}
		if in {
			return true
		}
	}
	return false
}

// signal sends sig to node process i.
func (c *localCluster) signal(i int, sig os.Signal) error { return c.procs[i].Process.Signal(sig) }

// stop sends SIGTERM to every running node and waits up to timeout, then
// kills the rest; it reports the nodes that had to be killed.
func (c *localCluster) stop(timeout time.Duration) []wire.NodeID {
	for i := range c.procs {
		if c.alive(i) {
			c.signal(i, syscall.SIGTERM)
		}
	}
	deadline := time.After(timeout)
	var killed []wire.NodeID
	for i := range c.procs {
		select {
		case <-c.done[i]:
		case <-deadline:
			c.procs[i].Process.Kill()
			<-c.done[i]
			killed = append(killed, c.ids[i])
		}
	}
	for _, f := range c.logs {
		f.Close()
	}
	return killed
}

func (c *localCluster) kill() {
	for i, p := range c.procs {
		p.Process.Kill()
		<-c.done[i]
	}
	for _, f := range c.logs {
		f.Close()
	}
}

// nodeFigures are one node's live figures over the run.
type nodeFigures struct {
	in, out             [wire.NumClasses]float64 // bytes/s with 28 B of IPv4/UDP header per packet, as the simulator counts
	primaries, replicas float64
	frames, cpu         float64
	cpuPerFrame         float64 // seconds, steady state
	frameSum, frameN    float64
	staleSum, staleN    float64
	updates             float64
	drops, malformed    float64
	players             float64 // players in game at the scrape
	playerStates        float64 // State messages written to players
	playerBytes         float64 // their bytes per second
}

func figuresOf(m map[string]float64, elapsed float64) nodeFigures {
	var f nodeFigures
	for c := range wire.NumClasses {
		name := wire.Class(c).String()
		f.in[c] = (m[`overworld_bytes_total{class="`+name+`",dir="in"}`] + 28*m[`overworld_messages_total{class="`+name+`",dir="in"}`]) / elapsed
		f.out[c] = (m[`overworld_bytes_total{class="`+name+`",dir="out"}`] + 28*m[`overworld_messages_total{class="`+name+`",dir="out"}`]) / elapsed
	}
	f.primaries, f.replicas = m[`overworld_objects{role="primary"}`], m[`overworld_objects{role="replica"}`]
	f.frames, f.cpu = m["overworld_frames_total"], m["process_cpu_seconds_total"]
	f.frameSum, f.frameN = m["overworld_frame_seconds_sum"], m["overworld_frame_seconds_count"]
	f.staleSum, f.staleN = m["overworld_replica_staleness_seconds_sum"], m["overworld_replica_staleness_seconds_count"]
	f.updates = m["overworld_updates_sent_total"]
	f.drops = m["overworld_queue_drops_total"] + m["overworld_inbox_drops_total"]
	f.malformed = m[`overworld_malformed_total{stage="transport"}`] + m[`overworld_malformed_total{stage="core"}`]
	f.players = m["overworld_players"]
	f.playerStates = m["overworld_player_states_total"]
	f.playerBytes = m["overworld_player_state_bytes_total"] / elapsed
	return f
}

func (f nodeFigures) total() float64 {
	var t float64
	for c := range wire.NumClasses {
		t += f.in[c] + f.out[c]
	}
	return t
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
	wc := lab.DefaultWorldDemoConfig()
	wc.Arch, wc.Map, wc.Nodes, wc.PlayersPerNode, wc.Duration, wc.Seed = discovery.Arch(o.arch), m, o.nodes, o.perNode, o.duration, o.seed
	wc.Cities = lab.DemoCities(o.nodes)
	if len(wc.Cities) < o.nodes {
		return badInputf("--nodes %d: only %d WonderNetwork cities", o.nodes, len(wc.Cities))
	}
	say := func(format string, args ...any) {
		if !o.quiet {
			fmt.Fprintf(e.stderr, format, args...)
		}
	}
	show := false
	if fh, ok := e.stderr.(*os.File); ok && !o.quiet {
		show = term.IsTerminal(int(fh.Fd()))
	}
	say("simulating the same configuration ...\n")
	simRep, err := lab.WorldDemo(wc, nil)
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
		return err
	}
	c, err := startCluster(exe, dir, o, simRep.InfraSite)
	if err != nil {
		return err
	}
	say("started %d node processes on 127.0.0.1 (files in %s)\n", len(c.ids), dir)
	if err := c.waitReady(30 * time.Second); err != nil {
		c.kill()
		return err
	}
	// Missing replicas, discovery latency and staleness from ground
	// truth, every frame.
	rec, err := osim.NewRecorder(nil)
	if err != nil {
		c.kill()
		return err
	}
	// The simulator leaves the first seconds, in which every view fills
	// from nothing, out of its view measures; so does the live side, from
	// when every node runs (the simulated nodes all start at time 0; the
	// processes take a second or two to start), on the nodes' shared clock.
	if vwc, err := wc.Validate(); err == nil {
		rec.SetWarmup(time.Since(c.epoch) + vwc.Warmup)
	}
	truth := truthCounts{rec: rec}
	frame := time.Duration(float64(time.Second) / o.frameRate)
	// The bots play from now until the figures are taken.
	fleetCtx, stopFleet := context.WithCancel(context.Background())
	defer stopFleet()
	var fleet *botFleet
	if o.botMode == "client" {
		g, err := arena.New(arena.Config{Map: m, Nodes: o.nodes, PlayersPerNode: o.perNode, Seed: o.seed})
		if err != nil {
			c.kill()
			return err
		}
		fleet = startFleet(fleetCtx, c.fleetConfig(g, o), o.nodes*o.perNode)
		say("started %d bots: QUIC clients of the nodes' player endpoints\n", o.nodes*o.perNode)
	}
	ready := time.Now()
	// SIGINT or SIGTERM ends the run early; the nodes still stop
	// gracefully and the table covers the time run.
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stopSignals()
	ctx, cancel := context.WithDeadline(sigCtx, c.epoch.Add(o.duration))
	defer cancel()
	// CPU per frame is measured in the steady state: from a first scrape
	// a second after every node is ready (start-up, the map, the TLS
	// handshakes excluded) to the last.
	base := make([]map[string]float64, len(c.ids))
	var baseAt time.Time
	every := o.sampleEvery
	if every == 0 {
		every = frame
	}
	tick := time.NewTicker(every)
	lastShown := time.Duration(-1)
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			if base[0] == nil && time.Since(ready) >= time.Second {
				for i := range c.ids {
					base[i], _ = c.metrics(i)
				}
				baseAt = time.Now()
			}
			// Each node answers at its next frame: the snapshots are
			// at most a frame apart. A node that fails to answer is left
			// out of this sample.
			snaps, _ := c.worlds()
			truth.add(snaps, c.infra, frame)
			if el := time.Since(c.epoch).Truncate(time.Second); show && el != lastShown {
				fmt.Fprintf(e.stderr, "\r%s / %v", el, o.duration)
				lastShown = el
			}
		case <-ctx.Done():
		}
	}
	tick.Stop()
	if show {
		fmt.Fprint(e.stderr, "\r\033[K")
	}
	figs := make([]nodeFigures, len(c.ids))
	elapsed := time.Since(c.epoch).Seconds()
	var scrapeErr error
	var cpuSum float64 // node processes' CPU seconds since the base scrape
	steady := time.Since(baseAt).Seconds()
	for i := range c.ids {
		mt, err := c.metrics(i)
		if err != nil {
			scrapeErr = errors.Join(scrapeErr, fmt.Errorf("node %d: %w", c.ids[i], err))
			continue
		}
		figs[i] = figuresOf(mt, elapsed)
		if b := base[i]; b != nil && mt["overworld_frames_total"] > b["overworld_frames_total"] {
			figs[i].cpuPerFrame = (mt["process_cpu_seconds_total"] - b["process_cpu_seconds_total"]) /
				(mt["overworld_frames_total"] - b["overworld_frames_total"])
			cpuSum += mt["process_cpu_seconds_total"] - b["process_cpu_seconds_total"]
		}
	}
	var bots []fleetBotState
	if fleet != nil {
		stopFleet()
		fleet.wait()
		bots = fleet.states()
	}
	killed := c.stop(10 * time.Second)
	if scrapeErr != nil {
		return scrapeErr
	}
	cpuPerPlayer := math.NaN() // CPU seconds per second per player
	if base[0] != nil && steady > 0 {
		cpuPerPlayer = cpuSum / steady / float64(o.nodes*o.perNode)
	}
	writeClusterTable(e.stdout, o, c, figs, elapsed, truth, simRep, killed, every > frame)
	writeClusterPlayers(e.stdout, o, figs, cpuPerPlayer, bots)
	return nil
}

// fleetConfig is how the cluster's client bots reach its player nodes.
func (c *localCluster) fleetConfig(g *arena.Game, o clusterOpts) fleetConfig {
	frame := time.Duration(float64(time.Second) / o.frameRate)
	return fleetConfig{addrs: c.playerAddrs, ids: c.ids[:len(c.playerAddrs)], ca: c.ca, key: c.key, game: g,
		perNode: o.perNode, seed: o.seed, idle: max(5*time.Second, 50*frame), name: "bot"}
}

// writeClusterPlayers prints the CPU per player and, with client bots,
// the bots' figures.
func writeClusterPlayers(w io.Writer, o clusterOpts, figs []nodeFigures, cpuPerPlayer float64, bots []fleetBotState) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	players := o.nodes * o.perNode
	p("\nCPU per player: %.2f ms of the node processes' CPU per second (%.2f%% of a core), %d players at %.0f Hz\n",
		1e3*cpuPerPlayer, 100*cpuPerPlayer, players, o.frameRate)
	if o.botMode == "node" {
		p("bots: %d AI bots inside the nodes, as in the simulator (--bot-mode node)\n", players)
		return
	}
	var joins, failed, playing int
	var all player.ClientStats
	for _, b := range bots {
		joins, failed = joins+b.joins, failed+b.failed
		all = addClientStats(all, b.stats)
	}
	var gwBytes, gwStates float64
	for _, f := range figs[:o.nodes] {
		gwBytes, gwStates = gwBytes+f.playerBytes, gwStates+f.playerStates
		playing += int(f.players)
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

func writeClusterTable(w io.Writer, o clusterOpts, c *localCluster, figs []nodeFigures, elapsed float64,
	truth truthCounts, simRep *lab.WorldDemoReport, killed []wire.NodeID, coarse bool) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	lat := "loopback latency (not emulated: compare bandwidth, not missing replicas)"
	if o.emulate {
		lat = "latency emulated: each packet waits half the WonderNetwork RTT between the nodes' cities"
	}
	p("live cluster: %d node processes × %d bots = %d players, %s, %s map, %.0f s, seed %d, on 127.0.0.1\n",
		o.nodes, o.perNode, o.nodes*o.perNode, o.arch, o.mapType, elapsed, o.seed)
	p("nodes:   %s\n", strings.Join(c.cities[:o.nodes], ", "))
	if c.infra != 0 {
		p("         + the rendezvous node %d, at %s\n", c.infra, c.cities[len(c.cities)-1])
	}
	p("         %s\n\n", lat)

	players := figs[:o.nodes]
	mean := func(fs []nodeFigures, f func(nodeFigures) float64) float64 {
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
	p("%-36s %10.1f %10.1f\n", fmt.Sprintf("player nodes (%d), all classes", o.nodes), mean(players, nodeFigures.total)/1e3, simRep.Players.Mean.Total/1e3)
	for cl := range wire.NumClasses {
		p("%-36s %10.1f %10.1f\n", "  "+wire.Class(cl).String(),
			mean(players, func(f nodeFigures) float64 { return f.in[cl] + f.out[cl] })/1e3, simRep.Players.ByClass[cl].Total/1e3)
	}
	if c.infra != 0 {
		p("%-36s %10.1f %10.1f\n", "rendezvous", figs[len(figs)-1].total()/1e3, simRep.Infra.Mean.Total/1e3)
	}
	lv, sv := truth.rec.Views(), simRep.Summary.Views
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
		upd += f.updates
	}
	p("%-36s %10.0f %10.0f\n", "object updates/s, all nodes", upd/elapsed, simRep.UpdatesPerS)
	staleMean := math.NaN()
	if truth.staleN > 0 {
		staleMean = float64(truth.staleSum.Milliseconds()) / float64(truth.staleN)
	}
	p("%-36s %10.0f %10.0f   (replicas in views; live: estimated from versions, see --help)\n",
		"replica staleness, mean ms", staleMean, simRep.Summary.Staleness.Mean)
	p("\n%-6s %-14s %9s %9s %9s %9s %8s %9s %9s %8s\n", "node", "city", "primaries", "replicas", "kB/s in", "kB/s out", "frames/s", "frame ms", "CPU ms/fr", "drops")
	for i, f := range figs {
		var in, out float64
		for cl := range wire.NumClasses {
			in, out = in+f.in[cl], out+f.out[cl]
		}
		frameMs, cpuMs := 0.0, 1e3*f.cpuPerFrame
		if f.frameN > 0 {
			frameMs = 1e3 * f.frameSum / f.frameN
		}
		p("%-6d %-14s %9.0f %9.0f %9.1f %9.1f %8.1f %9.3f %9.3f %8.0f\n", c.ids[i], c.cities[i], f.primaries, f.replicas,
			in/1e3, out/1e3, f.frames/elapsed, frameMs, cpuMs, f.drops)
	}
	p("\nbandwidth counts payloads plus 28 B of IPv4/UDP header per packet, as the simulator does (QUIC's own\n")
	p("overhead, about 30 B per packet plus acknowledgements, is not counted); CPU ms/fr is each process's CPU\n")
	p("time (its node core, transport, TLS and metrics) per frame, after start-up.\n")
	if len(killed) > 0 {
		p("nodes killed after not stopping within 10 s of SIGTERM: %v\n", killed)
	}
}
