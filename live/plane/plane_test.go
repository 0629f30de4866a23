package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/place/mcf"
)

// fakeWorld is a cluster of fake nodes: each serves the admin endpoints
// the plane uses over its own players. A handoff moves a player at once;
// a node can be made to fail its polls.
type fakeWorld struct {
	t       *testing.T
	mu      sync.Mutex
	players map[string]uint32 // player → node it is in game on
	pings   map[uint32]map[string][]live.PingSample
	down    map[uint32]bool
	refuse  bool // refuse handoffs
	srv     map[uint32]*httptest.Server
	handoff int
	at      map[string][2]float64            // player positions, reported as located
	regions []string                         // migrate-region calls: "node N: query"
	polls   map[uint32]int                   // GET /admin/players served, by node
	as      map[uint32]uint32                // a node that reports as another ID
	peers   map[uint32][]live.PeerRTT        // the RTTs each node reports to its peers
	held    map[uint32][]live.InstanceRecord // the instance records each node keeps
	// token, when set, is the admin secret every fake node requires (401
	// otherwise), as servers holding the nodes' shared secret do.
	token string
	// failMigrate is how many migrate-region requests each node still
	// fails (503; negative: every one); asks lists the migrations each
	// node was asked for (not the plane's follow-ups naming what left),
	// failed or not: "to node N".
	failMigrate map[uint32]int
	asks        map[uint32][]string
	// failRecords is how many /admin/instances requests each node still
	// fails (503), keeping the records it had.
	failRecords map[uint32]int
}

var sites = []string{"New York", "Frankfurt", "Tokyo", "Singapore", "Sao Paulo", "Los Angeles"}

func newFakeWorld(t *testing.T, n int) (*fakeWorld, []Node) {
	w := &fakeWorld{t: t, players: map[string]uint32{}, pings: map[uint32]map[string][]live.PingSample{}, down: map[uint32]bool{},
		srv: map[uint32]*httptest.Server{}, at: map[string][2]float64{}, polls: map[uint32]int{}, as: map[uint32]uint32{},
		peers: map[uint32][]live.PeerRTT{}, held: map[uint32][]live.InstanceRecord{}, failMigrate: map[uint32]int{}, asks: map[uint32][]string{}, failRecords: map[uint32]int{}}
	var nodes []Node
	for i := range n {
		id := uint32(i + 1)
		nodes = append(nodes, Node{ID: id, Site: sites[i], Capacity: 3, Admin: w.addNode(id), QUIC: fmt.Sprintf("127.0.0.1:%d", 9000+id)})
	}
	return w, nodes
}

