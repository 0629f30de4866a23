package plane

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
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
// replica pins the backups again on the host and the replica, and so
// does any change of the successor (its player leaving). A migration
// that fails is made again at later polls while the instance stays
// placed where it was sent (retry.go). A server's death (the polls)
// re-places its instances. The servers are the
// configured nodes and the enrolled game servers that are placement
// targets (enrolled.go), with InstanceSetup.Seats each; an enrolled server
// taken out of the placement has its instances re-placed, migrated from
// it while it is up (control.Instances.RemoveServer).
//
// Player hosts: a player's host node is the one given in the request, or
// else the node ID the plane certified for the player (POST /v1/hosts);
// the plane reaches a player host at the admin endpoint the request
// gives for it, with the nodes' admin secret (Config.AdminToken). With no
// admin endpoint for the replicated host, the plane migrates the box
// straight to the host (the server then keeps the first backup), and
// pins nothing on a player host it cannot reach.
//
// The plane holds no instance state of its own: it gives every server
// that is up the records of the instances it runs (POST /admin/instances,
// live.InstanceRecord: each instance as opened, the players who left, the
// replicated host, a stamp), and the keeper (the lowest-numbered server
// that is up) also those of the instances player hosts run, whenever they
// change and when a server returns. The servers report them with their
// players (GET /admin/players), and the plane's first round of polls
// rebuilds its instances from them (control.Instances.RebuildInstances)
// along with its players: the rebuilt plane decides as one that never
// went down. Of two records of one instance (a server cut off while its
// instance moved), the higher stamp wins; a rebuild from reports that
// contradict each other waits for the next poll. A server that restarts
// keeps none: its instances failed over and were re-placed, their records
// given to their new servers.
//
// Player hosts' polls: once rebuilt, the plane also polls the host and
// the replicated host of every overflowed instance at the admin endpoint
// it knows for them (GET /admin/players, every Poll); one silent for
// DownAfter is gone (control.Instances.NodeDown: its player leaves every
// instance it is in, and Algorithm 4's promotion and new replica follow),
// counted in InstancesState.HostsGone. A host that left while the plane
// was down is seen this way after the rebuild.
//
// What is not built: a player host with no admin endpoint is not polled
// (its departure reaches the plane only as a leave), player hosts keep no
// records (the keeper does), and a per-host admin secret.

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
	// Failed counts the admin requests to nodes that failed (retries
	// included).
	Failed int `json:"failed"`
	// MigrationRetries counts the failed migrations made again;
	// MigrationsPending is those waiting to be made again (retry.go).
	MigrationRetries  int `json:"migration_retries"`
	MigrationsPending int `json:"migrations_pending"`
	// HostsGone counts the player hosts the polls found gone (silent for
	// DownAfter).
	HostsGone int `json:"hosts_gone"`
}

// instancePlane is the plane's instance state (under Server.mu).
type instancePlane struct {
	cfg control.InstanceConfig
	// seats is each server's instance seats (InstanceSetup.Seats):
	// enrolled servers get as many.
	seats int
	x     *control.Instances
	boxes map[string]world.Box
	// pinned is the preferred backups each hosted instance's nodes were
	// last sent (instancePlane.order).
	pinned map[string]string
	admin  map[uint32]string // player host → its admin endpoint
	failed int
	// stranded are the migrations that failed, to be made again
	// (retry.go); retries counts the retries made.
	stranded strandedBook
	retries  int
	// stamps are the stamps of the instances' records, with the record
	// (stamp 0, JSON) they were given for.
	stamps map[string]stamped
	// stamp is the latest stamp given.
	stamp int64
	// sent is the list of records (JSON) each server was last sent or
	// found keeping; a server that goes down is sent its list again when
	// it returns.
	sent map[uint32]string
	// resend: a node's records did not reach it (its /admin/instances
	// request failed); the next idle poll sends them again.
	resend bool
	// hostSeen is when each player host the plane polls (the host or
	// replicated host of an instance, with an admin endpoint) last
	// answered, or became one to poll.
	hostSeen map[uint32]time.Time
	// hostDowns counts the player hosts found gone by the polls.
	hostDowns int
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
	// chained: a migration of what the call before moved here; it names
	// those objects and is asked again (every chainRetry, for up to
	// chainWait) until each of them has moved on (settle).
	chained bool
	// body, if set, is the request's JSON body.
	body []byte
	// inst is the instance a migration moves, at the placement it had
	// when the migration was decided (made again if it fails: retry.go).
	inst string
	at   instanceAt
}

