package locate

import (
	"math"

	"github.com/overworld/overworld/world"
)

// jumps remembers where each primary was last published, so that one that
// jumped (moved farther than the configured distance since: a respawn, a
// teleport) is published at once instead of at the next periodic
// publication, which may be a whole period away. A zero distance turns it
// off.
type jumps struct {
	dist float64
	last map[world.ObjectID]world.Point
	live map[world.ObjectID]bool // scratch for prune
}

func newJumps(dist float64) jumps {
	if dist <= 0 {
		return jumps{}
	}
	return jumps{dist: dist, last: map[world.ObjectID]world.Point{}}
}

// validJump checks a configured jump distance.
func validJump(d float64) bool { return d >= 0 && !math.IsInf(d, 1) }

// jumped reports whether p moved farther than the distance, over the
// first dims dimensions, since its last publication (false for a primary
// never published: New covers those).
func (j *jumps) jumped(p *Primary, dims int) bool {
	if j.last == nil {
		return false
	}
	q, ok := j.last[p.ID]
	if !ok {
		return false
	}
	var s float64
	for d := range dims {
		s += (p.Loc[d] - q[d]) * (p.Loc[d] - q[d])
	}
	return s > j.dist*j.dist
}

// published records p's published location.
func (j *jumps) published(p *Primary) {
	if j.last != nil {
		j.last[p.ID] = p.Loc
	}
}

// prune forgets the objects that are no longer primaries here.
func (j *jumps) prune(prims []Primary) {
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
