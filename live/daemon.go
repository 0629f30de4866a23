package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Game is the game a daemon runs, injected by its caller (live imports no
// game): the registry every node of the cluster shares, this node's initial
// objects, and its world as discovery's presets see it.
type Game struct {
	Registry *world.Registry
	// Spawn creates this node's initial objects (may be nil).
	Spawn func(now time.Duration, n *node.Node) error
	// Discovery is what the discovery presets need to know of the game's
	// world (discovery.Space: the directory's margin and jump distance
	// derive from it; the colyseus architecture needs all of it).
	Discovery discovery.Space
	// Players plugs the game into the player endpoints (required when the
	// configuration listens for players; may be nil otherwise).
	Players player.Controller
	// Scene is the game's static world as JSON for the browser game
	// (/play/scene.json: the arena's walls); nil: none.
	Scene []byte
}

// NewLogger returns the structured logger a configuration asks for,
// writing to w.
func NewLogger(c DaemonConfig, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(c.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)).With("node", c.ID)
	}
	return slog.New(slog.NewTextHandler(w, opts)).With("node", c.ID)
}

// Daemon is one live node process: certificates, QUIC network, mesh,
// node core, driver, metrics and admin endpoint. Build it with NewDaemon
// (which opens the sockets), add hooks, and Run it once.
type Daemon struct {
	cfg      DaemonConfig
	log      *slog.Logger
	counters *Counters
	metrics  *Metrics
	net      *QUICNetwork
	mesh     *Mesh
	node     *node.Node
	driver   *Driver
	adminLn  net.Listener
	admin    *http.Server
	players  *playerEndpoint // nil without a player endpoint
	alog     *authorityLog
	inc      uint16
	incFrom  string   // where the incarnation came from
	drain    *drainer // while the node drains (the driver's goroutine only)
	ident    *pki.Identity
	members  *Members
	adminKey []byte // the admin endpoint's bearer secret (nil: none)
	refusals refusalCounts
	revoked  atomic.Pointer[pki.Revocations]

	placed    placedState      // the players and pings the control plane reads here
	lastFrame atomic.Int64     // wall-clock UnixNano of the latest frame
	snapReq   chan chan []byte // /debug/world requests, answered by a frame hook
	snaps     snapHistory      // the latest frames' snapshots, while a sampler asks with after=

	agones     *agones.Agent // nil unless agones.enabled (agonesnode.go)
	agonesStop context.CancelFunc
	peers      *PeerSet               // the static peers and those gossip found (peerset.go)
	gossip     atomic.Pointer[gossip] // set by Run with membership.gossip (gossip.go)
	follow     *peerFollower          // the discovery's members follow the peer set (follow.go)
}

// DaemonRedial bounds the backoff between a daemon's dials to a lost peer.
const DaemonRedial = time.Second

