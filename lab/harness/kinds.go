package harness

import (
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/world"
)

// KindView is the view measures of one object kind, as the ground-truth
// observer keeps them (truth.KindView): missing replicas at the
// simulator's grace periods, updates that bypass discovery, replicas
// already held when an object enters a view.
type KindView = truth.KindView

// TrackKinds turns on the per-kind view measures (KindViews) from now on,
// named by the game's schemas, at the simulator's grace periods and after
// its warm-up. Call it before Run; it costs about as much again as the
// simulator's own missing-replica accounting.
func (w *World) TrackKinds() {
	names := make([]string, w.reg.Len())
	for i := range names {
		names[i] = w.reg.Schema(world.Kind(i + 1)).Name()
	}
	// The grace periods are the recorder's (validated): this fails only
	// when the measures are already on, and then changes nothing.
	_ = w.truth.TrackKinds(names, w.sim.Recorder().Grace(), max(w.cfg.Warmup, 0))
}

// KindViews returns the per-kind view measures so far, by kind (the game
// registry's order), or nil unless TrackKinds was called.
func (w *World) KindViews() []KindView { return w.truth.KindViews() }
