package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overworld/overworld/live"
)

// TestMain lets the cluster tests re-execute this test binary as the
// command line (clusterConfig sets cliMainEnv for its node processes).
func TestMain(m *testing.M) {
	if os.Getenv(cliMainEnv) == "1" {
		os.Exit(Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func TestNodePrintConfig(t *testing.T) {
	code, out, errs := run(t, "", "node", "--print-config")
	if code != 0 || out != live.DefaultConfigTOML {
		t.Fatalf("exit %d, stderr %q; stdout is not the default configuration", code, errs)
	}
}

func TestCAAndNodeBadInput(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	if code, out, errs := run(t, "", "ca", "init", "--dir", ca); code != 0 || !strings.Contains(out, "created CA") {
		t.Fatalf("ca init: exit %d: %s %s", code, out, errs)
	}
	pem := filepath.Join(dir, "n1.pem")
	if code, _, errs := run(t, "", "ca", "issue", "--dir", ca, "--node", "1", "--out", pem); code != 0 {
		t.Fatalf("ca issue: exit %d: %s", code, errs)
	}
	if st, err := os.Stat(pem); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("node file mode %v, err %v: want 0600", st.Mode().Perm(), err)
	}
	// A valid configuration for node 1 with those files.
	tables := fmt.Sprintf("[tls]\nca_cert = %q\nnode_cert = %q\n[listen]\nnode = \"127.0.0.1:0\"\nadmin = \"\"\n",
		filepath.Join(ca, "ca.crt"), pem)
	good := "id = 1\n" + tables
	top := func(keys string) string { return "id = 1\n" + keys + tables }
	badInc := t.TempDir()
	if err := os.WriteFile(filepath.Join(badInc, "incarnation"), []byte("many\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	usedUp := t.TempDir()
	if err := os.WriteFile(filepath.Join(usedUp, "incarnation"), []byte("65535\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		args  []string
		cfg   string   // written to a file passed with --config
		extra []string // flags after --config FILE
		want  string
	}{
		{"ca init again", []string{"ca", "init", "--dir", ca}, "", nil, "already exists"},
		{"ca init no dir", []string{"ca", "init"}, "", nil, "--dir is required"},
		{"ca issue no CA", []string{"ca", "issue", "--dir", filepath.Join(dir, "none"), "--node", "2", "--out", filepath.Join(dir, "x.pem")}, "", nil, "ca.crt"},
		{"ca issue bad node", []string{"ca", "issue", "--dir", ca, "--node", "-5", "--out", filepath.Join(dir, "x.pem")}, "", nil, "--node -5"},
		{"ca issue overwrite", []string{"ca", "issue", "--dir", ca, "--node", "1", "--out", pem}, "", nil, "already exists"},
		{"ca issue too long", []string{"ca", "issue", "--dir", ca, "--node", "3", "--out", filepath.Join(dir, "y.pem"), "--validity", "200000h"}, "", nil, "outlive the CA"},
		{"node no config", []string{"node"}, "", nil, "--config FILE is required"},
		{"node missing file", []string{"node", "--config", filepath.Join(dir, "nope.toml")}, "", nil, "no such file"},
		{"unknown key", nil, top("colour = \"red\"\n"), nil, "unknown key(s) colour"},
		{"bad toml", nil, "id = [", nil, "bad config"},
		{"bad frame rate", nil, top("frame_rate = 0.0\n"), nil, "frame_rate 0"},
		{"node ID beyond 15 bits", nil, strings.Replace(good, "id = 1", "id = 40000", 1), nil, "id 40000: want 1 to 32767"},
		{"node ID 0", nil, strings.Replace(good, "id = 1", "id = 0", 1), nil, "id 0: want 1 to 32767"},
		{"negative drain timeout", nil, top("drain_timeout = \"-1s\"\n"), nil, "drain_timeout -1s"},
		{"bad drain timeout flag", nil, good, []string{"--drain-timeout", "11m"}, "drain_timeout 11m0s"},
		{"bad incarnation file", nil, good, []string{"--data-dir", badInc}, `holds "many\n", not an incarnation`},
		{"incarnations used up", nil, good, []string{"--data-dir", usedUp}, "used all of its 65535 incarnations"},
		{"bad address", nil, strings.Replace(good, "127.0.0.1:0", "nowhere", 1), nil, "listen.node \"nowhere\""},
		{"unknown rendezvous", nil, good + "[discovery]\nrendezvous = 9\n", nil, "rendezvous 9"},
		{"duplicate peer", nil, good + "[[peers]]\nid = 2\naddr = \"127.0.0.1:1\"\n[[peers]]\nid = 2\naddr = \"127.0.0.1:2\"\n", nil, "node 2 listed twice"},
		{"bad peer player_quic", nil, good + "[[peers]]\nid = 2\naddr = \"127.0.0.1:1\"\nplayer_quic = \"nowhere\"\n", nil, `peers[0] (node 2): player_quic "nowhere": want host:port`},
		{"bad peer player_ws", nil, good + "[[peers]]\nid = 2\naddr = \"127.0.0.1:1\"\nplayer_ws = \"http://x/play\"\n", nil, `player_ws "http://x/play": want a ws:// or wss:// URL`},
		{"unknown city", nil, top("emulate_latency = true\ncity = \"Atlantis\"\n"), nil, "\"Atlantis\" is not a WonderNetwork city"},
		{"wrong certificate", nil, strings.Replace(good, "id = 1", "id = 2\n[discovery]\nrendezvous = 2", 1), nil, "names node 1 but id is 2"},
		{"bad map", nil, good + "[game]\nmap = \"round\"\n", nil, "game.map \"round\""},
		{"slot beyond nodes", nil, good + "[game]\nslot = 3\n", nil, "game.slot 3"},
		{"player endpoint", nil, strings.Replace(good, "admin = \"\"", "admin = \"\"\nplayer_ws = \"127.0.0.1:0\"", 1), nil, "players.coordinator_key is required"},
		{"bad coordinator key", nil, strings.Replace(good, "admin = \"\"", "admin = \"\"\nplayer_quic = \"127.0.0.1:0\"\n[players]\ncoordinator_key = \"nope.pub\"", 1), nil, "players.coordinator_key"},
		{"cluster bad nodes", []string{"cluster", "--nodes", "0"}, "", nil, "--nodes 0"},
		{"cluster bad arch", []string{"cluster", "--arch", "ring"}, "", nil, "--arch \"ring\""},
		{"cluster bots not a multiple", []string{"cluster", "--nodes", "3", "--bots", "10"}, "", nil, "--bots 10"},
		{"cluster kill unknown node", []string{"cluster", "--nodes", "3", "--kill", "5@1s"}, "", nil, `--kill "5@1s": want NODE@TIME with NODE from 1 to 4`},
		{"cluster kill no time", []string{"cluster", "--nodes", "3", "--arch", "broadcast", "--kill", "3"}, "", nil, `--kill "3": want NODE@TIME with NODE from 1 to 3`},
		{"cluster term too late", []string{"cluster", "--duration", "10s", "--term", "2@10s"}, "", nil, `TIME "10s": want a duration from 0 to --duration (10s)`},
		{"cluster bad drain timeout", []string{"cluster", "--drain-timeout", "-1s"}, "", nil, "--drain-timeout -1s"},
		{"cluster bad prefetch", []string{"cluster", "--prefetch", "-1"}, "", nil, "--prefetch -1"},
		{"cluster bad fetch-ahead", []string{"cluster", "--fetch-ahead", "3s"}, "", nil, "--fetch-ahead 3s"},
	} {
		args := c.args
		if c.cfg != "" {
			path := filepath.Join(t.TempDir(), "node.toml")
			if err := os.WriteFile(path, []byte(c.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append([]string{"node", "--config", path}, c.extra...)
		}
		code, out, errs := run(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, no output, an error containing %q", c.name, code, out, errs, c.want)
		}
	}
}
