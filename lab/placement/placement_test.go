package placement

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/overworld/overworld/lab"
)

// TestSmallRun runs the small configuration and checks what holds at any
// scale: the plane is never better than the optimum, every snapshot has
// players, the sweep and every policy ran, and the files are written.
func TestSmallRun(t *testing.T) {
	cfg := SmallConfig()
	cfg.Hours = 4
	rep, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Players.Snapshots {
		if s.Players == 0 || s.Plane < s.Optimum-1e-9 || s.Static < s.Optimum-1e-9 {
			t.Errorf("snapshot %+v: want players, plane and static ≥ optimum", s)
		}
	}
	if len(rep.Regions) != 5 {
		t.Fatalf("%d region runs, want 5", len(rep.Regions))
	}
	for _, g := range rep.Regions {
		if len(g.Ratio) != cfg.Hours {
			t.Errorf("%s: %d hourly ratios, want %d", g.Policy, len(g.Ratio), cfg.Hours)
		}
		for _, x := range g.Ratio {
			if x < 1-1e-9 {
				t.Errorf("%s: ratio %v below 1", g.Policy, x)
			}
		}
	}
	if rep.Regions[0].Migrations != 0 {
		t.Errorf("no policy: %d migrations, want 0", rep.Regions[0].Migrations)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "out")
	files, err := rep.WriteCSV(dir)
	if err != nil || len(files) != 2 {
		t.Fatalf("csv: %v, %v", files, err)
	}
	if files, err = rep.WritePlots(dir); err != nil || len(files) != 2 {
		t.Fatalf("plots: %v, %v", files, err)
	}
	if testing.Verbose() {
		os.Stdout.Write(b.Bytes())
	}
}

func TestConfigErrors(t *testing.T) {
	for _, mut := range []func(*Config){
		func(c *Config) { c.Players = -1 },
		func(c *Config) { c.Headroom = 0.5 },
		func(c *Config) { c.JoinProbes = 99 },
		func(c *Config) { c.Hours = 1 },
		func(c *Config) { c.EuropeFrom = 2 },
		func(c *Config) { c.Sweep = []float64{0.2} },
		func(c *Config) { c.SlackSweep = []float64{1.5} },
		func(c *Config) { c.Servers = []string{"Atlantis", "Frankfurt"} },
	} {
		c := SmallConfig()
		mut(&c)
		if _, err := Run(c, nil); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%+v: err %v, want lab.ErrConfig", c, err)
		}
	}
}
