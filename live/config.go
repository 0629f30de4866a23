package live

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Duration is a time.Duration written as a string in TOML ("2s").
type Duration struct{ time.Duration }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	d.Duration = v
	return nil
}

// DaemonConfig is the configuration file of "overworld node" (TOML). Every
// field, its meaning and its default are in DefaultConfigTOML, which
// "overworld node --print-config" prints. Relative paths are relative to
// the configuration file's directory.
type DaemonConfig struct {
	ID        uint32  `toml:"id"`
	DataDir   string  `toml:"data_dir"`
	FrameRate float64 `toml:"frame_rate"`
	Epoch     string  `toml:"epoch"`
	// FramePhase, if set, runs the frames at epoch + FramePhase +
	// k/FrameRate (DriverConfig.Aligned): a node keeps the phase a
	// simulated run gave it. It needs Epoch and is under a frame.
	FramePhase     *Duration `toml:"frame_phase"`
	City           string    `toml:"city"`
	EmulateLatency bool      `toml:"emulate_latency"`
	// EmulateLoss, EmulateJitter, EmulateDuplicate and EmulateReorder add
	// a WAN's conditions beyond its latency to every packet this node
	// sends (geo.Network, as the simulator applies it; MeshConfig.Net).
	EmulateLoss      float64          `toml:"emulate_loss"`
	EmulateJitter    Duration         `toml:"emulate_jitter"`
	EmulateDuplicate float64          `toml:"emulate_duplicate"`
	EmulateReorder   float64          `toml:"emulate_reorder"`
	QueueLen         int              `toml:"queue_len"`
	ShutdownGrace    Duration         `toml:"shutdown_grace"`
	Failover         bool             `toml:"failover"`
	DrainTimeout     Duration         `toml:"drain_timeout"`
	LogLevel         string           `toml:"log_level"`
	LogFormat        string           `toml:"log_format"`
	Listen           ListenConfig     `toml:"listen"`
	TLS              TLSConfig        `toml:"tls"`
	Discovery        DiscoveryConfig  `toml:"discovery"`
	Players          PlayersConfig    `toml:"players"`
	Game             GameConfig       `toml:"game"`
	Agones           AgonesConfig     `toml:"agones"`
	Membership       MembershipConfig `toml:"membership"`
	Peers            []PeerConfig     `toml:"peers"`
}

// MembershipConfig turns on membership gossip (gossip.go): the peers
// beyond the static list are found at run time.
type MembershipConfig struct {
	Gossip     string   `toml:"gossip"`
	Advertise  string   `toml:"advertise"`
	Seeds      []string `toml:"seeds"`
	KeyFile    string   `toml:"key_file"`
	NodeAddr   string   `toml:"node_addr"`
	PlayerQUIC string   `toml:"player_quic"`
	PlayerWS   string   `toml:"player_ws"`
}

// AgonesConfig runs the node as an Agones game server (package
// live/agones): its lifecycle through the SDK sidecar's REST gateway.
type AgonesConfig struct {
	Enabled        bool     `toml:"enabled"`
	SDK            string   `toml:"sdk"`
	Region         string   `toml:"region"`
	Protect        string   `toml:"protect"`
	ReserveFor     Duration `toml:"reserve_for"`
	HealthEvery    Duration `toml:"health_every"`
	PlayersCounter string   `toml:"players_counter"`
}

// ListenConfig holds the listen addresses.
type ListenConfig struct {
	Node       string `toml:"node"`
	PlayerQUIC string `toml:"player_quic"`
	PlayerWS   string `toml:"player_ws"`
	Admin      string `toml:"admin"`
	// AdminTokenFile holds the bearer secret the admin endpoint's
	// /metrics, /debug/ and /admin/ paths require (empty: none; /debug/
	// and /admin/ then answer loopback clients only).
	AdminTokenFile string `toml:"admin_token_file"`
}

