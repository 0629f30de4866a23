package harness

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/world"
)

// KindView is the view measures of one object kind, as the ground-truth
// observer keeps them (truth.KindView): missing replicas at the
// simulator's grace periods, updates that bypass discovery, replicas
// already held when an object enters a view.
type KindView = truth.KindView

// TraceEpisodes has every missing stretch of an object in a node's view
// given to fn as it ends (truth.Observer.TraceEpisodes; the kind measures
// are on in every world); nil stops the tracing.
func (w *World) TraceEpisodes(fn func(truth.Episode)) {
	if fn == nil {
		fn = func(truth.Episode) {}
	}
	_ = w.truth.TraceEpisodes(fn) // the kind measures are on, fn is set: cannot fail
}

// TrackKinds turns on the per-kind view measures (KindViews) from now on,
// named by the game's schemas, at the simulator's grace periods and after
// its warm-up. New turns them on in every world (the summary's missing
// replicas of moving objects come from them); a second call changes
// nothing. They cost about as much again as the simulator's own
// missing-replica accounting.
func (w *World) TrackKinds() {
	names := make([]string, w.reg.Len())
	for i := range names {
		names[i] = w.reg.Schema(world.Kind(i + 1)).Name()
	}
	// The grace periods are the recorder's (validated): this fails only
	// when the measures are already on, and then changes nothing.
	_ = w.truth.TrackKinds(names, w.static, w.sim.Recorder().Grace(), max(w.cfg.Warmup, 0))
}

// KindViews returns the per-kind view measures so far, by kind (the game
// registry's order), or nil unless TrackKinds was called.
func (w *World) KindViews() []KindView { return w.truth.KindViews() }

// WriteKindsCSV writes the per-kind view measures as CSV: one row per
// kind with whether it moves, its (report, object) pairs in view, its
// missing share at every grace period, its entries and the share held on
// entry, the share of its updates sent straight to a replica already in
// view, and its discoveries found and abandoned (left the view before
// found) with the abandoned share; then, when the floor was measured
// (KindView.Floor), its share at every grace period and the abandoned
// objects no protocol could have delivered.
func WriteKindsCSV(w io.Writer, kinds []KindView) error {
	cw := csv.NewWriter(w)
	head := []string{"kind", "moving", "interesting"}
	if len(kinds) > 0 {
		for _, m := range kinds[0].Missing {
			head = append(head, fmt.Sprintf("missing_%gms", m.GraceMs))
		}
	}
	head = append(head, "entries", "held_on_entry_share", "updates", "direct_share", "found", "abandoned", "abandoned_share")
	if len(kinds) > 0 {
		for _, m := range kinds[0].Floor {
			head = append(head, fmt.Sprintf("floor_%gms", m.GraceMs))
		}
		if len(kinds[0].Floor) > 0 {
			head = append(head, "floor_abandoned")
		}
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	for _, k := range kinds {
		row := []string{k.Kind, strconv.FormatBool(k.Moving), strconv.FormatUint(k.Interesting, 10)}
		for _, m := range k.Missing {
			row = append(row, f(m.Fraction))
		}
		row = append(row, strconv.FormatUint(k.Entries, 10), f(k.HeldOnEntryShare()), strconv.FormatUint(k.Updates, 10), f(k.DirectShare()),
			strconv.FormatUint(k.Found, 10), strconv.FormatUint(k.Abandoned, 10), f(k.AbandonedShare()))
		for _, m := range k.Floor {
			row = append(row, f(m.Fraction))
		}
		if len(k.Floor) > 0 {
			row = append(row, strconv.FormatUint(k.FloorAbandoned, 10))
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
