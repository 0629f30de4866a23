package plane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/wire"
)

// enrolledCluster is a plane over two fake configured nodes (1, New York;
// 2, Frankfurt) whose region eu-west (site London, nodes 200…202)
// enrolls placement targets, with a state file and a revocation list.
type enrolledCluster struct {
	t       *testing.T
	w       *fakeWorld
	nodes   []Node
	c       *clock
	ca      *pki.CA
	dir     string
	revoked string
	// inst, if set, is the planes' instance setup.
	inst *InstanceSetup
}

func newEnrolledCluster(t *testing.T) *enrolledCluster {
	w, nodes := newFakeWorld(t, 2)
	w.token = "shared-secret-of-the-servers" // enrolled servers hold it too
	k := &enrolledCluster{t: t, w: w, nodes: nodes, c: &clock{t: time.Unix(1_000_000, 0)}, dir: t.TempDir()}
	ca, err := pki.InitCA(filepath.Join(k.dir, "ca"), "test", k.c.now().Add(-time.Hour), 72*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	k.ca = ca
	k.revoked = filepath.Join(k.dir, "revoked")
	if err := os.WriteFile(k.revoked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return k
}

// plane starts a plane (a new one each call: a restart) on the same
// state file.
func (k *enrolledCluster) plane() *Server {
	s, err := New(Config{Nodes: k.nodes, Clock: k.c.now, Seed: 1, AdminToken: k.w.token, Hosts: &Hosts{CA: k.ca, Rate: 1e6, Burst: 1 << 20,
		Enroll:    []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202, Site: "London"}},
		StateFile: filepath.Join(k.dir, "state.json"), Revoked: k.revoked, ForgetAfter: time.Minute}, Instances: k.inst})
	if err != nil {
		k.t.Fatal(err)
	}
	return s
}

// enroll enrolls game server gs with s as a placement target whose admin
// endpoint is admin, and returns its node ID.
func (k *enrolledCluster) enroll(s *Server, gs, admin string) uint32 {
	k.t.Helper()
	code, g, msg := postHosts(k.t, s, placedBody(k.t, gs, k.c.now(), Placement{Admin: admin, QUIC: "127.0.0.1:9900", Capacity: 3}))
	if code != http.StatusOK {
		k.t.Fatalf("enroll %s: %d %s", gs, code, msg)
	}
	return g.Node
}

var nonces int

// placedBody is an enrollment of gs in eu-west asking for placement pl.
func placedBody(t *testing.T, gs string, at time.Time, pl Placement) HostRequest {
	t.Helper()
	nonces++
	nonce := fmt.Sprintf("%032x", nonces)
	csr := string(csrPEM(t))
	return HostRequest{CSR: csr, GameServer: gs, Region: "eu-west", Time: at.Unix(), Nonce: nonce, Placement: pl,
		Proof: EnrollProof(testSecret, gs, "eu-west", at.Unix(), nonce, csr, pl)}
}

// nodeIDs returns GET /v1/nodes' IDs.
func nodeIDs(t *testing.T, s *Server) []uint32 {
	t.Helper()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/v1/nodes", nil))
	var ns []NodeInfo
	if err := json.Unmarshal(w.Body.Bytes(), &ns); err != nil {
		t.Fatalf("GET /v1/nodes: %v: %s", err, w.Body)
	}
	var out []uint32
	for _, n := range ns {
		out = append(out, n.ID)
	}
	return out
}

// join admits player id with pings (node → RTT ms) through the plane's
// API and puts it in game where it was admitted.
func (k *enrolledCluster) join(s *Server, id string, pings map[uint32]float64) Admission {
	k.t.Helper()
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	var ps []live.PingSample
	for _, n := range slices.Sorted(func(y func(uint32) bool) {
		for n := range pings {
			if !y(n) {
				return
			}
		}
	}) {
		ps = append(ps, live.PingSample{Node: n, RTTMs: pings[n]})
	}
	adm, err := (&Client{URL: h.URL}).Join(context.Background(), id, ps)
	if err != nil {
		k.t.Fatalf("join %s: %v", id, err)
	}
	k.w.mu.Lock()
	k.w.players[id] = adm.Node
	k.w.pings[adm.Node][id] = ps
	k.w.mu.Unlock()
	return adm
}

