package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/place/core"
)

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCoreTable(t *testing.T) {
	code, out, errs := runCLI(t, "", "core", "--data", "planetlab", "--players", "0-49", "--candidates", "0-99", "--k", "2")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"planetlab slice 1", "50 players, 100 candidates", "k-median", "k = 2",
		"exact (optimal)", "core", "players", "cost (sum)", "mean", "max", "diameter"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "at least") {
		t.Errorf("square data: diameter should be exact:\n%s", out)
	}
}

func TestCoreJSONMatchesLibrary(t *testing.T) {
	code, out, errs := runCLI(t, "", "core", "--data", "planetlab:3", "--players", "pl000,pl001,10-29", "--candidates", "100-159",
		"--k", "3", "--objective", "center", "--method", "exact", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep coreReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	pl, err := geo.PlanetLab(3)
	if err != nil {
		t.Fatal(err)
	}
	players := []int{0, 1}
	for i := 10; i <= 29; i++ {
		players = append(players, i)
	}
	var cands []int
	for i := 100; i < 160; i++ {
		cands = append(cands, i)
	}
	pc, _ := pl.Sub(players, cands)
	cc, _ := pl.SubSquare(cands)
	want, err := core.Exact(core.Problem{PlayerCore: pc, CoreCore: cc, K: 3, Objective: core.KCenter})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Exact || rep.Players != 22 || rep.Candidates != 60 || rep.K != 3 || rep.Objective != "k-center" ||
		rep.Cost != want.Cost || rep.Diameter != want.Diameter || len(rep.Cores) != 3 {
		t.Fatalf("report %+v, library %+v", rep, want)
	}
	total := 0
	for i, c := range rep.Cores {
		if c.Name != pc.ColName(want.Cores[i]) {
			t.Errorf("core %d is %s, library says %s", i, c.Name, pc.ColName(want.Cores[i]))
		}
		total += c.Players
	}
	if total != 22 || rep.Gap == nil || *rep.Gap != 0 {
		t.Errorf("players per core add to %d, gap %v", total, rep.Gap)
	}
}

func TestCoreLocalSearchIsDeterministic(t *testing.T) {
	args := []string{"core", "--data", "planetlab", "--random-players", "80", "--seed", "9", "--k", "6", "--method", "local"}
	code1, out1, _ := runCLI(t, "", args...)
	code2, out2, _ := runCLI(t, "", args...)
	if code1 != 0 || code2 != 0 || out1 != out2 {
		t.Fatalf("exit %d/%d, outputs differ:\n%s\n---\n%s", code1, code2, out1, out2)
	}
	if !strings.Contains(out1, "local search") || !strings.Contains(out1, "80 players, 490 candidates") {
		t.Fatalf("unexpected output:\n%s", out1)
	}
}

func TestCoreMatrixFiles(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "rtt.csv")
	csv := "name,east,west,north\nalice,10,80,40\nbob,12,70,45\ncarol,90,15,50\ndave,85,20,60\n"
	if err := os.WriteFile(csvPath, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, "", "core", "--matrix", csvPath, "--k", "2")
	if code != 0 {
		t.Fatalf("csv: exit %d: %s", code, errs)
	}
	// Rectangular: players alice..dave, cores east and west.
	for _, want := range []string{"4 players, 3 candidates", "east", "west", "cost (sum)  57.0 ms", "at least"} {
		if !strings.Contains(out, want) {
			t.Errorf("csv output lacks %q:\n%s", want, out)
		}
	}
	// PlanetLab text format on stdin (square: players = candidates = 3 hosts).
	pl := "0 10 30\n10 0 25\n30 25 0\n"
	code, out, errs = runCLI(t, pl, "core", "--matrix", "-", "--format", "planetlab", "--k", "1", "--json")
	if code != 0 {
		t.Fatalf("stdin: exit %d: %s", code, errs)
	}
	var rep coreReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// pl001 is 10 and 25 from the others: sum 35, diameter 10+25.
	if rep.Cores[0].Name != "pl001" || rep.Cost != 35 || rep.Diameter != 35 || rep.DiameterIsLowerBound {
		t.Fatalf("stdin report %+v", rep)
	}
}

func TestCoreBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.csv")
	os.WriteFile(bad, []byte("name,a,b\nx,1,NaN\n"), 0o644)
	cases := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no k", []string{"--data", "planetlab"}, "--k is required"},
		{"k zero", []string{"--data", "planetlab", "--k", "0"}, "out of range"},
		{"k too big", []string{"--data", "planetlab", "--candidates", "0-9", "--k", "11"}, "out of range"},
		{"k not a number", []string{"--data", "planetlab", "--k", "three"}, "invalid argument"},
		{"no source", []string{"--k", "1"}, "--matrix FILE or --data"},
		{"two sources", []string{"--matrix", bad, "--data", "planetlab", "--k", "1"}, "exclusive"},
		{"unknown data", []string{"--data", "wonder", "--k", "1"}, "planetlab[:SLICE]"},
		{"bad slice", []string{"--data", "planetlab:19", "--k", "1"}, "slice must be 1..18"},
		{"format with data", []string{"--data", "planetlab", "--format", "csv", "--k", "1"}, "--format applies"},
		{"bad format", []string{"--matrix", bad, "--format", "xml", "--k", "1"}, "want csv or planetlab"},
		{"objective", []string{"--data", "planetlab", "--k", "1", "--objective", "mean"}, "not median or center"},
		{"method", []string{"--data", "planetlab", "--k", "1", "--method", "fast"}, "not auto, exact, local or paper"},
		{"players range", []string{"--data", "planetlab", "--k", "1", "--players", "480-500"}, "past the last index"},
		{"players name", []string{"--data", "planetlab", "--k", "1", "--players", "pl000,nowhere"}, "neither an index"},
		{"players twice", []string{"--data", "planetlab", "--k", "1", "--players", "3,pl003"}, "twice"},
		{"players empty item", []string{"--data", "planetlab", "--k", "1", "--players", "1,,2"}, "empty item"},
		{"both player flags", []string{"--data", "planetlab", "--k", "1", "--players", "1", "--random-players", "3"}, "exclusive"},
		{"too many random", []string{"--data", "planetlab", "--k", "1", "--random-candidates", "491"}, "out of range"},
		{"missing file", []string{"--matrix", filepath.Join(dir, "nope.csv"), "--k", "1"}, "no such file"},
		{"NaN in file", []string{"--matrix", bad, "--k", "1"}, "NaN"},
		{"exact too large", []string{"--data", "planetlab", "--k", "5", "--method", "exact"}, "too large for exhaustive search"},
		{"negative restarts", []string{"--data", "planetlab", "--k", "5", "--restarts", "-1"}, "--restarts"},
		{"unknown flag", []string{"--data", "planetlab", "--k", "1", "--kk", "2"}, "unknown flag"},
		{"positional", []string{"extra", "--data", "planetlab", "--k", "1"}, "unknown command"},
	}
	for _, c := range cases {
		code, out, errs := runCLI(t, "", append([]string{"core"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2, no stdout, stderr with %q", c.name, code, out, errs, c.want)
		}
	}
}

func TestCoreHelpSaysDefaults(t *testing.T) {
	code, out, _ := runCLI(t, "", "core", "--help")
	if code != 0 {
		t.Fatalf("help exit %d", code)
	}
	for _, want := range []string{"every endpoint is a", "rows are players and columns candidates", "--random-players", "median"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestCorePaperMethodMatchesLibrary: --method paper is core.KMinimum, for
// both objectives, and says so.
func TestCorePaperMethodMatchesLibrary(t *testing.T) {
	pl, err := geo.PlanetLab(2)
	if err != nil {
		t.Fatal(err)
	}
	var players, cands []int
	for i := 0; i < 30; i++ {
		players = append(players, i)
	}
	for i := 200; i < 250; i++ {
		cands = append(cands, i)
	}
	pc, _ := pl.Sub(players, cands)
	cc, _ := pl.SubSquare(cands)
	for _, obj := range []core.Objective{core.KMedian, core.KCenter} {
		code, out, errs := runCLI(t, "", "core", "--data", "planetlab:2", "--players", "0-29", "--candidates", "200-249",
			"--k", "4", "--objective", obj.String(), "--method", "paper", "--json")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", obj, code, errs)
		}
		var rep coreReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("bad JSON: %v\n%s", err, out)
		}
		want, err := core.KMinimum(core.Problem{PlayerCore: pc, CoreCore: cc, K: 4, Objective: obj})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Method != "paper" || rep.Exact || rep.Cost != want.Cost || rep.Diameter != want.Diameter || len(rep.Cores) != 4 {
			t.Fatalf("%s: report %+v, library %+v", obj, rep, want)
		}
		for i, c := range rep.Cores {
			if c.Name != pc.ColName(want.Cores[i]) {
				t.Errorf("%s: core %d is %s, library says %s", obj, i, c.Name, pc.ColName(want.Cores[i]))
			}
		}
	}
	code, out, errs := runCLI(t, "", "core", "--data", "planetlab", "--players", "0-29", "--k", "2", "--method", "paper")
	if code != 0 || !strings.Contains(out, "k-minimum-pairwise") {
		t.Errorf("table: exit %d, %s%s", code, out, errs)
	}
}
