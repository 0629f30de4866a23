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
//     positions, and the RTTs the node measures to its peers, on which
//     the plane refits the nodes' network coordinates (measureNodes;
//     the sites' WonderNetwork figures are where it starts). A node
//     that does not answer for DownAfter is down
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
// core (POST /admin/migrate-region), asking again until what each node
// migrated has left it (settle: a migration that waits for its old
// backup's release may be aborted, and is then made anew). A migration
// that fails (a node that does not answer, or what it migrated still
// there after a while) is recorded and made again at later polls, with a
// backoff, while the placement still asks for it and its node is up
// (retry.go).
//
// Metrics: GET /metrics serves its counts and state to Prometheus
// (metrics.go).
//
// Instances (Config.Instances, instances.go): the plane places the
// instances the game opens through its API with control.Instances, on the
// servers' instance seats or, when they are full, on their players'
// hosts, carries the decisions out on the nodes' admin endpoints, and
// keeps its instance records on the servers, whence a restarted plane
// rebuilds its instances with its players.
//
// Enrolled game servers (enrolled.go): with Config.Hosts, a game server
// that enrolls with its endpoints in a region with a site becomes a node
// of the placement (control's AddNode) at the first poll it answers, and
// leaves it (RemoveNode) when revoked or long gone; a restarted plane
// knows them from Hosts.StateFile.
//
// Without nodes of its own: Config.Nodes needs at least 2 nodes (a node's
// players need another to fail over to) unless a region of Hosts.Enroll
// has a site; then it may hold one or none, the enrolled game servers
// being the others. A plane with none builds control's plane only once it
// has placement targets: from the enrolled nodes that answer a round of
// polls, as a restarted plane does from its first round (control's New
// over them, estimated RTTs from their sites, then Rebuild from their
// reports); the others join later by AddNode. Until then it serves its
// API, /readyz says ready (the game servers enroll through it), and joins
// are refused with 503 "no game server is a placement target yet". This
// rather than a control plane of zero nodes: control fits its network
// coordinates from its nodes' RTTs at New, and a plane built when the
// targets come takes the restart path every plane runs anyway. When the
// last target leaves (control never loses its last node up: RemoveNode
// refuses it), the plane drops the placement and its players and waits
// again (dropPlacement); with nodes of its own, the removal is tried
// again each round instead.
//
// What the caller must do: build a Config (the nodes with their sites,
// capacities and admin and player endpoints, or an enrolling region with
// a site), call New, serve Handler on an HTTP listener, and Run the poll
// loop until its context ends.
package plane

