package cli

import (
	"strings"
	"testing"
)

// TestLabInstances: one short run prints the instance lines; bad flags
// are refused with exit 2 before anything runs.
func TestLabInstances(t *testing.T) {
	code, out, errs := run(t, "", "lab", "instances", "--runs", "1", "--duration", "15s", "--quiet")
	if code != 0 || !strings.Contains(out, "overflowed to player hosts") || !strings.Contains(out, "acknowledged writes") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	for _, args := range [][]string{
		{"--criterion", "best"},
		{"--runs", "0"},
		{"--capacity", "-1"},
		{"--session", "-1s"},
		{"--duration", "1s"},
	} {
		code, out, errs := run(t, "", append([]string{"lab", "instances", "--quiet"}, args...)...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and a message", args, code, out, errs)
		}
	}
}
