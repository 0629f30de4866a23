package sim

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel windows (Config.Workers > 1): a conservative parallel discrete-
// event simulation in the style of YAWNS/bounded lag, written here.
//
// Nodes are grouped into clusters: the connected components of the graph
// whose edges join nodes less than τ apart (one-way, either direction; the
// same-site delay between nodes at one site). Any packet between two
// clusters then takes at least the lookahead L = min(τ, frame period), so
// an event at time t can only cause events in other clusters at t+L and
// later. Every tick and delivery due in [T, T+L), where T is the earliest
// pending event, can therefore run as soon as T is reached, cluster by
// cluster: within a cluster in (time, seq) order, with the events the
// window's own events schedule inside the cluster and the window joining
// them; clusters cannot affect each other within the window. Clusters are
// handed to the workers largest first, and what they schedule and observe
// is merged when all are done.
//
// Sequence numbers do not depend on the worker count (nodeSeq), so each
// node sees exactly the events, in exactly the order, of a serial run, and
// the observer is called with the window's events in (time, seq) order:
// the run is the same event for event, and its metrics files are byte-
// identical, for any Workers. Scenario functions and partition heals run
// alone, between windows.
//
// τ is the largest of a few candidates (20 ms down to 0.1 ms) for which no
// cluster holds more than a 2·Workers-th of the nodes, so that the workers
// can be kept busy; nodes on PlanetLab hosts of one campus, or at one site,
// always share a cluster.

// minWindow is the fewest events worth waking the workers for; smaller
// windows run on the caller's goroutine (with the same result).
const minWindow = 8

// Group weights for scheduling: a tick (think functions, discovery, the
// replica flush) costs about as much as this many deliveries.
const tickWeight = 32

// tauCandidates are the cluster thresholds tried, largest first.
var tauCandidates = []time.Duration{20e6, 10e6, 5e6, 3e6, 2e6, 1e6, 5e5, 2e5, 1e5}

// parallel holds the state of parallel windows.
type parallel struct {
	look    int64 // the lookahead L, ns (0: no parallel windows)
	tau     time.Duration
	cluster []int32 // per node index: its cluster
	nclust  int

	lanes  []*lane // lanes[0] runs on the caller's goroutine
	win    []entry // the window's events, in run order
	order  []int32 // indexes into win, grouped by cluster
	groups []group
	gidx   []int32  // per cluster: its group in the current window, if mark matches
	mark   []uint32 // per cluster: the window that set gidx
	stamp  uint32
	next   atomic.Int32 // the next group a worker takes
	obs    []obsEvent
	pend   []obsEvent // with behind: the previous window's, not yet observed
	behind bool       // see ObserveBehind
	always bool       // run every window on the workers, however small (tests)
	ran    int        // windows run on the workers

	crew *crew // the worker goroutines of the current Run
}

// spinFor is how long a goroutine waiting for the others at a window's
// start or end polls before it parks. Waking a parked goroutine took
// 150 µs on average on the 2-core test machine (its thread sleeps in the
// kernel), as long as a worker's share of a typical window, while the
// caller's goroutine needs only some tens of microseconds between windows
// (merging, planning the next). Spinning costs CPU time, not results:
// which worker runs a group never changes the run.
const spinFor = 200 * time.Microsecond

// A crew is the worker goroutines of one Run. A window starts when gen
// changes (with left set to the number of workers) and ends when left is
// back to 0; after quit is set, the next change of gen ends the crew.
type crew struct {
	gen  atomic.Uint64
	left atomic.Int32
	quit atomic.Bool
	spin bool  // poll for spinFor before parking
	fail []any // per worker: what its part of the window panicked with
	skip int   // the caller's goroutine's (see wait)
	mu   sync.Mutex
	cond sync.Cond // broadcast when gen changes or left reaches 0
}

func newCrew(workers int, spin bool) *crew {
	c := &crew{fail: make([]any, workers), spin: spin}
	c.cond.L = &c.mu
	return c
}

// serve is worker w's goroutine: it runs work, which returns what it
// panicked with, once per window until the crew ends.
func (c *crew) serve(w int, work func() any) {
	var seen uint64
	skip := 0
	for {
		c.wait(&skip, func() bool { return c.gen.Load() != seen })
		seen = c.gen.Load()
		if c.quit.Load() {
			return
		}
		c.fail[w] = work()
		c.finished()
	}
}

// join waits for the workers to finish the window and returns what the
// first of them that failed panicked with.
func (c *crew) join() any {
	c.wait(&c.skip, func() bool { return c.left.Load() == 0 })
	var failed any
	for w, r := range c.fail {
		if r != nil && failed == nil {
			failed = r
		}
		c.fail[w] = nil
	}
	return failed
}

// stop ends the worker goroutines (between windows).
func (c *crew) stop() {
	c.quit.Store(true)
	c.start()
}

