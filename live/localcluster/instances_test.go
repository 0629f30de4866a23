package localcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestClusterPlaneInstances: the live plane's instance API carries an
// overflow out on real node processes. The plane (in this process) has
// two servers of 2 instance seats: node 1 (a process) and a stand-in
// that answers its polls. Instance i (the box of every object in the
// world; its two players run player hosts on nodes 2 and 3) opens on node
// 1; j and k fill the seats, and Algorithm 1 sheds i to its players'
// hosts: node 2 hosts, node 3 keeps the replica. The plane pins the box's
// backups to node 3 and migrates node 1's objects to node 3, then to node
// 2, each then backed up on node 3. kill -9 of node 2: node 3 promotes
// them, and the host's leave makes node 3 the host in the plane. Node 3's
// own objects are moved to node 1 first, so that only the instance's
// objects pass through it. Before the kill, the plane is replaced by a
// new one that rebuilds the instances from the records the servers keep
// and carries on. Takes about 5 s.
func TestClusterPlaneInstances(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes for about 5 s")
	}
	c := startFailoverCluster(t)
	defer stopAndLog(t, c)
	ids := c.IDs()
	post := func(i int, path string) { adminPost(t, c, i, path) }
	post(2, fmt.Sprintf("/admin/migrate-region?%s&node=%d", wholeWorld, ids[0]))
	waitUntil(t, c, 10*time.Second, "node 3's objects on node 1", func(snaps []*live.WorldSnapshot) string {
		for id, p := range where(snaps) {
			if slices.Contains(p.primaries, ids[2]) {
				return fmt.Sprintf("object %v on node 3", world.ObjectID(id))
			}
		}
		return ""
	})
	// The stand-in server: it runs nothing, answers the plane's polls and
	// keeps the instance records the plane gives it.
	const other = 4000
	var standMu sync.Mutex
	var standHeld []live.InstanceRecord
	stand := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		standMu.Lock()
		defer standMu.Unlock()
		switch r.URL.Path {
		case "/admin/players":
			json.NewEncoder(w).Encode(live.PlayersReport{Node: other, Players: []live.PlayerReport{}, Instances: standHeld})
		case "/admin/instances":
			b, _ := io.ReadAll(r.Body)
			rs, err := live.ParseInstanceRecords(b)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			standHeld = rs
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer stand.Close()
	// The planes' decisions and failed node requests, shown if it fails.
	var planeLog syncBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("plane log:\n%s", planeLog.String())
		}
	})
	cfg := plane.Config{Seed: 1, Log: slog.New(slog.NewTextHandler(&planeLog, nil)), Instances: &plane.InstanceSetup{Seats: 2}, Nodes: []plane.Node{
		{ID: uint32(ids[0]), Site: "New York", Capacity: 10, Admin: "http://" + c.AdminAddr(0), QUIC: "127.0.0.1:1"},
		{ID: other, Site: "Frankfurt", Capacity: 10, Admin: stand.URL, QUIC: "127.0.0.1:2"},
	}}
	s, err := plane.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s.PollOnce(context.Background())
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	open := func(r plane.InstanceRequest) plane.InstancePlacement {
		t.Helper()
		b, _ := json.Marshal(r)
		resp, err := http.Post(hs.URL+"/v1/instances", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p plane.InstancePlacement
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("open %s: %s %s", r.ID, resp.Status, b)
		}
		if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	snaps, err := c.Worlds()
	if err != nil {
		t.Fatal(err)
	}
	var inst []uint64 // node 1's lasting objects: the instance
	for id, p := range where(snaps) {
		if slices.Contains(p.primaries, ids[0]) {
			inst = append(inst, id)
		}
	}
	if len(inst) == 0 {
		t.Fatal("node 1 holds no lasting object")
	}
	all := [4]float64{-1e9, -1e9, 1e9, 1e9}
	if p := open(plane.InstanceRequest{ID: "i", Box: all, Players: []plane.InstancePlayerRequest{
		{ID: "p2", Host: uint32(ids[1]), Admin: "http://" + c.AdminAddr(1)},
		{ID: "p3", Host: uint32(ids[2]), Admin: "http://" + c.AdminAddr(2)},
	}}); p.Node != uint32(ids[0]) || p.Hosted {
		t.Fatalf("i: %+v, want on node 1", p)
	}
	if p := open(plane.InstanceRequest{ID: "j", Box: [4]float64{2e9, 0, 2e9 + 1, 1}, Players: []plane.InstancePlayerRequest{{ID: "j0"}, {ID: "j1"}}}); p.Node != other {
		t.Fatalf("j: %+v, want on the stand-in", p)
	}
	start := time.Now()
	if p := open(plane.InstanceRequest{ID: "k", Box: [4]float64{3e9, 0, 3e9 + 1, 1}, Players: []plane.InstancePlayerRequest{{ID: "k0"}}}); p.Node != uint32(ids[0]) {
		t.Fatalf("k: %+v, want on node 1", p)
	}
	if st := s.Instances(); st.Instances[0].Node != uint32(ids[1]) || st.Instances[0].Replica != uint32(ids[2]) {
		t.Fatalf("i was not overflowed to node 2 with its replica on node 3: %+v", st)
	}
	waitUntil(t, c, 30*time.Second, "node 1's objects on node 2, backed up on node 3", func(snaps []*live.WorldSnapshot) string {
		now := where(snaps)
		for _, id := range inst {
			if p := now[id]; p == nil || !slices.Equal(p.primaries, []wire.NodeID{ids[1]}) || p.backup != ids[2] {
				return fmt.Sprintf("object %v: %+v", world.ObjectID(id), p)
			}
		}
		return ""
	})
	t.Logf("overflow carried out (%d objects on the host, backed up on the replicated host) %v after the open",
		len(inst), time.Since(start).Round(10*time.Millisecond))
	s.Wait()
	// The plane stops and another starts: it rebuilds the instances from
	// the records node 1 (a process: k, and i, which a player host runs)
	// and the stand-in (j) keep, and carries on in its place.
	was := s.Instances()
	hs.Close()
	if s, err = plane.New(cfg); err != nil {
		t.Fatal(err)
	}
	s.PollOnce(context.Background())
	s.Wait()
	hs = httptest.NewServer(s.Handler())
	defer hs.Close()
	if now := s.Instances(); !s.Stats().Rebuilt || !slices.Equal(now.Instances, was.Instances) {
		t.Fatalf("the restarted plane's instances\n%+v\nwant\n%+v", now.Instances, was.Instances)
	}
	if was.Failed != 0 {
		t.Errorf("%d node requests of the first plane failed", was.Failed)
	}
	killAt := time.Since(c.Epoch())
	if err := c.Signal(1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-c.Done(1)
	waitUntil(t, c, 10*time.Second, "the instance's objects are primaries on node 3", func(snaps []*live.WorldSnapshot) string {
		now := where(snaps)
		for _, id := range inst {
			if p := now[id]; p == nil || !slices.Equal(p.primaries, []wire.NodeID{ids[2]}) {
				return fmt.Sprintf("object %v: %+v", world.ObjectID(id), p)
			}
		}
		return ""
	})
	a, err := c.Authority(2)
	if err != nil {
		t.Fatal(err)
	}
	var lat []time.Duration
	for _, e := range a.Events {
		if e.Kind == "promoted" && wire.NodeID(e.Node) == ids[1] && slices.Contains(inst, e.ID) {
			lat = append(lat, time.Duration(e.AtNs)-killAt)
		}
	}
	if len(lat) != len(inst) {
		t.Fatalf("node 3 logged %d promotions of the instance's %d objects", len(lat), len(inst))
	}
	slices.Sort(lat)
	for _, l := range lat {
		if l < 0 || l > 1500*time.Millisecond {
			t.Errorf("a promotion %v after the kill: want within 1.5 s", l)
		}
	}
	b, _ := json.Marshal(map[string]string{"id": "i", "player": "p2"})
	resp, err := http.Post(hs.URL+"/v1/instances/leave", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var p plane.InstancePlacement
	json.NewDecoder(resp.Body).Decode(&p)
	resp.Body.Close()
	s.Wait()
	if p.Node != uint32(ids[2]) || p.Replica != 0 || p.Players != 1 {
		t.Fatalf("after the host's leave: %+v, want node 3 hosting with no replica", p)
	}
	t.Logf("kill -9 of the player host: %d objects promoted on the replicated host, p50 %v, max %v; plane requests failed: %d",
		len(lat), lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond), s.Instances().Failed)
}

// syncBuffer is a buffer safe for concurrent writes (a log's).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
