package balance

import (
	"fmt"
	"math"
	"slices"
)

// Criterion chooses an overflowed instance's server and replicated server
// among its players (the CRITERIA of Algorithm 2).
type Criterion int

const (
	// LL (latency lookup): the player with the lowest total RTT to the
	// others is the server, the second lowest the replica.
	LL Criterion = iota
	// PD (probability of disconnection): the player with the highest
	// predicted minimum uptime is the server, the next the replica
	// (equations 2 and 3).
	PD
	// Score (beyond the paper): the pair minimising the expected latency
	// with failover plus a price per expected failover; see Group.Score.
	Score
)

// Criteria lists the criteria in order.
func Criteria() []Criterion { return []Criterion{LL, PD, Score} }

func (c Criterion) String() string {
	switch c {
	case LL:
		return "LL"
	case PD:
		return "PD"
	case Score:
		return "score"
	}
	return fmt.Sprintf("Criterion(%d)", int(c))
}

// ParseCriterion parses "LL", "PD" or "score" (any case).
func ParseCriterion(s string) (Criterion, error) {
	for _, c := range Criteria() {
		if equalFold(s, c.String()) {
			return c, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown criterion %q (want LL, PD or score)", ErrConfig, s)
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// Group is what Algorithm 2 knows of an instance's players: their RTTs to
// one another, their predicted uptimes, and (for Score and the failure
// probability) how likely each is to leave before the instance ends.
type Group struct {
	N      int       // players
	RTT    []float64 // N×N, row-major, ms; RTT[i*N+j] between players i and j
	Uptime []Uptime  // per player (PD)
	Leave  []float64 // per player, probability of leaving before the end (Score)
	// FailoverMs prices one failover (the replica taking over) in ms of
	// every player's latency, for Score.
	FailoverMs float64
	// CanHost, if set, says per player whether it may be chosen as the
	// server or the replica (a player whose machine cannot host still
	// counts in the others' latency sums); nil: every player may.
	CanHost []bool
}

// Validate reports the first malformed field.
func (g *Group) Validate() error {
	switch {
	case g.N < 1:
		return fmt.Errorf("%w: group of %d players", ErrConfig, g.N)
	case len(g.RTT) != g.N*g.N:
		return fmt.Errorf("%w: RTT has %d entries for %d players (want %d)", ErrConfig, len(g.RTT), g.N, g.N*g.N)
	case g.Uptime != nil && len(g.Uptime) != g.N:
		return fmt.Errorf("%w: %d uptimes for %d players", ErrConfig, len(g.Uptime), g.N)
	case g.CanHost != nil && len(g.CanHost) != g.N:
		return fmt.Errorf("%w: %d host flags for %d players", ErrConfig, len(g.CanHost), g.N)
	case g.Leave != nil && len(g.Leave) != g.N:
		return fmt.Errorf("%w: %d leave probabilities for %d players", ErrConfig, len(g.Leave), g.N)
	case !(g.FailoverMs >= 0) || math.IsInf(g.FailoverMs, 0):
		return fmt.Errorf("%w: failover price %g ms (want finite, ≥ 0)", ErrConfig, g.FailoverMs)
	}
	for k, v := range g.RTT {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("%w: RTT between players %d and %d is %g (want finite, ≥ 0)", ErrConfig, k/g.N, k%g.N, v)
		}
	}
	for k, u := range g.Uptime {
		if !(u.Min >= 0) || !(u.Max >= u.Min) || math.IsInf(u.Max, 0) {
			return fmt.Errorf("%w: player %d uptime [%g, %g] (want 0 ≤ min ≤ max, finite)", ErrConfig, k, u.Min, u.Max)
		}
	}
	for k, q := range g.Leave {
		if !(q >= 0 && q <= 1) {
			return fmt.Errorf("%w: player %d leave probability %g (want 0..1)", ErrConfig, k, q)
		}
	}
	return nil
}

// Hosting is an overflowed instance's server (AGx.S) and replicated server
// (AGx.RS), as player indices; Replica is -1 when one player is left.
type Hosting struct {
	Server, Replica int
}

// LatencySum returns player i's total RTT to the other alive players.
func (g *Group) LatencySum(i int, alive []bool) float64 {
	var s float64
	row := g.RTT[i*g.N : (i+1)*g.N]
	for j, v := range row {
		if j != i && (alive == nil || alive[j]) {
			s += v
		}
	}
	return s
}

// Distribute runs Algorithm 2's choice among the alive players (nil: all):
// the server and the replicated server by crit. Ties go to the lower
// index. It returns {-1, -1} when nobody is alive.
func (g *Group) Distribute(crit Criterion, alive []bool) Hosting {
	ok := func(i int) bool { return alive == nil || alive[i] }
	switch crit {
	case Score:
		return g.bestPair(alive)
	case PD:
		s := g.best(alive, -1, func(i int) float64 { return -g.uptimeMin(i) })
		return Hosting{s, g.best(alive, s, func(i int) float64 { return -g.uptimeMin(i) })}
	default:
		sums := make([]float64, g.N)
		for i := range sums {
			if ok(i) {
				sums[i] = g.LatencySum(i, alive)
			}
		}
		s := g.best(alive, -1, func(i int) float64 { return sums[i] })
		return Hosting{s, g.best(alive, s, func(i int) float64 { return sums[i] })}
	}
}

// NewReplica returns the replacement replica when the current one is gone
// and server stays (Algorithm 4: "by the same criterion"): for LL and PD
// the best alive player other than server, for Score the best partner of
// server.
func (g *Group) NewReplica(crit Criterion, alive []bool, server int) int {
	switch crit {
	case Score:
		best, bv := -1, math.Inf(1)
		for r := 0; r < g.N; r++ {
			if r == server || (alive != nil && !alive[r]) || !g.canHost(r) {
				continue
			}
			if v := g.Score(server, r, alive); v < bv {
				best, bv = r, v
			}
		}
		return best
	case PD:
		return g.best(alive, server, func(i int) float64 { return -g.uptimeMin(i) })
	default:
		return g.best(alive, server, func(i int) float64 { return g.LatencySum(i, alive) })
	}
}

func (g *Group) canHost(i int) bool { return g.CanHost == nil || g.CanHost[i] }

func (g *Group) uptimeMin(i int) float64 {
	if g.Uptime == nil {
		return 0
	}
	return g.Uptime[i].Min
}

func (g *Group) leave(i int) float64 {
	if g.Leave == nil {
		return 0
	}
	return g.Leave[i]
}

// best returns the alive player other than skip that may host with the
// lowest key.
func (g *Group) best(alive []bool, skip int, key func(int) float64) int {
	b, bv := -1, math.Inf(1)
	for i := 0; i < g.N; i++ {
		if i == skip || (alive != nil && !alive[i]) || !g.canHost(i) {
			continue
		}
		if v := key(i); b < 0 || v < bv {
			b, bv = i, v
		}
	}
	return b
}

// Score is the combined criterion's cost of server s with replica r (ms):
// the players' expected mean RTT to whoever serves them — s, or r after s
// leaves — plus FailoverMs per expected failover:
//
//	(1 − q_s)·L(s) + q_s·L(r) + FailoverMs·(q_s + q_s·q_r),
//
// where L(x) is the mean RTT from the other alive players to x and q the
// probability of leaving before the instance ends. With one alive player
// the cost is 0.
func (g *Group) Score(s, r int, alive []bool) float64 {
	n := 0
	for i := 0; i < g.N; i++ {
		if alive == nil || alive[i] {
			n++
		}
	}
	if n <= 1 {
		return 0
	}
	ls := g.LatencySum(s, alive) / float64(n-1)
	qs := g.leave(s)
	if r < 0 {
		return ls + g.FailoverMs*qs
	}
	lr := g.LatencySum(r, alive) / float64(n-1)
	qr := g.leave(r)
	return (1-qs)*ls + qs*lr + g.FailoverMs*(qs+qs*qr)
}

func (g *Group) bestPair(alive []bool) Hosting {
	var idx []int
	n := 0
	for i := 0; i < g.N; i++ {
		if alive == nil || alive[i] {
			n++
			if g.canHost(i) {
				idx = append(idx, i)
			}
		}
	}
	switch len(idx) {
	case 0:
		return Hosting{-1, -1}
	case 1:
		return Hosting{idx[0], -1}
	}
	// O(n²) pairs over precomputed means.
	l := make([]float64, g.N)
	for _, i := range idx {
		l[i] = g.LatencySum(i, alive) / float64(max(n-1, 1))
	}
	best, bv := Hosting{-1, -1}, math.Inf(1)
	for _, s := range idx {
		qs := g.leave(s)
		for _, r := range idx {
			if r == s {
				continue
			}
			qr := g.leave(r)
			if v := (1-qs)*l[s] + qs*l[r] + g.FailoverMs*(qs+qs*qr); v < bv {
				best, bv = Hosting{s, r}, v
			}
		}
	}
	return best
}

// Link returns the edges of the instance's P2P subarea (Fig. 2): the
// bipartite graph between {server, replica} and the other alive players,
// plus the server–replica edge; pairs are (server-side, player).
func (g *Group) Link(h Hosting, alive []bool) [][2]int {
	var e [][2]int
	if h.Server < 0 {
		return nil
	}
	if h.Replica >= 0 {
		e = append(e, [2]int{h.Server, h.Replica})
	}
	for p := 0; p < g.N; p++ {
		if p == h.Server || p == h.Replica || (alive != nil && !alive[p]) {
			continue
		}
		e = append(e, [2]int{h.Server, p})
		if h.Replica >= 0 {
			e = append(e, [2]int{h.Replica, p})
		}
	}
	return e
}

// Restructure is Algorithm 4: player gone has left (alive[gone] is already
// false). If it was the server the replica is promoted; if it was the
// server or the replica a new replica is chosen by crit. Lost is true when
// the server left with no replica to take over while players remain
// (alive ones, whether or not they may host).
func (g *Group) Restructure(h Hosting, gone int, crit Criterion, alive []bool) (next Hosting, lost bool) {
	remain := 0
	for i := 0; i < g.N; i++ {
		if alive[i] {
			remain++
		}
	}
	switch gone {
	case h.Server:
		if h.Replica < 0 || !alive[h.Replica] {
			return Hosting{-1, -1}, remain > 0
		}
		next.Server = h.Replica
	case h.Replica:
		next.Server = h.Server
	default:
		return h, false
	}
	next.Replica = g.NewReplica(crit, alive, next.Server)
	return next, false
}

// PaperFailure is §5.2.1's failure probability of an instance: the product
// of its players' disconnection probabilities, leaving out the least
// reliable player (the largest one). pd holds one value per player.
func PaperFailure(pd []float64) float64 {
	if len(pd) == 0 {
		return 0
	}
	w := slices.Index(pd, slices.Max(pd))
	p := 1.0
	for i, v := range pd {
		if i != w {
			p *= v
		}
	}
	return p
}

// ExactFailure is the exact probability that at most one of the players
// stays (the instance is alive while two play), when player i leaves
// independently with probability q[i]: the two lowest terms of the
// Poisson-binomial distribution, by dynamic programming.
func ExactFailure(q []float64) float64 {
	// p0: nobody stayed so far; p1: exactly one stayed.
	p0, p1 := 1.0, 0.0
	for _, x := range q {
		p1 = p1*x + p0*(1-x)
		p0 *= x
	}
	return p0 + p1
}
