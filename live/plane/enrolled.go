package plane

import (
	"errors"
	"fmt"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/wire"
)

// Enrolled placement targets: the game servers the plane places
// main-world players on besides the configured [[nodes]].
//
// Which: a game server that enrolled (enroll.go) with a Placement (its
// admin endpoint, player endpoints and capacity, covered by its proof) in
// a region that names a Site. The plane records it (hostIssuer.placed,
// kept in the state file with the IDs given) and polls its admin endpoint
// with the configured nodes'.
//
// When it becomes a target: at the first poll it answers with a valid
// report naming its own node ID; enrolling proves the secret, answering
// proves the daemon runs and serves its admin endpoint. The plane then
// calls control's AddNode with the node's site and capacity, and its RTTs
// to every node of the placement from the WonderNetwork site-to-site
// table, as the configured nodes' are (NaN for a site the table does not
// know), until the nodes report the RTTs they measure (measureNodes); the
// players' own samples to it replace the estimates as the clients ping it
// (the join answers list it to ping). AddNode moves the players for whom the new node pays.
//
// When it leaves: a node the revocation list (Hosts.Revoked) names by ID
// is removed at once (one revoked while the plane was down, polled in the
// rounds before the rebuild, drains if it holds players) (control's RemoveNode drains it: its players are
// moved off, make-before-break; the plane keeps polling it and asking
// for their handoffs until it holds no player or stops answering). A node
// that does not answer is down after DownAfter, as any node (its players
// are re-admitted elsewhere); down for Hosts.ForgetAfter it is removed
// from the placement and no longer polled, until it enrolls again (a
// renewal, or a restart without its certificate). A game server drained
// by Agones stops, so it leaves as one that is down.
//
// After a restart: the plane reads the records from the state file
// (which a region with a site requires), polls every one that is not
// revoked, and adds those that answer the first round before it rebuilds
// its state, so control's Rebuild takes their reports as the configured
// nodes'. A node that is neither configured nor recorded is never polled,
// and one polled that answers as another node ID is refused (fetchPlayers),
// its report unused.
//
// A plane without configured nodes builds its placement from the
// enrolled nodes alone (placeFirst, at the first round one answers, after
// a start or a restart) and drops it when the last one leaves
// (dropPlacement): see the package doc.

// enrolledNode is an enrolled placement target as a poll round sees it:
// the node, when it last enrolled, and whether it is revoked.
type enrolledNode struct {
	Node
	Region   string
	Enrolled time.Time
	Revoked  bool
}

// enrolledView is what the plane keeps of an enrolled node.
type enrolledView struct {
	// target is true while control places players on it.
	target bool
	// region is the region it enrolled in.
	region string
	// seen is the latest of its last answer, its last enrollment and the
	// plane's start: it is polled while it is a target or seen is within
	// Hosts.ForgetAfter.
	seen time.Time
}

// drainView is a node removed from the placement while up: polled until
// its players are handed off.
type drainView struct {
	Node
	lastOK time.Time
}

// enrolledRecords returns the recorded enrolled nodes, reading the
// revocation list again if it changed (takes hosts.mu; nil without
// enrollment).
func (s *Server) enrolledRecords() map[uint32]enrolledNode {
	h := s.hosts
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg.Revoked != "" {
		err := h.reloadRevoked()
		if msg := fmt.Sprint(err); err != nil && msg != h.revErr {
			s.cfg.Log.Warn("revocation list unreadable: the last one read stands", "file", h.cfg.Revoked, "err", err)
		}
		h.revErr = ""
		if err != nil {
			h.revErr = err.Error()
		}
	}
	out := make(map[uint32]enrolledNode, len(h.placed))
	for id, r := range h.placed {
		e := h.enroll[r.Region]
		out[id] = enrolledNode{
			Node:     Node{ID: id, Site: e.Site, Capacity: r.Capacity, Admin: r.Admin, QUIC: r.QUIC, WS: r.WS},
			Region:   r.Region,
			Enrolled: time.Unix(r.Enrolled, 0),
			Revoked:  h.revoked.RevokesNode(wire.NodeID(id)),
		}
	}
	return out
}

// enrolledTargets returns the enrolled and draining nodes to poll this
// round (takes s.mu).
func (s *Server) enrolledTargets(recs map[uint32]enrolledNode) []Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hosts == nil {
		return nil
	}
	wall, _ := s.now()
	var out []Node
	for _, id := range sortedKeys(recs) {
		r := recs[id]
		v := s.enrolled[id]
		if v == nil {
			v = &enrolledView{seen: s.start}
			s.enrolled[id] = v
		}
		v.region = r.Region
		if r.Revoked {
			// Polled in the rounds before the rebuild only: one that
			// still holds players drains (syncEnrolled).
			if _, draining := s.draining[id]; !s.stats.Rebuilt && !draining {
				out = append(out, r.Node)
			}
			continue
		}
		if r.Enrolled.After(v.seen) {
			v.seen = r.Enrolled
		}
		if v.target || wall.Sub(v.seen) < s.hosts.cfg.ForgetAfter {
			out = append(out, r.Node)
		}
	}
	for _, id := range sortedKeys(s.draining) {
		out = append(out, s.draining[id].Node)
	}
	return out
}

