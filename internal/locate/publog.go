package locate

import (
	"math"
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
type pubLog struct {
	dist      float64
	idleEvery time.Duration
	idleMove  float64
	last      map[world.ObjectID]pubRec
	live      map[world.ObjectID]bool // scratch for prune
}

// pubRec is one primary's last publication.
type pubRec struct {
	loc  world.Point
	at   time.Duration
	idle bool // published as idle
}

func newJumpLog(dist float64) pubLog { return newPubLog(dist, 0, 0) }

func newPubLog(dist float64, idleEvery time.Duration, idleMove float64) pubLog {
	j := pubLog{dist: max(dist, 0), idleEvery: max(idleEvery, 0), idleMove: max(idleMove, 0)}
	if j.dist > 0 || j.idleEvery > 0 {
		j.last = map[world.ObjectID]pubRec{}
	}
	return j
}

// validJump checks a configured jump or idle distance.
func validJump(d float64) bool { return d >= 0 && !math.IsInf(d, 1) }

// moved returns the squared distance, over the first dims dimensions, p
// moved since its last publication, and whether it was published before.
func (j *pubLog) moved(p *Primary, dims int) (float64, pubRec, bool) {
	if j.last == nil {
		return 0, pubRec{}, false
	}
	q, ok := j.last[p.ID]
	if !ok {
		return 0, q, false
	}
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
	if j.last != nil {
		j.last[p.ID] = pubRec{loc: p.Loc, at: now, idle: idle}
	}
}

// prune forgets the objects that are no longer primaries here.
func (j *pubLog) prune(prims []Primary) {
	if j.last == nil || len(j.last) <= len(prims) {
		return
	}
	if j.live == nil {
		j.live = map[world.ObjectID]bool{}
	}
	clear(j.live)
	for i := range prims {
		j.live[prims[i].ID] = true
	}
	for id := range j.last {
		if !j.live[id] {
			delete(j.last, id)
		}
	}
}
