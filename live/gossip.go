package live

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/wire"
)

// Membership gossip ([membership] gossip): nodes find each other at run
// time through hashicorp/memberlist over a seed list, so a new node joins
// a running cluster without the others being reconfigured or restarted.
// Each node gossips its node ID, incarnation, node address and player
// endpoints; its memberlist name is node-ID.incarnation, so a node
// restarted under the same ID is a new member at once, from whatever
// address (memberlist refuses a known name from a new address until the
// old member has been declared dead, which took longer than the restart).
// A node learned this way enters the daemon's PeerSet and its address the
// mesh's address book; of the members that gossip one node ID, the run
// with the highest incarnation wins, and an older run's record is
// ignored. The gossip is
// encrypted with the cluster's gossip key (membership.key_file); it only
// introduces candidates: a peer is reached over QUIC with mutual TLS and
// must present a certificate from the cluster CA naming the node ID it
// gossiped, as a static peer must. A node that leaves (after its drain)
// is removed from the others' sets; a node that dies stays in them, and
// the failure detector and failover handle it as any dead peer.

// gossipMeta is what a node gossips about itself (memberlist node
// metadata, at most memberlist.MetaMaxSize bytes).
type gossipMeta struct {
	ID         uint32 `json:"id"`
	Inc        uint16 `json:"inc"`
	Addr       string `json:"addr"`
	PlayerQUIC string `json:"player_quic,omitempty"`
	PlayerWS   string `json:"player_ws,omitempty"`
	City       string `json:"city,omitempty"`
	// Leaving is set by a node that has drained and leaves: the others
	// remove it from their peer sets. (A node that dies never sets it.)
	Leaving bool `json:"leaving,omitempty"`
}

// gossipName is the memberlist name of run inc of node id.
func gossipName(id wire.NodeID, inc uint16) string {
	return "node-" + strconv.Itoa(int(id)) + "." + strconv.Itoa(int(inc))
}

// ReadGossipKey reads a gossip key file: 16, 24 or 32 bytes written as
// hex (e.g. "openssl rand -hex 32").
func ReadGossipKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(b)))
	if err != nil || (len(key) != 16 && len(key) != 24 && len(key) != 32) {
		return nil, fmt.Errorf("%w: membership.key_file %s: want 16, 24 or 32 bytes as hex", ErrConfig, path)
	}
	return key, nil
}

// gossip is a daemon's membership agent.
type gossip struct {
	self  wire.NodeID
	inc   uint16
	peers *PeerSet
	log   *slog.Logger
	meta  []byte
	ml    *memberlist.Memberlist

	mu     sync.Mutex
	joined bool
	runs   map[wire.NodeID]uint16 // the latest incarnation gossiped by each peer
}

// startGossip opens the gossip listener and starts joining the seeds in
// the background until one answers or ctx ends. nodeAddr is this node's
// node address as peers dial it; inc is this run's incarnation.
func startGossip(ctx context.Context, cfg DaemonConfig, inc uint16, nodeAddr string, peers *PeerSet, lg *slog.Logger) (*gossip, error) {
	mc := cfg.Membership
	key, err := ReadGossipKey(mc.KeyFile)
	if err != nil {
		return nil, err
	}
	meta, err := json.Marshal(gossipMeta{ID: cfg.ID, Inc: inc, Addr: nodeAddr, PlayerQUIC: mc.PlayerQUIC, PlayerWS: mc.PlayerWS, City: cfg.City})
	if err != nil {
		return nil, err
	}
	if len(meta) > memberlist.MetaMaxSize {
		return nil, fmt.Errorf("%w: membership: this node's gossiped addresses take %d bytes, more than %d", ErrConfig, len(meta), memberlist.MetaMaxSize)
	}
	g := &gossip{self: wire.NodeID(cfg.ID), inc: inc, peers: peers, log: lg, meta: meta, runs: map[wire.NodeID]uint16{}}
	conf := memberlist.DefaultLANConfig()
	conf.Name = gossipName(g.self, inc)
	host, port, _ := net.SplitHostPort(mc.Gossip)
	conf.BindAddr = host
	conf.BindPort, _ = strconv.Atoi(port)
	if mc.Advertise != "" {
		host, port, _ := net.SplitHostPort(mc.Advertise)
		conf.AdvertiseAddr = host
		conf.AdvertisePort, _ = strconv.Atoi(port)
	} else {
		conf.AdvertisePort = conf.BindPort
	}
	conf.SecretKey = key
	conf.Delegate = g
	conf.Events = g
	conf.Logger = log.New(slogWriter{lg}, "", 0)
	if g.ml, err = memberlist.Create(conf); err != nil {
		return nil, fmt.Errorf("membership.gossip %s: %w", mc.Gossip, err)
	}
	// A node address on an unspecified host (gossip on 0.0.0.0, nothing
	// advertised) takes the address memberlist advertises (a private
	// address of this host: the pod's IP on Kubernetes).
	if host, port, _ := net.SplitHostPort(nodeAddr); net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified() {
		nodeAddr = net.JoinHostPort(g.ml.LocalNode().Addr.String(), port)
		if meta, err = json.Marshal(gossipMeta{ID: cfg.ID, Inc: inc, Addr: nodeAddr, PlayerQUIC: mc.PlayerQUIC, PlayerWS: mc.PlayerWS, City: cfg.City}); err == nil {
			g.mu.Lock()
			g.meta = meta
			g.mu.Unlock()
			if err := g.ml.UpdateNode(time.Second); err != nil {
				lg.Warn("membership: announcing this node's address", "err", err)
			}
		}
	}
	if len(mc.Seeds) > 0 {
		go g.join(ctx, mc.Seeds)
	}
	lg.Info("membership gossip running", "gossip", g.ml.LocalNode().Address(), "seeds", mc.Seeds, "node_addr", nodeAddr)
	return g, nil
}

