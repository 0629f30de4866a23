package plane

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Instances on the live plane. With Config.Instances, the plane runs
// control.Instances over the cluster's nodes (each with Seats instance
// players, apart from its world seats) and serves:
//
//   - POST /v1/instances (InstanceRequest): open an instance with its
//     players. The answer (InstancePlacement) names where it runs: a
//     server, or, when the servers are full, the player host of one of its
//     players with the replicated host on another's (LL, PD or score).
//     The caller (the game backend) creates the instance's objects there,
//     in the instance's box.
//   - POST /v1/instances/leave ({"id", "player"}): a player left (its
//     machine too, if it ran a player host): Algorithm 4's promotion and
//     new replica follow.
//   - POST /v1/instances/close ({"id"}): the instance's game is over.
//   - GET /v1/instances: every open instance's placement, and the counts.
//
// The plane carries its decisions out on the nodes' admin endpoints, in
// the background and in order: a move migrates the instance's box to the
// new server (POST /admin/migrate-region on the old one, or, when the old
// one died, on every server that is up: the objects failed over to their
// backups somewhere); an overflow pins the box's backups to the
// replicated host, then its successor (POST /admin/prefer-backup on the
// server, the host and the replica), and migrates the box from the
// server through the replicated host to the host, so that the replicated
// host keeps the backups (node.PreferBackup); a promotion or a new
// replica pins the backups again on the host and the replica. A server's
// death (the polls) re-places its instances.
//
// Player hosts: a player's host node is the one given in the request, or
// else the node ID the plane certified for the player (POST /v1/hosts);
// the plane reaches a player host at the admin endpoint the request
// gives for it, with the nodes' admin secret (Config.AdminToken). With no
// admin endpoint for the replicated host, the plane migrates the box
// straight to the host (the server then keeps the first backup), and
// pins nothing on a player host it cannot reach.
//
// What is not built: the plane does not poll player hosts (a host's
// departure reaches it only as a leave), a restarted plane does not ask
// the nodes for their instances (control.Instances.RebuildInstances
// exists, no node reports yet), and a per-host admin secret.

// InstanceSetup turns the plane's instance API on.
type InstanceSetup struct {
	// Seats is the instance players each server node may run (at least
	// 1).
	Seats int
	// Criterion chooses an overflowed instance's host and replicated
	// host (balance.LL by default).
	Criterion balance.Criterion
}

// InstanceRequest is the body of POST /v1/instances.
type InstanceRequest struct {
	ID string `json:"id"`
	// Box is the instance's area of the world space: [x0, y0, x1, y1].
	Box     [4]float64              `json:"box"`
	Players []InstancePlayerRequest `json:"players"`
	// RTTMs is the players' RTT matrix in ms, row-major (N×N; empty: all
	// 0).
	RTTMs []float64 `json:"rtt_ms,omitempty"`
}

// InstancePlayerRequest is one player of an InstanceRequest.
type InstancePlayerRequest struct {
	ID string `json:"id"`
	// Host is the node ID of the player's player host (0: the one the
	// plane certified for the player, if any; none otherwise).
	Host uint32 `json:"host,omitempty"`
	// Admin is the player host's admin endpoint ("http://host:port").
	Admin string `json:"admin,omitempty"`
	// UptimeMinH and UptimeMaxH are the player's predicted uptime in
	// hours (PD).
	UptimeMinH float64 `json:"uptime_min_h,omitempty"`
	UptimeMaxH float64 `json:"uptime_max_h,omitempty"`
}

// InstancePlacement is where an instance runs (POST /v1/instances, GET
// /v1/instances).
type InstancePlacement struct {
	ID string `json:"id"`
	// Node is the server or player host that runs it.
	Node   uint32 `json:"node"`
	Hosted bool   `json:"hosted"`
	// Player is the hosting player; Replica and ReplicaPlayer its
	// replicated host (0: none).
	Player        string `json:"player,omitempty"`
	Replica       uint32 `json:"replica,omitempty"`
	ReplicaPlayer string `json:"replica_player,omitempty"`
	Players       int    `json:"players"`
}

// InstancesState is the answer to GET /v1/instances.
type InstancesState struct {
	Instances []InstancePlacement   `json:"instances"`
	Stats     control.InstanceStats `json:"stats"`
	// Failed counts the admin requests to nodes that failed.
	Failed int `json:"failed"`
}

