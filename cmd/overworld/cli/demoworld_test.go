package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDemoWorldSmall(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "demo", "--nodes", "4", "--players-per-node", "2", "--duration", "5s", "--seed", "3", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"4 nodes × 2 bots = 8 players", "directory architecture", "New York", "rendezvous",
		"placed by the control plane", "RTT where they played", "static nearest-with-room admission on the same players", "exact optimum", "per-node bandwidth", "p95 of 1 s", "missing replicas", "0 ms", "100 ms", "400 ms",
		"discovery latency", "replica staleness", "bytes per update", "× real time"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"summary.json", "series.csv", "nodes.csv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	code, out, errs = runCLI(t, "", "demo", "--nodes", "4", "--players-per-node", "2", "--duration", "3s", "--placement", "static", "--regions", "0")
	if code != 0 || !strings.Contains(out, "placed by static nearest-with-room admission") || !strings.Contains(out, "the control plane (CMA) on the same players") || strings.Contains(out, "regions:") {
		t.Errorf("--placement static: exit %d, stderr %q:\n%s", code, errs, out)
	}
	// --net wan reaches the simulator (the summary's network) and the
	// table; a flag beside it overrides its part; colyseus gets its
	// default prefetch; the moving objects' measures and kinds.csv are
	// written.
	dir = t.TempDir()
	code, out, errs = runCLI(t, "", "demo", "--arch", "colyseus", "--nodes", "4", "--players-per-node", "1", "--duration", "6s", "--map", "sqr",
		"--net", "wan", "--dup", "0.02", "--out", dir)
	if code != 0 || !strings.Contains(out, "network: loss 1%, jitter 10ms, duplication 2%") || !strings.Contains(out, "of moving objects alone") ||
		!strings.Contains(out, "abandoned") {
		t.Errorf("--net wan: exit %d, stderr %q:\n%s", code, errs, out)
	}
	var sum struct {
		Config struct {
			Loss, Duplicate float64
			JitterMeanMs    float64 `json:"jitter_mean_ms"`
		}
		Views struct {
			MissingMoving []struct{ Fraction float64 } `json:"missing_moving"`
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "summary.json")); err != nil || json.Unmarshal(b, &sum) != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if sum.Config.Loss != 0.01 || sum.Config.Duplicate != 0.02 || sum.Config.JitterMeanMs != 10 || len(sum.Views.MissingMoving) != 3 {
		t.Errorf("summary: %+v", sum)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "kinds.csv")); err != nil || !strings.Contains(string(b), "arena.item,false") {
		t.Errorf("kinds.csv: %v\n%s", err, b)
	}
	for _, arch := range []string{"broadcast", "client-server"} {
		code, out, errs = runCLI(t, "", "demo", "--arch", arch, "--nodes", "3", "--players-per-node", "1", "--duration", "3s", "--map", "sqr")
		if code != 0 || !strings.Contains(out, arch+" architecture") {
			t.Errorf("%s: exit %d, stderr %q:\n%s", arch, code, errs, out)
		}
	}
}

func TestDemoWorldBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--arch", "mesh"},
		{"demo", "--nodes", "0"},
		{"demo", "--nodes", "100000"},
		{"demo", "--players-per-node", "0"},
		{"demo", "--duration", "0s"},
		{"demo", "--workers", "-1"},
		{"demo", "--duration", "2h"},
		{"demo", "--map", "round"},
		{"demo", "--seed", "x"},
		{"demo", "stray"},
		{"demo", "--placement", "nearest"},
		{"demo", "--placement", "cma", "--players-per-node", "1"},
		{"demo", "--placement", "cma", "--arch", "client-server"},
		{"demo", "--players-per-node", "1", "--headroom", "2"},
		{"demo", "--placement", "none", "--session", "1m"},
		{"demo", "--headroom", "0.5"},
		{"demo", "--session", "10ms"},
		{"demo", "--regions", "3"},
		{"demo", "--regions", "9x9"},
		{"demo", "--region-policy", "sometimes"},
		{"demo", "--far-margin", "-1"},
		{"demo", "--far-margin", "NaN"},
		{"demo", "--fetch-ahead", "2s"},
		{"demo", "--fetch-ahead", "-1ms"},
		{"demo", "--push-mutual=maybe"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
}

