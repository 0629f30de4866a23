// Package localcluster runs a live cluster of node processes on one
// machine (127.0.0.1) and measures it: the engine behind "overworld
// cluster", usable by any program that can run a node from a
// configuration file.
//
// It owns the processes and everything they need: a fresh cluster CA and
// node certificates (live/pki), a coordinator key for player tokens
// (live/player), one TOML configuration per node (live.DaemonConfig) with
// free loopback ports, the processes themselves (started, signalled,
// stopped and killed, and when and how each ended), their readiness,
// their Prometheus metrics, their /debug/world snapshots and
// /debug/authority logs, the ground truth measured from those snapshots
// (by package truth's observer, fed through DecodeWorld) and a fleet of
// client bots that play on the nodes' player endpoints (Fleet).
//
// # What the caller must do
//
//  1. Start the cluster with a Config: the command that runs one node
//     from a configuration file (the overworld binary's "node"
//     subcommand), a directory for the files, the nodes' cities and the
//     game. Start writes every file and starts the processes.
//  2. WaitReady; on an error, Kill.
//  3. Optionally StartFleet with c.FleetConfig and a player.Brain per bot,
//     when the nodes listen for players (Config.Players).
//  4. Measure: Observe until a context ends, with a truth.Observer whose
//     Infra is the Rendezvous (or call Metrics, Worlds or WorldsAfter,
//     DecodeWorld and truth.Observer.Frame or Sample directly). To test failures, give Observe
//     Faults (a SIGKILL fails a node, a SIGTERM drains it) or Signal a
//     node; a node that ends does not end the run: Measure.Deaths says
//     when it ended and what became of its objects (promotions on the
//     survivors, from their /debug/authority; its drain report, from its
//     last-run.json).
//  5. Stop the fleet (cancel its context, Wait), then Stop the cluster
//     (SIGTERM, then SIGKILL after a timeout) exactly once, or Kill it.
//     Stopping nodes drain (live's drain.go) until they find each other
//     draining: allow a few seconds. On Unix the node processes run in a
//     process group of their own, so a terminal's Ctrl-C reaches only the
//     caller: it must catch SIGINT (and SIGHUP) and Stop the cluster, or
//     the nodes outlive it.
//
// Nothing here prints: figures are returned as data for the caller to
// present.
package localcluster

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
)

// ErrConfig reports a Config Start cannot run.
var ErrConfig = errors.New("localcluster: bad configuration")

// Config describes a local cluster: one player node per city (node IDs
// 1..len(Cities), game slots 1..len(Cities)) and, under the directory
// architecture, a rendezvous node (ID len(Cities)+1, game slot 0).
type Config struct {
	// Command runs one node: the engine starts Command[0] with the
	// arguments Command[1:], "--config", FILE (for the overworld binary:
	// {path, "node"}). Required.
	Command []string
	// Env is added to the node processes' environment, which is this
	// process's.
	Env []string
	// Dir receives the CA (ca/), the coordinator key (coord/), each
	// node's certificate (nodeID.pem), configuration (nodeID.toml), log
	// (nodeID.log) and data directory (dataID). Required; it must exist.
	Dir string
	// Cities places the player nodes: node i+1 in Cities[i] (WonderNetwork
	// city names, as geo.WonderNetwork lists them). At least one.
	Cities []string
	// Arch is the discovery architecture: directory, broadcast or colyseus.
	Arch string
	// RendezvousCity is the directory's rendezvous node's city.
	RendezvousCity string
	// EmulateLatency delays every packet between two nodes by the one-way
	// latency between their cities (live.Latency).
	EmulateLatency bool
	// Net is the WAN conditions beyond latency every node emulates on
	// what it sends (live.DaemonConfig's emulate_* fields; the zero
	// Network: none).
	Net geo.Network
	// Map, PlayersPerNode and Seed are the game (live.GameConfig) every
	// node runs, over len(Cities) game nodes.
	Map            string
	PlayersPerNode int
	Seed           uint64
	// FrameRate is every node's frames per second (0.1 to 1000).
	FrameRate float64
	// LogLevel is the nodes' log level (debug, info, warn or error).
	LogLevel string
	// Players makes each player node listen for players on QUIC, with
	// its cluster certificate, and on WebSocket (which also serves the
	// browser game), with tokens signed by a fresh coordinator key, and
	// spawn only its items: the bots join as clients
	// (StartFleet). Otherwise each node spawns its AI bots, as the
	// simulator does.
	Players bool
	// NoFailover turns the nodes' warm backups and failover off
	// (live.DaemonConfig.Failover; on by default).
	NoFailover bool
	// DrainTimeout is the nodes' drain_timeout (0: the daemon's default,
	// live.DefaultDrainTimeout; negative: no drain).
	DrainTimeout time.Duration
	// Prefetch, if set, is the nodes' discovery.prefetch (m); unset, the
	// architecture's default (live.DiscoveryConfig.PrefetchM).
	Prefetch *float64
	// PushMutual and FetchAhead, if set, are the nodes'
	// discovery.push_mutual and discovery.fetch_ahead; unset, the
	// architecture's defaults (live.DiscoveryConfig.Fetching).
	PushMutual *bool
	FetchAhead *time.Duration
	// Phases, if set, gives nodes a frame phase: node id runs its frames
	// at the shared epoch + Phases[id] + k/FrameRate
	// (live.DaemonConfig.FramePhase), as the simulator's node id does
	// (sim.Sim.Phase) when the live run is to be compared with a
	// simulated one. A node not listed runs its frames from its start.
	Phases map[wire.NodeID]time.Duration
}

