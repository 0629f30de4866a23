package cli

import (
	"strings"
	"testing"
)

func TestDemoSmall(t *testing.T) {
	code, out, errs := runCLI(t, "", "demo", "placement", "--players", "200", "--seed", "3")
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr %q", code, errs)
	}
	for _, want := range []string{"200 players", "10 servers", "New York", "mean ms", "p95 ms", "max ms", "≤100 ms",
		"moved/event", "time/event", "\nsa ", "\ngreedy ", "\nignore ", "\noptimal* ", "10 of 10 snapshots"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = runCLI(t, "", "demo", "placement", "--players", "150", "--servers", "London, Tokyo,Sao Paulo", "--load", "0.5", "--churn", "30")
	if code != 0 || !strings.Contains(out, "London") || !strings.Contains(out, "3 servers") || !strings.Contains(out, "300 seats") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestDemoBadUsage(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "placement", "--players", "0"},
		{"demo", "placement", "--load", "0"},
		{"demo", "placement", "--load", "1.2"},
		{"demo", "placement", "--servers-n", "0"},
		{"demo", "placement", "--servers-n", "21"},
		{"demo", "placement", "--servers", "London", "--servers-n", "3"},
		{"demo", "placement", "--servers", "Atlantis"},
		{"demo", "placement", "--servers", "London,,Paris"},
		{"demo", "placement", "--churn", "-1"},
		{"demo", "placement", "--players", "2", "--servers-n", "5", "--load", "1"},
		{"demo", "placement", "stray"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing, a message", args, code, out, errs)
		}
	}
}
