// Package plane is the live control plane: the process that runs package
// control's core against a running cluster of node daemons (package live).
// It owns the placement of the cluster's players; the nodes own the
// players, their avatars and everything the plane needs to start over.
//
// How it talks to the world:
//
//   - Clients (or the game backend that admits them, a matchmaker) ask
//     it where to play: POST /v1/join with the RTTs the client measured
//     to some nodes. The plane admits the player to the node CMA picks and
//     answers with that node's player endpoints and the nodes the client
//     should ping next. POST /v1/pings reports further samples, GET
//     /v1/player?id= tells a client its node and the pings the plane
//     wants. Every sample is also stored on the player's node (POST
//     /admin/pings), where a restarted plane finds it.
//   - It polls every node's admin endpoint (GET /admin/players) once a
//     Poll: which players are in game where, with their samples and
//     positions. A node that does not answer for DownAfter is down
//     (control's NodeDown re-admits its players elsewhere: their avatars
//     fail over to the backups, and the clients rejoin); one that answers
//     again is up. A player in game nowhere for LeaveAfter has left.
//   - It carries the placement out by reconciling: a player in game on a
//     node other than the one the plane assigns it is handed over (POST
//     /admin/handoff on its node: the avatar migrates, the client is
//     redirected, make-before-break), asked again every Retry until it
//     is where the plane wants it. CMA's moves, re-admissions after a
//     node's death and a rebuild's moves all reach the world this way.
//
// Not a single point of failure: when the plane is down, the nodes go on
// with the placement they have (clients that cannot reach it join the
// node their token or configuration names). When it starts, it rebuilds
// its state from the first round of polls (control's Rebuild) before it
// admits anyone, so restarting it loses nothing. A player that joined a
// node directly, without the plane, is placed when a poll finds it, if
// its node holds samples for it.
//
// Regions: with a Grid over the world, the plane locates the players from
// the positions the polls report, re-runs core selection under the
// activation Policy, and migrates a region by asking every node to move
// its objects in the region's box (not the players' avatars) to the new
// core (POST /admin/migrate-region).
//
// Instances (Config.Instances, instances.go): the plane places the
// instances the game opens through its API with control.Instances, on the
// servers' instance seats or, when they are full, on their players'
// hosts, carries the decisions out on the nodes' admin endpoints, and
// keeps its instance records on the servers, whence a restarted plane
// rebuilds its instances with its players.
//
// What the caller must do: build a Config (the nodes with their sites,
// capacities and admin and player endpoints), call New, serve Handler
// on an HTTP listener, and Run the poll loop until its context ends.
package plane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
)

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("plane: bad configuration")

// Node is one node of the cluster as the plane knows it.
type Node struct {
	ID uint32
	// Site is the node's WonderNetwork city: the plane estimates the RTTs
	// nobody measured from the node-to-node RTTs between the sites.
	Site string
	// Capacity is the most players the node serves.
	Capacity int
	// Admin is the base URL of the node's admin endpoint
	// ("http://10.0.0.5:7001").
	Admin string
	// QUIC and WS are the node's player endpoints, given to the clients
	// admitted there (at least one).
	QUIC, WS string
}

// Config configures a Server.
type Config struct {
	Nodes []Node
	// Poll is the interval of the nodes' polls (default 1 s).
	Poll time.Duration
	// DownAfter is how long a node may not answer before it is down
	// (default 3 s).
	DownAfter time.Duration
	// LeaveAfter is how long a player may be in game on no node before it
	// has left (default 5 s); JoinGrace how long an admitted player has to
	// appear on a node first (default 15 s).
	LeaveAfter, JoinGrace time.Duration
	// Retry is how long a handoff the plane asked for has to happen
	// before it asks again (default 2 s).
	Retry time.Duration
	// Probes and ProbeSlack are control.Config's.
	Probes     int
	ProbeSlack float64
	// Grid divides the world into regions (the zero Grid: none); Policy
	// and MigrationCost are control.Config's (nil Policy: regions move
	// only when their core dies).
	Grid          control.Grid
	Policy        control.Policy
	MigrationCost float64
	// Seed seeds the network coordinates.
	Seed uint64
	// Client is the HTTP client for the nodes' admin endpoints (default:
	// one with a timeout of Poll).
	Client *http.Client
	// AdminToken is the nodes' admin bearer secret, sent with every
	// request to them ("": none).
	AdminToken string
	// Autoscale, if set, serves Agones' FleetAutoscaler webhook at
	// /autoscale (Handler).
	Autoscale *Autoscale
	// Log receives what the plane does (default: discarded).
	Log *slog.Logger
	// Clock gives the time (default time.Now); tests set it.
	Clock func() time.Time
	// Hosts, if set, serves POST /v1/hosts: player hosts' certificates
	// (hosts.go).
	Hosts *Hosts
	// Instances, if set, runs control.Instances on the nodes and serves
	// the instance API (instances.go).
	Instances *InstanceSetup
}