// NewDaemon validates cfg, loads the CA and the node's certificate (which
// must name cfg.ID), takes the node's incarnation (NextIncarnation in
// data_dir; without a data directory ClockIncarnation, waiting up to a
// second for it to be safe), builds the node core with the game (with
// failover unless the configuration turns it off), spawns its initial
// objects, and opens the node and admin sockets.
func NewDaemon(cfg DaemonConfig, game Game, log *slog.Logger) (*Daemon, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	if game.Registry == nil {
		return nil, fmt.Errorf("%w: no game registry", ErrConfig)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ca, err := pki.LoadCAFiles(cfg.TLS.CACert, "", false)
	if err != nil {
		return nil, fmt.Errorf("tls.ca_cert: %w", err)
	}
	ident, err := pki.LoadNode(cfg.TLS.NodeCert, ca)
	if err != nil {
		return nil, fmt.Errorf("tls.node_cert: %w", err)
	}
	self := wire.NodeID(cfg.ID)
	if ident.ID != self {
		return nil, fmt.Errorf("%w: tls.node_cert names node %d but id is %d", ErrConfig, ident.ID, cfg.ID)
	}
	if now := time.Now(); now.After(ident.Leaf.NotAfter) {
		return nil, fmt.Errorf("%w: this node's certificate expired at %s", ErrConfig, ident.Leaf.NotAfter.Format(time.RFC3339))
	}
	d := &Daemon{cfg: cfg, log: log, counters: new(Counters), snapReq: make(chan chan []byte, 64)}
	if cfg.Agones.Enabled {
		if d.agones, err = newAgonesAgent(d); err != nil {
			return nil, fmt.Errorf("%w: agones: %w", ErrConfig, err)
		}
	}
	if cfg.DataDir != "" {
		if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("data_dir: %w", err)
		}
		if d.inc, err = NextIncarnation(cfg.DataDir); err != nil {
			return nil, err
		}
		d.incFrom = filepath.Join(cfg.DataDir, IncarnationFile)
	} else {
		var ready time.Time
		d.inc, ready = ClockIncarnation(time.Now())
		d.incFrom = "wall clock"
		time.Sleep(time.Until(ready))
	}
	d.metrics = NewMetrics(d.counters)
	d.ident = ident
	d.members = NewMembers(cfg.Members()...)
	ident.Admit = d.members.Admitted
	if cfg.TLS.Revoked != "" {
		rv, err := pki.LoadRevocations(cfg.TLS.Revoked)
		if err != nil {
			return nil, fmt.Errorf("tls.revoked: %w", err)
		}
		ident.SetRevocations(rv)
		d.revoked.Store(rv)
	}
	if cfg.Listen.AdminTokenFile != "" {
		b, err := os.ReadFile(cfg.Listen.AdminTokenFile)
		if err != nil {
			return nil, fmt.Errorf("listen.admin_token_file: %w", err)
		}
		if d.adminKey = bytes.TrimSpace(b); len(d.adminKey) < 16 {
			return nil, fmt.Errorf("%w: listen.admin_token_file %s: the secret has %d bytes, want at least 16", ErrConfig, cfg.Listen.AdminTokenFile, len(d.adminKey))
		}
	}
	ident.OnRefuse = func(err error) {
		d.counters.Refused.Add(1)
		d.refusals.count(err)
		log.Warn("peer refused in the TLS handshake", "err", err)
	}

	var epoch time.Time
	if cfg.Epoch != "" {
		epoch, _ = time.Parse(time.RFC3339Nano, cfg.Epoch)
	}
	spawnAt := time.Duration(0)
	if !epoch.IsZero() {
		spawnAt = max(0, time.Since(epoch))
	}
	disc, err := discovery.New(discovery.Config{Arch: discovery.Arch(cfg.Discovery.Arch), Self: self, Members: cfg.Members(),
		Infra: wire.NodeID(cfg.Discovery.Rendezvous), Space: game.Discovery, Seed: cfg.Game.Seed, Start: spawnAt,
		Prefetch: cfg.Discovery.PrefetchM(), Joins: cfg.JoinsRing()})
	if err != nil {
		return nil, fmt.Errorf("%w: discovery.arch %s: %w", ErrConfig, cfg.Discovery.Arch, err)
	}
	d.alog = newAuthorityLog(self, d.inc, cfg.Failover, log)
	d.peers = NewPeerSet(self, cfg.Peers)
	rc := node.ReplicaConfig{Failover: cfg.Failover, OnEvent: d.alog.event, Peers: d.peers.IDs}
	if cfg.EmulateLatency {
		if rc.Delay, err = Delays(cfg.Cities()); err != nil {
			return nil, err
		}
	}
	fetching := cfg.Discovery.Fetching()
	pf := fetching.Prefetch
	d.node, err = node.New(node.Config{ID: self, Registry: game.Registry, Discovery: disc, Incarnation: d.inc, Replica: rc,
		Rand: rand.New(rand.NewPCG(cfg.Game.Seed, 0x6e6f6465^uint64(self))), Prefetch: world.Point{pf, pf},
		PushMutual: fetching.PushMutual, FetchAhead: fetching.FetchAhead})
	if err != nil {
		return nil, err
	}
	if game.Spawn != nil {
		if err := game.Spawn(spawnAt, d.node); err != nil {
			return nil, fmt.Errorf("spawning the game's objects: %w", err)
		}
	}

	// Redial a lost peer at least once a second: after a partition heals
	// the nodes find each other again within about a second.
	mc := MeshConfig{Self: self, Peers: cfg.PeerMap(), QueueLen: cfg.QueueLen, Logger: log, Counters: d.counters,
		Net: cfg.Net(), NetSeed: cfg.Game.Seed ^ uint64(d.inc)<<32, MaxBackoff: DaemonRedial}
	if cfg.EmulateLatency {
		if mc.Delay, err = Latency(self, cfg.Cities()); err != nil {
			return nil, err
		}
	}
	if d.net, err = ListenQUIC(cfg.Listen.Node, ident); err != nil {
		return nil, fmt.Errorf("listen.node: %w", err)
	}
	if d.mesh, err = NewMesh(mc, d.net); err != nil {
		d.net.Close()
		return nil, err
	}
	// A peer that joins is admitted in the handshakes and reachable; one
	// that leaves is no longer admitted, and its connections are closed.
	d.peers.OnChange(func(ch PeerChange) {
		if ch.Gone {
			d.members.Remove(ch.Peer.ID)
			d.Revalidate()
			return
		}
		d.members.Add(ch.Peer.ID)
		d.mesh.SetPeer(ch.Peer.ID, ch.Peer.Addr)
	})
	var phase time.Duration
	if cfg.FramePhase != nil {
		phase = cfg.FramePhase.Duration
	}
	d.driver, err = NewDriver(DriverConfig{Node: d.node, Transport: d.mesh, Frame: cfg.FramePeriod(), Epoch: epoch,
		Aligned: cfg.FramePhase != nil, Phase: phase,
		Logger: log, Counters: d.counters, FrameTime: func(t time.Duration) {
			d.metrics.ObserveFrame(t)
			d.lastFrame.Store(time.Now().UnixNano())
		}, Inspect: func(now time.Duration, p wire.Packet) {
			if d.drain != nil {
				d.drain.inspect(now, p)
			}
		}})
	if err != nil {
		d.net.Close()
		return nil, err
	}
	d.follow = &peerFollower{self: self, peers: d.peers, disc: disc, log: log, connected: d.mesh.Connected}
	d.driver.AddHook(d.follow)
	d.driver.AddHook(d.metrics.Hook())
	d.driver.AddHook(d.alog)
	d.metrics.Registry.MustRegister(d.alog)
	d.driver.AddHook(FrameHookFunc(d.snapshotWorld))
	d.placed.regions = make(chan regionReq, 16)
	d.driver.AddHook(FrameHookFunc(d.migrateRegion))
	if cfg.Listen.PlayerQUIC != "" || cfg.Listen.PlayerWS != "" {
		plog := func(format string, args ...any) { log.Debug(fmt.Sprintf(format, args...)) }
		if d.players, err = newPlayerEndpoint(cfg, game.Players, ident, plog); err != nil {
			d.net.Close()
			return nil, err
		}
		gw := d.players.gw
		d.driver.AddHook(gw)
		d.driver.AddHook(FrameHookFunc(func(time.Duration, *node.Node) { d.metrics.SetPlayers(int(gw.Stats().Players)) }))
		d.metrics.Registry.MustRegister(playerCollector{gw})
		d.servePlayPages(game)
		d.driver.AddHook(FrameHookFunc(d.placedHook))
	}
	guards := guardCollector{{"node", d.net.Guard()}}
	if d.players != nil && d.players.guard != nil {
		guards = append(guards, guardCollector{{"player", d.players.guard}}...)
	}
	d.metrics.Registry.MustRegister(guards, &d.refusals)
	if cfg.Listen.Admin != "" {
		if d.adminLn, err = net.Listen("tcp", cfg.Listen.Admin); err != nil {
			d.net.Close()
			if d.players != nil {
				d.players.shutdown(d.node)
			}
			return nil, fmt.Errorf("listen.admin: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", d.authorized(promhttp.HandlerFor(d.metrics.Registry, promhttp.HandlerOpts{}), false))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
		mux.HandleFunc("/readyz", d.readyz)
		mux.Handle("/debug/world", d.authorized(http.HandlerFunc(d.debugWorld), true))
		mux.Handle("/debug/authority", d.authorized(http.HandlerFunc(d.alog.serve), true))
		mux.Handle("/admin/handoff", d.authorized(http.HandlerFunc(d.serveHandOff), true))
		mux.Handle("/admin/players", d.authorized(http.HandlerFunc(d.servePlayers), true))
		mux.Handle("/admin/pings", d.authorized(http.HandlerFunc(d.servePings), true))
		mux.Handle("/admin/migrate-region", d.authorized(http.HandlerFunc(d.serveMigrateRegion), true))
		mux.Handle("/admin/prefer-backup", d.authorized(http.HandlerFunc(d.servePreferBackup), true))
		mux.Handle("/admin/instances", d.authorized(http.HandlerFunc(d.serveInstances), true))
		d.serveDashboard(mux, game)
		d.admin = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	}
	return d, nil
}

// AddHook registers a frame hook (the player gateway, for one).
func (d *Daemon) AddHook(h FrameHook) { d.driver.AddHook(h) }

// Metrics returns the daemon's metrics (the gateway sets the players gauge).
func (d *Daemon) Metrics() *Metrics { return d.metrics }

// Counters returns the transport and driver counters.
func (d *Daemon) Counters() *Counters { return d.counters }

// NodeAddr returns the node's bound UDP address.
func (d *Daemon) NodeAddr() net.Addr { return d.net.Addr() }

// AdminAddr returns the admin endpoint's bound address (nil without one).
func (d *Daemon) AdminAddr() net.Addr {
	if d.adminLn == nil {
		return nil
	}
	return d.adminLn.Addr()
}

// Ready reports whether the node runs frames (one within the last three
// periods) and is connected to the rendezvous (directory) or, with peers
// (static or gossiped), to at least one of them (broadcast, colyseus),
// and, under colyseus, is a member of the ring.
func (d *Daemon) Ready() (bool, string) {
	last := d.lastFrame.Load()
	if last == 0 || time.Since(time.Unix(0, last)) > 3*d.cfg.FramePeriod() {
		return false, "frames are not running"
	}
	switch {
	case d.cfg.Discovery.Arch == "directory" && d.cfg.Discovery.Rendezvous != d.cfg.ID:
		if !d.mesh.Connected(wire.NodeID(d.cfg.Discovery.Rendezvous)) {
			return false, fmt.Sprintf("not connected to the rendezvous (node %d)", d.cfg.Discovery.Rendezvous)
		}
	case d.cfg.Discovery.Arch != "directory" && len(d.peers.IDs()) > 0:
		if d.counters.Connected.Load() == 0 {
			return false, "connected to no peer"
		}
	}
	if d.cfg.Discovery.Arch == "colyseus" && !d.follow.inRing.Load() {
		return false, "not a member of the colyseus ring"
	}
	return true, "ready"
}

func (d *Daemon) readyz(w http.ResponseWriter, _ *http.Request) {
	ok, why := d.Ready()
	if !ok {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	io.WriteString(w, why+"\n")
}

// Incarnation returns the node's incarnation (node.Config.Incarnation)
// and where it came from: the counter file in data_dir, or "wall clock".
func (d *Daemon) Incarnation() (uint16, string) { return d.inc, d.incFrom }

// WorldSnapshot is what /debug/world serves: the node's view and local
// objects at its next frame after the request, for ground-truth measures
// across a cluster ("overworld cluster" fetches every node's at once and
// computes missing replicas from them).
type WorldSnapshot struct {
	Node    uint32         `json:"node"`
	NowNs   int64          `json:"now_ns"`
	View    [][2][]float64 `json:"view"`
	Objects []SnapObject   `json:"objects"`
}

// SnapObject is one local object in a WorldSnapshot: its location, and
// the version it holds with the primary's time of that version; its kind
// (the schema's name), its epoch as this node knows it, the node of its
// primary (this node, for a primary) and, for a primary with failover, the
// node that backs it up (0: none yet).
type SnapObject struct {
	ID         uint64    `json:"id"`
	Primary    bool      `json:"primary"`
	Loc        []float64 `json:"loc"`
	Version    uint64    `json:"version"`
	ProducedNs int64     `json:"produced_ns"`
	Kind       string    `json:"kind,omitempty"`
	Epoch      uint32    `json:"epoch,omitempty"`
	From       uint32    `json:"from,omitempty"`
	Backup     uint32    `json:"backup,omitempty"`
}

// finite replaces infinities (unbounded box sides) by ±math.MaxFloat64,
// which JSON can carry; it returns a copy.
func finite(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = max(-math.MaxFloat64, min(math.MaxFloat64, x))
	}
	return out
}

// SnapshotOf describes node core n at its frame of time now as
// /debug/world does: its view and every local object. It only reads n.
func SnapshotOf(n *node.Node, now time.Duration) WorldSnapshot {
	dims := n.Config().Registry.Space().Dims()
	snap := WorldSnapshot{Node: uint32(n.ID()), NowNs: int64(now)}
	for _, b := range n.View(nil) {
		snap.View = append(snap.View, [2][]float64{finite(b.Min[:dims]), finite(b.Max[:dims])})
	}
	for _, info := range n.Objects(nil) {
		loc := info.State.Location()
		o := SnapObject{ID: uint64(info.ID), Primary: info.Primary, Loc: finite(loc[:dims]),
			Version: info.Version, ProducedNs: int64(info.Produced), Kind: info.State.Schema().Name(), From: uint32(info.From)}
		o.Epoch, _ = n.Epoch(info.ID)
		if info.Primary {
			if b, ok := n.BackupOf(info.ID); ok {
				o.Backup = uint32(b)
			}
		}
		snap.Objects = append(snap.Objects, o)
	}
	return snap
}

func (d *Daemon) debugWorld(w http.ResponseWriter, r *http.Request) {
	if a := r.URL.Query().Get("after"); a != "" {
		after, err := strconv.ParseInt(a, 10, 64)
		if err != nil || after < 0 {
			http.Error(w, fmt.Sprintf("after=%q: want the node time of a snapshot, in nanoseconds (an integer ≥ 0)", a), http.StatusBadRequest)
			return
		}
		if b := d.snaps.after(after, time.Now()); b != nil {
			w.Header().Set("Content-Type", "application/json")
			w.Write(b)
			return
		}
	}
	reply := make(chan []byte, 1)
	select {
	case d.snapReq <- reply:
	default:
		http.Error(w, "too many snapshot requests", http.StatusServiceUnavailable)
		return
	}
	t := time.NewTimer(10*d.cfg.FramePeriod() + time.Second)
	defer t.Stop()
	select {
	case b := <-reply:
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	case <-t.C:
		http.Error(w, "frames are not running", http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
}

// snapshotWorld answers the pending /debug/world requests (a frame hook),
// and keeps the frame's snapshot while a sampler asks with after=.
func (d *Daemon) snapshotWorld(now time.Duration, n *node.Node) {
	var waiting []chan []byte
	for more := true; more; {
		select {
		case c := <-d.snapReq:
			waiting = append(waiting, c)
		default:
			more = false
		}
	}
	keep := d.snaps.sampled(time.Now())
	if len(waiting) == 0 && !keep {
		return
	}
	snap := SnapshotOf(n, now)
	b, err := json.Marshal(snap)
	if err != nil { // cannot happen: every float is finite
		d.log.Error("world snapshot", "err", err)
		b = []byte("{}")
	}
	if keep {
		d.snaps.add(int64(now), b)
	}
	for _, c := range waiting {
		c <- b
	}
}

// snapHistory keeps the world snapshots of a node's latest frames while a
// sampler reads them with /debug/world?after=T, so that a sampler whose
// request arrives a little after a frame still gets that frame's snapshot
// rather than the next one's: a sampler that asks after the time of the
// last snapshot it got sees every frame, however its requests fall
// against the node's frames (a request that finds no newer snapshot waits
// for the next frame, as one without after= does). It keeps snapshots
// only for snapKeep after the latest such request: a node nobody samples
// takes none.
type snapHistory struct {
	mu    sync.Mutex
	until time.Time // snapshots are kept until then
	ring  [snapRing]struct {
		at int64 // the frame's node time, ns
		b  []byte
	}
	next int // the ring slot the next snapshot goes to
}

const (
	snapRing = 4               // frames kept
	snapKeep = 2 * time.Second // how long after a request with after= they are kept
)

// after returns the oldest kept snapshot of a frame after node time t, or
// nil, and keeps snapshots for snapKeep from wall time now.
func (h *snapHistory) after(t int64, now time.Time) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until = now.Add(snapKeep)
	var best []byte
	bestAt := int64(math.MaxInt64)
	for _, s := range h.ring {
		if s.b != nil && s.at > t && s.at < bestAt {
			best, bestAt = s.b, s.at
		}
	}
	return best
}

// sampled reports whether a sampler asked with after= within snapKeep of
// now; when none has, it forgets what it kept.
func (h *snapHistory) sampled(now time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if now.Before(h.until) {
		return true
	}
	clear(h.ring[:])
	h.next = 0
	return false
}

// add keeps the snapshot b of the frame at node time at.
func (h *snapHistory) add(at int64, b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ring[h.next].at, h.ring[h.next].b = at, b
	h.next = (h.next + 1) % snapRing
}

// Run starts the admin endpoint, the mesh, the player endpoints and the
// frames, and runs until ctx is done. It then shuts down gracefully:
// the player gateway refuses new players and runs one last frame that
// tells every player the node is shutting down (an Error with
// CodeShutdown) and removes their avatars (the player connections get up
// to shutdown_grace to deliver it, meanwhile); the node drains, running
// frames while its primaries migrate to live peers for up to
// drain_timeout (see drain.go), and logs a drain report (primaries
// migrated and not); with membership gossip, a colyseus node leaves its
// ring (follow.go) and the node tells the others it leaves; frames stop; what is queued for peers is sent for up
// to shutdown_grace; the admin endpoint closes; and a summary is written
// to data_dir/last-run.json (with a data directory).
func (d *Daemon) Run(ctx context.Context) error {
	if d.admin != nil {
		go func() {
			if err := d.admin.Serve(d.adminLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				d.log.Error("admin endpoint failed", "err", err)
			}
		}()
	}
	d.mesh.Start()
	d.startAgones()
	if err := d.startGossip(ctx); err != nil {
		d.mesh.Close(context.Background())
		d.stopAgones()
		return err
	}
	if d.players != nil {
		d.players.start(d.log.Error)
		store := "memory (forgotten at a restart: no data_dir)"
		if d.players.nonces != nil {
			store = filepath.Join(d.cfg.DataDir, player.NonceFile)
		}
		d.log.Info("player endpoints open", "quic", addrString(d.PlayerQUICAddr()), "ws", addrString(d.PlayerWSAddr()),
			"wss", d.players.wsTLS, "max_players", d.cfg.Players.MaxPlayers, "world", d.cfg.Players.World, "replay_store", store)
	}
	d.log.Info("node running", "addr", d.net.Addr().String(), "admin", addrString(d.AdminAddr()),
		"peers", len(d.cfg.Peers), "discovery", d.cfg.Discovery.Arch, "frame", d.cfg.FramePeriod(),
		"emulate_latency", d.cfg.EmulateLatency, "city", d.cfg.City, "incarnation", d.inc, "incarnation_from", d.incFrom,
		"failover", d.cfg.Failover)
	err := d.driver.Run(ctx)
	if err != nil {
		d.log.Error("frames failed", "err", err)
	}
	d.log.Info("shutting down: the node stops taking players and drains")
	if d.agones != nil {
		d.agones.Draining()
	}
	var playersCut int64
	handed := 0
	playersDone := make(chan int64, 1)
	if d.players != nil {
		if err == nil && d.cfg.DrainTimeout.Duration > 0 {
			handed = d.handOffPlayers()
		}
		players := d.PlayerStats().Players
		// The last gateway frame deletes the avatars; their deletions go
		// out with the drain's frames. The connections close meanwhile.
		d.players.closeGateway(d.node)
		d.driver.flush()
		d.metrics.SetPlayers(0)
		go func() { playersDone <- d.players.wait() }()
		d.log.Info("player endpoints closing: players told the node is shutting down", "players", players)
	}
	var rep DrainReport
	if err == nil {
		rep = d.drainPrimaries()
	}
	d.alog.setDrain(rep)
	d.logDrain(rep)
	if g := d.gossip.Load(); g != nil {
		if err == nil {
			d.leaveRing()
		}
		g.leave(time.Second)
	}
	d.stopAgones()
	if d.players != nil {
		playersCut = <-playersDone
		d.log.Info("player endpoints closed", "connections_cut", playersCut)
	}
	gctx, cancel := context.WithTimeout(context.Background(), d.cfg.ShutdownGrace.Duration)
	lost := d.mesh.Close(gctx)
	cancel()
	if lost > 0 {
		d.log.Warn("packets still queued at shutdown were not sent", "packets", lost)
	}
	if d.admin != nil {
		sctx, cancel := context.WithTimeout(context.Background(), time.Second)
		d.admin.Shutdown(sctx)
		cancel()
	}
	c := d.counters
	if d.cfg.DataDir != "" {
		sum := map[string]any{"node": d.cfg.ID, "incarnation": d.inc, "stopped": time.Now().UTC().Format(time.RFC3339Nano),
			"frames": c.Frames.Load(), "drain": rep, "primaries_migrated": rep.Migrated, "primaries_lost": rep.Lost(),
			"packets_lost_on_close": lost, "queue_drops": c.QueueDrops.Load(), "malformed": c.Malformed.Load(),
			"handshake_refusals": c.Refused.Load(), "player_connections_cut": playersCut, "players_handed_off": handed}
		if b, jerr := json.MarshalIndent(sum, "", "  "); jerr == nil {
			if werr := os.WriteFile(filepath.Join(d.cfg.DataDir, "last-run.json"), append(b, '\n'), 0o644); werr != nil {
				d.log.Error("writing last-run.json", "err", werr)
			}
		}
	}
	d.log.Info("stopped", "frames", c.Frames.Load())
	return err
}

// drainPrimaries runs the drain's frames (drain.go) and returns its
// report: at once when there is nothing to drain or the drain is off.
func (d *Daemon) drainPrimaries() DrainReport {
	if len(d.node.Primaries(nil)) == 0 {
		return DrainReport{}
	}
	timeout := d.cfg.DrainTimeout.Duration
	dc := drainConfig{self: wire.NodeID(d.cfg.ID), connected: d.mesh.Connected, timeout: timeout, log: d.log}
	if timeout > 0 {
		dc.peers = append(dc.peers, d.peers.IDs()...)
	}
	if d.cfg.Discovery.Arch == "directory" && d.cfg.Discovery.Rendezvous != d.cfg.ID {
		dc.avoid = wire.NodeID(d.cfg.Discovery.Rendezvous)
	}
	if d.cfg.EmulateLatency {
		dc.delay, _ = Delays(d.cfg.Cities())
	}
	if timeout == 0 {
		dr := newDrainer(dc, nil)
		dr.Frame(d.node.Now(), d.node)
		dr.report.Reason = "drain_timeout is 0"
		return dr.report
	}
	return runDrain(d.driver, d.node, d.alog, dc, func(dr *drainer) { d.drain = dr })
}

// runDrain runs a drain's frames on drv (whose Run has returned) until
// the drain ends, and returns its report. set installs the drainer where
// drv's Inspect finds it (nil at the end).
func runDrain(drv *Driver, n *node.Node, alog *authorityLog, dc drainConfig, set func(*drainer)) DrainReport {
	ctx, cancel := context.WithTimeout(context.Background(), dc.timeout+time.Second)
	defer cancel()
	dr := newDrainer(dc, cancel)
	set(dr)
	alog.drainer = dr
	drv.AddHook(dr)
	drv.Run(ctx)
	set(nil)
	alog.drainer = nil
	if !dr.done {
		dr.finish(n, true)
	}
	return dr.report
}

// logDrain logs the drain report: info when every primary was migrated,
// a warning otherwise.
func (d *Daemon) logDrain(r DrainReport) {
	attrs := []any{"primaries", r.Primaries, "migrated", r.Migrated, "not_migrated", r.NotMigrated,
		"unconfirmed", r.Unconfirmed, "deleted", r.Deleted, "elapsed", time.Duration(r.ElapsedMs * float64(time.Millisecond)).Round(time.Millisecond),
		"by_target", r.ByTarget}
	if r.NotMigrated+r.Unconfirmed == 0 {
		d.log.Info("drain report: every primary migrated", attrs...)
		return
	}
	attrs = append(attrs, "backed_up", r.BackedUp, "lost", r.Lost(), "not_migrated_by_kind", r.NotMigratedByKind,
		"timed_out", r.TimedOut, "reason", r.Reason)
	d.log.Warn("drain report: primaries not migrated", attrs...)
}

func addrString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