// start starts a window on the workers (or ends the crew, after quit).
func (c *crew) start() {
	c.left.Store(int32(len(c.fail)))
	c.gen.Add(1)
	c.mu.Lock()
	c.cond.Broadcast()
	c.mu.Unlock()
}

// finished is called by each worker at the end of its part of a window.
func (c *crew) finished() {
	if c.left.Add(-1) == 0 {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	}
}

// wait returns once done reports true: polling for up to spinFor, then
// parked (whatever makes done true must then broadcast on c.cond under
// c.mu). *skip is the waiting goroutine's: after a poll that ran out
// (the goroutine it waits for was not running: other work has the cores),
// its next skipAfterMiss waits park at once.
func (c *crew) wait(skip *int, done func() bool) {
	if c.spin && *skip == 0 {
		var deadline time.Time
		for i := 1; !done(); i++ {
			if i%64 != 0 {
				continue
			}
			now := time.Now()
			if deadline.IsZero() {
				deadline = now.Add(spinFor)
			} else if now.After(deadline) {
				*skip = skipAfterMiss
				break
			}
		}
	} else if *skip > 0 {
		*skip--
	}
	c.mu.Lock()
	for !done() {
		c.cond.Wait()
	}
	c.mu.Unlock()
}

// skipAfterMiss is how many waits park at once after a poll ran out.
const skipAfterMiss = 32

type group struct {
	cluster int32
	lo, hi  int32
	weight  int32
}

// ParallelWindows returns how many windows of events ran on parallel
// workers so far (0 with Workers ≤ 1).
func (s *Sim) ParallelWindows() int { return s.par.ran }

// Lookahead returns the length of a parallel window, as planned for the
// nodes added so far (see Config.Workers).
func (s *Sim) Lookahead() time.Duration {
	s.plan()
	return time.Duration(s.par.look)
}

// Clusters returns the number of clusters parallel windows cut the nodes
// into and the size of the largest.
func (s *Sim) Clusters() (n, largest int) {
	s.plan()
	sizes := make([]int, s.par.nclust)
	for _, c := range s.par.cluster {
		sizes[c]++
		largest = max(largest, sizes[c])
	}
	return s.par.nclust, largest
}

// plan clusters the nodes (once per change of the node set) and reports
// whether parallel windows are possible.
func (s *Sim) plan() bool {
	p := &s.par
	if s.planned == len(s.nodes) && p.cluster != nil {
		return p.look > 0
	}
	s.planned = len(s.nodes)
	n := len(s.nodes)
	p.cluster = make([]int32, n)
	p.look, p.tau, p.nclust = 0, 0, 0
	if n == 0 {
		return false
	}
	// Work on sites: nodes at one site always share a cluster.
	count := map[int32]int{}
	var used []int32
	for i := range s.nodes {
		si := s.nodes[i].site
		if count[si] == 0 {
			used = append(used, si)
		}
		count[si]++
	}
	slices.Sort(used)
	parent := make([]int32, len(used))
	find := func(a int32) int32 {
		for parent[a] != a {
			parent[a] = parent[parent[a]]
			a = parent[a]
		}
		return a
	}
	limit := max(1, n/(2*s.workers))
	sizes := make([]int, len(used))
	for _, tau := range tauCandidates {
		t := int64(tau)
		for k := range parent {
			parent[k] = int32(k)
		}
		for a := range used {
			for b := a + 1; b < len(used); b++ {
				sa, sb := int(used[a]), int(used[b])
				if int64(min(s.sites.OneWay(sa, sb), s.sites.OneWay(sb, sa))) < t {
					if ra, rb := find(int32(a)), find(int32(b)); ra != rb {
						parent[ra] = rb
					}
				}
			}
		}
		clear(sizes)
		largest := 0
		for k, si := range used {
			r := find(int32(k))
			sizes[r] += count[si]
			largest = max(largest, sizes[r])
		}
		if largest > limit && tau != tauCandidates[len(tauCandidates)-1] {
			continue
		}
		// Pairs less than τ apart, same-site pairs included, are inside a
		// cluster: packets between clusters take τ or more.
		p.tau = tau
		p.look = min(t, s.period)
		ids := make([]int32, len(used))
		for k := range ids {
			ids[k] = -1
		}
		siteCluster := map[int32]int32{}
		for k, si := range used {
			r := find(int32(k))
			if ids[r] < 0 {
				ids[r] = int32(p.nclust)
				p.nclust++
			}
			siteCluster[si] = ids[r]
		}
		for i := range s.nodes {
			p.cluster[i] = siteCluster[s.nodes[i].site]
		}
		break
	}
	return p.look > 0 && p.nclust > 1
}

