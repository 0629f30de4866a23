package cma

import "math"

// greedyEngine is J-greedy with L-greedy (leaveGreedy) or L-ignore, as in
// the paper's Fig. 2.
type greedyEngine struct {
	s           *state
	leaveGreedy bool
}

// join is J-greedy: the closest mirror with a spare seat (ties: lowest
// index). The paper sorts the m delays, O(m log m); a scan for the closest
// spare mirror gives the same answer in O(m).
func (g greedyEngine) join(p int32) {
	s := g.s
	best := -1
	for j := 0; j < s.m; j++ {
		if s.spare(j) && (best < 0 || s.d(p, j) < s.d(p, best)) {
			best = j
		}
	}
	s.place(p, best)
}

// leave is L-ignore, or L-greedy: while the vacancy is on a mirror that was
// full, pull into it the player (from any mirror) whose delay drops most,
// stopping when nobody gains or when the player came from a mirror that was
// not full (its own vacancy then needs no filling). Each step scans all
// players, O(n); the paper states O(mn) in the worst case.
//
// Paper corrections: Fig. 2 writes the benefit as b = d(m,k) − d(m,j) and
// stops when b ≥ 0, which would stop exactly when moving helps; we use the
// change in delay d(m,j) − d(m,k) and stop when it is ≥ 0, as the text
// describes ("the client that will have the greatest decrease in delay").
// Fig. 2 also tests "M_j is not full" after the move, when the source mirror
// always has a free seat; the text's rule ("until a client is re-assigned
// from a non-full mirror") is what we implement.
func (g greedyEngine) leave(p int32) {
	s := g.s
	j := int(s.mirror[p])
	wasFull := s.full(j)
	s.unplace(p)
	if !g.leaveGreedy || !wasFull {
		return
	}
	for {
		bestP, bestGain := int32(-1), 0.0
		for q := range s.mirror {
			k := s.mirror[q]
			if k < 0 || int(k) == j {
				continue
			}
			if gain := s.d(int32(q), j) - s.d(int32(q), int(k)); gain < bestGain {
				bestP, bestGain = int32(q), gain
			}
		}
		if bestP < 0 {
			return
		}
		k := int(s.mirror[bestP])
		kWasFull := s.full(k)
		s.move(bestP, j)
		if !kWasFull {
			return
		}
		j = k
	}
}

// rebuildEngine is J-SA and L-SA exactly as the paper's Fig. 2 specifies:
// on every event that needs a chain it rebuilds MC and MP by scanning all
// players (O(nm)) and runs the label-correcting passes over the mirrors.
type rebuildEngine struct {
	s      *state
	mc     []float64 // j*m+k: min cost of moving a player from j to k
	mp     []int32   // j*m+k: that player
	label  []float64
	next   []int32
	moving []mover
}

func newRebuild(s *state) *rebuildEngine {
	m := s.m
	return &rebuildEngine{s: s, mc: make([]float64, m*m), mp: make([]int32, m*m),
		label: make([]float64, m), next: make([]int32, m)}
}

// build fills MC and MP from the current assignment (ties: lowest slot)
// and resets the labels: (0, −) on spare mirrors, (∞, −) on full ones.
func (r *rebuildEngine) build() {
	s := r.s
	m := s.m
	for j := 0; j < m; j++ {
		r.next[j] = -1
		r.label[j] = math.Inf(1)
		if s.spare(j) {
			r.label[j] = 0
		}
	}
	for i := range r.mc {
		r.mc[i] = math.Inf(1)
		r.mp[i] = -1
	}
	for q, jj := range s.mirror {
		if jj < 0 {
			continue
		}
		j := int(jj)
		row := s.row(int32(q))
		for k := 0; k < m; k++ {
			if k == j {
				continue
			}
			if c := row[k] - row[j]; c < r.mc[j*m+k] {
				r.mc[j*m+k] = c
				r.mp[j*m+k] = int32(q)
			}
		}
	}
}

// relax runs the label-correcting passes until no label changes:
// Label[j] = min over k of Label[k] + MC[j][k], for the mirrors j the
// caller allows. next[j] is the mirror the chain continues to.
func (r *rebuildEngine) relax(allowed func(j int) bool) {
	m := r.s.m
	for changed := true; changed; {
		changed = false
		for j := 0; j < m; j++ {
			if !allowed(j) {
				continue
			}
			for k := 0; k < m; k++ {
				if k == j || math.IsInf(r.label[k], 1) {
					continue
				}
				if c := r.label[k] + r.mc[j*m+k]; c < r.label[j]-eps {
					r.label[j] = c
					r.next[j] = int32(k)
					changed = true
				}
			}
		}
	}
}

