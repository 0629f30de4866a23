package plane

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
)

// testSecret is the test region's enrollment secret.
var testSecret = []byte("eu-west enrollment secret, 32 b")

// enrollClock is a settable clock for a plane.
type enrollClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *enrollClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *enrollClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// enrollPlane is a plane whose region eu-west enrolls nodes 200…202
// (us-east 300…309), on a clock set to now, with h's other fields.
func enrollPlaneWith(tb testing.TB, now time.Time, h Hosts) (*Server, *enrollClock) {
	tb.Helper()
	ca, err := pki.InitCA(tb.TempDir(), "test", now.Add(-time.Hour), 72*time.Hour)
	if err != nil {
		tb.Fatal(err)
	}
	h.CA = ca
	h.Enroll = []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202},
		{Region: "us-east", Secret: []byte("another secret of the us-east region"), First: 300, Last: 309}}
	clk := &enrollClock{now: now}
	s, err := New(Config{Nodes: twoNodes, Hosts: &h, Clock: clk.Now, AdminToken: "shared-secret-of-the-servers"})
	if err != nil {
		tb.Fatal(err)
	}
	return s, clk
}

// twoNodes are a plane's nodes (it needs two), 1 and 2.
var twoNodes = []Node{{ID: 1, Site: "London", Capacity: 2, Admin: "http://127.0.0.1:1", QUIC: "127.0.0.1:2"},
	{ID: 2, Site: "Tokyo", Capacity: 2, Admin: "http://127.0.0.1:3", QUIC: "127.0.0.1:4"}}

func enrollPlane(tb testing.TB, now time.Time) (*Server, *enrollClock) {
	return enrollPlaneWith(tb, now, Hosts{Rate: 1e6, Burst: 1 << 20})
}

// enrollBody is an enrollment request for gs in region at t, proved with
// secret, with a fresh CSR.
func enrollBody(t *testing.T, secret []byte, gs, region string, at time.Time, nonce string) HostRequest {
	t.Helper()
	csr := string(csrPEM(t))
	return HostRequest{CSR: csr, GameServer: gs, Region: region, Time: at.Unix(), Nonce: nonce,
		Proof: EnrollProof(secret, gs, region, at.Unix(), nonce, csr, Placement{})}
}

// postHosts serves body to s and returns the status, the grant and the
// message.
func postHosts(t *testing.T, s *Server, body any) (int, HostGrant, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("POST", "/v1/hosts", bytes.NewReader(b)))
	var g HostGrant
	if w.Code == http.StatusOK {
		if err := json.Unmarshal(w.Body.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
	}
	return w.Code, g, w.Body.String()
}

func hostStats(t *testing.T, s *Server) HostStats {
	t.Helper()
	w := httptest.NewRecorder()
	s.Handler().ServeHTTP(w, httptest.NewRequest("GET", "/v1/hosts", nil))
	var st HostStats
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil {
		t.Fatalf("GET /v1/hosts: %v: %s", err, w.Body)
	}
	return st
}

