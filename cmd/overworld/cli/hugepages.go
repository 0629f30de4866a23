package cli

import (
	"os"
	"sync"
	"time"
)

// hugePages asks the operating system to back the process's heap with
// transparent huge pages while a large simulation runs, and returns a
// function that stops asking. A world of thousands of nodes keeps most of
// a gigabyte of node state that every event touches somewhere, and on 4
// KiB pages the TLB misses as often as the caches do: at 10,000 players,
// 2 MiB pages make the run 4–6% faster on the 2-core test machine, event
// for event the same (BENCHMARKS.md).
//
// On Linux it madvises every large anonymous read-write mapping (the Go
// heap's arenas) with MADV_HUGEPAGE, and collapses what is already
// resident (MADV_COLLAPSE, Linux 6.1 and later), now and then every
// period, since the heap maps new arenas as it grows. The kernel's
// transparent huge pages must be in "madvise" or "always" mode
// (/sys/kernel/mm/transparent_hugepage/enabled). Elsewhere, or with
// OVERWORLD_HUGEPAGES=off in the environment, it does nothing. It never
// changes what a simulation computes.
func hugePages(period time.Duration) (stop func()) {
	if os.Getenv("OVERWORLD_HUGEPAGES") == "off" || !adviseSupported {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(period)
		defer t.Stop()
		var a hugeAdvisor
		for {
			if _, err := a.advise(); err != nil {
				return // no /proc, or the kernel refuses: nothing more to do
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}