// addNode starts fake node id and returns its admin URL.
func (w *fakeWorld) addNode(id uint32) string {
	t := w.t
	w.mu.Lock()
	w.pings[id] = map[string][]live.PingSample{}
	w.mu.Unlock()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/players", func(rw http.ResponseWriter, _ *http.Request) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.down[id] {
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		w.polls[id]++
		rep := live.PlayersReport{Node: id, Players: []live.PlayerReport{}, Peers: w.peers[id], Instances: w.held[id]}
		if as, ok := w.as[id]; ok {
			rep.Node = as
		}
		for _, p := range slices.Sorted(mapsKeys(w.players)) {
			if w.players[p] == id {
				r := live.PlayerReport{ID: p, Samples: w.pings[id][p]}
				if xy, ok := w.at[p]; ok {
					r.Located, r.X, r.Y = true, xy[0], xy[1]
				}
				rep.Players = append(rep.Players, r)
			}
		}
		json.NewEncoder(rw).Encode(rep)
	})
	mux.HandleFunc("POST /admin/instances", func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rs, err := live.ParseInstanceRecords(b)
		if err != nil {
			t.Errorf("node %d: plane sent bad instance records: %v", id, err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.failRecords[id] > 0 {
			w.failRecords[id]--
			http.Error(rw, "overloaded", http.StatusServiceUnavailable)
			return
		}
		w.held[id] = rs
		rw.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admin/prefer-backup", func(rw http.ResponseWriter, r *http.Request) { rw.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("POST /admin/pings", func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ss, err := live.ParsePingSamples(b)
		if err != nil {
			t.Errorf("node %d: plane stored bad pings: %v", id, err)
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		p := r.URL.Query().Get("player")
		old := w.pings[id][p]
		for _, s := range ss {
			old = slices.DeleteFunc(old, func(x live.PingSample) bool { return x.Node == s.Node })
			old = append(old, s)
		}
		w.pings[id][p] = old
		rw.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /admin/migrate-region", func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		defer w.mu.Unlock()
		q := r.URL.Query()
		if !q.Has("want") {
			w.asks[id] = append(w.asks[id], "to node "+q.Get("node"))
		}
		if n := w.failMigrate[id]; n != 0 {
			if n > 0 {
				w.failMigrate[id] = n - 1
			}
			http.Error(rw, "overloaded", http.StatusServiceUnavailable)
			return
		}
		var v [4]float64
		for i, k := range []string{"x0", "y0", "x1", "y1"} {
			x, err := strconv.ParseFloat(q.Get(k), 64)
			if err != nil {
				t.Errorf("node %d: migrate-region: %s %q: %v", id, k, q.Get(k), err)
			}
			v[i] = x
		}
		if q.Has("want") {
			// The plane asks again, naming what left: it has.
			fmt.Fprintf(rw, "{\"moved\": 0, \"ids\": []}\n")
			return
		}
		w.regions = append(w.regions, fmt.Sprintf("node %d: [%g, %g] × [%g, %g] to node %s", id, v[0], v[2], v[1], v[3], q.Get("node")))
		fmt.Fprintf(rw, "{\"moved\": 2, \"ids\": [%d, %d]}\n", id<<16|1, id<<16|2)
	})
	mux.HandleFunc("POST /admin/handoff", func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		defer w.mu.Unlock()
		p := r.URL.Query().Get("player")
		to, _ := strconv.Atoi(r.URL.Query().Get("node"))
		if w.refuse || w.players[p] != id || w.down[id] {
			http.Error(rw, "no", http.StatusConflict)
			return
		}
		w.players[p] = uint32(to)
		w.handoff++
		rw.WriteHeader(http.StatusOK)
	})
	s := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		tok := w.token
		w.mu.Unlock()
		if tok != "" && r.Header.Get("Authorization") != "Bearer "+tok {
			http.Error(rw, "unauthorized", http.StatusUnauthorized)
			return
		}
		mux.ServeHTTP(rw, r)
	}))
	t.Cleanup(s.Close)
	w.mu.Lock()
	w.srv[id] = s
	w.mu.Unlock()
	return s.URL
}

