package plane

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
)

// TestEnrollReclaim: once a region's IDs are all given, a new game
// server gets the ID of one whose last certificate has expired (the one
// expired longest, then the lowest ID), never one still valid: the plane
// then refuses "exhausted", saying when the first certificate still valid
// expires. A game server whose ID was given to another is a new one. The
// expiries survive a restart of the plane in its state file.
func TestEnrollReclaim(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	state := filepath.Join(t.TempDir(), "hosts.json")
	s, clk := enrollPlaneWith(t, now, Hosts{StateFile: state, Validity: time.Hour, Rate: 1e6, Burst: 1 << 20})
	n := 0
	enroll := func(s *Server, gs string) (int, uint32, string) {
		t.Helper()
		n++
		code, g, msg := postHosts(t, s, enrollBody(t, testSecret, gs, "eu-west", clk.Now(), fmt.Sprintf("%032x", n)))
		return code, g.Node, msg
	}
	for i, gs := range []string{"a", "b", "c"} {
		if code, id, msg := enroll(s, gs); code != http.StatusOK || id != uint32(200+i) {
			t.Fatalf("%s: %d node %d %s", gs, code, id, msg)
		}
	}
	exhausted := func(s *Server, gs, want string) {
		t.Helper()
		code, id, msg := enroll(s, gs)
		if code != http.StatusServiceUnavailable || !strings.Contains(msg, RefusedExhausted) || !strings.Contains(msg, want) {
			t.Fatalf("%s: %d node %d %q; want 503 exhausted naming %q", gs, code, id, msg, want)
		}
	}
	// All valid: none is given again.
	exhausted(s, "d", "before "+now.Add(time.Hour).UTC().Format(time.RFC3339))
	clk.Add(30 * time.Minute)
	if code, id, msg := enroll(s, "c"); code != http.StatusOK || id != 202 { // c renews: valid until now+1h30m
		t.Fatalf("c renews: %d node %d %s", code, id, msg)
	}
	clk.Add(30 * time.Minute)
	exhausted(s, "d", "before") // a's and b's expire at this very second: still valid
	clk.Add(time.Second)
	if code, id, msg := enroll(s, "d"); code != http.StatusOK || id != 200 {
		t.Fatalf("d after a's certificate expired: %d node %d %s; want 200", code, id, msg)
	}
	// The plane restarts on its state file.
	s, clk = enrollPlaneWith(t, clk.Now(), Hosts{StateFile: state, Validity: time.Hour, Rate: 1e6, Burst: 1 << 20})
	if code, id, msg := enroll(s, "e"); code != http.StatusOK || id != 201 {
		t.Fatalf("e after the restart: %d node %d %s; want b's 201", code, id, msg)
	}
	exhausted(s, "f", "before "+now.Add(90*time.Minute).UTC().Format(time.RFC3339))
	// a's ID is d's now: a is a new game server, and none is free.
	exhausted(s, "a", "exhausted")
	st := hostStats(t, s)
	if fmt.Sprint(st.GameServers) != "map[eu-west/c:202 eu-west/d:200 eu-west/e:201]" || st.Reclaimed != 1 {
		t.Errorf("game servers %v, reclaimed %d; want d on 200, e on 201, one reclaimed since the restart", st.GameServers, st.Reclaimed)
	}
	var file hostState
	b, _ := os.ReadFile(state)
	if err := json.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	at := now.Add(time.Hour + time.Second)
	want := fmt.Sprint(map[string]int64{"gs:eu-west/c": now.Add(90 * time.Minute).Unix(), "gs:eu-west/d": at.Add(time.Hour).Unix(),
		"gs:eu-west/e": at.Add(time.Hour).Unix()})
	if fmt.Sprint(file.Expires) != want {
		t.Errorf("state file expiries %v, want %v", file.Expires, want)
	}
	// Renewed before its certificate expires, a game server keeps its ID
	// for good.
	clk.Add(30 * time.Minute)
	if code, id, msg := enroll(s, "c"); code != http.StatusOK || id != 202 {
		t.Fatalf("c renews: %d node %d %s", code, id, msg)
	}
	clk.Add(50 * time.Minute)
	if code, id, msg := enroll(s, "f"); code != http.StatusOK || id != 200 {
		t.Fatalf("f once d's and e's expired: %d node %d %s; want 200", code, id, msg)
	}
	if code, id, msg := enroll(s, "g"); code != http.StatusOK || id != 201 {
		t.Fatalf("g: %d node %d %s; want 201", code, id, msg)
	}
	exhausted(s, "h", "before")
}

