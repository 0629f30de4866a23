package plane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
)

// instanceCluster is three servers of 6 instance seats and two player
// hosts, fake (adminLog), that planes come and go over.
type instanceCluster struct {
	t     *testing.T
	l     *adminLog
	nodes []Node
	hosts map[uint32]string // player host → admin endpoint
	c     *clock
}

func newInstanceCluster(t *testing.T) *instanceCluster {
	k := &instanceCluster{t: t, l: &adminLog{down: map[uint32]bool{}}, hosts: map[uint32]string{}, c: &clock{t: time.Unix(1e9, 0)}}
	for i := range 3 {
		id := uint32(i + 1)
		s := k.l.node(t, id)
		k.nodes = append(k.nodes, Node{ID: id, Site: sites[i], Capacity: 10, Admin: s.URL, QUIC: fmt.Sprintf("127.0.0.1:%d", 9000+id)})
	}
	for _, id := range []uint32{101, 102, 104} {
		k.hosts[id] = k.l.node(t, id).URL
	}
	return k
}

// plane starts a plane over the cluster and runs its first round of
// polls (the rebuild).
func (k *instanceCluster) plane() (*Server, string) {
	s, err := New(Config{Nodes: k.nodes, Clock: k.c.now, Seed: 1, Instances: &InstanceSetup{Seats: 6}})
	if err != nil {
		k.t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	k.t.Cleanup(hs.Close)
	poll(s)
	return s, hs.URL
}

// post makes an API request and returns the status, the answer and the
// node requests it caused (instance records aside).
func (k *instanceCluster) post(s *Server, base, path string, body any) string {
	k.t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(base+path, "application/json", bytes.NewReader(b))
	if err != nil {
		k.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	s.Wait()
	return fmt.Sprintf("%d %s | %s", resp.StatusCode, strings.TrimSpace(out.String()), strings.Join(k.l.take(), "; "))
}

// placements is GET /v1/instances's placements.
func placements(s *Server) string {
	b, _ := json.Marshal(s.Instances().Instances)
	return string(b)
}

// TestPlaneInstancesRebuild stops a plane that placed instances on
// servers and on player hosts (one player gone), starts another over the
// same nodes, and checks that the new one rebuilds the same placements
// from the records the nodes keep and decides the next events (the host's
// departure, a new instance that overflows, a server's death, a player
// host gone silent) as the one that never went down, making the same
// node requests. A server cut off
// while its instance moved reports a stale record: the next plane takes
// the newer one and corrects the server. Reports that contradict each
// other are refused and the rebuild waits.
func TestPlaneInstancesRebuild(t *testing.T) {
	k := newInstanceCluster(t)
	a, aURL := k.plane()
	players := func(prefix string, n int) []InstancePlayerRequest {
		var ps []InstancePlayerRequest
		for i := range n {
			ps = append(ps, InstancePlayerRequest{ID: fmt.Sprintf("%s%d", prefix, i), UptimeMinH: float64(i), UptimeMaxH: float64(i + 1)})
		}
		return ps
	}
	box := func(k int) [4]float64 { x := float64(1000 + 100*k); return [4]float64{x, 0, x + 50, 50} }
	for i, id := range []string{"a", "b", "c"} {
		k.post(a, aURL, "/v1/instances", InstanceRequest{ID: id, Box: box(i), Players: players(id, 4-i)})
	}
	d := players("d", 5)
	d[0].Host, d[0].Admin = 101, k.hosts[101]
	d[1].Host, d[1].Admin = 102, k.hosts[102]
	d[2].Host = 103
	rtt := make([]float64, 25)
	for i := range 5 {
		for j := range 5 {
			if i != j {
				rtt[i*5+j] = float64(10 * (i + j))
			}
		}
	}
	rtt[1], rtt[5] = 1, 1
	if got := k.post(a, aURL, "/v1/instances", InstanceRequest{ID: "d", Box: box(3), Players: d, RTTMs: rtt}); !strings.HasPrefix(got, `200 {"id":"d","node":101,"hosted":true`) {
		t.Fatalf("open d: %s", got)
	}
	k.post(a, aURL, "/v1/instances/leave", instanceEvent{ID: "a", Player: "a3"})
	k.post(a, aURL, "/v1/instances/leave", instanceEvent{ID: "d", Player: "d4"})
	k.post(a, aURL, "/v1/instances/close", instanceEvent{ID: "c"})
	want := placements(a)

	// A new plane over the same nodes (the first one stopped).
	b, bURL := k.plane()
	if !b.Stats().Rebuilt {
		t.Fatal("the new plane did not rebuild")
	}
	if got := placements(b); got != want {
		t.Fatalf("rebuilt placements\n%s\nwant\n%s", got, want)
	}
	if calls := k.l.take(); len(calls) != 0 {
		t.Fatalf("the rebuild made node requests: %v", calls)
	}
	// The next events, on both: the same answers and node requests.
	same := func(what string, do func(s *Server, base string) string) {
		t.Helper()
		ga, gb := do(a, aURL), do(b, bURL)
		t.Logf("%s: %s", what, ga)
		if ga != gb {
			t.Fatalf("%s: the plane that never went down\n%s\nthe rebuilt one\n%s", what, ga, gb)
		}
		if pa, pb := placements(a), placements(b); pa != pb {
			t.Fatalf("%s: placements\n%s\nand\n%s", what, pa, pb)
		}
	}
	same("the host leaves", func(s *Server, base string) string {
		return k.post(s, base, "/v1/instances/leave", instanceEvent{ID: "d", Player: "d0"})
	})
	same("an instance overflows", func(s *Server, base string) string {
		e := players("e", 7)
		e[0].Host, e[0].Admin = 104, k.hosts[104]
		e[1].Host = 105
		return k.post(s, base, "/v1/instances", InstanceRequest{ID: "e", Box: box(4), Players: e})
	})
	// Server 1 is cut off: a fails over to another server.
	k.l.mu.Lock()
	k.l.down[1] = true
	k.l.mu.Unlock()
	k.c.add(4 * time.Second)
	same("server 1 dies", func(s *Server, _ string) string {
		poll(s)
		return strings.Join(k.l.take(), "; ")
	})
	if pa := placements(a); !strings.Contains(pa, `{"id":"a","node":2`) && !strings.Contains(pa, `{"id":"a","node":3`) {
		t.Fatalf("a did not move off server 1: %s", pa)
	}
	// e's host goes silent: the polls find it gone, and its replica
	// takes over.
	k.l.mu.Lock()
	k.l.down[104] = true
	k.l.mu.Unlock()
	k.c.add(4 * time.Second)
	same("e's host goes silent", func(s *Server, _ string) string {
		poll(s)
		return strings.Join(k.l.take(), "; ")
	})
	if pa := placements(a); !strings.Contains(pa, `{"id":"e","node":105,"hosted":true,"player":"e1"`) || a.Instances().HostsGone != 1 || b.Instances().HostsGone != 1 {
		t.Fatalf("after e's host went silent: %s; hosts gone %d and %d", pa, a.Instances().HostsGone, b.Instances().HostsGone)
	}
	// Server 1 answers again, still keeping a's record: a third plane
	// takes the record of a's new server (the higher stamp), and gives
	// server 1 its list again (without a; as the lowest-numbered server
	// up, it keeps the records of the instances player hosts run).
	k.l.mu.Lock()
	k.l.down[1] = false
	stale := slices.ContainsFunc(k.l.held[1], func(r live.InstanceRecord) bool { return r.ID == "a" })
	k.l.mu.Unlock()
	if !stale {
		t.Fatal("server 1 does not keep a's record: the test does not test the stale record")
	}
	want = placements(a)
	c, _ := k.plane()
	if got := placements(c); got != want {
		t.Fatalf("rebuilt with a stale record: placements\n%s\nwant\n%s", got, want)
	}
	k.l.mu.Lock()
	var ids []string
	for _, r := range k.l.held[1] {
		ids = append(ids, fmt.Sprint(r.ID, "@", r.Node))
	}
	if !slices.Equal(ids, []string{"d@102", "e@105"}) {
		t.Errorf("server 1 keeps %v, want d@102 e@105", ids)
	}
	k.l.mu.Unlock()
	for _, s := range []*Server{a, b, c} {
		if f := s.Instances().Failed; f != 0 {
			t.Errorf("%d node requests failed", f)
		}
	}

	// Reports that contradict each other: server 2 reports server 3's
	// instance; a record the node should never have kept. The rebuild
	// waits (and changes nothing) until they agree.
	k.l.mu.Lock()
	saved := slices.Clone(k.l.held[2])
	k.l.held[2] = append(k.l.held[2], live.InstanceRecord{ID: "z", Node: 3, Box: box(9), Players: []live.InstanceRecordPlayer{{ID: "z0"}}})
	k.l.mu.Unlock()
	z, _ := k.plane()
	if z.Stats().Rebuilt || len(z.Instances().Instances) != 0 {
		t.Fatalf("a contradicting report: rebuilt %v, instances %+v", z.Stats().Rebuilt, z.Instances())
	}
	k.l.mu.Lock()
	k.l.held[2] = saved
	k.l.mu.Unlock()
	poll(z)
	if !z.Stats().Rebuilt || placements(z) != want {
		t.Fatalf("once the reports agree: rebuilt %v, placements %s, want %s", z.Stats().Rebuilt, placements(z), want)
	}
}
