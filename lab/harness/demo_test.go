package harness

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

// TestDemoTiny runs a three-node demo: the players are assigned to the
// nodes' cities, the rendezvous sits at a city of the data set, the table
// names both, and the files are written; PlanetLab sites are refused.
func TestDemoTiny(t *testing.T) {
	cfg := DefaultDemoConfig()
	cfg.Nodes, cfg.PlayersPerNode, cfg.Duration, cfg.Cities = 3, 2, 3*time.Second, nil
	rep, err := Demo(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl := rep.Placement
	if rep.InfraSite == "" || pl == nil || pl.Players != 6 || !(pl.World.Mean > 0) || rep.Config.Cities[2] != "Tokyo" {
		t.Fatalf("infra %q, placement %+v, cities %v", rep.InfraSite, pl, rep.Config.Cities)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"world demo: 3 nodes × 2 bots", "New York, Frankfurt, Tokyo", rep.InfraSite, "missing replicas"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	files, err := rep.WriteFiles(t.TempDir())
	if err != nil || len(files) != 4 {
		t.Fatalf("WriteFiles: %v, %v", files, err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	rep.DropSeries()
	if _, err := rep.WriteFiles(t.TempDir()); err == nil {
		t.Error("WriteFiles after DropSeries: no error")
	}
	cfg.Data = SitesPlanetLab
	if _, err := Demo(cfg, nil); !errors.Is(err, lab.ErrConfig) {
		t.Errorf("a demo on PlanetLab: %v, want lab.ErrConfig", err)
	}
}
