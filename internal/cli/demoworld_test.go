package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemoWorldSmall(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "demo", "--nodes", "4", "--players-per-node", "2", "--duration", "5s", "--seed", "3", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"4 nodes × 2 bots = 8 players", "directory architecture", "New York", "rendezvous",
		"player-to-node RTT mean", "per-node bandwidth", "p95 of 1 s", "missing replicas", "0 ms", "100 ms", "400 ms",
		"discovery latency", "replica staleness", "bytes per update", "× real time"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"summary.json", "series.csv", "nodes.csv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	for _, arch := range []string{"broadcast", "client-server"} {
		code, out, errs = runCLI(t, "", "demo", "--arch", arch, "--nodes", "3", "--players-per-node", "1", "--duration", "3s", "--map", "sqr")
		if code != 0 || !strings.Contains(out, arch+" architecture") {
			t.Errorf("%s: exit %d, stderr %q:\n%s", arch, code, errs, out)
		}
	}
}

func TestDemoWorldBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--arch", "mesh"},
		{"demo", "--nodes", "0"},
		{"demo", "--nodes", "100000"},
		{"demo", "--players-per-node", "0"},
		{"demo", "--duration", "0s"},
		{"demo", "--workers", "-1"},
		{"demo", "--duration", "2h"},
		{"demo", "--map", "round"},
		{"demo", "--seed", "x"},
		{"demo", "stray"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
}

func TestLabWorldQuick(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "lab", "world", "--quick", "--nodes", "4,6", "--duration", "3s", "--out", dir, "--quiet")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"Fig. 12(a)", "client-server", "broadcast", "directory", "order of magnitude", "overhead factor", "missing replicas"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"world-bandwidth.csv", "world-bandwidth.png", "world-classes.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "world-bandwidth.csv"))
	if n := strings.Count(string(csv), "\n"); n != 7 {
		t.Errorf("world-bandwidth.csv has %d lines, want a header and 6 runs:\n%s", n, csv)
	}
}

func TestLabWorldBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"lab", "world", "--nodes", "0"},
		{"lab", "world", "--nodes", "4,x"},
		{"lab", "world", "--nodes", "4,4"},
		{"lab", "world", "--nodes", ""},
		{"lab", "world", "--arch", "mesh"},
		{"lab", "world", "--arch", "directory,directory"},
		{"lab", "world", "--duration", "0s"},
		{"lab", "world", "--map", "round"},
		{"lab", "world", "--slice", "0"},
		{"lab", "world", "--players-per-node", "0"},
		{"lab", "world", "stray"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
}
