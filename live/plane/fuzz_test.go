package plane

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
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