func mapsKeys(m map[string]uint32) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newPlane(t *testing.T, nodes []Node, c *clock) (*Server, *httptest.Server) {
	s, err := New(Config{Nodes: nodes, Clock: c.now, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(s.Handler())
	t.Cleanup(h.Close)
	return s, h
}

// poll runs one round of polls and waits for the requests it started.
func poll(s *Server) {
	s.PollOnce(context.Background())
	s.Wait()
}

// modelRTT is a player's RTT to node j: a deterministic function of the
// player's index.
func modelRTT(p, j int) float64 { return 20 + float64((p*37+j*53)%180) }

// TestPlaneRandom: random joins, pings, leaves, node failures and plane
// restarts against fake nodes. After every round of polls: no node holds
// more players than its capacity in the plane's assignment, each player
// is in game on one node, and once the handoffs settle every player plays
// where the plane assigns it, at the least total RTT (on what the plane
// knows) that the capacities allow.
func TestPlaneRandom(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			w, nodes := newFakeWorld(t, 5)
			c := &clock{t: time.Unix(1_000_000, 0)}
			s, h := newPlane(t, nodes, c)
			cl := &Client{URL: h.URL}
			poll(s) // the rebuild, from an empty world
			if !s.Stats().Rebuilt {
				t.Fatalf("seed %d: not rebuilt after a poll of empty nodes", seed)
			}
			next := 0
			online := map[string]int{}
			for step := range 60 {
				switch r := rng.IntN(10); {
				case r < 4 && len(online) < 13: // join
					p := next
					next++
					id := fmt.Sprintf("p%d", p)
					var ps []live.PingSample
					for j := range 2 {
						ps = append(ps, live.PingSample{Node: uint32(j + 1), RTTMs: modelRTT(p, j)})
					}
					adm, err := cl.Join(context.Background(), id, ps)
					if err != nil {
						t.Fatalf("seed %d step %d: join %s: %v", seed, step, id, err)
					}
					online[id] = p
					w.mu.Lock()
					w.players[id] = adm.Node
					w.mu.Unlock()
					if len(adm.Probe) > 0 {
						var more []live.PingSample
						for _, n := range adm.Probe {
							more = append(more, live.PingSample{Node: n, RTTMs: modelRTT(p, int(n)-1)})
						}
						if _, err := cl.Pings(context.Background(), id, more); err != nil {
							t.Fatalf("seed %d step %d: pings: %v", seed, step, err)
						}
					}
				case r < 6 && len(online) > 0: // leave
					ids := slices.Sorted(func(y func(string) bool) {
						for k := range online {
							if !y(k) {
								return
							}
						}
					})
					id := ids[rng.IntN(len(ids))]
					delete(online, id)
					w.mu.Lock()
					delete(w.players, id)
					w.mu.Unlock()
				case r == 6: // the plane restarts
					s.Wait()
					c.add(time.Second)
					s, h = newPlane(t, nodes, c)
					cl = &Client{URL: h.URL}
				}
				c.add(time.Second)
				poll(s)
				c.add(2 * time.Second) // Retry: a handoff asked for again is asked now
				poll(s)
				checkPlane(t, seed, step, s, w, online)
			}
			// Leaves take LeaveAfter to be seen.
			for range 7 {
				c.add(time.Second)
				poll(s)
			}
			s.mu.Lock()
			held := s.plane.Players()
			s.mu.Unlock()
			if len(held) != len(online) {
				t.Errorf("seed %d: the plane holds %d players, %d are online", seed, len(held), len(online))
			}
			for _, id := range held {
				if _, ok := online[id]; !ok {
					t.Errorf("seed %d: the plane still holds %s, who left", seed, id)
				}
			}
		})
	}
}

func checkPlane(t *testing.T, seed uint64, step int, s *Server, w *fakeWorld, online map[string]int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	fail := func(format string, args ...any) {
		t.Fatalf("seed %d step %d: %s", seed, step, fmt.Sprintf(format, args...))
	}
	for id := range online {
		n, ok := s.plane.NodeOf(id)
		if !ok {
			if s.stats.Rebuilt {
				fail("player %s online but not placed: stats %+v, on node %d with pings %v", id, s.stats, w.players[id], w.pings[w.players[id]][id])
			}
			continue
		}
		if w.players[id] != uint32(n) && s.stats.HandoffErrors == 0 {
			fail("player %s plays on node %d, the plane assigns %d", id, w.players[id], n)
		}
	}
	// The plane still holds players that left less than LeaveAfter ago.
	load := map[uint32]int{}
	var rows [][]float64
	for _, id := range s.plane.Players() {
		n, _ := s.plane.NodeOf(id)
		load[uint32(n)]++
		r, _ := s.plane.Delays(id)
		rows = append(rows, r)
	}
	caps := make([]int, len(s.cfg.Nodes))
	for i, n := range s.cfg.Nodes {
		caps[i] = n.Capacity
		if load[n.ID] > n.Capacity {
			fail("node %d holds %d players, capacity %d", n.ID, load[n.ID], n.Capacity)
		}
	}
	if len(rows) == 0 {
		return
	}
	_, opt, err := mcf.Transport(rows, caps)
	if err != nil {
		fail("optimum: %v", err)
	}
	if got := s.plane.TotalDelay(); math.Abs(got-opt) > 1e-6*max(opt, 1) {
		fail("assignment costs %.3f ms, optimum %.3f", got, opt)
	}
}