// Autoscale configures the FleetAutoscaler webhook the plane serves: the
// autoscaler's policy, and the nodes of each fleet ("namespace/name"),
// whose players the plane knows.
type Autoscale struct {
	Config agones.AutoscalerConfig
	Fleets map[string][]uint32
}

func (c Config) validate() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if len(c.Nodes) < 2 {
		return bad("%d nodes: want at least 2", len(c.Nodes))
	}
	c.Nodes = slices.Clone(c.Nodes)
	seen := map[uint32]bool{}
	for i, n := range c.Nodes {
		switch {
		case n.ID < 1 || n.ID > live.MaxNodeID:
			return bad("node %d: ID %d, want 1 to %d", i, n.ID, live.MaxNodeID)
		case seen[n.ID]:
			return bad("node %d listed twice", n.ID)
		case n.Capacity < 1:
			return bad("node %d: capacity %d, want at least 1", n.ID, n.Capacity)
		case n.QUIC == "" && n.WS == "":
			return bad("node %d: no player endpoint (quic or ws)", n.ID)
		}
		u, err := url.Parse(n.Admin)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("node %d: admin %q: want http://host:port", n.ID, n.Admin)
		}
		seen[n.ID] = true
	}
	fill := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	fill(&c.Poll, time.Second)
	fill(&c.DownAfter, 3*time.Second)
	fill(&c.LeaveAfter, 5*time.Second)
	fill(&c.JoinGrace, 15*time.Second)
	fill(&c.Retry, 2*time.Second)
	for name, d := range map[string]time.Duration{"poll": c.Poll, "down after": c.DownAfter, "leave after": c.LeaveAfter,
		"join grace": c.JoinGrace, "retry": c.Retry} {
		if d < 10*time.Millisecond || d > time.Hour {
			return bad("%s %v: want 10ms to 1h", name, d)
		}
	}
	if a := c.Autoscale; a != nil {
		for key, ids := range a.Fleets {
			for _, id := range ids {
				if !seen[id] {
					return bad("autoscale: fleet %s: node %d is not in the cluster", key, id)
				}
			}
		}
		if _, err := agones.NewAutoscaler(a.Config, nil, nil); err != nil {
			return bad("%v", err)
		}
	}
	if c.Client == nil {
		c.Client = &http.Client{Timeout: c.Poll}
	}
	if c.AdminToken != "" {
		cl := *c.Client
		base := cl.Transport
		if base == nil {
			base = http.DefaultTransport
		}
		cl.Transport = bearer{token: c.AdminToken, base: base}
		c.Client = &cl
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c, nil
}

// Stats counts what the plane did.
type Stats struct {
	Joins, Refused, Leaves, Measures int
	// Moves counts the plane's Move and Readmit decisions; Handoffs the
	// handoffs it asked nodes for, HandoffErrors those a node refused or
	// did not answer.
	Moves, Handoffs, HandoffErrors int
	NodeDowns, NodeUps             int
	// RegionMigrations counts the regions migrated; ObjectsMoved the
	// objects the nodes migrated for them.
	RegionMigrations, ObjectsMoved int
	// Polls counts rounds of polls; Rebuilt is true once the plane rebuilt
	// its state from the nodes.
	Polls   int
	Rebuilt bool
	// Unplaced is the players in game on a node that the plane could not
	// place (no samples), at the last poll.
	Unplaced int
}

// Server is the live control plane. Its methods are safe for concurrent
// use.
type Server struct {
	cfg   Config
	start time.Time

	bg sync.WaitGroup // requests to the nodes in flight

	mu      sync.Mutex
	plane   *control.Plane
	nodes   map[uint32]*nodeView
	players map[string]*tracked
	// unplaced are the players a poll found in game (on the node given)
	// that the plane could not place for want of samples.
	unplaced map[string]uint32
	stats    Stats
	hosts    *hostIssuer    // nil without Config.Hosts
	inst     *instancePlane // nil without Config.Instances
}

type nodeView struct {
	Node
	up     bool
	lastOK time.Time
}

