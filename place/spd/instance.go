package spd

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// ErrInput reports an invalid instance, solution or parameter; the wrapped
// message names the offending field and value. Nothing is changed.
var ErrInput = errors.New("spd: invalid input")

// ErrBudget reports that an exhaustive search (Exact, KBest) would exceed its
// work limit; raise the limit or use a heuristic.
var ErrBudget = errors.New("spd: search exceeds its work limit")

// ErrNoSolution reports that an algorithm found no assignment within the
// bound although the bound is at least Γ (ZIZO's zoom-in step, KBest with
// no feasible subset of k servers, Exact for P2P below every solution).
var ErrNoSolution = errors.New("spd: no solution within the bound")

// InfeasibleError reports a delay bound below Γ, the minimum client-server
// delay of the instance (Algorithm Matching): no client-server solution
// exists, and the heuristics, which build on client-server trees, find none
// in either model.
type InfeasibleError struct {
	Model Model
	Bound float64 // the bound asked for, ms
	Gamma float64 // Γ, ms
}

func (e *InfeasibleError) Error() string {
	return fmt.Sprintf("spd: bound %.6g ms is below Γ = %.6g ms, the minimum client-server delay of this instance (Algorithm Matching); no %s solution can be built from a client-server tree", e.Bound, e.Gamma, e.Model)
}

// Tolerance is the slack, in ms, allowed when a delay is compared with a
// bound, so that a bound computed as f·Γ with f = 1 admits the solution
// that achieves Γ despite rounding.
const Tolerance = 1e-9

func within(x, bound float64) bool { return x <= bound+Tolerance }

// lessVD reports whether a variation and delay (v, d) beat (bv, bd): a
// variation smaller by more than Tolerance, or one equal within Tolerance
// and a delay smaller by more than Tolerance. Every tie-break on
// variation and delay uses it, so that rounding (0.1 + 0.2 ≠ 0.3) cannot
// pass for a difference. It is monotone: if (v', d') ≥ (v, d) componentwise
// and (v', d') beats (bv, bd), so does (v, d), which lets a search prune on
// partial values.
func lessVD(v, d, bv, bd float64) bool {
	if v < bv-Tolerance {
		return true
	}
	return v <= bv+Tolerance && d < bd-Tolerance
}

// Link is an undirected overlay link between two servers with its one-way
// latency in ms.
type Link struct {
	A, B string
	Ms   float64
}

// Instance is one game session on an overlay: the servers, the overlay's
// shortest-path latencies and routes, the players (clients) and their
// latency to every server. It is immutable and safe for concurrent use.
type Instance struct {
	servers, players []string
	n, m             int
	lat              []float64 // m×n one-way player-to-server latency
	dist             []float64 // n×n shortest overlay latency
	parent           []int32   // parent[src*n+v]: predecessor of v on the shortest-path tree from src (-1 at src)
	byName           map[string]int
}

