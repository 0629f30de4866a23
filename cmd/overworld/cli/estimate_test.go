package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/overworld/overworld/lab/region"
)

func TestEstimateCommand(t *testing.T) {
	dir := t.TempDir()
	png, csvPath := filepath.Join(dir, "cdf.png"), filepath.Join(dir, "est.csv")
	code, out, errs := runCLI(t, "", "estimate", "--method", "landmark", "--data", "planetlab:3", "--landmarks", "20", "--plot", png, "--out-matrix", csvPath)
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"planetlab slice 3, 490 nodes", "landmark: 20 landmarks", "all", "unmeasured", "≤15%", "median|e|"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, p := range []string{png, csvPath} {
		if st, err := os.Stat(p); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
	rows := readCSV(t, csvPath)
	if len(rows) != 491 || len(rows[0]) != 491 {
		t.Errorf("estimated matrix is %d rows of %d", len(rows), len(rows[0]))
	}
}

// --data wonder runs on the embedded WonderNetwork set, its 18 pairs
// measured in neither direction left out of the scores.
func TestEstimateWonder(t *testing.T) {
	code, out, errs := runCLI(t, "", "estimate", "--method", "mf", "--data", "wonder", "--neighbours", "16", "--duration", "200s")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"wondernetwork (242 cities), 242 nodes", "unmeasured", "missing"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestEstimateMissingPairs(t *testing.T) {
	// 6 nodes on a line; two holes (NaN and 0) and a negative entry.
	in := `0 10 20 30 40 50
10 0 10 nan 30 40
20 10 0 10 20 30
30 - 10 0 10 20
40 30 20 10 0 -5
50 40 30 20 0 0
`
	code, out, errs := runCLI(t, in, "estimate", "--method", "mf", "--matrix", "-", "--neighbours", "3", "--duration", "30s", "--rank", "2")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "4 directed pairs have no value") {
		t.Errorf("missing pairs not reported:\n%s", out)
	}
	// {1,3} and {4,5} have no value in either direction: 13 of 15 pairs scored.
	var all []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 2 && f[0] == "all" {
			all = f
		}
	}
	if len(all) < 3 || all[1] != "13" || all[2] != "2" {
		t.Errorf("want 13 pairs scored and 2 missing, got %v:\n%s", all, out)
	}
}

func TestEstimateBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"estimate", "--data", "planetlab"}, "--method is required"},
		{[]string{"estimate", "--method", "ping", "--data", "planetlab"}, "unknown method"},
		{[]string{"estimate", "--method", "mf"}, "give a latency matrix"},
		{[]string{"estimate", "--method", "mf", "--data", "planetlab:19"}, "slice must be 1..18"},
		{[]string{"estimate", "--method", "mf", "--data", "wonderland"}, "embedded data sets"},
		{[]string{"estimate", "--method", "vivaldi", "--data", "planetlab", "--neighbours", "0"}, "neighbours"},
		{[]string{"estimate", "--method", "vivaldi", "--data", "planetlab", "--neighbours", "490"}, "only 489 other nodes"},
		{[]string{"estimate", "--method", "vivaldi", "--data", "planetlab", "--rate", "-1"}, "probe rate"},
		{[]string{"estimate", "--method", "vivaldi", "--data", "planetlab", "--jitter", "-0.1"}, "jitter"},
		{[]string{"estimate", "--method", "gnp", "--data", "planetlab", "--landmarks", "1"}, "--landmarks 1"},
		{[]string{"estimate", "--method", "gnp", "--data", "planetlab", "--landmarks", "5", "--dim", "5"}, "--dim 5"},
		{[]string{"estimate", "--method", "mf", "--data", "planetlab", "--rank", "0"}, "rank"},
		{[]string{"estimate", "--method", "mf", "--data", "planetlab", "--near", "33"}, "near neighbours"},
		{[]string{"estimate", "--method", "vivaldi", "--data", "planetlab", "--near", "3"}, "--near applies to --method mf"},
		{[]string{"estimate", "--method", "mf", "--data", "planetlab", "--disputed", "2"}, "--disputed applies to --method mf-geo"},
		{[]string{"estimate", "--method", "mf-geo", "--data", "wonder", "--neighbours", "8", "--near", "4", "--disputed", "4"}, "disputed"},
		{[]string{"estimate", "--method", "mf", "--matrix", "/nonexistent/x"}, "no such file"},
		{[]string{"lab", "estimate", "--slices", "19"}, "slices"},
		{[]string{"lab", "estimate", "--wonder-trials", "101"}, "WonderNetwork"},
		{[]string{"lab", "estimate", "--wonder-trials", "-2"}, "WonderNetwork"},
	} {
		code, out, errs := runCLI(t, "", c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout and %q", c.args, code, out, errs, c.want)
		}
	}
	for _, in := range []string{"", "0 1\n1 0 2\n", "0 x\n1 0\n", "0 1 2\n1 0 2\n"} {
		code, out, errs := runCLI(t, in, "estimate", "--method", "mf", "--matrix", "-")
		if code != 2 || out != "" || !strings.Contains(errs, "standard input") {
			t.Errorf("matrix %q: exit %d, stdout %q, stderr %q", in, code, out, errs)
		}
	}
}

// TestLabEstimateSmall runs "lab estimate --quick" on a smaller run than
// region.SmallConfig (whose report lab/region's TestEstimateSmall checks):
// the same sections, with fewer estimators, shorter probing and smaller
// core-selection trials. The flags still apply on top of it.
func TestLabEstimateSmall(t *testing.T) {
	if !reflect.DeepEqual(quickEstimateConfig(), region.SmallConfig()) {
		t.Fatal("--quick does not run region.SmallConfig")
	}
	defer func(c func() region.Config) { quickEstimateConfig = c }(quickEstimateConfig)
	quickEstimateConfig = func() region.Config {
		c := region.SmallConfig()
		keep := []string{"vivaldi-32", "landmark-32", "mf-32"}
		c.Configs = slices.DeleteFunc(c.Configs, func(r region.EstimateRun) bool { return !slices.Contains(keep, r.Label) })
		for i := range c.Configs {
			c.Configs[i].Spec.Probe.Duration /= 10
		}
		c.Tracked, c.Verified, c.Paper = keep, []string{"mf-32"}, keep
		c.CoreNodes, c.MaxK = 20, 4
		return c
	}
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "lab", "estimate", "--quick", "--slices", "2", "--core-trials", "1", "--out", dir, "--quiet")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"Fig. 6", "Time variation", "Figs. 7–8", "mf-32", "vivaldi-32", "Netvigator"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	for _, name := range []string{"fig6-accuracy.csv", "fig6-cdf.png", "fig7-core.png", "fig8-ecc.png", "slices.png", "fig7-hit.csv", "wonder-accuracy.csv", "wonder-hit.csv"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	// --slices 2 applies on top of --quick: the three estimators on slices
	// 1 and 2 (SmallConfig's own is 3).
	sl, err := os.ReadFile(filepath.Join(dir, "slices.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if rows := strings.Split(strings.TrimSpace(string(sl)), "\n"); len(rows) != 1+3*2 || !strings.HasPrefix(rows[len(rows)-1], "mf-32,2,") {
		t.Errorf("slices.csv has %d rows, last %q; want 6 after the header, mf-32 on slice 2 last", len(rows)-1, rows[len(rows)-1])
	}
}
