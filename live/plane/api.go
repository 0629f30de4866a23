package plane

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/wire"
)

// JoinRequest is the body of POST /v1/join and POST /v1/pings.
type JoinRequest struct {
	Player string            `json:"player"`
	Pings  []live.PingSample `json:"pings"`
}

// Admission is the answer to POST /v1/join and GET /v1/player: the node
// the player plays on, its player endpoints, and the nodes the plane asks
// the client to ping and report (POST /v1/pings).
type Admission struct {
	Node  uint32   `json:"node"`
	QUIC  string   `json:"quic,omitempty"`
	WS    string   `json:"ws,omitempty"`
	Probe []uint32 `json:"probe,omitempty"`
}

// State is the answer to GET /v1/state.
type State struct {
	Nodes   []NodeState       `json:"nodes"`
	Players map[string]uint32 `json:"players"` // player → the plane's node
	Stats   Stats             `json:"stats"`
}

// NodeState is one node in State.
type NodeState struct {
	ID       uint32 `json:"id"`
	Site     string `json:"site"`
	Up       bool   `json:"up"`
	Load     int    `json:"load"`
	Capacity int    `json:"capacity"`
	// Enrolled is true for a game server that enrolled (enrolled.go).
	Enrolled bool `json:"enrolled,omitempty"`
}

// maxBody bounds a request body.
const maxBody = 64 << 10

// noTarget is why a plane without a placement admits nobody.
const noTarget = "no game server is a placement target yet"

// Handler serves the plane's HTTP API: POST /v1/join, POST /v1/pings, GET
// /v1/player?id=, GET /v1/nodes, GET /v1/state, GET /metrics (metrics.go), GET /healthz, GET
// /readyz (ready once the plane rebuilt its state from the nodes, or,
// without nodes of its own, once a round of polls found no placement
// target: it then serves enrollments while joins are refused with 503
// naming the reason), with
// Config.Hosts POST and GET /v1/hosts (hosts.go), with Config.Autoscale
// POST /autoscale (Agones' FleetAutoscaler webhook), and with
// Config.Instances the instance API (instances.go).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/join", s.serveJoin)
	mux.HandleFunc("POST /v1/pings", s.servePings)
	mux.HandleFunc("GET /v1/player", s.servePlayer)
	mux.HandleFunc("GET /v1/state", s.serveState)
	mux.HandleFunc("GET /v1/nodes", s.serveNodes)
	if s.hosts != nil {
		mux.HandleFunc("POST /v1/hosts", s.serveHosts)
		mux.HandleFunc("GET /v1/hosts", s.serveHostStats)
	}
	if s.inst != nil {
		mux.HandleFunc("POST /v1/instances", s.serveOpenInstance)
		mux.HandleFunc("POST /v1/instances/leave", s.serveLeaveInstance)
		mux.HandleFunc("POST /v1/instances/close", s.serveCloseInstance)
		mux.HandleFunc("GET /v1/instances", s.serveInstances)
	}
	if s.cfg.Autoscale != nil {
		// Validated with the configuration: cannot fail.
		a, _ := agones.NewAutoscaler(s.cfg.Autoscale.Config, s.FleetLoads, s.cfg.Log)
		mux.Handle("POST /autoscale", a)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		s.mu.Lock()
		rebuilt, waiting := s.stats.Rebuilt, s.plane == nil && s.stats.Polls > 0
		s.mu.Unlock()
		switch {
		case waiting:
			// Ready all the same: the game servers that will be the
			// placement targets enroll through this API.
			io.WriteString(w, "ready: "+noTarget+"\n")
		case !rebuilt:
			http.Error(w, "rebuilding from the nodes", http.StatusServiceUnavailable)
		default:
			io.WriteString(w, "ready\n")
		}
	})
	return mux
}

// readRequest decodes and checks a JoinRequest.
func readRequest(r *http.Request) (JoinRequest, error) {
	var req JoinRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return req, fmt.Errorf("reading the body: %v", err)
	}
	if len(body) > maxBody {
		return req, fmt.Errorf("body over %d bytes", maxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, fmt.Errorf("want {\"player\": ID, \"pings\": [{\"node\": N, \"rtt_ms\": X}, ...]}: %v", err)
	}
	if err := checkPlayer(req.Player); err != nil {
		return req, fmt.Errorf("player %q: %v", req.Player, err)
	}
	raw, _ := json.Marshal(req.Pings)
	if _, err := live.ParsePingSamples(raw); err != nil {
		return req, fmt.Errorf("pings: %v", err)
	}
	return req, nil
}

