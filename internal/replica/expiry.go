package replica

import (
	"cmp"
	"slices"
	"time"

	"github.com/overworld/overworld/internal/idtab"
	"github.com/overworld/overworld/world"
)

// expiring maps object IDs to the time they were set (tombstones, dropped
// replicas) and forgets those older than a TTL. Every frame's flush expires
// them: walking the whole map each time cost 5% of an 8-minute world run,
// where thousands of tombstones (missiles) wait out their 30 s. The IDs
// are also queued in the order they were set, which is time order as long
// as times never go back (the store's clock), so expire pops only the
// expired front. A queued (id, t) whose map entry was set again since, or
// deleted, is skipped. If a time does go back, the next expire rebuilds
// the queue in order from the entries that are current. The times are in
// an open-addressed table (idtab): a received update of an absent object
// looks its ID up here, and a Go map's group walk cost 1–2% of a
// 10,000-player run.
type expiring struct {
	m       idtab.Table[setAt]
	q       []timedID // from head on: oldest first
	head    int
	unorder bool // a time was set before the newest queued
}

// setAt is an ID's time in the table; the zero setAt marks an empty slot.
type setAt struct {
	t    time.Duration
	live bool
}

type timedID struct {
	id world.ObjectID
	t  time.Duration
}

func newExpiring() expiring { return expiring{} }

// get returns the time id was set, if it is held.
func (x *expiring) get(id world.ObjectID) (time.Duration, bool) {
	v := x.m.Get(id)
	return v.t, v.live
}

// has reports whether id is held.
func (x *expiring) has(id world.ObjectID) bool { return x.m.Get(id).live }

// set records id at time t (replacing an earlier time).
func (x *expiring) set(id world.ObjectID, t time.Duration) {
	x.m.Put(id, setAt{t, true})
	if n := len(x.q); n > x.head && t < x.q[n-1].t {
		x.unorder = true
	}
	x.q = append(x.q, timedID{id, t})
}

// del forgets id (its queued time is skipped when it comes up).
func (x *expiring) del(id world.ObjectID) { x.m.Delete(id) }

// len returns the number of IDs held.
func (x *expiring) len() int { return x.m.Len() }

// expire forgets every ID set more than ttl before now (now-t > ttl).
func (x *expiring) expire(now, ttl time.Duration) {
	if x.unorder {
		// Every held ID's current (ID, time) is queued from head on (a
		// popped one was forgotten, or set again and queued again): keep
		// those, forget the expired, and sort.
		kept := x.q[:0]
		for _, e := range x.q[x.head:] {
			if v := x.m.Get(e.id); !v.live || v.t != e.t {
				continue // set again since, or forgotten
			}
			if now-e.t > ttl {
				x.m.Delete(e.id)
				continue
			}
			kept = append(kept, e)
		}
		x.q, x.head, x.unorder = kept, 0, false
		// An ID set twice at the same time is queued twice: keep one.
		slices.SortFunc(x.q, func(a, b timedID) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		})
		x.q = slices.Compact(x.q)
		return
	}
	for x.head < len(x.q) {
		e := x.q[x.head]
		if now-e.t <= ttl {
			break
		}
		if v := x.m.Get(e.id); v.live && v.t == e.t {
			x.m.Delete(e.id)
		}
		x.head++
	}
	if x.head == len(x.q) {
		x.q, x.head = x.q[:0], 0
	} else if x.head > 1024 && 2*x.head > len(x.q) {
		n := copy(x.q, x.q[x.head:])
		x.q, x.head = x.q[:n], 0
	}
}
