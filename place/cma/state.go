package cma

// state is the assignment shared by all engines: players live in slots
// (reused after a leave), each slot holding the player's delays to every
// mirror and its current mirror. Engines change the assignment only through
// place, unplace and move, which keep loads, the optional pair index and the
// move log consistent.
type state struct {
	mirrors   []Mirror
	mirrorIdx map[string]int
	m         int
	caps      []int32
	load      []int32
	totalCap  int

	index  map[string]int32 // player ID -> slot
	ids    []string         // slot -> player ID ("" when free)
	delays []float64        // slot*m + j
	mirror []int32          // slot -> mirror, -1 when unassigned
	free   []int32          // free slots, reused LIFO

	idx   *pairIndex // non-nil for engines that need per-pair heaps
	moves []Move     // moves of the event in progress
}

func newState(mirrors []Mirror, idx map[string]int) *state {
	s := &state{
		mirrors:   append([]Mirror(nil), mirrors...),
		mirrorIdx: idx,
		m:         len(mirrors),
		caps:      make([]int32, len(mirrors)),
		load:      make([]int32, len(mirrors)),
		index:     map[string]int32{},
	}
	for j, mr := range mirrors {
		s.caps[j] = int32(mr.Capacity)
		s.totalCap += mr.Capacity
	}
	return s
}

// add stores a new player's delays in a slot and returns it, unassigned.
func (s *state) add(id string, d []float64) int32 {
	var p int32
	if n := len(s.free); n > 0 {
		p = s.free[n-1]
		s.free = s.free[:n-1]
		copy(s.delays[int(p)*s.m:], d)
		s.ids[p] = id
	} else {
		p = int32(len(s.ids))
		s.ids = append(s.ids, id)
		s.delays = append(s.delays, d...)
		s.mirror = append(s.mirror, -1)
		if s.idx != nil {
			s.idx.grow(len(s.ids))
		}
	}
	s.mirror[p] = -1
	s.index[id] = p
	return p
}

// release frees an unassigned slot after a leave.
func (s *state) release(p int32) {
	delete(s.index, s.ids[p])
	s.ids[p] = ""
	s.free = append(s.free, p)
}

// d returns the delay of slot p to mirror j.
func (s *state) d(p int32, j int) float64 { return s.delays[int(p)*s.m+j] }

// row returns slot p's delays.
func (s *state) row(p int32) []float64 { return s.delays[int(p)*s.m : (int(p)+1)*s.m] }

// cost returns slot p's delay to its current mirror.
func (s *state) cost(p int32) float64 { return s.d(p, int(s.mirror[p])) }

func (s *state) full(j int) bool  { return s.load[j] >= s.caps[j] }
func (s *state) spare(j int) bool { return s.load[j] < s.caps[j] }

// place assigns an unassigned slot to mirror j.
func (s *state) place(p int32, j int) {
	s.mirror[p] = int32(j)
	s.load[j]++
	if s.idx != nil {
		s.idx.insert(p, j, s.row(p))
	}
}

// unplace removes slot p from its mirror.
func (s *state) unplace(p int32) {
	j := int(s.mirror[p])
	if s.idx != nil {
		s.idx.remove(p, j)
	}
	s.load[j]--
	s.mirror[p] = -1
}

// relocate reassigns an assigned slot to mirror to without logging it.
func (s *state) relocate(p int32, to int) {
	s.unplace(p)
	s.place(p, to)
}

// move reassigns an assigned slot to mirror to and logs the move; a player
// moved twice in one event keeps one entry.
func (s *state) move(p int32, to int) {
	from := s.mirror[p]
	if int(from) == to {
		return
	}
	s.relocate(p, to)
	for i := range s.moves {
		if s.moves[i].Player == s.ids[p] { // moved twice in one event: keep one move
			s.moves[i].To = s.mirrors[to].ID
			return
		}
	}
	s.moves = append(s.moves, Move{Player: s.ids[p], From: s.mirrors[from].ID, To: s.mirrors[to].ID})
}

// takeMoves returns the event's net moves in a fresh slice owned by the
// caller, dropping any player that ended where it started, and ordered so
// that executing them one by one never exceeds a capacity: starting from the
// loads before the moves (the leaving player already gone, the joining one,
// seated on mirror joined ≥ 0, not yet), repeatedly take the first pending
// move whose destination has a free seat. Moves that form a cycle between
// full mirrors (possible only after a re-solve) follow in their logged order.
func (s *state) takeMoves(joined int) []Move {
	var out []Move
	for _, mv := range s.moves {
		if mv.From != mv.To {
			out = append(out, mv)
		}
	}
	s.moves = s.moves[:0]
	if len(out) < 2 {
		return out
	}
	load := make(map[string]int32, 2*len(out))
	for _, mv := range out {
		for _, id := range []string{mv.From, mv.To} {
			if _, ok := load[id]; !ok {
				load[id] = s.load[s.mirrorIdx[id]]
			}
		}
	}
	if joined >= 0 {
		if _, ok := load[s.mirrors[joined].ID]; ok {
			load[s.mirrors[joined].ID]--
		}
	}
	for _, mv := range out {
		load[mv.From]++
		load[mv.To]--
	}
	ordered := make([]Move, 0, len(out))
	done := make([]bool, len(out))
	for progress := true; progress; {
		progress = false
		for i, mv := range out {
			if !done[i] && load[mv.To] < s.caps[s.mirrorIdx[mv.To]] {
				load[mv.From]--
				load[mv.To]++
				ordered = append(ordered, mv)
				done[i] = true
				progress = true
				break
			}
		}
	}
	for i, mv := range out {
		if !done[i] {
			ordered = append(ordered, mv)
		}
	}
	return ordered
}
