package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/overworld/overworld/live/localcluster"
	"github.com/overworld/overworld/live/pki"
)

// TestBotThroughPlane: "overworld bot --plane" against a cluster of 3
// node processes and a control plane process: every bot pings the nodes,
// joins where the plane admits it and plays to the end; the plane places
// all of them.
func TestBotThroughPlane(t *testing.T) {
	t.Parallel() // waits on its own processes and ports most of its time
	if testing.Short() {
		t.Skip("starts 4 node processes and a control plane for about 10 s")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	c, err := localcluster.Start(localcluster.Config{Command: []string{exe, "node"}, Env: []string{cliMainEnv + "=1"}, Dir: dir,
		Cities: []string{"New York", "Frankfurt", "Tokyo"}, Arch: "directory", RendezvousCity: "London", Map: "rect",
		PlayersPerNode: 2, Seed: 1, FrameRate: 10, LogLevel: "warn", Players: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(10 * time.Second)
	if err := c.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	pl, err := c.StartPlane(localcluster.PlaneConfig{Command: []string{exe, "control"}, Env: []string{cliMainEnv + "=1"}, Capacity: 3, Poll: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Stop(5 * time.Second)
	if err := pl.WaitReady(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	code, out, errs := run(t, "", "bot", "--plane", pl.URL(), "--token-dir", filepath.Join(dir, "coord"), "--ca", filepath.Join(dir, "ca", pki.CACertFile),
		"--n", "6", "--duration", "5s", "--nodes", "3", "--players-per-node", "2", "--seed", "1", "--map", "rect")
	if code != 0 {
		b, _ := os.ReadFile(pl.LogFile())
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nplane log:\n%s", code, out, errs, b)
	}
	if n := len(regexp.MustCompile(`(?m)^ *bot-\d+ `).FindAllString(out, -1)); n != 6 {
		t.Errorf("%d bots in the table, want 6:\n%s", n, out)
	}
	st := fetchPlaneState(pl.URL())
	if st == nil || st.Stats.Joins != 6 {
		t.Errorf("plane state %+v, want 6 joins", st)
	}
}
