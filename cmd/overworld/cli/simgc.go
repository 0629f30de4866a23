package cli

import (
	"os"
	"runtime/debug"
)

// simGCPercent is the collector's target (GOGC) that simGC sets.
const simGCPercent = 200

// simGC sets the garbage collector's target to simGCPercent while a large
// simulation runs, and returns a function that restores the previous
// target. A world of thousands of nodes keeps most of a gigabyte live, and
// at the default target of 100 the collector marks all of it every few
// game seconds: at 10,000 players, 200 makes a 12-game-second run 4%
// faster for 11% more peak memory (1.18 → 1.31 GB; BENCHMARKS.md). It
// does nothing when the GOGC environment variable is set: the user's
// choice wins. It never changes what a simulation computes.
func simGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(simGCPercent)
	return func() { debug.SetGCPercent(old) }
}
