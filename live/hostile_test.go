package live

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
)

// hostileNode is a running daemon of the test game with a WebSocket
// player endpoint and an admin endpoint.
type hostileNode struct {
	d    *Daemon
	stop context.CancelFunc
	done chan error
}

func startHostile(t *testing.T, cfg DaemonConfig) *hostileNode {
	t.Helper()
	g := newTestGame()
	d, err := NewDaemon(cfg, Game{Registry: g.registry, Players: walkers{g}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &hostileNode{d: d, stop: cancel, done: make(chan error, 1)}
	go func() { h.done <- d.Run(ctx) }()
	return h
}

func (h *hostileNode) shutdown(t *testing.T) {
	t.Helper()
	h.stop()
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
}

func (h *hostileNode) get(t *testing.T, path, bearer string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+h.d.AdminAddr().String()+path, nil)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hostileConfig returns node id's configuration in dir (a CA made there
// for node 1 is shared by the others), with a WebSocket player endpoint.
func hostileConfig(t *testing.T, dir string, ca *pki.CA, id uint32) DaemonConfig {
	t.Helper()
	cfg := DefaultDaemonConfig()
	cfg.ID = id
	data, err := ca.Issue(wire.NodeID(id), time.Now(), 30*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	nodeFile := filepath.Join(dir, "node"+string(rune('0'+id))+".pem")
	if _, err := os.Stat(nodeFile); err != nil {
		if err := pki.WriteNodeFile(nodeFile, data); err != nil {
			t.Fatal(err)
		}
	}
	cfg.Listen = ListenConfig{Node: "127.0.0.1:0", Admin: "127.0.0.1:0", PlayerWS: "127.0.0.1:0"}
	cfg.DataDir = filepath.Join(dir, "data"+string(rune('0'+id)))
	cfg.TLS = TLSConfig{CACert: filepath.Join(dir, "ca", pki.CACertFile), NodeCert: nodeFile}
	cfg.Players.CoordinatorKey = filepath.Join(dir, "coord", player.PublicKeyFile)
	cfg.FrameRate, cfg.DrainTimeout, cfg.ShutdownGrace = 50, Duration{}, Duration{200 * time.Millisecond}
	cfg.Discovery.Arch = "broadcast"
	return cfg
}

// TestHostileTokens: every misuse of a token is refused and counted under
// its reason: a token used at node 1 and replayed at node 2 (the token
// names node 1), the same replayed at node 1 after it restarted (its
// nonces are kept in its data directory), a second login of a player in
// game, a token for another world; a Rejoin naming an avatar another
// session plays.
func TestHostileTokens(t *testing.T) {
	dir := t.TempDir()
	cfg1, ca := testNodeConfig(t, dir)
	_ = cfg1
	if _, err := player.InitKeys(filepath.Join(dir, "coord"), nil); err != nil {
		t.Fatal(err)
	}
	key, err := player.LoadPrivateKey(filepath.Join(dir, "coord"))
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := hostileConfig(t, dir, ca, 1), hostileConfig(t, dir, ca, 2)
	n1, n2 := startHostile(t, c1), startHostile(t, c2)
	defer n2.shutdown(t)
	token := func(p, world string, node uint32) []byte {
		tok, err := player.IssueToken(key, player.PlayerID(p), player.Audience{World: world, Node: node}, time.Now(), 2*time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	join := func(n *hostileNode, tok []byte) (*player.Client, error) {
		conn, err := player.DialWS(ctx, "ws://"+n.d.PlayerWSAddr().String()+"/")
		if err != nil {
			t.Fatal(err)
		}
		c, err := player.Join(ctx, conn, tok)
		if err != nil {
			conn.Close()
		}
		return c, err
	}
	refused := func(what string, n *hostileNode, tok []byte, want player.Code) {
		t.Helper()
		_, err := join(n, tok)
		var re *player.RefusedError
		if !errors.As(err, &re) || re.Code != want {
			t.Errorf("%s: %v, want a refusal with code %v", what, err, want)
		}
	}
	alice := token("alice", "main", 1)
	if _, err := join(n1, alice); err != nil {
		t.Fatalf("alice at node 1: %v", err)
	}
	refused("alice's token replayed at node 2", n2, alice, player.CodeBadToken)
	refused("a token for another world", n1, token("bob", "other", 1), player.CodeBadToken)
	refused("alice logging in again at node 1", n1, token("alice", "main", 1), player.CodeDuplicate)
	if _, body := n1.get(t, "/metrics", ""); !strings.Contains(body, `overworld_player_refusals_total{reason="audience"} 1`) ||
		!strings.Contains(body, `overworld_player_refusals_total{reason="duplicate"} 1`) {
		t.Errorf("node 1's refusals:\n%s", grepLines(body, "refusals_total"))
	}
	if _, body := n2.get(t, "/metrics", ""); !strings.Contains(body, `overworld_player_refusals_total{reason="audience"} 1`) {
		t.Errorf("node 2's refusals:\n%s", grepLines(body, "refusals_total"))
	}

	// Node 1 restarts: alice's token is still spent there.
	n1.shutdown(t)
	n1 = startHostile(t, c1)
	defer n1.shutdown(t)
	refused("alice's token replayed at node 1 after its restart", n1, alice, player.CodeBadToken)
	if _, body := n1.get(t, "/metrics", ""); !strings.Contains(body, `overworld_player_refusals_total{reason="replayed"} 1`) {
		t.Errorf("node 1's refusals after the restart:\n%s", grepLines(body, "refusals_total"))
	}
	if _, err := join(n1, token("carol", "main", 1)); err != nil {
		t.Fatalf("a fresh token after the restart: %v", err)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestUnknownNodeID: a peer whose certificate the cluster CA signed, but
// for a node in no peer list, fails the handshake and is counted; so does
// a peer with no certificate, and one whose certificate is revoked (after
// a reload). Once the node is admitted (Members.Add), it connects.
func TestUnknownNodeID(t *testing.T) {
	dir := t.TempDir()
	cfg, ca := testNodeConfig(t, dir)
	cfg.Listen.Admin = "127.0.0.1:0"
	cfg.DrainTimeout = Duration{}
	cfg.Peers = []PeerConfig{{ID: 2, Addr: "127.0.0.1:1"}}
	cfg.Discovery.Arch = "broadcast"
	rev := filepath.Join(dir, "revoked")
	if err := os.WriteFile(rev, []byte("# none yet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.TLS.Revoked = rev
	n := startHostile(t, cfg)
	defer n.shutdown(t)
	addr := n.d.NodeAddr().String()

	stranger := func(id wire.NodeID) error {
		data, err := ca.Issue(id, time.Now(), 10*time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		ident, err := pki.ParseNode(data, ca)
		if err != nil {
			t.Fatal(err)
		}
		q, err := ListenQUIC("127.0.0.1:0", ident)
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := q.Dial(ctx, 1, addr)
		if err != nil {
			return err
		}
		// The server refuses after the client's flight: the connection
		// closes at once.
		select {
		case <-c.Done():
			return errors.New("closed by the node")
		case <-time.After(time.Second):
			c.Close()
			return nil
		}
	}
	if err := stranger(3); err == nil {
		t.Fatal("node 3, in no peer list, connected")
	}
	if _, body := n.get(t, "/metrics", ""); !strings.Contains(body, `overworld_peer_refusals_total{reason="not_member"} 1`) {
		t.Errorf("refusals:\n%s", grepLines(body, "peer_refusals"))
	}
	// A client with no certificate at all.
	nctx, ncancel := context.WithTimeout(context.Background(), 5*time.Second)
	if c, err := quic.DialAddr(nctx, addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{ALPN}}, quicConfig()); err == nil {
		select {
		case <-c.Context().Done():
		case <-time.After(time.Second):
			t.Error("a peer without a certificate stayed connected")
		}
		c.CloseWithError(0, "")
	}
	ncancel()
	if _, body := n.get(t, "/metrics", ""); !strings.Contains(body, `overworld_peer_refusals_total{reason="no_certificate"} 1`) {
		t.Errorf("refusals:\n%s", grepLines(body, "peer_refusals"))
	}
	n.d.Members().Add(3)
	if err := stranger(3); err != nil {
		t.Fatalf("node 3, once admitted: %v", err)
	}
	if err := os.WriteFile(rev, []byte("node 3 # compromised\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := n.d.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := stranger(3); err == nil {
		t.Fatal("node 3, revoked, connected")
	}
	if _, body := n.get(t, "/metrics", ""); !strings.Contains(body, `overworld_peer_refusals_total{reason="revoked"} 1`) {
		t.Errorf("refusals:\n%s", grepLines(body, "peer_refusals"))
	}
}

// TestAdminSecret: without admin_token_file, /debug/ and /admin/ answer
// loopback clients only and /metrics anyone; with it, /debug/world,
// /metrics and /admin/ need the bearer secret (refusals counted),
// /healthz does not.
func TestAdminSecret(t *testing.T) {
	dir := t.TempDir()
	cfg, _ := testNodeConfig(t, dir)
	d := &Daemon{counters: new(Counters)}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	for _, c := range []struct {
		remote    string
		sensitive bool
		want      int
	}{
		{"127.0.0.1:5000", true, http.StatusOK}, {"[::1]:5000", true, http.StatusOK},
		{"10.1.2.3:5000", true, http.StatusForbidden}, {"10.1.2.3:5000", false, http.StatusOK},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/debug/world", nil)
		r.RemoteAddr = c.remote
		d.authorized(ok, c.sensitive).ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("no secret, client %s, sensitive %v: %d, want %d", c.remote, c.sensitive, w.Code, c.want)
		}
	}
	if d.counters.AdminRefused.Load() != 1 {
		t.Errorf("%d refusals counted, want 1", d.counters.AdminRefused.Load())
	}
	secret := "0123456789abcdef-secret"
	cfg.Listen.Admin = "127.0.0.1:0"
	cfg.Listen.AdminTokenFile = filepath.Join(dir, "admin.secret")
	cfg.DrainTimeout = Duration{}
	if err := os.WriteFile(cfg.Listen.AdminTokenFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n := startHostile(t, cfg)
	defer n.shutdown(t)
	for _, p := range []string{"/debug/world", "/debug/authority", "/metrics", "/admin/handoff"} {
		if code, _ := n.get(t, p, ""); code != http.StatusUnauthorized {
			t.Errorf("%s without the secret: %d", p, code)
		}
		if code, _ := n.get(t, p, "wrong-secret-wrong-secret"); code != http.StatusUnauthorized {
			t.Errorf("%s with a wrong secret: %d", p, code)
		}
	}
	if code, _ := n.get(t, "/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	if code, body := n.get(t, "/metrics", secret); code != http.StatusOK || !strings.Contains(body, "overworld_admin_refusals_total 8") {
		t.Errorf("/metrics with the secret: %d\n%s", code, grepLines(body, "admin_refusals"))
	}
	if code, _ := n.get(t, "/debug/world", secret); code != http.StatusOK {
		t.Errorf("/debug/world with the secret: %d", code)
	}
}

// TestWSS: with tls.player_dev_cert the WebSocket endpoint serves wss://
// (a self-signed certificate made at start): a player joins over it, and
// a plain ws:// client gets no session.
func TestWSS(t *testing.T) {
	dir := t.TempDir()
	_, ca := testNodeConfig(t, dir)
	if _, err := player.InitKeys(filepath.Join(dir, "coord"), nil); err != nil {
		t.Fatal(err)
	}
	key, err := player.LoadPrivateKey(filepath.Join(dir, "coord"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := hostileConfig(t, dir, ca, 1)
	cfg.TLS.PlayerDevCert = true
	n := startHostile(t, cfg)
	defer n.shutdown(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tok, _ := player.IssueToken(key, "alice", player.Audience{World: "main", Node: 1}, time.Now(), time.Minute, nil)
	if conn, err := player.DialWS(ctx, "ws://"+n.d.PlayerWSAddr().String()+"/"); err == nil {
		if _, err := player.Join(ctx, conn, tok); err == nil {
			t.Fatal("a plain ws:// client joined a wss:// endpoint")
		}
		conn.Close()
	}
	conn, err := player.DialWSTLS(ctx, "wss://"+n.d.PlayerWSAddr().String()+"/", &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := player.Join(ctx, conn, tok); err != nil {
		t.Fatalf("join over wss://: %v", err)
	}
}
