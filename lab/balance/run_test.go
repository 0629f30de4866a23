package balance

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/report"
)

// TestRunTiny runs two seeded runs (one in the sweeps) and writes every
// output; the same seed gives the same table, whatever the workers (not
// checked with -short).
func TestRunTiny(t *testing.T) {
	cfg := SmallConfig()
	cfg.Runs, cfg.SweepRuns, cfg.Samples, cfg.Workers = 2, 1, 200, 1
	rep, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.A) != 2 || len(rep.B) != 2 || len(rep.Sweep) == 0 {
		t.Fatalf("%d A runs, %d B runs, %d sweep runs", len(rep.A), len(rep.B), len(rep.Sweep))
	}
	var a bytes.Buffer
	if err := rep.WriteTable(&a); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	csvs, err := report.WriteFiles(rep, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range csvs {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 || filepath.Dir(p) != dir {
			t.Errorf("%s: %v", p, err)
		}
	}
	if testing.Short() {
		return
	}
	cfg.Workers = 2
	again, err := Run(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := again.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	strip := func(s string) string { // the run time line differs
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if !strings.HasPrefix(l, "ran in") {
				keep = append(keep, l)
			}
		}
		return strings.Join(keep, "\n")
	}
	if strip(a.String()) != strip(b.String()) {
		t.Error("1 and 2 workers print different tables")
	}
}

func TestConfigValidate(t *testing.T) {
	for name, mod := range map[string]func(*Config){
		"runs":    func(c *Config) { c.Runs = 0 },
		"sweep":   func(c *Config) { c.SweepRuns = -1 },
		"samples": func(c *Config) { c.Samples = 0 },
		"return":  func(c *Config) { c.ReturnRates = []float64{2} },
		"F":       func(c *Config) { c.F = []float64{-1} },
	} {
		c := SmallConfig()
		mod(&c)
		if _, err := Run(c, nil); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%s: %v, want lab.ErrConfig", name, err)
		}
	}
	c := SmallConfig()
	c.Cluster = "Atlantis"
	if _, err := Run(c, nil); !errors.Is(err, lab.ErrConfig) || !strings.Contains(err.Error(), "Atlantis") {
		t.Errorf("unknown cluster city: %v", err)
	}
}