// validate checks the Config's own fields; each node's configuration is
// then checked by live.DaemonConfig.Validate.
func (cfg Config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case len(cfg.Command) == 0 || cfg.Command[0] == "":
		return bad("no command to run a node")
	case cfg.Dir == "":
		return bad("no directory")
	case len(cfg.Cities) == 0:
		return bad("no cities: want one per player node")
	case cfg.Arch != "directory" && cfg.Arch != "broadcast" && cfg.Arch != "colyseus":
		return bad("arch %q: want directory, broadcast or colyseus", cfg.Arch)
	case cfg.PlayersPerNode < 1:
		return bad("%d players per node: want at least 1", cfg.PlayersPerNode)
	case !(cfg.FrameRate > 0):
		return bad("frame rate %v: want > 0", cfg.FrameRate)
	case cfg.DrainTimeout > 10*time.Minute:
		return bad("drain timeout %v: want at most 10m", cfg.DrainTimeout)
	}
	for id, p := range cfg.Phases {
		if period := time.Duration(float64(time.Second) / cfg.FrameRate); p < 0 || p >= period {
			return bad("node %d's frame phase %v: want 0 to under the frame period %v", id, p, period)
		}
	}
	if st, err := os.Stat(cfg.Dir); err != nil || !st.IsDir() {
		return bad("directory %q does not exist", cfg.Dir)
	}
	return nil
}

// Cluster is a running set of node processes. Its methods may be called
// from several goroutines, except Stop and Kill.
type Cluster struct {
	cfg    Config
	ids    []wire.NodeID
	cities []string
	admin  []string
	infra  wire.NodeID // 0 unless directory
	epoch  time.Time
	procs  []*exec.Cmd
	done   []chan struct{}
	exits  []exitInfo // written before done[i] closes
	logs   []*os.File
	client *http.Client

	// With Players: the player nodes' QUIC player endpoints, the
	// coordinator key signing the bots' tokens, the cluster CA.
	playerAddrs []string
	playerWS    []string // the player nodes' WebSocket endpoints (host:port)
	key         ed25519.PrivateKey
	ca          *pki.CA
}

// exitInfo is how and when a node process ended.
type exitInfo struct {
	at    time.Time
	state string
}

// logTail returns the last n non-empty lines of the log at path, each on
// a line of its own after ": " (empty if it cannot be read or is empty):
// why a node that exited during start-up did, as the error says it.
func logTail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return ": " + strings.Join(lines[max(0, len(lines)-n):], "\n  ")
}

// freeAddrs hands out free 127.0.0.1 ports for udp or tcp, none twice:
// the system may hand a released port out again, and two endpoints of
// one cluster on one port would keep the second process from starting.
type freeAddrs map[string]bool