// where returns the node each player is in game on.
func (k *enrolledCluster) where() map[string]uint32 {
	k.w.mu.Lock()
	defer k.w.mu.Unlock()
	out := map[string]uint32{}
	for p, n := range k.w.players {
		out[p] = n
	}
	return out
}

// TestEnrolledTarget: a game server that enrolls with its endpoints
// becomes a placement target once it answers a poll; players near it are
// admitted there; revoked, it leaves the placement and its players are
// handed off to the configured nodes; its renewal is refused.
func TestEnrolledTarget(t *testing.T) {
	k := newEnrolledCluster(t)
	s := k.plane()
	poll(s) // the rebuild, from an empty world
	if !s.Stats().Rebuilt {
		t.Fatal("not rebuilt")
	}
	admin := k.w.addNode(200)
	k.w.down[200] = true // enrolled, not ready yet
	if id := k.enroll(s, "gs-1", admin); id != 200 {
		t.Fatalf("enrolled as node %d, want 200", id)
	}
	k.c.add(time.Second)
	poll(s)
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, 2}) || s.Stats().EnrolledAdded != 0 {
		t.Fatalf("an enrolled node that does not answer is a target: nodes %v, stats %+v", got, s.Stats())
	}
	k.w.mu.Lock()
	k.w.down[200] = false
	k.w.mu.Unlock()
	k.c.add(time.Second)
	poll(s)
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, 2, 200}) || s.Stats().EnrolledAdded != 1 {
		t.Fatalf("after its first answer: nodes %v, stats %+v; want 200 a target", got, s.Stats())
	}
	// Players near London go to node 200; one near New York stays there.
	for i := range 3 {
		adm := k.join(s, fmt.Sprintf("eu%d", i), map[uint32]float64{1: 80, 2: 30, 200: 5})
		if adm.Node != 200 || adm.QUIC != "127.0.0.1:9900" {
			t.Fatalf("player eu%d admitted to %+v, want node 200 at its enrolled endpoint", i, adm)
		}
	}
	if adm := k.join(s, "us0", map[uint32]float64{1: 5, 2: 90, 200: 80}); adm.Node != 1 {
		t.Fatalf("us0 admitted to node %d, want 1", adm.Node)
	}
	k.c.add(time.Second)
	poll(s)
	// Revoked: the plane moves its players off.
	if err := os.WriteFile(k.revoked, []byte("node 200\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k.c.add(time.Second)
	poll(s)
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, 2}) || s.Stats().EnrolledRemoved != 1 {
		t.Fatalf("revoked: nodes %v, stats %+v; want 200 removed", got, s.Stats())
	}
	for i := range 3 {
		if n, _ := s.NodeOf(fmt.Sprintf("eu%d", i)); n == 200 || n == 0 {
			t.Fatalf("eu%d still placed on node %d", i, n)
		}
	}
	for range 3 {
		k.c.add(2 * time.Second)
		poll(s)
	}
	for p, n := range k.where() {
		if want, _ := s.NodeOf(p); n != want || n == 200 {
			t.Errorf("player %s in game on node %d, the plane places it on %d", p, n, want)
		}
	}
	// A client that pinged node 200 while it was a target still joins.
	if adm := k.join(s, "late", map[uint32]float64{1: 50, 2: 60, 200: 5}); adm.Node != 1 && adm.Node != 2 {
		t.Errorf("late admitted to node %d, want 1 or 2", adm.Node)
	}
	s.mu.Lock()
	draining := len(s.draining)
	s.mu.Unlock()
	if draining != 0 {
		t.Errorf("%d nodes still draining once node 200 holds no player", draining)
	}
	// Its renewal is refused.
	code, _, msg := postHosts(t, s, placedBody(t, "gs-1", k.c.now(), Placement{Admin: admin, QUIC: "127.0.0.1:9900", Capacity: 3}))
	if code != http.StatusUnauthorized || !strings.Contains(msg, "revoked") {
		t.Errorf("a revoked node's renewal: %d %q, want 401 revoked", code, msg)
	}
}

