package node

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestMergeCandidatesMatchesMap folds random discovery batches into the
// candidates and compares with the map the node used to keep: per ID, news
// replaces the known entry unless it expires earlier.
func TestMergeCandidatesMatchesMap(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 3))
		n := &Node{}
		ref := map[world.ObjectID]locate.Found{}
		ids := 1 + rng.IntN(40)
		for batch := range 30 {
			for range rng.IntN(60) {
				f := locate.Found{ID: world.ObjectID(1 + rng.IntN(ids)), Node: wire.NodeID(2 + rng.Uint32N(5)),
					Until: time.Duration(rng.IntN(8)), Loc: world.Point{rng.Float64()}}
				n.pend = append(n.pend, f)
				if old, ok := ref[f.ID]; !ok || f.Until >= old.Until {
					ref[f.ID] = f
				}
			}
			n.mergeCandidates()
			if len(n.cands) != len(ref) {
				t.Fatalf("seed %d batch %d: %d candidates, want %d", seed, batch, len(n.cands), len(ref))
			}
			for i, f := range n.cands {
				if i > 0 && n.cands[i-1].ID >= f.ID {
					t.Fatalf("seed %d batch %d: candidates not sorted at %d", seed, batch, i)
				}
				if ref[f.ID] != f {
					t.Fatalf("seed %d batch %d: candidate %v = %+v, want %+v", seed, batch, f.ID, f, ref[f.ID])
				}
			}
			// Expire some, as Tick does.
			cut := time.Duration(rng.IntN(3))
			kept := n.cands[:0]
			for _, f := range n.cands {
				if f.Until >= cut {
					kept = append(kept, f)
				} else {
					delete(ref, f.ID)
				}
			}
			n.cands = kept
		}
	}
}

// mergeCandidatesRef is mergeCandidates as it was before it sorted the
// news: a binary search per discovery, the new IDs sorted and merged.
func mergeCandidatesRef(cands, pend []locate.Found) []locate.Found {
	var fresh []locate.Found
	for _, p := range pend {
		i, ok := slices.BinarySearchFunc(cands, p.ID, func(f locate.Found, id world.ObjectID) int { return cmp.Compare(f.ID, id) })
		if ok {
			if !cands[i].Newer(p) {
				cands[i] = p
			}
			continue
		}
		fresh = append(fresh, p)
	}
	slices.SortStableFunc(fresh, func(a, b locate.Found) int { return cmp.Compare(a.ID, b.ID) })
	var out []locate.Found
	i := 0
	for _, p := range fresh {
		for i < len(cands) && cands[i].ID < p.ID {
			out = append(out, cands[i])
			i++
		}
		if k := len(out) - 1; k >= 0 && out[k].ID == p.ID {
			if !out[k].Newer(p) {
				out[k] = p
			}
			continue
		}
		out = append(out, p)
	}
	return append(out, cands[i:]...)
}

// TestMergeCandidatesMatchesRef: the sorted walk gives exactly what the
// binary searches gave, with publication times (Found.At) that make news of
// one ID from one node newer or older whatever its expiry, news arriving
// sorted or not, and few or many candidates.
func TestMergeCandidatesMatchesRef(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 5))
		n := &Node{}
		var ref []locate.Found
		ids := 1 + rng.IntN(200)
		for batch := range 30 {
			var pend []locate.Found
			for range rng.IntN(80) {
				pend = append(pend, locate.Found{ID: world.ObjectID(1 + rng.IntN(ids)), Node: wire.NodeID(2 + rng.Uint32N(3)),
					Until: time.Duration(rng.IntN(8)), At: time.Duration(rng.IntN(4)), Loc: world.Point{rng.Float64()}})
			}
			if rng.IntN(4) == 0 {
				slices.SortStableFunc(pend, func(a, b locate.Found) int { return cmp.Compare(a.ID, b.ID) })
			}
			ref = mergeCandidatesRef(ref, slices.Clone(pend))
			n.pend = append(n.pend, pend...)
			n.mergeCandidates()
			if !slices.Equal(n.cands, ref) {
				t.Fatalf("seed %d batch %d: candidates\n%+v\nwant\n%+v", seed, batch, n.cands, ref)
			}
			cut := time.Duration(rng.IntN(3))
			n.cands = slices.DeleteFunc(n.cands, func(f locate.Found) bool { return f.Until < cut })
			ref = slices.DeleteFunc(ref, func(f locate.Found) bool { return f.Until < cut })
		}
	}
}
