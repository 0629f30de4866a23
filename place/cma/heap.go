package cma

import "math"

// pairIndex keeps, for every ordered mirror pair (j,k), j ≠ k, an indexed
// 4-ary min-heap of the players on j keyed by the cost of moving them to k,
// d(p,k) − d(p,j), ties broken by slot. The minimum of heap (j,k) is the
// paper's MC[j][k] (its player MP[j][k]); top caches those minima densely
// (+Inf for an empty heap) so shortest-path searches read one m×m array.
//
// Each assigned player sits in m−1 heaps, so placing or removing a player
// costs O(m log n).
type pairIndex struct {
	m     int
	heaps [][]hent  // j*m+k
	top   []float64 // j*m+k: heaps[j*m+k][0].key or +Inf
	pos   []int32   // slot*m+k: position of slot in heap (mirror(slot), k)
}

// arity is the heap's branching factor: four 16-byte children share one
// 64-byte cache line, which halves the depth of a sift-down for the price
// of three more comparisons per level (a leave+join pair at n = 100k,
// m = 20 measured 35 µs with a binary heap, 20–27 µs with this one).
const arity = 4

type hent struct {
	key  float64
	slot int32
}

func less(a, b hent) bool { return a.key < b.key || (a.key == b.key && a.slot < b.slot) }

func newPairIndex(m int) *pairIndex {
	x := &pairIndex{m: m, heaps: make([][]hent, m*m), top: make([]float64, m*m)}
	for i := range x.top {
		x.top[i] = math.Inf(1)
	}
	return x
}

// grow makes room for slots [0, n).
func (x *pairIndex) grow(n int) {
	if need := n * x.m; need > len(x.pos) {
		x.pos = append(x.pos, make([]int32, need-len(x.pos))...)
	}
}

// insert adds slot p, now on mirror j, with delays d, to heaps (j, ·).
func (x *pairIndex) insert(p int32, j int, d []float64) {
	m := x.m
	base := int(p) * m
	dj := d[j]
	for k := 0; k < m; k++ {
		if k == j {
			continue
		}
		h := j*m + k
		hp := x.heaps[h]
		i := len(hp)
		hp = append(hp, hent{key: d[k] - dj, slot: p})
		x.heaps[h] = hp
		x.pos[base+k] = int32(i)
		x.up(h, k, i)
		x.top[h] = x.heaps[h][0].key
	}
}

// remove deletes slot p, on mirror j, from heaps (j, ·).
func (x *pairIndex) remove(p int32, j int) {
	m := x.m
	base := int(p) * m
	for k := 0; k < m; k++ {
		if k == j {
			continue
		}
		h := j*m + k
		hp := x.heaps[h]
		i := int(x.pos[base+k])
		last := len(hp) - 1
		if i != last {
			hp[i] = hp[last]
			x.pos[int(hp[i].slot)*m+k] = int32(i)
		}
		hp = hp[:last]
		x.heaps[h] = hp
		if i < last {
			if !x.up(h, k, i) {
				x.down(h, k, i)
			}
		}
		if len(hp) == 0 {
			x.top[h] = math.Inf(1)
		} else {
			x.top[h] = hp[0].key
		}
	}
}

// minSlot returns the player on j cheapest to move to k (MP[j][k]).
func (x *pairIndex) minSlot(j, k int) int32 { return x.heaps[j*x.m+k][0].slot }

// up sifts entry i of heap h (column k) towards the root; it reports
// whether the entry moved.
func (x *pairIndex) up(h, k, i int) bool {
	hp := x.heaps[h]
	e := hp[i]
	moved := false
	for i > 0 {
		parent := (i - 1) / arity
		if !less(e, hp[parent]) {
			break
		}
		hp[i] = hp[parent]
		x.pos[int(hp[i].slot)*x.m+k] = int32(i)
		i = parent
		moved = true
	}
	hp[i] = e
	x.pos[int(e.slot)*x.m+k] = int32(i)
	return moved
}

// down sifts entry i of heap h (column k) towards the leaves.
func (x *pairIndex) down(h, k, i int) {
	hp := x.heaps[h]
	n := len(hp)
	e := hp[i]
	for {
		first := arity*i + 1
		if first >= n {
			break
		}
		c := first
		for r := first + 1; r < min(first+arity, n); r++ {
			if less(hp[r], hp[c]) {
				c = r
			}
		}
		if !less(hp[c], e) {
			break
		}
		hp[i] = hp[c]
		x.pos[int(hp[i].slot)*x.m+k] = int32(i)
		i = c
	}
	hp[i] = e
	x.pos[int(e.slot)*x.m+k] = int32(i)
}
