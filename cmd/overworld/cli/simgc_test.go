package cli

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestSimGC: simGC sets simGCPercent and restores the previous target, and
// leaves the collector alone when GOGC is set.
func TestSimGC(t *testing.T) {
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	t.Setenv("GOGC", "150") // restored after the test, with the variable's presence
	restore := simGC()
	if got := debug.SetGCPercent(123); got != 123 {
		t.Fatalf("with GOGC set, simGC changed the target to %d", got)
	}
	restore()
	os.Unsetenv("GOGC")
	restore = simGC()
	if got := debug.SetGCPercent(simGCPercent); got != simGCPercent {
		t.Fatalf("simGC set %d, want %d", got, simGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(123); got != 123 {
		t.Fatalf("after restore the target is %d, want 123", got)
	}
}