// runParallel is Run's loop with parallel windows.
func (s *Sim) runParallel(end int64) {
	p := &s.par
	p.begin(s)
	defer p.stop()
	for {
		e := s.q.next()
		if e == nil || e.at > end {
			s.flushObs()
			break
		}
		if e.kind == evFunc || e.kind == evHeal {
			s.flushObs()
			ev := s.q.pop()
			s.now, s.serial.now = ev.at, ev.at
			s.serial.dispatch(&ev)
			if s.planned != len(s.nodes) && !s.plan() {
				// A scenario function added nodes that leave no lookahead:
				// finish serially.
				for {
					if e := s.q.next(); e == nil || e.at > end {
						return
					}
					ev := s.q.pop()
					s.now, s.serial.now = ev.at, ev.at
					s.serial.dispatch(&ev)
				}
			}
			continue
		}
		wEnd := min(e.at+p.look, end+1)
		p.win = p.win[:0]
		for {
			e := s.q.next()
			if e == nil || e.at >= wEnd || e.kind == evFunc || e.kind == evHeal {
				break
			}
			p.win = append(p.win, s.q.pop())
		}
		s.runWindow(wEnd)
	}
}

// runWindow runs the events in s.par.win, all due before wEnd, and those
// they schedule before wEnd within their cluster.
func (s *Sim) runWindow(wEnd int64) {
	p := &s.par
	win := p.win
	if len(win) < minWindow && !p.always {
		// Serially, through the queue: what they schedule before wEnd
		// comes back from it in order.
		s.flushObs()
		for i := range win {
			s.q.push(win[i].at, win[i])
		}
		clear(win)
		for {
			e := s.q.next()
			if e == nil || e.at >= wEnd || e.kind == evFunc || e.kind == evHeal {
				return
			}
			ev := s.q.pop()
			s.now, s.serial.now = ev.at, ev.at
			s.serial.dispatch(&ev)
		}
	}
	p.group(win)
	p.ran++
	p.next.Store(0)
	for _, l := range p.lanes {
		l.wEnd = wEnd
	}
	p.crew.start()
	var failed any
	func() {
		defer func() {
			if r := recover(); r != nil {
				failed = r
			}
		}()
		if len(p.pend) > 0 {
			// The previous window's observer events, while the other
			// workers start on this one (ObserveBehind).
			s.replay(p.pend)
			p.pend = p.pend[:0]
		}
		p.work(p.lanes[0])
	}()
	if r := p.crew.join(); failed == nil {
		failed = r
	}
	if failed != nil {
		panic(failed)
	}
	// Merge: schedule what the workers scheduled, add up their traffic,
	// and replay their observer events in the run's order.
	last := win[len(win)-1].at
	for _, l := range p.lanes {
		for i := range l.out {
			s.q.push(l.out[i].at, l.out[i])
		}
		clear(l.out)
		l.out = l.out[:0]
		l.own.mergeInto(&s.tr)
		s.events += l.events
		l.events = 0
		p.obs = append(p.obs, l.obs...)
		clear(l.obs)
		l.obs = l.obs[:0]
		last = max(last, l.last)
	}
	if len(p.obs) > 0 {
		slices.SortFunc(p.obs, func(a, b obsEvent) int {
			if c := cmp.Compare(a.at, b.at); c != 0 {
				return c
			}
			return cmp.Compare(a.seq, b.seq)
		})
		if p.behind {
			p.pend, p.obs = p.obs, p.pend[:0]
		} else {
			s.replay(p.obs)
			p.obs = p.obs[:0]
		}
	}
	s.now = last
	clear(win)
}

// replay calls the observer with held-back events, in order, and clears
// them.
func (s *Sim) replay(obs []obsEvent) {
	for i := range obs {
		s.now = obs[i].at
		s.observer(obs[i].ev)
	}
	clear(obs)
}

// flushObs observes what the previous window held back (ObserveBehind):
// before anything runs serially, and when Run ends.
func (s *Sim) flushObs() {
	if p := &s.par; len(p.pend) > 0 {
		s.replay(p.pend)
		p.pend = p.pend[:0]
	}
}

// ObserveBehind lets the observer of a parallel window run while the next
// window runs (on the caller's goroutine, before it joins the workers),
// instead of between windows: an observer that is a serial bottleneck then
// overlaps with the parallel work. Events are observed in the same order
// as without it, and all of them before Run returns and before a scenario
// function or heal runs. Such an observer must not read what the next
// window changes: the cores, their nodes' traffic counters. It may read
// what a core records at its own Ticks if the core keeps the last two
// records: from one observed tick of a node to the end of the window that
// runs alongside, the node ticks at most once more (the lookahead is at
// most one frame period, so the next window ends before the tick after).
// The lab's ground truth reads such double-buffered frame snapshots.
func (s *Sim) ObserveBehind(on bool) { s.par.behind = on }

