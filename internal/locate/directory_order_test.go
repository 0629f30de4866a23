package locate

import (
	"cmp"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestMatchOrderIsStableSort checks sendMatches' order against a stable
// sort of the matches by subscriber and then lifetime (short-lived
// first), on random queues with few and many subscribers (large node IDs
// too), reusing the key slice.
func TestMatchOrderIsStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	var order []uint64
	for round := range 2000 {
		nsub := 1 + r.IntN(30)
		subs := make([]wire.NodeID, nsub)
		for k := range subs {
			subs[k] = wire.NodeID(r.IntN(100))
			if r.IntN(5) == 0 {
				subs[k] = wire.NodeID(r.Uint32())
			}
		}
		ms := make([]matchOut, r.IntN(200))
		for i := range ms {
			ms[i] = matchOut{to: subs[r.IntN(nsub)], pub: wire.Pub{ID: world.ObjectID(i)}, until: time.Duration(r.IntN(3)) * time.Second}
		}
		long := func(m matchOut) int {
			if m.until > time.Second {
				return 1
			}
			return 0
		}
		want := slices.Clone(ms)
		slices.SortStableFunc(want, func(a, b matchOut) int {
			if c := cmp.Compare(a.to, b.to); c != 0 {
				return c
			}
			return cmp.Compare(long(a), long(b))
		})
		order = matchOrder(ms, 0, time.Second, order[:0])
		if len(order) != len(want) {
			t.Fatalf("round %d: %d keys for %d matches", round, len(order), len(want))
		}
		for i, k := range order {
			m := ms[uint32(k&^matchLong)]
			if m.to != want[i].to || m.pub.ID != want[i].pub.ID || wire.NodeID(k>>32) != m.to {
				t.Fatalf("round %d: position %d holds match %d for %d, want match %d for %d", round, i, m.pub.ID, m.to, want[i].pub.ID, want[i].to)
			}
		}
	}
}

// TestFindSubIsBinarySearch checks the written-out search against
// slices.BinarySearchFunc on sorted subscriber lists, for present and absent
// nodes.
func TestFindSubIsBinarySearch(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for round := range 500 {
		var d Directory
		for range r.IntN(40) {
			d.subs = append(d.subs, storedSub{node: wire.NodeID(r.IntN(200))})
		}
		slices.SortFunc(d.subs, func(a, b storedSub) int { return cmp.Compare(a.node, b.node) })
		d.subs = slices.CompactFunc(d.subs, func(a, b storedSub) bool { return a.node == b.node })
		for n := range wire.NodeID(202) {
			i, ok := d.findSub(n)
			wi, wok := slices.BinarySearchFunc(d.subs, n, func(s storedSub, n wire.NodeID) int { return cmp.Compare(s.node, n) })
			if i != wi || ok != wok {
				t.Fatalf("round %d: node %d: (%d, %v), want (%d, %v)", round, n, i, ok, wi, wok)
			}
		}
	}
}

// TestMatchIsSpareThenTell checks the rendezvous's one-walk match against
// spare followed by tell (the two walks it replaced) on random told
// records: the same matches queued and the same records after.
func TestMatchIsSpareThenTell(t *testing.T) {
	for seed := range uint64(2000) {
		r := rand.New(rand.NewPCG(seed, 21))
		cfg := DefaultDirectoryConfig(1)
		cfg.Reckon = seed%8 != 0
		cfg.IdleEvery = 5 * time.Second
		var ds [2]*Directory
		ttl := []time.Duration{cfg.PublishTTL, 15 * time.Second}[r.IntN(2)]
		for i := range ds {
			d, err := NewDirectory(1, cfg)
			if err != nil {
				t.Fatal(err)
			}
			d.in.Dims = 2
			d.in.TTL = ttl
			ds[i] = d
		}
		now := time.Duration(10+r.IntN(10)) * time.Second
		p := wire.Pub{ID: 7, Node: wire.NodeID(2 + r.IntN(2)), Loc: world.Point{r.Float64() * 4, r.Float64() * 4},
			Vel: world.Point{r.Float64(), 0}, At: now - time.Duration(r.IntN(300))*time.Millisecond}
		var told []toldSub
		for k := range r.IntN(5) {
			rec := toldRec{node: wire.NodeID(2 + r.IntN(2)), loc: world.Point{r.Float64() * 4, r.Float64() * 4},
				vel: p.Vel, at: p.At - time.Duration(r.IntN(500))*time.Millisecond,
				until: now + time.Duration(r.IntN(3000))*time.Millisecond, last: p.At - time.Duration(r.IntN(2))*time.Second}
			told = append(told, toldSub{to: wire.NodeID(10 + 2*k + r.IntN(2)), toldRec: rec}) // one record per subscriber
		}
		n := wire.NodeID(10 + r.IntN(6))
		prev := []time.Duration{-1, p.At - time.Second, p.At - 500*time.Millisecond}[r.IntN(3)]
		for i := range told {
			if r.IntN(2) == 0 {
				told[i].last = prev
			}
		}
		until := now + cfg.PublishTTL
		va, vb := pubVal{told: slices.Clone(told)}, pubVal{told: slices.Clone(told)}
		ds[0].match(&va, n, &p, prev, now, until)
		if !ds[1].spare(&vb, n, &p, prev, now) {
			ds[1].matches = append(ds[1].matches, matchOut{to: n, pub: p, until: until})
			ds[1].tell(&vb, n, &p, until)
		}
		if !reflect.DeepEqual(ds[0].matches, ds[1].matches) || !slices.Equal(va.told, vb.told) {
			t.Fatalf("seed %d: match queued %v, told %v; spare and tell queued %v, told %v", seed,
				ds[0].matches, va.told, ds[1].matches, vb.told)
		}
	}
}
