package locate

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// refPubLog is the specification of pubLog's records: a map.
type refPubLog struct {
	j    pubLog // its rules (dist, idleEvery, idleMove) only
	last map[world.ObjectID]pubRec
}

func (r *refPubLog) moved(p *Primary, dims int) (float64, pubRec, bool) {
	q, ok := r.last[p.ID]
	if !ok {
		return 0, q, false
	}
	var s float64
	for d := range dims {
		s += (p.Loc[d] - q.loc[d]) * (p.Loc[d] - q.loc[d])
	}
	return s, q, true
}

func (r *refPubLog) jumped(p *Primary, dims int) bool {
	if r.j.dist <= 0 {
		return false
	}
	s, _, ok := r.moved(p, dims)
	return ok && s > r.j.dist*r.j.dist
}

func (r *refPubLog) idle(p *Primary, dims int, now time.Duration) (skip, idle bool) {
	if r.j.idleEvery <= 0 {
		return false, false
	}
	s, q, ok := r.moved(p, dims)
	if !ok || s > r.j.idleMove*r.j.idleMove {
		return false, false
	}
	return q.idle && now-q.at < r.j.idleEvery, true
}

func (r *refPubLog) published(p *Primary, now time.Duration, idle bool) {
	r.last[p.ID] = pubRec{id: p.ID, loc: p.Loc, at: now, idle: idle}
}

func (r *refPubLog) prune(prims []Primary) {
	if len(r.last) <= len(prims) {
		return
	}
	live := map[world.ObjectID]bool{}
	for i := range prims {
		live[prims[i].ID] = true
	}
	for id := range r.last {
		if !live[id] {
			delete(r.last, id)
		}
	}
}

// TestPubLogMatchesMap drives pubLog (records in a sorted array with a
// cursor) and the map it replaced with the same random frames: primaries
// looked up in ID order as a Tick does (and sometimes shuffled), published
// in two passes, pruned; the answers and the records must agree after
// every step.
func TestPubLogMatchesMap(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 19))
		dist := []float64{0, 3}[r.IntN(2)]
		every := []time.Duration{0, time.Second}[r.IntN(2)]
		j := newPubLog(dist, every, 1)
		if !j.on {
			j = newPubLog(3, every, 1)
		}
		ref := refPubLog{j: j, last: map[world.ObjectID]pubRec{}}
		nids := 1 + r.IntN(200)
		locs := make([]world.Point, nids)
		now := time.Duration(0)
		var prims []Primary
		for step := range 100 {
			now += time.Duration(r.IntN(600)) * time.Millisecond
			// This frame's primaries: a random subset, in ID order.
			prims = prims[:0]
			keep := r.Float64()
			for i := range nids {
				if r.Float64() < keep {
					if r.IntN(3) == 0 {
						locs[i][0] += r.Float64() * 5
						locs[i][1] += r.Float64() * 5
					}
					prims = append(prims, Primary{ID: world.ObjectID(1 + 3*i), Loc: locs[i]})
				}
			}
			if r.IntN(10) == 0 {
				r.Shuffle(len(prims), func(a, b int) { prims[a], prims[b] = prims[b], prims[a] })
			}
			if r.IntN(3) == 0 {
				j.prune(prims)
				ref.prune(prims)
			}
			for pass := range 2 {
				for i := range prims {
					p := &prims[i]
					if a, b := j.jumped(p, 2), ref.jumped(p, 2); a != b {
						t.Fatalf("seed %d step %d: jumped(%d) = %v, map %v", seed, step, p.ID, a, b)
					}
					s1, i1 := j.idle(p, 2, now)
					s2, i2 := ref.idle(p, 2, now)
					if s1 != s2 || i1 != i2 {
						t.Fatalf("seed %d step %d: idle(%d) = %v %v, map %v %v", seed, step, p.ID, s1, i1, s2, i2)
					}
					if r.IntN(4) == pass {
						idle := r.IntN(2) == 0
						j.published(p, now, idle)
						ref.published(p, now, idle)
					}
				}
			}
			got := append(slices.Clone(j.recs), j.add...)
			slices.SortFunc(got, func(a, b pubRec) int { return int(a.id) - int(b.id) })
			var want []pubRec
			for _, q := range ref.last {
				want = append(want, q)
			}
			slices.SortFunc(want, func(a, b pubRec) int { return int(a.id) - int(b.id) })
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d: records %v, map %v", seed, step, got, want)
			}
			if !slices.IsSortedFunc(j.recs, func(a, b pubRec) int { return int(a.id) - int(b.id) }) {
				t.Fatalf("seed %d step %d: records out of order", seed, step)
			}
		}
	}
}