// stamped is an instance record's stamp.
type stamped struct {
	record string
	stamp  int64
}

// chainRetry and chainWait pace the settling of a migration: the objects
// of the one before reach the node within a few frames, and a migration
// that waits for an old backup's release is done, or aborted and made
// anew, within two seconds; a loaded host takes longer.
const (
	chainRetry = 100 * time.Millisecond
	chainWait  = 20 * time.Second
)

func newInstancePlane(su InstanceSetup, nodes []Node) (*instancePlane, error) {
	if su.Seats < 1 {
		return nil, fmt.Errorf("%w: instances: %d seats per server, want at least 1", ErrConfig, su.Seats)
	}
	var cn []control.Node
	for _, n := range nodes {
		cn = append(cn, control.Node{ID: wire.NodeID(n.ID), Site: n.Site, Capacity: su.Seats})
	}
	cfg := control.InstanceConfig{Nodes: cn, Criterion: su.Criterion}
	x, err := control.NewInstances(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: instances: %w", ErrConfig, err)
	}
	return &instancePlane{cfg: cfg, seats: su.Seats, x: x, boxes: map[string]world.Box{}, pinned: map[string]string{}, admin: map[uint32]string{}, stamps: map[string]stamped{},
		sent: map[uint32]string{}, hostSeen: map[uint32]time.Time{}, stranded: strandedBook{}}, nil
}