// tracked is what the plane keeps of a player besides control's state.
type tracked struct {
	joined   time.Time // when it was admitted or first found
	seen     time.Time // when a poll last found it in game
	at       uint32    // the node a poll last found it on (0: none yet)
	moving   bool
	asked    time.Time // when the plane last asked for its handoff
	probe    []uint32  // nodes the plane wants it to ping
	measured map[uint32]bool
	samples  []live.PingSample // every sample its client reported, the latest per node
}

// addSamples merges ss into t's samples.
func (t *tracked) addSamples(ss []live.PingSample) {
	for _, s := range ss {
		t.measured[s.Node] = true
		if i := slices.IndexFunc(t.samples, func(x live.PingSample) bool { return x.Node == s.Node }); i >= 0 {
			t.samples[i] = s
		} else {
			t.samples = append(t.samples, s)
		}
	}
}

// New validates cfg and builds the plane; it starts nothing.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	cities := map[wire.NodeID]string{}
	for _, n := range cfg.Nodes {
		cities[wire.NodeID(n.ID)] = n.Site
	}
	delay, err := live.Delays(cities)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cn := make([]control.Node, len(cfg.Nodes))
	rtt := make([][]float64, len(cfg.Nodes))
	for i, n := range cfg.Nodes {
		cn[i] = control.Node{ID: wire.NodeID(n.ID), Site: n.Site, Capacity: n.Capacity}
		rtt[i] = make([]float64, len(cfg.Nodes))
		for j, m := range cfg.Nodes {
			rtt[i][j] = 2 * float64(delay(wire.NodeID(n.ID), wire.NodeID(m.ID))) / float64(time.Millisecond)
		}
	}
	p, err := control.New(control.Config{Nodes: cn, NodeRTT: rtt, Probes: cfg.Probes, ProbeSlack: cfg.ProbeSlack, Seed: cfg.Seed,
		Grid: cfg.Grid, Policy: cfg.Policy, MigrationCost: cfg.MigrationCost})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	s := &Server{cfg: cfg, start: cfg.Clock(), plane: p, nodes: map[uint32]*nodeView{}, players: map[string]*tracked{},
		unplaced: map[string]uint32{}}
	for _, n := range cfg.Nodes {
		s.nodes[n.ID] = &nodeView{Node: n, up: true}
	}
	if cfg.Hosts != nil {
		if s.hosts, err = newHostIssuer(*cfg.Hosts, cfg.Nodes); err != nil {
			return nil, err
		}
	}
	if cfg.Instances != nil {
		if s.inst, err = newInstancePlane(*cfg.Instances, cfg.Nodes); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// now is the plane's time: since the server was built.
func (s *Server) now() (time.Time, time.Duration) {
	t := s.cfg.Clock()
	return t, t.Sub(s.start)
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	return st
}

// NodeOf returns the node the plane assigns player id to.
func (s *Server) NodeOf(id string) (uint32, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.plane.NodeOf(id)
	return uint32(n), ok
}

// FleetLoads is the autoscaler's view of a fleet (agones.Loads): its
// nodes that are up, each with the players the plane places there, and
// the least capacity among them; ok is false for a fleet the
// configuration does not map.
func (s *Server) FleetLoads(_ context.Context, namespace, fleet string) (balance.Cluster, bool, error) {
	if s.cfg.Autoscale == nil {
		return balance.Cluster{}, false, nil
	}
	ids, ok := s.cfg.Autoscale.Fleets[namespace+"/"+fleet]
	if !ok {
		return balance.Cluster{}, false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var c balance.Cluster
	for _, id := range ids {
		v := s.nodes[id]
		if !v.up {
			continue
		}
		if c.MaxLoad == 0 || v.Capacity < c.MaxLoad {
			c.MaxLoad = v.Capacity
		}
		c.Main = append(c.Main, s.plane.Load(wire.NodeID(id)))
	}
	if len(c.Main) == 0 {
		return balance.Cluster{}, false, nil
	}
	return c, true, nil
}

// Wait waits for the requests to the nodes in flight (handoffs, pings
// stored) to end.
func (s *Server) Wait() { s.bg.Wait() }

// Run polls the nodes every Poll until ctx ends: the first round rebuilds
// the plane's state, the others follow the world and carry the placement
// out.
func (s *Server) Run(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Poll)
	defer t.Stop()
	for {
		s.PollOnce(ctx)
		select {
		case <-ctx.Done():
			s.Wait()
			return nil
		case <-t.C:
		}
	}
}

// PollOnce polls every node once and acts on what they report (Run calls
// it every Poll).
func (s *Server) PollOnce(ctx context.Context) {
	type answer struct {
		id  uint32
		rep *live.PlayersReport
	}
	hosts := s.hostTargets()
	var wg sync.WaitGroup
	answers := make(chan answer, len(s.cfg.Nodes)+len(hosts))
	for _, n := range append(slices.Clone(s.cfg.Nodes), hosts...) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := s.fetchPlayers(ctx, n)
			if err != nil {
				s.cfg.Log.Debug("poll", "node", n.ID, "err", err)
				rep = nil
			}
			answers <- answer{n.ID, rep}
		}()
	}
	wg.Wait()
	close(answers)
	got := map[uint32]*live.PlayersReport{}
	hostGot := map[uint32]bool{}
	for a := range answers {
		if _, server := s.nodes[a.id]; !server {
			hostGot[a.id] = a.rep != nil
		} else if a.rep != nil {
			got[a.id] = a.rep
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observe(got)
	s.observeHosts(hostGot)
}

// fetchPlayers is GET /admin/players on node n.
func (s *Server) fetchPlayers(ctx context.Context, n Node) (*live.PlayersReport, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.Admin+"/admin/players", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	var rep live.PlayersReport
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&rep); err != nil {
		return nil, fmt.Errorf("players report: %w", err)
	}
	if rep.Node != n.ID {
		return nil, fmt.Errorf("node %s answers as node %d", n.Admin, rep.Node)
	}
	if err := live.CheckInstanceRecords(rep.Instances); err != nil {
		return nil, fmt.Errorf("players report: %w", err)
	}
	return &rep, nil
}