// TLSConfig names the cluster CA certificate and this node's file, the
// certificate revocation list, and the WebSocket endpoint's certificate.
type TLSConfig struct {
	CACert   string `toml:"ca_cert"`
	NodeCert string `toml:"node_cert"`
	// Revoked lists revoked node certificates (pki.LoadRevocations).
	Revoked string `toml:"revoked"`
	// PlayerCert and PlayerKey make the WebSocket endpoint wss:// (PEM
	// files); PlayerDevCert makes it wss:// with a self-signed
	// certificate generated at start.
	PlayerCert    string `toml:"player_cert"`
	PlayerKey     string `toml:"player_key"`
	PlayerDevCert bool   `toml:"player_dev_cert"`
}

// PlayersConfig configures the player endpoints (listen.player_quic,
// listen.player_ws).
type PlayersConfig struct {
	CoordinatorKey string   `toml:"coordinator_key"`
	MaxPlayers     int      `toml:"max_players"`
	World          string   `toml:"world"`
	MaxTokenTTL    Duration `toml:"max_token_ttl"`
	MaxUnauth      int      `toml:"max_unauth"`
	PerSource      int      `toml:"per_source"`
	JoinDeadline   Duration `toml:"join_deadline"`
	JWTKey         string   `toml:"jwt_key"`
	JWTIssuer      string   `toml:"jwt_issuer"`
}

// DiscoveryConfig chooses the discovery architecture.
type DiscoveryConfig struct {
	Arch       string `toml:"arch"`
	Rendezvous uint32 `toml:"rendezvous"`
	// Prefetch (m) widens, in x and y, the view this node fetches and
	// keeps replicas for (node.Config.Prefetch, discovery.Config.Prefetch);
	// absent, the architecture's default (Fetching).
	Prefetch *float64 `toml:"prefetch"`
	// PushMutual pushes this node's primaries to the nodes whose replicas
	// held here show they need them (node.Config.PushMutual); absent, the
	// architecture's default (Fetching).
	PushMutual *bool `toml:"push_mutual"`
	// FetchAhead fetches a discovered moving object once it is predicted
	// in the view this far ahead (node.Config.FetchAhead, 0 to 1 s);
	// absent, the architecture's default (Fetching).
	FetchAhead *Duration `toml:"fetch_ahead"`
}

// Fetching is how the node fetches replicas ahead of need: what the file
// sets, and the architecture's default (discovery.DefaultFetching) for
// what it does not, as the simulator's commands default.
func (c DiscoveryConfig) Fetching() discovery.Fetching {
	f := discovery.DefaultFetching(discovery.Arch(c.Arch))
	if c.Prefetch != nil {
		f.Prefetch = *c.Prefetch
	}
	if c.PushMutual != nil {
		f.PushMutual = *c.PushMutual
	}
	if c.FetchAhead != nil {
		f.FetchAhead = c.FetchAhead.Duration
	}
	return f
}

// PrefetchM is the prefetch the node runs with (Fetching().Prefetch).
func (c DiscoveryConfig) PrefetchM() float64 { return c.Fetching().Prefetch }

// GameConfig holds the game's options; the command line interprets them
// (package live runs any game it is given).
type GameConfig struct {
	Map            string `toml:"map"`
	Nodes          int    `toml:"nodes"`
	PlayersPerNode int    `toml:"players_per_node"`
	Seed           uint64 `toml:"seed"`
	Slot           int    `toml:"slot"`
	AIBots         bool   `toml:"ai_bots"`
}

// PeerConfig is one other node of the static peer list. PlayerQUIC and
// PlayerWS are its player endpoints as players reach them (host:port, and
// a ws:// or wss:// URL): where this node redirects a player it hands to
// that peer (empty: it hands none there).
type PeerConfig struct {
	ID         uint32 `toml:"id"`
	Addr       string `toml:"addr"`
	City       string `toml:"city"`
	PlayerQUIC string `toml:"player_quic"`
	PlayerWS   string `toml:"player_ws"`
}

// MaxNodeID is the largest node ID a daemon accepts (node.MaxID).
const MaxNodeID = node.MaxID

