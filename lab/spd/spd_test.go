package spd

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/spd"
)

func smallSPD(t *testing.T) Config {
	c := SmallConfig()
	c.Servers, c.Players, c.Networks, c.ExactPlayers = []int{12}, []int{20}, 2, []int{4}
	c.RealServers = cities.Servers()[:6]
	return c
}

// TestSPDInvariants runs a small sweep: every row within its bound, SPDVR
// never raising the variation nor adding servers, heuristics never below
// the exact server count, and ZIZO the only algorithm that may fail.
func TestSPDInvariants(t *testing.T) {
	rep, err := Run(smallSPD(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range rep.Rows {
		if r.Status == "failed" && r.Algo != AlgZIZO && !(r.Algo == AlgKBest && r.Model == spd.P2P) {
			t.Errorf("%+v failed", r)
		}
		if r.Status != "ok" {
			continue
		}
		bound := r.Factor * r.Gamma
		if r.Delay > bound+1e-6 || r.FairDelay > bound+1e-6 || r.FairVariation > r.Variation || r.FairUsed > r.Used {
			t.Errorf("invariant broken: %+v", r)
		}
		if r.ExactUsed > 0 && r.Used < r.ExactUsed {
			t.Errorf("%s %s uses %d servers < exact %d", r.Model, r.Algo, r.Used, r.ExactUsed)
		}
		if r.Data != "real" && math.Abs(r.Gamma-500) > 1e-9 {
			t.Errorf("Γ %v, want 500", r.Gamma)
		}
	}
	dir := t.TempDir()
	files, err := report.WriteFiles(rep, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Gap to the exact solver", "real data", "spdvr", "k-best"} {
		if !strings.Contains(strings.ToLower(b.String()), strings.ToLower(want)) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestSPDDeterministic(t *testing.T) {
	c := smallSPD(t)
	c.NoReal, c.RealServers = true, nil
	a, err := Run(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(c, nil)
	if len(a.Rows) != len(b.Rows) {
		t.Fatal("different row counts")
	}
	for i := range a.Rows {
		x, y := a.Rows[i], b.Rows[i]
		x.FairMs, y.FairMs = 0, 0
		if x != y {
			t.Fatalf("row %d differs: %+v vs %+v", i, x, y)
		}
	}
}

func TestSPDConfigErrors(t *testing.T) {
	for _, c := range []Config{
		{Servers: []int{2}},
		{Factors: []float64{0.9}},
		{Networks: -1},
		{Players: []int{0}},
		{RealServers: []string{"Atlantis", "Paris", "London"}},
	} {
		if _, err := Run(c, nil); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%+v: %v, want lab.ErrConfig", c, err)
		}
	}
}
