package sim

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestNodeLayout: a node is five cache lines, and what delivering a packet
// reads and writes (its core, ID, received bytes this second and series,
// and the update class's counter) lies in the first two (see node).
func TestNodeLayout(t *testing.T) {
	var n node
	if got := unsafe.Sizeof(n); got != 320 {
		t.Errorf("node is %d bytes, want 320", got)
	}
	if end := unsafe.Offsetof(n.secIn) + unsafe.Sizeof(n.secIn); end > 64 {
		t.Errorf("the first line's fields end at byte %d", end)
	}
	if off := unsafe.Offsetof(n.in); off != 64 {
		t.Errorf("in starts at byte %d, want 64", off)
	}
}

// TestReceivedSeries: the bytes a node receives, added up per second in
// the node's accumulator and flushed to its series when the second
// changes, read back (inBytes) as a plain per-second series would, after
// every packet of random sequences.
func TestReceivedSeries(t *testing.T) {
	for seed := uint64(1); seed <= 100; seed++ {
		r := rand.New(rand.NewPCG(seed, 3))
		var n node
		var ref []uint32
		sec := int64(0)
		for k := range 300 {
			sec += int64(r.IntN(3)) * int64(r.IntN(2)) // runs of one second, gaps
			size := uint64(1 + r.IntN(2000))
			n.received(sec, size)
			bump(&ref, sec, size)
			for j := int64(-1); j <= sec+2; j++ {
				want := uint32(0)
				if j >= 0 && j < int64(len(ref)) {
					want = ref[j]
				}
				if got := n.inBytes(j); got != want {
					t.Fatalf("seed %d packet %d: second %d holds %d bytes, want %d", seed, k, j, got, want)
				}
			}
		}
	}
}
