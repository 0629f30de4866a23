package cma

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Sentinel errors. Errors returned by Assigner methods wrap one of these, so
// callers can test with errors.Is; the message names the offending player,
// mirror or value.
var (
	// ErrNoCapacity reports a join while every mirror is full.
	ErrNoCapacity = errors.New("cma: no capacity")
	// ErrDuplicatePlayer reports a join of a player that is already assigned.
	ErrDuplicatePlayer = errors.New("cma: duplicate player")
	// ErrUnknownPlayer reports a leave of a player that is not assigned.
	ErrUnknownPlayer = errors.New("cma: unknown player")
	// ErrUnknownMirror reports a delay given for a mirror that does not exist.
	ErrUnknownMirror = errors.New("cma: unknown mirror")
	// ErrBadDelay reports a NaN, infinite, negative or missing delay.
	ErrBadDelay = errors.New("cma: bad delay")
	// ErrBadMirrors reports an invalid mirror list given to New.
	ErrBadMirrors = errors.New("cma: bad mirrors")
	// ErrBadPlayer reports an empty player ID.
	ErrBadPlayer = errors.New("cma: bad player")
)

// DelayError reports a player's NaN, infinite, negative or missing delay to
// one mirror. It wraps ErrBadDelay.
type DelayError struct {
	Player string
	Mirror string
	Value  float64 // NaN when the delay is missing
	// Missing is true when no delay was given for the mirror.
	Missing bool
}

func (e *DelayError) Error() string {
	if e.Missing {
		return fmt.Sprintf("%v: player %q has no delay to mirror %q", ErrBadDelay, e.Player, e.Mirror)
	}
	return fmt.Sprintf("%v: player %q has delay %v to mirror %q (want finite and ≥ 0)", ErrBadDelay, e.Player, e.Value, e.Mirror)
}

func (e *DelayError) Unwrap() error { return ErrBadDelay }

// Mirror is a server that players connect to.
type Mirror struct {
	// ID names the mirror; unique and non-empty.
	ID string
	// Capacity is the most players the mirror may serve (at least 1).
	Capacity int
}

// Method selects the join and leave algorithms of an Assigner.
type Method int

const (
	// SA is the exact incremental J-SA/L-SA (the default).
	SA Method = iota
	// Greedy is J-greedy with L-greedy.
	Greedy
	// Ignore is J-greedy with L-ignore.
	Ignore
	// Optimal re-solves from scratch after every event.
	Optimal
	// SARebuild is J-SA/L-SA as the paper specifies, rebuilding its arrays
	// on every event.
	SARebuild
)

var methodNames = []string{SA: "sa", Greedy: "greedy", Ignore: "ignore", Optimal: "optimal", SARebuild: "sa-rebuild"}

// Methods lists every method, in the order of their constants.
func Methods() []Method { return []Method{SA, Greedy, Ignore, Optimal, SARebuild} }

// String returns the method's command-line name.
func (m Method) String() string {
	if m >= 0 && int(m) < len(methodNames) {
		return methodNames[m]
	}
	return fmt.Sprintf("Method(%d)", int(m))
}

// Exact reports whether the method keeps the assignment optimal after
// every event.
func (m Method) Exact() bool { return m == SA || m == SARebuild || m == Optimal }

// ParseMethod parses a method's command-line name: sa, greedy, ignore,
// optimal or sa-rebuild.
func ParseMethod(s string) (Method, error) {
	for i, n := range methodNames {
		if n == s {
			return Method(i), nil
		}
	}
	return 0, fmt.Errorf("cma: unknown method %q (want one of %s)", s, strings.Join(methodNames, ", "))
}

// Move is one reassignment of an already connected player.
type Move struct {
	Player string
	From   string
	To     string
}

// Decision is the outcome of one Join or Leave.
type Decision struct {
	// Player is the joining or leaving player.
	Player string
	// Mirror is the mirror the joining player is assigned to, or the mirror
	// the leaving player left.
	Mirror string
	// Moves lists every other player that changed mirror. Each player
	// appears at most once and ends on a mirror different from where it
	// started. The moves are ordered so that carrying them out one by one,
	// after removing a leaving player and before seating a joining one,
	// never puts a mirror over capacity (the vacancy is filled first). SA
	// and SARebuild always move along one simple chain, so such an order
	// always exists for them; L-greedy (which may pull a player twice) and a
	// re-solve may swap players between full mirrors, a cycle that no order
	// can serialise, and those moves come last.
	Moves []Move
}