// mainNodes returns the nodes of the placement: the configured ones, then
// the enrolled targets by ID (s.mu held).
func (s *Server) mainNodes() []Node {
	out := s.cfg.Nodes
	if len(s.enrolled) == 0 {
		return out
	}
	out = append([]Node(nil), out...)
	for _, id := range sortedKeys(s.enrolled) {
		if s.enrolled[id].target {
			out = append(out, s.nodes[id].Node)
		}
	}
	return out
}

// nodeOf returns node id's admin and player endpoints: a node of the
// placement's, or a draining node's (zero Node if neither; s.mu held).
func (s *Server) nodeOf(id uint32) Node {
	if v, ok := s.nodes[id]; ok {
		return v.Node
	}
	return s.draining[id].Node
}

// syncEnrolled brings the placement's enrolled nodes up to date with the
// records and this round's answers (s.mu held): revoked targets leave,
// targets down for ForgetAfter leave, recorded nodes that answered become
// targets, draining nodes that hold no player (or stopped answering) are
// dropped. It then drops from got the answers of nodes that are neither in
// the placement nor draining.
func (s *Server) syncEnrolled(wall time.Time, now time.Duration, recs map[uint32]enrolledNode, got map[uint32]*live.PlayersReport) {
	for _, id := range sortedKeys(s.draining) {
		d := s.draining[id]
		if rep, ok := got[id]; ok {
			d.lastOK = wall
			s.draining[id] = d
			if len(rep.Players) == 0 {
				s.cfg.Log.Info("enrolled node drained", "node", id)
				delete(s.draining, id)
			}
		} else if wall.Sub(d.lastOK) >= s.cfg.DownAfter {
			s.cfg.Log.Info("draining node stopped answering", "node", id)
			delete(s.draining, id)
		}
	}
	for _, id := range sortedKeys(s.enrolled) {
		v := s.enrolled[id]
		r, ok := recs[id]
		if !ok || r.Revoked {
			_, draining := s.draining[id]
			if rep, answered := got[id]; v.target {
				s.removeEnrolled(wall, now, id, "revoked")
			} else if ok && answered && len(rep.Players) > 0 && !draining {
				// Revoked while the plane was down: its players are
				// handed off all the same.
				s.draining[id] = drainView{Node: r.Node, lastOK: wall}
				s.cfg.Log.Info("revoked node drains", "node", id, "players", len(rep.Players))
			}
			continue
		}
		if _, answered := got[id]; answered {
			v.seen = wall
		}
		if !v.target {
			if _, answered := got[id]; answered && s.plane != nil {
				if err := s.addEnrolled(wall, now, r.Node); err != nil {
					s.cfg.Log.Warn("enrolled node not placed", "node", id, "err", err)
				}
			}
			continue
		}
		nv := s.nodes[id]
		if nv.Admin != r.Admin || nv.QUIC != r.QUIC || nv.WS != r.WS {
			// It enrolled again from another address.
			s.cfg.Log.Info("enrolled node's endpoints changed", "node", id, "admin", r.Admin)
			nv.Admin, nv.QUIC, nv.WS = r.Admin, r.QUIC, r.WS
		}
		if nv.Capacity != r.Capacity && nv.up {
			// It enrolled again with another capacity: fewer seats move
			// players off it (refused, and tried again each round, while
			// the others cannot seat them).
			ds, err := s.plane.SetCapacity(now, wire.NodeID(id), r.Capacity)
			if err != nil {
				s.cfg.Log.Warn("enrolled node's capacity not changed", "node", id, "capacity", r.Capacity, "err", err)
			} else {
				s.cfg.Log.Info("enrolled node's capacity changed", "node", id, "from", nv.Capacity, "to", r.Capacity)
				nv.Capacity = r.Capacity
				s.apply(ds, nil)
			}
		}
		if !nv.up && wall.Sub(v.seen) >= s.hosts.cfg.ForgetAfter {
			s.removeEnrolled(wall, now, id, "gone")
		}
	}
	for id := range got {
		if _, placed := s.nodes[id]; placed {
			continue
		}
		if _, draining := s.draining[id]; !draining {
			delete(got, id)
		}
	}
}

