package live

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/world"
)

// walkers plugs the test game into the player gateway: an avatar is a
// walker circling where it joined; an input is one byte, and any other
// length is refused.
type walkers struct{ g *testGame }

func (w walkers) Join(n *node.Node, _ player.PlayerID) (world.ObjectID, error) {
	obj, err := n.Spawn(n.Now(), w.g.walker, nil)
	if err != nil {
		return 0, err
	}
	return obj.State().ID(), nil
}

func (w walkers) Input(n *node.Node, _ world.ObjectID, in []byte) error {
	if len(in) != 1 {
		return fmt.Errorf("walkers: %d-byte input", len(in))
	}
	return nil
}

func (w walkers) Leave(n *node.Node, avatar world.ObjectID) { _ = n.Delete(n.Now(), avatar) }

type oneByte struct{}

func (oneByte) Input(player.Welcome, *player.View, time.Duration) []byte { return []byte{1} }

// TestDaemonPlayers runs a daemon with both player endpoints. Players
// join over QUIC (verifying the node's certificate with the cluster CA)
// and over WebSocket and see their avatars; a forged, an expired and a
// replayed token and a malformed join are refused, each counted under its
// reason in /metrics, without any player state (the players gauge and the
// joins count only the good players). On shutdown every player is told the
// node is shutting down, and no connection is cut.
func TestDaemonPlayers(t *testing.T) {
	dir := t.TempDir()
	cfg, ca := testNodeConfig(t, dir)
	if _, err := player.InitKeys(filepath.Join(dir, "coord"), nil); err != nil {
		t.Fatal(err)
	}
	key, err := player.LoadPrivateKey(filepath.Join(dir, "coord"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = ListenConfig{Node: "127.0.0.1:0", Admin: "127.0.0.1:0", PlayerQUIC: "127.0.0.1:0", PlayerWS: "127.0.0.1:0"}
	cfg.Players.CoordinatorKey = filepath.Join(dir, "coord", player.PublicKeyFile)
	cfg.FrameRate = 50
	g := newTestGame()
	if _, err := NewDaemon(cfg, Game{Registry: g.registry}, nil); err == nil || !errors.Is(err, ErrConfig) {
		t.Fatalf("a daemon with a player endpoint but no player controller: %v, want ErrConfig", err)
	}
	d, err := NewDaemon(cfg, Game{Registry: g.registry, Players: walkers{g}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	metrics := func() string {
		resp, err := http.Get("http://" + d.AdminAddr().String() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}

	quicAddr := d.PlayerQUICAddr().String()
	wsURL := "ws://" + d.PlayerWSAddr().String() + "/"
	verify := &tls.Config{RootCAs: ca.Pool, ServerName: pki.DNSName(1)}
	// The players' own context outlives the daemon's: the node ends
	// their sessions.
	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	dctx, dcancel := context.WithTimeout(cctx, 10*time.Second)
	defer dcancel()
	token := func(p string, issued time.Time, k ed25519.PrivateKey) []byte {
		tok, err := player.IssueToken(k, player.PlayerID(p), player.Audience{World: "main", Node: 1}, issued, 5*time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	join := func(tok []byte, ws bool) (*player.Client, error) {
		var conn player.Conn
		var err error
		if ws {
			conn, err = player.DialWS(dctx, wsURL)
		} else {
			conn, err = player.DialQUIC(dctx, quicAddr, verify)
		}
		if err != nil {
			t.Fatal(err)
		}
		c, err := player.Join(dctx, conn, tok)
		if err != nil {
			conn.Close()
		}
		return c, err
	}
	// A client that does not trust the cluster CA refuses the node.
	if _, err := player.DialQUIC(dctx, quicAddr, &tls.Config{ServerName: pki.DNSName(1)}); err == nil {
		t.Error("a client without the cluster CA accepted the node's certificate")
	}

	good := token("alice", time.Now(), key)
	alice, err := join(good, false)
	if err != nil {
		t.Fatalf("alice over QUIC: %v", err)
	}
	bob, err := join(token("bob", time.Now(), key), true)
	if err != nil {
		t.Fatalf("bob over WebSocket: %v", err)
	}
	_, forger, _ := ed25519.GenerateKey(nil)
	for _, c := range []struct {
		name string
		tok  []byte
		ws   bool
		want player.Code
	}{
		{"forged", token("mallory", time.Now(), forger), false, player.CodeBadToken},
		{"expired", token("carol", time.Now().Add(-10*time.Minute), key), true, player.CodeBadToken},
		{"replayed", good, false, player.CodeBadToken},
		{"garbage", []byte{0xff}, false, player.CodeBadToken},
	} {
		_, err := join(c.tok, c.ws)
		var re *player.RefusedError
		if !errors.As(err, &re) || re.Code != c.want {
			t.Errorf("%s token: %v, want a refusal with code %v", c.name, err, c.want)
		}
	}
	// A first message that is not a Join.
	conn, err := player.DialQUIC(dctx, quicAddr, verify)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.WriteMessage(dctx, []byte{player.Version, 99, 0}); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.ReadMessage(dctx, player.MaxMessage)
	var re *player.RefusedError
	if err == nil {
		_, err = (&player.Client{}).Handle(msg)
	}
	if !errors.As(err, &re) || re.Code != player.CodeMalformed {
		t.Errorf("a malformed first message: %v, want a refusal with code malformed", err)
	}
	conn.Close()

	runs := make(chan error, 2)
	for _, c := range []*player.Client{alice, bob} {
		go func() { runs <- c.Run(cctx, oneByte{}, 0) }()
	}
	// Both players see their avatars move.
	deadline := time.Now().Add(10 * time.Second)
	for _, c := range []*player.Client{alice, bob} {
		for {
			var st player.ClientStats
			seen := false
			c.Do(func(v *player.View) {
				for _, o := range v.Objects() {
					seen = seen || o.ID == c.Welcome().Avatar
				}
			})
			if st = c.Stats(); st.Applied >= 5 && seen && len(st.RTT) > 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d states applied, avatar in view %v, %d inputs echoed within 10 s", st.Player, st.Applied, seen, len(st.RTT))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	m := metrics()
	for _, want := range []string{"overworld_players 2", "overworld_player_joins_total 2", "overworld_player_connections 2",
		`overworld_player_refusals_total{reason="bad_token"} 2`, `overworld_player_refusals_total{reason="expired"} 1`,
		`overworld_player_refusals_total{reason="replayed"} 1`, `overworld_player_refusals_total{reason="malformed"} 1`,
		`overworld_player_inputs_total{result="bad"} 0`} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if st := d.PlayerStats(); st.Players != 2 || st.Joins != 2 || st.Inputs == 0 {
		t.Errorf("gateway: %d players, %d joins, %d inputs; want 2, 2, > 0", st.Players, st.Joins, st.Inputs)
	}

	cancel()
	for range 2 {
		err := <-runs
		if !errors.As(err, &re) || re.Code != player.CodeShutdown {
			t.Errorf("a player's session ended with %v, want a refusal with code shutdown", err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, "last-run.json"))
	if err != nil || !strings.Contains(string(b), `"player_connections_cut": 0`) || !strings.Contains(string(b), `"primaries_lost": 0`) {
		t.Errorf("last-run.json: %v\n%s", err, b)
	}
}

// TestColyseusConfig: the colyseus architecture needs the game's locator
// (refused as a configuration error without one). The ring's bootstrap
// (discovery.RingMembers) is tested in package discovery.
func TestColyseusConfig(t *testing.T) {
	cfg, _ := testNodeConfig(t, t.TempDir())
	cfg.Discovery.Arch = "colyseus"
	if _, err := NewDaemon(cfg, Game{Registry: newTestGame().registry}, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "colyseus") {
		t.Errorf("colyseus without a locator: %v, want a configuration error", err)
	}
}