// TestEnrolledRebuild: a restarted plane knows its enrolled nodes from the
// state file and rebuilds with their reports; one that answers as
// another node is refused, and its report unused.
func TestEnrolledRebuild(t *testing.T) {
	k := newEnrolledCluster(t)
	s := k.plane()
	poll(s)
	a := k.enroll(s, "gs-a", k.w.addNode(200))
	b := k.enroll(s, "gs-b", k.w.addNode(201))
	k.w.mu.Lock()
	k.w.as[b] = 1 // gs-b's admin endpoint answers as node 1
	k.w.mu.Unlock()
	k.c.add(time.Second)
	poll(s)
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, 2, a}) {
		t.Fatalf("nodes %v, want 1, 2 and %d (not %d, which answers as node 1)", got, a, b)
	}
	k.join(s, "eu0", map[uint32]float64{1: 80, 2: 30, a: 5})
	k.join(s, "us0", map[uint32]float64{1: 5, 2: 90, a: 80})
	k.c.add(time.Second)
	poll(s)
	s.Wait()
	// The plane restarts; a node that is neither configured nor enrolled
	// runs too.
	k.w.addNode(202)
	k.c.add(time.Second)
	s = k.plane()
	poll(s)
	k.w.mu.Lock()
	unknownPolls := k.w.polls[202]
	k.w.mu.Unlock()
	if unknownPolls != 0 {
		t.Errorf("node 202, neither configured nor enrolled, was polled %d times", unknownPolls)
	}
	st := s.Stats()
	if !st.Rebuilt || st.EnrolledAdded != 1 {
		t.Fatalf("restarted: stats %+v; want rebuilt with one enrolled node added", st)
	}
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, 2, a}) {
		t.Fatalf("restarted: nodes %v, want 1, 2 and %d", got, a)
	}
	for p, want := range map[string]uint32{"eu0": a, "us0": 1} {
		if n, ok := s.NodeOf(p); !ok || n != want {
			t.Errorf("restarted: %s placed on %d (%v), want %d", p, n, ok, want)
		}
	}
	// A record the state file gives a node the game server was not given
	// is refused at start.
	b2, err := os.ReadFile(filepath.Join(k.dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b2), fmt.Sprintf("\"%d\": {", a), "\"202\": {", 1)
	if bad == string(b2) {
		t.Fatalf("no record of node %d in the state file: %s", a, b2)
	}
	if err := os.WriteFile(filepath.Join(k.dir, "state.json"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{Nodes: k.nodes, Hosts: &Hosts{CA: k.ca, StateFile: filepath.Join(k.dir, "state.json"),
		Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202, Site: "London"}}}})
	if err == nil || !strings.Contains(err.Error(), "was not given that ID") {
		t.Errorf("a state file naming node 202 for gs-a: %v", err)
	}
}

// TestEnrolledGone: an enrolled target that stops answering is down (its
// players re-admitted) and, after ForgetAfter, leaves the placement and is
// no longer polled, until it enrolls again.
func TestEnrolledGone(t *testing.T) {
	k := newEnrolledCluster(t)
	s := k.plane()
	poll(s)
	admin := k.w.addNode(200)
	k.enroll(s, "gs-1", admin)
	k.c.add(time.Second)
	poll(s)
	k.join(s, "eu0", map[uint32]float64{1: 80, 2: 30, 200: 5})
	k.c.add(time.Second)
	poll(s)
	k.w.mu.Lock()
	k.w.down[200] = true
	delete(k.w.players, "eu0") // the node died with it
	k.w.mu.Unlock()
	for range 4 {
		k.c.add(time.Second)
		poll(s)
	}
	if st := s.Stats(); st.NodeDowns != 1 || st.EnrolledRemoved != 0 {
		t.Fatalf("silent 4 s: stats %+v; want node 200 down, not removed", st)
	}
	if n, _ := s.NodeOf("eu0"); n == 200 {
		t.Fatalf("eu0 still placed on the node down")
	}
	for range 60 {
		k.c.add(time.Second)
		poll(s)
	}
	if st := s.Stats(); st.EnrolledRemoved != 1 {
		t.Fatalf("silent a minute: stats %+v; want node 200 removed", st)
	}
	k.w.mu.Lock()
	before := k.w.polls[200]
	k.w.down[200] = false
	k.w.mu.Unlock()
	k.c.add(time.Second)
	poll(s)
	k.w.mu.Lock()
	after := k.w.polls[200]
	k.w.mu.Unlock()
	if after != before || slices.Contains(nodeIDs(t, s), 200) {
		t.Fatalf("a forgotten node is polled again (%d → %d polls) or placed", before, after)
	}
	k.enroll(s, "gs-1", admin)
	k.c.add(time.Second)
	poll(s)
	if !slices.Contains(nodeIDs(t, s), 200) || s.Stats().EnrolledAdded != 2 {
		t.Fatalf("enrolled again: nodes %v, stats %+v; want 200 a target again", nodeIDs(t, s), s.Stats())
	}
}

