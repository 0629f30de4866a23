package faults

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/lab"
)

// small is a run of a few seconds: 8 nodes × 4 bots for 15 s, 40
// migrations, one crash with its restart, 8 writes per second, 2% loss,
// 1% duplication and 10 ms of jitter.
func small(seed uint64) Config {
	c := DefaultConfig()
	c.Nodes, c.PlayersPerNode, c.Duration, c.Seed = 8, 4, 15*time.Second, seed
	c.Migrations, c.Crashes, c.WriteRate = 40, 1, 8
	c.Loss, c.Duplicate, c.Jitter = 0.02, 0.01, 10*time.Millisecond
	return c
}

// TestSmallRunHoldsInvariants runs seeded fault schedules and checks that
// every invariant held (the checks ran after every event) and that the
// schedule did what it says: migrations installed, a crash failed over,
// writes acknowledged.
func TestSmallRunHoldsInvariants(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, seed := range seeds {
		r, err := Run(small(seed), nil)
		if err != nil {
			t.Fatal(err)
		}
		if f := r.Failed(); len(f) > 0 {
			t.Errorf("seed %d: %v: %v", seed, f, r.Violations)
		}
		if r.Migrations < 30 || r.Handoffs < r.Migrations/2 || len(r.pauses) == 0 {
			t.Errorf("seed %d: %d migrations accepted, %d handoffs, %d installed", seed, r.Migrations, r.Handoffs, len(r.pauses))
		}
		if r.Crashes != 1 || r.Restarts != 1 || r.Failovers == 0 {
			t.Errorf("seed %d: %d crashes, %d restarts, %d objects failed over", seed, r.Crashes, r.Restarts, r.Failovers)
		}
		if r.Writes < 50 || r.WritesAcked < r.Writes/2 {
			t.Errorf("seed %d: %d writes, %d acknowledged", seed, r.Writes, r.WritesAcked)
		}
		if r.FailoverP50Ms <= 0 || r.FailoverP99Ms > 5000 || r.MigrationPauseP50Ms <= 0 || r.Bandwidth.Total <= 0 || len(r.MissingReplicas) != 3 {
			t.Errorf("seed %d: failover %v/%v ms, pause %v ms, bandwidth %v, missing %v", seed, r.FailoverP50Ms, r.FailoverP99Ms,
				r.MigrationPauseP50Ms, r.Bandwidth.Total, r.MissingReplicas)
		}
		t.Logf("seed %d: %d migrations, %d handoffs, %d failovers (p50 %.0f ms, p99 %.0f ms), pause p99 %.0f ms, %d writes (%d acked)",
			seed, r.Migrations, r.Handoffs, r.Failovers, r.FailoverP50Ms, r.FailoverP99Ms, r.MigrationPauseP99Ms, r.Writes, r.WritesAcked)
	}
}

// TestSameConfigSameReport: the report, and so faults.json, is the same
// for the same configuration.
func TestSameConfigSameReport(t *testing.T) {
	c := small(3)
	c.Duration, c.Migrations = 8*time.Second, 15
	var out [2]bytes.Buffer
	for i := range out {
		r, err := Run(c, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.WriteJSON(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		t.Errorf("two runs of one configuration differ:\n%s\n%s", out[0].String(), out[1].String())
	}
	for _, field := range []string{`"migrations":`, `"crashes":`, `"objects_lost":`, `"acked_writes_lost":`, `"writes_applied_twice":`,
		`"duplicate_primaries":`, `"failover_p50_ms":`, `"failover_p99_ms":`, `"migration_pause_p99_ms":`, `"missing_replicas":`,
		`"bandwidth_per_node":`, `"seed":`, `"settings":`} {
		if !strings.Contains(out[0].String(), field) {
			t.Errorf("faults.json lacks %s", field)
		}
	}
}

// TestWithoutFailoverCrashesLose: with failover off a crash takes its
// node's objects (the checker sees it), and the run reports it.
func TestWithoutFailoverCrashesLose(t *testing.T) {
	c := small(4)
	c.Duration, c.Migrations, c.WriteRate, c.Loss, c.Duplicate, c.Jitter, c.NoFailover = 10*time.Second, 0, 0, 0, 0, 0, true
	r, err := Run(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Crashes != 1 || r.ObjectsLost+r.ObjectsLostUnprotected == 0 || r.Failovers != 0 || r.Settings.Failover {
		t.Errorf("no failover: %d crashes, %d + %d objects lost, %d failovers", r.Crashes, r.ObjectsLost, r.ObjectsLostUnprotected, r.Failovers)
	}
}

func TestWriteFiles(t *testing.T) {
	c := small(5)
	c.Duration, c.Migrations = 6*time.Second, 10
	r, err := Run(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	files, err := r.WriteCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	pngs, err := r.WritePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, pngs...) {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	var tab bytes.Buffer
	if err := r.WriteTable(&tab); err != nil || !strings.Contains(tab.String(), "duplicate_primaries") {
		t.Errorf("table: %v\n%s", err, tab.String())
	}
}

func TestConfigValidate(t *testing.T) {
	if _, err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"arch", func(c *Config) { c.Arch = "mesh" }, "architecture"},
		{"nodes", func(c *Config) { c.Nodes = 1 }, "nodes 1"},
		{"duration", func(c *Config) { c.Duration = time.Second }, "duration"},
		{"migrations", func(c *Config) { c.Migrations = -1 }, "migrations -1"},
		{"crashes", func(c *Config) { c.Crashes = -2 }, "crashes -2"},
		{"partitions", func(c *Config) { c.Partitions = -1 }, "partitions -1"},
		{"loss", func(c *Config) { c.Loss = 1 }, "loss"},
		{"dup", func(c *Config) { c.Duplicate = -0.1 }, "duplication"},
		{"jitter", func(c *Config) { c.Jitter = -time.Millisecond }, "jitter"},
		{"writes", func(c *Config) { c.WriteRate = -1 }, "write rate"},
		{"budget", func(c *Config) { c.FailoverBudget = -time.Second }, "failover budget"},
		{"players", func(c *Config) { c.PlayersPerNode = -1 }, "players per node"},
		{"too few for failover", func(c *Config) { c.Nodes = 2 }, "at least 3 nodes"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		_, err := c.Validate()
		if !errors.Is(err, lab.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an ErrConfig naming %q", tc.name, err, tc.want)
		}
		if _, err := Run(c, nil); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%s: Run: %v, want ErrConfig", tc.name, err)
		}
	}
}