// DefaultDrainTimeout is drain_timeout's default: long enough for a
// migration that waits for an old backup's release (at most 2 s) and a
// retry.
const DefaultDrainTimeout = 5 * time.Second

// Net returns the network conditions the node emulates (EmulateLoss,
// EmulateJitter, EmulateDuplicate, EmulateReorder).
func (c DaemonConfig) Net() geo.Network {
	return geo.Network{Loss: c.EmulateLoss, Jitter: c.EmulateJitter.Duration, Duplicate: c.EmulateDuplicate, Reorder: c.EmulateReorder}
}

// DefaultConfigTOML is the default configuration with every field
// documented. Parsing it gives DefaultDaemonConfig.
const DefaultConfigTOML = `# overworld node configuration (TOML). Every field is shown with its default.
# Relative paths are relative to this file's directory.

# This node's ID (1 to 32767): unique in the cluster, and the ID its
# certificate names.
id = 1
# Directory for the node's files (created if missing): the incarnation
# counter (a file "incarnation", raised by one at every start) and
# last-run.json. Empty: no files; the incarnation then comes from the wall
# clock (seconds, in a cycle of about 18 hours: see the docs).
data_dir = "data"
# Frames per second the node runs (its game's think rate).
frame_rate = 10.0
# Wall-clock instant (RFC 3339) the node's clock counts from. Nodes of one
# cluster on one machine share it so that their times (and the replicas'
# staleness) compare; empty means when the process starts.
epoch = ""
# Run the frames at epoch + frame_phase + k/frame_rate: the node keeps a
# given phase (the simulator's for the same node, when a live run is
# compared with a simulated one). Needs epoch; under one frame. Unset:
# the frames run every 1/frame_rate from when the node starts.
# frame_phase = "0s"
# This node's WonderNetwork city (for latency emulation; see geo).
city = ""
# Delay every packet to a peer by the one-way latency between this node's
# city and the peer's (half the measured RTT, the simulator's table), so a
# loopback cluster behaves like a WAN. Needs city here and on every peer.
emulate_latency = false
# WAN conditions beyond latency, on every packet this node sends (the
# simulator's --net wan is loss 0.01, jitter 10ms, duplicate 0.001):
# probability of loss, mean of an exponential extra delay, probability of
# sending a packet twice, and probability of holding it back up to 50ms.
# Under jitter or holding back, a peer's packets leave in the order they
# are due: a held packet is overtaken by later ones, as in the simulator.
emulate_loss = 0.0
emulate_jitter = "0s"
emulate_duplicate = 0.0
emulate_reorder = 0.0
# Bound of each peer's send queue (packets). When it is full, an update
# replaces the oldest queued update and the drop is counted.
queue_len = 256
# On SIGTERM: how long to keep sending what is queued before exiting.
shutdown_grace = "2s"
# Warm backups and failover: each primary keeps a backup copy on another
# node, and when the nodes' failure detectors (a majority of the cluster
# agreeing) declare a node dead, the backups of its primaries take over.
# false: a node that dies loses its primaries.
failover = true
# On SIGTERM: how long this node keeps running frames while its primaries
# migrate to live peers (the drain), before it exits anyway. "0s": no drain
# (with failover, the backups take the primaries over once this node is
# declared dead).
drain_timeout = "5s"
# Log level (debug, info, warn, error) and format (text, json) on stderr.
log_level = "info"
log_format = "text"

# Where the node listens.
[listen]
# Node-to-node QUIC (UDP) address.
node = "127.0.0.1:7100"
# Player endpoints: QUIC and WebSocket (ws://, or wss:// with
# tls.player_cert or tls.player_dev_cert). Empty: no player endpoint.
# Either needs [players] coordinator_key. The QUIC endpoint presents this
# node's certificate (tls.node_cert): players verify it with the cluster CA
# and the name node-ID.overworld.
player_quic = ""
player_ws = ""
# Admin HTTP address: /metrics (Prometheus), /healthz, /readyz, /debug/world,
# /debug/authority, and POST /admin/handoff?player=P&node=N. Empty: none.
admin = "127.0.0.1:7180"
# A file holding a secret (one line, at least 16 bytes): when set,
# /metrics, /debug/ and /admin/ require "Authorization: Bearer SECRET"
# (/healthz and /readyz stay open). Empty: no secret, and /debug/ and
# /admin/ answer loopback clients only (on any admin address).
admin_token_file = ""

# Mutual TLS between nodes.
[tls]
# The cluster CA certificate ("overworld ca init") and this node's
# certificate and key ("overworld ca issue").
ca_cert = "ca/ca.crt"
node_cert = "node.pem"
# Revoked node certificates: a file of lines "serial HEX" or "node ID"
# ("#" starts a comment). A peer presenting a revoked certificate is
# refused in the handshake. Reloaded with the certificates on SIGHUP.
# Empty: none.
revoked = ""
# The WebSocket player endpoint's certificate and key (PEM): it serves
# wss:// (reloaded on SIGHUP). Empty: ws:// (or player_dev_cert).
player_cert = ""
player_key = ""
# Serve wss:// with a self-signed certificate generated at start (for
# development: browsers must be told to trust it).
player_dev_cert = false

# Discovery: how replicas are found.
[discovery]
# How nodes find the replicas they need: "directory" (one rendezvous node
# matches publications with subscriptions), "broadcast" (every node sends
# every update to every other node) or "colyseus" (the distributed locator
# on a ring of every node of this file, each at an even share of the key
# space; the game provides the key mapping).
arch = "directory"
# The directory's rendezvous node (an ID of this file's peers, or this
# node; ignored by the other architectures).
rendezvous = 1
# Widen the view replicas are fetched for by this many metres in x and y,
# so that most objects are held before they enter an interest (0 to 1e6).
# Absent: 15 under colyseus (the setting its figures are measured at),
# else 0.
# prefetch = 15
# Push this node's primaries to the nodes whose replicas held here show
# they need them, before discovery finds them there. Absent: true under
# colyseus, else false.
# push_mutual = true
# Fetch a discovered moving object once it is predicted in the view this
# far ahead (0 to 1s). Absent: 600ms under colyseus, else 0s.
# fetch_ahead = "600ms"

# Players joining through the player endpoints.
[players]
# The coordinator's public key file ("overworld token init" writes it as
# coordinator.pub): players join with single-use tokens it signed.
# Required with a player endpoint.
coordinator_key = ""
# Most players in game on this node at once; more are refused.
max_players = 64
# The world this node serves: tokens name it (and this node's id), and a
# token for another world or node is refused.
world = "main"
# Tokens valid for longer are refused (they are issued just before a join).
max_token_ttl = "10m"
# Each player endpoint's limits on connections whose token has not
# verified yet (QUIC's and WebSocket's counted apart): at most max_unauth
# at once (the oldest is closed for a newcomer), at most per_source from
# one IP address (more are closed at once), each closed after
# join_deadline.
max_unauth = 512
per_source = 16
join_deadline = "3s"
# Also accept standard JWTs (EdDSA) signed by this Ed25519 public key (PKIX
# PEM), for a game backend that issues them: sub is the player, aud holds
# "WORLD/NODE", iat, exp and jti are required. Empty: none.
jwt_key = ""
# With jwt_key: the "iss" a JWT must name (empty: any).
jwt_issuer = ""

# The game (interpreted by the command line, not by package live).
[game]
# The model game (arena): map shape ("rect" or "sqr"), the number of game
# nodes and bots per node it is sized for, and its seed. Every node of a
# cluster must have the same four values.
map = "rect"
nodes = 1
players_per_node = 8
seed = 1
# Which game node this process plays (1..nodes): it spawns that node's bots
# and items. 0 spawns nothing (a rendezvous node).
slot = 1
# Whether this node spawns its slot's AI bots (false: only its items; the
# players who join through the player endpoints play instead).
ai_bots = true

# Running as an Agones game server on Kubernetes (see docs/deploy.md).
[agones]
# Talk to the Agones SDK sidecar: Ready once the node is ready, health
# pings while frames run (a stalled frame loop stops them), the state below
# while the node holds primaries, the players counter, the region label,
# and Shutdown after the drain.
enabled = false
# The sidecar's REST gateway; empty: http://localhost:$AGONES_SDK_HTTP_PORT
# (9358 when the variable is unset).
sdk = ""
# The label agones.dev/sdk-region (a Kubernetes label value; empty: none).
region = ""
# How a node holding primaries is kept from a fleet's scale-down:
# "allocate" (Allocated while it holds any, Ready again when it holds
# none), "reserve" (a reservation of reserve_for, renewed while it holds
# any) or "none".
protect = "allocate"
reserve_for = "30s"
# Health ping period: below the GameServer's health.periodSeconds.
health_every = "2s"
# The beta Counter kept equal to the players in game here (the GameServer
# must declare it; empty: none).
players_counter = "players"

# Membership gossip (hashicorp/memberlist): nodes that are not in the
# static peer list below join a running cluster through a seed, and leave
# it after their drain, under every discovery architecture: a gossiped
# node is a broadcast target, and under colyseus a node with seeds and no
# [[peers]] joins the running ring instead of bootstrapping one.
[membership]
# Gossip listen address (TCP and UDP); empty: no gossip, the peers are
# the static list alone.
gossip = ""
# The gossip address the others reach this node at (empty: gossip's).
advertise = ""
# Gossip addresses of nodes to join through (any running node).
seeds = []
# The cluster's gossip key: 16, 24 or 32 bytes as hex ("openssl rand -hex
# 32"), the same file on every node. Required with gossip.
key_file = ""
# This node's node address as the others dial it (empty: the advertise
# host with listen.node's port).
node_addr = ""
# This node's player endpoints as players reach them, gossiped so that
# peers can hand players here (empty: none; with [agones] enabled, the
# GameServer's address and its ports "player-quic" and "player-ws").
player_quic = ""
player_ws = ""

# The static peer list: every other node of the cluster, one [[peers]]
# table each, with its ID, node address, (for latency emulation) city, and
# the player endpoints players reach it at, where this node redirects the
# players it hands to it (when it drains, or told to; none: it hands none
# there).
# [[peers]]
# id = 2
# addr = "127.0.0.1:7101"
# city = "London"
# player_quic = "127.0.0.1:7102"
# player_ws = "ws://127.0.0.1:7103/play"
`