// TestPlaneNodeDown: a node that stops answering is down after DownAfter;
// its players are re-admitted elsewhere, and once they rejoin there they
// are where the plane wants them; the node comes back up when it answers.
func TestPlaneNodeDown(t *testing.T) {
	w, nodes := newFakeWorld(t, 3)
	c := &clock{t: time.Unix(1_000_000, 0)}
	s, h := newPlane(t, nodes, c)
	cl := &Client{URL: h.URL}
	poll(s)
	var on1 []string
	for p := range 6 {
		id := fmt.Sprintf("p%d", p)
		ps := []live.PingSample{{Node: 1, RTTMs: 10}, {Node: 2, RTTMs: 50 + float64(p)}, {Node: 3, RTTMs: 90}}
		adm, err := cl.Join(context.Background(), id, ps)
		if err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.players[id] = adm.Node
		w.mu.Unlock()
	}
	// The later joins pushed earlier players off node 1: the polls hand
	// them over.
	poll(s)
	poll(s)
	w.mu.Lock()
	for id, n := range w.players {
		if n == 1 {
			on1 = append(on1, id)
		}
	}
	w.mu.Unlock()
	if len(on1) != 3 || s.Stats().Handoffs != 3 {
		t.Fatalf("players on node 1: %v, want its 3 seats full", on1)
	}
	w.mu.Lock()
	w.down[1] = true
	w.mu.Unlock()
	for range 4 {
		c.add(time.Second)
		poll(s)
	}
	if st := s.Stats(); st.NodeDowns != 1 || st.Moves < 3 {
		t.Fatalf("after node 1 went silent: %+v", st)
	}
	// The clients rejoin where the plane says.
	for _, id := range on1 {
		adm, err := cl.Where(context.Background(), id)
		if err != nil || adm.Node == 1 {
			t.Fatalf("player %s: %+v, %v; want another node", id, adm, err)
		}
		w.mu.Lock()
		w.players[id] = adm.Node
		w.mu.Unlock()
	}
	w.mu.Lock()
	w.down[1] = false
	w.mu.Unlock()
	c.add(time.Second)
	poll(s)
	poll(s)
	if st := s.Stats(); st.NodeUps != 1 || st.Leaves != 0 {
		t.Fatalf("after node 1 came back: %+v", st)
	}
	// Node 1 is everyone's best: the plane pulls 3 players back.
	c.add(3 * time.Second)
	poll(s)
	poll(s)
	n1 := 0
	w.mu.Lock()
	for _, n := range w.players {
		if n == 1 {
			n1++
		}
	}
	w.mu.Unlock()
	if n1 != 3 {
		t.Fatalf("%d players back on node 1, want 3", n1)
	}
}

