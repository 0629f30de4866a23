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
	for _, c := range []struct {
		name string
		args []string
		cfg  string // written to a file passed with --config
		want string
	}{
		{"ca init again", []string{"ca", "init", "--dir", ca}, "", "already exists"},
		{"ca init no dir", []string{"ca", "init"}, "", "--dir is required"},
		{"ca issue no CA", []string{"ca", "issue", "--dir", filepath.Join(dir, "none"), "--node", "2", "--out", filepath.Join(dir, "x.pem")}, "", "ca.crt"},
		{"ca issue bad node", []string{"ca", "issue", "--dir", ca, "--node", "-5", "--out", filepath.Join(dir, "x.pem")}, "", "--node -5"},
		{"ca issue overwrite", []string{"ca", "issue", "--dir", ca, "--node", "1", "--out", pem}, "", "already exists"},
		{"ca issue too long", []string{"ca", "issue", "--dir", ca, "--node", "3", "--out", filepath.Join(dir, "y.pem"), "--validity", "200000h"}, "", "outlive the CA"},
		{"node no config", []string{"node"}, "", "--config FILE is required"},
		{"node missing file", []string{"node", "--config", filepath.Join(dir, "nope.toml")}, "", "no such file"},
		{"unknown key", nil, top("colour = \"red\"\n"), "unknown key(s) colour"},
		{"bad toml", nil, "id = [", "bad config"},
		{"bad frame rate", nil, top("frame_rate = 0.0\n"), "frame_rate 0"},
		{"bad address", nil, strings.Replace(good, "127.0.0.1:0", "nowhere", 1), "listen.node \"nowhere\""},
		{"unknown rendezvous", nil, good + "[discovery]\nrendezvous = 9\n", "rendezvous 9"},
		{"duplicate peer", nil, good + "[[peers]]\nid = 2\naddr = \"127.0.0.1:1\"\n[[peers]]\nid = 2\naddr = \"127.0.0.1:2\"\n", "node 2 listed twice"},
		{"unknown city", nil, top("emulate_latency = true\ncity = \"Atlantis\"\n"), "\"Atlantis\" is not a WonderNetwork city"},
		{"wrong certificate", nil, strings.Replace(good, "id = 1", "id = 2\n[discovery]\nrendezvous = 2", 1), "names node 1 but id is 2"},
		{"bad map", nil, good + "[game]\nmap = \"round\"\n", "game.map \"round\""},
		{"slot beyond nodes", nil, good + "[game]\nslot = 3\n", "game.slot 3"},
		{"player endpoint", nil, strings.Replace(good, "admin = \"\"", "admin = \"\"\nplayer_ws = \"127.0.0.1:0\"", 1), "players.coordinator_key is required"},
		{"bad coordinator key", nil, strings.Replace(good, "admin = \"\"", "admin = \"\"\nplayer_quic = \"127.0.0.1:0\"\n[players]\ncoordinator_key = \"nope.pub\"", 1), "players.coordinator_key"},
		{"cluster bad nodes", []string{"cluster", "--nodes", "0"}, "", "--nodes 0"},
		{"cluster bad arch", []string{"cluster", "--arch", "ring"}, "", "--arch \"ring\""},
		{"cluster bots not a multiple", []string{"cluster", "--nodes", "3", "--bots", "10"}, "", "--bots 10"},
	} {
		args := c.args
		if c.cfg != "" {
			path := filepath.Join(t.TempDir(), "node.toml")
			if err := os.WriteFile(path, []byte(c.cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			args = []string{"node", "--config", path}
		}
		code, out, errs := run(t, "", args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, no output, an error containing %q", c.name, code, out, errs, c.want)
		}
	}
}
