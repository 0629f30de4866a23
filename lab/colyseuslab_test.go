package lab

import (
	"bytes"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/internal/locate"
)

// tinyColyseusConfig is a few seconds of every experiment.
func tinyColyseusConfig() LabColyseusConfig {
	c := QuickLabColyseusConfig()
	c.ScaleNodes, c.ScaleDuration = []int{6, 9}, 8*time.Second
	c.FedPlayers, c.FedDuration = 4, 12*time.Second
	c.ProactiveNodes, c.PredNodes = []int{10}, 6
	c.PredTimes = []time.Duration{0, time.Second}
	c.BalanceNodes, c.BalanceDuration = 6, 6*time.Second
	return c
}

func TestLabColyseusTiny(t *testing.T) {
	cfg := tinyColyseusConfig()
	var last, total int
	rep, err := LabColyseus(cfg, func(d, n int) { last, total = d, n })
	if err != nil {
		t.Fatal(err)
	}
	if last != total || total == 0 {
		t.Errorf("progress ended at %d of %d", last, total)
	}
	vc, _ := cfg.Validate()
	if want := len(vc.plan()); len(rep.Runs) != want {
		t.Fatalf("%d runs, want %d", len(rep.Runs), want)
	}
	// Every scale run, both maps and key maps.
	for _, m := range cfg.ScaleMaps {
		for _, km := range cfg.KeyMaps {
			for _, n := range cfg.ScaleNodes {
				run := rep.scale(m, km, n)
				if run == nil {
					t.Fatalf("no scale run %s %s %d", m, km, n)
				}
				miss := run.Result.Summary.Views.Missing
				if len(miss) != 3 || miss[0].Fraction < miss[1].Fraction || miss[1].Fraction < miss[2].Fraction {
					t.Errorf("%s %s %d: more grace should not mean more missing: %+v", m, km, n, miss)
				}
				if run.Ring.Stats.Latency.Count() == 0 || run.Out[0] <= 0 || run.OutTotal <= 0 {
					t.Errorf("%s %s %d: no matches or no traffic: %+v", m, km, n, run.Out)
				}
				kv, _ := run.Kind(kindBot)
				if kv.DirectShare() < 0.5 || kv.DirectShare() > 1 {
					t.Errorf("%s %s %d: bots' direct share %v", m, km, n, kv.DirectShare())
				}
			}
		}
	}
	// Fig. 9's paper routing: the same sweep without the route cache.
	for _, m := range cfg.ScaleMaps {
		for _, km := range cfg.KeyMaps {
			for _, n := range cfg.ScaleNodes {
				ours, paper := rep.scaleRouting(m, km, n, false), rep.scaleRouting(m, km, n, true)
				if ours == nil || paper == nil || ours == paper {
					t.Fatalf("%s %s %d: runs %v, %v", m, km, n, ours, paper)
				}
				if paper.Ring.CacheHits != 0 || ours.Ring.CacheHits == 0 || paper.Ring.Routed == 0 {
					t.Errorf("%s %s %d: cache hops %d with the paper's routing, %d with ours", m, km, n, paper.Ring.CacheHits, ours.Ring.CacheHits)
				}
			}
		}
	}
	// Table 2's hot-spot workload: its own runs, the load measured.
	for _, b := range balanceRuns {
		model := rep.fed(cfg.BalanceNodes, b.keyMap, cfg.BalanceDuration, discovery.DefaultPredTime, b.balance, false)
		hot := rep.fedTiles(cfg.BalanceNodes, b.keyMap, cfg.BalanceDuration, discovery.DefaultPredTime, b.balance, false, cfg.BalanceTileZipf)
		if model == nil || hot == nil || model == hot || hot.Config().TileZipf != cfg.BalanceTileZipf {
			t.Fatalf("Table 2 %s %v: runs %v, %v", b.keyMap, b.balance, model, hot)
		}
	}
	for _, a := range []discovery.Arch{discovery.Broadcast, discovery.ClientServer} {
		if rep.baseline(a, 9) == nil {
			t.Errorf("no %s baseline", a)
		}
	}
	// Table 1: proactive replication must cut missing missiles.
	on := rep.fed(10, cfg.KeyMaps[0], cfg.FedDuration, discovery.DefaultPredTime, false, false)
	off := rep.fed(10, cfg.KeyMaps[0], cfg.FedDuration, discovery.DefaultPredTime, false, true)
	if on == nil || off == nil {
		t.Fatal("no Table 1 runs")
	}
	mon, _ := on.Kind(kindMissile)
	moff, _ := off.Kind(kindMissile)
	if mon.Interesting == 0 || moff.Interesting == 0 {
		t.Fatalf("no missile in any view: on %+v off %+v", mon, moff)
	}
	if !(mon.MissingAt(0) < moff.MissingAt(0)) || !(mon.HeldOnEntryShare() > moff.HeldOnEntryShare()) {
		t.Errorf("proactive on: %.1f%% missing missiles, %.1f%% held on entry; off: %.1f%%, %.1f%%", 100*mon.MissingAt(0),
			100*mon.HeldOnEntryShare(), 100*moff.MissingAt(0), 100*moff.HeldOnEntryShare())
	}
	// Fig. 8: no prediction re-subscribes every frame: more routing.
	p0 := rep.fed(6, cfg.KeyMaps[0], cfg.FedDuration, -1, false, false)
	p1 := rep.fed(6, cfg.KeyMaps[0], cfg.FedDuration, time.Second, false, false)
	if p0 == nil || p1 == nil || !(p0.Out[1] > p1.Out[1]) {
		t.Errorf("PredTime 0 should route more subscriptions than 1 s: %v vs %v", p0, p1)
	}
	for _, b := range balanceRuns {
		run := rep.fed(6, b.keyMap, cfg.BalanceDuration, discovery.DefaultPredTime, b.balance, false)
		if run == nil {
			t.Fatalf("no Table 2 run %+v", b)
		}
		if s, m := run.Total.Norm(); s < 0 || m < 1 {
			t.Errorf("%+v: total spread std %v max %v over the mean", b, s, m)
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
	files = append(files, pngs...)
	want := []string{"colyseus-runs.csv", "colyseus-fig8.png", "colyseus-fig9.png", "colyseus-fig10.png", "colyseus-fig11.png", "colyseus-fig12a.png"}
	if len(files) != len(want) {
		t.Errorf("files %v, want %v", files, want)
	}
	for _, f := range want {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "colyseus-runs.csv"))
	rows, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || len(rows) != len(rep.Runs)+1 {
		t.Fatalf("colyseus-runs.csv: %d rows, %v", len(rows), err)
	}
	var tab bytes.Buffer
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Fig. 7(b)", "98.97%", "Table 1", "72.9%", "Fig. 8", "sweet spot", "Figs. 9–11", "Table 2",
		"4.41", "the paper's routing", "frames/sub", "hot spots (tile Zipf", "Fig. 12(a)", "broadcast ÷ colyseus"} {
		if !strings.Contains(tab.String(), s) {
			t.Errorf("table lacks %q", s)
		}
	}
	if t.Failed() {
		t.Logf("seed %d:\n%s", cfg.Seed, tab.String())
	}
}