// NewInstance validates and builds an instance. servers and players are
// unique non-empty names; links connect known, distinct servers with a
// finite latency ≥ 0 (each pair at most once) and must connect all servers;
// lat[i][j] is the one-way latency (ms, finite, ≥ 0) from player i to
// server j. The inputs are copied; on error nothing is built.
func NewInstance(servers []string, links []Link, players []string, lat [][]float64) (*Instance, error) {
	n, m := len(servers), len(players)
	if n == 0 {
		return nil, fmt.Errorf("%w: no servers", ErrInput)
	}
	if m == 0 {
		return nil, fmt.Errorf("%w: no players", ErrInput)
	}
	in := &Instance{servers: slices.Clone(servers), players: slices.Clone(players), n: n, m: m,
		byName: make(map[string]int, n)}
	for j, s := range servers {
		if strings.TrimSpace(s) == "" {
			return nil, fmt.Errorf("%w: server %d has an empty name", ErrInput, j)
		}
		if _, dup := in.byName[s]; dup {
			return nil, fmt.Errorf("%w: server %q named twice", ErrInput, s)
		}
		in.byName[s] = j
	}
	seenP := make(map[string]bool, m)
	for i, p := range players {
		if strings.TrimSpace(p) == "" {
			return nil, fmt.Errorf("%w: player %d has an empty name", ErrInput, i)
		}
		if seenP[p] {
			return nil, fmt.Errorf("%w: player %q named twice", ErrInput, p)
		}
		seenP[p] = true
	}
	w := make([]float64, n*n)
	for i := range w {
		w[i] = math.Inf(1)
	}
	for k, l := range links {
		a, ok := in.byName[l.A]
		if !ok {
			return nil, fmt.Errorf("%w: link %d: unknown server %q", ErrInput, k, l.A)
		}
		b, ok := in.byName[l.B]
		if !ok {
			return nil, fmt.Errorf("%w: link %d: unknown server %q", ErrInput, k, l.B)
		}
		if a == b {
			return nil, fmt.Errorf("%w: link %d: %q links to itself", ErrInput, k, l.A)
		}
		if !finiteNonNeg(l.Ms) {
			return nil, fmt.Errorf("%w: link %d (%s–%s): latency %v, want a finite value ≥ 0", ErrInput, k, l.A, l.B, l.Ms)
		}
		if !math.IsInf(w[a*n+b], 1) {
			return nil, fmt.Errorf("%w: link %d: %s–%s given twice", ErrInput, k, l.A, l.B)
		}
		w[a*n+b], w[b*n+a] = l.Ms, l.Ms
	}
	if len(lat) != m {
		return nil, fmt.Errorf("%w: %d latency rows for %d players", ErrInput, len(lat), m)
	}
	in.lat = make([]float64, m*n)
	for i, row := range lat {
		if len(row) != n {
			return nil, fmt.Errorf("%w: player %q: %d latencies for %d servers", ErrInput, players[i], len(row), n)
		}
		for j, x := range row {
			if !finiteNonNeg(x) {
				return nil, fmt.Errorf("%w: player %q to server %q: latency %v, want a finite value ≥ 0", ErrInput, players[i], servers[j], x)
			}
			in.lat[i*n+j] = x
		}
	}
	in.dist = make([]float64, n*n)
	in.parent = make([]int32, n*n)
	done := make([]bool, n)
	for src := 0; src < n; src++ {
		dijkstra(w, n, src, in.dist[src*n:(src+1)*n], in.parent[src*n:(src+1)*n], done)
		for v := 0; v < n; v++ {
			if math.IsInf(in.dist[src*n+v], 1) {
				return nil, fmt.Errorf("%w: overlay is disconnected: no path from %q to %q", ErrInput, servers[src], servers[v])
			}
		}
	}
	return in, nil
}

func finiteNonNeg(x float64) bool { return x >= 0 && !math.IsInf(x, 1) } // NaN fails x >= 0

// dijkstra fills dist and parent from src over the dense weight matrix w
// (O(n²)). Ties are broken deterministically: the unsettled node of
// smallest index is settled first, and a parent changes only on a strictly
// shorter path.
func dijkstra(w []float64, n, src int, dist []float64, parent []int32, done []bool) {
	for v := range dist {
		dist[v], parent[v], done[v] = math.Inf(1), -1, false
	}
	dist[src] = 0
	for {
		u := -1
		for v := 0; v < n; v++ {
			if !done[v] && !math.IsInf(dist[v], 1) && (u < 0 || dist[v] < dist[u]) {
				u = v
			}
		}
		if u < 0 {
			return
		}
		done[u] = true
		row := w[u*n : (u+1)*n]
		for v, x := range row {
			if !done[v] && !math.IsInf(x, 1) && dist[u]+x < dist[v] {
				dist[v], parent[v] = dist[u]+x, int32(u)
			}
		}
	}
}

