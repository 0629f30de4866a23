package live

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNextIncarnation: a fresh directory's first run is 1, every later
// run one more, the file always holds the latest; a file left by an
// older daemon (0) gives 1; and bad files or a used-up counter are
// ErrConfig naming the file, with the file unchanged and no temporary
// file left behind.
func TestNextIncarnation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, IncarnationFile)
	for want := uint16(1); want <= 3; want++ {
		got, err := NextIncarnation(dir)
		if err != nil || got != want {
			t.Fatalf("run %d: incarnation %d, %v", want, got, err)
		}
		if b, _ := os.ReadFile(path); string(b) != strconv.Itoa(int(want))+"\n" {
			t.Fatalf("run %d: file holds %q", want, b)
		}
	}
	for _, c := range []struct {
		content string
		want    uint16
		err     string
	}{
		{"0", 1, ""},
		{" 41 \n", 42, ""},
		{"65534", 65535, ""},
		{"65535", 0, "used all of its 65535 incarnations"},
		{"65536", 0, `holds "65536", not an incarnation`},
		{"-1", 0, "not an incarnation"},
		{"seven", 0, "not an incarnation"},
		{"", 0, "not an incarnation"},
		{"12 13", 0, "not an incarnation"},
	} {
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := NextIncarnation(dir)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("file %q: %d, %v; want %d", c.content, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), path) {
			t.Errorf("file %q: %d, %v; want ErrConfig naming %s and containing %q", c.content, got, err, path, c.err)
		}
		if b, _ := os.ReadFile(path); string(b) != c.content {
			t.Errorf("file %q changed to %q by a refused run", c.content, b)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the data directory, want the counter alone", len(entries))
	}
	if _, err := NextIncarnation(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing data directory was accepted")
	}
}

// FuzzNextIncarnation: whatever the counter file holds, the next run
// either gets one more than a valid counter (written back), or an
// ErrConfig with the file unchanged; never a panic.
func FuzzNextIncarnation(f *testing.F) {
	for _, s := range []string{"0", "1\n", "65534", "65535", "x", "", " 7 ", "00012"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, IncarnationFile)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := NextIncarnation(dir)
		after, _ := os.ReadFile(path)
		if err != nil {
			if !errors.Is(err, ErrConfig) || string(after) != string(b) {
				t.Fatalf("%q: error %v, file now %q", b, err, after)
			}
			return
		}
		v, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 16)
		if perr != nil || got != max(uint16(v)+1, 1) || string(after) != strconv.Itoa(int(got))+"\n" {
			t.Fatalf("%q: incarnation %d, file now %q", b, got, after)
		}
	})
}

// TestClockIncarnation: the clock's incarnation rises by one a second,
// is never 0, cycles after MaxIncarnation seconds, and is ready at the
// next whole second.
func TestClockIncarnation(t *testing.T) {
	base := time.Unix(1_800_000_000, 250e6)
	a, ready := ClockIncarnation(base)
	if !ready.Equal(time.Unix(1_800_000_001, 0)) {
		t.Errorf("ready at %v, want the next second", ready)
	}
	if b, _ := ClockIncarnation(base.Add(time.Second)); b != a+1 && !(a == MaxIncarnation && b == 1) {
		t.Errorf("a second later: %d after %d", b, a)
	}
	if b, _ := ClockIncarnation(base.Add(700 * time.Millisecond)); b != a {
		t.Errorf("within the second: %d, then %d", a, b)
	}
	for s := int64(0); s < 3*MaxIncarnation; s += 997 {
		inc, _ := ClockIncarnation(time.Unix(s, 0))
		if inc == 0 || inc != uint16(1+s%MaxIncarnation) {
			t.Fatalf("second %d: incarnation %d", s, inc)
		}
	}
	if inc, _ := ClockIncarnation(time.Unix(-5, 0)); inc == 0 {
		t.Error("a time before 1970 gave incarnation 0")
	}
}
