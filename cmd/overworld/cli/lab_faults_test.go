package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tinyFaults is a run of a fraction of a second of wall time.
var tinyFaults = []string{"lab", "faults", "--nodes", "4", "--players-per-node", "2", "--duration", "6s", "--migrations", "8",
	"--crashes", "1", "--write-rate", "4", "--loss", "0.02", "--dup", "0.01", "--jitter", "10ms", "--seed", "3", "--quiet"}

// TestLabFaultsGolden runs a tiny fault run and compares its faults.json
// with the checked-in one (regenerate with -update).
func TestLabFaultsGolden(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", append(tinyFaults, "--out", dir)...)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"objects_lost", "acked_writes_lost", "writes_applied_twice", "duplicate_primaries", "failover p50 / p99", "migration pause"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"faults-migrations.csv", "faults-failovers.csv", "faults-cdf.png"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(dir, "faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "lab-faults-tiny.golden.json")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if string(got) != string(want) {
		t.Errorf("faults.json differs from %s:\n%s", golden, got)
	}
}

// TestLabFaultsInvariantFails: an invariant that fails (here objects_lost,
// with a budget no failover meets) exits 1 naming it, after writing the
// files.
func TestLabFaultsInvariantFails(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := runCLI(t, "", append(tinyFaults, "--out", dir, "--failover-budget", "1ms", "--no-plots")...)
	if code != 1 || !strings.Contains(errs, "invariant failed: objects_lost = ") {
		t.Errorf("exit %d, stderr %q; want 1 and a message naming objects_lost", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "faults.json")); err != nil {
		t.Error(err)
	}
}

func TestLabFaultsBadUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--arch", "mesh"}, "--arch"},
		{[]string{"--nodes", "1"}, "--nodes 1"},
		{[]string{"--nodes", "0"}, "--nodes 0"},
		{[]string{"--migrations", "-1"}, "--migrations -1"},
		{[]string{"--crashes", "-3"}, "--crashes -3"},
		{[]string{"--partitions", "-1"}, "--partitions -1"},
		{[]string{"--failover-budget", "0s"}, "--failover-budget"},
		{[]string{"--failover-budget", "-1s"}, "--failover-budget"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--duration", "2s"}, "duration"},
		{[]string{"--loss", "1"}, "loss"},
		{[]string{"--dup", "-0.5"}, "--dup"},
		{[]string{"--reorder", "1"}, "--reorder"},
		{[]string{"--jitter", "-5ms"}, "jitter"},
		{[]string{"--write-rate", "-1"}, "write rate"},
		{[]string{"--map", "hex"}, "--map"},
		{[]string{"--players-per-node", "0"}, "--players-per-node"},
		{[]string{"--net", "lan"}, "--net"},
		{[]string{"--crashes", "x"}, "invalid argument"},
		{[]string{"--bogus"}, "unknown flag"},
		{[]string{"extra"}, "unknown command"},
	} {
		code, out, errs := runCLI(t, "", append([]string{"lab", "faults", "--out", dir, "--quiet"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message naming %q", c.args, code, out, errs, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad usage wrote %d files", len(entries))
	}
}
