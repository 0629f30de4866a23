package locate

import (
	"math"
	"time"
)

// HistBucket is the width of a Hist bucket, and HistBuckets their number:
// latencies from 0 to 5 s at 5 ms resolution, longer ones in the last.
const (
	HistBucket  = 5 * time.Millisecond
	HistBuckets = 1000
)

// Hist is a fixed-bucket histogram of durations: cheap to add to on the
// hot path and to merge across nodes. The zero value is empty and ready.
type Hist struct {
	n       [HistBuckets]uint32
	count   uint64
	sum     time.Duration
	largest time.Duration
}

// Add records d (negative counts as 0).
func (h *Hist) Add(d time.Duration) {
	d = max(d, 0)
	h.n[min(int(d/HistBucket), HistBuckets-1)]++
	h.count++
	h.sum += d
	h.largest = max(h.largest, d)
}

// Merge adds every sample of o to h.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.n {
		h.n[i] += c
	}
	h.count += o.count
	h.sum += o.sum
	h.largest = max(h.largest, o.largest)
}

// Count returns the number of samples.
func (h *Hist) Count() uint64 { return h.count }

// Mean returns the mean sample (0 when empty).
func (h *Hist) Mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return h.sum / time.Duration(h.count)
}

// Max returns the largest sample.
func (h *Hist) Max() time.Duration { return h.largest }

// Quantile returns the q-quantile (0 ≤ q ≤ 1) to bucket resolution: the
// middle of the bucket that holds it (the largest sample for the last
// bucket). It is 0 when empty.
func (h *Hist) Quantile(q float64) time.Duration {
	if h.count == 0 || math.IsNaN(q) {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := uint64(math.Ceil(q * float64(h.count)))
	rank = max(rank, 1)
	var acc uint64
	for i, c := range h.n {
		acc += uint64(c)
		if acc >= rank {
			if i == HistBuckets-1 {
				return h.largest
			}
			return min(time.Duration(i)*HistBucket+HistBucket/2, h.largest)
		}
	}
	return h.largest
}
