package cli

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
)

// gameServerSidecar is an Agones SDK sidecar's GET /gameserver (the
// REST gateway's JSON), answering a GameServer with no address until
// scheduled is set.
type gameServerSidecar struct {
	mu        sync.Mutex
	scheduled bool
	calls     int
}

func (s *gameServerSidecar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != "GET" || r.URL.Path != "/gameserver" {
		http.NotFound(w, r)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	gs := agones.GameServer{ObjectMeta: agones.ObjectMeta{Name: "ow-eu-west-x7k2p", Namespace: "games"},
		Status: agones.GSStatus{State: "Scheduled", Ports: []agones.Port{{Name: "node", Port: 7601},
			{Name: agones.PlayerPortQUIC, Port: 7602}, {Name: agones.PlayerPortWS, Port: 7603}}}}
	if s.scheduled {
		gs.Status.Address = "198.51.100.20"
	}
	json.NewEncoder(w).Encode(gs)
}

// TestEnrollAgonesEndpoint: an Agones game server enrolling with
// --enroll-admin and no advertised player endpoint asks to be placed at
// the GameServer's address and host ports (read from the SDK sidecar,
// waiting until Agones gives it an address); the plane records that
// placement. With no address within --enroll-wait it does not enroll.
func TestEnrollAgonesEndpoint(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.InitCA(filepath.Join(dir, "ca"), "test", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "hosts.json")
	secret := []byte("0123456789abcdef0123")
	p, err := plane.New(plane.Config{Nodes: []plane.Node{
		{ID: 1, Site: "London", Capacity: 2, Admin: "http://127.0.0.1:1", QUIC: "127.0.0.1:2"},
		{ID: 2, Site: "Tokyo", Capacity: 2, Admin: "http://127.0.0.1:3", QUIC: "127.0.0.1:4"},
	}, Hosts: &plane.Hosts{CA: ca, StateFile: state,
		Validity: 30 * time.Minute,
		Enroll:   []plane.Enroll{{Region: "eu-west", Secret: secret, First: 100, Last: 101, Site: "Paris"}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	sc := &gameServerSidecar{}
	sdk := httptest.NewServer(sc)
	defer sdk.Close()
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, secret, 0o600)
	coord := filepath.Join(dir, "coord")
	if code, _, errs := run(t, "", "token", "init", "--dir", coord); code != 0 {
		t.Fatalf("token init: %s", errs)
	}
	toml := fmt.Sprintf("id = 100\n[tls]\nca_cert = %q\nnode_cert = %q\n[listen]\nnode = \"0.0.0.0:7100\"\nplayer_quic = \"0.0.0.0:7102\"\nadmin = \"0.0.0.0:7180\"\n[discovery]\nrendezvous = 1\n[[peers]]\nid = 1\naddr = \"127.0.0.1:7100\"\n[players]\ncoordinator_key = %q\nmax_players = 48\n[agones]\nenabled = true\nsdk = %q\nregion = \"eu-west\"\n",
		filepath.Join(dir, "ca", pki.CACertFile), filepath.Join(dir, "node.pem"), filepath.Join(coord, "coordinator.pub"), sdk.URL)
	cfg, err := live.ParseDaemonConfig([]byte(toml), dir)
	if err != nil {
		t.Fatal(err)
	}
	f := enrollFlags{plane: srv.URL, secretFile: secretFile, gameServer: "ow-eu-west-x7k2p", admin: "http://10.4.0.17:7180", wait: 1500 * time.Millisecond}
	lg := slog.New(slog.DiscardHandler)

	// Not scheduled yet, and not within the wait: no enrollment.
	if _, _, err := enroll(cfg, f, lg); err == nil || !strings.Contains(err.Error(), "no address yet") {
		t.Fatalf("no address: %v, want an error saying so", err)
	}
	if _, err := os.Stat(cfg.TLS.NodeCert); err == nil {
		t.Fatal("a certificate was written without a placement")
	}

	go func() {
		time.Sleep(300 * time.Millisecond)
		sc.mu.Lock()
		sc.scheduled = true
		sc.mu.Unlock()
	}()
	f.wait = 10 * time.Second
	got, e, err := enroll(cfg, f, lg)
	if err != nil {
		t.Fatal(err)
	}
	want := plane.Placement{Admin: "http://10.4.0.17:7180", QUIC: "198.51.100.20:7602", WS: "ws://198.51.100.20:7603/", Capacity: 48}
	if got.ID != 100 || e.Placement != want {
		t.Errorf("enrolled as node %d with %+v, want 100 with %+v", got.ID, e.Placement, want)
	}
	if got.Membership.PlayerQUIC != "" {
		t.Errorf("the configuration's membership.player_quic was set to %q: the daemon reads the GameServer itself", got.Membership.PlayerQUIC)
	}
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Nodes map[string]plane.Placement `json:"nodes"`
	}
	if err := json.Unmarshal(b, &st); err != nil || st.Nodes["100"] != want {
		t.Errorf("the plane recorded %+v (%v), want node 100 at %+v", st.Nodes, err, want)
	}

	// An advertised endpoint is taken as it is: the sidecar is not asked.
	sc.mu.Lock()
	calls := sc.calls
	sc.mu.Unlock()
	cfg.Membership.PlayerQUIC = "play.example.com:443"
	f.gameServer = "ow-eu-west-a1b2c"
	if _, e, err := enroll(cfg, f, lg); err != nil || e.Placement.QUIC != "play.example.com:443" || e.Placement.WS != "" {
		t.Errorf("advertised: %+v, %v", e.Placement, err)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.calls != calls {
		t.Errorf("the sidecar was asked %d more times with an advertised endpoint", sc.calls-calls)
	}
}
