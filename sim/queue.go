package sim

import (
	"time"

	"github.com/overworld/overworld/internal/wire"
)

// eventKind says what a queued event does when it comes due.
type eventKind uint8

const (
	evTick    eventKind = iota // Tick the node's core and reschedule the tick
	evDeliver                  // Step the destination's core with the packet
	evFunc                     // run a scenario function
	evHeal                     // heal a partition
)

// event is the body of a queued event. Bodies live in a pool (queue.bodies)
// and are recycled through a free list, so the steady state allocates
// nothing; the heap orders small (time, seq, slot) keys.
type event struct {
	kind eventKind
	node int32 // index into Sim.nodes (tick: the node; deliver: destination)
	id   int   // evHeal: partition id
	pkt  wire.Packet
	fn   func(now time.Duration)
}

// key orders events: by time, then by the order they were scheduled, so
// events at one instant run in a deterministic order.
type key struct {
	at   int64
	seq  uint64
	slot int32
}

func (a key) less(b key) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

// queue is a 4-ary min-heap of keys over a pool of event bodies.
type queue struct {
	heap   []key
	bodies []event
	free   []int32
	seq    uint64
}

func (q *queue) len() int { return len(q.heap) }

// push schedules ev at time at and returns nothing: the caller never refers
// to a queued event again.
func (q *queue) push(at int64, ev event) {
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.bodies[slot] = ev
	} else {
		slot = int32(len(q.bodies))
		q.bodies = append(q.bodies, ev)
	}
	q.seq++
	k := key{at: at, seq: q.seq, slot: slot}
	h := append(q.heap, k)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !k.less(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = k
	q.heap = h
}

// peek returns the time of the earliest event; the queue must not be empty.
func (q *queue) peek() int64 { return q.heap[0].at }

// pop removes the earliest event and returns its time and body. The body's
// slot is recycled at once, so the caller must copy what it needs (it gets a
// copy).
func (q *queue) pop() (int64, event) {
	h := q.heap
	top := h[0]
	n := len(h) - 1
	last := h[n]
	h = h[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			end := min(c+4, n)
			for j := c + 1; j < end; j++ {
				if h[j].less(h[m]) {
					m = j
				}
			}
			if !h[m].less(last) {
				break
			}
			h[i] = h[m]
			i = m
		}
		h[i] = last
	}
	q.heap = h
	ev := q.bodies[top.slot]
	q.bodies[top.slot] = event{} // drop references (payload, closure) for the GC
	q.free = append(q.free, top.slot)
	return top.at, ev
}