// addEnrolled makes n a placement target (s.mu held): control's AddNode
// with its RTTs to every node estimated from the sites.
func (s *Server) addEnrolled(wall time.Time, now time.Duration, n Node) error {
	if s.plane == nil {
		return fmt.Errorf("the plane has no placement yet")
	}
	cn := s.plane.Config().Nodes
	sites := map[uint32]string{n.ID: n.Site}
	for _, m := range cn {
		sites[uint32(m.ID)] = m.Site
	}
	rttOf := siteRTT(sites)
	rtt := make([]float64, len(cn))
	for j, m := range cn {
		rtt[j] = rttOf(n.ID, uint32(m.ID))
	}
	ds, err := s.plane.AddNode(now, control.Node{ID: wire.NodeID(n.ID), Site: n.Site, Capacity: n.Capacity}, rtt)
	if err != nil {
		return fmt.Errorf("control: %w", err)
	}
	s.nodes[n.ID] = &nodeView{Node: n, up: true, lastOK: wall}
	s.enrolled[n.ID].target = true
	delete(s.draining, n.ID)
	s.stats.EnrolledAdded++
	s.cfg.Log.Info("enrolled node placed", "node", n.ID, "site", n.Site, "capacity", n.Capacity, "admin", n.Admin)
	s.apply(ds, nil)
	s.instanceServerAdded(now, n)
	return nil
}

// placeFirst builds the placement of a plane without nodes of its own
// (s.mu held): control's plane over the recorded enrolled nodes that
// answered this round and are not revoked, all at once, their RTTs
// estimated from their sites. It reports whether it built one (false:
// none answered, or control refused them).
func (s *Server) placeFirst(wall time.Time, recs map[uint32]enrolledNode, got map[uint32]*live.PlayersReport) bool {
	var ns []Node
	for _, id := range sortedKeys(recs) {
		if _, answered := got[id]; answered && !recs[id].Revoked {
			ns = append(ns, recs[id].Node)
		}
	}
	if len(ns) == 0 {
		return false
	}
	p, err := s.newPlacement(ns)
	if err != nil {
		s.cfg.Log.Warn("enrolled nodes not placed", "nodes", len(ns), "err", err)
		return false
	}
	s.plane = p
	for _, n := range ns {
		v := s.enrolled[n.ID]
		if v == nil {
			v = &enrolledView{region: recs[n.ID].Region}
			s.enrolled[n.ID] = v
		}
		v.target, v.seen = true, wall
		s.nodes[n.ID] = &nodeView{Node: n, up: true, lastOK: wall}
		delete(s.draining, n.ID)
		s.stats.EnrolledAdded++
		s.cfg.Log.Info("enrolled node placed", "node", n.ID, "site", n.Site, "capacity", n.Capacity, "admin", n.Admin)
	}
	return true
}

// removeEnrolled takes enrolled node id out of the placement (s.mu held):
// control's RemoveNode moves its players off if it is up (it then drains,
// polled until they are handed over), else only forgets it. A removal
// control refuses (the last node up) is logged and tried again at the
// next round; on a plane without nodes of its own, the placement is
// dropped instead (dropPlacement).
func (s *Server) removeEnrolled(wall time.Time, now time.Duration, id uint32, why string) {
	ds, err := s.plane.RemoveNode(now, wire.NodeID(id))
	if errors.Is(err, control.ErrNodeState) && len(s.cfg.Nodes) == 0 {
		s.dropPlacement(id, why)
		return
	}
	if err != nil {
		s.cfg.Log.Warn("enrolled node not removed", "node", id, "why", why, "err", err)
		return
	}
	s.instanceServerRemoved(now, id)
	nv := s.nodes[id]
	delete(s.nodes, id)
	s.enrolled[id].target = false
	if nv.up {
		s.draining[id] = drainView{Node: nv.Node, lastOK: wall}
	}
	s.stats.EnrolledRemoved++
	s.cfg.Log.Info("enrolled node removed", "node", id, "why", why, "was_up", nv.up)
	s.apply(ds, nil)
}

// dropPlacement ends the placement of a plane without nodes of its own
// whose last node up, id, leaves (s.mu held): control's plane cannot lose
// its last node up, and there is nowhere to move the players to. The
// plane forgets the placement and its players and is back where it
// started: it admits nobody, polls the recorded nodes, and builds the
// placement anew, with control's Rebuild from their reports, when one
// answers (the other targets, down, are polled until Hosts.ForgetAfter
// as before). The players on id stay where they are until its daemon
// stops.
func (s *Server) dropPlacement(id uint32, why string) {
	for _, n := range s.mainNodes() {
		s.enrolled[n.ID].target = false
		delete(s.nodes, n.ID)
	}
	s.plane = nil
	s.stats.Rebuilt = false
	if s.inst != nil {
		// The instances too are rebuilt with the placement, from the
		// records the servers keep.
		s.inst.x, _ = control.NewInstances(s.inst.cfg) // the configuration it was built with
	}
	clear(s.players)
	clear(s.unplaced)
	s.stats.EnrolledRemoved++
	s.cfg.Log.Warn("the last placement target left: no game server is a placement target", "node", id, "why", why)
}