// group cuts the window into one group per cluster, heaviest first.
func (p *parallel) group(win []entry) {
	if len(p.mark) < p.nclust {
		p.mark = append(p.mark, make([]uint32, p.nclust-len(p.mark))...)
		p.gidx = append(p.gidx, make([]int32, p.nclust-len(p.gidx))...)
	}
	p.stamp++
	if p.stamp == 0 { // wrapped: forget every old mark
		clear(p.mark)
		p.stamp = 1
	}
	p.groups = p.groups[:0]
	for i := range win {
		c := p.cluster[win[i].ref]
		if p.mark[c] != p.stamp {
			p.mark[c] = p.stamp
			p.gidx[c] = int32(len(p.groups))
			p.groups = append(p.groups, group{cluster: c})
		}
		g := &p.groups[p.gidx[c]]
		g.hi++ // a count for now
		if win[i].kind == evTick {
			g.weight += tickWeight
		} else {
			g.weight++
		}
	}
	// Counts to ranges, then place the events (stable: run order within a
	// group).
	off := int32(0)
	for k := range p.groups {
		g := &p.groups[k]
		g.lo, off = off, off+g.hi
		g.hi = g.lo
	}
	if cap(p.order) < len(win) {
		p.order = make([]int32, len(win))
	}
	p.order = p.order[:len(win)]
	for i := range win {
		g := &p.groups[p.gidx[p.cluster[win[i].ref]]]
		p.order[g.hi] = int32(i)
		g.hi++
	}
	slices.SortFunc(p.groups, func(a, b group) int {
		if c := cmp.Compare(b.weight, a.weight); c != 0 {
			return c
		}
		return cmp.Compare(a.cluster, b.cluster)
	})
}

// work takes groups until none is left and runs each on lane l: the
// group's window events merged, in (time, seq) order, with the events they
// schedule inside the cluster before the window's end.
func (p *parallel) work(l *lane) {
	for {
		k := int(p.next.Add(1)) - 1
		if k >= len(p.groups) {
			return
		}
		g := p.groups[k]
		l.cluster = g.cluster
		idx := p.order[g.lo:g.hi]
		for len(idx) > 0 || len(l.local) > 0 {
			var ev entry
			if len(l.local) > 0 && (len(idx) == 0 || l.local[0].less(&p.win[idx[0]])) {
				ev = l.local.pop()
			} else {
				ev = p.win[idx[0]]
				idx = idx[1:]
			}
			l.now = ev.at
			l.last = max(l.last, ev.at)
			l.dispatch(&ev)
		}
	}
}

// begin starts the worker goroutines of one Run.
func (p *parallel) begin(s *Sim) {
	for len(p.lanes) < s.workers {
		l := &lane{s: s}
		l.tr = &l.own
		l.own.lo = int(^uint(0) >> 1)
		p.lanes = append(p.lanes, l)
	}
	// Spin only if every lane can have a processor: a spinning goroutine
	// must not keep the one it waits for from running.
	p.crew = newCrew(s.workers-1, s.workers <= runtime.GOMAXPROCS(0))
	for w := range s.workers - 1 {
		l := p.lanes[w+1]
		go p.crew.serve(w, func() any { return p.workSafe(l) })
	}
}

// workSafe is work that returns what it panicked with instead.
func (p *parallel) workSafe(l *lane) (failed any) {
	defer func() {
		if r := recover(); r != nil {
			failed = fmt.Errorf("sim: worker: %v", r)
		}
	}()
	p.work(l)
	return nil
}

// stop ends the worker goroutines.
func (p *parallel) stop() {
	p.crew.stop()
	p.crew = nil
}

// mergeInto adds t to d and empties t.
func (t *traffic) mergeInto(d *traffic) {
	for c := range t.out {
		d.out[c] = d.out[c].Plus(t.out[c])
	}
	d.in = d.in.Plus(t.in)
	d.dup = d.dup.Plus(t.dup)
	for c := range t.drops {
		d.drops[c] = d.drops[c].Plus(t.drops[c])
	}
	d.inflight = d.inflight.Plus(t.inflight) // t's may have wrapped below 0: the sum is right
	d.rejected = d.rejected.Plus(t.rejected)
	if d.firstBad == "" {
		d.firstBad = t.firstBad
	}
	for k := t.lo; k < len(t.secs); k++ {
		r := &t.secs[k]
		dr := d.rowSec(k)
		for c := range r.out {
			dr.out[c] = dr.out[c].Plus(r.out[c])
		}
		dr.in = dr.in.Plus(r.in)
		dr.dup = dr.dup.Plus(r.dup)
		for c := range r.drop {
			dr.drop[c] = dr.drop[c].Plus(r.drop[c])
		}
		*r = secRow{}
	}
	secs, lo := t.secs, int(^uint(0)>>1)
	*t = traffic{secs: secs, lo: lo}
}
