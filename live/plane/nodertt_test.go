package plane

import (
	"encoding/json"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/live"
)

// TestMeasuredNodeRTT: the RTTs the nodes report to their peers replace
// the sites' table in the placement (the least of a pair's two reports)
// once one moves by more than 5 ms and 10%; a drift under that refits
// nothing; a malformed report is refused whole and changes nothing;
// node_rtt = "sites" keeps the table. GET /v1/nodes shows both.
func TestMeasuredNodeRTT(t *testing.T) {
	w, nodes := newFakeWorld(t, 3)
	c := &clock{t: time.Unix(1000, 0)}
	s, h := newPlane(t, nodes, c)
	table := s.plane.Config().NodeRTT
	rttOf := func(a, b int) float64 { return s.plane.Config().NodeRTT[a][b] }
	step := func() {
		c.add(time.Second)
		poll(s)
	}
	step() // the rebuild
	// New York and Frankfurt measure each other at 300 ms, not the
	// table's ~80; the two reports differ, the least counts.
	w.mu.Lock()
	w.peers[1] = []live.PeerRTT{{Node: 2, RTTMs: 310}}
	w.peers[2] = []live.PeerRTT{{Node: 1, RTTMs: 300}, {Node: 3, RTTMs: table[1][2]}}
	w.mu.Unlock()
	step()
	if st := s.Stats(); st.NodeRTTs != 1 || rttOf(0, 1) != 300 || rttOf(1, 0) != 300 || rttOf(1, 2) != table[1][2] || rttOf(0, 2) != table[0][2] {
		t.Fatalf("after the reports: %d matrices, RTTs %v (table %v)", st.NodeRTTs, s.plane.Config().NodeRTT, table)
	}
	// A drift of 2 ms refits nothing.
	w.mu.Lock()
	w.peers[2][0].RTTMs = 302
	w.peers[1][0].RTTMs = 302
	w.mu.Unlock()
	step()
	if st := s.Stats(); st.NodeRTTs != 1 || rttOf(0, 1) != 300 {
		t.Fatalf("after a 2 ms drift: %d matrices, RTT %v", st.NodeRTTs, rttOf(0, 1))
	}
	var infos []NodeInfo
	resp, err := http.Get(h.URL + "/v1/nodes")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&infos)
	resp.Body.Close()
	if len(infos) != 3 || infos[0].RTTMs[2] != 300 || infos[0].MeasuredMs[2] != 302 || infos[2].MeasuredMs != nil {
		t.Errorf("GET /v1/nodes: %+v", infos)
	}
	// Malformed reports: refused whole, nothing changes.
	for i, bad := range [][]live.PeerRTT{
		{{Node: 2, RTTMs: 40}, {Node: 0, RTTMs: 40}},
		{{Node: 2, RTTMs: 40}, {Node: 1, RTTMs: 40}}, // itself
		{{Node: 2, RTTMs: 40}, {Node: 2, RTTMs: 41}},
		{{Node: 2, RTTMs: 40}, {Node: 3, RTTMs: -1}},
		{{Node: 2, RTTMs: 40}, {Node: 3, RTTMs: 1e6}},
		{{Node: 2, RTTMs: 40}, {Node: live.MaxNodeID + 1, RTTMs: 1}},
	} {
		w.mu.Lock()
		w.peers[1] = bad
		w.mu.Unlock()
		step()
		if st := s.Stats(); st.BadPeerRTTs != i+1 || st.NodeRTTs != 1 || rttOf(0, 1) != 300 {
			t.Fatalf("bad report %d %+v: %d refused, %d matrices, RTT %v", i, bad, st.BadPeerRTTs, st.NodeRTTs, rttOf(0, 1))
		}
	}

	// node_rtt = "sites": the table stays.
	w2, nodes2 := newFakeWorld(t, 3)
	f := File{Listen: "127.0.0.1:0", Seed: 1, NodeRTT: "sites"}
	for _, n := range nodes2 {
		f.Nodes = append(f.Nodes, FileNode{ID: n.ID, Site: n.Site, Capacity: n.Capacity, Admin: n.Admin, PlayerQUIC: n.QUIC})
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clock = c.now
	s2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w2.mu.Lock()
	w2.peers[1] = []live.PeerRTT{{Node: 2, RTTMs: 310}}
	w2.mu.Unlock()
	for range 3 {
		c.add(time.Second)
		poll(s2)
	}
	if st := s2.Stats(); st.NodeRTTs != 0 || math.Abs(s2.plane.Config().NodeRTT[0][1]-table[0][1]) > 1e-9 {
		t.Errorf("node_rtt = sites: %d matrices, RTT %v", st.NodeRTTs, s2.plane.Config().NodeRTT[0][1])
	}
	if _, err := (File{Listen: "x:1", NodeRTT: "guess", Nodes: f.Nodes}).Config(); err == nil {
		t.Error(`node_rtt = "guess" accepted`)
	}
}

// TestUnknownSite: a node whose site is not a WonderNetwork city has no
// RTT in the placement until the nodes measure its RTTs; a player who did
// not ping it is not placed there meanwhile; once measured, the plane
// refits and the node has its RTTs.
func TestUnknownSite(t *testing.T) {
	w, nodes := newFakeWorld(t, 3)
	nodes[2].Site = "Our own datacenter, Reykjavik"
	c := &clock{t: time.Unix(1000, 0)}
	s, _ := newPlane(t, nodes, c)
	step := func() {
		c.add(time.Second)
		poll(s)
	}
	step()
	rtt := s.plane.Config().NodeRTT
	if !math.IsNaN(rtt[0][2]) || !math.IsNaN(rtt[2][1]) || math.IsNaN(rtt[0][1]) {
		t.Fatalf("the placement's RTTs %v: want NaN to and from node 3 only", rtt)
	}
	if code, body := rawJoin(s, "p", `[{"node": 1, "rtt_ms": 200}, {"node": 2, "rtt_ms": 250}]`); code != http.StatusOK {
		t.Fatalf("join: %d %s", code, body)
	}
	if row, _ := s.plane.Delays("p"); s.plane.Load(3) != 0 || row[2] != float64(control.MaxRTT/time.Millisecond) {
		t.Errorf("a player who did not ping node 3: RTTs %v, node 3's load %d; want MaxRTT to it, not placed there", row, s.plane.Load(3))
	}
	w.mu.Lock()
	w.peers[3] = []live.PeerRTT{{Node: 1, RTTMs: 80}, {Node: 2, RTTMs: 60}}
	w.mu.Unlock()
	step()
	rtt = s.plane.Config().NodeRTT
	if st := s.Stats(); st.NodeRTTs != 1 || rtt[0][2] != 80 || rtt[2][1] != 60 {
		t.Fatalf("after node 3's report: %d matrices, RTTs %v", st.NodeRTTs, rtt)
	}
}
