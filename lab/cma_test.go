package lab

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/place/cma"
)

// smallReport runs the small configuration once per test binary.
var smallReport = func() func(t *testing.T) *CMAReport {
	var rep *CMAReport
	var err error
	var done, total int
	return func(t *testing.T) *CMAReport {
		t.Helper()
		if rep == nil && err == nil {
			cfg := SmallCMAConfig()
			cfg.Seed = 3
			rep, err = CMA(cfg, func(d, tot int) { done, total = d, tot })
			if err == nil && (done != total || total == 0) {
				t.Errorf("progress ended at %d of %d", done, total)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
}()

func trace(t *testing.T, res *ScenarioResult, label string) *Trace {
	t.Helper()
	for i := range res.Traces {
		if res.Traces[i].Label == label {
			return &res.Traces[i]
		}
	}
	t.Fatalf("%s: no trace %q", res.Scenario, label)
	return nil
}

func TestCMASmallInvariants(t *testing.T) {
	rep := smallReport(t)
	cfg := rep.Config
	if len(rep.Runs) != 1 {
		t.Fatalf("%d runs, want 1", len(rep.Runs))
	}
	run := rep.Runs[0]
	n := cfg.JoinPlayers
	for _, res := range []*ScenarioResult{run.Join, run.Leave, run.Dynamic} {
		if res == nil {
			t.Fatal("a scenario is missing")
		}
		if res.Optimum == nil || res.Check.Events != res.Events || res.Check.TotalDiffers != 0 {
			t.Errorf("%s: SA vs cma.Optimal: %+v over %d events; want every event compared and equal", res.Scenario, res.Check, res.Events)
		}
		for _, tr := range res.allTraces() {
			if len(tr.Mean) != res.Events || len(tr.Max) != res.Events {
				t.Errorf("%s %s: %d/%d points for %d events", res.Scenario, tr.Label, len(tr.Mean), len(tr.Max), res.Events)
			}
		}
	}
	greedy, sa := trace(t, run.Join, "J-greedy"), trace(t, run.Join, "J-SA")
	if len(sa.Final) != n || len(greedy.Final) != n {
		t.Fatalf("after the joins: %d and %d players, want %d", len(sa.Final), len(greedy.Final), n)
	}
	for i := range sa.Mean {
		if sa.Mean[i] > greedy.Mean[i]+1e-9 {
			t.Fatalf("join %d: J-SA mean %v > J-greedy %v; the optimum cannot be worse", i+1, sa.Mean[i], greedy.Mean[i])
		}
	}
	if greedy.Moves != 0 {
		t.Errorf("J-greedy moved %d players; it never moves anyone", greedy.Moves)
	}
	if ig := trace(t, run.Leave, "L-ignore"); ig.Moves != 0 {
		t.Errorf("L-ignore moved %d players", ig.Moves)
	}
	lsa := trace(t, run.Leave, "L-SA")
	for _, l := range []string{"L-ignore", "L-greedy"} {
		if o := trace(t, run.Leave, l); report.Mean(nonEmpty(lsa.Mean)) > report.Mean(nonEmpty(o.Mean))+1e-9 {
			t.Errorf("L-SA averages %v ms over the leaves, %s %v", report.Mean(lsa.Mean), l, report.Mean(o.Mean))
		}
	}
	if run.Dynamic.PopulateEvents != 3*cfg.DynamicPopulate || run.Dynamic.Events != 3*cfg.DynamicPopulate+2*cfg.DynamicChurn {
		t.Errorf("dynamic: %d populate events of %d", run.Dynamic.PopulateEvents, run.Dynamic.Events)
	}
}

func TestCMASpeedHasEveryMethod(t *testing.T) {
	rep := smallReport(t)
	sp := rep.Runs[0].Speed
	type key struct {
		sc     Scenario
		label  string
		method cma.Method
	}
	want := []key{
		{ScenarioJoin, "J-greedy", cma.Greedy}, {ScenarioJoin, "J-SA", cma.SARebuild}, {ScenarioJoin, "J-SA", cma.SA},
		{ScenarioLeave, "L-ignore", cma.Ignore}, {ScenarioLeave, "L-greedy", cma.Greedy}, {ScenarioLeave, "L-SA", cma.SARebuild}, {ScenarioLeave, "L-SA", cma.SA},
		{ScenarioDynamic, "J-greedy/L-ignore", cma.Ignore}, {ScenarioDynamic, "J-greedy/L-greedy", cma.Greedy},
		{ScenarioDynamic, "J-SA/L-SA", cma.SARebuild}, {ScenarioDynamic, "J-SA/L-SA", cma.SA},
	}
	for _, m := range rep.Config.SpeedMirrors {
		for _, k := range want {
			i := slices.IndexFunc(sp.Rows, func(r SpeedRow) bool {
				return r.Scenario == k.sc && r.Label == k.label && r.Method == k.method && r.Mirrors == m
			})
			if i < 0 {
				t.Errorf("m=%d: no speed row %v", m, k)
				continue
			}
			if r := sp.Rows[i]; len(r.Millis) != rep.Config.SpeedRepeats || r.Median <= 0 {
				t.Errorf("m=%d %v: times %v", m, k, r.Millis)
			}
		}
	}
	if len(sp.Rows) != len(want)*len(rep.Config.SpeedMirrors) {
		t.Errorf("%d speed rows, want %d", len(sp.Rows), len(want)*len(rep.Config.SpeedMirrors))
	}
	// The paper's algorithm and ours are both exact and break ties alike,
	// so they move the same players.
	for _, r := range sp.Rows {
		if r.Method != cma.SA {
			continue
		}
		for _, o := range sp.Rows {
			if o.Method == cma.SARebuild && o.Scenario == r.Scenario && o.Mirrors == r.Mirrors && o.Moves != r.Moves {
				t.Logf("%s m=%d: sa moved %d players, sa-rebuild %d (both exact; tie-breaking may differ)", r.Scenario, r.Mirrors, r.Moves, o.Moves)
			}
		}
	}
}

func TestCMADeterministic(t *testing.T) {
	cfg := SmallCMAConfig()
	cfg.Seed = 3
	cfg.Scenarios = []Scenario{ScenarioJoin, ScenarioDynamic}
	cfg.SkipVerify = true
	a, err := CMA(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := smallReport(t) // same seed, all scenarios, verified
	for _, p := range []struct{ x, y *ScenarioResult }{{a.Runs[0].Join, b.Runs[0].Join}, {a.Runs[0].Dynamic, b.Runs[0].Dynamic}} {
		if !slices.EqualFunc(p.x.Mirrors, p.y.Mirrors, func(m, n cma.Mirror) bool { return m == n }) {
			t.Fatalf("%s: mirrors %v vs %v", p.x.Scenario, p.x.Mirrors, p.y.Mirrors)
		}
		for i := range p.x.Traces {
			tx, ty := p.x.Traces[i], p.y.Traces[i]
			if !slices.Equal(tx.Mean, ty.Mean) || !slices.Equal(tx.Max, ty.Max) || tx.Moves != ty.Moves {
				t.Errorf("%s %s: differs between runs of the same seed", p.x.Scenario, tx.Label)
			}
		}
	}
	if a.Runs[0].Join.Optimum != nil || a.Runs[0].Leave != nil || a.Runs[0].Speed != nil {
		t.Error("skipped parts were run")
	}
}

func TestCMAWriteOutputs(t *testing.T) {
	rep := smallReport(t)
	dir := t.TempDir()
	csvs, err := rep.WriteCSV(dir)
	if err != nil {
		t.Fatal(err)
	}
	pngs, err := rep.WritePlots(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range append(csvs, pngs...) {
		st, err := os.Stat(p)
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
		names = append(names, filepath.Base(p))
	}
	slices.Sort(names)
	want := []string{"fig4-join.csv", "fig4-join.png", "fig5-cdf.csv", "fig5-cdf.png", "fig6-leave.csv", "fig6-leave.png",
		"fig7-dynamic.csv", "fig7-dynamic.png", "fig8-speed.csv", "fig8-speed.png", "headline.csv"}
	if !slices.Equal(names, want) {
		t.Errorf("wrote %v, want %v", names, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, "fig4-join.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if lines[0] != "seed,joins,J-greedy_mean_ms,J-greedy_max_ms,J-SA_mean_ms,J-SA_max_ms,optimum_mean_ms,optimum_max_ms" || len(lines) != 1+rep.Config.JoinPlayers {
		t.Errorf("fig4-join.csv: header %q, %d lines", lines[0], len(lines))
	}
	png, _ := os.ReadFile(filepath.Join(dir, "fig8-speed.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("fig8-speed.png is not a PNG")
	}
}

func TestCMATable(t *testing.T) {
	var b bytes.Buffer
	if err := smallReport(t).WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"paper", "overworld", "§4.1 join", "§4.2 leave", "§4.3 dynamic", "§4.4", "J-SA", "L-ignore",
		"J-greedy/L-greedy", "sa-rebuild", "sizes differ from the paper's"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for i, l := range strings.Split(out, "\n") {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("line %d has trailing blanks: %q", i+1, l)
		}
	}
}

// The paper's numbers appear beside ours only at the paper's sizes.
func TestCMAPaperColumn(t *testing.T) {
	rep := &CMAReport{Config: DefaultCMAConfig()}
	rep.Config, _ = rep.Config.Validate()
	if !rep.Config.PaperSizes() {
		t.Fatal("the default configuration should have the paper's sizes")
	}
	if p, ok := paperMillis(ScenarioDynamic, "J-SA/L-SA", 20); !ok || p != 22769 {
		t.Errorf("paper's dynamic J-SA/L-SA at 20 mirrors: %v, %v", p, ok)
	}
	if _, ok := paperMillis(ScenarioJoin, "J-SA", 7); ok {
		t.Error("the paper has no 7-mirror column")
	}
	small, _ := SmallCMAConfig().Validate()
	if small.PaperSizes() {
		t.Error("the small configuration is not the paper's")
	}
}

func TestCMARealData(t *testing.T) {
	cfg := SmallCMAConfig()
	cfg.Data = DataReal
	cfg.Seeds = 2
	cfg.Scenarios = []Scenario{ScenarioJoin}
	rep, err := CMA(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 2 || rep.Runs[0].Leave != nil {
		t.Fatalf("%d runs, leave %v", len(rep.Runs), rep.Runs[0].Leave)
	}
	for _, run := range rep.Runs {
		if got := run.Join.Mirrors[0].ID; got != "New York" {
			t.Errorf("first mirror %q, want New York (the first default server)", got)
		}
		if run.Join.Check.TotalDiffers != 0 {
			t.Errorf("seed %d: J-SA differs from the optimum at %d joins", run.Seed, run.Join.Check.TotalDiffers)
		}
	}
	if slices.Equal(rep.Runs[0].Join.Traces[0].Mean, rep.Runs[1].Join.Traces[0].Mean) {
		t.Error("two seeds drew the same players")
	}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "±") || !strings.Contains(b.String(), "[min, max]") {
		t.Errorf("two seeds: the table should show mean ± sd and the range:\n%s", b.String())
	}
}

func TestCMAConfigErrors(t *testing.T) {
	for name, mod := range map[string]func(*CMAConfig){
		"data":          func(c *CMAConfig) { c.Data = "planetlab" },
		"seeds":         func(c *CMAConfig) { c.Seeds = -1 },
		"scenario":      func(c *CMAConfig) { c.Scenarios = []Scenario{"warp"} },
		"capacity":      func(c *CMAConfig) { c.JoinCapacities = []int{10, 0} },
		"players":       func(c *CMAConfig) { c.JoinPlayers = 1001 },
		"populate":      func(c *CMAConfig) { c.DynamicPopulate = 500 },
		"mirrors":       func(c *CMAConfig) { c.SpeedMirrors = []int{0} },
		"repeats":       func(c *CMAConfig) { c.SpeedRepeats = -2 },
		"bound":         func(c *CMAConfig) { c.Bound = -1 },
		"brite servers": func(c *CMAConfig) { c.Servers = []string{"London"} },
		"few servers":   func(c *CMAConfig) { c.Data, c.Servers = DataReal, []string{"London", "Paris"} },
		"topology":      func(c *CMAConfig) { c.Topology.Router.N = 1 },
	} {
		cfg := DefaultCMAConfig()
		mod(&cfg)
		if _, err := CMA(cfg, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: err %v, want ErrConfig", name, err)
		}
	}
	cfg := DefaultCMAConfig()
	cfg.Data, cfg.Servers = DataReal, append([]string{"Atlantis"}, DefaultServers()[1:]...)
	if _, err := CMA(cfg, nil); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Atlantis") {
		t.Errorf("unknown city: err %v, want ErrConfig naming it", err)
	}
}

func TestParse(t *testing.T) {
	if s, err := ParseScenarios(" speed, join ,join"); err != nil || !slices.Equal(s, []Scenario{ScenarioJoin, ScenarioSpeed}) {
		t.Errorf("ParseScenarios: %v, %v", s, err)
	}
	if s, err := ParseScenarios("all"); err != nil || !slices.Equal(s, Scenarios()) {
		t.Errorf("ParseScenarios(all): %v, %v", s, err)
	}
	if _, err := ParseScenarios("join,"); !errors.Is(err, ErrConfig) {
		t.Errorf("ParseScenarios(join,): %v", err)
	}
	if d, err := ParseData("REAL"); err != nil || d != DataReal {
		t.Errorf("ParseData: %v, %v", d, err)
	}
}
