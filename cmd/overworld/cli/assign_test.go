package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overworld/overworld/internal/placefile"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// TestAssignGolden plays the paper's Fig. 1/Fig. 3 scenario with every
// method and compares with the checked-in output (regenerate with -update).
func TestAssignGolden(t *testing.T) {
	in, err := os.ReadFile("testdata/assign-fig1.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"sa", "greedy", "ignore", "optimal", "sa-rebuild"} {
		code, out, errs := run(t, string(in), "assign", "--indent", "--method", m)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", m, code, errs)
		}
		golden := filepath.Join("testdata", "assign-fig1."+m+".golden.json")
		if *update {
			if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if out != string(want) {
			t.Errorf("%s: output differs from %s:\n%s", m, golden, out)
		}
	}
}

func TestAssignReadsFile(t *testing.T) {
	code, out, errs := run(t, "", "assign", "testdata/assign-fig1.json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res placefile.AssignOutput
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Final.TotalDelay != 22 || len(res.Events) != 7 {
		t.Fatalf("final total %v, %d events; want 22, 7", res.Final.TotalDelay, len(res.Events))
	}
}

func TestAssignRejectsBadInput(t *testing.T) {
	const ok = `{"mirrors":[{"id":"G","capacity":1},{"id":"H","capacity":1}],"events":[`
	cases := []struct {
		name, in, want string
		args           []string
	}{
		{"empty", ``, "empty input", nil},
		{"syntax", "{\"mirrors\":\n[}", "line 2, column 2", nil},
		{"trailing", `{"mirrors":[],"events":[]} {}`, "unexpected data", nil},
		{"unknown top field", `{"mirrors":[],"events":[],"x":1}`, `unknown field "x"`, nil},
		{"no mirrors field", `{"events":[]}`, `missing field "mirrors"`, nil},
		{"no events field", `{"mirrors":[{"id":"G","capacity":1}]}`, `missing field "events"`, nil},
		{"no mirrors", `{"mirrors":[],"events":[]}`, "no mirrors", nil},
		{"mirror without id", `{"mirrors":[{"capacity":1}],"events":[]}`, "mirror 0: field id", nil},
		{"mirror without capacity", `{"mirrors":[{"id":"G"}],"events":[]}`, "mirror 0 (\"G\"): field capacity: missing", nil},
		{"zero capacity", `{"mirrors":[{"id":"G","capacity":0}],"events":[]}`, "field capacity: 0", nil},
		{"duplicate mirror", `{"mirrors":[{"id":"G","capacity":1},{"id":"G","capacity":1}],"events":[]}`, `"G" used at 0 and 1`, nil},
		{"capacity type", `{"mirrors":[{"id":"G","capacity":"2"}],"events":[]}`, "field capacity", nil},
		{"bad op", ok + `{"op":"jump","player":"a"}]}`, `event 0: field op: "jump"`, nil},
		{"missing op", ok + `{"player":"a"}]}`, "event 0: field op: missing", nil},
		{"missing player", ok + `{"op":"join","delays":{"G":1,"H":1}}]}`, "event 0: field player", nil},
		{"missing delays", ok + `{"op":"join","player":"a"}]}`, "event 0 (join \"a\"): field delays: missing", nil},
		{"missing mirror delay", ok + `{"op":"join","player":"a","delays":{"G":1}}]}`, `field delays.H: cma: bad delay: player "a" has no delay to mirror "H"`, nil},
		{"unknown mirror", ok + `{"op":"join","player":"a","delays":{"G":1,"H":1,"X":2}}]}`, `mirror "X"`, nil},
		{"negative delay", ok + `{"op":"join","player":"a","delays":{"G":-1,"H":1}}]}`, "field delays.G: cma: bad delay: player \"a\" has delay -1 to mirror \"G\"", nil},
		{"string delay", ok + `{"op":"join","player":"a","delays":{"G":"1","H":1}}]}`, "event 0: field delays", nil},
		{"unknown event field", ok + `{"op":"join","player":"a","delay":{}}]}`, `event 0: unknown field "delay"`, nil},
		{"duplicate join", ok + `{"op":"join","player":"a","delays":{"G":1,"H":1}},{"op":"join","player":"a","delays":{"G":1,"H":1}}]}`, "event 1 (join \"a\"): field player", nil},
		{"unknown leave", ok + `{"op":"leave","player":"z"}]}`, "event 0 (leave \"z\"): field player", nil},
		{"leave with delays", ok + `{"op":"join","player":"a","delays":{"G":1,"H":1}},{"op":"leave","player":"a","delays":{"G":1}}]}`, "not allowed on a leave", nil},
		{"full", ok + `{"op":"join","player":"a","delays":{"G":1,"H":1}},{"op":"join","player":"b","delays":{"G":1,"H":1}},{"op":"join","player":"c","delays":{"G":1,"H":1}}]}`, "event 2 (join \"c\"): field player: cma: no capacity", nil},
		{"bad method", `{"mirrors":[{"id":"G","capacity":1}],"events":[]}`, "--method", []string{"--method", "fastest"}},
		{"missing file", ``, "no such file", []string{"/nonexistent/scenario.json"}},
		{"two files", ``, "accepts at most 1 arg", []string{"a.json", "b.json"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, c.in, append([]string{"assign"}, c.args...)...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (stderr %q)", code, errs)
			}
			if out != "" {
				t.Errorf("wrote to stdout on error: %q", out)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr %q does not mention %q", errs, c.want)
			}
		})
	}
}

func TestUnknownCommand(t *testing.T) {
	code, out, errs := run(t, "", "frobnicate")
	if code != 2 || out != "" || !strings.Contains(errs, "unknown command") {
		t.Fatalf("exit %d out %q err %q", code, out, errs)
	}
}
