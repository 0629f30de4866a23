//go:build linux

package cli

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
)

const adviseSupported = true

// hugeMin is the smallest mapping worth advising: a huge page is 2 MiB.
const hugeMin = 4 << 20

// madvCollapse is MADV_COLLAPSE (Linux 6.1): make huge pages of what is
// already resident, at once (the syscall package predates it).
const madvCollapse = 25

// hugeAdvisor remembers how far each mapping was collapsed, so that a
// growing arena is collapsed once, not on every pass.
type hugeAdvisor struct {
	done map[uint64]uint64 // mapping start → end of what was collapsed
}

// advise madvises every anonymous read-write mapping of at least hugeMin
// bytes in /proc/self/maps with MADV_HUGEPAGE (so that pages touched from
// now on come as huge pages) and MADV_COLLAPSE over what it had not
// collapsed yet (so that pages touched before do too), and returns how
// many bytes it advised.
func (a *hugeAdvisor) advise() (int64, error) {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, err
	}
	if a.done == nil {
		a.done = map[uint64]uint64{}
	}
	var total int64
	for line := range bytes.Lines(maps) {
		lo, hi, ok := anonRW(line)
		if !ok || hi-lo < hugeMin {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), syscall.MADV_HUGEPAGE); e != 0 {
			if errors.Is(e, syscall.EINVAL) {
				return total, e // no transparent huge pages in this kernel
			}
			continue // the mapping changed meanwhile
		}
		total += int64(hi - lo)
		from := max(lo, a.done[lo])
		if from < hi {
			// Best effort: an older kernel refuses MADV_COLLAPSE, and
			// khugepaged collapses the pages later instead.
			syscall.Syscall(syscall.SYS_MADVISE, uintptr(from), uintptr(hi-from), madvCollapse)
			a.done[lo] = hi
		}
	}
	return total, nil
}

// anonRW parses one line of /proc/self/maps ("lo-hi perms offset dev inode
// [path]") and reports the range of a private anonymous read-write mapping.
func anonRW(line []byte) (lo, hi uint64, ok bool) {
	f := bytes.Fields(line)
	if len(f) != 5 || string(f[1]) != "rw-p" || string(f[4]) != "0" {
		return 0, 0, false // a file, a named region ([stack], [heap]) or not writable
	}
	a, b, found := bytes.Cut(f[0], []byte{'-'})
	if !found {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseUint(string(a), 16, 64)
	hi, err2 := strconv.ParseUint(string(b), 16, 64)
	if err1 != nil || err2 != nil || hi <= lo {
		return 0, 0, false
	}
	return lo, hi, true
}
