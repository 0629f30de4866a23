package cli

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
)

// episodeLog writes the missing stretches of a run's views (truth.Episode)
// to a CSV file, one row each, marked with the side that saw it
// ("simulator", "live"): where the missing replicas come from, pair by
// pair. Its methods are called from one goroutine at a time.
type episodeLog struct {
	path string
	f    *os.File
	w    *csv.Writer
	// Per side: the stretches written and the longest.
	count   map[string]int
	longest map[string]time.Duration
}

// episodeHeader is the file's first row.
var episodeHeader = []string{"side", "viewer", "viewer_city", "object", "kind", "creator", "creator_city",
	"entered_ms", "from_ms", "to_ms", "missing_ms", "ended", "lost", "reach_ms"}

// openEpisodeLog creates the file at path (truncating it) and writes the
// header.
func openEpisodeLog(path string) (*episodeLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	l := &episodeLog{path: path, f: f, w: csv.NewWriter(f), count: map[string]int{}, longest: map[string]time.Duration{}}
	if err := l.w.Write(episodeHeader); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// tracer returns the function that writes one side's stretches: those
// that end at or after warmup (the side's measures leave the earlier
// reports out), with each node's city from cities (node ID → city; "" if
// unknown). Times are in milliseconds on the side's own clock (the
// simulator's from its start, the live nodes' from the cluster's epoch).
func (l *episodeLog) tracer(side string, warmup time.Duration, cities map[wire.NodeID]string) func(truth.Episode) {
	ms := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64)
	}
	return func(e truth.Episode) {
		if e.To < warmup {
			return
		}
		ended := "left"
		if e.Held {
			ended = "held"
		}
		reach := ""
		if e.Reach >= 0 {
			reach = ms(e.Reach)
		}
		creator := node.Home(e.Object)
		// A write error stays in the csv.Writer and is returned by close.
		_ = l.w.Write([]string{side, strconv.FormatUint(uint64(e.Node), 10), cities[e.Node], e.Object.String(), e.Kind,
			strconv.FormatUint(uint64(creator), 10), cities[creator], ms(e.Entered), ms(e.From), ms(e.To), ms(e.To - e.From),
			ended, strconv.FormatBool(e.Lost), reach})
		l.count[side]++
		l.longest[side] = max(l.longest[side], e.To-e.From)
	}
}

// summary says what was written, per side.
func (l *episodeLog) summary() string {
	s := fmt.Sprintf("missing stretches written to %s:", l.path)
	for _, side := range []string{"live", "simulator"} {
		s += fmt.Sprintf(" %s %d (longest %v)", side, l.count[side], l.longest[side])
	}
	return s
}

// close flushes and closes the file; a second call does nothing.
func (l *episodeLog) close() error {
	if l.f == nil {
		return nil
	}
	l.w.Flush()
	err := errors.Join(l.w.Error(), l.f.Close())
	l.f = nil
	return err
}

// nodeCities maps node IDs to their cities (ids[i] in cities[i]).
func nodeCities(ids []wire.NodeID, cities []string) map[wire.NodeID]string {
	m := map[wire.NodeID]string{}
	for i, id := range ids {
		if i < len(cities) {
			m[id] = cities[i]
		}
	}
	return m
}
