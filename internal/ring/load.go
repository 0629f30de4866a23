package ring

import (
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
)

// loadSamples is how many keys each one-second bucket of the load window
// keeps (a uniform reservoir of the keys reported in that second): enough
// to place a split point and to discount load that left with part of the
// range, at a fixed cost.
const loadSamples = 16

type loadBucket struct {
	sec   int64
	n     float64
	keys  [loadSamples]uint64
	nk    int
	calls int
}

// loadWindow counts reported load in one-second buckets over the window.
type loadWindow struct {
	b []loadBucket
}

func (w *loadWindow) init(window time.Duration) {
	w.b = make([]loadBucket, int((window+time.Second-1)/time.Second))
	w.reset()
}

func (w *loadWindow) reset() {
	for i := range w.b {
		w.b[i] = loadBucket{sec: -1}
	}
}

// AddLoad reports count publications or subscriptions for key routed to
// this node at now (the upper layer calls it for each one it stores or
// matches here). Load is their rate per second over the load window.
func (n *Node) AddLoad(now time.Duration, key uint64, count int) {
	n.advance(now)
	if count <= 0 || n.st != stateMember {
		return
	}
	sec := int64(n.now / time.Second)
	b := &n.load.b[int(sec%int64(len(n.load.b)))]
	if b.sec != sec {
		*b = loadBucket{sec: sec}
	}
	b.n += float64(count)
	b.calls++
	if b.nk < loadSamples {
		b.keys[b.nk] = key
		b.nk++
	} else if j := n.cfg.Rand.IntN(b.calls); j < loadSamples {
		b.keys[j] = key
	}
}

// Load returns this node's load at now: publications and subscriptions
// reported with AddLoad per second over the last LoadWindow (over the time
// since it joined, if shorter, but at least a second), counting only the
// share of each second's sampled keys that still lie in its range.
func (n *Node) Load(now time.Duration) float64 {
	if n.st != stateMember {
		return 0
	}
	rg, ok := n.Range()
	sec := int64(now / time.Second)
	w := int64(len(n.load.b))
	total := 0.0
	for i := range n.load.b {
		b := &n.load.b[i]
		if b.sec < 0 || b.sec > sec || b.sec <= sec-w {
			continue
		}
		if !ok || b.nk == 0 {
			total += b.n
			continue
		}
		in := 0
		for _, k := range b.keys[:b.nk] {
			if rg.Contains(k) {
				in++
			}
		}
		total += b.n * float64(in) / float64(b.nk)
	}
	span := min(now-n.since, n.cfg.LoadWindow)
	span = max(span, time.Second)
	return total / span.Seconds()
}

// splitKey picks the key at which a joiner splits this node's range: the
// load-weighted median of the sampled keys in the range, else its middle.
// It fails when the range has no key strictly between its ends.
func (n *Node) splitKey() (uint64, bool) {
	if n.st != stateMember || !n.hasPred {
		return 0, false
	}
	lo := n.pred.Key // exclusive
	width := n.self.Key - lo
	if n.pred.ID == n.cfg.ID {
		width = 0 // alone: the whole ring
	}
	if width != 0 && width < 2 {
		return 0, false
	}
	type kw struct {
		off uint64
		w   float64
	}
	var buf [64]kw
	ks := buf[:0]
	total := 0.0
	for i := range n.load.b {
		b := &n.load.b[i]
		if b.sec < 0 || b.nk == 0 {
			continue
		}
		w := b.n / float64(b.nk)
		for _, k := range b.keys[:b.nk] {
			off := k - lo
			if (width == 0 || off-1 < width-1) && off != 0 { // k in (lo, self)
				ks = append(ks, kw{off, w})
				total += w
			}
		}
	}
	var off uint64
	if len(ks) == 0 {
		off = width / 2
		if width == 0 {
			off = 1 << 63
		}
	} else {
		slices.SortFunc(ks, func(a, b kw) int {
			if a.off < b.off {
				return -1
			}
			if a.off > b.off {
				return 1
			}
			return 0
		})
		acc := 0.0
		off = ks[len(ks)-1].off
		for _, x := range ks {
			acc += x.w
			if acc >= total/2 {
				off = x.off
				break
			}
		}
	}
	if off == 0 {
		off = 1
	}
	if width != 0 && off >= width {
		off = width - 1
	}
	return lo + off, true
}

// balance applies the leave-join rule (package doc, "Load balancing").
func (n *Node) balance() {
	if n.moved && n.now-n.lastMove < n.cfg.BalanceCooldown || n.now-n.since < n.cfg.LoadWindow ||
		n.splitBy != 0 || len(n.succs) == 0 {
		return
	}
	own := n.Load(n.now)
	fresh := 3 * n.cfg.Probe
	sum, cnt := own, 1
	var heavy Peer
	heavyLoad := 0.0
	var succLoad float64
	succKnown := false
	seen := n.scratchIDs[:0]
	n.probed(func(id wire.NodeID) { seen = append(seen, id) })
	n.scratchIDs = seen
	for _, id := range seen {
		ps := n.peers[id]
		if ps == nil || !ps.hasLoad || n.now-ps.loadAt > fresh {
			continue
		}
		sum += ps.load
		cnt++
		if id == n.succs[0].ID {
			succLoad, succKnown = ps.load, true
		}
	}
	if cnt < 3 {
		return
	}
	mean := sum / float64(cnt)
	if mean < n.cfg.MinLoad || own >= n.cfg.Light*mean {
		return
	}
	if !succKnown || succLoad+own >= n.cfg.Heavy*mean {
		return // leaving would make the successor heavy
	}
	for _, id := range seen {
		ps := n.peers[id]
		if ps == nil || !ps.hasLoad || n.now-ps.loadAt > fresh || id == n.succs[0].ID {
			continue
		}
		if ps.load > n.cfg.Heavy*mean && ps.load > heavyLoad {
			heavy, heavyLoad = Peer{ID: id, Key: ps.key}, ps.load
		}
	}
	if heavyLoad == 0 {
		return
	}
	n.splitTo, n.splitBy = heavy.ID, n.now+n.cfg.FailAfter
	m := wire.RingSplit{Load: milli(own)}
	n.out.Commit(heavy.ID, wire.ClassMaintenance, wire.AppendRingSplit(n.out.Buf(), wire.TypeRingSplit, &m))
}

func (n *Node) onSplit(from wire.NodeID) {
	reply := wire.RingSplit{}
	if !(n.split && n.now-n.lastSplit < n.cfg.BalanceCooldown) && n.Load(n.now) > 0 {
		if k, ok := n.splitKey(); ok {
			reply.OK, reply.Key = true, k
			n.split, n.lastSplit = true, n.now
			n.stats.Splits++
		}
	}
	n.out.Commit(from, wire.ClassMaintenance, wire.AppendRingSplit(n.out.Buf(), wire.TypeRingSplitReply, &reply))
}

func (n *Node) onSplitReply(from wire.NodeID) {
	if n.splitBy == 0 || from != n.splitTo {
		n.stats.Unexpected++
		return
	}
	n.splitBy = 0
	if !n.splitMsg.OK {
		return
	}
	n.moved, n.lastMove = true, n.now
	n.stats.Moves++
	n.leave()
	key := n.splitMsg.Key
	n.reset(key)
	n.st = stateJoining
	n.join = joinState{seed: from, key: key}
	n.sendJoin()
}
