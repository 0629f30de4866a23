package cma

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/overworld/overworld/lab"
)

func TestDemo(t *testing.T) {
	cfg := DefaultDemoConfig()
	cfg.Players = 300
	cfg.Seed = 4
	rep, err := Demo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 4 || rep.Rows[0].Method != "sa" || rep.Rows[3].Method != "optimal" {
		t.Fatalf("rows %+v", rep.Rows)
	}
	sa, greedy, ignore, opt := rep.Rows[0], rep.Rows[1], rep.Rows[2], rep.Rows[3]
	if rep.Matched != rep.Config.Snapshots {
		t.Errorf("SA equals the optimum at %d of %d snapshots", rep.Matched, rep.Config.Snapshots)
	}
	if sa.Mean > greedy.Mean+1e-9 || sa.Mean > ignore.Mean+1e-9 || abs(sa.Mean-opt.Mean) > 1e-9*opt.Mean {
		t.Errorf("means: sa %v, greedy %v, ignore %v, optimal %v", sa.Mean, greedy.Mean, ignore.Mean, opt.Mean)
	}
	if ignore.MovesPerEvent != 0 || sa.MovesPerEvent <= 0 {
		t.Errorf("moves per event: sa %v, ignore %v", sa.MovesPerEvent, ignore.MovesPerEvent)
	}
	capacity := 0
	for _, s := range rep.Servers {
		capacity += s.Capacity
	}
	if want := 334; capacity != want || len(rep.Servers) != 10 { // ⌈300 / 0.9⌉
		t.Errorf("%d servers with %d seats, want 10 with %d", len(rep.Servers), capacity, want)
	}
	if rep.Servers[0].Capacity != 3*rep.Servers[1].Capacity && rep.Servers[0].Capacity != 3*rep.Servers[1].Capacity+1 {
		t.Errorf("capacities %v do not follow the weights 3:1:2", rep.Servers)
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mean ms", "p95 ms", "≤100 ms", "moved/event", "sa ", "greedy ", "ignore ", "optimal*", "10 of 10 snapshots"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// Deterministic but for times.
	again, err := Demo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range again.Rows {
		o := rep.Rows[i]
		if r.Mean != o.Mean || r.P95 != o.P95 || r.Max != o.Max || r.Within != o.Within || (r.MovesPerEvent != o.MovesPerEvent && r.Method != "optimal") {
			t.Errorf("%s differs between runs: %+v vs %+v", r.Method, r, o)
		}
	}
}

func TestDemoScript(t *testing.T) {
	cfg, err := DemoConfig{Players: 100, Churn: 80, Snapshots: 4, Load: 0.5}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	s, snaps := demoScript(cfg, rand.New(rand.NewPCG(1, 1)))
	if len(s) != 180 || len(snaps) != 4 || snaps[0] != 120 || snaps[3] != 180 {
		t.Fatalf("%d events, snapshots after %v; want 180 and 120, 140, 160, 180", len(s), snaps)
	}
	replay(t, s, cfg.capacity())
	for i, e := range s[:100] {
		if !e.join || e.client != i {
			t.Fatalf("event %d: %+v, want client %d joining", i, e, i)
		}
	}
}

func TestDemoConfigErrors(t *testing.T) {
	for name, cfg := range map[string]DemoConfig{
		"players":   {Players: -1},
		"load":      {Load: 1.5},
		"churn":     {Churn: -3},
		"snapshots": {Churn: 5, Snapshots: 6},
		"seats":     {Players: 3, Load: 1},
		"city":      {Servers: []string{"Atlantis"}},
		"twice":     {Servers: []string{"London", "London"}},
	} {
		if _, err := Demo(cfg); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("%s: err %v, want lab.ErrConfig", name, err)
		}
	}
}