// TestEnrolledBadInput: placements and configurations the plane refuses,
// changing nothing.
func TestEnrolledBadInput(t *testing.T) {
	k := newEnrolledCluster(t)
	s := k.plane()
	poll(s)
	good := Placement{Admin: "http://127.0.0.1:7001", QUIC: "127.0.0.1:9900", Capacity: 3}
	for _, c := range []struct {
		name string
		pl   Placement
		want string
	}{
		{"admin not a URL", Placement{Admin: "127.0.0.1:7001", QUIC: good.QUIC, Capacity: 3}, "admin"},
		{"admin with a path", Placement{Admin: "http://127.0.0.1:7001/x", QUIC: good.QUIC, Capacity: 3}, "admin"},
		{"admin without a port", Placement{Admin: "http://h", QUIC: good.QUIC, Capacity: 3}, "admin"},
		{"no player endpoint", Placement{Admin: good.Admin, Capacity: 3}, "no player endpoint"},
		{"quic not host:port", Placement{Admin: good.Admin, QUIC: "h", Capacity: 3}, "player_quic"},
		{"ws not a ws URL", Placement{Admin: good.Admin, WS: "http://h:1/", Capacity: 3}, "player_ws"},
		{"capacity 0", Placement{Admin: good.Admin, QUIC: good.QUIC}, "capacity"},
		{"capacity too large", Placement{Admin: good.Admin, QUIC: good.QUIC, Capacity: MaxEnrollCapacity + 1}, "capacity"},
		{"a space", Placement{Admin: good.Admin, QUIC: "h :1", Capacity: 3}, "space"},
	} {
		code, _, msg := postHosts(t, s, placedBody(t, "gs-1", k.c.now(), c.pl))
		if code != http.StatusBadRequest || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q, want 400 naming %q", c.name, code, msg, c.want)
		}
	}
	// A placement changed on the way fails the proof.
	req := placedBody(t, "gs-1", k.c.now(), good)
	req.Admin = "http://10.6.6.6:7001"
	if code, _, msg := postHosts(t, s, req); code != http.StatusUnauthorized || !strings.Contains(msg, "proof") {
		t.Errorf("placement changed after the proof: %d %q", code, msg)
	}
	if st := hostStats(t, s); st.Issued != 0 || len(st.GameServers) != 0 {
		t.Errorf("refused requests gave IDs: %+v", st)
	}
	k.c.add(time.Second)
	poll(s)
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, 2}) {
		t.Errorf("refused requests changed the nodes: %v", got)
	}
	// Configurations.
	base := func() Hosts {
		return Hosts{CA: k.ca, StateFile: filepath.Join(t.TempDir(), "s.json"),
			Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202, Site: "London"}}}
	}
	for _, c := range []struct {
		name string
		edit func(*Hosts)
		want string
	}{
		{"site with a control character", func(h *Hosts) { h.Enroll[0].Site = "Lon\x01don" }, "site"},
		{"site too long", func(h *Hosts) { h.Enroll[0].Site = strings.Repeat("x", 65) }, "site"},
		{"site without a state file", func(h *Hosts) { h.StateFile = "" }, "state_file"},
		{"forget_after too short", func(h *Hosts) { h.ForgetAfter = time.Millisecond }, "forget_after"},
		{"revocation list missing", func(h *Hosts) { h.Revoked = filepath.Join(k.dir, "nope") }, "revoked"},
	} {
		h := base()
		c.edit(&h)
		if _, err := New(Config{Nodes: k.nodes, Hosts: &h}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
}

// TestEnrolledRevokedAtRestart: a node revoked while the plane was down is
// not placed by the restarted plane, which hands its players off.
func TestEnrolledRevokedAtRestart(t *testing.T) {
	k := newEnrolledCluster(t)
	s := k.plane()
	poll(s)
	id := k.enroll(s, "gs-1", k.w.addNode(200))
	k.c.add(time.Second)
	poll(s)
	k.join(s, "eu0", map[uint32]float64{1: 80, 2: 30, id: 5})
	k.c.add(time.Second)
	poll(s)
	if k.where()["eu0"] != id {
		t.Fatalf("eu0 on node %d, want %d", k.where()["eu0"], id)
	}
	s.Wait()
	if err := os.WriteFile(k.revoked, []byte(fmt.Sprintf("node %d\n", id)), 0o600); err != nil {
		t.Fatal(err)
	}
	s = k.plane()
	for range 4 {
		k.c.add(time.Second)
		poll(s)
	}
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, 2}) {
		t.Errorf("nodes %v after a restart with node %d revoked", got, id)
	}
	if n, ok := s.NodeOf("eu0"); !ok || n == id || k.where()["eu0"] != n {
		t.Errorf("eu0 placed on %d (%v), in game on %d; want handed off node %d", n, ok, k.where()["eu0"], id)
	}
}