// next returns a free port for network that this cluster has not been
// given yet.
func (f freeAddrs) next(network string) (string, error) {
	for range 64 {
		a, err := freeAddr(network)
		if err != nil {
			return "", err
		}
		if k := network + " " + a; !f[k] {
			f[k] = true
			return a, nil
		}
	}
	return "", fmt.Errorf("localcluster: no %s port on 127.0.0.1 that this cluster has not taken", network)
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

// Start writes a CA, certificates and configurations into cfg.Dir and
// starts the node processes. The nodes' shared epoch (their clock's zero)
// is the time Start began. A bad Config, or one that makes a node's
// configuration invalid (live.DaemonConfig.Validate), is an ErrConfig,
// before anything is written.
func Start(cfg Config) (*Cluster, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	dir := cfg.Dir
	nodes := len(cfg.Cities)
	c := &Cluster{cfg: cfg, epoch: time.Now(), client: &http.Client{Timeout: 5 * time.Second}}
	c.cities = append([]string(nil), cfg.Cities...)
	total := nodes
	if cfg.Arch == "directory" {
		total++
		c.infra = wire.NodeID(total)
		c.cities = append(c.cities, cfg.RendezvousCity)
	}
	// Every node's ports and configuration first, all validated.
	nodeAddrs := make([]string, total)
	ports := freeAddrs{}
	for i := range total {
		c.ids = append(c.ids, wire.NodeID(i+1))
		var err error
		if nodeAddrs[i], err = ports.next("udp"); err != nil {
			return nil, err
		}
		a, err := ports.next("tcp")
		if err != nil {
			return nil, err
		}
		c.admin = append(c.admin, a)
	}
	// The player nodes' QUIC player endpoints, which every peer's list
	// names (where a node redirects the players it hands off).
	playerAddr, wsAddr := map[wire.NodeID]string{}, map[wire.NodeID]string{}
	if cfg.Players {
		for _, id := range c.ids {
			if id == c.infra {
				continue
			}
			a, err := ports.next("udp")
			if err != nil {
				return nil, err
			}
			playerAddr[id] = a
			c.playerAddrs = append(c.playerAddrs, a)
			if wsAddr[id], err = ports.next("tcp"); err != nil {
				return nil, err
			}
			c.playerWS = append(c.playerWS, wsAddr[id])
		}
	}
	confs := make([][]byte, total)
	for i, id := range c.ids {
		dc := live.DefaultDaemonConfig()
		dc.ID = uint32(id)
		dc.DataDir = fmt.Sprintf("data%d", id)
		dc.FrameRate = cfg.FrameRate
		dc.Epoch = c.epoch.UTC().Format(time.RFC3339Nano)
		if p, ok := cfg.Phases[id]; ok {
			dc.FramePhase = &live.Duration{Duration: p}
		}
		dc.City = c.cities[i]
		dc.EmulateLatency = cfg.EmulateLatency
		dc.EmulateLoss, dc.EmulateJitter, dc.EmulateDuplicate, dc.EmulateReorder =
			cfg.Net.Loss, live.Duration{Duration: cfg.Net.Jitter}, cfg.Net.Duplicate, cfg.Net.Reorder
		dc.LogLevel = cfg.LogLevel
		dc.Failover = !cfg.NoFailover
		switch {
		case cfg.DrainTimeout > 0:
			dc.DrainTimeout = live.Duration{Duration: cfg.DrainTimeout}
		case cfg.DrainTimeout < 0:
			dc.DrainTimeout = live.Duration{}
		}
		dc.Listen = live.ListenConfig{Node: nodeAddrs[i], Admin: c.admin[i]}
		dc.TLS = live.TLSConfig{CACert: "ca/" + pki.CACertFile, NodeCert: fmt.Sprintf("node%d.pem", id)}
		dc.Discovery = live.DiscoveryConfig{Arch: cfg.Arch, Rendezvous: uint32(c.infra), Prefetch: cfg.Prefetch, PushMutual: cfg.PushMutual}
		if cfg.FetchAhead != nil {
			dc.Discovery.FetchAhead = &live.Duration{Duration: *cfg.FetchAhead}
		}
		if cfg.Arch != "directory" {
			dc.Discovery.Rendezvous = dc.ID
		}
		dc.Game = live.GameConfig{Map: cfg.Map, Nodes: nodes, PlayersPerNode: cfg.PlayersPerNode, Seed: cfg.Seed, Slot: int(id), AIBots: !cfg.Players}
		if id == c.infra {
			dc.Game.Slot = 0
		} else if cfg.Players {
			dc.Listen.PlayerQUIC, dc.Listen.PlayerWS = playerAddr[id], wsAddr[id]
			dc.Players = live.PlayersConfig{CoordinatorKey: filepath.Join("coord", player.PublicKeyFile),
				MaxPlayers: max(64, nodes*cfg.PlayersPerNode)}
		}
		for j, pid := range c.ids {
			if pid != id {
				pc := live.PeerConfig{ID: uint32(pid), Addr: nodeAddrs[j], City: c.cities[j], PlayerQUIC: playerAddr[pid]}
				if a := wsAddr[pid]; a != "" {
					pc.PlayerWS = "ws://" + a + "/"
				}
				dc.Peers = append(dc.Peers, pc)
			}
		}
		if _, err := dc.Validate(); err != nil {
			return nil, fmt.Errorf("%w: node %d: %w", ErrConfig, id, err)
		}
		b, err := dc.Encode()
		if err != nil {
			return nil, err
		}
		confs[i] = b
	}
	// Then the files: the CA, the coordinator key, the node
	// certificates and configurations.
	ca, err := pki.InitCA(filepath.Join(dir, "ca"), "overworld local cluster CA", time.Now(), 30*24*time.Hour)
	if err != nil {
		return nil, err
	}
	c.ca = ca
	if cfg.Players {
		if _, err := player.InitKeys(filepath.Join(dir, "coord"), nil); err != nil {
			return nil, err
		}
		if c.key, err = player.LoadPrivateKey(filepath.Join(dir, "coord")); err != nil {
			return nil, err
		}
	}
	for i, id := range c.ids {
		data, err := ca.Issue(id, time.Now(), 7*24*time.Hour)
		if err != nil {
			return nil, err
		}
		if err := pki.WriteNodeFile(filepath.Join(dir, fmt.Sprintf("node%d.pem", id)), data); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("node%d.toml", id)), confs[i], 0o644); err != nil {
			return nil, err
		}
	}
	c.exits = make([]exitInfo, len(c.ids))
	for i, id := range c.ids {
		logf, err := os.Create(filepath.Join(dir, fmt.Sprintf("node%d.log", id)))
		if err != nil {
			c.Kill()
			return nil, err
		}
		args := append(append([]string(nil), cfg.Command[1:]...), "--config", filepath.Join(dir, fmt.Sprintf("node%d.toml", id)))
		cmd := exec.Command(cfg.Command[0], args...)
		cmd.Stdout, cmd.Stderr = logf, logf
		cmd.Env = append(os.Environ(), cfg.Env...)
		cmd.SysProcAttr = procAttr()
		if err := cmd.Start(); err != nil {
			logf.Close()
			c.Kill()
			return nil, err
		}
		done := make(chan struct{})
		go func() {
			err := cmd.Wait()
			c.exits[i] = exitInfo{at: time.Now(), state: "exit status 0"}
			if err != nil {
				c.exits[i].state = err.Error()
			}
			close(done)
		}()
		c.procs, c.done, c.logs = append(c.procs, cmd), append(c.done, done), append(c.logs, logf)
	}
	return c, nil
}