// samplesOf converts reported samples to control's, keeping those of
// known nodes.
func (s *Server) samplesOf(ps []live.PingSample) []control.Sample {
	var out []control.Sample
	for _, p := range ps {
		if _, ok := s.nodes[p.Node]; ok {
			out = append(out, control.Sample{Node: wire.NodeID(p.Node), RTT: time.Duration(p.RTTMs * float64(time.Millisecond))})
		}
	}
	return out
}

// observe acts on a round of polls (s.mu held).
func (s *Server) observe(got map[uint32]*live.PlayersReport) {
	wall, now := s.now()
	s.stats.Polls++
	if !s.stats.Rebuilt {
		s.rebuild(wall, now, got)
		return
	}
	// Nodes up and down.
	for _, n := range s.cfg.Nodes {
		v := s.nodes[n.ID]
		if _, ok := got[n.ID]; ok {
			v.lastOK = wall
			if !v.up {
				v.up = true
				s.stats.NodeUps++
				s.cfg.Log.Info("node up", "node", n.ID)
				ds, err := s.plane.NodeUp(now, wire.NodeID(n.ID))
				s.apply(ds, err)
				s.instanceNodeUp(now, n.ID)
			}
		} else if v.up && wall.Sub(v.lastOK) >= s.cfg.DownAfter {
			v.up = false
			s.stats.NodeDowns++
			s.cfg.Log.Info("node down", "node", n.ID)
			ds, err := s.plane.NodeDown(now, wire.NodeID(n.ID))
			s.apply(ds, err)
			s.instanceNodeDown(now, n.ID)
		}
	}
	// Players found.
	clear(s.unplaced)
	for _, id := range sortedKeys(got) {
		rep := got[id]
		for _, p := range rep.Players {
			t, known := s.players[p.ID]
			if !known {
				ss := s.samplesOf(p.Samples)
				if len(ss) == 0 {
					s.unplaced[p.ID] = id
					continue
				}
				ds, err := s.plane.Join(now, p.ID, ss)
				if err != nil {
					s.cfg.Log.Warn("placing a player found on a node", "player", p.ID, "node", id, "err", err)
					s.unplaced[p.ID] = id
					continue
				}
				s.stats.Joins++
				t = &tracked{joined: wall, measured: map[uint32]bool{}}
				t.addSamples(p.Samples)
				s.players[p.ID] = t
				s.apply(ds, nil)
			}
			t.seen, t.at, t.moving = wall, id, p.Moving
			if len(p.Samples) < len(t.samples) {
				// The samples stay on the node that stored them: a player
				// handed over finds its new node without them until the
				// plane stores them there too.
				s.storePings(s.nodes[id].Node, p.ID, t.samples)
			}
			if p.Located {
				if err := s.plane.Locate(now, p.ID, p.X, p.Y); err != nil {
					s.cfg.Log.Warn("locating a player", "player", p.ID, "err", err)
				}
			}
		}
	}
	s.stats.Unplaced = len(s.unplaced)
	// Players gone.
	for _, id := range sortedKeys(s.players) {
		t := s.players[id]
		last := t.seen
		if t.at == 0 || t.joined.After(last) {
			last = t.joined.Add(s.cfg.JoinGrace - s.cfg.LeaveAfter)
		}
		if wall.Sub(last) < s.cfg.LeaveAfter {
			continue
		}
		ds, err := s.plane.Leave(now, id)
		delete(s.players, id)
		s.stats.Leaves++
		s.apply(ds, err)
	}
	ds, err := s.plane.Tick(now)
	s.apply(ds, err)
	s.reconcile(wall, got)
}