// shift performs the chain starting at mirror f: move MP[f][next f] to
// next f, and so on until a mirror without a successor. All movers are
// read from MP before any move, as the arrays describe the old assignment.
func (r *rebuildEngine) shift(f int) {
	m := r.s.m
	r.moving = r.moving[:0]
	for r.next[f] >= 0 {
		t := int(r.next[f])
		r.moving = append(r.moving, mover{slot: r.mp[f*m+t], to: t})
		f = t
	}
	for i := len(r.moving) - 1; i >= 0; i-- { // vacancy first: every step within capacity
		r.s.move(r.moving[i].slot, r.moving[i].to)
	}
}

// join is J-SA. Label[j] is the cost of freeing a seat on j: 0 on a spare
// mirror, else the cheapest chain of moves from j to a spare mirror. The
// player goes where d(p,j) + Label[j] is least, preferring a spare mirror
// (no moves) on a tie, as Fig. 2 does.
func (r *rebuildEngine) join(p int32) {
	s := r.s
	m := s.m
	best := 0
	for j := 1; j < m; j++ {
		if s.d(p, j) < s.d(p, best) {
			best = j
		}
	}
	if s.spare(best) {
		s.place(p, best)
		return
	}
	r.build()
	r.relax(s.full)
	f, min := -1, math.Inf(1)
	for j := 0; j < m; j++ {
		if c := s.d(p, j) + r.label[j]; c < min-eps || (c <= min+eps && s.spare(j) && (f < 0 || !s.spare(f))) {
			f, min = j, c
		}
	}
	r.shift(f)
	s.place(p, f)
}

// leave is L-SA. After p leaves a full mirror, Label[j] starts at 0 on
// spare mirrors and +∞ on full ones; after relaxation the least label is
// the best chain ending at a spare seat, performed if it reduces the total.
//
// Paper corrections: Fig. 2's loop "while t ≠ j: t = Label[f] …" is read as
// following the labels' mirror pointers until the chain's last mirror; in
// the worked example of Fig. 3, Label[I] is initially (∞,−) (I is full) and
// its final pointer is H, not G, which is what the text's numbers imply.
func (r *rebuildEngine) leave(p int32) {
	s := r.s
	m := s.m
	j := int(s.mirror[p])
	wasFull := s.full(j)
	s.unplace(p)
	if !wasFull {
		return
	}
	r.build()
	r.relax(func(int) bool { return true })
	f := 0
	for k := 1; k < m; k++ {
		if r.label[k] < r.label[f] {
			f = k
		}
	}
	if r.label[f] < -eps {
		r.shift(f)
	}
}

// optimalEngine re-solves the whole assignment from scratch after every
// event and moves every player whose mirror changed.
type optimalEngine struct {
	s *state
}

func (o *optimalEngine) join(p int32) { o.resolve(p, -1) }

func (o *optimalEngine) leave(p int32) {
	o.s.unplace(p)
	o.resolve(-1, p)
}

// resolve solves the assignment of all assigned slots plus joining (≥ 0),
// excluding leaving (≥ 0), in slot order, by successive shortest paths from
// an empty assignment, then applies it.
func (o *optimalEngine) resolve(joining, leaving int32) {
	s := o.s
	fresh := newState(s.mirrors, s.mirrorIdx)
	sa := newSA(fresh)
	var slots []int32
	for q, j := range s.mirror {
		if int32(q) == leaving || (j < 0 && int32(q) != joining) {
			continue
		}
		slots = append(slots, int32(q))
		sa.join(fresh.add(s.ids[q], s.row(int32(q))))
		fresh.moves = fresh.moves[:0] // the solve's own chains are not moves of s
	}
	for i, q := range slots {
		to := int(fresh.mirror[i])
		switch {
		case q == joining:
			s.place(q, to)
		case int(s.mirror[q]) != to:
			from := s.mirrors[s.mirror[q]].ID
			s.relocate(q, to)
			s.moves = append(s.moves, Move{Player: s.ids[q], From: from, To: s.mirrors[to].ID})
		}
	}
}
