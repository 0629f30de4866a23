package plane

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// get serves GET path on s's API and returns the status and body.
func get(s *Server, path string) (int, string) {
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w.Code, w.Body.String()
}

// rawJoin POSTs a join of player id with pings to s's API.
func rawJoin(s *Server, id string, pings string) (int, string) {
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/v1/join",
		bytes.NewReader([]byte(fmt.Sprintf(`{"player": %q, "pings": %s}`, id, pings)))))
	b, _ := io.ReadAll(w.Body)
	return w.Code, string(b)
}

// TestNoNodesOfItsOwn: a plane without [[nodes]] whose region enrolls
// placement targets starts and serves its API, ready, refusing joins with
// 503 naming the reason; the first enrolled game server that answers
// becomes the placement, where players are admitted; a second one joins
// it; a restarted plane rebuilds from the enrolled nodes alone; when the
// last target leaves, the plane is back to waiting, and builds the
// placement again from the next one.
func TestNoNodesOfItsOwn(t *testing.T) {
	k := newEnrolledCluster(t)
	k.nodes = nil
	s := k.plane()
	if code, _ := get(s, "/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before any poll: %d, want 503", code)
	}
	poll(s)
	if code, body := get(s, "/readyz"); code != http.StatusOK || !strings.Contains(body, noTarget) {
		t.Errorf("/readyz without targets: %d %q, want 200 naming %q", code, body, noTarget)
	}
	if code, body := rawJoin(s, "eu0", `[{"node": 200, "rtt_ms": 5}]`); code != http.StatusServiceUnavailable || !strings.Contains(body, noTarget) {
		t.Errorf("join without targets: %d %q, want 503 naming %q", code, body, noTarget)
	}
	for _, path := range []string{"/v1/state", "/v1/nodes", "/healthz"} {
		if code, body := get(s, path); code != http.StatusOK {
			t.Errorf("GET %s without targets: %d %q", path, code, body)
		}
	}
	if code, _ := get(s, "/v1/player?id=eu0"); code != http.StatusNotFound {
		t.Errorf("GET /v1/player without targets: %d, want 404", code)
	}
	if _, ok := s.NodeOf("eu0"); ok || len(nodeIDs(t, s)) != 0 || s.Stats().Rebuilt {
		t.Fatalf("without targets: nodes %v, stats %+v", nodeIDs(t, s), s.Stats())
	}

	// The first enrolled game server: enrolled, not answering yet, then
	// answering.
	admin := k.w.addNode(200)
	k.w.down[200] = true
	a := k.enroll(s, "gs-a", admin)
	k.c.add(time.Second)
	poll(s)
	if len(nodeIDs(t, s)) != 0 {
		t.Fatalf("a node that does not answer is a target: %v", nodeIDs(t, s))
	}
	k.w.mu.Lock()
	k.w.down[200] = false
	k.w.mu.Unlock()
	k.c.add(time.Second)
	poll(s)
	if st := s.Stats(); !slices.Equal(nodeIDs(t, s), []uint32{a}) || !st.Rebuilt || st.EnrolledAdded != 1 {
		t.Fatalf("after its first answer: nodes %v, stats %+v; want %d the placement", nodeIDs(t, s), st, a)
	}
	if code, body := get(s, "/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz with a target: %d %q", code, body)
	}
	if adm := k.join(s, "eu0", map[uint32]float64{a: 5}); adm.Node != a || adm.QUIC != "127.0.0.1:9900" {
		t.Fatalf("eu0 admitted to %+v, want node %d", adm, a)
	}

	// A second one: players near it go there.
	b := k.enroll(s, "gs-b", k.w.addNode(201))
	k.c.add(time.Second)
	poll(s)
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{a, b}) || s.Stats().EnrolledAdded != 2 {
		t.Fatalf("second target: nodes %v, stats %+v", got, s.Stats())
	}
	if adm := k.join(s, "eu1", map[uint32]float64{a: 40, b: 4}); adm.Node != b {
		t.Fatalf("eu1 admitted to %d, want %d", adm.Node, b)
	}
	// One that pinged the first only is admitted, its RTT to the second
	// estimated.
	if adm := k.join(s, "eu2", map[uint32]float64{a: 8}); adm.Node != a && adm.Node != b {
		t.Fatalf("eu2 admitted to %d", adm.Node)
	}
	k.c.add(time.Second)
	poll(s)
	s.Wait()

	// A restart rebuilds from the enrolled nodes' reports.
	k.c.add(time.Second)
	want := map[string]uint32{}
	for _, p := range []string{"eu0", "eu1", "eu2"} {
		want[p], _ = s.NodeOf(p)
	}
	s = k.plane()
	poll(s)
	if st := s.Stats(); !st.Rebuilt || !slices.Equal(nodeIDs(t, s), []uint32{a, b}) {
		t.Fatalf("restarted: nodes %v, stats %+v", nodeIDs(t, s), st)
	}
	for p, n := range want {
		if got, ok := s.NodeOf(p); !ok || got != n {
			t.Errorf("restarted: %s on %d (%v), want %d", p, got, ok, n)
		}
	}

	// The targets leave: the first revoked (its players move to the
	// second), then the second.
	if err := os.WriteFile(k.revoked, []byte(fmt.Sprintf("node %d\n", a)), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		k.c.add(time.Second)
		poll(s)
	}
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{b}) {
		t.Fatalf("%d revoked: nodes %v", a, got)
	}
	for p, n := range k.where() {
		if n != b {
			t.Errorf("%d revoked: %s in game on %d, want handed off to %d", a, p, n, b)
		}
	}
	if err := os.WriteFile(k.revoked, []byte(fmt.Sprintf("node %d\nnode %d\n", a, b)), 0o600); err != nil {
		t.Fatal(err)
	}
	k.c.add(time.Second)
	poll(s)
	if st := s.Stats(); len(nodeIDs(t, s)) != 0 || st.Rebuilt || st.EnrolledRemoved != 2 {
		t.Fatalf("the last target revoked: nodes %v, stats %+v; want no placement", nodeIDs(t, s), st)
	}
	if _, ok := s.NodeOf("eu0"); ok {
		t.Error("eu0 still placed without targets")
	}
	if code, body := rawJoin(s, "eu9", `[{"node": 201, "rtt_ms": 5}]`); code != http.StatusServiceUnavailable || !strings.Contains(body, noTarget) {
		t.Errorf("join after the last target left: %d %q, want 503 naming %q", code, body, noTarget)
	}
	k.c.add(time.Second)
	poll(s)
	if code, body := get(s, "/readyz"); code != http.StatusOK || !strings.Contains(body, noTarget) {
		t.Errorf("/readyz after the last target left: %d %q", code, body)
	}
	// The next one builds the placement anew.
	c := k.enroll(s, "gs-c", k.w.addNode(202))
	k.c.add(time.Second)
	poll(s)
	if st := s.Stats(); !slices.Equal(nodeIDs(t, s), []uint32{c}) || !st.Rebuilt {
		t.Fatalf("a new target: nodes %v, stats %+v", nodeIDs(t, s), st)
	}
	if adm := k.join(s, "eu9", map[uint32]float64{c: 5}); adm.Node != c {
		t.Fatalf("eu9 admitted to %d, want %d", adm.Node, c)
	}
}