// instancePlane is the plane's instance state (under Server.mu).
type instancePlane struct {
	x      *control.Instances
	boxes  map[string]world.Box
	admin  map[uint32]string // player host → its admin endpoint
	failed int
	// last is closed once the node requests of the latest decisions are
	// done: each batch waits for the one before, so that they reach the
	// nodes in the order of the decisions.
	last chan struct{}
}

// nodeCall is one admin request to a node.
type nodeCall struct {
	admin, path string
	node        uint32
	q           url.Values
	// chained: a migration of what the call before moved here; it is
	// asked again (every chainRetry, for up to chainWait) until it moves
	// as many objects as that one did.
	chained bool
}

// chainRetry and chainWait pace a chained migration: the objects of the
// one before reach the node within a few frames.
const (
	chainRetry = 100 * time.Millisecond
	chainWait  = 5 * time.Second
)

func newInstancePlane(su InstanceSetup, nodes []Node) (*instancePlane, error) {
	if su.Seats < 1 {
		return nil, fmt.Errorf("%w: instances: %d seats per server, want at least 1", ErrConfig, su.Seats)
	}
	var cn []control.Node
	for _, n := range nodes {
		cn = append(cn, control.Node{ID: wire.NodeID(n.ID), Site: n.Site, Capacity: su.Seats})
	}
	x, err := control.NewInstances(control.InstanceConfig{Nodes: cn, Criterion: su.Criterion})
	if err != nil {
		return nil, fmt.Errorf("%w: instances: %w", ErrConfig, err)
	}
	return &instancePlane{x: x, boxes: map[string]world.Box{}, admin: map[uint32]string{}}, nil
}

