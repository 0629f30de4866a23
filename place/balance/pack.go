package balance

import (
	"fmt"
	"slices"
)

// PackRound is a Round from Pack, with its proof of quality.
type PackRound struct {
	Round
	// LowerBound is the fewest players any round could move (to servers
	// or hosts) and still bring every overloaded server to the target: the
	// sum over overloaded servers of the smallest total of a subset of its
	// instances covering its excess plus margin, solved exactly.
	LowerBound int
	// Optimal is true when Moved + Overflowed equals LowerBound and nothing
	// overflowed that the cluster had room for: no round moves fewer
	// players.
	Optimal bool
}

// Pack is the beyond-the-paper alternative to Balance: the same target,
// but each overloaded server sheds the subset of its instances with the
// smallest total size that brings it to the target (a subset-sum solved
// exactly by dynamic programming over sizes, fewest instances on ties),
// and the shed instances are packed, largest first, into the server whose
// room fits them most tightly (best-fit decreasing), overflowing to player
// hosts what does not fit. The shed total is a lower bound on the players
// any round must move, so when everything fits (the usual case: instances
// are small beside a server's room) the round is proven optimal.
//
// Instances are weighted items in bins, which a flow cannot model, so the
// exact min-cost-flow engine of place/mcf does not apply; the tests check
// Pack against exhaustive search on small clusters instead.
func Pack(c *Cluster, cfg Config) (PackRound, error) {
	if err := c.Validate(); err != nil {
		return PackRound{}, err
	}
	if err := cfg.validate(); err != nil {
		return PackRound{}, err
	}
	target, limit := cfg.Target(c.MaxLoad), cfg.limit(c.MaxLoad)
	loads := c.Loads()
	pr := PackRound{Round: Round{Before: slices.Clone(loads)}}
	var lists [][]int32
	type shed struct{ k, from int }
	var out []shed
	for i := range loads {
		if loads[i] <= c.MaxLoad {
			continue
		}
		if lists == nil {
			lists = byServer(c)
		}
		pr.Overloaded = append(pr.Overloaded, i)
		sizes := make([]int, len(lists[i]))
		for q, k := range lists[i] {
			sizes[q] = c.Instances[k].Size
		}
		pick, total, err := minCover(sizes, loads[i]-target)
		if err != nil {
			return PackRound{}, fmt.Errorf("%w: server %d", err, i)
		}
		pr.LowerBound += total
		for _, q := range pick {
			out = append(out, shed{int(lists[i][q]), i})
			loads[i] -= sizes[q]
		}
	}
	// best-fit decreasing into the rooms left (shedding servers included)
	slices.SortStableFunc(out, func(a, b shed) int { return c.Instances[b.k].Size - c.Instances[a.k].Size })
	spare := false
	for _, s := range out {
		size := c.Instances[s.k].Size
		best := -1
		for j, l := range loads {
			if j != s.from && l+size <= limit && (best < 0 || l > loads[best]) {
				best = j
			}
		}
		if best < 0 && !cfg.Overflow {
			loads[s.from] += size // kept
			continue
		}
		pr.Moves = append(pr.Moves, Move{Instance: s.k, From: s.from, To: best})
		if best >= 0 {
			loads[best] += size
			pr.Moved += size
		} else {
			pr.Overflowed += size
		}
	}
	// Could an overflowed instance have fitted somewhere after all (a worse
	// packing than possible)? Then the round is not proven optimal.
	for _, m := range pr.Moves {
		if m.To == Hosted {
			for j, l := range loads {
				if j != m.From && l+c.Instances[m.Instance].Size <= limit {
					spare = true
				}
			}
		}
	}
	for _, i := range pr.Overloaded {
		if loads[i] > c.MaxLoad {
			pr.Stuck = append(pr.Stuck, i)
		}
	}
	pr.Loads = loads
	pr.Optimal = !spare && len(pr.Stuck) == 0 && pr.Moved+pr.Overflowed == pr.LowerBound && (pr.Overflowed == 0 || cfg.Overflow)
	return pr, nil
}

// minCover returns the indices of a subset of sizes whose sum is at least
// need and as small as possible (fewest items on ties, then the lowest
// indices), and that sum. When even all of sizes fall short it returns
// all of them. Sizes are divided by their greatest common divisor first
// (the paper's are all multiples of 5).
func minCover(sizes []int, need int) ([]int, int, error) {
	if need <= 0 {
		return nil, 0, nil
	}
	g := 0
	for _, s := range sizes {
		g = gcd(g, s)
	}
	if g > 1 {
		red := make([]int, len(sizes))
		for q, s := range sizes {
			red[q] = s / g
		}
		pick, total, err := minCover(red, (need+g-1)/g)
		return pick, total * g, err
	}
	all := 0
	big := 0
	for _, s := range sizes {
		all += s
		big = max(big, s)
	}
	if all <= need {
		idx := make([]int, len(sizes))
		for q := range idx {
			idx[q] = q
		}
		return idx, all, nil
	}
	// Sums above need+big−1 are never minimal: dropping an item from such a
	// cover still covers need. cnt[s] = fewest items summing to exactly s.
	limit := need + big - 1
	if len(sizes)*(limit+1) > 1<<26 {
		return nil, 0, ErrTooLarge
	}
	const inf = int32(1 << 30)
	cnt := make([]int32, limit+1)
	for s := 1; s <= limit; s++ {
		cnt[s] = inf
	}
	take := make([]bool, len(sizes)*(limit+1))
	for q, w := range sizes {
		row := take[q*(limit+1) : (q+1)*(limit+1)]
		for s := limit; s >= w; s-- {
			if c := cnt[s-w]; c != inf && c+1 < cnt[s] {
				cnt[s] = c + 1
				row[s] = true
			}
		}
	}
	best := -1
	for s := need; s <= limit; s++ {
		if cnt[s] != inf {
			best = s
			break
		}
	}
	// reconstruct: walk items backwards
	var pick []int
	for q, s := len(sizes)-1, best; q >= 0 && s > 0; q-- {
		if take[q*(limit+1)+s] {
			pick = append(pick, q)
			s -= sizes[q]
		}
	}
	slices.Sort(pick)
	return pick, best, nil
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
