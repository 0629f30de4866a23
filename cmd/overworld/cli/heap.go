package cli

import (
	"time"

	"github.com/spf13/pflag"
)

// The simulation commands (demo, lab world, lab colyseus) tune the Go heap
// of this process while a large world runs: it is the command's business,
// not the library's (lab/harness changes no process-wide setting). Both
// tunings are measured in BENCHMARKS.md and never change what a
// simulation computes; --tune-heap=false turns them off, as
// OVERWORLD_HUGEPAGES=off and a GOGC in the environment turn off each.

// hugePagePeriod is how often hugePages advises the heap's new arenas.
const hugePagePeriod = 250 * time.Millisecond

// tuneHeap backs the heap with transparent huge pages (hugePages) and
// makes the collector less eager (simGC) until the returned function is
// called.
func tuneHeap() (undo func()) {
	stopPages := hugePages(hugePagePeriod)
	restoreGC := simGC()
	return func() {
		restoreGC()
		stopPages()
	}
}

// addTuneHeapFlag adds --tune-heap (default on) to a simulation command's
// flags.
func addTuneHeapFlag(fl *pflag.FlagSet, on *bool) {
	fl.BoolVar(on, "tune-heap", true, "back the heap with transparent huge pages and set GOGC=200 while the simulation runs "+
		"(faster large worlds, same results; OVERWORLD_HUGEPAGES=off or GOGC in the environment override each)")
}