// TestPlaneBadInput: every malformed request is refused with a message
// naming the problem and changes nothing.
func TestPlaneBadInput(t *testing.T) {
	_, nodes := newFakeWorld(t, 2)
	c := &clock{t: time.Unix(1_000_000, 0)}
	s, h := newPlane(t, nodes, c)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(h.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, msg := post("/v1/join", `{"player":"a","pings":[{"node":1,"rtt_ms":5}]}`); code != http.StatusServiceUnavailable || !strings.Contains(msg, "rebuilding") {
		t.Fatalf("join before the rebuild: %d %q", code, msg)
	}
	poll(s)
	for _, tc := range []struct{ path, body, want string }{
		{"/v1/join", `garbage`, "want {"},
		{"/v1/join", `{"player":"","pings":[{"node":1,"rtt_ms":5}]}`, "player"},
		{"/v1/join", `{"player":"a","pings":[]}`, "0 samples"},
		{"/v1/join", `{"player":"a","pings":[{"node":9,"rtt_ms":5}]}`, "node 9 is not in the cluster"},
		{"/v1/join", `{"player":"a","pings":[{"node":1,"rtt_ms":-5}]}`, "RTT -5"},
		{"/v1/join", `{"player":"a","pings":[{"node":1,"rtt_ms":5},{"node":1,"rtt_ms":6}]}`, "measured twice"},
		{"/v1/join", `{"player":"a","pings":[{"node":1,"rtt_ms":5}],"x":1}`, "unknown field"},
		{"/v1/join", `{"player":"a","pings":[{"node":1,"rtt_ms":5}]}` + strings.Repeat(" ", maxBody), "over"},
		{"/v1/pings", `{"player":"nobody","pings":[{"node":1,"rtt_ms":5}]}`, "not in the world"},
	} {
		code, msg := post(tc.path, tc.body)
		if code/100 != 4 || !strings.Contains(msg, tc.want) {
			t.Errorf("%s %.60q: %d %q, want 4xx naming %q", tc.path, tc.body, code, msg, tc.want)
		}
	}
	if st := s.Stats(); st.Joins != 0 || st.Measures != 0 {
		t.Fatalf("bad requests changed the plane: %+v", st)
	}
	if code, _ := post("/v1/join", `{"player":"a","pings":[{"node":1,"rtt_ms":5}]}`); code != http.StatusOK {
		t.Fatalf("good join: %d", code)
	}
	if code, msg := post("/v1/join", `{"player":"a","pings":[{"node":1,"rtt_ms":5}]}`); code != http.StatusConflict {
		t.Fatalf("second join of a: %d %q", code, msg)
	}
	resp, err := http.Get(h.URL + "/v1/player?id=" + strings.Repeat("x", 100))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("player with a long ID: %d", resp.StatusCode)
	}
	for _, bad := range []Config{
		{Nodes: nodes[:1]},
		{Nodes: []Node{nodes[0], nodes[0]}},
		{Nodes: []Node{nodes[0], {ID: 2, Site: "", Capacity: 1, Admin: "http://x:1", QUIC: "x"}}},
		{Nodes: []Node{nodes[0], {ID: 2, Site: "To\nkyo", Capacity: 1, Admin: "http://x:1", QUIC: "x"}}},
		{Nodes: []Node{nodes[0], {ID: 2, Site: "Tokyo", Capacity: 0, Admin: "http://x:1", QUIC: "x"}}},
		{Nodes: []Node{nodes[0], {ID: 2, Site: "Tokyo", Capacity: 1, Admin: "x:1", QUIC: "x"}}},
		{Nodes: []Node{nodes[0], {ID: 2, Site: "Tokyo", Capacity: 1, Admin: "http://x:1"}}},
		{Nodes: nodes, Poll: time.Nanosecond},
	} {
		if _, err := New(bad); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}

// TestPlaneRegions: players located in the west half of a 2 × 1 grid, all
// nearest node 2, make the plane move that region from node 1 (its first
// core) to node 2: every other node is asked to migrate its objects in
// the region's box (the west edge region reaching to minus infinity) to
// node 2, and nothing is asked of the east region, which has no player.
func TestPlaneRegions(t *testing.T) {
	w, s, _, step := regionPlane(t, 0)
	step() // and no more migrations after it
	st := s.Stats()
	w.mu.Lock()
	calls := slices.Clone(w.regions)
	w.mu.Unlock()
	slices.Sort(calls)
	want := []string{
		"node 1: [-1.7976931348623157e+308, 50] × [-1.7976931348623157e+308, 1.7976931348623157e+308] to node 2",
		"node 3: [-1.7976931348623157e+308, 50] × [-1.7976931348623157e+308, 1.7976931348623157e+308] to node 2",
	}
	if st.RegionMigrations != 1 || st.ObjectsMoved != 4 || !slices.Equal(calls, want) {
		t.Fatalf("stats %+v, calls:\n%s", st, strings.Join(calls, "\n"))
	}
	_, nodes := newFakeWorld(t, 3)
	f := File{Nodes: fileNodes(nodes)}
	for _, bad := range []File{
		{Listen: "x:1", Grid: "2", Bounds: []float64{0, 0, 1, 1}, Nodes: f.Nodes},
		{Listen: "x:1", Grid: "2x2", Bounds: []float64{0, 0, 1}, Nodes: f.Nodes},
		{Listen: "x:1", Grid: "2x2", Bounds: []float64{0, 0, -1, 1}, Nodes: f.Nodes},
		{Listen: "x:1", Grid: "2x2", Bounds: []float64{0, 0, 1, 1}, RegionPolicy: "often", Nodes: f.Nodes},
		{Listen: "x:1", Bounds: []float64{0, 0, 1, 1}, Nodes: f.Nodes},
	} {
		if _, err := bad.Config(); err == nil {
			t.Errorf("file %+v accepted", bad)
		}
	}
	if _, err := ParseFile([]byte("listen = \"x:1\"\nsurprise = 1\n")); err == nil {
		t.Error("a file with an unknown key accepted")
	}
}

// TestPlaneBearer: with the nodes' admin secret, every request the plane
// sends them carries it.
func TestPlaneBearer(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		json.NewEncoder(w).Encode(live.PlayersReport{Node: 1, Players: []live.PlayerReport{}})
	}))
	defer srv.Close()
	nodes := []Node{{ID: 1, Site: "Tokyo", Capacity: 1, Admin: srv.URL, QUIC: "x:1"}, {ID: 2, Site: "London", Capacity: 1, Admin: srv.URL, QUIC: "x:2"}}
	s, err := New(Config{Nodes: nodes, AdminToken: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	poll(s)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 || seen[0] != "Bearer s3cret" || seen[1] != "Bearer s3cret" {
		t.Fatalf("authorization headers %q", seen)
	}
}

// TestPlaneAutoscale: the plane serves Agones' FleetAutoscaler webhook
// from its own placement: a fleet of two nodes of 3 seats holding 5
// players, with one Ready server kept spare, wants 3 replicas; a fleet the
// configuration does not map is sized from its players counter.
func TestPlaneAutoscale(t *testing.T) {
	w, nodes := newFakeWorld(t, 3)
	c := &clock{t: time.Unix(1_000_000, 0)}
	f := File{Listen: "x:1", Autoscale: &FileAutoscale{Fleets: []FileFleet{{Namespace: "games", Name: "eu", Nodes: []uint32{1, 2}}},
		Buffer: 1, Min: 1, Max: 10, MaxLoad: 3, Counter: "players"}}
	f.Nodes = fileNodes(nodes)
	_, cl := fromFile(t, f, c)
	for p := range 5 {
		id := fmt.Sprintf("p%d", p)
		adm, err := cl.Join(context.Background(), id, []live.PingSample{{Node: 1, RTTMs: 10}, {Node: 2, RTTMs: 20}, {Node: 3, RTTMs: 300}})
		if err != nil {
			t.Fatal(err)
		}
		w.mu.Lock()
		w.players[id] = adm.Node
		w.mu.Unlock()
	}
	review := func(ns, name, counter string) (int32, bool) {
		body := fmt.Sprintf(`{"request":{"uid":"u1","name":%q,"namespace":%q,"status":{"replicas":2,"readyReplicas":0,"allocatedReplicas":2,"counters":{"players":{"count":%s,"capacity":6}}}}}`, name, ns, counter)
		resp, err := http.Post(cl.URL+"/autoscale", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out reviewAnswer
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 || out.Response.UID != "u1" {
			t.Fatalf("review of %s/%s: %s, %v, %+v", ns, name, resp.Status, err, out)
		}
		return out.Response.Replicas, out.Response.Scale
	}
	if n, _ := review("games", "eu", "0"); n != 3 {
		t.Errorf("fleet games/eu (5 players on 2 servers of 3): %d replicas, want 3", n)
	}
	if n, _ := review("games", "us", "7"); n < 3 || n > 4 {
		t.Errorf("fleet games/us (7 players by its counter, 3 per server, 1 spare): %d replicas, want 3 or 4", n)
	}
	bad := f
	bad.Autoscale = &FileAutoscale{Fleets: []FileFleet{{Name: "eu", Nodes: []uint32{9}}}}
	if cfg, err := bad.Config(); err == nil {
		if _, err := New(cfg); err == nil {
			t.Error("a fleet naming an unknown node accepted")
		}
	}
}

// fileNodes lists nodes as a plane file does.
func fileNodes(nodes []Node) []FileNode {
	var out []FileNode
	for _, n := range nodes {
		out = append(out, FileNode{ID: n.ID, Site: n.Site, Capacity: n.Capacity, Admin: n.Admin, PlayerQUIC: n.QUIC})
	}
	return out
}

// fromFile builds the plane file f describes, on clock c, serves its API
// and runs the first round of polls (the rebuild).
func fromFile(t *testing.T, f File, c *clock) (*Server, *Client) {
	t.Helper()
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = c.now
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(s.Handler())
	t.Cleanup(h.Close)
	poll(s)
	return s, &Client{URL: h.URL}
}

// reviewAnswer is a FleetAutoscaleReview's answer as Agones documents it,
// spelled out here rather than decoded with agones' own type, so that a
// wrong JSON name in the package fails the tests.
type reviewAnswer struct {
	Response struct {
		UID      string `json:"uid"`
		Scale    bool   `json:"scale"`
		Replicas int32  `json:"replicas"`
	} `json:"response"`
}