// grantNode checks a grant's certificate chains to s's CA and names want.
func grantNode(t *testing.T, s *Server, g HostGrant, want uint32) {
	t.Helper()
	b, _ := pem.Decode([]byte(g.Cert))
	if b == nil {
		t.Fatalf("no certificate in %q", g.Cert)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: s.hosts.cfg.CA.Pool, CurrentTime: s.cfg.Clock(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatalf("certificate does not verify: %v", err)
	}
	if id, err := pki.NodeIDOf(c); err != nil || uint32(id) != want || g.Node != want {
		t.Fatalf("certificate for node %d (%v), grant %d; want %d", id, err, g.Node, want)
	}
	if g.Admin != "" {
		t.Fatalf("an enrolled game server was given a host admin secret %q; it holds the servers' own", g.Admin)
	}
	if pki.IsPlayerHost(c) {
		t.Fatal("an enrolled game server's certificate is marked a player host's")
	}
}

// TestEnroll: game servers of one region, proving its secret, get
// distinct node IDs from its range, the same one again for the same
// GameServer; a wrong secret, a request changed on the way, another
// region's name, a stale or future time, a malformed nonce, a replay and
// a full range are refused with their reason, counted, and give no ID.
func TestEnroll(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, clk := enrollPlane(t, now)
	nonce := func(i int) string { return fmt.Sprintf("%032x", i) }
	code, g, msg := postHosts(t, s, enrollBody(t, testSecret, "eu-west-abc12", "eu-west", now, nonce(1)))
	if code != http.StatusOK {
		t.Fatalf("first game server: %d %s", code, msg)
	}
	grantNode(t, s, g, 200)
	replay := enrollBody(t, testSecret, "eu-west-def34", "eu-west", now, nonce(2))
	if code, g, msg = postHosts(t, s, replay); code != http.StatusOK {
		t.Fatalf("second game server: %d %s", code, msg)
	}
	grantNode(t, s, g, 201)
	clk.Add(30 * time.Second)
	if code, g, msg = postHosts(t, s, enrollBody(t, testSecret, "eu-west-abc12", "eu-west", clk.Now(), nonce(3))); code != http.StatusOK {
		t.Fatalf("first game server again: %d %s", code, msg)
	}
	grantNode(t, s, g, 200)

	swapped := enrollBody(t, testSecret, "eu-west-x", "eu-west", clk.Now(), nonce(5))
	swapped.CSR = string(csrPEM(t))
	renamed := enrollBody(t, testSecret, "eu-west-x", "eu-west", clk.Now(), nonce(6))
	renamed.GameServer = "eu-west-y"
	for _, c := range []struct {
		name   string
		body   any
		code   int
		reason string
		msg    string
	}{
		{"replayed", replay, http.StatusConflict, RefusedReplayed, "nonce already used"},
		{"wrong secret", enrollBody(t, []byte("not the region's secret at all"), "eu-west-x", "eu-west", clk.Now(), nonce(4)), http.StatusUnauthorized, RefusedCredential, "proof does not match"},
		{"another CSR", swapped, http.StatusUnauthorized, RefusedCredential, "proof does not match"},
		{"renamed", renamed, http.StatusUnauthorized, RefusedCredential, "proof does not match"},
		{"other region's secret", enrollBody(t, testSecret, "us-east-1", "us-east", clk.Now(), nonce(7)), http.StatusUnauthorized, RefusedCredential, "proof does not match"},
		{"unknown region", enrollBody(t, testSecret, "ap-1", "ap-south", clk.Now(), nonce(8)), http.StatusUnauthorized, RefusedCredential, "does not enroll here"},
		{"stale", enrollBody(t, testSecret, "eu-west-x", "eu-west", clk.Now().Add(-3*time.Minute), nonce(9)), http.StatusUnauthorized, RefusedStale, "check the node's clock"},
		{"future", enrollBody(t, testSecret, "eu-west-x", "eu-west", clk.Now().Add(3*time.Minute), nonce(10)), http.StatusUnauthorized, RefusedStale, "check the node's clock"},
		{"short nonce", enrollBody(t, testSecret, "eu-west-x", "eu-west", clk.Now(), "00ff"), http.StatusBadRequest, RefusedBadRequest, "nonce"},
		{"bad name", enrollBody(t, testSecret, "EU_West", "eu-west", clk.Now(), nonce(11)), http.StatusBadRequest, RefusedBadRequest, "gameserver"},
		{"bad CSR", HostRequest{CSR: "no", GameServer: "a", Region: "eu-west", Time: clk.Now().Unix(), Nonce: nonce(12), Proof: strings.Repeat("00", 32)}, http.StatusBadRequest, RefusedBadRequest, "certificate request"},
		{"token and enrollment", HostRequest{Token: "AAAA", CSR: "x", GameServer: "a"}, http.StatusBadRequest, RefusedBadRequest, "not both"},
		{"no player hosts", HostRequest{Token: "AAAA", CSR: string(csrPEM(t))}, http.StatusUnauthorized, RefusedCredential, "no player host"},
		{"unknown field", map[string]any{"csr": "x", "gameserver": "a", "extra": 1}, http.StatusBadRequest, RefusedBadRequest, "unknown field"},
	} {
		before := hostStats(t, s)
		code, _, msg := postHosts(t, s, c.body)
		if code != c.code || !strings.Contains(msg, c.reason) || !strings.Contains(msg, c.msg) {
			t.Errorf("%s: %d %q; want %d with %q and %q", c.name, code, msg, c.code, c.reason, c.msg)
		}
		after := hostStats(t, s)
		if after.Refused[c.reason] != before.Refused[c.reason]+1 || after.Issued != before.Issued || len(after.GameServers) != len(before.GameServers) {
			t.Errorf("%s: stats %+v after %+v: want one more %s, nothing given", c.name, after, before, c.reason)
		}
	}
	// The refused requests spent no nonce: nonce 4 proved right passes.
	if code, g, msg = postHosts(t, s, enrollBody(t, testSecret, "eu-west-ghi56", "eu-west", clk.Now(), nonce(4))); code != http.StatusOK {
		t.Fatalf("third game server: %d %s", code, msg)
	}
	grantNode(t, s, g, 202)
	if code, _, msg = postHosts(t, s, enrollBody(t, testSecret, "eu-west-jkl78", "eu-west", clk.Now(), nonce(13))); code != http.StatusServiceUnavailable || !strings.Contains(msg, RefusedExhausted) {
		t.Fatalf("range full: %d %s", code, msg)
	}
	// A nonce is forgotten once its request is out of the window: the
	// replay is then refused for its time.
	clk.Add(3 * time.Minute)
	if code, _, msg = postHosts(t, s, replay); code != http.StatusUnauthorized || !strings.Contains(msg, RefusedStale) {
		t.Fatalf("late replay: %d %s", code, msg)
	}
	if n := len(s.hosts.nonces); n != 0 {
		t.Fatalf("%d nonces remembered out of the window", n)
	}
	st := hostStats(t, s)
	want := map[string]uint32{"eu-west/eu-west-abc12": 200, "eu-west/eu-west-def34": 201, "eu-west/eu-west-ghi56": 202}
	if st.Issued != 4 || len(st.GameServers) != 3 {
		t.Fatalf("stats %+v: want 4 issued to %v", st, want)
	}
	for k, id := range want {
		if st.GameServers[k] != id {
			t.Fatalf("stats %+v: want %v", st, want)
		}
	}
}

// TestEnrollFlood: requests beyond the rate are refused with 429 before
// they are read, and counted; the bucket refills with time.
func TestEnrollFlood(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	s, clk := enrollPlaneWith(t, now, Hosts{Rate: 2, Burst: 3})
	var codes []int
	for i := range 5 {
		code, _, _ := postHosts(t, s, enrollBody(t, testSecret, fmt.Sprintf("gs-%d", i), "eu-west", now, fmt.Sprintf("%032x", i)))
		codes = append(codes, code)
	}
	if fmt.Sprint(codes) != "[200 200 200 429 429]" {
		t.Fatalf("statuses %v: want 3 granted then 2 refused", codes)
	}
	if st := hostStats(t, s); st.Refused[RefusedFlood] != 2 || st.Issued != 3 {
		t.Fatalf("stats %+v", st)
	}
	clk.Add(time.Second) // two more tokens
	if code, _, msg := postHosts(t, s, enrollBody(t, testSecret, "gs-0", "eu-west", clk.Now(), fmt.Sprintf("%032x", 9))); code != http.StatusOK {
		t.Fatalf("after a second: %d %s", code, msg)
	}
}

// TestEnrollStateFile: a plane restarted on its state file gives the same
// GameServer its ID again and a new one the next ID; a state file naming
// an ID outside its region is refused.
func TestEnrollStateFile(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	state := filepath.Join(t.TempDir(), "hosts.json")
	s, _ := enrollPlaneWith(t, now, Hosts{StateFile: state})
	for i, gs := range []string{"a", "b"} {
		if code, _, msg := postHosts(t, s, enrollBody(t, testSecret, gs, "eu-west", now, fmt.Sprintf("%032x", i))); code != http.StatusOK {
			t.Fatalf("%s: %d %s", gs, code, msg)
		}
	}
	s2, _ := enrollPlaneWith(t, now, Hosts{StateFile: state})
	code, g, msg := postHosts(t, s2, enrollBody(t, testSecret, "b", "eu-west", now, fmt.Sprintf("%032x", 7)))
	if code != http.StatusOK {
		t.Fatalf("b again: %d %s", code, msg)
	}
	grantNode(t, s2, g, 201)
	if code, g, msg = postHosts(t, s2, enrollBody(t, testSecret, "c", "eu-west", now, fmt.Sprintf("%032x", 8))); code != http.StatusOK {
		t.Fatalf("c: %d %s", code, msg)
	}
	grantNode(t, s2, g, 202)
	if err := os.WriteFile(state, []byte(`{"ids":{"gs:eu-west/z":7}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, _ := pki.InitCA(t.TempDir(), "test", now, time.Hour)
	_, err := New(Config{Nodes: twoNodes, Hosts: &Hosts{CA: ca, StateFile: state, Enroll: []Enroll{{Region: "eu-west", Secret: testSecret, First: 200, Last: 202}}}})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "outside") {
		t.Fatalf("state naming node 7: %v", err)
	}
}

// TestEnrollConfig: a plane refuses enrolling regions whose IDs overlap
// each other's, the player hosts' or a node's, a short secret, a region
// listed twice or with a bad name, and a configuration certifying nothing.
func TestEnrollConfig(t *testing.T) {
	ca, err := pki.InitCA(t.TempDir(), "test", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	nodes := append([]Node{{ID: 50, Site: "Paris", Capacity: 2, Admin: "http://127.0.0.1:5", QUIC: "127.0.0.1:6"}}, twoNodes...)
	e := func(region string, first, last uint32) Enroll {
		return Enroll{Region: region, Secret: testSecret, First: first, Last: last}
	}
	for i, h := range []Hosts{
		{CA: ca},
		{CA: ca, Enroll: []Enroll{e("a", 100, 200), e("b", 150, 250)}},
		{CA: ca, Enroll: []Enroll{e("a", 40, 60)}},
		{CA: ca, Enroll: []Enroll{e("a", 100, 200), e("a", 300, 400)}},
		{CA: ca, Enroll: []Enroll{e("A b", 100, 200)}},
		{CA: ca, Enroll: []Enroll{{Region: "a", Secret: []byte("short"), First: 100, Last: 200}}},
		{CA: ca, Enroll: []Enroll{e("a", 0, 200)}},
		{CA: ca, First: 1, Last: 3, Enroll: []Enroll{e("a", 100, 200)}},
		{CA: ca, Enroll: []Enroll{e("a", 100, 200)}, Window: time.Millisecond},
		{CA: ca, Enroll: []Enroll{e("a", 100, 200)}, Rate: -1, Burst: 1},
	} {
		if _, err := New(Config{Nodes: nodes, Hosts: &h}); !errors.Is(err, ErrConfig) {
			t.Errorf("hosts config %d: %v", i, err)
		} else {
			t.Logf("config %d: %v", i, err)
		}
	}
}

// TestEnrollFile: [[hosts.enroll]] of the configuration file, without a
// token key, gives a plane that enrolls and certifies no player host; a
// missing secret file is refused.
func TestEnrollFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.InitCA(filepath.Join(dir, "ca"), "test", time.Now(), 48*time.Hour); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "eu-west.secret")
	if err := os.WriteFile(secret, append(testSecret, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	var nb strings.Builder
	for _, n := range twoNodes {
		fmt.Fprintf(&nb, "[[nodes]]\nid = %d\nsite = %q\ncapacity = 2\nadmin = %q\nplayer_quic = %q\n", n.ID, n.Site, n.Admin, n.QUIC)
	}
	file := nb.String() + fmt.Sprintf("[hosts]\nca_dir = %q\nwindow = \"1m\"\nrate = 5.0\nburst = 10\n"+
		"[[hosts.enroll]]\nregion = \"eu-west\"\nsecret_file = %q\nfirst = 200\nlast = 299\n", filepath.Join(dir, "ca"), secret)
	file = "listen = \"127.0.0.1:0\"\n" + file
	f, err := ParseFile([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := s.hosts
	if h.verify != nil || h.cfg.Window != time.Minute || h.cfg.Rate != 5 || h.cfg.Burst != 10 || !bytes.Equal(h.enroll["eu-west"].Secret, testSecret) {
		t.Fatalf("hosts %+v", h.cfg)
	}
	f, _ = ParseFile([]byte(strings.Replace(file, secret, secret+".nope", 1)))
	if _, err := f.Config(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "secret_file") {
		t.Fatalf("missing secret: %v", err)
	}
}

// TestRequestNodeCert: the game server's side gets a node file the node
// daemon loads for the node granted, the same node again for the same
// GameServer, and reports a wrong secret as the plane's refusal.
func TestRequestNodeCert(t *testing.T) {
	s, _ := enrollPlaneWith(t, time.Now(), Hosts{})
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	ctx := context.Background()
	e := Enrollment{GameServer: "eu-west-q7x2k", Region: "eu-west", Secret: testSecret}
	for range 2 {
		hc, err := RequestNodeCert(ctx, hs.Client(), hs.URL, e, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(path, hc.CA, 0o644); err != nil {
			t.Fatal(err)
		}
		ca, err := pki.LoadCAFiles(path, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if id, err := pki.ParseNode(hc.NodeFile, ca); err != nil || hc.Node != 200 || id.ID != 200 {
			t.Fatalf("node file for node %d: %v", hc.Node, err)
		}
	}
	e.Secret = []byte("a wrong secret of enough bytes")
	if _, err := RequestNodeCert(ctx, hs.Client(), hs.URL, e, time.Now()); !errors.Is(err, ErrPlaneRefused) || !strings.Contains(err.Error(), "proof does not match") {
		t.Fatalf("wrong secret: %v", err)
	}
	e.Secret = []byte("short")
	if _, err := RequestNodeCert(ctx, hs.Client(), hs.URL, e, time.Now()); err == nil || !strings.Contains(err.Error(), "at least 16") {
		t.Fatalf("short secret: %v", err)
	}
	if _, err := RequestNodeCert(ctx, hs.Client(), "http://127.0.0.1:1", Enrollment{GameServer: "a", Region: "eu-west", Secret: testSecret}, time.Now()); err == nil || errors.Is(err, ErrPlaneRefused) {
		t.Fatalf("no plane: %v, want an error that is not a refusal", err)
	}
}