// callNode makes one admin request and returns what a migration moved.
func (s *Server) callNode(c nodeCall) (int, error) {
	u := c.admin + c.path + "?" + c.q.Encode()
	resp, err := s.cfg.Client.Post(u, "", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode/100 != 2 {
		return 0, fmt.Errorf("status %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	var out struct {
		Moved int `json:"moved"`
	}
	if c.path == "/admin/migrate-region" {
		if err := json.Unmarshal(b, &out); err != nil {
			return 0, fmt.Errorf("migrate-region answer: %v", err)
		}
	}
	s.cfg.Log.Debug("instance: node request", "node", c.node, "path", c.path, "query", c.q.Encode(), "moved", out.Moved)
	return out.Moved, nil
}

// runCalls makes a batch's requests in order.
func (s *Server) runCalls(calls []nodeCall) {
	prev := 0
	for _, c := range calls {
		moved, err := s.callNode(c)
		for start := time.Now(); err == nil && c.chained && moved < prev && time.Since(start) < chainWait; {
			time.Sleep(chainRetry)
			var m int
			m, err = s.callNode(c)
			moved += m
		}
		if err == nil && c.chained && moved < prev {
			err = fmt.Errorf("moved %d of the %d objects the migration before it moved", moved, prev)
		}
		if err != nil {
			s.cfg.Log.Info("instance: node request", "node", c.node, "path", c.path, "err", err)
			s.mu.Lock()
			s.inst.failed++
			s.mu.Unlock()
		}
		prev = moved
	}
}

// boxValues is a box as the admin endpoints take it.
func boxValues(b world.Box) url.Values {
	q := url.Values{}
	for k, v := range map[string]float64{"x0": b.Min[0], "y0": b.Min[1], "x1": b.Max[0], "y1": b.Max[1]} {
		q.Set(k, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return q
}

// adminOf returns node n's admin endpoint: a server's, or a player
// host's as a request gave it ("" if unknown).
func (s *Server) adminOf(n wire.NodeID) string {
	if v, ok := s.nodes[uint32(n)]; ok {
		return v.Admin
	}
	return s.inst.admin[uint32(n)]
}

// carryOut queues the node requests of instance decisions (s.mu held).
func (s *Server) carryOut(ds []control.Decision) {
	var calls []nodeCall
	migrate := func(from, to wire.NodeID, box world.Box, chained bool) {
		if a := s.adminOf(from); a != "" && from != to {
			q := boxValues(box)
			q.Set("node", strconv.FormatUint(uint64(to), 10))
			calls = append(calls, nodeCall{admin: a, path: "/admin/migrate-region", node: uint32(from), q: q, chained: chained})
		}
	}
	pin := func(id string, box world.Box, on ...wire.NodeID) {
		w, ok := s.inst.x.Where(id)
		if !ok || !w.Hosted {
			return
		}
		var order []string
		if w.Replica != 0 {
			order = append(order, strconv.FormatUint(uint64(w.Replica), 10))
			if n := s.inst.x.Successor(id); n != 0 {
				order = append(order, strconv.FormatUint(uint64(n), 10))
			}
		}
		for _, n := range on {
			if a := s.adminOf(n); a != "" && n != 0 {
				q := boxValues(box)
				q.Set("nodes", strings.Join(order, ","))
				calls = append(calls, nodeCall{admin: a, path: "/admin/prefer-backup", node: uint32(n), q: q})
			}
		}
	}
	for _, d := range ds {
		box := s.inst.boxes[d.Instance]
		s.cfg.Log.Info("instance", "decision", d.String())
		switch d.Kind {
		case control.MoveInstance:
			if !d.Failover {
				migrate(d.From, d.To, box, false)
				break
			}
			// The dead server's objects failed over to their backups,
			// wherever they were: every live server moves what it holds.
			for _, n := range s.cfg.Nodes {
				if v := s.nodes[n.ID]; v.up && wire.NodeID(n.ID) != d.To && wire.NodeID(n.ID) != d.From {
					migrate(wire.NodeID(n.ID), d.To, box, false)
				}
			}
		case control.OverflowInstance:
			pin(d.Instance, box, d.From, d.Replica, d.To)
			if d.From == 0 {
				break
			}
			src := []wire.NodeID{d.From}
			if d.Failover {
				src = src[:0]
				for _, n := range s.cfg.Nodes {
					if s.nodes[n.ID].up && wire.NodeID(n.ID) != d.From {
						src = append(src, wire.NodeID(n.ID))
					}
				}
			}
			if d.Replica != 0 && s.adminOf(d.Replica) != "" {
				// Through the replicated host: it keeps the first backup.
				for _, f := range src {
					migrate(f, d.Replica, box, false)
				}
				// Once they are there (a failover's several sources: once
				// the last one's are).
				migrate(d.Replica, d.To, box, true)
			} else {
				for _, f := range src {
					migrate(f, d.To, box, false)
				}
			}
		case control.PromoteInstance, control.NewReplica:
			pin(d.Instance, box, d.To, d.Replica)
		case control.LoseInstance, control.EndInstance:
			delete(s.inst.boxes, d.Instance)
		}
	}
	if len(calls) == 0 {
		return
	}
	prev, done := s.inst.last, make(chan struct{})
	s.inst.last = done
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		s.runCalls(calls)
	}()
}

// instanceNodeDown and instanceNodeUp pass a server's death and return
// to the instance plane (s.mu held).
func (s *Server) instanceNodeDown(now time.Duration, n uint32) {
	if s.inst == nil {
		return
	}
	ds, err := s.inst.x.NodeDown(now, wire.NodeID(n))
	if err != nil {
		s.cfg.Log.Warn("instance: node down refused", "node", n, "err", err)
		return
	}
	s.carryOut(ds)
}

func (s *Server) instanceNodeUp(now time.Duration, n uint32) {
	if s.inst == nil {
		return
	}
	if err := s.inst.x.NodeUp(now, wire.NodeID(n)); err != nil {
		s.cfg.Log.Warn("instance: node up refused", "node", n, "err", err)
	}
}

// placement returns instance id's placement (s.mu held).
func (s *Server) placement(id string) (InstancePlacement, bool) {
	w, ok := s.inst.x.Where(id)
	if !ok {
		return InstancePlacement{}, false
	}
	return InstancePlacement{ID: id, Node: uint32(w.Node), Hosted: w.Hosted, Player: w.Player, Replica: uint32(w.Replica),
		ReplicaPlayer: w.ReplicaPlayer, Players: w.Players}, true
}

// decodeBody decodes a JSON request body strictly into v.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad request body: %v", err)
	}
	if dec.More() {
		return errors.New("bad request body: data after the request")
	}
	return nil
}

// instance converts a request (s.mu held).
func (s *Server) instance(req InstanceRequest) (control.Instance, map[uint32]string, error) {
	a := control.Instance{ID: req.ID, RTT: req.RTTMs}
	a.Box.Min[0], a.Box.Min[1], a.Box.Max[0], a.Box.Max[1] = req.Box[0], req.Box[1], req.Box[2], req.Box[3]
	if err := a.Box.Validate(2); err != nil {
		return a, nil, fmt.Errorf("box: %w", err)
	}
	admin := map[uint32]string{}
	for i, p := range req.Players {
		if err := checkPlayer(p.ID); err != nil {
			return a, nil, fmt.Errorf("player %d: %w", i, err)
		}
		h := p.Host
		if h == 0 && s.hosts != nil {
			s.hosts.mu.Lock()
			h = s.hosts.ids[p.ID]
			s.hosts.mu.Unlock()
		}
		if h > live.MaxNodeID {
			return a, nil, fmt.Errorf("player %q: host node %d, want at most %d", p.ID, h, live.MaxNodeID)
		}
		if p.Admin != "" {
			u, err := url.Parse(p.Admin)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || h == 0 {
				return a, nil, fmt.Errorf("player %q: admin %q: want http://host:port, for a player host", p.ID, p.Admin)
			}
			admin[h] = p.Admin
		}
		a.Players = append(a.Players, control.InstancePlayer{ID: p.ID, Host: wire.NodeID(h),
			Uptime: balance.Uptime{Min: p.UptimeMinH, Max: p.UptimeMaxH}})
	}
	return a, admin, nil
}

func (s *Server) serveOpenInstance(w http.ResponseWriter, r *http.Request) {
	var req InstanceRequest
	if err := decodeBody(r, &req); err != nil {
		http.Error(w, "instances: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a, admin, err := s.instance(req)
	if err != nil {
		http.Error(w, "instances: "+err.Error(), http.StatusBadRequest)
		return
	}
	_, now := s.now()
	ds, err := s.inst.x.Open(now, a)
	switch {
	case errors.Is(err, control.ErrNoCapacity):
		http.Error(w, "instances: "+err.Error(), http.StatusServiceUnavailable)
		return
	case errors.Is(err, control.ErrTime):
		http.Error(w, "instances: "+err.Error(), http.StatusInternalServerError)
		return
	case err != nil:
		http.Error(w, "instances: "+err.Error(), http.StatusBadRequest)
		return
	}
	for n, u := range admin {
		s.inst.admin[n] = u
	}
	s.inst.boxes[a.ID] = a.Box
	s.carryOut(ds)
	p, _ := s.placement(a.ID)
	writeJSON(w, p)
}

// instanceEvent is the body of POST /v1/instances/leave and /close.
type instanceEvent struct {
	ID     string `json:"id"`
	Player string `json:"player,omitempty"`
}

func (s *Server) serveLeaveInstance(w http.ResponseWriter, r *http.Request) {
	var ev instanceEvent
	if err := decodeBody(r, &ev); err != nil {
		http.Error(w, "instances: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, now := s.now()
	ds, err := s.inst.x.Leave(now, ev.ID, ev.Player)
	if err != nil {
		http.Error(w, "instances: "+err.Error(), http.StatusNotFound)
		return
	}
	s.carryOut(ds)
	p, ok := s.placement(ev.ID)
	if !ok {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, p)
}

func (s *Server) serveCloseInstance(w http.ResponseWriter, r *http.Request) {
	var ev instanceEvent
	if err := decodeBody(r, &ev); err != nil {
		http.Error(w, "instances: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, now := s.now()
	if err := s.inst.x.Close(now, ev.ID); err != nil {
		http.Error(w, "instances: "+err.Error(), http.StatusNotFound)
		return
	}
	delete(s.inst.boxes, ev.ID)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) serveInstances(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, s.instancesState())
}

// instancesState is GET /v1/instances's answer (s.mu held).
func (s *Server) instancesState() InstancesState {
	st := InstancesState{Instances: []InstancePlacement{}, Stats: s.inst.x.Stats(), Failed: s.inst.failed}
	for _, id := range s.inst.x.InstanceIDs() {
		p, _ := s.placement(id)
		st.Instances = append(st.Instances, p)
	}
	return st
}

// Instances returns the open instances' placements and the counts (the
// zero InstancesState without Config.Instances).
func (s *Server) Instances() InstancesState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil {
		return InstancesState{}
	}
	return s.instancesState()
}
