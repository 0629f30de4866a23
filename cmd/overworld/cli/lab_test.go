package cli

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func TestLabCMASmall(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "lab", "cma", "--quick", "--seed", "5", "--out", dir, "--quiet")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"paper", "overworld", "§4.1 join", "§4.2 leave", "§4.3 dynamic", "§4.4", "sa-rebuild"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"fig4-join", "fig5-cdf", "fig6-leave", "fig7-dynamic", "fig8-speed"} {
		for _, ext := range []string{".csv", ".png"} {
			if st, err := os.Stat(filepath.Join(dir, name+ext)); err != nil || st.Size() == 0 {
				t.Errorf("%s%s: %v", name, ext, err)
			}
		}
	}
	// Headline invariants: SA is exact and no worse than greedy at the end of
	// the joins.
	value := map[string]float64{}
	for _, r := range readCSV(t, filepath.Join(dir, "headline.csv"))[1:] {
		v, err := strconv.ParseFloat(r[5], 64)
		if err != nil {
			t.Fatal(err)
		}
		value[r[1]+"|"+r[2]] = v
	}
	if sa, gr := value["mean delay after 100 joins, ms|J-SA"], value["mean delay after 100 joins, ms|J-greedy"]; sa <= 0 || sa > gr {
		t.Errorf("mean delay after the joins: J-SA %v, J-greedy %v", sa, gr)
	}
	for _, k := range []string{"joins where J-SA ≠ optimum (of 100)|J-SA", "leaves where L-SA ≠ optimum (of 100)|L-SA", "events where J-SA/L-SA ≠ optimum (of 220)|J-SA/L-SA"} {
		if v, ok := value[k]; !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0", k, v, ok)
		}
	}
	// The speed table has every method at every size.
	var got []string
	for _, r := range readCSV(t, filepath.Join(dir, "fig8-speed.csv"))[1:] {
		got = append(got, r[1]+"/"+r[2]+"/"+r[3]+"/"+r[4])
	}
	for _, m := range []string{"5", "10"} {
		for _, k := range []string{"join/J-greedy/greedy", "join/J-SA/sa-rebuild", "join/J-SA/sa",
			"leave/L-ignore/ignore", "leave/L-greedy/greedy", "leave/L-SA/sa-rebuild", "leave/L-SA/sa",
			"dynamic/J-greedy/L-ignore/ignore", "dynamic/J-greedy/L-greedy/greedy", "dynamic/J-SA/L-SA/sa-rebuild", "dynamic/J-SA/L-SA/sa"} {
			if !slices.Contains(got, k+"/"+m) {
				t.Errorf("fig8-speed.csv lacks %s at %s mirrors", k, m)
			}
		}
	}
}

func TestLabCMARealNoPlots(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "lab", "cma", "--quick", "--data", "real", "--scenario", "join", "--no-plots",
		"--servers", "London,Tokyo,New York,Sydney,Sao Paulo", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	if !strings.Contains(out, "London, Tokyo, New York, Sydney, Sao Paulo") || strings.Contains(out, "§4.2") {
		t.Errorf("table:\n%s", out)
	}
	if !strings.Contains(errs, "wrote "+dir) {
		t.Errorf("stderr should list the files written: %q", errs)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"fig4-join.csv", "fig5-cdf.csv", "headline.csv"}) {
		t.Errorf("wrote %v", names)
	}
}

func TestLabBadUsage(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"lab"},
		{"lab", "nope"},
		{"lab", "cma", "--data", "planetlab"},
		{"lab", "cma", "--seeds", "0"},
		{"lab", "cma", "--seeds", "x"},
		{"lab", "cma", "--scenario", "join,warp"},
		{"lab", "cma", "--servers", "London"},
		{"lab", "cma", "--data", "real", "--servers", "London,,Paris"},
		{"lab", "cma", "--data", "real", "--servers", "London,Paris"},
		{"lab", "cma", "--data", "real", "--quick", "--scenario", "join", "--servers", "Atlantis,Paris,London,Tokyo,Lima"},
		{"lab", "cma", "--router-links", "0"},
		{"lab", "cma", "--data", "real", "--router-links", "3"},
		{"lab", "cma", "--bogus"},
		{"lab", "cma", "extra"},
	} {
		code, out, errs := runCLI(t, "", append(args, "--out", dir)...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("bad usage wrote %d files", len(entries))
	}
}

func TestLabArena(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, "", "lab", "arena", "--duration", "30s", "--out", dir, "--quiet")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"path length in 10 s", "paper (Quake III)", "Fortnite", "arena.missile"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	for _, name := range []string{"arena-path.csv", "arena-popularity.csv", "arena-deltas.csv", "arena-popularity.png", "arena-path-cdf.png", "arena-distance-cdf.png"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, args := range [][]string{
		{"--map", "hex"}, {"--players", "0"}, {"--duration", "1s"}, {"--players", "x"},
	} {
		code, out, errs := runCLI(t, "", append([]string{"lab", "arena", "--out", dir, "--quiet"}, args...)...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, an error", args, code, out, errs)
		}
	}
}