func TestLabColyseusOnly(t *testing.T) {
	cfg := tinyColyseusConfig()
	cfg.Only = []string{ExpFig11}
	cfg.ScaleMaps, cfg.KeyMaps, cfg.ScaleNodes = []arena.MapType{arena.Sqr}, []string{locate.KeyMapRegions}, []int{5}
	rep, err := LabColyseus(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Group != groupScale || rep.Runs[1].Group != groupOverworld ||
		rep.Runs[1].Config().Prefetch != cfg.Prefetch {
		t.Fatalf("%d runs, want the scale run and overworld's prefetch run", len(rep.Runs))
	}
	dir := t.TempDir()
	files, err := rep.WritePlots(dir)
	if err != nil || len(files) != 1 || filepath.Base(files[0]) != "colyseus-fig11.png" {
		t.Fatalf("plots %v, %v", files, err)
	}
	var tab bytes.Buffer
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(tab.String(), "Table 1") || !strings.Contains(tab.String(), "missing 0/100/400 ms") {
		t.Errorf("table of fig11 only:\n%s", tab.String())
	}
}

func TestLabColyseusConfigValidate(t *testing.T) {
	ok := DefaultLabColyseusConfig()
	if v, err := ok.Validate(); err != nil || len(v.Only) != len(ColyseusExperiments()) {
		t.Fatalf("default: %v, %v", v.Only, err)
	}
	q := QuickLabColyseusConfig()
	q.Only = []string{ExpFig12, ExpFig7b}
	if v, err := q.Validate(); err != nil || v.Only[0] != ExpFig7b {
		t.Fatalf("quick: %v, %v", v.Only, err)
	}
	for name, mod := range map[string]func(*LabColyseusConfig){
		"unknown experiment": func(c *LabColyseusConfig) { c.Only = []string{"fig13"} },
		"experiment twice":   func(c *LabColyseusConfig) { c.Only = []string{ExpFig8, ExpFig8} },
		"no nodes":           func(c *LabColyseusConfig) { c.ScaleNodes = nil },
		"one node":           func(c *LabColyseusConfig) { c.ScaleNodes = []int{1, 4} },
		"nodes twice":        func(c *LabColyseusConfig) { c.ProactiveNodes = []int{8, 8} },
		"too many nodes":     func(c *LabColyseusConfig) { c.ProactiveNodes = []int{30000} },
		"too many players":   func(c *LabColyseusConfig) { c.FedPlayers, c.ProactiveNodes = 64, []int{4000} },
		"short":              func(c *LabColyseusConfig) { c.ScaleDuration = time.Millisecond },
		"long":               func(c *LabColyseusConfig) { c.BalanceDuration = 2 * time.Hour },
		"slice":              func(c *LabColyseusConfig) { c.Slice = 19 },
		"no maps":            func(c *LabColyseusConfig) { c.ScaleMaps = nil },
		"bad map":            func(c *LabColyseusConfig) { c.ScaleMaps = []arena.MapType{7} },
		"map twice":          func(c *LabColyseusConfig) { c.ScaleMaps = []arena.MapType{arena.Sqr, arena.Sqr} },
		"bad key map":        func(c *LabColyseusConfig) { c.KeyMaps = []string{"chord"} },
		"key map twice":      func(c *LabColyseusConfig) { c.KeyMaps = []string{"dht", "dht"} },
		"fed players":        func(c *LabColyseusConfig) { c.FedPlayers = 0 },
		"pred nodes":         func(c *LabColyseusConfig) { c.PredNodes = 1 },
		"balance nodes":      func(c *LabColyseusConfig) { c.BalanceNodes = 0 },
		"no pred times":      func(c *LabColyseusConfig) { c.PredTimes = nil },
		"negative pred":      func(c *LabColyseusConfig) { c.PredTimes = []time.Duration{-time.Second} },
		"pred twice":         func(c *LabColyseusConfig) { c.PredTimes = []time.Duration{time.Second, time.Second} },
		"workers":            func(c *LabColyseusConfig) { c.Workers = -1 },
		"tile zipf":          func(c *LabColyseusConfig) { c.BalanceTileZipf = -1 },
		"tile zipf high":     func(c *LabColyseusConfig) { c.BalanceTileZipf = arena.MaxZipf + 1 },
	} {
		c := DefaultLabColyseusConfig()
		mod(&c)
		if _, err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
		if _, err := LabColyseus(c, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: LabColyseus: %v, want ErrConfig", name, err)
		}
	}
}