// rebuild builds the plane's state from the first round of polls (s.mu
// held).
func (s *Server) rebuild(wall time.Time, now time.Duration, got map[uint32]*live.PlayersReport) {
	var reports []control.Report
	for _, id := range sortedKeys(got) {
		rep := control.Report{Node: wire.NodeID(id)}
		for _, p := range got[id].Players {
			ss := s.samplesOf(p.Samples)
			if len(ss) == 0 || p.Moving {
				continue // placed when a later poll finds it settled, with samples
			}
			rep.Players = append(rep.Players, control.Held{ID: p.ID, Samples: ss, Located: p.Located, X: p.X, Y: p.Y})
		}
		reports = append(reports, rep)
	}
	var inst *instancePlane
	if s.inst != nil {
		var err error
		if inst, err = s.rebuildInstances(now, got); err != nil {
			s.cfg.Log.Warn("rebuild: instances", "err", err)
			return
		}
	}
	ds, err := s.plane.Rebuild(now, reports)
	if err != nil {
		// Reports that contradict each other (a player on two nodes in
		// the middle of a handoff, say): try again at the next poll.
		s.cfg.Log.Warn("rebuild", "err", err)
		return
	}
	s.stats.Rebuilt = true
	for _, n := range s.cfg.Nodes {
		v := s.nodes[n.ID]
		_, v.up = got[n.ID]
		v.lastOK = wall
	}
	for _, r := range reports {
		for _, p := range r.Players {
			t := &tracked{joined: wall, seen: wall, at: uint32(r.Node), measured: map[uint32]bool{}}
			for _, x := range p.Samples {
				t.addSamples([]live.PingSample{{Node: uint32(x.Node), RTTMs: float64(x.RTT) / float64(time.Millisecond)}})
			}
			s.players[p.ID] = t
		}
	}
	s.cfg.Log.Info("rebuilt", "nodes", len(reports), "players", len(s.players))
	s.apply(ds, nil)
	if inst != nil {
		s.adoptInstances(inst)
	}
	s.reconcile(wall, got)
}

// apply records the plane's decisions (s.mu held): moves are carried out
// by reconcile, probes wait for the client to ask.
func (s *Server) apply(ds []control.Decision, err error) {
	if err != nil {
		s.cfg.Log.Warn("control plane event refused", "err", err)
		return
	}
	for _, d := range ds {
		switch d.Kind {
		case control.Move, control.Readmit:
			s.stats.Moves++
		case control.Admit, control.Probe:
			if t, ok := s.players[d.Player]; ok {
				for _, n := range d.Probe {
					if !t.measured[uint32(n)] && !slices.Contains(t.probe, uint32(n)) {
						t.probe = append(t.probe, uint32(n))
					}
				}
			}
		case control.Drop:
			s.cfg.Log.Warn("no node can seat a player", "player", d.Player)
		case control.MigrateRegion:
			s.stats.RegionMigrations++
			s.cfg.Log.Info("region migrates", "region", d.Region, "from", d.From, "to", d.To, "gain_ms", d.Gain, "failover", d.Failover)
			s.moveRegion(d.Region, uint32(d.To))
		}
	}
}

// reconcile asks for the handoff of every player in game on a node other
// than the plane's (s.mu held). The requests run in the background.
func (s *Server) reconcile(wall time.Time, got map[uint32]*live.PlayersReport) {
	for _, id := range sortedKeys(s.players) {
		t := s.players[id]
		if t.at == 0 || t.moving || wall.Sub(t.seen) > s.cfg.Poll/2+time.Millisecond || wall.Sub(t.asked) < s.cfg.Retry {
			continue
		}
		if _, ok := got[t.at]; !ok {
			continue
		}
		want, ok := s.plane.NodeOf(id)
		if !ok || uint32(want) == t.at || !s.nodes[uint32(want)].up {
			continue
		}
		t.asked = wall
		s.stats.Handoffs++
		from, to := s.nodes[t.at], uint32(want)
		samples := slices.Clone(t.samples)
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			// The samples go to the new node first, so that a plane that
			// restarts finds them where the player is.
			if err := s.postPings(s.nodes[to].Node, id, samples); err != nil {
				s.cfg.Log.Info("storing pings", "player", id, "node", to, "err", err)
			}
			s.handOff(from.Node, id, to)
		}()
	}
}