// IDs returns the node IDs, the player nodes first, then the rendezvous
// (if any). Every per-node index of the Cluster's methods is an index of
// this list.
func (c *Cluster) IDs() []wire.NodeID { return append([]wire.NodeID(nil), c.ids...) }

// Cities returns each node's city, in the order of IDs.
func (c *Cluster) Cities() []string { return append([]string(nil), c.cities...) }

// Rendezvous returns the directory's rendezvous node (0: none).
func (c *Cluster) Rendezvous() wire.NodeID { return c.infra }

// Epoch returns the nodes' shared clock zero.
func (c *Cluster) Epoch() time.Time { return c.epoch }

// Frame returns the nodes' frame period.
func (c *Cluster) Frame() time.Duration { return time.Duration(float64(time.Second) / c.cfg.FrameRate) }

// LogFile returns the path of node i's log (its stdout and stderr).
func (c *Cluster) LogFile(i int) string {
	return filepath.Join(c.cfg.Dir, fmt.Sprintf("node%d.log", c.ids[i]))
}

// Done returns a channel closed when node process i has exited.
func (c *Cluster) Done(i int) <-chan struct{} { return c.done[i] }

// Exited returns when node process i ended, as this process saw it, and
// how ("exit status 0", "signal: killed"); ok is false while it runs.
func (c *Cluster) Exited(i int) (at time.Time, how string, ok bool) {
	if c.Alive(i) {
		return time.Time{}, "", false
	}
	return c.exits[i].at, c.exits[i].state, true
}

// DataDir returns node i's data directory (its incarnation counter and
// last-run.json).
func (c *Cluster) DataDir(i int) string {
	return filepath.Join(c.cfg.Dir, fmt.Sprintf("data%d", c.ids[i]))
}