// TestOneNodeOfItsOwn: a plane with a single [[nodes]] and a region that
// enrolls targets starts, admits players there, and adds an enrolled
// node as its second.
func TestOneNodeOfItsOwn(t *testing.T) {
	k := newEnrolledCluster(t)
	k.nodes = k.nodes[:1]
	s := k.plane()
	poll(s)
	if adm := k.join(s, "us0", map[uint32]float64{1: 5}); adm.Node != 1 {
		t.Fatalf("us0 admitted to %d, want 1", adm.Node)
	}
	a := k.enroll(s, "gs-a", k.w.addNode(200))
	k.c.add(time.Second)
	poll(s)
	if got := nodeIDs(t, s); !slices.Equal(got, []uint32{1, a}) {
		t.Fatalf("nodes %v, want 1 and %d", got, a)
	}
	if adm := k.join(s, "eu0", map[uint32]float64{1: 80, a: 5}); adm.Node != a {
		t.Fatalf("eu0 admitted to %d, want %d", adm.Node, a)
	}
	if n, _ := s.NodeOf("us0"); n != 1 {
		t.Errorf("us0 moved to %d", n)
	}
}

// TestTooFewNodes: fewer than 2 [[nodes]] without a region that enrolls
// placement targets, or instances without nodes, are refused, saying why.
func TestTooFewNodes(t *testing.T) {
	k := newEnrolledCluster(t)
	noSite := &Hosts{CA: k.ca, Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202}}}
	for _, c := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no nodes", Config{}, "want at least 2"},
		{"one node", Config{Nodes: k.nodes[:1]}, "want at least 2"},
		{"no nodes, a region without a site", Config{Hosts: noSite}, "site"},
		{"one node, a region without a site", Config{Nodes: k.nodes[:1], Hosts: noSite}, "fail over"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.name, err, c.want)
		}
	}
	cfg := Config{Hosts: &Hosts{CA: k.ca, StateFile: t.TempDir() + "/s.json",
		Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202, Site: "London"}}}}
	if _, err := New(cfg); err != nil {
		t.Errorf("no nodes, a region with a site: %v", err)
	}
}