// handOff is POST /admin/handoff on node from.
func (s *Server) handOff(from Node, id string, to uint32) {
	u := from.Admin + "/admin/handoff?player=" + url.QueryEscape(id) + "&node=" + strconv.FormatUint(uint64(to), 10)
	resp, err := s.cfg.Client.Post(u, "", nil)
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			err = fmt.Errorf("status %s", resp.Status)
		}
	}
	if err != nil {
		s.cfg.Log.Info("handoff refused", "player", id, "from", from.ID, "to", to, "err", err)
		s.mu.Lock()
		s.stats.HandoffErrors++
		s.mu.Unlock()
		return
	}
	s.cfg.Log.Debug("handoff", "player", id, "from", from.ID, "to", to)
}

// storePings stores samples on node n (POST /admin/pings), in the
// background.
func (s *Server) storePings(n Node, id string, ss []live.PingSample) {
	ss = slices.Clone(ss)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if err := s.postPings(n, id, ss); err != nil {
			s.cfg.Log.Info("storing pings", "player", id, "node", n.ID, "err", err)
		}
	}()
}

// postPings is POST /admin/pings on node n.
func (s *Server) postPings(n Node, id string, ss []live.PingSample) error {
	if len(ss) == 0 {
		return nil
	}
	body, _ := json.Marshal(ss) // plain numbers: cannot fail
	u := n.Admin + "/admin/pings?player=" + url.QueryEscape(id)
	resp, err := s.cfg.Client.Post(u, "application/json", bytesReader(body))
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

func sortedKeys[K interface{ ~string | ~uint32 }, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkPlayer validates a player ID as the nodes do.
func checkPlayer(id string) error { return player.PlayerID(id).Validate() }

// finiteMs reports whether x is a usable RTT in ms.
func finiteMs(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) && x >= 0 }

// moveRegion asks every node that is up, but the new core, to migrate its
// objects in region r to node to (s.mu held; the requests run in the
// background).
func (s *Server) moveRegion(r int, to uint32) {
	g := s.cfg.Grid
	c, row := r%g.Cols, r/g.Cols
	w, h := g.Width/float64(g.Cols), g.Height/float64(g.Rows)
	x0, y0 := g.X0+float64(c)*w, g.Y0+float64(row)*h
	x1, y1 := x0+w, y0+h
	// The grid's edge regions hold what lies beyond it.
	if c == 0 {
		x0 = -math.MaxFloat64
	}
	if row == 0 {
		y0 = -math.MaxFloat64
	}
	if c == g.Cols-1 {
		x1 = math.MaxFloat64
	}
	if row == g.Rows-1 {
		y1 = math.MaxFloat64
	}
	for _, n := range s.cfg.Nodes {
		if n.ID == to || !s.nodes[n.ID].up {
			continue
		}
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			q := url.Values{}
			for k, v := range map[string]float64{"x0": x0, "y0": y0, "x1": x1, "y1": y1} {
				q.Set(k, strconv.FormatFloat(v, 'g', -1, 64))
			}
			q.Set("node", strconv.FormatUint(uint64(to), 10))
			u := n.Admin + "/admin/migrate-region?" + q.Encode()
			resp, err := s.cfg.Client.Post(u, "", nil)
			if err != nil {
				s.cfg.Log.Info("migrating a region", "node", n.ID, "err", err)
				return
			}
			defer resp.Body.Close()
			var out struct {
				Moved int `json:"moved"`
			}
			if resp.StatusCode != http.StatusOK {
				b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				s.cfg.Log.Info("migrating a region", "node", n.ID, "status", resp.Status, "answer", string(bytes.TrimSpace(b)))
				return
			}
			if err := json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&out); err != nil {
				s.cfg.Log.Info("migrating a region", "node", n.ID, "err", err)
				return
			}
			s.mu.Lock()
			s.stats.ObjectsMoved += out.Moved
			s.mu.Unlock()
		}()
	}
}

// bearer adds the nodes' admin secret to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
