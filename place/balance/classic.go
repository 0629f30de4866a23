package balance

import (
	"fmt"
	"slices"
)

// Grid is the main-world map cut into Side×Side microcells, each owned by
// a server, with the players in each cell (instances count in the cell
// where they are on the map). It is the state of the classic baseline.
type Grid struct {
	Side  int   // cells per side
	Owner []int // per cell (row-major), the server that runs it
	Load  []int // per cell, players
}

// Validate reports the first malformed field of g for n servers.
func (g *Grid) Validate(n int) error {
	if g.Side < 1 || len(g.Owner) != g.Side*g.Side || len(g.Load) != len(g.Owner) {
		return fmt.Errorf("%w: grid side %d with %d owners and %d loads", ErrCluster, g.Side, len(g.Owner), len(g.Load))
	}
	for c, o := range g.Owner {
		if o < 0 || o >= n {
			return fmt.Errorf("%w: cell %d owned by server %d (want 0..%d)", ErrCluster, c, o, n-1)
		}
		if g.Load[c] < 0 {
			return fmt.Errorf("%w: cell %d has %d players", ErrCluster, c, g.Load[c])
		}
	}
	return nil
}

// Loads returns the players per server.
func (g *Grid) Loads(n int) []int {
	l := make([]int, n)
	for c, o := range g.Owner {
		l[o] += g.Load[c]
	}
	return l
}

// ClassicRound is the outcome of one round of the classic baseline.
type ClassicRound struct {
	Before, Loads []int
	Owner         []int // cell owners after the round
	Extra         int   // players above MaxLoad before, summed over servers
	Moved         int   // players in cells that changed server (per hop)
	Cells         int   // cell transfers
	Overloaded    []int
	Stuck         []int
}

// Classic is the baseline the paper compares with (§2, Bezerra et al.):
// per-player balancing of microcells by greedy graph-partition growing.
// An overloaded server sheds exactly its excess over maxLoad. It asks the
// least-loaded neighbouring server (one owning a cell next to one of its
// cells) with room; while the servers chosen cannot absorb the whole
// excess, it asks the least-loaded neighbour of any server in the group.
// A server already in another group this round refuses. Each chosen
// server then takes up to its room in whole cells, grown from the border
// (breadth first, skipping cells that do not fit); a server reached
// through others gets the load passed along that path, each hop giving
// cells next to the next server. g is not modified.
func Classic(g *Grid, servers, maxLoad int) (ClassicRound, error) {
	if servers < 1 || maxLoad < 1 {
		return ClassicRound{}, fmt.Errorf("%w: %d servers, max load %d", ErrCluster, servers, maxLoad)
	}
	if err := g.Validate(servers); err != nil {
		return ClassicRound{}, err
	}
	owner := slices.Clone(g.Owner)
	loads := g.Loads(servers)
	r := ClassicRound{Before: slices.Clone(loads)}
	for _, l := range loads {
		if l > maxLoad {
			r.Extra += l - maxLoad
		}
	}
	adj := func() [][]bool {
		a := make([][]bool, servers)
		for i := range a {
			a[i] = make([]bool, servers)
		}
		s := g.Side
		for c, o := range owner {
			x, y := c%s, c/s
			if x+1 < s && owner[c+1] != o {
				a[o][owner[c+1]], a[owner[c+1]][o] = true, true
			}
			if y+1 < s && owner[c+s] != o {
				a[o][owner[c+s]], a[owner[c+s]][o] = true, true
			}
		}
		return a
	}
	busy := make([]bool, servers)
	for s := range loads {
		if loads[s] <= maxLoad {
			continue
		}
		r.Overloaded = append(r.Overloaded, s)
		if busy[s] {
			r.Stuck = append(r.Stuck, s)
			continue
		}
		a := adj()
		extra := loads[s] - maxLoad
		in := make([]bool, servers)
		in[s], busy[s] = true, true
		parent := make([]int, servers)
		group := []int{s}
		var chosen []int
		for absorbed := 0; absorbed < extra; {
			best, via := -1, -1
			for _, m := range group {
				for j := 0; j < servers; j++ {
					if a[m][j] && !in[j] && !busy[j] && loads[j] < maxLoad && (best < 0 || loads[j] < loads[best]) {
						best, via = j, m
					}
				}
			}
			if best < 0 {
				break
			}
			in[best], busy[best] = true, true
			parent[best] = via
			group = append(group, best)
			chosen = append(chosen, best)
			absorbed += maxLoad - loads[best]
		}
		left := extra
		for _, j := range chosen {
			if left <= 0 {
				break
			}
			share := min(maxLoad-loads[j], left)
			path := []int{j}
			for v := j; v != s; v = parent[v] {
				path = append(path, parent[v])
			}
			// path = j, …, s: hand over from the far end first, each hop at
			// most what the hop after it passed on.
			amt := share
			for h := 0; h+1 < len(path); h++ {
				to, from := path[h], path[h+1]
				x, k := transfer(g, owner, from, to, amt)
				loads[from] -= x
				loads[to] += x
				r.Moved += x
				r.Cells += k
				amt = x
				if x == 0 {
					break
				}
			}
			left -= amt
		}
		if loads[s] > maxLoad {
			r.Stuck = append(r.Stuck, s)
		}
	}
	r.Loads, r.Owner = loads, owner
	return r, nil
}

// transfer moves whole cells of from that border to's territory (growing
// breadth first into from's territory) to to, at most amount players; it
// returns the players and cells moved.
func transfer(g *Grid, owner []int, from, to, amount int) (int, int) {
	s := g.Side
	seen := make(map[int]bool)
	var queue []int
	nb := func(c int, f func(int)) {
		x, y := c%s, c/s
		if x > 0 {
			f(c - 1)
		}
		if x+1 < s {
			f(c + 1)
		}
		if y > 0 {
			f(c - s)
		}
		if y+1 < s {
			f(c + s)
		}
	}
	for c, o := range owner {
		if o != from {
			continue
		}
		nb(c, func(d int) {
			if owner[d] == to && !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		})
	}
	moved, cells := 0, 0
	for q := 0; q < len(queue) && moved < amount; q++ {
		c := queue[q]
		if owner[c] != from || moved+g.Load[c] > amount {
			continue
		}
		owner[c] = to
		moved += g.Load[c]
		cells++
		nb(c, func(d int) {
			if owner[d] == from && !seen[d] {
				seen[d] = true
				queue = append(queue, d)
			}
		})
	}
	return moved, cells
}
