package lab

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEstimateSmall(t *testing.T) {
	cfg := SmallEstimateConfig()
	rep, err := Estimate(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + buf.String())
	for _, want := range []string{"Fig. 6", "Figs. 7–8", "Time variation", "mf-32", "Netvigator"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	dir := t.TempDir()
	files, err := rep.WriteCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	pngs, err := rep.WritePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append(files, pngs...) {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	// Invariants: the reference on measurements (core.Select: exhaustive
	// when cheap, local search otherwise, within a fraction of a percent)
	// is not beaten by more than local search's slack.
	for _, c := range rep.Core {
		for _, g := range c.CostGap {
			if g < -0.02 {
				t.Errorf("%s: cores on estimates beat the optimum by %g", c.Label, -g)
			}
		}
		for k, h := range c.Hit {
			if h < 0 || h > 1 {
				t.Errorf("%s: hit ratio %g at k=%d", c.Label, h, k+1)
			}
		}
	}
}