// engine is one join/leave algorithm operating on a shared state.
type engine interface {
	// join assigns slot p (delays stored, unassigned); a spare seat exists.
	join(p int32)
	// leave unassigns slot p (currently assigned), possibly moving others.
	leave(p int32)
}

// Assigner maintains a client-to-mirror assignment under joins and leaves.
// Create one with New.
type Assigner struct {
	method Method
	s      *state
	eng    engine
}

// New returns an Assigner for the given mirrors (copied) using method.
func New(mirrors []Mirror, method Method) (*Assigner, error) {
	if len(mirrors) == 0 {
		return nil, fmt.Errorf("%w: no mirrors", ErrBadMirrors)
	}
	if len(mirrors) > math.MaxInt16 {
		return nil, fmt.Errorf("%w: %d mirrors, at most %d", ErrBadMirrors, len(mirrors), math.MaxInt16)
	}
	seen := make(map[string]int, len(mirrors))
	for i, m := range mirrors {
		if m.ID == "" {
			return nil, fmt.Errorf("%w: mirror %d has an empty ID", ErrBadMirrors, i)
		}
		if j, dup := seen[m.ID]; dup {
			return nil, fmt.Errorf("%w: mirror ID %q used at %d and %d", ErrBadMirrors, m.ID, j, i)
		}
		seen[m.ID] = i
		if m.Capacity < 1 || m.Capacity > math.MaxInt32 {
			return nil, fmt.Errorf("%w: mirror %q has capacity %d, want 1…%d", ErrBadMirrors, m.ID, m.Capacity, math.MaxInt32)
		}
	}
	if method < 0 || int(method) >= len(methodNames) {
		return nil, fmt.Errorf("cma: unknown method %d", int(method))
	}
	s := newState(mirrors, seen)
	a := &Assigner{method: method, s: s}
	switch method {
	case SA:
		a.eng = newSA(s)
	case Greedy:
		a.eng = greedyEngine{s: s, leaveGreedy: true}
	case Ignore:
		a.eng = greedyEngine{s: s}
	case Optimal:
		a.eng = &optimalEngine{s: s}
	case SARebuild:
		a.eng = newRebuild(s)
	}
	return a, nil
}

// Method returns the assigner's method.
func (a *Assigner) Method() Method { return a.method }

// Mirrors returns a copy of the mirrors, in index order.
func (a *Assigner) Mirrors() []Mirror { return slices.Clone(a.s.mirrors) }

// Len returns the number of assigned players.
func (a *Assigner) Len() int { return len(a.s.index) }

// Capacity returns the total capacity of all mirrors.
func (a *Assigner) Capacity() int { return a.s.totalCap }

// Load returns the number of players on mirror j (by index).
func (a *Assigner) Load(j int) int { return int(a.s.load[j]) }

// MirrorIndex returns the index of the mirror with the given ID.
func (a *Assigner) MirrorIndex(id string) (int, bool) { j, ok := a.s.mirrorIdx[id]; return j, ok }

// MirrorOf returns the mirror ID a player is assigned to.
func (a *Assigner) MirrorOf(player string) (string, bool) {
	p, ok := a.s.index[player]
	if !ok {
		return "", false
	}
	return a.s.mirrors[a.s.mirror[p]].ID, true
}

// Delay returns the delay of a player to its assigned mirror.
func (a *Assigner) Delay(player string) (float64, bool) {
	p, ok := a.s.index[player]
	if !ok {
		return 0, false
	}
	return a.s.cost(p), true
}

// Assignment returns a snapshot of the assignment: player ID → mirror ID.
func (a *Assigner) Assignment() map[string]string {
	out := make(map[string]string, len(a.s.index))
	for id, p := range a.s.index {
		out[id] = a.s.mirrors[a.s.mirror[p]].ID
	}
	return out
}

// Join assigns a new player. delays[j] is the player's delay in ms to
// mirror j (the order of the mirrors given to New). On error nothing changes.
func (a *Assigner) Join(player string, delays []float64) (Decision, error) {
	if err := a.checkJoin(player, delays); err != nil {
		return Decision{}, err
	}
	p := a.s.add(player, delays)
	a.s.moves = a.s.moves[:0]
	a.eng.join(p)
	j := int(a.s.mirror[p])
	return Decision{Player: player, Mirror: a.s.mirrors[j].ID, Moves: a.s.takeMoves(j)}, nil
}