// callNode makes one admin request and returns what a migration moved
// (nothing for another request).
func (s *Server) callNode(c nodeCall) (live.MigrateAnswer, error) {
	var out live.MigrateAnswer
	u := c.admin + c.path + "?" + c.q.Encode()
	var body io.Reader
	if c.body != nil {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequest(http.MethodPost, u, body)
	if err != nil {
		return out, err
	}
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.adminDo(req, c.node)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return out, fmt.Errorf("status %s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if c.path == "/admin/migrate-region" {
		if err := json.Unmarshal(b, &out); err != nil {
			return out, fmt.Errorf("migrate-region answer: %v", err)
		}
	}
	s.cfg.Log.Debug("instance: node request", "node", c.node, "path", c.path, "query", c.q.Encode(), "moved", out.Moved)
	return out, nil
}

// runCalls makes a batch's requests in order. A migration is asked
// again until what it moved has left its node (settle); a chained one
// names, besides, the objects the migration before it moved (they may
// still be on their way) until each of them has moved on. A migration
// that fails is recorded, with the chained ones after it, to be made
// again (retry.go); retry is the record when the batch makes one again.
func (s *Server) runCalls(calls []nodeCall, retry *stranded) {
	var prev []uint64 // what the migration before moved on
	var failed error  // the first failure of a retry
	recorded := false // the failed migration before, recorded with its chain
	for i, c := range calls {
		var err error
		var moved []uint64
		migration := c.path == "/admin/migrate-region"
		if migration {
			var arriving []uint64
			if c.chained {
				arriving = prev
			}
			moved, err = s.settle(c, arriving)
		} else {
			_, err = s.callNode(c)
		}
		recorded = recorded && c.chained
		if err != nil {
			s.cfg.Log.Info("instance: node request", "node", c.node, "path", c.path, "err", err)
			s.mu.Lock()
			s.inst.failed++
			if c.path == "/admin/instances" && s.inst.sent[c.node] == string(c.body) {
				// Not delivered: the next idle poll sends the node its
				// records again (retryInstances).
				delete(s.inst.sent, c.node)
				s.inst.resend = true
			}
			if migration && c.inst != "" && retry == nil && !recorded {
				r := &stranded{call: c, inst: c.inst, at: c.at, region: -1, err: err.Error()}
				r.to, _ = parseNodeID(c.q.Get("node"))
				for _, n := range calls[i+1:] {
					if !n.chained {
						break
					}
					r.chain = append(r.chain, n)
				}
				wall, _ := s.now()
				s.addStranded(s.inst.stranded, r, wall)
				recorded = true
			}
			s.mu.Unlock()
			if failed == nil {
				failed = err
			}
		}
		prev = moved
	}
	if retry != nil {
		s.mu.Lock()
		s.retried(s.inst.stranded, retry, failed)
		s.mu.Unlock()
	}
}

// parseNodeID parses a node ID as a query names it.
func parseNodeID(v string) (uint32, error) {
	n, err := strconv.ParseUint(v, 10, 32)
	return uint32(n), err
}

// settle makes migration c and asks its node again (every chainRetry,
// for up to the plane's chainWait) until every object it migrated, and
// every object of arriving (on their way to the node), has left the node
// or is known to be deleted there, and returns the IDs that left. An
// object still on the node after a migration was started is one whose
// migration waits for its old backup's release, or was aborted (the
// release did not come in time): asked again, the node migrates it anew.
func (s *Server) settle(c nodeCall, arriving []uint64) ([]uint64, error) {
	wait := map[uint64]bool{} // on their way to the node
	for _, id := range arriving {
		wait[id] = true
	}
	out := map[uint64]bool{} // migrated from the node, maybe still there
	var left []uint64
	for start := time.Now(); ; {
		q := c.q
		if len(wait)+len(out) > 0 {
			ids := slices.Concat(slices.Collect(maps.Keys(wait)), slices.Collect(maps.Keys(out)))
			slices.Sort(ids)
			ids = slices.Compact(ids)
			if len(ids) > live.MaxWant {
				// A node takes no more in one request: the rest are
				// not followed (the box still covers them).
				for _, id := range ids[live.MaxWant:] {
					delete(wait, id)
					delete(out, id)
				}
				ids = ids[:live.MaxWant]
			}
			q = maps.Clone(c.q)
			q.Set("want", joinIDs(ids))
		}
		a, err := s.callNode(nodeCall{admin: c.admin, path: c.path, node: c.node, q: q})
		if err != nil {
			slices.Sort(left)
			return left, err
		}
		here := map[uint64]bool{}
		for _, id := range slices.Concat(a.IDs, a.Pending) {
			here[id], out[id] = true, true
			delete(wait, id)
		}
		for _, id := range a.Gone {
			delete(wait, id)
			delete(out, id)
		}
		for _, id := range slices.Sorted(maps.Keys(out)) {
			if !here[id] {
				delete(out, id)
				left = append(left, id)
			}
		}
		if len(wait)+len(out) == 0 {
			slices.Sort(left)
			return left, nil
		}
		if time.Since(start) >= s.chainWait {
			slices.Sort(left)
			return left, fmt.Errorf("after %v, %d objects on their way never reached node %d, %d never left it",
				s.chainWait, len(wait), c.node, len(out))
		}
		time.Sleep(chainRetry)
	}
}

// joinIDs is a want list as migrate-region takes it.
func joinIDs(ids []uint64) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatUint(id, 10))
	}
	return b.String()
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

// order is the preferred backups of hosted instance id, as the nodes
// are sent them: its replicated host, then its successor ("" if none).
func (y *instancePlane) order(id string) string {
	w, ok := y.x.Where(id)
	if !ok || !w.Hosted || w.Replica == 0 {
		return ""
	}
	order := strconv.FormatUint(uint64(w.Replica), 10)
	if n := y.x.Successor(id); n != 0 {
		order += "," + strconv.FormatUint(uint64(n), 10)
	}
	return order
}