// LastRun reads the summary node i writes to its data directory when it
// stops (last-run.json): its incarnation and its drain report.
func (c *Cluster) LastRun(i int) (LastRun, error) {
	var r LastRun
	b, err := os.ReadFile(filepath.Join(c.DataDir(i), "last-run.json"))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("localcluster: node %d: last-run.json: %w", c.ids[i], err)
	}
	return r, nil
}

// LastRun is the part of a node's last-run.json the engine reads.
type LastRun struct {
	Incarnation uint16           `json:"incarnation"`
	Frames      int64            `json:"frames"`
	Drain       live.DrainReport `json:"drain"`
	// PlayersHandedOff: the players the node handed to peers as it
	// drained (redirected, their avatars migrated).
	PlayersHandedOff int `json:"players_handed_off"`
}

// Authority fetches node i's /debug/authority: its incarnation, its
// authority events (migrations, promotions, deaths) and counts.
func (c *Cluster) Authority(i int) (*live.AuthorityLog, error) {
	resp, err := c.client.Get("http://" + c.admin[i] + "/debug/authority")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("localcluster: node %d: /debug/authority: %s", c.ids[i], resp.Status)
	}
	var a live.AuthorityLog
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return nil, fmt.Errorf("localcluster: node %d: /debug/authority: %w", c.ids[i], err)
	}
	return &a, nil
}

// Alive reports whether node process i is still running.
func (c *Cluster) Alive(i int) bool {
	select {
	case <-c.done[i]:
		return false
	default:
		return true
	}
}

// WaitReady waits until every node answers /readyz with 200, or fails
// when a node exits or timeout passes.
func (c *Cluster) WaitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i := range c.ids {
		for {
			if !c.Alive(i) {
				return fmt.Errorf("localcluster: node %d exited during start-up (see %s)%s", c.ids[i], c.logs[i].Name(), logTail(c.logs[i].Name(), 3))
			}
			resp, err := c.client.Get("http://" + c.admin[i] + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("localcluster: node %d not ready after %v", c.ids[i], timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Metrics scrapes node i's /metrics: "name{labels}" → value (see
// ParseMetrics).
func (c *Cluster) Metrics(i int) (map[string]float64, error) {
	resp, err := c.client.Get("http://" + c.admin[i] + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return ParseMetrics(resp.Body)
}

// Worlds fetches every running node's /debug/world concurrently (each
// answers at its next frame, so the snapshots are at most a frame apart).
// A node that has exited, or failed to answer, has a nil snapshot; the
// failures are joined in the error.
func (c *Cluster) Worlds() ([]*live.WorldSnapshot, error) { return c.WorldsAfter(nil) }

// WorldsAfter is Worlds, asking node i for the snapshot of its first frame
// after node time after[i] (ns; after[i] < 0 or a nil after: its next
// frame), which it answers at once when it has kept one: a sampler that
// passes the times of the snapshots it last got sees every frame of every
// node, however its requests fall against the nodes' frames.
func (c *Cluster) WorldsAfter(after []int64) ([]*live.WorldSnapshot, error) {
	if after != nil && len(after) != len(c.ids) {
		return nil, fmt.Errorf("%w: %d snapshot times for %d nodes", ErrConfig, len(after), len(c.ids))
	}
	out := make([]*live.WorldSnapshot, len(c.ids))
	errs := make([]error, len(c.ids))
	var wg sync.WaitGroup
	for i := range c.ids {
		if !c.Alive(i) {
			continue
		}
		wg.Go(func() {
			url := "http://" + c.admin[i] + "/debug/world"
			if after != nil && after[i] >= 0 {
				url += "?after=" + strconv.FormatInt(after[i], 10)
			}
			resp, err := c.client.Get(url)
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

// Signal sends sig to node process i (syscall.SIGKILL to fail it,
// syscall.SIGTERM to stop it gracefully).
func (c *Cluster) Signal(i int, sig os.Signal) error { return c.procs[i].Process.Signal(sig) }

// Stop sends SIGTERM to every running node and waits up to timeout, then
// kills the rest; it returns the nodes that had to be killed, and closes
// the logs.
func (c *Cluster) Stop(timeout time.Duration) []wire.NodeID {
	for i := range c.procs {
		if c.Alive(i) {
			c.Signal(i, syscall.SIGTERM)
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

// Kill kills every node process at once, waits for them and closes the
// logs.
func (c *Cluster) Kill() {
	for i, p := range c.procs {
		p.Process.Kill()
		<-c.done[i]
	}
	for _, f := range c.logs {
		f.Close()
	}
}