// JoinMap is Join with delays keyed by mirror ID; every mirror must be
// present and no other key may be.
func (a *Assigner) JoinMap(player string, delays map[string]float64) (Decision, error) {
	d := make([]float64, len(a.s.mirrors))
	for id := range delays {
		if _, ok := a.s.mirrorIdx[id]; !ok {
			return Decision{}, fmt.Errorf("%w: player %q gives a delay to mirror %q", ErrUnknownMirror, player, id)
		}
	}
	for j, m := range a.s.mirrors {
		v, ok := delays[m.ID]
		if !ok {
			return Decision{}, &DelayError{Player: player, Mirror: m.ID, Value: math.NaN(), Missing: true}
		}
		d[j] = v
	}
	return a.Join(player, d)
}

func (a *Assigner) checkJoin(player string, delays []float64) error {
	if player == "" {
		return fmt.Errorf("%w: empty player ID", ErrBadPlayer)
	}
	if _, dup := a.s.index[player]; dup {
		return fmt.Errorf("%w: %q is already assigned", ErrDuplicatePlayer, player)
	}
	if len(delays) != len(a.s.mirrors) {
		return fmt.Errorf("%w: player %q has %d delays for %d mirrors", ErrBadDelay, player, len(delays), len(a.s.mirrors))
	}
	for j, v := range delays {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return &DelayError{Player: player, Mirror: a.s.mirrors[j].ID, Value: v}
		}
	}
	if len(a.s.index) >= a.s.totalCap {
		return fmt.Errorf("%w: all %d mirrors are full (%d players) when %q joins", ErrNoCapacity, len(a.s.mirrors), a.s.totalCap, player)
	}
	return nil
}

// Leave removes a player. On error nothing changes.
func (a *Assigner) Leave(player string) (Decision, error) {
	p, ok := a.s.index[player]
	if !ok {
		return Decision{}, fmt.Errorf("%w: %q is not assigned", ErrUnknownPlayer, player)
	}
	from := a.s.mirrors[a.s.mirror[p]].ID
	a.s.moves = a.s.moves[:0]
	a.eng.leave(p)
	a.s.release(p)
	return Decision{Player: player, Mirror: from, Moves: a.s.takeMoves(-1)}, nil
}

// Stats summarises the delays of the current assignment.
type Stats struct {
	Players int
	Total   float64 // sum of player-to-mirror delays, ms
	Mean    float64
	Max     float64
	P95     float64 // 95th percentile (nearest rank)
	// Within is the number of players whose delay is at most the bound
	// passed to Stats.
	Within int
}

// Stats returns delay statistics of the current assignment; Within counts
// players with delay ≤ bound.
func (a *Assigner) Stats(bound float64) Stats {
	return Summarize(a.delays(), bound)
}

// delays returns every assigned player's delay to its mirror, in slot order.
func (a *Assigner) delays() []float64 {
	ds := make([]float64, 0, len(a.s.index))
	for p, j := range a.s.mirror {
		if j >= 0 {
			ds = append(ds, a.s.d(int32(p), int(j)))
		}
	}
	return ds
}

// Summarize computes Stats over a list of delays (sorted in place).
func Summarize(ds []float64, bound float64) Stats {
	st := Stats{Players: len(ds)}
	if len(ds) == 0 {
		return st
	}
	slices.Sort(ds)
	for _, d := range ds {
		if d <= bound {
			st.Within++
		}
	}
	sum := kahanSum(ds)
	st.Total = sum
	st.Mean = sum / float64(len(ds))
	st.Max = ds[len(ds)-1]
	st.P95 = ds[max(0, int(math.Ceil(0.95*float64(len(ds))))-1)]
	return st
}

// TotalDelay returns the sum of all players' delays to their mirrors, in
// O(n) (Stats also sorts, for the percentile).
func (a *Assigner) TotalDelay() float64 { return kahanSum(a.delays()) }

// kahanSum adds with compensated summation: totals are compared with the
// exact optimum to 1e-9, over up to millions of terms.
func kahanSum(xs []float64) float64 {
	var sum, c float64
	for _, x := range xs {
		y := x - c
		t := sum + y
		c = (t - sum) - y
		sum = t
	}
	return sum
}
