package harness

import (
	"time"

	"github.com/overworld/overworld/wire"
)

// Watching a run as it goes (a live dashboard of a simulated world): Run
// calls a watch function every so often of game time, between the
// simulator's steps, when no event runs, so that it may read the nodes
// (Nodes, and through them their objects, views and counters), the
// simulator's traffic counters (Sim().Traffic) and the frame times
// (FrameTimes). A watch only reads: the run's events and result are the
// same with or without one, for any period (the simulator's result does
// not depend on where Run cuts its steps).

// watcher is a World's watch function and when it runs next.
type watcher struct {
	every time.Duration
	f     func(now time.Duration)
	next  time.Duration
}

// SetWatch has Run call f every `every` of game time (at least 1 ms),
// and at the start and the end of the run, with the game time; f runs on
// Run's goroutine between the simulator's steps and must change nothing
// (it may block: a watch paces a run to real time by sleeping). nil f
// removes the watch. Call it before Run.
func (w *World) SetWatch(every time.Duration, f func(now time.Duration)) {
	if f == nil {
		w.watch = watcher{}
		return
	}
	every = max(every, time.Millisecond)
	w.watch = watcher{every: every, f: f, next: w.sim.Now()}
}

// at calls the watch function when its time has come, or at the end of
// the run (last).
func (x *watcher) at(now time.Duration, last bool) {
	if x.f == nil || now < x.next && !last {
		return
	}
	x.f(now)
	x.next = (now/x.every + 1) * x.every
}

// clip shortens a step of Run that starts at now to end at the watch's
// next time or the next whole second of game time, whichever is first (so
// progress stays once per second), leaving it alone without a watch.
func (x *watcher) clip(now, step time.Duration) time.Duration {
	if x.f == nil {
		return step
	}
	if s := time.Second - now%time.Second; s < step {
		step = s
	}
	if x.next > now && x.next-now < step {
		step = x.next - now
	}
	return step
}

// within reports whether now ends one of the watch's steps within a
// second of game time, after which Run reports no progress: not a whole
// second, the end of the run or of its warm-up.
func (x *watcher) within(now, total, warmup time.Duration) bool {
	return x.f != nil && now%time.Second != 0 && now < total && now != warmup
}

// FrameTime is the wall-clock time a node's frames took so far.
type FrameTime struct {
	// Frames is the number of frames timed; Total their time.
	Frames int64
	Total  time.Duration
}

func (f *FrameTime) add(d time.Duration) {
	f.Frames++
	f.Total += d
}

// FrameTimes returns every node's frame times so far, in the order of
// Nodes: zeros unless Config.WallFrameTimes.
func (w *World) FrameTimes() []FrameTime { return append([]FrameTime(nil), w.frames...) }

// Site returns where node id runs: its city or PlanetLab host, the site
// the simulator's latencies are of ("" for a node the world does not
// have).
func (w *World) Site(id wire.NodeID) string {
	if id < 1 || int(id) > len(w.site) {
		return ""
	}
	return w.sites.Name(w.site[id-1])
}
