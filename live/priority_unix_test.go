//go:build unix

package live

import "syscall"

// lowPriority gives process pid the lowest CPU priority (nice 19).
func lowPriority(pid int) { _ = syscall.Setpriority(syscall.PRIO_PROCESS, pid, 19) }