// Servers returns the server names (a copy), in index order.
func (in *Instance) Servers() []string { return slices.Clone(in.servers) }

// Players returns the player names (a copy), in index order.
func (in *Instance) Players() []string { return slices.Clone(in.players) }

// NumServers returns n, the number of servers.
func (in *Instance) NumServers() int { return in.n }

// NumPlayers returns m, the number of players.
func (in *Instance) NumPlayers() int { return in.m }

// ServerIndex returns the index of the named server.
func (in *Instance) ServerIndex(name string) (int, bool) { i, ok := in.byName[name]; return i, ok }

// Latency returns the one-way latency from player i to server j.
func (in *Instance) Latency(i, j int) float64 { return in.lat[i*in.n+j] }

// Dist returns the shortest overlay latency between servers a and b.
func (in *Instance) Dist(a, b int) float64 { return in.dist[a*in.n+b] }

// Path returns the servers on the overlay route from a to b, both included.
// Routes are fixed: the route between a and b is the one on the
// shortest-path tree of b (so every route to a root lies on the root's
// tree, and client-server solutions are trees).
func (in *Instance) Path(a, b int) []int {
	p := []int{a}
	for v := a; v != b; {
		v = int(in.parent[b*in.n+v])
		p = append(p, v)
	}
	return p
}

// next returns the server after v on the route from v to root.
func (in *Instance) next(v, root int) int { return int(in.parent[root*in.n+v]) }

// Scaled returns a copy of the instance with every latency (links and
// player latencies) multiplied by f > 0. Routes are unchanged.
func (in *Instance) Scaled(f float64) (*Instance, error) {
	if !(f > 0) || math.IsInf(f, 1) {
		return nil, fmt.Errorf("%w: scale %v, want a finite value > 0", ErrInput, f)
	}
	out := *in
	out.lat = slices.Clone(in.lat)
	out.dist = slices.Clone(in.dist)
	for i := range out.lat {
		out.lat[i] *= f
	}
	for i := range out.dist {
		out.dist[i] *= f
	}
	return &out, nil
}

// Model is the communication model of a session.
type Model int

const (
	// CS is the client-server model: every event goes from its player
	// through its contact server to the central server (root) and back
	// out; D_cs = 2·max_i (d(c_i, s_ci) + d(s_ci, r)).
	CS Model = iota
	// P2P is the peer-to-peer model: events go from player to player
	// through both contact servers; D_p2p is the largest player-to-player
	// latency d(c_i,s_ci) + d(s_ci,s_cj) + d(s_cj,c_j) over distinct
	// players.
	P2P
)

func (m Model) String() string {
	switch m {
	case CS:
		return "cs"
	case P2P:
		return "p2p"
	}
	return fmt.Sprintf("Model(%d)", int(m))
}

// ParseModel parses "cs" or "p2p".
func ParseModel(s string) (Model, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "cs":
		return CS, nil
	case "p2p":
		return P2P, nil
	}
	return 0, fmt.Errorf("%w: model %q: want cs or p2p", ErrInput, s)
}

// Solution is a selected server network with its assignment.
type Solution struct {
	// Model is the communication model the figures are for.
	Model Model
	// Root is the central server (CS); -1 for P2P.
	Root int
	// Assign[i] is player i's contact server.
	Assign []int
	// Delay is D_cs(A_r) or D_p2p(A) in ms; Variation is V_cs or V_p2p.
	Delay, Variation float64
	// Servers are the servers used, ascending: the contact servers and
	// every server on their routes to the root (CS) or to each other
	// (P2P), the root included (CS).
	Servers []int
}

