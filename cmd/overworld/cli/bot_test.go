package cli

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/player"
)

func TestTokenCommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coord")
	if code, out, errs := runCLI(t, "", "token", "init", "--dir", dir); code != 0 || !strings.Contains(out, "created") {
		t.Fatalf("init: %d %q %q", code, out, errs)
	}
	if code, out, _ := runCLI(t, "", "token", "init", "--dir", dir); code == 0 || out != "" {
		t.Fatalf("second init overwrote the key: %d", code)
	}
	code, out, errs := runCLI(t, "", "token", "issue", "--dir", dir, "--player", "alice", "--node", "3", "--ttl", "2h")
	if code != 0 {
		t.Fatalf("issue: %d %q", code, errs)
	}
	tok, err := player.DecodeToken(out)
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := player.LoadPublicKey(dir)
	v, _ := player.NewVerifier(player.VerifierConfig{Key: pub, Audience: player.Audience{World: player.DefaultWorld, Node: 3}, MaxTTL: 86400e9})
	c, _, _, err := player.ParseToken(tok)
	if err != nil || c.Player != "alice" || c.Expires.Sub(c.Issued) != 7200e9 {
		t.Fatalf("token claims %+v %v", c, err)
	}
	if _, err := v.Verify(tok, c.Issued); err != nil {
		t.Fatalf("issued token refused: %v", err)
	}
	for _, args := range [][]string{
		{"token", "issue", "--player", "alice"},
		{"token", "issue", "--dir", dir, "--player", "has space"},
		{"token", "issue", "--dir", dir, "--player", ""},
		{"token", "issue", "--dir", dir, "--player", "a", "--node", "1", "--ttl", "48h"},
		{"token", "issue", "--dir", dir, "--player", "a"},
		{"token", "issue", "--dir", dir, "--player", "a", "--node", "1", "--world", "has space"},
		{"token", "issue", "--dir", filepath.Join(dir, "missing"), "--player", "a"},
		{"token", "init"},
		{"bot", "--token-dir", dir},
		{"bot", "--addr", "nohost", "--token-dir", dir},
		{"bot", "--addr", "127.0.0.1:1", "--token-dir", dir, "--n", "0"},
		{"bot", "--addr", "127.0.0.1:1", "--token-dir", dir, "--duration", "0s"},
		{"bot", "--addr", "127.0.0.1:1", "--local", "--token-dir", dir},
		{"bot", "--local", "--token-dir", dir, "--map", "round"},
		{"bot", "--local", "--token-dir", filepath.Join(dir, "missing")},
		{"bot", "--local", "--token-dir", dir, "--name", "a b"},
		{"bot", "--addr", "127.0.0.1:1", "--token-dir", dir, "--ca", filepath.Join(dir, "coordinator.pub")},
		{"bot", "--addr", "127.0.0.1:1", "--token-dir", dir, "--ca", filepath.Join(dir, "missing.pem")},
		{"bot", "--local", "--token-dir", dir, "--ca", filepath.Join(dir, "coordinator.pub")},
	} {
		if code, out, errs := runCLI(t, "", args...); code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
}

// TestBotGameDefaultsAreTheNodes checks that the bot command's game
// flags default to a node's default game (seed, map, node count, players
// per node): bots started without them play the map of a node started
// without them.
func TestBotGameDefaultsAreTheNodes(t *testing.T) {
	game := live.DefaultDaemonConfig().Game
	fl := newBotCmd(&env{}).Flags()
	for name, want := range map[string]string{"seed": strconv.FormatUint(game.Seed, 10), "map": game.Map,
		"nodes": strconv.Itoa(game.Nodes), "players-per-node": strconv.Itoa(game.PlayersPerNode)} {
		if got := fl.Lookup(name).DefValue; got != want {
			t.Errorf("bot --%s defaults to %q, a node's game to %q", name, got, want)
		}
	}
}

func TestBotLocal(t *testing.T) {
	t.Parallel() // waits on its own processes and ports most of its time
	if testing.Short() {
		t.Skip("plays 2 s over loopback sockets")
	}
	dir := filepath.Join(t.TempDir(), "coord")
	if code, _, errs := runCLI(t, "", "token", "init", "--dir", dir); code != 0 {
		t.Fatal(errs)
	}
	for _, ws := range []string{"--ws=false", "--ws"} {
		code, out, errs := runCLI(t, "", "bot", "--local", "--token-dir", dir, "--n", "3", "--duration", "2s", ws)
		if code != 0 || strings.Count(out, "bot-") != 3 || !strings.Contains(out, "3 joins, 3 leaves") || !strings.Contains(out, " 0 refused") {
			t.Fatalf("%s: exit %d\n%s\n%s", ws, code, out, errs)
		}
	}
}

// TestBotJSON: --json prints one BotReport: every bot joined and played
// to the end, none dropped.
func TestBotJSON(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 1 s over loopback sockets")
	}
	dir := filepath.Join(t.TempDir(), "coord")
	if code, _, errs := runCLI(t, "", "token", "init", "--dir", dir); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := runCLI(t, "", "bot", "--local", "--token-dir", dir, "--n", "2", "--duration", "1s", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r BotReport
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\nnode: ", 2)[0]), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Joined != 2 || r.Dropped != 0 || r.Failed != 0 || len(r.Bots) != 2 || r.Bots[0].Player != "bot-1" || r.Bots[0].Error != "" ||
		r.Bots[0].Seconds < 0.5 || r.Bots[0].States == 0 || r.Transport != "quic" {
		t.Errorf("report %+v", r)
	}
}