func TestLabWorldQuick(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "lab", "world", "--quick", "--nodes", "4,6", "--duration", "3s", "--out", dir, "--quiet")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"Fig. 12(a)", "client-server", "broadcast", "directory", "order of magnitude", "overhead factor", "missing replicas"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"world-bandwidth.csv", "world-bandwidth.png", "world-classes.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "world-bandwidth.csv"))
	if n := strings.Count(string(csv), "\n"); n != 7 {
		t.Errorf("world-bandwidth.csv has %d lines, want a header and 6 runs:\n%s", n, csv)
	}
}

func TestLabWorldBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"lab", "world", "--nodes", "0"},
		{"lab", "world", "--nodes", "4,x"},
		{"lab", "world", "--nodes", "4,4"},
		{"lab", "world", "--nodes", ""},
		{"lab", "world", "--arch", "mesh"},
		{"lab", "world", "--arch", "directory,directory"},
		{"lab", "world", "--duration", "0s"},
		{"lab", "world", "--map", "round"},
		{"lab", "world", "--slice", "0"},
		{"lab", "world", "--players-per-node", "0"},
		{"lab", "world", "stray"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
}

func TestLabColyseusQuick(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "lab", "colyseus", "--quick", "--only", "table1,fig11,fig12", "--nodes", "5,7",
		"--fed-nodes", "6", "--fed-players", "3", "--fed-duration", "8s", "--duration", "5s", "--maps", "sqr", "--keymaps", "dht",
		"--out", dir, "--quiet")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"Table 1", "missing missiles", "72.9%", "missing 0/100/400 ms", "Fig. 12(a)", "broadcast ÷ colyseus"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "Fig. 8") || strings.Contains(out, "Table 2") {
		t.Errorf("output has experiments not asked for:\n%s", out)
	}
	for _, f := range []string{"colyseus-runs.csv", "colyseus-fig11.png", "colyseus-fig12a.png"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(dir, "colyseus-runs.csv"))
	// 2 sqr dht scale runs, 2 with prefetch (overworld's Fig. 11 series),
	// 2 rect colyseus + 4 baselines, 2 Table 1 runs.
	if n := strings.Count(string(csv), "\n"); n != 13 {
		t.Errorf("colyseus-runs.csv has %d lines, want a header and 12 runs:\n%s", n, csv)
	}
}

func TestLabColyseusBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"lab", "colyseus", "--only", "fig13"},
		{"lab", "colyseus", "--hot-spots", "-1"},
		{"lab", "colyseus", "--hot-spots", "9"},
		{"lab", "colyseus", "--only", "fig8,fig8"},
		{"lab", "colyseus", "--only", ""},
		{"lab", "colyseus", "--only", "fig8,"},
		{"lab", "colyseus", "--nodes", "1"},
		{"lab", "colyseus", "--nodes", "4,x"},
		{"lab", "colyseus", "--nodes", "8,8"},
		{"lab", "colyseus", "--fed-nodes", "0"},
		{"lab", "colyseus", "--maps", "round"},
		{"lab", "colyseus", "--maps", "sqr,sqr"},
		{"lab", "colyseus", "--keymaps", "chord"},
		{"lab", "colyseus", "--pred-times", "soon"},
		{"lab", "colyseus", "--pred-times", "-1s"},
		{"lab", "colyseus", "--duration", "0s"},
		{"lab", "colyseus", "--fed-duration", "2h"},
		{"lab", "colyseus", "--balance-duration", "10ms"},
		{"lab", "colyseus", "--fed-players", "0"},
		{"lab", "colyseus", "--pred-nodes", "1"},
		{"lab", "colyseus", "--prefetch", "-1"},
		{"lab", "colyseus", "--prefetch", "NaN"},
		{"lab", "colyseus", "--balance-nodes", "1"},
		{"lab", "colyseus", "--slice", "0"},
		{"lab", "colyseus", "--workers", "-1"},
		{"lab", "colyseus", "--seed", "x"},
		{"lab", "colyseus", "stray"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
}