// Evaluate computes a solution's delay, variation and servers for the
// given model, root (ignored for P2P) and assignment.
func (in *Instance) Evaluate(model Model, root int, assign []int) (Solution, error) {
	if model != CS && model != P2P {
		return Solution{}, fmt.Errorf("%w: model %d", ErrInput, int(model))
	}
	if len(assign) != in.m {
		return Solution{}, fmt.Errorf("%w: assignment of %d players, instance has %d", ErrInput, len(assign), in.m)
	}
	for i, s := range assign {
		if s < 0 || s >= in.n {
			return Solution{}, fmt.Errorf("%w: player %q assigned to server index %d (have %d servers)", ErrInput, in.players[i], s, in.n)
		}
	}
	if model == CS && (root < 0 || root >= in.n) {
		return Solution{}, fmt.Errorf("%w: root index %d (have %d servers)", ErrInput, root, in.n)
	}
	return in.eval(model, root, slices.Clone(assign)), nil
}

// eval builds the Solution of a valid assignment, which it keeps.
func (in *Instance) eval(model Model, root int, assign []int) Solution {
	s := Solution{Model: model, Root: root, Assign: assign}
	if model == CS {
		lo, hi := math.Inf(1), math.Inf(-1)
		for i, a := range assign {
			e := in.lat[i*in.n+a] + in.dist[a*in.n+root]
			lo, hi = min(lo, e), max(hi, e)
		}
		s.Delay, s.Variation = 2*hi, 2*(hi-lo)
	} else {
		s.Root = -1
		s.Delay, s.Variation = in.p2pDelay(assign)
	}
	s.Servers = in.used(model, root, assign)
	return s
}

// p2pDelay returns the largest and the spread of the player-to-player
// latencies (0, 0 with one player).
func (in *Instance) p2pDelay(assign []int) (delay, variation float64) {
	if in.m < 2 {
		return 0, 0
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	n := in.n
	for i := 0; i < in.m; i++ {
		ai := assign[i]
		li := in.lat[i*n+ai]
		drow := in.dist[ai*n : (ai+1)*n]
		for j := i + 1; j < in.m; j++ {
			aj := assign[j]
			d := li + drow[aj] + in.lat[j*n+aj]
			lo, hi = min(lo, d), max(hi, d)
		}
	}
	return hi, hi - lo
}

// used returns the servers an assignment uses, ascending.
func (in *Instance) used(model Model, root int, assign []int) []int {
	mark := make([]bool, in.n)
	contact := make([]bool, in.n)
	for _, a := range assign {
		contact[a] = true
	}
	if model == CS {
		mark[root] = true
		for a, ok := range contact {
			if ok {
				for v := a; !mark[v]; v = in.next(v, root) {
					mark[v] = true
				}
			}
		}
	} else {
		var cs []int
		for a, ok := range contact {
			if ok {
				cs = append(cs, a)
				mark[a] = true
			}
		}
		for x, a := range cs {
			for _, b := range cs[x+1:] {
				for v := a; v != b; v = in.next(v, b) {
					mark[v] = true
				}
			}
		}
	}
	var out []int
	for v, ok := range mark {
		if ok {
			out = append(out, v)
		}
	}
	return out
}

// validSolution checks that sol fits the instance and the bound, for the
// SPDVR algorithms' input.
func (in *Instance) validSolution(sol Solution, model Model, bound float64) error {
	if err := checkBound(bound); err != nil {
		return err
	}
	if sol.Model != model {
		return fmt.Errorf("%w: a %s solution given to a %s algorithm", ErrInput, sol.Model, model)
	}
	ev, err := in.Evaluate(model, sol.Root, sol.Assign)
	if err != nil {
		return err
	}
	if !within(ev.Delay, bound) {
		return fmt.Errorf("%w: the solution's delay %.6g ms exceeds the bound %.6g ms", ErrInput, ev.Delay, bound)
	}
	return nil
}

func checkBound(bound float64) error {
	if !(bound >= 0) || math.IsInf(bound, 1) {
		return fmt.Errorf("%w: bound %v, want a finite delay ≥ 0 in ms", ErrInput, bound)
	}
	return nil
}
