package colyseus

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/report"
)

func TestArenaReport(t *testing.T) {
	cfg := DefaultMobilityConfig()
	cfg.Duration = time.Minute
	rep, err := Mobility(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"paper (Quake III)", "14.8", "Fortnite", "Zipf exponent", "arena.bot", "145 bytes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	dir := t.TempDir()
	files, err := report.WriteFiles(rep, dir, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
	// Deterministic: the same config gives the same table.
	rep2, _ := Mobility(cfg, nil)
	var b2 bytes.Buffer
	rep2.WriteTable(&b2)
	if b.String() != b2.String() {
		t.Error("same config, different tables")
	}
	bad := cfg
	bad.Game = arena.Config{}
	if _, err := Mobility(bad, nil); !errors.Is(err, lab.ErrConfig) {
		t.Errorf("bad game config: %v", err)
	}
	bad = cfg
	bad.Duration = time.Second
	if _, err := Mobility(bad, nil); !errors.Is(err, lab.ErrConfig) {
		t.Errorf("1 s duration: %v", err)
	}
}