// TestEnrolledAutoscale: a fleet mapped to an enrolling region is sized
// from the region's enrolled placement targets at that moment and the
// players the plane places on them (FleetAutoscaleReview as Agones
// POSTs it, its counter saying 0 players), within the fleet's own bounds;
// before any target it is sized from its players counter. A fleet of a
// region without a site, or with nodes and a region, is refused.
func TestEnrolledAutoscale(t *testing.T) {
	k := newEnrolledCluster(t)
	f := File{Listen: "x:1", Autoscale: &FileAutoscale{Buffer: 1, Min: 1, Max: 10, Counter: "players",
		Fleets: []FileFleet{{Namespace: "games", Name: "ow-eu-west", Region: "eu-west", Min: ptr(2), Max: ptr(4)}}}}
	secretFile := filepath.Join(k.dir, "eu-west.secret")
	if err := os.WriteFile(secretFile, testSecret, 0o600); err != nil {
		t.Fatal(err)
	}
	f.Nodes = fileNodes(k.nodes)
	f.Hosts = &FileHosts{CADir: filepath.Join(k.dir, "ca"), Rate: 1e6, Burst: 1 << 20, StateFile: filepath.Join(k.dir, "state.json"),
		ForgetAfter: "1m", Enroll: []FileEnroll{{Region: "eu-west", SecretFile: secretFile, First: 200, Last: 202, Site: "London"}}}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock, cfg.Seed, cfg.AdminToken = k.c.now, 1, k.w.token
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	poll(s)
	review := func() (int32, bool) {
		t.Helper()
		body := `{"request": {"uid": "9c1c1f3e-5b8a-4e1b-9a42-2f0f1d7b2c11", "name": "ow-eu-west", "namespace": "games",
		  "status": {"replicas": 2, "readyReplicas": 2, "reservedReplicas": 0, "allocatedReplicas": 0,
		    "counters": {"players": {"allocatedCount": 0, "allocatedCapacity": 0, "count": 0, "capacity": 128}}}},
		  "response": null}`
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/autoscale", strings.NewReader(body)))
		var out reviewAnswer
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 || out.Response.UID == "" {
			t.Fatalf("review: %d %s", w.Code, w.Body)
		}
		return out.Response.Replicas, out.Response.Scale
	}
	if _, ok, _ := s.FleetLoads(context.Background(), "games", "ow-eu-west"); ok {
		t.Fatal("a region without targets has loads")
	}
	if n, scale := review(); n != 2 || scale {
		t.Errorf("no target yet, 0 players by the counter: %d replicas (scale %v), want the fleet's min 2", n, scale)
	}
	a := k.enroll(s, "gs-a", k.w.addNode(200))
	b := k.enroll(s, "gs-b", k.w.addNode(201))
	k.c.add(time.Second)
	poll(s)
	for i := range 6 {
		k.join(s, fmt.Sprintf("eu%d", i), map[uint32]float64{1: 80, 2: 30, a: 5, b: 6})
	}
	c, ok, err := s.FleetLoads(context.Background(), "games", "ow-eu-west")
	if err != nil || !ok || c.MaxLoad != 3 || len(c.Main) != 2 || c.Main[0]+c.Main[1] != 6 {
		t.Fatalf("fleet loads %+v, %v, %v; want nodes %d and %d of 3 seats holding the 6 players", c, ok, err, a, b)
	}
	if n, scale := review(); n != 3 || !scale {
		t.Errorf("2 targets full: %d replicas (scale %v), want 3 (2 busy + 1 spare)", n, scale)
	}
	// Another fleet is not the region's.
	if _, ok, _ := s.FleetLoads(context.Background(), "games", "ow-us-east"); ok {
		t.Error("an unmapped fleet has loads")
	}

	for _, fl := range []FileFleet{{Name: "f", Region: "us-east"}, {Name: "f", Region: "eu-west", Nodes: []uint32{1}}} {
		bad := f
		bad.Autoscale = &FileAutoscale{Fleets: []FileFleet{fl}}
		_, err := bad.Config()
		if err == nil || !strings.Contains(err.Error(), "region") {
			t.Errorf("fleet %+v: %v, want refused naming the region", fl, err)
		}
	}
	bad := f
	bad.Autoscale = &FileAutoscale{Fleets: []FileFleet{{Name: "f", Min: ptr(5), Max: ptr(3)}}}
	if _, err := bad.Config(); err == nil || !strings.Contains(err.Error(), "fleet /f") {
		t.Errorf("fleet min 5 max 3: %v", err)
	}
}

