//go:build unix

package cli

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used: the
// benchmarks report speed per CPU second too, which the shared machine's
// load disturbs less than wall time.
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
