package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overworld/overworld/internal/placefile"
	"github.com/overworld/overworld/place/spd"
)

// TestSelectGolden runs every algorithm on the paper's Fig. 1 session
// (Table I) and compares with the checked-in output (-update rewrites it).
func TestSelectGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/select-fig1.json")
	if err != nil {
		t.Fatal(err)
	}
	var got strings.Builder
	for _, model := range []string{"cs", "p2p"} {
		for _, algo := range []string{"spdcs-h", "spdp2p-h", "zizo", "matching", "kbest", "exact"} {
			if (algo == "spdcs-h" && model == "p2p") || (algo == "spdp2p-h" && model == "cs") {
				continue
			}
			for _, fair := range []bool{false, true} {
				args := []string{"select", "--model", model, "--algo", algo, "--factor", "1.3"}
				if fair {
					args = append(args, "--fair")
				}
				code, out, errs := run(t, string(in), args...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, errs)
				}
				var res placefile.SelectOutput
				if err := json.Unmarshal([]byte(out), &res); err != nil {
					t.Fatal(err)
				}
				if res.Delay > res.Bound+spd.Tolerance || res.Gamma != 98 {
					t.Errorf("%v: delay %v over bound %v (Γ %v)", args, res.Delay, res.Bound, res.Gamma)
				}
				if fair && res.Variation > res.Before.Variation {
					t.Errorf("%v: --fair raised the variation", args)
				}
				got.WriteString(strings.Join(args[1:], " ") + "\n" + out)
			}
		}
	}
	golden := filepath.Join("testdata", "select-fig1.golden.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if got.String() != string(want) {
		t.Errorf("output differs from %s:\n%s", golden, got.String())
	}
}

func TestSelectErrors(t *testing.T) {
	fig, _ := os.ReadFile("testdata/select-fig1.json")
	good := string(fig)
	cases := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"no bound", good, []string{"select"}, "exactly one of --bound"},
		{"both", good, []string{"select", "--bound", "5", "--factor", "1"}, "exactly one of --bound"},
		{"below gamma", good, []string{"select", "--bound", "90"}, "below Γ = 98 ms"},
		{"factor below 1", good, []string{"select", "--model", "p2p", "--factor", "0.5"}, "below Γ = 98 ms"},
		{"bad model", good, []string{"select", "--model", "mesh", "--factor", "1"}, `--model "mesh"`},
		{"bad algo", good, []string{"select", "--algo", "best", "--factor", "1"}, `--algo "best"`},
		{"algo model", good, []string{"select", "--algo", "spdp2p-h", "--factor", "1"}, "is for --model p2p"},
		{"NaN factor", good, []string{"select", "--factor", "NaN"}, "--factor NaN"},
		{"empty", "", []string{"select", "--factor", "1"}, "empty input"},
		{"unknown field", `{"servers":["A"],"players":[],"x":1}`, []string{"select", "--factor", "1"}, `unknown field "x"`},
		{"no players", `{"servers":["A"],"players":[]}`, []string{"select", "--factor", "1"}, "no players"},
		{"unknown server", `{"servers":["A"],"players":[{"name":"p","latency":{"A":1,"Z":2}}]}`, []string{"select", "--factor", "1"}, `unknown server "Z"`},
		{"missing latency", `{"servers":["A","B"],"links":[{"a":"A","b":"B","ms":1}],"players":[{"name":"p","latency":{"A":1}}]}`, []string{"select", "--factor", "1"}, `no latency to server "B"`},
		{"negative", `{"servers":["A"],"players":[{"name":"p","latency":{"A":-3}}]}`, []string{"select", "--factor", "1"}, "latency -3"},
		{"link ms", `{"servers":["A","B"],"links":[{"a":"A","b":"B"}],"players":[{"name":"p","latency":{"A":1,"B":1}}]}`, []string{"select", "--factor", "1"}, "field ms: missing"},
		{"disconnected", `{"servers":["A","B"],"players":[{"name":"p","latency":{"A":1,"B":1}}]}`, []string{"select", "--factor", "1"}, "disconnected"},
		{"link to unknown", `{"servers":["A"],"links":[{"a":"A","b":"Q","ms":1}],"players":[{"name":"p","latency":{"A":1}}]}`, []string{"select", "--factor", "1"}, `unknown server "Q"`},
	}
	for _, c := range cases {
		code, out, errs := run(t, c.stdin, c.args...)
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.name, code, out, errs, c.want)
		}
	}
}

func TestLabSPDSmall(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run(t, "", "lab", "spd", "--quick", "--no-plots", "--quiet", "--no-real", "--networks", "1", "--out", dir)
	if code != 0 || !strings.Contains(out, "Gap to the exact solver") {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, args := range [][]string{
		{"lab", "spd", "--networks", "-1"},
		{"lab", "spd", "--no-real", "--servers", "Paris"},
		{"lab", "spd", "--servers", "Atlantis,Paris,London", "--quick"},
	} {
		if code, out, _ := run(t, "", args...); code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", args, code, out)
		}
	}
}

// TestSelectMatchingP2PBelowGamma: alg-mp's P2P network (delay 88 ms on
// Fig. 1) meets bounds below Γ = 98 ms; it is refused only below its own
// delay, and the client-server model still refuses any bound below Γ.
func TestSelectMatchingP2PBelowGamma(t *testing.T) {
	fig, _ := os.ReadFile("testdata/select-fig1.json")
	for _, b := range []string{"90", "88", "98"} {
		code, out, errs := run(t, string(fig), "select", "--model", "p2p", "--algo", "matching", "--bound", b)
		if code != 0 || !strings.Contains(out, `"delay":88`) {
			t.Errorf("--bound %s: exit %d, stdout %q, stderr %q; want exit 0 and delay 88", b, code, out, errs)
		}
	}
	code, out, errs := run(t, string(fig), "select", "--model", "p2p", "--algo", "matching", "--bound", "87.9")
	if code == 0 || out != "" || !strings.Contains(errs, "p2p delay 88 ms > bound 87.9 ms") {
		t.Errorf("--bound 87.9: exit %d, stdout %q, stderr %q; want a failure naming delay 88", code, out, errs)
	}
	code, out, errs = run(t, string(fig), "select", "--model", "cs", "--algo", "matching", "--bound", "90")
	if code != 2 || out != "" || !strings.Contains(errs, "below Γ = 98 ms") {
		t.Errorf("cs --bound 90: exit %d, stdout %q, stderr %q; want exit 2 and Γ", code, out, errs)
	}
}
