package core

import (
	"cmp"
	"slices"
)

// CandidateCosts returns each candidate's own cost as the region-migration
// paper's selections rank them (§4.1.1–4.1.2): for KMedian the sum of its
// latencies to every player (the k-minimum-pairwise problem's term), for
// KCenter its largest latency to a player, its eccentricity (the
// k-minimum-eccentricity problem's term). The index is the column of
// p.PlayerCore. p.K is validated but plays no part. O(n·m).
func CandidateCosts(p Problem) ([]float64, error) {
	in, err := newInst(p)
	if err != nil {
		return nil, err
	}
	sc := in.candidateScores()
	out := make([]float64, in.m)
	for c, s := range sc {
		out[c], _ = s.key(in.obj)
	}
	return out, nil
}

// candidateScores returns each candidate's (sum, max) of latency to the
// players, summed in player order.
func (in *inst) candidateScores() []score {
	n := in.n
	sc := make([]score, in.m)
	for c := range sc {
		for _, v := range in.lat[c*n : (c+1)*n] {
			sc[c].sum += v
			sc[c].max = max(sc[c].max, v)
		}
	}
	return sc
}

// KMinimum is the paper's own core selection (region-migration paper,
// §4.1.1–4.1.2): the k candidates with the smallest individual cost of
// CandidateCosts. With KMedian it solves the k-minimum-pairwise problem
// (the k nodes with the smallest total latency to the players), with
// KCenter the k-minimum-eccentricity problem (the k nodes with the smallest
// eccentricities); both are solved exactly by ranking the candidates, in
// O(n·m + m log m). Ties go to the smaller other statistic (the maximum
// for KMedian, the sum for KCenter), then to the lower index, so the set
// also minimises the sum of the other statistic among the sets of least
// paper cost.
//
// The candidates are ranked one by one, not as a set: unlike Exact,
// LocalSearch and Prove (the classic facility-location k-median and
// k-center, beyond the paper) it does not place the cores apart, so for
// k > 1 they tend to cluster near the players' centre. The Solution is
// scored like theirs (players attach to their nearest chosen core; Cost is
// the facility-location cost of the set, comparable with theirs), and
// Exact is false because that cost is not minimised; the paper's own
// objective is the sum of CandidateCosts over Cores.
func KMinimum(p Problem) (Solution, error) {
	in, err := newInst(p)
	if err != nil {
		return Solution{}, err
	}
	return in.evaluate(in.kMinimum()), nil
}

// kMinimum returns the k best-ranked candidates, ascending.
func (in *inst) kMinimum() []int {
	sc := in.candidateScores()
	order := make([]int, in.m)
	for c := range order {
		order[c] = c
	}
	slices.SortFunc(order, func(a, b int) int {
		a1, a2 := sc[a].key(in.obj)
		b1, b2 := sc[b].key(in.obj)
		return cmp.Or(cmp.Compare(a1, b1), cmp.Compare(a2, b2), cmp.Compare(a, b))
	})
	cores := slices.Clone(order[:in.k])
	slices.Sort(cores)
	return cores
}
