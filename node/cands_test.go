package node

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/wire"
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
