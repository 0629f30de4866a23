package live

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A node's incarnation numbers its runs (node.Config.Incarnation): every
// start of a node ID must get a higher one than any earlier run, since
// the object IDs a node creates and its writers' sequence numbers carry
// it. The daemon takes it from a counter in its data directory
// (NextIncarnation) or, without one, from the wall clock
// (ClockIncarnation).

// IncarnationFile is the file in a node's data directory that holds the
// incarnation of its latest run, in decimal.
const IncarnationFile = "incarnation"

// MaxIncarnation is the last incarnation a node ID can have.
const MaxIncarnation = 1<<16 - 1

// NextIncarnation returns the incarnation of a new run of the node whose
// data directory is dir (which must exist): one more than the counter in
// dir/IncarnationFile, or 1 when the file does not exist (a first run, or
// a node whose earlier runs all used 0). It writes the new value back
// before returning, atomically (a temporary file, synced, renamed over the
// old one, the directory synced), so that a crash at any point leaves the
// old value or the new one. A file that does not hold a number from 0 to
// MaxIncarnation−1, and a counter that reached MaxIncarnation, are errors
// wrapping ErrConfig that name the file; nothing is written then.
func NextIncarnation(dir string) (uint16, error) {
	path := filepath.Join(dir, IncarnationFile)
	last := -1
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("data_dir: %w", err)
	default:
		v, perr := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if perr != nil || v > MaxIncarnation {
			return 0, fmt.Errorf("%w: data_dir: %s holds %q, not an incarnation (want a number from 0 to %d: the node's latest run's); "+
				"write a number at least as high as any earlier run's there, or remove the file only if the node never ran with failover",
				ErrConfig, path, truncate(string(b), 40), MaxIncarnation-1)
		}
		last = int(v)
	}
	next := max(last+1, 1)
	if next > MaxIncarnation {
		return 0, fmt.Errorf("%w: data_dir: %s: node has used all of its %d incarnations; give it a new ID", ErrConfig, path, MaxIncarnation)
	}
	if err := writeAtomic(path, []byte(strconv.Itoa(next)+"\n")); err != nil {
		return 0, fmt.Errorf("data_dir: writing the incarnation: %w", err)
	}
	return uint16(next), nil
}

// ClockIncarnation derives an incarnation from the wall-clock time t, for
// a node without a data directory: 1 + (Unix seconds mod MaxIncarnation),
// which rises by one every second through a cycle of MaxIncarnation
// seconds (about 18.2 hours) and then starts again from 1. ready is the
// next whole second: a node that starts running only then gets a lower
// incarnation than any later start within the cycle. A restart across the
// cycle's end gets a lower incarnation than the run before it (peers then
// learn of the restart from their failure detectors, not its heartbeats),
// and one exactly a whole number of cycles after a run whose objects still
// live would reuse that run's IDs: give nodes that run for days a data
// directory.
func ClockIncarnation(t time.Time) (inc uint16, ready time.Time) {
	sec := t.Unix()
	m := sec % MaxIncarnation
	if m < 0 {
		m += MaxIncarnation
	}
	return uint16(1 + m), time.Unix(sec+1, 0)
}

// writeAtomic replaces path with data: a temporary file in the same
// directory, synced, renamed over path, then the directory synced.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync() // best effort: not every file system syncs directories
		d.Close()
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