// join contacts the seeds every second until one answers.
func (g *gossip) join(ctx context.Context, seeds []string) {
	for {
		n, err := g.ml.Join(seeds)
		if n > 0 {
			g.mu.Lock()
			g.joined = true
			g.mu.Unlock()
			g.log.Info("membership: joined", "seeds_contacted", n, "members", g.ml.NumMembers())
			return
		}
		g.log.Debug("membership: no seed answered yet", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// leave tells the others this node leaves (after its drain): its
// metadata says so, then memberlist's leave, then it stops.
func (g *gossip) leave(timeout time.Duration) {
	g.mu.Lock()
	var m gossipMeta
	if json.Unmarshal(g.meta, &m) == nil {
		m.Leaving = true
		g.meta, _ = json.Marshal(m)
	}
	g.mu.Unlock()
	if err := g.ml.UpdateNode(timeout); err != nil {
		g.log.Warn("membership: announcing the leave", "err", err)
	}
	if err := g.ml.Leave(timeout); err != nil {
		g.log.Warn("membership: leave", "err", err)
	}
	g.ml.Shutdown()
}

// learn puts a gossiped node in the peer set.
func (g *gossip) learn(n *memberlist.Node) {
	var m gossipMeta
	if err := json.Unmarshal(n.Meta, &m); err != nil {
		g.log.Warn("membership: a node gossips bad metadata", "name", n.Name, "err", err)
		return
	}
	id := wire.NodeID(m.ID)
	if id == g.self {
		return
	}
	if n.Name != gossipName(id, m.Inc) {
		g.log.Warn("membership: a node's name does not match its ID and incarnation", "name", n.Name, "id", m.ID, "inc", m.Inc)
		return
	}
	// An earlier run of a restarted node (still a member until it is
	// declared dead) changes nothing: its address may be stale.
	g.mu.Lock()
	last, known := g.runs[id]
	if known && m.Inc < last {
		g.mu.Unlock()
		return
	}
	g.runs[id] = m.Inc
	g.mu.Unlock()
	if m.Leaving {
		if g.peers.Remove(id) {
			g.log.Info("membership: peer left", "node", m.ID)
		}
		return
	}
	if p, ok := g.peers.Get(id); ok && p.Static {
		// The configuration names it (often by a DNS name where it gossips
		// its IP address): the configured record stays.
		if p.Addr != m.Addr {
			g.log.Debug("membership: a static peer gossips another address; the configured one is kept", "node", m.ID, "configured", p.Addr, "gossiped", m.Addr)
		}
		return
	}
	changed, err := g.peers.Add(PeerInfo{ID: id, Inc: m.Inc, Addr: m.Addr, PlayerQUIC: m.PlayerQUIC, PlayerWS: m.PlayerWS, City: m.City})
	switch {
	case err != nil:
		g.log.Warn("membership: gossiped peer refused", "node", m.ID, "err", err)
	case changed:
		g.log.Info("membership: peer joined", "node", m.ID, "inc", m.Inc, "addr", m.Addr, "player_quic", m.PlayerQUIC)
	}
}

// NodeMeta implements memberlist.Delegate.
func (g *gossip) NodeMeta(int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.meta
}

// NotifyMsg implements memberlist.Delegate (no user messages).
func (g *gossip) NotifyMsg([]byte) {}

// GetBroadcasts implements memberlist.Delegate (none).
func (g *gossip) GetBroadcasts(int, int) [][]byte { return nil }

// LocalState implements memberlist.Delegate (none).
func (g *gossip) LocalState(bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate (none).
func (g *gossip) MergeRemoteState([]byte, bool) {}

// NotifyJoin implements memberlist.EventDelegate.
func (g *gossip) NotifyJoin(n *memberlist.Node) { g.learn(n) }

// NotifyUpdate implements memberlist.EventDelegate.
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.learn(n) }

// NotifyLeave implements memberlist.EventDelegate. It leaves the peer set
// as it is: a node that drained said so in its metadata first (and was
// removed then); one that died stays a peer, which the failure detector
// and failover handle as any dead peer. When the member gone is the run
// whose record the peer has, a live member of the same node ID with a
// lower incarnation (a restart across ClockIncarnation's cycle) may set
// it again.
func (g *gossip) NotifyLeave(n *memberlist.Node) {
	var m gossipMeta
	if json.Unmarshal(n.Meta, &m) != nil {
		return
	}
	id := wire.NodeID(m.ID)
	g.mu.Lock()
	last, known := g.runs[id]
	if !known || last != m.Inc {
		g.mu.Unlock()
		return
	}
	delete(g.runs, id)
	g.mu.Unlock()
	if g.ml == nil {
		return
	}
	// memberlist holds its node lock while it calls this: read the
	// members after it returns.
	go func() {
		for _, o := range g.ml.Members() {
			if o.Name != n.Name && strings.HasPrefix(o.Name, "node-"+strconv.Itoa(int(id))+".") {
				g.learn(o)
			}
		}
	}()
}

// slogWriter carries memberlist's log lines to the daemon's logger at
// debug level.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Debug("memberlist: " + strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = slogWriter{}

// startGossip starts membership gossip when the configuration asks for
// it (Run's start, after the Agones agent): this node's address as the
// others dial it is membership.node_addr, else the advertised (or bound)
// gossip host with the node socket's port. As an Agones game server, the
// player endpoints it gossips default to the GameServer's address and its
// ports "player-quic" and "player-ws" (waiting up to agonesEndpointWait
// for the agent to read them).
func (d *Daemon) startGossip(ctx context.Context) error {
	if d.cfg.Membership.Gossip == "" {
		return nil
	}
	cfg := d.cfg
	mc := &cfg.Membership
	if mc.NodeAddr == "" {
		host, _, _ := net.SplitHostPort(mc.Gossip)
		if mc.Advertise != "" {
			host, _, _ = net.SplitHostPort(mc.Advertise)
		}
		_, port, _ := net.SplitHostPort(d.NodeAddr().String())
		mc.NodeAddr = net.JoinHostPort(host, port)
	}
	if d.agones != nil && mc.PlayerQUIC == "" && mc.PlayerWS == "" {
		deadline := time.Now().Add(agonesEndpointWait)
		for {
			if ep, ok := d.agones.Endpoint(); ok {
				mc.PlayerQUIC, mc.PlayerWS = playerEndpoints(ep)
				break
			}
			if time.Now().After(deadline) {
				d.log.Warn("membership: the GameServer's address is not known yet: gossiping no player endpoint")
				break
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	g, err := startGossip(ctx, cfg, d.inc, mc.NodeAddr, d.peers, d.log)
	if err != nil {
		return err
	}
	d.gossip.Store(g)
	return nil
}

// agonesEndpointWait bounds how long gossip waits for the GameServer's
// address.
const agonesEndpointWait = 10 * time.Second

// playerEndpoints returns the player endpoints a GameServer publishes:
// its address with the ports named "player-quic" and "player-ws" (each
// empty when the GameServer has no such port).
func playerEndpoints(ep agones.Endpoint) (quic, ws string) { return ep.PlayerEndpoints() }

// gossipAddr returns the gossip address others join this node at ("" before Run
// starts the gossip, or without it).
func (d *Daemon) gossipAddr() string {
	if g := d.gossip.Load(); g != nil {
		return g.ml.LocalNode().Address()
	}
	return ""
}

// Peers returns the daemon's peer set (static and gossiped peers).
func (d *Daemon) Peers() *PeerSet { return d.peers }
