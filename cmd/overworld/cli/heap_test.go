package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// TestTuneHeap: tuneHeap sets the collector's target (without GOGC in the
// environment) and its undo restores it.
func TestTuneHeap(t *testing.T) {
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	if _, set := os.LookupEnv("GOGC"); set {
		t.Setenv("GOGC", "") // restored after the test, with the variable's presence
		os.Unsetenv("GOGC")
	}
	undo := tuneHeap()
	if got := debug.SetGCPercent(simGCPercent); got != simGCPercent {
		t.Errorf("tuned target %d, want %d", got, simGCPercent)
	}
	undo()
	if got := debug.SetGCPercent(123); got != 123 {
		t.Errorf("after undo the target is %d, want 123", got)
	}
}

// TestTuneHeapFlag: the simulation commands take --tune-heap, and the
// same flags give the same summary with the heap tuned or not.
func TestTuneHeapFlag(t *testing.T) {
	var sums [2][]byte
	for i, flag := range []string{"--tune-heap", "--tune-heap=false"} {
		dir := t.TempDir()
		code, _, errs := runCLI(t, "", "demo", flag, "--nodes", "3", "--players-per-node", "2", "--duration", "3s", "--quiet", "--out", dir)
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", flag, code, errs)
		}
		b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = b
	}
	if !bytes.Equal(sums[0], sums[1]) {
		t.Error("the heap tuning changed the summary")
	}
	for _, args := range [][]string{{"lab", "world", "--help"}, {"lab", "colyseus", "--help"}, {"demo", "--help"}} {
		if code, out, _ := runCLI(t, "", args...); code != 0 || !bytes.Contains([]byte(out), []byte("--tune-heap")) {
			t.Errorf("%v: exit %d, no --tune-heap in the help", args, code)
		}
	}
}
