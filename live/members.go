package live

import (
	"slices"
	"sync"

	"github.com/overworld/overworld/wire"
)

// Members is the set of node IDs admitted to the cluster: the one place a
// node asks whether a peer may connect (pki.Identity.Admit calls Admitted
// in every handshake). A daemon fills it from its static peer list; a
// membership service may replace or change it while the node runs, and
// connections accepted from a node it removes are closed (Daemon.Revalidate).
// It is safe for concurrent use.
type Members struct {
	mu  sync.RWMutex
	ids map[wire.NodeID]struct{}
}

// NewMembers returns a set holding ids.
func NewMembers(ids ...wire.NodeID) *Members {
	m := &Members{ids: make(map[wire.NodeID]struct{}, len(ids))}
	for _, id := range ids {
		m.ids[id] = struct{}{}
	}
	return m
}

// Admitted reports whether id is a member.
func (m *Members) Admitted(id wire.NodeID) bool {
	m.mu.RLock()
	_, ok := m.ids[id]
	m.mu.RUnlock()
	return ok
}

// Add admits ids.
func (m *Members) Add(ids ...wire.NodeID) {
	m.mu.Lock()
	for _, id := range ids {
		m.ids[id] = struct{}{}
	}
	m.mu.Unlock()
}

// Remove withdraws ids.
func (m *Members) Remove(ids ...wire.NodeID) {
	m.mu.Lock()
	for _, id := range ids {
		delete(m.ids, id)
	}
	m.mu.Unlock()
}

// Set replaces the members by ids.
func (m *Members) Set(ids []wire.NodeID) {
	next := make(map[wire.NodeID]struct{}, len(ids))
	for _, id := range ids {
		next[id] = struct{}{}
	}
	m.mu.Lock()
	m.ids = next
	m.mu.Unlock()
}

// List returns the members in ID order.
func (m *Members) List() []wire.NodeID {
	m.mu.RLock()
	out := make([]wire.NodeID, 0, len(m.ids))
	for id := range m.ids {
		out = append(out, id)
	}
	m.mu.RUnlock()
	slices.Sort(out)
	return out
}
