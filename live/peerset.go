package live

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/overworld/overworld/wire"
)

// A daemon's peers form a PeerSet: the static [[peers]] of its
// configuration, plus the nodes that membership gossip (gossip.go)
// introduces while it runs, minus those that leave. Every part of the
// daemon that needs the peers reads the set: the mesh's address book
// (updated by the set's change hook), the core's failure detector
// (ReplicaConfig.Peers), the drain's targets and the player handoff's
// endpoints. A node in the set is admitted: an admission check on
// incoming connections reads Admitted. Mutual TLS is unchanged: a peer is
// only ever reached over QUIC with a certificate from the cluster CA that
// names its ID, whatever the gossip said about it.

// PeerInfo is one peer as the daemon knows it: its node address, its
// player endpoints as players reach them (empty: no handoffs there), its
// city (latency emulation), and whether it comes from the configuration
// (a static peer is never removed). Inc is the incarnation of the run the
// gossip introduced (0 for a static peer): a new run of a node changes its
// record even from the same address.
type PeerInfo struct {
	ID         wire.NodeID
	Inc        uint16
	Addr       string
	PlayerQUIC string
	PlayerWS   string
	City       string
	Static     bool
}

// check reports what is wrong with p ("" when nothing).
func (p PeerInfo) check(self wire.NodeID) string {
	switch {
	case p.ID < 1 || p.ID > MaxNodeID:
		return fmt.Sprintf("node %d: want 1 to %d", p.ID, MaxNodeID)
	case p.ID == self:
		return fmt.Sprintf("node %d is this node", p.ID)
	}
	if _, _, err := net.SplitHostPort(p.Addr); err != nil {
		return fmt.Sprintf("node %d: addr %q: want host:port", p.ID, p.Addr)
	}
	if _, _, err := net.SplitHostPort(p.PlayerQUIC); p.PlayerQUIC != "" && err != nil {
		return fmt.Sprintf("node %d: player_quic %q: want host:port", p.ID, p.PlayerQUIC)
	}
	if u, err := url.Parse(p.PlayerWS); p.PlayerWS != "" && (err != nil || u.Scheme != "ws" && u.Scheme != "wss" || u.Host == "") {
		return fmt.Sprintf("node %d: player_ws %q: want a ws:// or wss:// URL", p.ID, p.PlayerWS)
	}
	return ""
}

// PeerChange is one change of a PeerSet: a peer added or changed (Gone
// false, Peer its new record) or removed (Gone true).
type PeerChange struct {
	Peer PeerInfo
	Gone bool
}

// PeerSet is the mutable set of a node's peers, safe for concurrent use.
type PeerSet struct {
	self wire.NodeID

	mu    sync.Mutex
	peers map[wire.NodeID]PeerInfo
	hooks []func(PeerChange)

	ids atomic.Pointer[[]wire.NodeID] // sorted; replaced, never modified
}

// NewPeerSet returns the set of node self's static peers (already
// validated by DaemonConfig.Validate).
func NewPeerSet(self wire.NodeID, static []PeerConfig) *PeerSet {
	s := &PeerSet{self: self, peers: map[wire.NodeID]PeerInfo{}}
	for _, p := range static {
		s.peers[wire.NodeID(p.ID)] = PeerInfo{ID: wire.NodeID(p.ID), Addr: p.Addr, PlayerQUIC: p.PlayerQUIC, PlayerWS: p.PlayerWS,
			City: p.City, Static: true}
	}
	s.publish()
	return s
}

// publish replaces the sorted ID list (mu held, or during construction).
func (s *PeerSet) publish() {
	ids := make([]wire.NodeID, 0, len(s.peers))
	for id := range s.peers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	s.ids.Store(&ids)
}

// OnChange registers f, called after every change (in the order of the
// changes, outside the set's lock, on the goroutine that made it).
func (s *PeerSet) OnChange(f func(PeerChange)) {
	s.mu.Lock()
	s.hooks = append(s.hooks, f)
	s.mu.Unlock()
}

// Add adds p or updates its record, and reports whether anything
// changed. It refuses (with the reason) a record naming this node or a bad
// address, and any change to a static peer: the configuration wins over
// the gossip.
func (s *PeerSet) Add(p PeerInfo) (bool, error) {
	if why := p.check(s.self); why != "" {
		return false, fmt.Errorf("%w: peer %s", ErrConfig, why)
	}
	s.mu.Lock()
	old, ok := s.peers[p.ID]
	if ok && old.Static {
		s.mu.Unlock()
		if p.Addr != old.Addr {
			return false, fmt.Errorf("%w: node %d is a static peer at %s, not %s", ErrConfig, p.ID, old.Addr, p.Addr)
		}
		return false, nil
	}
	p.Static = false
	if ok && old == p {
		s.mu.Unlock()
		return false, nil
	}
	s.peers[p.ID] = p
	s.publish()
	hooks := slices.Clone(s.hooks)
	s.mu.Unlock()
	for _, f := range hooks {
		f(PeerChange{Peer: p})
	}
	return true, nil
}

// Remove removes peer id unless it is static, and reports whether it did.
func (s *PeerSet) Remove(id wire.NodeID) bool {
	s.mu.Lock()
	p, ok := s.peers[id]
	if !ok || p.Static {
		s.mu.Unlock()
		return false
	}
	delete(s.peers, id)
	s.publish()
	hooks := slices.Clone(s.hooks)
	s.mu.Unlock()
	for _, f := range hooks {
		f(PeerChange{Peer: p, Gone: true})
	}
	return true
}

// Get returns peer id's record.
func (s *PeerSet) Get(id wire.NodeID) (PeerInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.peers[id]
	return p, ok
}

// Admitted reports whether id is in the set: a node this one accepts as a
// peer.
func (s *PeerSet) Admitted(id wire.NodeID) bool {
	_, ok := slices.BinarySearch(*s.ids.Load(), id)
	return ok
}

// IDs returns the peers' IDs in order. The slice is shared: do not modify
// it (a change replaces it).
func (s *PeerSet) IDs() []wire.NodeID { return *s.ids.Load() }

// List returns every peer's record, in ID order.
func (s *PeerSet) List() []PeerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PeerInfo, 0, len(s.peers))
	for _, p := range s.peers {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b PeerInfo) int { return int(a.ID) - int(b.ID) })
	return out
}