// TestEnrollReclaimOldState: a state file without expiries (an older
// plane's) counts every ID as expiring one validity after the plane read
// it.
func TestEnrollReclaimOldState(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	state := filepath.Join(t.TempDir(), "hosts.json")
	if err := os.WriteFile(state, []byte(`{"ids":{"gs:eu-west/a":200,"gs:eu-west/b":201,"gs:eu-west/c":202}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, clk := enrollPlaneWith(t, now, Hosts{StateFile: state, Validity: time.Hour, Rate: 1e6, Burst: 1 << 20})
	body := func(gs string, i int) HostRequest {
		return enrollBody(t, testSecret, gs, "eu-west", clk.Now(), fmt.Sprintf("%032x", i))
	}
	clk.Add(time.Hour)
	if code, _, msg := postHosts(t, s, body("d", 1)); code != http.StatusServiceUnavailable || !strings.Contains(msg, "before") {
		t.Fatalf("d an hour after the load: %d %s, want exhausted", code, msg)
	}
	clk.Add(time.Second)
	if code, g, msg := postHosts(t, s, body("d", 2)); code != http.StatusOK || g.Node != 200 {
		t.Fatalf("d a validity after the load: %d node %d %s, want 200", code, g.Node, msg)
	}
}

// TestEnrollReclaimBusy: an expired game server the placement uses (a
// target answering its polls) keeps its ID, and so does one the
// revocation list names by ID (its next holder would be refused).
func TestEnrollReclaimBusy(t *testing.T) {
	k := newEnrolledCluster(t)
	s, err := New(Config{Nodes: k.nodes, Clock: k.c.now, Seed: 1, AdminToken: k.w.token, Hosts: &Hosts{CA: k.ca, Rate: 1e6, Burst: 1 << 20,
		Validity: time.Hour, Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202, Site: "London"}},
		StateFile: filepath.Join(k.dir, "state.json"), Revoked: k.revoked, ForgetAfter: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	poll(s)
	a := k.enroll(s, "gs-a", k.w.addNode(200))
	k.enroll(s, "gs-b", "http://127.0.0.1:1")
	k.enroll(s, "gs-c", "http://127.0.0.1:1")
	k.c.add(time.Second)
	poll(s)
	if a != 200 || !s.enrolled[200].target {
		t.Fatalf("gs-a on node %d, not a target", a)
	}
	if err := os.WriteFile(k.revoked, []byte("node 201\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k.c.add(2 * time.Hour)
	poll(s)
	try := func(gs string) (int, uint32, string) {
		code, g, msg := postHosts(t, s, placedBody(t, gs, k.c.now(), Placement{Admin: "http://127.0.0.1:1", QUIC: "127.0.0.1:9900", Capacity: 3}))
		return code, g.Node, msg
	}
	if code, id, msg := try("gs-d"); code != http.StatusOK || id != 202 {
		t.Fatalf("gs-d: %d node %d %s; want gs-c's 202 (200 is a target, 201 revoked)", code, id, msg)
	}
	code, id, msg := try("gs-e")
	if code != http.StatusServiceUnavailable || !strings.Contains(msg, RefusedExhausted) {
		t.Fatalf("gs-e: %d node %d %s; want exhausted", code, id, msg)
	}
}

// TestEnrollStateFileRefused: a state file whose expiries do not fit its
// IDs, or that gives one ID twice, is refused at start.
func TestEnrollStateFileRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct{ file, want string }{
		{`{"ids":{"gs:eu-west/a":200},"expires":{"gs:eu-west/b":1800000000}}`, "gs:eu-west/b was given no node ID"},
		{`{"ids":{"gs:eu-west/a":200},"expires":{"gs:eu-west/a":-5}}`, "want Unix seconds"},
		{`{"ids":{"gs:eu-west/a":200},"expires":{"gs:eu-west/a":"soon"}}`, "bad JSON"},
		{`{"ids":{"gs:eu-west/a":200,"gs:eu-west/b":200}}`, "node 200 given to both"},
	} {
		state := filepath.Join(t.TempDir(), "hosts.json")
		if err := os.WriteFile(state, []byte(tc.file), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Nodes: twoNodes, Clock: func() time.Time { return now }, Hosts: &Hosts{CA: testCA(t, now), StateFile: state,
			Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202}}}})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v; want refused naming %q", tc.file, s != nil, err, tc.want)
		}
	}
}

// testCA is a fresh cluster CA valid around now.
func testCA(t *testing.T, now time.Time) *pki.CA {
	t.Helper()
	ca, err := pki.InitCA(t.TempDir(), "test", now.Add(-time.Hour), 72*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}