// target enrolls game server gs-1 with s as a placement target (node
// 200, a fake node) and polls until it is one; it returns its node ID.
func (k *enrolledCluster) target(s *Server) uint32 {
	k.t.Helper()
	n := k.enroll(s, "gs-1", k.w.addNode(200))
	k.c.add(time.Second)
	poll(s)
	return n
}

// openInstance opens instance id, in box, with players players (none
// runs a player host) through the plane's API at url; it returns the
// status and the placement.
func openInstance(t *testing.T, url, id string, box [4]float64, players int) (int, InstancePlacement) {
	t.Helper()
	req := InstanceRequest{ID: id, Box: box}
	for i := range players {
		req.Players = append(req.Players, InstancePlayerRequest{ID: fmt.Sprintf("%s-p%d", id, i)})
	}
	b, _ := json.Marshal(req)
	resp, err := http.Post(url+"/v1/instances", "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p InstancePlacement
	json.NewDecoder(resp.Body).Decode(&p)
	return resp.StatusCode, p
}

// TestEnrolledInstanceServers: an enrolled game server that becomes a
// placement target is an instance server too, with the configured
// servers' seats: an instance opens on it and it keeps the instance's
// record; a restarted plane rebuilds the instance there; revoked, its
// instance moves to a configured server, migrated from it while it runs.
func TestEnrolledInstanceServers(t *testing.T) {
	k := newEnrolledCluster(t)
	k.inst = &InstanceSetup{Seats: 4}
	s := k.plane()
	poll(s)
	n := k.target(s)
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	// Each opens on the server with the most free seats, the first such.
	for i, want := range []uint32{1, 2, n} {
		id := fmt.Sprintf("i%d", i)
		if code, p := openInstance(t, h.URL, id, [4]float64{1e9 * float64(i+1), 0, 1e9*float64(i+1) + 1, 1}, 2); code != http.StatusOK || p.Node != want || p.Hosted {
			t.Fatalf("%s: %d %+v, want on node %d", id, code, p, want)
		}
	}
	s.Wait()
	k.w.mu.Lock()
	held := slices.Clone(k.w.held[n])
	k.w.mu.Unlock()
	if len(held) != 1 || held[0].ID != "i2" || held[0].Node != n {
		t.Fatalf("node %d keeps %+v, want i2's record", n, held)
	}
	was := s.Instances()
	// Restarted: the instances are where they were.
	k.c.add(time.Second)
	s = k.plane()
	poll(s)
	s.Wait()
	if now := s.Instances(); !slices.Equal(now.Instances, was.Instances) {
		t.Fatalf("restarted: %+v, want %+v", now.Instances, was.Instances)
	}
	// Revoked: i2 moves off it while it runs.
	k.w.mu.Lock()
	k.w.regions = nil
	k.w.mu.Unlock()
	if err := os.WriteFile(k.revoked, []byte(fmt.Sprintf("node %d\n", n)), 0o600); err != nil {
		t.Fatal(err)
	}
	k.c.add(time.Second)
	poll(s)
	s.Wait()
	st := s.Instances()
	i := slices.IndexFunc(st.Instances, func(p InstancePlacement) bool { return p.ID == "i2" })
	if i < 0 || st.Instances[i].Node == n || st.Instances[i].Hosted {
		t.Fatalf("revoked: %+v, want i2 on a configured server", st.Instances)
	}
	k.w.mu.Lock()
	calls := slices.Clone(k.w.regions)
	k.w.mu.Unlock()
	if want := fmt.Sprintf("node %d: [3e+09, 3.000000001e+09] × [0, 1] to node %d", n, st.Instances[i].Node); !slices.Contains(calls, want) {
		t.Errorf("migrations %q, want %q", calls, want)
	}
}

// TestEnrolledCapacity: an enrolled target that enrolls again with fewer
// seats has players moved off it (handed off), with more it takes players
// for whom it pays; fewer seats than the other nodes can make up for are
// refused (and tried again each round).
func TestEnrolledCapacity(t *testing.T) {
	k := newEnrolledCluster(t)
	s := k.plane()
	poll(s)
	admin := k.w.addNode(200)
	n := k.enroll(s, "gs-1", admin)
	k.c.add(time.Second)
	poll(s)
	for i := range 3 {
		if adm := k.join(s, fmt.Sprintf("eu%d", i), map[uint32]float64{1: 80, 2: 30, n: 5}); adm.Node != n {
			t.Fatalf("eu%d admitted to %d, want %d", i, adm.Node, n)
		}
	}
	capacity := func() int {
		for _, ns := range stateOf(t, s).Nodes {
			if ns.ID == n {
				return ns.Capacity
			}
		}
		return -1
	}
	reenroll := func(c int) {
		t.Helper()
		code, _, msg := postHosts(t, s, placedBody(t, "gs-1", k.c.now(), Placement{Admin: admin, QUIC: "127.0.0.1:9900", Capacity: c}))
		if code != http.StatusOK {
			t.Fatalf("enroll again with capacity %d: %d %s", c, code, msg)
		}
		k.c.add(time.Second)
		poll(s)
	}
	reenroll(1)
	if got := s.plane.Load(wire.NodeID(n)); got != 1 || capacity() != 1 {
		t.Fatalf("capacity 1: node %d seats %d players, capacity %d", n, got, capacity())
	}
	for range 3 {
		k.c.add(2 * time.Second)
		poll(s)
	}
	on := 0
	for _, at := range k.where() {
		if at == n {
			on++
		}
	}
	if on != 1 {
		t.Errorf("%d players in game on node %d after the handoffs, want 1", on, n)
	}
	reenroll(3)
	if got := s.plane.Load(wire.NodeID(n)); got != 3 || capacity() != 3 {
		t.Errorf("capacity 3 again: node %d seats %d players, capacity %d", n, got, capacity())
	}
	// 8 players on 9 seats: 1 seat for node n would leave 7.
	for i := range 5 {
		k.join(s, fmt.Sprintf("us%d", i), map[uint32]float64{1: 5, 2: 90, n: 80})
	}
	reenroll(1)
	if got := s.plane.Load(wire.NodeID(n)); got != 3 || capacity() != 3 {
		t.Errorf("capacity 1 with 8 players on 9 seats: node %d seats %d players, capacity %d; want it refused", n, got, capacity())
	}
}

// stateOf is GET /v1/state.
func stateOf(t *testing.T, s *Server) State {
	t.Helper()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/v1/state", nil))
	var st State
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("GET /v1/state: %v", err)
	}
	return st
}

func ptr[T any](v T) *T { return &v }
