package sim

import (
	"slices"

	"github.com/overworld/overworld/wire"
)

// eventKind says what a queued event does when it comes due.
type eventKind uint8

const (
	evTick    eventKind = iota // Tick node ref's core and reschedule the tick
	evDeliver                  // Step destination ref's core with the packet
	evFunc                     // run scenario function ref (Sim.funcs)
	evHeal                     // heal partition ref
)

// entry is one queued event, stored by value: the queue holds no pointers
// to events and recycles its slices, so the steady state allocates nothing.
type entry struct {
	at   int64  // virtual time, ns
	seq  uint64 // scheduling order: breaks ties between events at one time
	pkt  wire.Packet
	ref  int32 // node index (tick, deliver), function slot (func), partition id (heal)
	kind eventKind
	gen  uint16 // tick, deliver: the incarnation of node ref it is for (see Sim.Restart)
}

func (a *entry) less(b *entry) bool { return a.at < b.at || (a.at == b.at && a.seq < b.seq) }

func cmpEntry(a, b entry) int {
	switch {
	case a.less(&b):
		return -1
	case b.less(&a):
		return 1
	}
	return 0
}

// Queue geometry: a timing wheel of wheelSize buckets of 2^bucketShift ns
// (about 1 ms each, a horizon of about 268 ms: most one-way delays and the
// next frame), with a heap for events beyond the horizon.
const (
	bucketShift = 20
	wheelSize   = 256
)

// queue is the scheduler's priority queue of events ordered by (at, seq).
//
// It is a timing wheel (a calendar queue): an event due within the horizon
// is appended, unsorted, to the bucket of its time; a bucket is sorted once
// when the clock reaches it and then read in order. Events scheduled into
// the bucket being read go to a small heap (side) merged with it; events
// beyond the horizon wait in a heap (far) and move into the wheel as the
// horizon passes them. Appends are sequential in memory and a sort of a
// bucket of k events costs O(log k) per event, so this beats a binary heap
// of all in-flight packets, whose every pop misses the cache.
type queue struct {
	buckets [wheelSize][]entry
	base    int64   // bucket number (at >> bucketShift) of the current bucket
	cur     []entry // the current bucket, sorted, while open
	pos     int     // next unread entry of cur
	open    bool
	side    heap // events scheduled into the open bucket
	far     heap // events at or beyond bucket base + wheelSize
	inWheel int  // events in unopened buckets
	scratch []entry
	n       int // events queued
}

func (q *queue) len() int { return q.n }

// push queues an event at time at, with its sequence number e.seq already
// set (the simulator's nodeSeq or globalSeq: unique, and independent of the order
// events are pushed in). Times before the current bucket are treated as
// due in it (the simulator never schedules into the past).
func (q *queue) push(at int64, e entry) {
	e.at = at
	q.n++
	b := max(at>>bucketShift, q.base)
	switch {
	case b == q.base && q.open:
		q.side.push(e)
	case b < q.base+wheelSize:
		q.buckets[b%wheelSize] = append(q.buckets[b%wheelSize], e)
		q.inWheel++
	default:
		q.far.push(e)
	}
}

