package colyseus

import (
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/lab/harness"
)

// mercuries returns the colyseus locators of w, by node (nil under the
// other architectures).
func mercuries(w *harness.World) []*locate.Mercury {
	var ms []*locate.Mercury
	for _, d := range w.Discoveries() {
		if m, ok := d.(*locate.Mercury); ok {
			ms = append(ms, m)
		}
	}
	return ms
}

// MercuryStats counts what the ring locators of a run did: publications
// and subscriptions routed and stored, matches sent and found, and the
// distributed locator's other counters (re-exported from the internal
// locator, whose fields document each).
type MercuryStats = locate.MercuryStats

// RingResult sums the colyseus locators' counters and latency histograms.
// The histograms (discovery latency and its parts, route hops) leave the
// warm-up out when the world ran with harness.World.Run, as the view
// measures do; the counters include it.
type RingResult struct {
	Stats MercuryStats
	// Hops is the mean hop count of the publications and subscriptions
	// delivered; HopsP99 its 99th percentile.
	Hops    float64
	HopsP99 int
	// Routed, Forwarded and CacheHits sum the rings' counters
	// (ring.Stats): routes originated, route frames sent (every hop and
	// range-walk step) and route-cache hops taken.
	Routed, Forwarded, CacheHits uint64
}

// FramesPerSub estimates the route frames one subscription costs: each
// of its key ranges routed (RangesRouted ÷ SubsSent of them) takes Hops
// frames to its first owner, and every further owner a range walk reaches
// one more (SubsStored counts every owner reached).
func (r RingResult) FramesPerSub() float64 {
	s := &r.Stats
	if s.SubsSent == 0 {
		return 0
	}
	walk := float64(s.SubsStored) - float64(s.RangesRouted)
	return (float64(s.RangesRouted)*r.Hops + max(walk, 0)) / float64(s.SubsSent)
}

// ringResult returns the colyseus locators' counters of w summed over the
// nodes (the zero value under the other architectures).
func ringResult(w *harness.World) RingResult {
	var r RingResult
	s := &r.Stats
	for _, m := range mercuries(w) {
		o := m.Stats()
		s.PubsRouted += o.PubsRouted
		s.SubsSent += o.SubsSent
		s.RangesRouted += o.RangesRouted
		s.PubsStored += o.PubsStored
		s.SubsStored += o.SubsStored
		s.MatchesSent += o.MatchesSent
		s.Found += o.Found
		s.HandoffsSent += o.HandoffsSent
		s.HandoffsTaken += o.HandoffsTaken
		s.NotMember += o.NotMember
		s.Malformed += o.Malformed
		s.Unexpected += o.Unexpected
		s.Rejected += o.Rejected
		s.Latency.Merge(&o.Latency)
		s.Routing.Merge(&o.Routing)
		s.Matching.Merge(&o.Matching)
		for i, c := range o.Hops {
			s.Hops[i] += c
		}
		rs := m.Ring().Stats()
		r.Routed += rs.Routed
		r.Forwarded += rs.Forwarded
		r.CacheHits += rs.CacheHits
	}
	var n, sum uint64
	for i, c := range s.Hops {
		n += c
		sum += uint64(i) * c
	}
	if n > 0 {
		r.Hops = float64(sum) / float64(n)
		var acc uint64
		for i, c := range s.Hops {
			acc += c
			if acc*100 >= n*99 {
				r.HopsP99 = i
				break
			}
		}
	}
	return r
}
