package plane

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
)

// FuzzJoinRequest: any body of POST /v1/join is either refused with an
// error or decoded into a request whose player and pings pass the
// checks; it never panics.
func FuzzJoinRequest(f *testing.F) {
	f.Add([]byte(`{"player":"a","pings":[{"node":1,"rtt_ms":5}]}`))
	f.Add([]byte(`{"player":"a","pings":[]}`))
	f.Add([]byte(`{"player":"","pings":[{"node":0,"rtt_ms":-1}]}`))
	f.Add([]byte(`[1,2,3]`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/join", bytes.NewReader(body))
		req, err := readRequest(r)
		if err != nil {
			return
		}
		if checkPlayer(req.Player) != nil || len(req.Pings) == 0 {
			t.Fatalf("accepted %q as %+v", body, req)
		}
	})
}

// FuzzFile: any configuration file is refused with an error or gives a
// configuration New accepts or refuses with an error; nothing panics.
func FuzzFile(f *testing.F) {
	f.Add([]byte("listen = \"127.0.0.1:7400\"\n[[nodes]]\nid = 1\nsite = \"Tokyo\"\ncapacity = 2\nadmin = \"http://127.0.0.1:1\"\nplayer_quic = \"x:1\"\n[[nodes]]\nid = 2\nsite = \"London\"\ncapacity = 2\nadmin = \"http://127.0.0.1:2\"\nplayer_quic = \"x:2\"\n"))
	f.Add([]byte("listen = \"x:1\"\ngrid = \"2x2\"\nbounds = [0, 0, 1, 1]\n"))
	f.Add([]byte("listen = \"x:1\"\npoll = \"-1s\"\n"))
	f.Add([]byte("listen = \"x:1\"\n[autoscale]\nmin = 1\nmax = 9\n[[autoscale.fleets]]\nname = \"f\"\nregion = \"eu\"\nmin = 0\nmax = 3\n[[autoscale.fleets]]\nname = \"g\"\nnodes = [1]\nmax = -2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := ParseFile(b)
		if err != nil {
			return
		}
		file.AdminTokenFile, file.Hosts = "", nil // no file reads from fuzzed input
		cfg, err := file.Config()
		if err != nil {
			return
		}
		_, _ = New(cfg)
	})
}

// FuzzHostRequest: any body of POST /v1/hosts is refused with an error or
// decoded into either a token or an enrollment of the right form (never
// both), with a certificate request that parses; it never panics. Served
// to a plane, every body is answered, and one that is not a fresh
// enrollment proved with the region's secret gives no ID.
func FuzzHostRequest(f *testing.F) {
	f.Add([]byte(`{"token":"AAAA","csr":"-----BEGIN CERTIFICATE REQUEST-----\nMAA=\n-----END CERTIFICATE REQUEST-----\n"}`))
	f.Add([]byte(`{"token":"","csr":""}`))
	f.Add([]byte(`{"token":"x","csr":"y","z":1}`))
	f.Add([]byte(`{"gameserver":"eu-west-abcde","region":"eu-west","time":1800000000,"nonce":"00112233445566778899aabbccddeeff","proof":"` + strings.Repeat("ab", 32) + `","csr":"x"}`))
	f.Add([]byte(`{"gameserver":"-a","region":"EU","time":-1,"nonce":"zz","proof":"","csr":"x"}`))
	f.Add([]byte(`{"token":"AAAA","gameserver":"a","region":"b","time":1,"nonce":"00","proof":"00","csr":"x"}`))
	f.Add([]byte(`{"gameserver":"gs-1","region":"eu-west","time":1800000000,"nonce":"00112233445566778899aabbccddeeff","proof":"` + strings.Repeat("ab", 32) + `","csr":"x","admin":"http://10.0.0.5:7001","player_quic":"10.0.0.5:7000","capacity":64}`))
	f.Add([]byte(`{"token":"AAAA","csr":"x","admin":"http://h:1","player_ws":"ws://h:2/","capacity":-1}`))
	p, _ := enrollPlane(f, time.Unix(1_800_000_000, 0))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest("POST", "/v1/hosts", bytes.NewReader(body))
		b, err := readHostRequest(r)
		if err == nil {
			if b.csr == "" || (len(b.tok) == 0) == (b.req.GameServer == "") {
				t.Fatalf("accepted %q as %+v", body, b.req)
			}
			if _, err := pki.ParseCSR([]byte(b.csr)); err != nil {
				t.Fatalf("accepted %q with a bad request: %v", body, err)
			}
			if b.tok == nil && checkEnrollRequest(&b.req) != nil {
				t.Fatalf("accepted %q with a bad enrollment", body)
			}
		}
		w := httptest.NewRecorder()
		p.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/v1/hosts", bytes.NewReader(body)))
		if w.Code == 200 {
			t.Fatalf("granted %q without a proof from the secret", body)
		}
	})
}

