package lab

import (
	"os"
	"runtime/debug"
	"testing"
)

// TestSimGC: SimGC sets SimGCPercent and restores the previous target, and
// leaves the collector alone when GOGC is set.
func TestSimGC(t *testing.T) {
	before := debug.SetGCPercent(123)
	defer debug.SetGCPercent(before)
	t.Setenv("GOGC", "150") // restored after the test, with the variable's presence
	restore := SimGC()
	if got := debug.SetGCPercent(123); got != 123 {
		t.Fatalf("with GOGC set, SimGC changed the target to %d", got)
	}
	restore()
	os.Unsetenv("GOGC")
	restore = SimGC()
	if got := debug.SetGCPercent(SimGCPercent); got != SimGCPercent {
		t.Fatalf("SimGC set %d, want %d", got, SimGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(123); got != 123 {
		t.Fatalf("after restore the target is %d, want 123", got)
	}
}
