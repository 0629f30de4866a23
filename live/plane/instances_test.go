package plane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/world"
)

// adminLog is fake nodes' admin endpoints that record the plane's
// instance requests: servers (which also answer polls) and player hosts.
type adminLog struct {
	mu    sync.Mutex
	calls []string // "node N: path query", in arrival order
	down  map[uint32]bool
	// held are the instance records each node keeps (POST
	// /admin/instances), reported with its players.
	held map[uint32][]live.InstanceRecord
	// auth is the Authorization headers each node was sent.
	auth map[uint32]map[string]bool
}

func (l *adminLog) node(t *testing.T, id uint32) *httptest.Server {
	mux := http.NewServeMux()
	// Servers and player hosts answer polls (the plane polls the hosts of
	// overflowed instances).
	mux.HandleFunc("GET /admin/players", func(rw http.ResponseWriter, _ *http.Request) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.down[id] {
			http.Error(rw, "down", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(rw).Encode(live.PlayersReport{Node: id, Players: []live.PlayerReport{}, Instances: l.held[id]})
	})
	mux.HandleFunc("POST /admin/instances", func(rw http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rs, err := live.ParseInstanceRecords(b)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.held == nil {
			l.held = map[uint32][]live.InstanceRecord{}
		}
		l.held[id] = rs
		rw.WriteHeader(http.StatusNoContent)
	})
	for _, p := range []string{"/admin/migrate-region", "/admin/prefer-backup"} {
		mux.HandleFunc("POST "+p, func(rw http.ResponseWriter, r *http.Request) {
			l.mu.Lock()
			defer l.mu.Unlock()
			q := r.URL.Query()
			l.calls = append(l.calls, fmt.Sprintf("node %d: %s [%s,%s,%s,%s] node=%s nodes=%s", id, strings.TrimPrefix(p, "/admin/"),
				q.Get("x0"), q.Get("y0"), q.Get("x1"), q.Get("y1"), q.Get("node"), q.Get("nodes")))
			if p == "/admin/migrate-region" {
				fmt.Fprintln(rw, `{"moved": 1}`)
				return
			}
			rw.WriteHeader(http.StatusNoContent)
		})
	}
	s := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		if l.auth == nil {
			l.auth = map[uint32]map[string]bool{}
		}
		if l.auth[id] == nil {
			l.auth[id] = map[string]bool{}
		}
		l.auth[id][r.Header.Get("Authorization")] = true
		l.mu.Unlock()
		mux.ServeHTTP(rw, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (l *adminLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.calls
	l.calls = nil
	return out
}

// TestPlaneInstances opens instances through the plane's API on three
// servers of 6 instance seats, overflows one to its players' hosts, and
// checks the admin requests the plane makes to carry its decisions out:
// the backups pinned on the host and the replicated host, the pins again
// after the successor leaves and after the host leaves, and a dead server's instance moved by every
// live server. Bad requests are refused with no change.
func TestPlaneInstances(t *testing.T) {
	l := &adminLog{down: map[uint32]bool{}}
	var nodes []Node
	for i := range 3 {
		id := uint32(i + 1)
		s := l.node(t, id)
		nodes = append(nodes, Node{ID: id, Site: sites[i], Capacity: 10, Admin: s.URL, QUIC: fmt.Sprintf("127.0.0.1:%d", 9000+id)})
	}
	h101, h102 := l.node(t, 101), l.node(t, 102)
	c := &clock{t: time.Unix(1e9, 0)}
	s, err := New(Config{Nodes: nodes, Clock: c.now, Seed: 1, Instances: &InstanceSetup{Seats: 6}, AdminToken: "shared-secret-of-the-servers"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	// The servers are sent the shared secret; a player host only its own.
	t.Cleanup(func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		for id, seen := range l.auth {
			want := "Bearer shared-secret-of-the-servers"
			if id > 100 {
				want = "Bearer " + HostAdminToken("shared-secret-of-the-servers", id)
			}
			if len(seen) != 1 || !seen[want] {
				t.Errorf("node %d was sent the secrets %v, want only %q", id, slices.Collect(maps.Keys(seen)), want)
			}
		}
		if len(l.auth[101]) == 0 || len(l.auth[102]) == 0 {
			t.Errorf("the player hosts were never called: %v", l.auth)
		}
	})
	poll(s) // the rebuild
	post := func(path string, body any) (int, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		resp, err := http.Post(hs.URL+path, "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		s.Wait()
		return resp.StatusCode, strings.TrimSpace(out.String())
	}
	players := func(prefix string, n int) []InstancePlayerRequest {
		var ps []InstancePlayerRequest
		for i := range n {
			ps = append(ps, InstancePlayerRequest{ID: fmt.Sprintf("%s%d", prefix, i)})
		}
		return ps
	}
	open := func(id string, k int, ps []InstancePlayerRequest, rtt []float64) (int, string) {
		x0 := float64(1000 + 100*k)
		return post("/v1/instances", InstanceRequest{ID: id, Box: [4]float64{x0, 0, x0 + 50, 50}, Players: ps, RTTMs: rtt})
	}
	for _, tc := range []struct {
		id   string
		k, n int
		want string
	}{
		{"a", 0, 4, `{"id":"a","node":1,"hosted":false,"players":4}`},
		{"b", 1, 4, `{"id":"b","node":2,"hosted":false,"players":4}`},
		{"c", 2, 2, `{"id":"c","node":3,"hosted":false,"players":2}`},
	} {
		if code, got := open(tc.id, tc.k, players(tc.id, tc.n), nil); code != 200 || got != tc.want {
			t.Fatalf("open %s: %d %s, want %s", tc.id, code, got, tc.want)
		}
	}
	if got := l.take(); len(got) != 0 {
		t.Fatalf("instances placed on servers made node requests: %v", got)
	}
	// d does not fit: it overflows to d1's machine (the least total RTT),
	// its replica on d0's, their successor none (d2 runs a host the plane
	// cannot reach but can still name).
	d := players("d", 5)
	d[0].Host, d[0].Admin = 101, h101.URL
	d[1].Host, d[1].Admin = 102, h102.URL
	d[2].Host, d[3].Host = 103, 104
	rtt := make([]float64, 25)
	for i := range 5 {
		for j := range 5 {
			if i != j {
				rtt[i*5+j] = float64(10 * (i + j))
			}
		}
	}
	rtt[0*5+1], rtt[1*5+0] = 1, 1
	code, got := open("d", 3, d, rtt)
	if code != 200 || got != `{"id":"d","node":101,"hosted":true,"player":"d0","replica":102,"replica_player":"d1","players":5}` {
		t.Fatalf("open d: %d %s", code, got)
	}
	calls := l.take()
	slices.Sort(calls)
	want := []string{
		"node 101: prefer-backup [1300,0,1350,50] node= nodes=102,103",
		"node 102: prefer-backup [1300,0,1350,50] node= nodes=102,103",
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("overflow: node requests\n%v\nwant\n%v", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	// d2, the successor, leaves: the plane decides nothing, but the
	// pins drop it (d3's machine is the successor now), or a promoted
	// replica would back the state up on a node long gone.
	code, got = post("/v1/instances/leave", instanceEvent{ID: "d", Player: "d2"})
	if code != 200 || got != `{"id":"d","node":101,"hosted":true,"player":"d0","replica":102,"replica_player":"d1","players":4}` {
		t.Fatalf("successor leaves: %d %s", code, got)
	}
	calls = l.take()
	slices.Sort(calls)
	want = []string{
		"node 101: prefer-backup [1300,0,1350,50] node= nodes=102,104",
		"node 102: prefer-backup [1300,0,1350,50] node= nodes=102,104",
	}
	if !slices.Equal(calls, want) {
		t.Fatalf("successor leaves: node requests\n%v\nwant\n%v", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	// The host leaves: its replica takes over, d3's machine is the new
	// replica (the plane cannot reach it: only the new host is pinned).
	code, got = post("/v1/instances/leave", instanceEvent{ID: "d", Player: "d0"})
	if code != 200 || got != `{"id":"d","node":102,"hosted":true,"player":"d1","replica":104,"replica_player":"d3","players":3}` {
		t.Fatalf("host leaves: %d %s", code, got)
	}
	if calls := l.take(); !slices.Equal(calls, []string{"node 102: prefer-backup [1300,0,1350,50] node= nodes=104"}) {
		t.Fatalf("promotion: node requests %v", calls)
	}
	// Server 1 dies: a moves to server 3; its objects failed over
	// somewhere, so every live server but 3 moves what it holds of a's box.
	l.mu.Lock()
	l.down[1] = true
	l.mu.Unlock()
	for range 4 {
		c.add(time.Second)
		poll(s)
	}
	if calls := l.take(); !slices.Equal(calls, []string{"node 2: migrate-region [1000,0,1050,50] node=3 nodes="}) {
		t.Fatalf("server down: node requests %v", calls)
	}
	if w := s.Instances().Instances[0]; w.ID != "a" || w.Node != 3 {
		t.Fatalf("after server 1 died: %+v", s.Instances())
	}
	// Bad requests change nothing.
	before := s.Instances()
	for _, b := range []struct {
		path string
		body any
		code int
	}{
		{"/v1/instances", "not an object", 400},
		{"/v1/instances", InstanceRequest{ID: "e", Box: [4]float64{0, 0, 1, 1}}, 400},
		{"/v1/instances", InstanceRequest{ID: "a", Box: [4]float64{0, 0, 1, 1}, Players: players("z", 1)}, 400},
		{"/v1/instances", InstanceRequest{ID: "e", Box: [4]float64{0, 0, 1, 1}, Players: []InstancePlayerRequest{{ID: "z", Admin: "ftp://x"}}}, 400},
		{"/v1/instances", InstanceRequest{ID: "e", Box: [4]float64{0, 0, 1, 1}, Players: players("big", 7)}, 503},
		{"/v1/instances/leave", instanceEvent{ID: "nope", Player: "x"}, 404},
		{"/v1/instances/leave", instanceEvent{ID: "a", Player: "nobody"}, 404},
		{"/v1/instances/close", instanceEvent{ID: "nope"}, 404},
	} {
		if code, got := post(b.path, b.body); code != b.code {
			t.Errorf("%s %v: %d %s, want %d", b.path, b.body, code, got, b.code)
		}
	}
	if after := s.Instances(); !slices.Equal(after.Instances, before.Instances) || after.Stats != before.Stats {
		t.Fatalf("a refused request changed the instances: %+v, was %+v", after, before)
	}
	if code, _ := post("/v1/instances/close", instanceEvent{ID: "b"}); code != http.StatusNoContent {
		t.Fatalf("close b: %d", code)
	}
	resp, err := http.Get(hs.URL + "/v1/instances")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st InstancesState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range st.Instances {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, []string{"a", "c", "d"}) || st.Stats.Overflowed != 1 || st.Stats.Promoted != 1 || st.Stats.Moved != 1 || st.Failed != 0 {
		t.Fatalf("GET /v1/instances: %+v", st)
	}
}

// TestPlaneInstanceOverflowFromServer: Algorithm 1 sheds a running
// instance from a full server to its players' hosts; the plane pins its
// backups on the server, the replicated host and the host, then migrates
// its box from the server through the replicated host to the host, in
// that order.
func TestPlaneInstanceOverflowFromServer(t *testing.T) {
	l := &adminLog{down: map[uint32]bool{}}
	var nodes []Node
	for i := range 2 {
		id := uint32(i + 1)
		s := l.node(t, id)
		nodes = append(nodes, Node{ID: id, Site: sites[i], Capacity: 10, Admin: s.URL, QUIC: fmt.Sprintf("127.0.0.1:%d", 9000+id)})
	}
	h101, h102 := l.node(t, 101), l.node(t, 102)
	c := &clock{t: time.Unix(1e9, 0)}
	s, err := New(Config{Nodes: nodes, Clock: c.now, Seed: 1, Instances: &InstanceSetup{Seats: 6}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	poll(s)
	open := func(r InstanceRequest) string {
		t.Helper()
		b, _ := json.Marshal(r)
		resp, err := http.Post(hs.URL+"/v1/instances", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out bytes.Buffer
		out.ReadFrom(resp.Body)
		s.Wait()
		return strings.TrimSpace(out.String())
	}
	h := InstanceRequest{ID: "h", Box: [4]float64{0, 0, 10, 10}, Players: []InstancePlayerRequest{
		{ID: "h0", Host: 101, Admin: h101.URL}, {ID: "h1", Host: 102, Admin: h102.URL}, {ID: "h2"}, {ID: "h3"}}}
	if got := open(h); got != `{"id":"h","node":1,"hosted":false,"players":4}` {
		t.Fatalf("open h: %s", got)
	}
	if got := open(InstanceRequest{ID: "p", Box: [4]float64{100, 0, 110, 10}, Players: []InstancePlayerRequest{{ID: "p0"}, {ID: "p1"}, {ID: "p2"}, {ID: "p3"}}}); got != `{"id":"p","node":2,"hosted":false,"players":4}` {
		t.Fatalf("open p: %s", got)
	}
	if got := open(InstanceRequest{ID: "q", Box: [4]float64{200, 0, 210, 10}, Players: []InstancePlayerRequest{{ID: "q0"}, {ID: "q1"}, {ID: "q2"}, {ID: "q3"}}}); got != `{"id":"q","node":1,"hosted":false,"players":4}` {
		t.Fatalf("open q: %s", got)
	}
	want := []string{
		"node 1: prefer-backup [0,0,10,10] node= nodes=102",
		"node 102: prefer-backup [0,0,10,10] node= nodes=102",
		"node 101: prefer-backup [0,0,10,10] node= nodes=102",
		"node 1: migrate-region [0,0,10,10] node=102 nodes=",
		"node 102: migrate-region [0,0,10,10] node=101 nodes=",
	}
	if got := l.take(); !slices.Equal(got, want) {
		t.Fatalf("overflow from server 1: node requests\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := s.Instances(); len(w.Instances) != 3 || w.Instances[0].Node != 101 || w.Instances[0].Replica != 102 {
		t.Fatalf("instances: %+v", w)
	}
}

// TestPlaneInstancesFile checks the [instances] table.
func TestPlaneInstancesFile(t *testing.T) {
	_, nodes := newFakeWorld(t, 2)
	for _, tc := range []struct {
		in *FileInstances
		ok bool
	}{
		{&FileInstances{Seats: 10, Criterion: "PD"}, true},
		{&FileInstances{Seats: 10}, true},
		{&FileInstances{Seats: 0}, false},
		{&FileInstances{Seats: 10, Criterion: "best"}, false},
	} {
		cfg, err := File{Nodes: fileNodes(nodes), Instances: tc.in}.Config()
		if (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.in, err)
			continue
		}
		if err == nil && cfg.Instances.Seats != tc.in.Seats {
			t.Errorf("%+v: %+v", tc.in, cfg.Instances)
		}
	}
	if _, err := New(Config{Nodes: nodes, Instances: &InstanceSetup{}}); err == nil {
		t.Error("no seats: accepted")
	}
}

// scripted is a node's admin endpoint that answers migrate-region
// requests from a script, in turn (the last answer again once it runs
// out), and records the want list of each.
type scripted struct {
	mu      sync.Mutex
	answers []string
	wants   []string
	srv     *httptest.Server
}

func newScripted(t *testing.T, answers ...string) *scripted {
	f := &scripted{answers: answers}
	f.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.wants = append(f.wants, r.URL.Query().Get("want"))
		fmt.Fprintln(rw, f.answers[min(len(f.wants), len(f.answers))-1])
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *scripted) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.wants)
}

// TestChainedMigrationWaitsForIDs: a migration is asked again until
// what it moved has left the node: one still there on its way (pending)
// is waited for, and one whose migration was aborted (the old backup's
// release did not come) is migrated anew. The second migration of a
// chain names the objects the first moved and is asked again until
// each has moved on or is known to be deleted; objects spawned on the
// middle node meanwhile (answered too) do not stand in for one still on
// its way. One that never arrives ends the chain after chainWait, as a
// failure.
func TestChainedMigrationWaitsForIDs(t *testing.T) {
	// A client with time to spare: the last request names 10,000 IDs,
	// which a loaded machine under the race detector takes more than the
	// default second (a poll period) to send and answer.
	s, err := New(Config{Nodes: twoNodes, Instances: &InstanceSetup{Seats: 2}, Client: &http.Client{Timeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	q := boxValues(world.Box{Max: world.Point{1, 1, 1}})
	first := newScripted(t,
		`{"moved": 3, "ids": [7, 8, 9], "pending": [], "gone": []}`,
		`{"moved": 0, "ids": [], "pending": [8], "gone": []}`, // 8 waits for its old backup
		`{"moved": 1, "ids": [8], "pending": [], "gone": []}`, // its migration was aborted: made anew
		`{"moved": 0, "ids": [], "pending": [], "gone": []}`,
	)
	middle := newScripted(t,
		`{"moved": 2, "ids": [7, 99], "pending": [], "gone": []}`, // 99 spawned here; 8 and 9 on their way
		`{"moved": 0, "ids": [], "pending": [], "gone": [9]}`,     // 9 was deleted here on arrival
		`{"moved": 1, "ids": [8], "pending": [], "gone": []}`,
		`{"moved": 0, "ids": [], "pending": [], "gone": []}`,
	)
	s.runCalls([]nodeCall{
		{admin: first.srv.URL, path: "/admin/migrate-region", node: 1, q: q},
		{admin: middle.srv.URL, path: "/admin/migrate-region", node: 2, q: q, chained: true},
	}, nil)
	if got, want := first.asked(), []string{"", "7,8,9", "8", "8"}; !slices.Equal(got, want) {
		t.Errorf("the first node was asked for %q, want %q", got, want)
	}
	if got, want := middle.asked(), []string{"7,8,9", "7,8,9,99", "8", "8"}; !slices.Equal(got, want) {
		t.Errorf("the middle node was asked for %q, want %q", got, want)
	}
	if s.inst.failed != 0 {
		t.Errorf("%d failed requests, want 0", s.inst.failed)
	}

	s.chainWait = 300 * time.Millisecond
	first = newScripted(t, `{"moved": 1, "ids": [7], "pending": [], "gone": []}`, `{"moved": 0, "ids": [], "pending": [], "gone": []}`)
	middle = newScripted(t, `{"moved": 0, "ids": [], "pending": [], "gone": []}`)
	start := time.Now()
	s.runCalls([]nodeCall{
		{admin: first.srv.URL, path: "/admin/migrate-region", node: 1, q: q},
		{admin: middle.srv.URL, path: "/admin/migrate-region", node: 2, q: q, chained: true},
	}, nil)
	if s.inst.failed != 1 || time.Since(start) < s.chainWait {
		t.Errorf("%d failed requests after %v, want 1 after %v", s.inst.failed, time.Since(start), s.chainWait)
	}
	// Nor one that never leaves.
	first = newScripted(t, `{"moved": 0, "ids": [], "pending": [7], "gone": []}`)
	s.runCalls([]nodeCall{{admin: first.srv.URL, path: "/admin/migrate-region", node: 1, q: q}}, nil)
	if s.inst.failed != 2 {
		t.Errorf("%d failed requests, want 2", s.inst.failed)
	}
	// More than a node takes in one request: the first MaxWant are
	// followed.
	s.chainWait = 20 * time.Second
	many := make([]string, live.MaxWant+5)
	for i := range many {
		many[i] = fmt.Sprint(i + 1)
	}
	first = newScripted(t, fmt.Sprintf(`{"moved": %d, "ids": [%s], "pending": [], "gone": []}`, len(many), strings.Join(many, ",")),
		`{"moved": 0, "ids": [], "pending": [], "gone": []}`)
	s.runCalls([]nodeCall{{admin: first.srv.URL, path: "/admin/migrate-region", node: 1, q: q}}, nil)
	if got := first.asked(); len(got) != 2 || strings.Count(got[1], ",") != live.MaxWant-1 || s.inst.failed != 2 {
		t.Errorf("asked %d times, the second for %d objects; %d failed requests", len(got), strings.Count(got[len(got)-1], ",")+1, s.inst.failed)
	}
}