// FuzzInstanceReport: any instance records a server reports to a
// starting plane are refused by the poll's checks or by the rebuild with
// an error, or rebuilt into instances that each run on a reporting node
// or a player host; nothing panics.
func FuzzInstanceReport(f *testing.F) {
	f.Add([]byte(`[{"id":"a","node":1,"box":[0,0,10,10],"players":[{"id":"p0"},{"id":"p1"}],"left":["p0"],"stamp":5}]`))
	f.Add([]byte(`[{"id":"h","node":101,"box":[0,0,1,1],"players":[{"id":"p0","host":101},{"id":"p1","host":102,"admin":"http://x:1"}],"rtt_ms":[0,3,3,0],"replica":"p1"}]`))
	f.Add([]byte(`[{"id":"a","node":2,"box":[0,0,1,1],"players":[{"id":"p0"}]}]`))
	f.Add([]byte(`[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p0"},{"id":"p1"},{"id":"p2"}]}]`))
	nodes := []Node{{ID: 1, Site: "Tokyo", Capacity: 4, Admin: "http://127.0.0.1:1", QUIC: "x:1"},
		{ID: 2, Site: "London", Capacity: 4, Admin: "http://127.0.0.1:2", QUIC: "x:2"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var rs []live.InstanceRecord
		if json.Unmarshal(b, &rs) != nil || live.CheckInstanceRecords(rs) != nil {
			return
		}
		s, err := New(Config{Nodes: nodes, Seed: 1, Instances: &InstanceSetup{Seats: 2}})
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		y, err := s.rebuildInstances(0, map[uint32]*live.PlayersReport{1: {Node: 1, Instances: rs}, 2: {Node: 2}})
		if err != nil {
			return
		}
		for _, id := range y.x.InstanceIDs() {
			w, _ := y.x.Where(id)
			if w.Node != 1 && !w.Hosted {
				t.Fatalf("%s: instance %q rebuilt on server %d, which did not report it", b, id, w.Node)
			}
		}
	})
}

// FuzzStateFile: any state file of POST /v1/hosts is refused at start
// with an error or loaded; a loaded one is written back as the same
// state; nothing panics.
func FuzzStateFile(f *testing.F) {
	f.Add([]byte(`{"ids":{"gs:eu-west/a":200,"player:p":10},"expires":{"gs:eu-west/a":1800003600}}`))
	f.Add([]byte(`{"ids":{"gs:eu-west/a":200},"nodes":{"200":{"region":"eu-west","gameserver":"a","admin":"http://h:1","player_quic":"h:2","capacity":3,"enrolled":5}}}`))
	f.Add([]byte(`{"ids":{"gs:eu-west/a":200,"gs:eu-west/b":200},"expires":{"x":-1}}`))
	f.Add([]byte(`[]`))
	now := time.Unix(1_800_000_000, 0)
	ca, err := pki.InitCA(f.TempDir(), "test", now.Add(-time.Hour), 72*time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		state := dir + "/hosts.json"
		if err := os.WriteFile(state, b, 0o600); err != nil {
			t.Fatal(err)
		}
		h := Hosts{CA: ca, StateFile: state, Key: nil,
			Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202, Site: "London"}}}
		hi, err := newHostIssuer(h, twoNodes, now)
		if err != nil {
			return
		}
		if err := hi.save(); err != nil {
			t.Fatal(err)
		}
		again, err := newHostIssuer(h, twoNodes, now.Add(time.Hour))
		if err != nil {
			t.Fatalf("a state file written back is refused: %v", err)
		}
		if fmt.Sprint(again.ids, again.expires, again.placed) != fmt.Sprint(hi.ids, hi.expires, hi.placed) {
			t.Fatalf("round trip: %v %v %v, then %v %v %v", hi.ids, hi.expires, hi.placed, again.ids, again.expires, again.placed)
		}
	})
}

// FuzzPeerRTTs: any peer RTTs a node reports are refused whole (counted,
// the placement's RTTs unchanged) or taken: then every RTT the placement
// holds is NaN or within 0 to 10 s, and a pair the report names holds
// the least of the two ends' reports; nothing panics.
func FuzzPeerRTTs(f *testing.F) {
	f.Add([]byte(`[{"node":2,"rtt_ms":300},{"node":3,"rtt_ms":12.5}]`))
	f.Add([]byte(`[{"node":2,"rtt_ms":-1}]`))
	f.Add([]byte(`[{"node":1,"rtt_ms":5}]`))
	f.Add([]byte(`[{"node":2,"rtt_ms":5},{"node":2,"rtt_ms":6}]`))
	f.Add([]byte(`[{"node":9,"rtt_ms":5}]`))
	nodes := []Node{{ID: 1, Site: "Tokyo", Capacity: 4, Admin: "http://127.0.0.1:1", QUIC: "x:1"},
		{ID: 2, Site: "London", Capacity: 4, Admin: "http://127.0.0.1:2", QUIC: "x:2"},
		{ID: 3, Site: "Somewhere else", Capacity: 4, Admin: "http://127.0.0.1:3", QUIC: "x:3"}}
	f.Fuzz(func(t *testing.T, b []byte) {
		var ps []live.PeerRTT
		if json.Unmarshal(b, &ps) != nil {
			return
		}
		s, err := New(Config{Nodes: nodes, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.stats.Rebuilt = true
		before := s.plane.Config().NodeRTT
		s.measureNodes(0, map[uint32]*live.PlayersReport{1: {Node: 1, Peers: ps}, 2: {Node: 2, Peers: []live.PeerRTT{{Node: 1, RTTMs: 250}}}})
		after := s.plane.Config().NodeRTT
		if live.CheckPeerRTTs(1, ps) != nil {
			if s.stats.BadPeerRTTs != 1 || s.peerRTT[1] != nil {
				t.Fatalf("%s: refused report: %d refused, kept %v", b, s.stats.BadPeerRTTs, s.peerRTT[1])
			}
		}
		for i, row := range after {
			for j, v := range row {
				if i != j && !math.IsNaN(v) && (v < 0 || v > 10000) {
					t.Fatalf("%s: RTT %v from node %d to node %d (before %v)", b, v, i+1, j+1, before)
				}
			}
		}
		for _, p := range ps {
			if live.CheckPeerRTTs(1, ps) == nil && p.Node == 2 && s.stats.NodeRTTs == 1 && after[0][1] != min(p.RTTMs, 250) {
				t.Fatalf("%s: RTT 1→2 %v, want the least of %v and 250", b, after[0][1], p.RTTMs)
			}
		}
	})
}
