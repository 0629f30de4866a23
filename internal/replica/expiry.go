package replica

import (
	"cmp"
	"slices"
	"time"

	"github.com/overworld/overworld/world"
)

// expiring maps object IDs to the time they were set (tombstones, dropped
// replicas) and forgets those older than a TTL. Every frame's flush expires
// them: walking the whole map each time cost 5% of an 8-minute world run,
// where thousands of tombstones (missiles) wait out their 30 s. The IDs
// are also queued in the order they were set, which is time order as long
// as times never go back (the store's clock), so expire pops only the
// expired front. A queued (id, t) whose map entry was set again since, or
// deleted, is skipped. If a time does go back, the next expire walks the
// map, as before, and queues it again in order.
type expiring struct {
	m       map[world.ObjectID]time.Duration
	q       []timedID // from head on: oldest first
	head    int
	unorder bool // a time was set before the newest queued
}

type timedID struct {
	id world.ObjectID
	t  time.Duration
}

func newExpiring() expiring { return expiring{m: map[world.ObjectID]time.Duration{}} }

// get returns the time id was set, if it is held.
func (x *expiring) get(id world.ObjectID) (time.Duration, bool) {
	t, ok := x.m[id]
	return t, ok
}

// has reports whether id is held.
func (x *expiring) has(id world.ObjectID) bool {
	_, ok := x.m[id]
	return ok
}

// set records id at time t (replacing an earlier time).
func (x *expiring) set(id world.ObjectID, t time.Duration) {
	x.m[id] = t
	if n := len(x.q); n > x.head && t < x.q[n-1].t {
		x.unorder = true
	}
	x.q = append(x.q, timedID{id, t})
}

// len returns the number of IDs held.
func (x *expiring) len() int { return len(x.m) }

// expire forgets every ID set more than ttl before now (now-t > ttl).
func (x *expiring) expire(now, ttl time.Duration) {
	if x.unorder {
		x.q, x.head, x.unorder = x.q[:0], 0, false
		for id, t := range x.m {
			if now-t > ttl {
				delete(x.m, id)
				continue
			}
			x.q = append(x.q, timedID{id, t})
		}
		slices.SortFunc(x.q, func(a, b timedID) int {
			if c := cmp.Compare(a.t, b.t); c != 0 {
				return c
			}
			return cmp.Compare(a.id, b.id)
		})
		return
	}
	for x.head < len(x.q) {
		e := x.q[x.head]
		if now-e.t <= ttl {
			break
		}
		if t, ok := x.m[e.id]; ok && t == e.t {
			delete(x.m, e.id)
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