// carryOut queues the node requests of instance decisions (s.mu held).
func (s *Server) carryOut(ds []control.Decision) {
	var calls []nodeCall
	migrate := func(id string, from, to wire.NodeID, box world.Box, chained bool) {
		if a := s.adminOf(from); a != "" && from != to {
			q := boxValues(box)
			q.Set("node", strconv.FormatUint(uint64(to), 10))
			calls = append(calls, nodeCall{admin: a, path: "/admin/migrate-region", node: uint32(from), q: q, chained: chained, inst: id})
		}
	}
	pin := func(id string, box world.Box, on ...wire.NodeID) {
		w, ok := s.inst.x.Where(id)
		if !ok || !w.Hosted {
			return
		}
		order := s.inst.order(id)
		s.inst.pinned[id] = order
		for _, n := range on {
			if a := s.adminOf(n); a != "" && n != 0 {
				q := boxValues(box)
				q.Set("nodes", order)
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
				migrate(d.Instance, d.From, d.To, box, false)
				break
			}
			// The dead server's objects failed over to their backups,
			// wherever they were: every live server moves what it holds.
			for _, n := range s.mainNodes() {
				if v := s.nodes[n.ID]; v.up && wire.NodeID(n.ID) != d.To && wire.NodeID(n.ID) != d.From {
					migrate(d.Instance, wire.NodeID(n.ID), d.To, box, false)
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
				for _, n := range s.mainNodes() {
					if s.nodes[n.ID].up && wire.NodeID(n.ID) != d.From {
						src = append(src, wire.NodeID(n.ID))
					}
				}
			}
			if d.Replica != 0 && s.adminOf(d.Replica) != "" {
				// Through the replicated host: it keeps the first backup.
				for _, f := range src {
					migrate(d.Instance, f, d.Replica, box, false)
				}
				// Once they are there (a failover's several sources: once
				// the last one's are).
				migrate(d.Instance, d.Replica, d.To, box, true)
			} else {
				for _, f := range src {
					migrate(d.Instance, f, d.To, box, false)
				}
			}
		case control.PromoteInstance, control.NewReplica:
			pin(d.Instance, box, d.To, d.Replica)
		case control.LoseInstance, control.EndInstance:
			delete(s.inst.boxes, d.Instance)
		}
	}
	// A player who leaves as neither the host nor the replicated host may
	// be the successor, the second preferred backup: no decision names
	// it, but the pins must drop it, or a replica promoted later backs up
	// on a node long gone and has no live backup until it finds that node
	// dead.
	for _, id := range sortedKeys(s.inst.pinned) {
		w, ok := s.inst.x.Where(id)
		if !ok || !w.Hosted {
			delete(s.inst.pinned, id)
			continue
		}
		if s.inst.pinned[id] != s.inst.order(id) {
			pin(id, s.inst.boxes[id], w.Node, w.Replica)
		}
	}
	// A migration is made again, should it fail, while the instance
	// stays where these decisions place it; and it replaces the failed
	// migrations of the instance's decisions before.
	moving := map[string]bool{}
	for i := range calls {
		if id := calls[i].inst; id != "" {
			moving[id] = true
			if p, ok := s.inst.x.Where(id); ok {
				calls[i].at = placedAt(p)
			} else {
				calls[i].inst = ""
			}
		}
	}
	s.dropStranded(s.inst.stranded, func(r *stranded) string {
		if moving[r.inst] {
			return "the instance migrates again"
		}
		return ""
	})
	calls = append(calls, s.recordCalls()...)
	if len(calls) == 0 {
		return
	}
	s.queueCalls(func() { s.runCalls(calls, nil) })
}

// queueCalls runs a batch of requests in the background once the batch
// before is done, so that they reach the nodes in the order of the
// decisions (s.mu held).
func (s *Server) queueCalls(run func()) {
	prev, done := s.inst.last, make(chan struct{})
	s.inst.last = done
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer close(done)
		if prev != nil {
			<-prev
		}
		run()
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
	delete(s.inst.sent, n)
	s.carryOut(ds)
}

// instanceServerAdded and instanceServerRemoved pass an enrolled game
// server's arrival among the placement targets and its removal to the
// instance plane (s.mu held): it gets the configured servers' instance
// seats; removed, its instances are re-placed (moved off it while it
// runs). The removal's requests are queued before the node is forgotten.
func (s *Server) instanceServerAdded(now time.Duration, n Node) {
	if s.inst == nil {
		return
	}
	if err := s.inst.x.AddServer(now, control.Node{ID: wire.NodeID(n.ID), Site: n.Site, Capacity: s.inst.seats}); err != nil {
		s.cfg.Log.Warn("instance: enrolled server not added", "node", n.ID, "err", err)
		return
	}
	if s.stats.Rebuilt {
		// Before the rebuild the plane knows no instance: it must not
		// give the servers its empty records.
		s.carryOut(nil)
	}
}

func (s *Server) instanceServerRemoved(now time.Duration, n uint32) {
	if s.inst == nil {
		return
	}
	ds, err := s.inst.x.RemoveServer(now, wire.NodeID(n))
	if err != nil {
		s.cfg.Log.Warn("instance: enrolled server not removed", "node", n, "err", err)
		return
	}
	delete(s.inst.sent, n)
	if s.stats.Rebuilt {
		s.carryOut(ds)
	}
}

func (s *Server) instanceNodeUp(now time.Duration, n uint32) {
	if s.inst == nil {
		return
	}
	if err := s.inst.x.NodeUp(now, wire.NodeID(n)); err != nil {
		s.cfg.Log.Warn("instance: node up refused", "node", n, "err", err)
	}
	s.carryOut(nil) // its records
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
	// What the nodes would refuse to keep is refused here.
	rec := live.InstanceRecord{ID: req.ID, Node: 1, Box: req.Box, RTTMs: req.RTTMs}
	for _, p := range req.Players {
		rec.Players = append(rec.Players, live.InstanceRecordPlayer{ID: p.ID, Host: p.Host, Admin: p.Admin,
			UptimeMinH: p.UptimeMinH, UptimeMaxH: p.UptimeMaxH})
	}
	if err := rec.Check(); err != nil {
		return control.Instance{}, nil, err
	}
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
	s.carryOut(nil) // the records
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) serveInstances(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, s.instancesState())
}

