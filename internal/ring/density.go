package ring

import (
	"math"

	"github.com/overworld/overworld/wire"
)

// Mercury draws its long links by node count, not key distance: a link at
// rank distance r = n^u (u uniform) from the node, whatever the spread of
// the nodes' keys. It learns the nodes' density over the key space from
// samples. So does this ring: every LinkRefresh it looks up the owner of a
// uniformly random key, and the owner's answer (and every long-link
// answer) gives the width w of the owner's range at that key. The mean of
// 1/w over uniform keys in a part of the key space is its number of nodes
// per key, so a histogram of those means is an unbiased density estimate.

const (
	densityBins    = 32        // histogram bins over the key space
	densityShift   = 64 - 5    // key >> densityShift is the bin (2^5 = 32 bins)
	densitySamples = 64        // samples kept (the latest)
	densityMin     = 16        // samples needed before drawing by node count
	sampleTag      = 1<<32 - 2 // the tag of a density-sample lookup
	binKeys        = 1 << 59   // keys per bin
)

type densitySample struct {
	pos   uint64  // the key looked up
	inv   float64 // 1 / width of its owner's range
	valid bool
}

type density struct {
	s    [densitySamples]densitySample
	n    int // samples held
	next int
}

func (d *density) add(pos uint64, width uint64) {
	w := float64(width)
	if width == 0 {
		w = math.Ldexp(1, 64) // an owner alone holds the whole ring
	}
	d.s[d.next] = densitySample{pos: pos, inv: 1 / w, valid: true}
	d.next = (d.next + 1) % densitySamples
	d.n = min(d.n+1, densitySamples)
}

// bins returns the estimated nodes per key of every bin (bins without a
// sample get the mean over all samples) and the estimated ring size.
func (d *density) bins(out *[densityBins]float64) float64 {
	var sum [densityBins]float64
	var cnt [densityBins]int
	all, alln := 0.0, 0
	for _, s := range d.s {
		if !s.valid {
			continue
		}
		b := s.pos >> densityShift
		sum[b] += s.inv
		cnt[b]++
		all += s.inv
		alln++
	}
	mean := all / float64(max(alln, 1))
	total := 0.0
	for b := range out {
		out[b] = mean
		if cnt[b] > 0 {
			out[b] = sum[b] / float64(cnt[b])
		}
		total += out[b] * binKeys
	}
	return total
}

// rankDistance returns the clockwise key distance from this node at which
// about r nodes lie, by the density histogram, and ok=false without enough
// samples.
func (n *Node) rankDistance(draw func(est float64) float64) (uint64, bool) {
	if n.dens.n < densityMin {
		return 0, false
	}
	var dens [densityBins]float64
	est := n.dens.bins(&dens)
	if !(est >= 2) {
		return 0, false
	}
	r := draw(est)
	pos := n.self.Key
	off, cum := 0.0, 0.0
	for range densityBins + 1 {
		b := pos >> densityShift
		end := (b + 1) << densityShift // 0 after the last bin: wraps
		span := float64(end - pos)
		if end == 0 {
			span = float64(-pos) // keys up to the top of the space
			if pos == 0 {
				span = binKeys
			}
		}
		if dens[b] > 0 && cum+dens[b]*span >= r {
			off += (r - cum) / dens[b]
			break
		}
		cum += dens[b] * span
		off += span
		pos = end
	}
	if off >= math.Ldexp(1, 64) {
		return math.MaxUint64, true
	}
	return uint64(off), true
}

// sampleDensity looks up the owner of a uniformly random key.
func (n *Node) sampleDensity() {
	if n.st != stateMember || n.alone() || len(n.links) == 0 {
		return
	}
	m := wire.RingRoute{Kind: wire.RouteLookup, Origin: n.cfg.ID, Key: n.cfg.Rand.Uint64(), Tag: sampleTag}
	n.onRoute(n.cfg.ID, &m)
}
