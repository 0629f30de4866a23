package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBalanceGolden runs the example state with every method and
// criterion and compares with the checked-in output (regenerate with
// -update).
func TestBalanceGolden(t *testing.T) {
	for _, m := range []string{"balance", "pack"} {
		for _, c := range []string{"LL", "PD", "score"} {
			code, out, errs := run(t, "", "balance", "--method", m, "--criterion", c, "testdata/balance-small.json")
			if code != 0 {
				t.Fatalf("%s %s: exit %d: %s", m, c, code, errs)
			}
			golden := filepath.Join("testdata", "balance-small."+m+"."+c+".golden.json")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if out != string(want) {
				t.Errorf("%s %s: output differs from %s:\n%s", m, c, golden, out)
			}
		}
	}
}

func TestBalanceRejectsBadInput(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{`, "malformed JSON"},
		{`{"servers":[{"id":"a"}]}`, "max_load: missing"},
		{`{"max_load":10,"servers":[]}`, "servers: no servers"},
		{`{"max_load":10,"margin":1,"servers":[{"id":"a"}]}`, "margin"},
		{`{"max_load":10,"servers":[{"id":"a"},{"id":"a"}]}`, "servers[1].id: duplicate"},
		{`{"max_load":10,"servers":[{"id":"a","main":-1}]}`, "servers[0].main"},
		{`{"max_load":10,"servers":[{"id":"a"}],"instances":[{"id":"x","size":0,"server":"a"}]}`, "instances[0].size"},
		{`{"max_load":10,"servers":[{"id":"a"}],"instances":[{"id":"x","size":2,"server":"b"}]}`, "unknown server"},
		{`{"max_load":10,"servers":[{"id":"a"}],"instances":[{"id":"x","size":2,"server":"a","players":[{"id":"p"}],"rtt":[[0]]}]}`, "1 players for size 2"},
		{`{"max_load":10,"servers":[{"id":"a"}],"instances":[{"id":"x","size":2,"server":"a","players":[{"id":"p"},{"id":"q"}],"rtt":[[0,1],[1,-1]]}]}`, "rtt[1][1]"},
		{`{"max_load":10,"servers":[{"id":"a"}],"instances":[{"id":"x","size":2,"server":"a","players":[{"id":"p","leave":2},{"id":"q"}],"rtt":[[0,1],[1,0]]}]}`, "players[0].leave"},
		{`{"max_load":10,"servers":[{"id":"a"}],"bogus":1}`, "unknown field"},
	} {
		code, out, errs := run(t, c.in, "balance")
		if code != 2 || out != "" || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing, %q", c.in, code, out, errs, c.want)
		}
	}
	for _, args := range [][]string{{"balance", "--method", "x"}, {"balance", "--criterion", "x"}, {"balance", "--failover-ms", "-1"}} {
		if code, out, _ := run(t, "{}", args...); code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q", args, code, out)
		}
	}
}

func TestLabBalanceSmall(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run(t, "", "lab", "balance", "--quick", "--runs", "2", "--sweep", "1", "--samples", "200", "--quiet", "--out", dir)
	if code != 0 || !strings.Contains(out, "Table 5") || !strings.Contains(out, "1337") {
		t.Fatalf("exit %d: %s\n%s", code, errs, out)
	}
	for _, f := range []string{"balance-a.csv", "balance-b.csv", "fig9-loads.png", "fig10-11.png", "fig12-b.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	for _, args := range [][]string{
		{"lab", "balance", "--runs", "-1"},
		{"lab", "balance", "--sweep", "-2"},
		{"lab", "balance", "--cluster", "Atlantis", "--runs", "1"},
	} {
		if code, out, _ := run(t, "", args...); code != 2 || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing", args, code, out)
		}
	}
}