// samples converts a request's pings, refusing a node the plane does not
// know; those of an enrolled node that is not (or no longer) a node of the
// placement are left out, as a client may have pinged it while it was
// (s.mu held).
func (s *Server) samples(ps []live.PingSample) ([]control.Sample, error) {
	out := make([]control.Sample, 0, len(ps))
	for _, p := range ps {
		if _, ok := s.nodes[p.Node]; !ok {
			_, enrolled := s.enrolled[p.Node]
			if _, draining := s.draining[p.Node]; enrolled || draining {
				continue
			}
			return nil, fmt.Errorf("pings: node %d is not in the cluster", p.Node)
		}
		if !finiteMs(p.RTTMs) {
			return nil, fmt.Errorf("pings: RTT %v ms", p.RTTMs)
		}
		out = append(out, control.Sample{Node: wire.NodeID(p.Node), RTT: time.Duration(p.RTTMs * float64(time.Millisecond))})
	}
	return out, nil
}

func (s *Server) serveJoin(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(r)
	if err != nil {
		http.Error(w, "join: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plane == nil {
		s.stats.Refused++
		http.Error(w, "join: "+noTarget+"; try again", http.StatusServiceUnavailable)
		return
	}
	if !s.stats.Rebuilt {
		http.Error(w, "join: the plane is rebuilding its state from the nodes; try again", http.StatusServiceUnavailable)
		return
	}
	if !slices.ContainsFunc(s.mainNodes(), func(n Node) bool { return s.nodes[n.ID].up }) {
		s.stats.Refused++
		http.Error(w, "join: no node of the placement is up; try again", http.StatusServiceUnavailable)
		return
	}
	ss, err := s.samples(req.Pings)
	if err != nil {
		http.Error(w, "join: "+err.Error(), http.StatusBadRequest)
		return
	}
	wall, now := s.now()
	ds, err := s.plane.Join(now, req.Player, ss)
	switch {
	case errors.Is(err, control.ErrDuplicatePlayer):
		http.Error(w, fmt.Sprintf("join: player %s is in the world already", req.Player), http.StatusConflict)
		return
	case errors.Is(err, control.ErrNoCapacity):
		s.stats.Refused++
		http.Error(w, "join: every node is full", http.StatusServiceUnavailable)
		return
	case err != nil:
		http.Error(w, "join: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.stats.Joins++
	t := &tracked{joined: wall, measured: map[uint32]bool{}}
	t.addSamples(req.Pings)
	s.players[req.Player] = t
	s.apply(ds, nil)
	adm := s.admission(req.Player)
	s.storePings(s.nodes[adm.Node].Node, req.Player, req.Pings)
	writeJSON(w, adm)
}

// admission is where player id plays (s.mu held).
func (s *Server) admission(id string) Admission {
	n, _ := s.plane.NodeOf(id)
	v := s.nodes[uint32(n)]
	a := Admission{Node: uint32(n), QUIC: v.QUIC, WS: v.WS}
	if t, ok := s.players[id]; ok {
		a.Probe = append([]uint32(nil), t.probe...)
	}
	return a
}

func (s *Server) servePings(w http.ResponseWriter, r *http.Request) {
	req, err := readRequest(r)
	if err != nil {
		http.Error(w, "pings: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plane == nil {
		http.Error(w, "pings: "+noTarget+"; try again", http.StatusServiceUnavailable)
		return
	}
	if !s.stats.Rebuilt {
		http.Error(w, "pings: the plane is rebuilding its state from the nodes; try again", http.StatusServiceUnavailable)
		return
	}
	t, ok := s.players[req.Player]
	if !ok {
		// A player the plane could not place (one that joined a node
		// directly, or whose node held no samples when the plane
		// rebuilt): its samples place it where a poll finds it.
		if s.unplaced[req.Player] == 0 {
			http.Error(w, fmt.Sprintf("pings: player %s is not in the world", req.Player), http.StatusNotFound)
			return
		}
		at := s.nodeOf(s.unplaced[req.Player])
		s.storePings(at, req.Player, req.Pings)
		writeJSON(w, Admission{Node: s.unplaced[req.Player], QUIC: at.QUIC, WS: at.WS})
		return
	}
	ss, err := s.samples(req.Pings)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	_, now := s.now()
	t.addSamples(req.Pings)
	for _, x := range ss {
		ds, err := s.plane.Measure(now, req.Player, x.Node, x.RTT)
		if err != nil {
			http.Error(w, "pings: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.stats.Measures++
		t.probe = deleteNode(t.probe, uint32(x.Node))
		s.apply(ds, nil)
	}
	adm := s.admission(req.Player)
	s.storePings(s.nodes[adm.Node].Node, req.Player, req.Pings)
	if t.at != 0 && t.at != adm.Node {
		s.storePings(s.nodeOf(t.at), req.Player, req.Pings)
	}
	writeJSON(w, adm)
}

func deleteNode(ns []uint32, n uint32) []uint32 {
	out := ns[:0]
	for _, x := range ns {
		if x != n {
			out = append(out, x)
		}
	}
	return out
}

func (s *Server) servePlayer(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if err := checkPlayer(id); err != nil {
		http.Error(w, fmt.Sprintf("player %q: %v", id, err), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plane == nil {
		http.Error(w, fmt.Sprintf("player %s is not in the world (%s)", id, noTarget), http.StatusNotFound)
		return
	}
	if _, ok := s.plane.NodeOf(id); !ok {
		http.Error(w, fmt.Sprintf("player %s is not in the world", id), http.StatusNotFound)
		return
	}
	writeJSON(w, s.admission(id))
}

func (s *Server) serveState(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := State{Players: map[string]uint32{}, Stats: s.stats}
	for _, n := range s.mainNodes() {
		_, enrolled := s.enrolled[n.ID]
		st.Nodes = append(st.Nodes, NodeState{ID: n.ID, Site: n.Site, Up: s.nodes[n.ID].up, Load: s.plane.Load(wire.NodeID(n.ID)), Capacity: n.Capacity,
			Enrolled: enrolled})
	}
	if s.plane != nil {
		for id, n := range s.plane.Assignment() {
			st.Players[id] = uint32(n)
		}
	}
	writeJSON(w, st)
}

// NodeInfo is one node in GET /v1/nodes: what a client needs to ping it
// and to play there.
type NodeInfo struct {
	ID   uint32 `json:"id"`
	Site string `json:"site"`
	QUIC string `json:"quic,omitempty"`
	WS   string `json:"ws,omitempty"`
	Up   bool   `json:"up"`
	// RTTMs is the RTT the placement holds from this node to each other
	// node, by node ID (the sites' table, or measured); MeasuredMs what
	// this node last reported it measures to its peers.
	RTTMs      map[uint32]float64 `json:"rtt_ms,omitempty"`
	MeasuredMs map[uint32]float64 `json:"measured_ms,omitempty"`
}

func (s *Server) serveNodes(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	nodes := s.mainNodes()
	out := make([]NodeInfo, 0, len(nodes))
	var cfg control.Config
	if s.plane != nil {
		cfg = s.plane.Config()
	}
	for _, n := range nodes {
		info := NodeInfo{ID: n.ID, Site: n.Site, QUIC: n.QUIC, WS: n.WS, Up: s.nodes[n.ID].up, MeasuredMs: maps.Clone(s.peerRTT[n.ID])}
		if i := slices.IndexFunc(cfg.Nodes, func(c control.Node) bool { return uint32(c.ID) == n.ID }); i >= 0 && cfg.NodeRTT != nil {
			info.RTTMs = map[uint32]float64{}
			for j, m := range cfg.Nodes {
				if v := cfg.NodeRTT[i][j]; j != i && !math.IsNaN(v) {
					info.RTTMs[uint32(m.ID)] = v
				}
			}
		}
		out = append(out, info)
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

// StatusError is a plane's answer other than 200 OK.
type StatusError struct {
	Code int
	Msg  string
}

func (e *StatusError) Error() string { return e.Msg }

// Client asks a plane where to play: what a game client, a matchmaker or
// a bot calls.
type Client struct {
	// URL is the plane's base URL ("http://127.0.0.1:7400").
	URL string
	// HTTP is the client used (default http.DefaultClient).
	HTTP *http.Client
}

func (c *Client) do(ctx context.Context, method, path string, body any) (Admission, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return Admission{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.URL+path, rd)
	if err != nil {
		return Admission{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Admission{}, fmt.Errorf("plane: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if resp.StatusCode != http.StatusOK {
		return Admission{}, &StatusError{Code: resp.StatusCode, Msg: fmt.Sprintf("plane: %s %s: %s: %s", method, path, resp.Status, bytes.TrimSpace(b))}
	}
	var a Admission
	if err := json.Unmarshal(b, &a); err != nil {
		return Admission{}, fmt.Errorf("plane: %s %s: %w", method, path, err)
	}
	return a, nil
}

// Join asks the plane to admit player with the RTTs its client measured.
func (c *Client) Join(ctx context.Context, player string, pings []live.PingSample) (Admission, error) {
	return c.do(ctx, http.MethodPost, "/v1/join", JoinRequest{Player: player, Pings: pings})
}

// Pings reports further RTTs the client measured.
func (c *Client) Pings(ctx context.Context, player string, pings []live.PingSample) (Admission, error) {
	return c.do(ctx, http.MethodPost, "/v1/pings", JoinRequest{Player: player, Pings: pings})
}

// Nodes lists the cluster's nodes and their player endpoints.
func (c *Client) Nodes(ctx context.Context) ([]NodeInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/v1/nodes", nil)
	if err != nil {
		return nil, err
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("plane: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, &StatusError{Code: resp.StatusCode, Msg: fmt.Sprintf("plane: GET /v1/nodes: %s", resp.Status)}
	}
	var out []NodeInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&out); err != nil {
		return nil, fmt.Errorf("plane: GET /v1/nodes: %w", err)
	}
	return out, nil
}

// Where asks the plane where player plays and what it should ping.
func (c *Client) Where(ctx context.Context, player string) (Admission, error) {
	return c.do(ctx, http.MethodGet, "/v1/player?id="+url.QueryEscape(player), nil)
}