// TestNoNodesInstances: a plane without nodes of its own serves the
// instance API on its enrolled game servers: 503 until one is a target,
// then instances open there; when the last target leaves, the instance
// plane goes with the placement, and comes back, rebuilt from the
// records the server keeps, when it answers again.
func TestNoNodesInstances(t *testing.T) {
	k := newEnrolledCluster(t)
	k.nodes = nil
	k.inst = &InstanceSetup{Seats: 4}
	s := k.plane()
	poll(s)
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	open := func(id string) (int, InstancePlacement) { return openInstance(t, h.URL, id, [4]float64{0, 0, 1, 1}, 1) }
	if code, _ := open("early"); code != http.StatusServiceUnavailable {
		t.Errorf("an instance without targets: %d, want 503", code)
	}
	a := k.enroll(s, "gs-a", k.w.addNode(200))
	k.c.add(time.Second)
	poll(s)
	if code, p := open("i0"); code != http.StatusOK || p.Node != a {
		t.Fatalf("an instance with node %d a target: %d %+v", a, code, p)
	}
	s.Wait()
	// Gone for ForgetAfter: the placement is dropped with its instances.
	k.w.mu.Lock()
	k.w.down[200] = true
	k.w.mu.Unlock()
	for range 70 {
		k.c.add(time.Second)
		poll(s)
	}
	if st := s.Stats(); st.Rebuilt || len(s.Instances().Instances) != 0 {
		t.Fatalf("the last target gone: stats %+v, instances %+v", st, s.Instances())
	}
	if code, _ := open("late"); code != http.StatusServiceUnavailable {
		t.Errorf("an instance after the last target left: %d, want 503", code)
	}
	// It enrolls again and answers: the instance is rebuilt from its record.
	k.w.mu.Lock()
	k.w.down[200] = false
	k.w.mu.Unlock()
	k.enroll(s, "gs-a", k.w.srv[200].URL)
	k.c.add(time.Second)
	poll(s)
	if st := s.Instances(); len(st.Instances) != 1 || st.Instances[0].ID != "i0" || st.Instances[0].Node != a {
		t.Fatalf("after it returned: %+v, want i0 on node %d", st.Instances, a)
	}
}