import (
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
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

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
	// Site names where the node is (1 to 64 printable bytes). A
	// WonderNetwork city gives the node-to-node RTTs the plane starts from
	// (it estimates the RTTs nobody measured from them); another name is
	// placed by the RTTs the nodes measure (Config.SiteRTT off), and until
	// then a player's RTT to it counts only once the player measured it.
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
	// Nodes are the configured nodes: at least 2, or fewer (none) when a
	// region of Hosts.Enroll has a site.
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
	// SiteRTT keeps the node-to-node RTTs of the sites' table. Otherwise
	// (the default) the RTTs the nodes measure to each other (their
	// players reports' peers) replace the table's, pair by pair, whenever
	// one moves by more than 5 ms and 10%: the plane refits the nodes'
	// network coordinates and re-seats the players whose estimates
	// change (control.Plane.SetNodeRTT).
	SiteRTT bool
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
// whose players the plane knows: configured nodes (Fleets) or the
// enrolled placement targets of a region (Regions: fleet → a region of
// Hosts.Enroll with a Site).
type Autoscale struct {
	Config  agones.AutoscalerConfig
	Fleets  map[string][]uint32
	Regions map[string]string
}

func (c Config) validate() (Config, error) {
	bad := func(format string, args ...any) (Config, error) {
		return c, fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if len(c.Nodes) < 2 && !c.enrollsTargets() {
		return bad("%d nodes: want at least 2, so that a node's players have another to fail over to; "+
			"fewer need a region of hosts.enroll with a site, whose enrolled game servers become the placement's other nodes", len(c.Nodes))
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
		if err := checkSite(n.Site); err != nil {
			return bad("node %d: %v", n.ID, err)
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
		for key, region := range a.Regions {
			if _, nodes := a.Fleets[key]; nodes {
				return bad("autoscale: fleet %s: nodes or a region, not both", key)
			}
			sited := false
			if c.Hosts != nil {
				for _, e := range c.Hosts.Enroll {
					sited = sited || e.Region == region && e.Site != ""
				}
			}
			if !sited {
				return bad("autoscale: fleet %s: region %q is not an enrolling region with a site (hosts.enroll): it has no placement targets", key, region)
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

// enrollsTargets reports whether some region of Hosts.Enroll has a site:
// its enrolled game servers become nodes of the placement.
func (c Config) enrollsTargets() bool {
	if c.Hosts == nil {
		return false
	}
	return slices.ContainsFunc(c.Hosts.Enroll, func(e Enroll) bool { return e.Site != "" })
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
	// RegionMigrationErrors counts the nodes' region migrations that
	// failed (retries included), RegionMigrationRetries the retries
	// made; RegionMigrationsPending is the failed ones waiting to be
	// made again (retry.go).
	RegionMigrationErrors, RegionMigrationRetries, RegionMigrationsPending int
	// Polls counts rounds of polls; Rebuilt is true once the plane rebuilt
	// its state from the nodes (false while a plane without nodes of its
	// own has no placement target).
	Polls   int
	Rebuilt bool
	// Unplaced is the players in game on a node that the plane could not
	// place (no samples), at the last poll.
	Unplaced int
	// EnrolledAdded and EnrolledRemoved count the enrolled game servers
	// that became placement targets and those taken out (enrolled.go).
	EnrolledAdded, EnrolledRemoved int
	// NodeRTTs counts the matrices of measured node RTTs given to the
	// placement; BadPeerRTTs the nodes' reports of them refused.
	NodeRTTs, BadPeerRTTs int
}

// Server is the live control plane. Its methods are safe for concurrent
// use.
type Server struct {
	cfg   Config
	start time.Time

	bg sync.WaitGroup // requests to the nodes in flight
	// chainWait bounds the settling of one migration (settle).
	chainWait time.Duration

	mu      sync.Mutex
	plane   *control.Plane
	nodes   map[uint32]*nodeView
	players map[string]*tracked
	// unplaced are the players a poll found in game (on the node given)
	// that the plane could not place for want of samples.
	unplaced map[string]uint32
	// peerRTT is the latest RTTs, in ms, each node reported it measures
	// to its peers.
	peerRTT map[uint32]map[uint32]float64
	stats   Stats
	hosts   *hostIssuer    // nil without Config.Hosts
	inst    *instancePlane // nil without Config.Instances
	// enrolled are the recorded enrolled nodes (enrolled.go); draining
	// the nodes removed from the placement while up, until their players
	// are handed over.
	enrolled map[uint32]*enrolledView
	draining map[uint32]drainView
	// regionStranded are the region migrations that failed, to be made
	// again (retry.go); regionBusy the region migrations in flight.
	regionStranded strandedBook
	regionBusy     int
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
	s := &Server{cfg: cfg, start: cfg.Clock(), chainWait: chainWait, peerRTT: map[uint32]map[uint32]float64{}, nodes: map[uint32]*nodeView{}, players: map[string]*tracked{},
		unplaced: map[string]uint32{}, enrolled: map[uint32]*enrolledView{}, draining: map[uint32]drainView{},
		regionStranded: strandedBook{}}
	if len(cfg.Nodes) > 0 {
		// Without nodes of its own the plane builds its placement from
		// the first enrolled game servers that answer (placeFirst).
		if s.plane, err = s.newPlacement(cfg.Nodes); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	for _, n := range cfg.Nodes {
		s.nodes[n.ID] = &nodeView{Node: n, up: true}
	}
	if cfg.Hosts != nil {
		if s.hosts, err = newHostIssuer(*cfg.Hosts, cfg.Nodes, s.start); err != nil {
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

// checkSite checks a node's or a region's site: 1 to 64 bytes of
// printable UTF-8. A WonderNetwork city gives the plane the node's RTTs to
// start from (siteRTT); any other name is placed by what the nodes
// measure.
func checkSite(site string) error {
	if site == "" || len(site) > 64 || !utf8.ValidString(site) || strings.ContainsFunc(site, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Errorf("site %q: want 1 to 64 bytes of printable UTF-8 (a WonderNetwork city gives the node's RTTs to start from)", site)
	}
	return nil
}

// siteRTT returns the RTT, in ms, between the sites of any two nodes of
// sites by the WonderNetwork table (live.Delays): NaN when either site is
// not a WonderNetwork city (that node is placed when the nodes' measured
// RTTs come: control.Plane.SetNodeRTT).
func siteRTT(sites map[uint32]string) func(a, b uint32) float64 {
	known := map[wire.NodeID]string{}
	for id, c := range sites {
		if _, err := live.Delays(map[wire.NodeID]string{1: c}); err == nil {
			known[wire.NodeID(id)] = c
		}
	}
	delay, err := live.Delays(known)
	if err != nil {
		// Every city was checked alone: cannot fail.
		delay = func(wire.NodeID, wire.NodeID) time.Duration { return 0 }
		known = nil
	}
	return func(a, b uint32) float64 {
		_, ka := known[wire.NodeID(a)]
		_, kb := known[wire.NodeID(b)]
		if !ka || !kb {
			return math.NaN()
		}
		return 2 * float64(delay(wire.NodeID(a), wire.NodeID(b))) / float64(time.Millisecond)
	}
}

// newPlacement builds control's plane over nodes, with their RTTs
// estimated from the WonderNetwork site-to-site table (siteRTT).
func (s *Server) newPlacement(nodes []Node) (*control.Plane, error) {
	sites := map[uint32]string{}
	for _, n := range nodes {
		sites[n.ID] = n.Site
	}
	rttOf := siteRTT(sites)
	cn := make([]control.Node, len(nodes))
	rtt := make([][]float64, len(nodes))
	for i, n := range nodes {
		cn[i] = control.Node{ID: wire.NodeID(n.ID), Site: n.Site, Capacity: n.Capacity}
		rtt[i] = make([]float64, len(nodes))
		for j, m := range nodes {
			if i != j {
				rtt[i][j] = rttOf(n.ID, m.ID)
			}
		}
	}
	c := s.cfg
	return control.New(control.Config{Nodes: cn, NodeRTT: rtt, Probes: c.Probes, ProbeSlack: c.ProbeSlack, Seed: c.Seed,
		Grid: c.Grid, Policy: c.Policy, MigrationCost: c.MigrationCost})
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
	if s.plane == nil {
		return 0, false
	}
	n, ok := s.plane.NodeOf(id)
	return uint32(n), ok
}

// FleetLoads is the autoscaler's view of a fleet (agones.Loads): its
// nodes that are up, each with the players the plane places there, and
// the least capacity among them. A fleet's nodes are the configured ones
// it lists, or its region's enrolled placement targets at this moment.
// ok is false for a fleet the configuration does not map, and for one
// with no node up (the autoscaler then reads its players counter).
func (s *Server) FleetLoads(_ context.Context, namespace, fleet string) (balance.Cluster, bool, error) {
	if s.cfg.Autoscale == nil {
		return balance.Cluster{}, false, nil
	}
	key := namespace + "/" + fleet
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plane == nil {
		return balance.Cluster{}, false, nil
	}
	ids, ok := s.cfg.Autoscale.Fleets[key]
	if region, byRegion := s.cfg.Autoscale.Regions[key]; byRegion {
		ids, ok = nil, true
		for _, id := range sortedKeys(s.enrolled) {
			if v := s.enrolled[id]; v.target && v.region == region {
				ids = append(ids, id)
			}
		}
	}
	if !ok {
		return balance.Cluster{}, false, nil
	}
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
	recs := s.enrolledRecords()
	main := append(slices.Clone(s.cfg.Nodes), s.enrolledTargets(recs)...)
	isMain := map[uint32]bool{}
	for _, n := range main {
		isMain[n.ID] = true
	}
	hosts := s.hostTargets()
	var wg sync.WaitGroup
	answers := make(chan answer, len(main)+len(hosts))
	for _, n := range append(main, hosts...) {
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
		if !isMain[a.id] {
			hostGot[a.id] = a.rep != nil
		} else if a.rep != nil {
			got[a.id] = a.rep
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observe(got, recs)
	s.observeHosts(hostGot)
	wall, _ := s.now()
	s.retryMigrations(wall)
}

// fetchPlayers is GET /admin/players on node n.
func (s *Server) fetchPlayers(ctx context.Context, n Node) (*live.PlayersReport, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.Admin+"/admin/players", nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.adminDo(req, n.ID)
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
		return nil, fmt.Errorf("node %d's admin endpoint %s answers as node %d: its report is refused (an admin address that is another node's, or a node enrolled under another ID)", n.ID, n.Admin, rep.Node)
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

// observe acts on a round of polls (s.mu held): got holds the answers of
// the configured, enrolled and draining nodes, recs the enrolled nodes'
// records.
func (s *Server) observe(got map[uint32]*live.PlayersReport, recs map[uint32]enrolledNode) {
	wall, now := s.now()
	s.stats.Polls++
	if !s.stats.Rebuilt {
		s.rebuild(wall, now, got, recs)
		return
	}
	s.syncEnrolled(wall, now, recs, got)
	if s.plane == nil {
		return // its last target left (dropPlacement)
	}
	// Nodes up and down.
	for _, n := range s.mainNodes() {
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
	s.measureNodes(now, got)
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
				s.storePings(s.nodeOf(id), p.ID, t.samples)
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

// Thresholds of a measured node RTT worth refitting the coordinates for:
// it moved from what the placement holds by more than both.
const (
	rttChangeMs    = 5
	rttChangeShare = 0.1
)

// measureNodes takes the node RTTs the nodes reported (s.mu held): a
// pair's RTT is the least of the two ends' reports, and when one moved
// from the placement's by more than rttChangeMs and rttChangeShare, the
// placement gets every measured pair (control.Plane.SetNodeRTT).
func (s *Server) measureNodes(now time.Duration, got map[uint32]*live.PlayersReport) {
	if s.cfg.SiteRTT {
		return
	}
	for _, id := range sortedKeys(got) {
		rep := got[id]
		if len(rep.Peers) == 0 {
			continue
		}
		if err := live.CheckPeerRTTs(id, rep.Peers); err != nil {
			s.stats.BadPeerRTTs++
			s.cfg.Log.Warn("a node's peer RTTs refused", "node", id, "err", err)
			continue
		}
		m := make(map[uint32]float64, len(rep.Peers))
		for _, p := range rep.Peers {
			m[p.Node] = p.RTTMs
		}
		s.peerRTT[id] = m
	}
	cfg := s.plane.Config()
	if cfg.NodeRTT == nil {
		return
	}
	rtt := make([][]float64, len(cfg.NodeRTT))
	changed := false
	for i, a := range cfg.Nodes {
		rtt[i] = slices.Clone(cfg.NodeRTT[i])
		for j, b := range cfg.Nodes {
			v, ok := s.measuredRTT(uint32(a.ID), uint32(b.ID))
			if i == j || !ok {
				continue
			}
			if old := rtt[i][j]; math.IsNaN(old) || math.Abs(v-old) > max(rttChangeMs, rttChangeShare*old) {
				changed = true
			}
			rtt[i][j] = v
		}
	}
	if !changed {
		return
	}
	ds, err := s.plane.SetNodeRTT(now, rtt)
	if err == nil {
		s.stats.NodeRTTs++
		s.cfg.Log.Info("node RTTs measured: the placement refits the nodes' coordinates")
	}
	s.apply(ds, err)
}

// measuredRTT is the least RTT either of a and b reported to the other
// (s.mu held).
func (s *Server) measuredRTT(a, b uint32) (float64, bool) {
	v, ok := s.peerRTT[a][b]
	if w, ok2 := s.peerRTT[b][a]; ok2 && (!ok || w < v) {
		v, ok = w, true
	}
	return v, ok
}

// rebuild builds the plane's state from the first round of polls (s.mu
// held).
func (s *Server) rebuild(wall time.Time, now time.Duration, got map[uint32]*live.PlayersReport, recs map[uint32]enrolledNode) {
	// The enrolled nodes that answered join the placement first: their
	// reports are then the configured nodes' peers. A plane without nodes
	// of its own builds its placement from them, and waits for one to
	// answer while there is none.
	if s.plane == nil && !s.placeFirst(wall, recs, got) {
		if s.stats.Polls == 1 {
			s.cfg.Log.Info(noTarget + ": joins wait for an enrolled game server to answer")
		}
		s.syncEnrolled(wall, now, recs, got)
		return
	}
	s.syncEnrolled(wall, now, recs, got)
	if s.plane == nil {
		return // its last target left (dropPlacement)
	}
	var reports []control.Report
	for _, id := range sortedKeys(got) {
		if _, placed := s.nodes[id]; !placed {
			continue // a draining node's players are placed when found
		}
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
	for _, n := range s.mainNodes() {
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
		from, to := s.nodeOf(t.at), s.nodes[uint32(want)].Node
		samples := slices.Clone(t.samples)
		s.bg.Add(1)
		go func() {
			defer s.bg.Done()
			// The samples go to the new node first, so that a plane that
			// restarts finds them where the player is.
			if err := s.postPings(to, id, samples); err != nil {
				s.cfg.Log.Info("storing pings", "player", id, "node", to.ID, "err", err)
			}
			s.handOff(from, id, to.ID)
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
	// This decision's migrations replace the failed ones of the
	// decisions before.
	s.dropStranded(s.regionStranded, func(x *stranded) string {
		if x.region == r {
			return "the region migrates again"
		}
		return ""
	})
	nodes := s.mainNodes()
	for _, id := range sortedKeys(s.draining) {
		nodes = append(nodes, s.draining[id].Node)
	}
	for _, n := range nodes {
		if v, placed := s.nodes[n.ID]; n.ID == to || placed && !v.up {
			continue
		}
		q := url.Values{}
		for k, v := range map[string]float64{"x0": x0, "y0": y0, "x1": x1, "y1": y1} {
			q.Set(k, strconv.FormatFloat(v, 'g', -1, 64))
		}
		q.Set("node", strconv.FormatUint(uint64(to), 10))
		s.runRegionCall(nodeCall{admin: n.Admin, path: "/admin/migrate-region", node: n.ID, q: q}, r, to, nil)
	}
	s.stats.RegionMigrationsPending = len(s.regionStranded)
}

// runRegionCall makes migration c of region r to node to in the
// background (s.mu held), asked again until what it migrated has left
// (settle: an aborted migration is made anew). One that fails is
// recorded to be made again (retry.go); retry is the record when c makes
// one again.
func (s *Server) runRegionCall(c nodeCall, r int, to uint32, retry *stranded) {
	s.regionBusy++
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		moved, err := s.settle(c, nil)
		if err != nil {
			s.cfg.Log.Info("migrating a region", "node", c.node, "region", r, "err", err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.regionBusy--
		s.stats.ObjectsMoved += len(moved)
		if err != nil {
			s.stats.RegionMigrationErrors++
		}
		switch {
		case retry != nil:
			s.retried(s.regionStranded, retry, err)
		case err != nil:
			wall, _ := s.now()
			s.addStranded(s.regionStranded, &stranded{call: c, to: to, region: r, err: err.Error()}, wall)
		}
		s.stats.RegionMigrationsPending = len(s.regionStranded)
	}()
}

// bearer adds the nodes' admin secret to every request that carries no
// secret of its own (adminDo gives a player host's its own).
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// adminDo sends req to node id's admin endpoint: a server's with the
// nodes' shared secret (the client's bearer), a player host's with its
// own (HostAdminToken), so that no player's machine is ever sent the
// secret that commands the servers.
func (s *Server) adminDo(req *http.Request, id uint32) (*http.Response, error) {
	if !s.isServer(id) && s.cfg.AdminToken != "" {
		req.Header.Set("Authorization", "Bearer "+HostAdminToken(s.cfg.AdminToken, id))
	}
	return s.cfg.Client.Do(req)
}

// isServer reports whether node id is one of the servers, which hold the
// nodes' shared admin secret: a node of the configuration or an ID of an
// enrolling region's range (both fixed at New: no lock needed). Every
// other node, a player host, holds only its own.
func (s *Server) isServer(id uint32) bool {
	if slices.ContainsFunc(s.cfg.Nodes, func(n Node) bool { return n.ID == id }) {
		return true
	}
	if s.cfg.Hosts != nil {
		for _, e := range s.cfg.Hosts.Enroll {
			if id >= e.First && id <= e.Last {
				return true
			}
		}
	}
	return false
}
