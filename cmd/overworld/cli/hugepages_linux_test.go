//go:build linux

package cli

import "testing"

// TestAnonRW: only private anonymous read-write mappings are advised.
func TestAnonRW(t *testing.T) {
	for _, c := range []struct {
		line   string
		lo, hi uint64
		ok     bool
	}{
		{"c000000000-c004000000 rw-p 00000000 00:00 0 \n", 0xc000000000, 0xc004000000, true},
		{"7f0000000000-7f0000400000 rw-p 00000000 00:00 0", 0x7f0000000000, 0x7f0000400000, true},
		{"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n", 0, 0, false},
		{"7ffc5a2c6000-7ffc5a2e7000 rw-p 00000000 00:00 0          [stack]\n", 0, 0, false},
		{"01b4b000-01b6c000 rw-p 00000000 00:00 0                  [heap]\n", 0, 0, false},
		{"7f0000000000-7f0000400000 rw-s 00000000 00:05 1234", 0, 0, false},
		{"7f0000000000-7f0000400000 ---p 00000000 00:00 0", 0, 0, false},
		{"zz-7f0000400000 rw-p 00000000 00:00 0", 0, 0, false},
		{"7f0000400000-7f0000000000 rw-p 00000000 00:00 0", 0, 0, false},
		{"", 0, 0, false},
	} {
		lo, hi, ok := anonRW([]byte(c.line))
		if ok != c.ok || lo != c.lo || hi != c.hi {
			t.Errorf("%q: %#x-%#x %v, want %#x-%#x %v", c.line, lo, hi, ok, c.lo, c.hi, c.ok)
		}
	}
	var a hugeAdvisor
	if _, err := a.advise(); err != nil {
		t.Logf("advise: %v (no transparent huge pages here)", err)
	}
}
