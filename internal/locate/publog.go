package locate

import (
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/world"
)

// pubLog remembers where and when each primary was last published, for two
// rules that change when a primary is published:
//   - a primary that jumped (moved farther than dist since its last
//     publication: a respawn, a teleport) is published at once instead of
//     at the next periodic publication, which may be a whole period away;
//   - a primary that stayed put (moved at most idleMove since) is idle: its
//     publication lives longer and is repeated only every idleEvery while
//     it stays idle (Colyseus §6.1: objects whose naming attributes rarely
//     change, such as items, need not publish at the rate of players).
//
// A zero dist or idleEvery turns its rule off.
//
// The records are an array sorted by ID, not a map: a node's locator looks
// up every primary every frame, in ID order (Frame.Primaries), so a cursor
// walks the array from one lookup to the next, reading it in order. A
// lookup out of order binary-searches it.
type pubLog struct {
	dist      float64
	idleEvery time.Duration
	idleMove  float64
	on        bool     // either rule is on: records are kept
	recs      []pubRec // sorted by ID
	add       []pubRec // recorded since the last merge, not in recs (no ID twice)
	cur       int      // recs' position after the last lookup found there
	ids       []world.ObjectID
}

// pubRec is one primary's last publication.
type pubRec struct {
	id   world.ObjectID
	loc  world.Point
	at   time.Duration
	idle bool // published as idle
}

func newJumpLog(dist float64) pubLog { return newPubLog(dist, 0, 0) }

func newPubLog(dist float64, idleEvery time.Duration, idleMove float64) pubLog {
	j := pubLog{dist: max(dist, 0), idleEvery: max(idleEvery, 0), idleMove: max(idleMove, 0)}
	j.on = j.dist > 0 || j.idleEvery > 0
	return j
}

// validJump checks a configured jump or idle distance.
func validJump(d float64) bool { return d >= 0 && !math.IsInf(d, 1) }

// moved returns the squared distance, over the first dims dimensions, p
// moved since its last publication, and whether it was published before.
func (j *pubLog) moved(p *Primary, dims int) (float64, pubRec, bool) {
	if !j.on {
		return 0, pubRec{}, false
	}
	r := j.find(p.ID)
	if r == nil {
		return 0, pubRec{}, false
	}
	q := *r
	var s float64
	for d := range dims {
		s += (p.Loc[d] - q.loc[d]) * (p.Loc[d] - q.loc[d])
	}
	return s, q, true
}

// jumped reports whether p moved farther than the distance since its last
// publication (false for a primary never published: New covers those).
func (j *pubLog) jumped(p *Primary, dims int) bool {
	if j.dist <= 0 {
		return false
	}
	s, _, ok := j.moved(p, dims)
	return ok && s > j.dist*j.dist
}

// idle decides a periodic publication of p at now: skip is true while p
// stays idle and was published as idle less than idleEvery ago; else
// idle says whether p is published as idle (it moved at most idleMove
// since its last publication).
func (j *pubLog) idle(p *Primary, dims int, now time.Duration) (skip, idle bool) {
	if j.idleEvery <= 0 {
		return false, false
	}
	s, q, ok := j.moved(p, dims)
	if !ok || s > j.idleMove*j.idleMove {
		return false, false
	}
	return q.idle && now-q.at < j.idleEvery, true
}

// published records p's publication at now.
func (j *pubLog) published(p *Primary, now time.Duration, idle bool) {
	if !j.on {
		return
	}
	rec := pubRec{id: p.ID, loc: p.Loc, at: now, idle: idle}
	if r := j.find(p.ID); r != nil {
		*r = rec
		return
	}
	j.add = append(j.add, rec)
	if len(j.add) > 64+len(j.recs)/4 {
		j.merge() // keeps the scan of add in find short
	}
}

// find returns the record of id, or nil.
func (j *pubLog) find(id world.ObjectID) *pubRec {
	r := j.recs
	i := min(j.cur, len(r))
	if i > 0 && r[i-1].id >= id {
		i = searchRecs(r[:i], id) // behind the cursor
	} else {
		// Ahead of it: usually the next record or a few further on.
		for n := 0; i < len(r) && r[i].id < id; i++ {
			if n++; n == 8 {
				i += searchRecs(r[i:], id)
				break
			}
		}
	}
	if i < len(r) && r[i].id == id {
		j.cur = i + 1
		return &r[i]
	}
	j.cur = i
	for k := range j.add {
		if j.add[k].id == id {
			return &j.add[k]
		}
	}
	return nil
}

// searchRecs returns the position of the first record of r (sorted by ID)
// whose ID is at least id.
func searchRecs(r []pubRec, id world.ObjectID) int {
	lo, hi := 0, len(r)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if r[m].id < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// merge moves the records of add into recs, in ID order.
func (j *pubLog) merge() {
	if len(j.add) == 0 {
		return
	}
	slices.SortFunc(j.add, func(a, b pubRec) int {
		if a.id < b.id {
			return -1
		}
		if a.id > b.id {
			return 1
		}
		return 0
	})
	n, m := len(j.recs), len(j.add)
	j.recs = slices.Grow(j.recs, m)[:n+m]
	// From the back: the free room is at the end of recs.
	a, b, w := n-1, m-1, n+m-1
	for b >= 0 {
		if a >= 0 && j.recs[a].id > j.add[b].id {
			j.recs[w] = j.recs[a]
			a--
		} else {
			j.recs[w] = j.add[b]
			b--
		}
		w--
	}
	j.add = j.add[:0]
}

// prune forgets the objects that are no longer primaries here.
func (j *pubLog) prune(prims []Primary) {
	if !j.on {
		return
	}
	j.merge()
	if len(j.recs) <= len(prims) {
		return
	}
	ids := j.ids[:0]
	for i := range prims {
		ids = append(ids, prims[i].ID)
	}
	if !slices.IsSorted(ids) { // Frame.Primaries are in ID order; others may not be
		slices.Sort(ids)
	}
	j.ids = ids
	k, w := 0, 0
	for _, r := range j.recs {
		for k < len(ids) && ids[k] < r.id {
			k++
		}
		if k < len(ids) && ids[k] == r.id {
			j.recs[w] = r
			w++
		}
	}
	clear(j.recs[w:])
	j.recs = j.recs[:w]
	j.cur = 0
}
