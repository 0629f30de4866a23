package localcluster

import (
	"errors"
	"time"

	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
)

// timeline feeds the nodes' frame snapshots to a ground-truth observer in
// the order of their node times, one Frame each, as the simulator feeds
// its nodes' frames: at a viewer's frame, the observer knows every other
// node's primaries as of that node's latest frame before it. A sampler
// that asks each node for its next frame gets the nodes' frames at
// different moments (a node answers at its frame; a slow one a frame or
// more late), so the timeline holds each node's snapshots until every
// node it waits for has given one at least as new (the watermark), then
// feeds what lies up to it in time order.
//
// It waits for every node that is not down (one yet to answer as if its
// newest snapshot were at the epoch), unless the node's newest snapshot
// is more than stall behind the newest of any node (a stopped or
// overloaded process): the others' frames are fed without it, and its
// snapshots older than what has been fed are dropped (counted in late). A node that went down is fed to its last snapshot,
// then Down is called for it, once.
type timeline struct {
	obs    *truth.Observer
	ids    []wire.NodeID
	stall  time.Duration
	queue  [][]*truth.Snapshot // per node, in time order, not yet fed
	newest []time.Duration     // per node, the newest snapshot's time (-1: none)
	down   []bool              // went down: no longer waited for
	gone   []bool              // Down was called
	free   []*truth.Snapshot
	fed    time.Duration // the time of the latest snapshot fed (-1: none)
	late   int           // snapshots dropped for arriving after newer ones were fed
}

// newTimeline returns a timeline of the nodes ids that feeds obs.
func newTimeline(obs *truth.Observer, ids []wire.NodeID, stall time.Duration) *timeline {
	t := &timeline{obs: obs, ids: ids, stall: stall, queue: make([][]*truth.Snapshot, len(ids)),
		newest: make([]time.Duration, len(ids)), down: make([]bool, len(ids)), gone: make([]bool, len(ids)), fed: -1}
	for i := range t.newest {
		t.newest[i] = -1
	}
	return t
}

// buffer returns a snapshot to decode node i's next answer into; push or
// discard hands it back.
func (t *timeline) buffer() *truth.Snapshot {
	if n := len(t.free); n > 0 {
		s := t.free[n-1]
		t.free = t.free[:n-1]
		return s
	}
	return new(truth.Snapshot)
}

// discard hands back a buffer that holds no snapshot to feed.
func (t *timeline) discard(s *truth.Snapshot) { t.free = append(t.free, s) }

// push queues node i's snapshot s (from buffer). A snapshot no newer than
// the node's previous one, or older than what has been fed, is dropped.
func (t *timeline) push(i int, s *truth.Snapshot) {
	switch {
	case s.At <= t.newest[i]:
		t.discard(s)
		return
	case s.At < t.fed:
		t.late++
		t.newest[i] = s.At
		t.discard(s)
		return
	}
	t.newest[i] = s.At
	t.queue[i] = append(t.queue[i], s)
}

// wentDown records that node i's process ended: the timeline stops
// waiting for it, and calls Down once its queued snapshots are fed.
func (t *timeline) wentDown(i int) { t.down[i] = true }

// watermark returns the time up to which every snapshot may be fed: the
// oldest newest snapshot of the nodes waited for (-1 while none has
// answered).
func (t *timeline) watermark() time.Duration {
	top := time.Duration(-1)
	for _, n := range t.newest {
		top = max(top, n)
	}
	if top < 0 {
		return -1
	}
	w := top
	for i, n := range t.newest {
		// A node yet to answer is waited for as one whose newest frame is
		// at the epoch.
		if n = max(n, 0); t.down[i] || n < top-t.stall {
			continue
		}
		w = min(w, n)
	}
	return w
}

// feed gives the observer, in time order, every queued snapshot up to the
// watermark (all of them if flush), and Down for the nodes down whose
// queues are empty. It returns the observer's errors, joined, after
// feeding the rest.
func (t *timeline) feed(flush bool) error {
	w := t.watermark()
	var errs []error
	for {
		k := -1
		for i, q := range t.queue {
			if len(q) > 0 && (flush || q[0].At <= w) && (k < 0 || q[0].At < t.queue[k][0].At) {
				k = i
			}
		}
		if k < 0 {
			break
		}
		s := t.queue[k][0]
		t.queue[k] = t.queue[k][1:]
		if err := t.obs.Frame(s); err != nil {
			errs = append(errs, err)
		}
		t.fed = max(t.fed, s.At)
		t.free = append(t.free, s)
	}
	for i := range t.down {
		if t.down[i] && !t.gone[i] && len(t.queue[i]) == 0 {
			t.gone[i] = true
			if err := t.obs.Down(t.ids[i]); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