// DefaultDaemonConfig returns the defaults (DefaultConfigTOML).
func DefaultDaemonConfig() DaemonConfig {
	return DaemonConfig{ID: 1, DataDir: "data", FrameRate: float64(time.Second / world.DefaultFrame), QueueLen: 256,
		ShutdownGrace: Duration{2 * time.Second}, Failover: true, DrainTimeout: Duration{DefaultDrainTimeout},
		LogLevel: "info", LogFormat: "text",
		Listen:    ListenConfig{Node: "127.0.0.1:7100", Admin: "127.0.0.1:7180"},
		TLS:       TLSConfig{CACert: "ca/ca.crt", NodeCert: "node.pem"},
		Discovery: DiscoveryConfig{Arch: "directory", Rendezvous: 1},
		Players: PlayersConfig{MaxPlayers: 64, World: "main", MaxTokenTTL: Duration{10 * time.Minute},
			MaxUnauth: 512, PerSource: 16, JoinDeadline: Duration{3 * time.Second}},
		Game: GameConfig{Map: "rect", Nodes: 1, PlayersPerNode: 8, Seed: 1, Slot: 1, AIBots: true},
		Agones: AgonesConfig{Protect: "allocate", ReserveFor: Duration{30 * time.Second}, HealthEvery: Duration{2 * time.Second},
			PlayersCounter: "players"},
		Membership: MembershipConfig{Seeds: []string{}},
	}
}