// instancesState is GET /v1/instances's answer (s.mu held).
func (s *Server) instancesState() InstancesState {
	st := InstancesState{Instances: []InstancePlacement{}, Stats: s.inst.x.Stats(), Failed: s.inst.failed, HostsGone: s.inst.hostDowns,
		MigrationRetries: s.inst.retries, MigrationsPending: len(s.inst.stranded)}
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

// records returns the open instances' records, each with the node that
// runs it, in ID order (s.mu held). A record whose content changed gets
// a new stamp.
func (s *Server) records() []live.InstanceRecord {
	var out []live.InstanceRecord
	wall, _ := s.now()
	live_ := map[string]bool{}
	for _, rep := range s.inst.x.InstanceSnapshot() {
		for _, ri := range rep.Instances {
			r := live.InstanceRecord{ID: ri.ID, Node: uint32(rep.Node), RTTMs: ri.RTT, Left: ri.Left, Replica: ri.Replica,
				Box: [4]float64{ri.Box.Min[0], ri.Box.Min[1], ri.Box.Max[0], ri.Box.Max[1]}}
			for _, p := range ri.Players {
				r.Players = append(r.Players, live.InstanceRecordPlayer{ID: p.ID, Host: uint32(p.Host), Admin: s.inst.admin[uint32(p.Host)],
					UptimeMinH: p.Uptime.Min, UptimeMaxH: p.Uptime.Max})
			}
			key, _ := json.Marshal(r) // plain data: cannot fail
			st, ok := s.inst.stamps[r.ID]
			if !ok || st.record != string(key) {
				s.inst.stamp = max(s.inst.stamp+1, wall.UnixNano())
				st = stamped{record: string(key), stamp: s.inst.stamp}
				s.inst.stamps[r.ID] = st
			}
			r.Stamp = st.stamp
			live_[r.ID] = true
			out = append(out, r)
		}
	}
	for id := range s.inst.stamps {
		if !live_[id] {
			delete(s.inst.stamps, id)
		}
	}
	slices.SortFunc(out, func(a, b live.InstanceRecord) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// keeper is the server that keeps the records of the instances player
// hosts run: the lowest-numbered server that is up (0: none).
func (s *Server) keeper() uint32 {
	var k uint32
	for _, n := range s.mainNodes() {
		if s.nodes[n.ID].up && (k == 0 || n.ID < k) {
			k = n.ID
		}
	}
	return k
}

// recordCalls returns the requests that give every server that is up the
// records it must keep, where they changed (s.mu held): a server keeps
// those of the instances it runs, the keeper also those player hosts
// run.
func (s *Server) recordCalls() []nodeCall {
	want := map[uint32][]live.InstanceRecord{}
	k := s.keeper()
	for _, r := range s.records() {
		at := r.Node
		if _, server := s.nodes[at]; !server {
			at = k
		}
		want[at] = append(want[at], r)
	}
	var calls []nodeCall
	for _, n := range s.mainNodes() {
		if !s.nodes[n.ID].up {
			continue
		}
		rs := want[n.ID]
		if rs == nil {
			rs = []live.InstanceRecord{}
		}
		b, _ := json.Marshal(rs) // plain data: cannot fail
		if s.inst.sent[n.ID] == string(b) {
			continue
		}
		s.inst.sent[n.ID] = string(b)
		calls = append(calls, nodeCall{admin: n.Admin, path: "/admin/instances", node: n.ID, q: url.Values{}, body: b})
	}
	return calls
}

// rebuildInstances builds the instance plane a restarted plane starts
// with from the records the servers reported in the first round of polls
// (got): a server's own instances, and, from any server, those player
// hosts run; of two records of one instance, the higher stamp's. It
// changes nothing: adoptInstances takes the result once the players'
// rebuild succeeded too.
func (s *Server) rebuildInstances(now time.Duration, got map[uint32]*live.PlayersReport) (*instancePlane, error) {
	type held struct {
		r  live.InstanceRecord
		by uint32
	}
	best := map[string]held{}
	for _, id := range sortedKeys(got) {
		for _, r := range got[id].Instances {
			if _, server := s.nodes[r.Node]; server && r.Node != id {
				return nil, fmt.Errorf("server %d reports instance %q as server %d's", id, r.ID, r.Node)
			}
			if h, dup := best[r.ID]; dup {
				s.cfg.Log.Info("instance: reported twice", "instance", r.ID, "nodes", []uint32{h.by, id}, "stamps", []int64{h.r.Stamp, r.Stamp})
				if r.Stamp <= h.r.Stamp {
					continue
				}
			}
			best[r.ID] = held{r, id}
		}
	}
	x, err := control.NewInstances(s.inst.cfg)
	if err != nil {
		return nil, fmt.Errorf("instances: internal error: %w", err)
	}
	// The enrolled servers placed before the rebuild are servers too.
	for _, n := range s.mainNodes()[len(s.cfg.Nodes):] {
		if err := x.AddServer(now, control.Node{ID: wire.NodeID(n.ID), Site: n.Site, Capacity: s.inst.seats}); err != nil {
			return nil, fmt.Errorf("instances: enrolled server %d: %w", n.ID, err)
		}
	}
	y := &instancePlane{cfg: s.inst.cfg, seats: s.inst.seats, x: x, boxes: map[string]world.Box{}, pinned: map[string]string{}, admin: map[uint32]string{}, stamps: map[string]stamped{},
		sent: map[uint32]string{}, hostSeen: map[uint32]time.Time{}, stranded: strandedBook{}}
	byNode := map[uint32]*control.InstanceReport{}
	for id := range got {
		byNode[id] = &control.InstanceReport{Node: wire.NodeID(id)}
	}
	for _, id := range sortedKeys(best) {
		r := best[id].r
		ri := control.RunningInstance{Instance: control.Instance{ID: r.ID, RTT: r.RTTMs}, Left: r.Left, Replica: r.Replica}
		ri.Box.Min[0], ri.Box.Min[1], ri.Box.Max[0], ri.Box.Max[1] = r.Box[0], r.Box[1], r.Box[2], r.Box[3]
		for _, p := range r.Players {
			ri.Players = append(ri.Players, control.InstancePlayer{ID: p.ID, Host: wire.NodeID(p.Host),
				Uptime: balance.Uptime{Min: p.UptimeMinH, Max: p.UptimeMaxH}})
			if p.Admin != "" {
				y.admin[p.Host] = p.Admin
			}
		}
		rep := byNode[r.Node]
		if rep == nil {
			rep = &control.InstanceReport{Node: wire.NodeID(r.Node)}
			byNode[r.Node] = rep
		}
		rep.Instances = append(rep.Instances, ri)
		y.boxes[r.ID] = ri.Box
		y.stamp = max(y.stamp, r.Stamp)
		key := r
		key.Stamp = 0
		b, _ := json.Marshal(key) // plain data: cannot fail
		y.stamps[r.ID] = stamped{record: string(b), stamp: r.Stamp}
	}
	var reports []control.InstanceReport
	for _, n := range sortedKeys(byNode) {
		reports = append(reports, *byNode[n])
	}
	slices.SortFunc(reports, func(a, b control.InstanceReport) int { return cmp.Compare(a.Node, b.Node) })
	if err := y.x.RebuildInstances(now, reports); err != nil {
		return nil, err
	}
	for id := range got {
		rs := got[id].Instances
		if rs == nil {
			rs = []live.InstanceRecord{}
		}
		b, _ := json.Marshal(rs) // plain data: cannot fail
		y.sent[id] = string(b)
	}
	return y, nil
}

// adoptInstances takes a rebuilt instance plane and gives the servers the
// records they must keep where theirs differ (a server cut off while an
// instance moved keeps a stale one) (s.mu held).
func (s *Server) adoptInstances(y *instancePlane) {
	y.failed, y.last, y.hostDowns = s.inst.failed, s.inst.last, s.inst.hostDowns
	y.stranded, y.retries = s.inst.stranded, s.inst.retries
	s.inst = y
	s.cfg.Log.Info("instances rebuilt", "instances", len(s.inst.x.InstanceIDs()))
	s.carryOut(nil)
}

// hostTargets returns the player hosts to poll: the host and replicated
// host of every overflowed instance, where the plane knows their admin
// endpoint (none before the plane rebuilt its state).
func (s *Server) hostTargets() []Node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inst == nil || !s.stats.Rebuilt {
		return nil
	}
	seen := map[uint32]bool{}
	var out []Node
	for _, id := range s.inst.x.InstanceIDs() {
		w, _ := s.inst.x.Where(id)
		if !w.Hosted {
			continue
		}
		for _, h := range []uint32{uint32(w.Node), uint32(w.Replica)} {
			if a := s.inst.admin[h]; h != 0 && a != "" && !seen[h] {
				seen[h] = true
				out = append(out, Node{ID: h, Admin: a})
			}
		}
	}
	return out
}

// observeHosts acts on the polls of the player hosts (answered: true if
// the host answered) (s.mu held): one silent for DownAfter is gone, its
// player leaving every instance it is in (control.Instances.NodeDown:
// Algorithm 4's promotion and new replica follow).
func (s *Server) observeHosts(answered map[uint32]bool) {
	if s.inst == nil || !s.stats.Rebuilt {
		return
	}
	wall, now := s.now()
	for _, h := range sortedKeys(answered) {
		seen, known := s.inst.hostSeen[h]
		if answered[h] || !known {
			s.inst.hostSeen[h] = wall
			continue
		}
		if wall.Sub(seen) < s.cfg.DownAfter {
			continue
		}
		delete(s.inst.hostSeen, h)
		ds, err := s.inst.x.NodeDown(now, wire.NodeID(h))
		if err != nil {
			// It hosts nothing any more (a leave came first).
			s.cfg.Log.Info("instance: player host gone", "node", h, "err", err)
			continue
		}
		s.inst.hostDowns++
		s.cfg.Log.Info("instance: player host gone", "node", h)
		s.carryOut(ds)
	}
	// Forget the hosts no longer polled.
	for h := range s.inst.hostSeen {
		if _, ok := answered[h]; !ok {
			delete(s.inst.hostSeen, h)
		}
	}
}