// next returns the earliest event without removing it, or nil if the
// queue is empty. The pointer is valid until the next push or pop.
func (q *queue) next() *entry {
	for {
		if q.open {
			var c, s *entry
			if q.pos < len(q.cur) {
				c = &q.cur[q.pos]
			}
			if len(q.side) > 0 {
				s = &q.side[0]
			}
			switch {
			case c != nil && (s == nil || c.less(s)):
				return c
			case s != nil:
				return s
			}
			// The bucket is exhausted: recycle it.
			clear(q.cur) // drop payload references for the GC
			q.buckets[q.base%wheelSize] = q.cur[:0]
			q.cur, q.pos, q.open = nil, 0, false
		}
		if q.n == 0 {
			return nil
		}
		// Advance to the next non-empty bucket, pulling far events into the
		// wheel as the horizon moves over them.
		if q.inWheel == 0 {
			q.base = max(q.base+1, q.far[0].at>>bucketShift)
		} else if len(q.buckets[q.base%wheelSize]) == 0 {
			q.base++
		}
		for len(q.far) > 0 && q.far[0].at>>bucketShift < q.base+wheelSize {
			e := q.far.pop()
			b := max(e.at>>bucketShift, q.base)
			q.buckets[b%wheelSize] = append(q.buckets[b%wheelSize], e)
			q.inWheel++
		}
		if bk := q.buckets[q.base%wheelSize]; len(bk) > 0 {
			q.sortBucket(bk, q.base<<bucketShift)
			q.cur, q.pos, q.open = bk, 0, true
			q.inWheel -= len(bk)
		}
	}
}

// sortBucket sorts a bucket by (at, seq). Events are appended in any
// order (a parallel window pushes its workers' events together), so it
// sorts by at with an LSD radix sort on the time within the bucket (two
// 10-bit digits), or insertion sort for small buckets, and then puts the
// rare runs of equal times in seq order with an insertion pass (linear on
// input sorted by at). A bucket holding an event from before its start
// (Run's clock can pass a peeked bucket) falls back to a comparison sort.
func (q *queue) sortBucket(bk []entry, start int64) {
	const digit = bucketShift / 2
	for i := range bk {
		if off := bk[i].at - start; off < 0 || off >= 1<<bucketShift {
			slices.SortFunc(bk, cmpEntry)
			return
		}
	}
	if len(bk) > 48 {
		if cap(q.scratch) < len(bk) {
			q.scratch = make([]entry, len(bk), 2*len(bk))
		}
		tmp := q.scratch[:len(bk)]
		radixPass(bk, tmp, start, 0)
		radixPass(tmp, bk, start, digit)
		clear(tmp) // drop payload references
	}
	for i := 1; i < len(bk); i++ {
		if !bk[i].less(&bk[i-1]) {
			continue
		}
		e := bk[i]
		j := i
		for ; j > 0 && e.less(&bk[j-1]); j-- {
			bk[j] = bk[j-1]
		}
		bk[j] = e
	}
}

// radixPass is one stable counting-sort pass of src into dst on the 10-bit
// digit of (at - start) at the given shift.
func radixPass(src, dst []entry, start int64, shift uint) {
	const mask = 1<<(bucketShift/2) - 1
	var count [mask + 2]int
	for i := range src {
		count[(src[i].at-start)>>shift&mask+1]++
	}
	for d := 1; d < len(count); d++ {
		count[d] += count[d-1]
	}
	for i := range src {
		d := (src[i].at - start) >> shift & mask
		dst[count[d]] = src[i]
		count[d]++
	}
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *queue) pop() entry {
	e := q.next()
	if q.pos < len(q.cur) && e == &q.cur[q.pos] {
		q.pos++
		q.n--
		return *e
	}
	q.n--
	return q.side.pop()
}

// heap is a 4-ary min-heap of entries.
type heap []entry

func (h *heap) push(e entry) {
	s := append(*h, e)
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 4
		if !e.less(&s[p]) {
			break
		}
		s[i] = s[p]
		i = p
	}
	s[i] = e
	*h = s
}

func (h *heap) pop() entry {
	s := *h
	top := s[0]
	n := len(s) - 1
	last := s[n]
	s[n] = entry{}
	s = s[:n]
	if n > 0 {
		i := 0
		for {
			c := 4*i + 1
			if c >= n {
				break
			}
			m := c
			for j := c + 1; j < min(c+4, n); j++ {
				if s[j].less(&s[m]) {
					m = j
				}
			}
			if !s[m].less(&last) {
				break
			}
			s[i] = s[m]
			i = m
		}
		s[i] = last
	}
	*h = s
	return top
}