// ParseDaemonConfig decodes a configuration over the defaults, rejecting
// unknown keys, resolves relative paths against dir, and validates it.
func ParseDaemonConfig(data []byte, dir string) (DaemonConfig, error) {
	c := DefaultDaemonConfig()
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&c)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, k := range und {
			keys[i] = k.String()
		}
		return c, fmt.Errorf("%w: unknown key(s) %s", ErrConfig, strings.Join(keys, ", "))
	}
	for _, p := range []*string{&c.DataDir, &c.TLS.CACert, &c.TLS.NodeCert, &c.Players.CoordinatorKey,
		&c.TLS.Revoked, &c.TLS.PlayerCert, &c.TLS.PlayerKey, &c.Listen.AdminTokenFile, &c.Players.JWTKey, &c.Membership.KeyFile} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
	return c.Validate()
}

// LoadDaemonConfig reads and parses a configuration file.
func LoadDaemonConfig(path string) (DaemonConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return DaemonConfig{}, err
	}
	c, err := ParseDaemonConfig(data, filepath.Dir(path))
	if err != nil {
		return c, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Validate checks c and returns it, or an error wrapping ErrConfig that
// names the first bad field.
func (c DaemonConfig) Validate() (DaemonConfig, error) {
	c.Peers = slices.Clone(c.Peers)
	bad := func(format string, args ...any) (DaemonConfig, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if c.ID < 1 || c.ID > MaxNodeID {
		return bad("id %d: want 1 to %d (an object's epoch names its node in 15 bits)", c.ID, MaxNodeID)
	}
	if !(c.FrameRate >= 0.1 && c.FrameRate <= 1000) {
		return bad("frame_rate %v: want 0.1 to 1000", c.FrameRate)
	}
	if c.Epoch != "" {
		if _, err := time.Parse(time.RFC3339Nano, c.Epoch); err != nil {
			return bad("epoch %q: want an RFC 3339 time", c.Epoch)
		}
	}
	if p := c.FramePhase; p != nil {
		switch {
		case c.Epoch == "":
			return bad("frame_phase %v: needs an epoch to count from", p.Duration)
		case p.Duration < 0 || p.Duration >= c.FramePeriod():
			return bad("frame_phase %v: want 0 to under the frame period %v", p.Duration, c.FramePeriod())
		}
	}
	if c.QueueLen < 1 || c.QueueLen > 1<<16 {
		return bad("queue_len %d: want 1 to 65536", c.QueueLen)
	}
	if c.ShutdownGrace.Duration < 0 || c.ShutdownGrace.Duration > time.Minute {
		return bad("shutdown_grace %v: want 0 to 1m", c.ShutdownGrace.Duration)
	}
	if c.DrainTimeout.Duration < 0 || c.DrainTimeout.Duration > 10*time.Minute {
		return bad("drain_timeout %v: want 0 (no drain) to 10m", c.DrainTimeout.Duration)
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return bad("log_level %q: want debug, info, warn or error", c.LogLevel)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return bad("log_format %q: want text or json", c.LogFormat)
	}
	for name, a := range map[string]string{"listen.node": c.Listen.Node, "listen.player_quic": c.Listen.PlayerQUIC,
		"listen.player_ws": c.Listen.PlayerWS, "listen.admin": c.Listen.Admin} {
		if a == "" && name != "listen.node" {
			continue
		}
		if _, _, err := net.SplitHostPort(a); err != nil {
			return bad("%s %q: want host:port", name, a)
		}
	}
	if c.TLS.CACert == "" || c.TLS.NodeCert == "" {
		return bad("tls.ca_cert and tls.node_cert are required")
	}
	if (c.Listen.PlayerQUIC != "" || c.Listen.PlayerWS != "") && c.Players.CoordinatorKey == "" {
		return bad("listen.player_quic/player_ws: players.coordinator_key is required (the coordinator's public key file)")
	}
	if c.Players.MaxPlayers < 1 || c.Players.MaxPlayers > 100000 {
		return bad("players.max_players %d: want 1 to 100000", c.Players.MaxPlayers)
	}
	// Zero values of the player endpoint's limits (a configuration built
	// in code before they existed) take the defaults.
	def := DefaultDaemonConfig().Players
	if c.Players.World == "" {
		c.Players.World = def.World
	}
	if c.Players.MaxTokenTTL.Duration == 0 {
		c.Players.MaxTokenTTL = def.MaxTokenTTL
	}
	if c.Players.MaxUnauth == 0 {
		c.Players.MaxUnauth = def.MaxUnauth
	}
	if c.Players.PerSource == 0 {
		c.Players.PerSource = min(def.PerSource, c.Players.MaxUnauth)
	}
	if c.Players.JoinDeadline.Duration == 0 {
		c.Players.JoinDeadline = def.JoinDeadline
	}
	if err := (player.Audience{World: c.Players.World, Node: c.ID}).Validate(); err != nil {
		return bad("players.world %q: want 1 to %d printable bytes, no spaces", c.Players.World, player.MaxWorld)
	}
	if t := c.Players.MaxTokenTTL.Duration; t < time.Second || t > 24*time.Hour {
		return bad("players.max_token_ttl %v: want 1s to 24h", t)
	}
	if c.Players.MaxUnauth < 1 || c.Players.MaxUnauth > 1<<20 || c.Players.PerSource < 1 || c.Players.PerSource > c.Players.MaxUnauth {
		return bad("players.max_unauth %d, per_source %d: want 1 ≤ per_source ≤ max_unauth ≤ 1048576", c.Players.MaxUnauth, c.Players.PerSource)
	}
	if d := c.Players.JoinDeadline.Duration; d < 100*time.Millisecond || d > time.Minute {
		return bad("players.join_deadline %v: want 100ms to 1m", d)
	}
	if (c.TLS.PlayerCert == "") != (c.TLS.PlayerKey == "") {
		return bad("tls.player_cert and tls.player_key go together")
	}
	if c.TLS.PlayerCert != "" && c.TLS.PlayerDevCert {
		return bad("tls.player_dev_cert with tls.player_cert: choose one")
	}
	ids := map[uint32]bool{c.ID: true}
	for i, p := range c.Peers {
		if ids[p.ID] {
			return bad("peers[%d]: node %d listed twice (or is this node)", i, p.ID)
		}
		ids[p.ID] = true
		if _, _, err := net.SplitHostPort(p.Addr); err != nil {
			return bad("peers[%d] (node %d): addr %q: want host:port", i, p.ID, p.Addr)
		}
		if _, _, err := net.SplitHostPort(p.PlayerQUIC); p.PlayerQUIC != "" && err != nil {
			return bad("peers[%d] (node %d): player_quic %q: want host:port", i, p.ID, p.PlayerQUIC)
		}
		if u, err := url.Parse(p.PlayerWS); p.PlayerWS != "" && (err != nil || u.Scheme != "ws" && u.Scheme != "wss" || u.Host == "") {
			return bad("peers[%d] (node %d): player_ws %q: want a ws:// or wss:// URL", i, p.ID, p.PlayerWS)
		}
	}
	switch c.Discovery.Arch {
	case "directory":
		if !ids[c.Discovery.Rendezvous] {
			return bad("discovery.rendezvous %d: not this node nor a peer", c.Discovery.Rendezvous)
		}
	case "broadcast", "colyseus":
	default:
		return bad("discovery.arch %q: want directory, broadcast or colyseus", c.Discovery.Arch)
	}
	if p := c.Discovery.PrefetchM(); !(p >= 0 && p <= 1e6) {
		return bad("discovery.prefetch %v m: want 0 to 1e6", p)
	}
	if a := c.Discovery.Fetching().FetchAhead; a < 0 || a > time.Second {
		return bad("discovery.fetch_ahead %v: want 0 to 1s", a)
	}
	if err := c.Net().Validate(); err != nil {
		return bad("emulate_*: %v", err)
	}
	if c.EmulateLatency {
		ws, err := geo.WonderNetwork()
		if err != nil {
			return c, err
		}
		if _, ok := ws.CityIndex(c.City); !ok {
			return bad("emulate_latency: city %q is not a WonderNetwork city", c.City)
		}
		for i, p := range c.Peers {
			if _, ok := ws.CityIndex(p.City); !ok {
				return bad("emulate_latency: peers[%d] (node %d): city %q is not a WonderNetwork city", i, p.ID, p.City)
			}
		}
	}
	if m := c.Membership; m.Gossip != "" {
		for name, a := range map[string]string{"membership.gossip": m.Gossip, "membership.advertise": m.Advertise,
			"membership.node_addr": m.NodeAddr, "membership.player_quic": m.PlayerQUIC} {
			if _, _, err := net.SplitHostPort(a); a != "" && err != nil {
				return bad("%s %q: want host:port", name, a)
			}
		}
		for i, a := range m.Seeds {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return bad("membership.seeds[%d] %q: want host:port", i, a)
			}
		}
		if u, err := url.Parse(m.PlayerWS); m.PlayerWS != "" && (err != nil || u.Scheme != "ws" && u.Scheme != "wss" || u.Host == "") {
			return bad("membership.player_ws %q: want a ws:// or wss:// URL", m.PlayerWS)
		}
		if m.KeyFile == "" {
			return bad("membership.key_file is required with membership.gossip (the cluster's gossip key)")
		}
	}
	if c.Agones.Enabled {
		if _, err := c.Agones.agentConfig(nil); err != nil {
			return bad("agones: %v", err)
		}
		if c.Agones.SDK != "" {
			if _, err := agones.NewClient(c.Agones.SDK); err != nil {
				return bad("agones.sdk: %v", err)
			}
		}
	}
	g := c.Game
	switch {
	case g.Nodes < 1 || g.Nodes > 10000:
		return bad("game.nodes %d: want 1 to 10000", g.Nodes)
	case g.PlayersPerNode < 1 || g.PlayersPerNode > 1000:
		return bad("game.players_per_node %d: want 1 to 1000", g.PlayersPerNode)
	case g.Slot < 0 || g.Slot > g.Nodes:
		return bad("game.slot %d: want 0 to game.nodes (%d)", g.Slot, g.Nodes)
	}
	return c, nil
}

// loopback reports whether host:port names a loopback address (an IP of
// 127.0.0.0/8 or ::1, or "localhost").
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// FramePeriod is the frame period the frame rate gives.
func (c DaemonConfig) FramePeriod() time.Duration {
	return time.Duration(float64(time.Second) / c.FrameRate)
}

// PeerMap returns the static peer list as node ID → address.
func (c DaemonConfig) PeerMap() map[wire.NodeID]string {
	m := make(map[wire.NodeID]string, len(c.Peers))
	for _, p := range c.Peers {
		m[wire.NodeID(p.ID)] = p.Addr
	}
	return m
}

// Members returns this node and its peers, in ID order.
func (c DaemonConfig) Members() []wire.NodeID {
	ids := []wire.NodeID{wire.NodeID(c.ID)}
	for _, p := range c.Peers {
		ids = append(ids, wire.NodeID(p.ID))
	}
	slices.Sort(ids)
	return ids
}

// JoinsRing reports whether the node joins a running colyseus ring
// through a peer that gossip introduces instead of bootstrapping the ring
// with its static members: under colyseus, with membership gossip, seeds
// and no static peers.
func (c DaemonConfig) JoinsRing() bool {
	return c.Discovery.Arch == "colyseus" && c.Membership.Gossip != "" && len(c.Membership.Seeds) > 0 && len(c.Peers) == 0
}

// Cities returns every node's city (this node's and the peers').
func (c DaemonConfig) Cities() map[wire.NodeID]string {
	m := map[wire.NodeID]string{wire.NodeID(c.ID): c.City}
	for _, p := range c.Peers {
		m[wire.NodeID(p.ID)] = p.City
	}
	return m
}

// Encode writes c as TOML (without comments): what "overworld
// cluster" writes for its nodes.
func (c DaemonConfig) Encode() ([]byte, error) {
	var b bytes.Buffer
	if err := toml.NewEncoder(&b).Encode(c); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
