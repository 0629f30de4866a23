package faults

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// The schedule: faults start once the world has run for faultStart (every
// primary has its backup by then) and end settleTail before the end of
// the run, so that the last failover and migrations can finish inside it.
const (
	faultStart = 2 * time.Second
	settleTail = 3 * time.Second
	// retryEvery is how often a crash or partition that could not happen
	// at its planned time (a node down, a failover not settled) tries
	// again, until the next one's planned time.
	retryEvery = 100 * time.Millisecond
	// maxViolations bounds the violations the report describes (the
	// counters count them all).
	maxViolations = 20
)

// primRec is one primary a node holds, at its epoch.
type primRec struct {
	id    world.ObjectID
	epoch uint32
}

// holderRec is a live node holding the primary of an object.
type holderRec struct {
	node  wire.NodeID
	epoch uint32
}

// limboRec is an object without a primary on a live node since since;
// crash: a crash happened meanwhile or began it (else a migration or a
// partition holds it up).
type limboRec struct {
	since time.Duration
	crash bool
	cause string
}

type migKey struct {
	id    world.ObjectID
	epoch uint32
}

type migOpen struct {
	at       time.Duration
	from, to wire.NodeID
}

type crashObj struct {
	at   time.Duration
	node wire.NodeID
}

type dupKey struct {
	id    world.ObjectID
	epoch uint32
}

// runner runs one fault experiment and checks it.
type runner struct {
	cfg    Config
	w      *harness.World
	game   *arena.Game
	bot    world.Kind
	rng    *rand.Rand
	led    *ledger
	nodes  []*node.Node // by ID - 1, the latest incarnations
	up     []bool
	player int // player nodes: IDs 1..player

	prims   [][]primRec // by node index, in ID order
	scratch []primRec
	buf     []node.ObjectInfo
	left    [][]world.ObjectID // per node: objects it handed over or stepped down from in the current event
	holders map[world.ObjectID][]holderRec
	kind    map[world.ObjectID]world.Kind
	limbo   map[world.ObjectID]limboRec
	lost    map[world.ObjectID]bool
	unprot  map[world.ObjectID]bool // no live node had a copy at the crash
	deleted map[world.ObjectID]bool
	dups    map[dupKey]bool
	opened  map[migKey]migOpen
	// crashed: the objects a crash left without a primary, and when
	// (their failover latency runs from then).
	crashed map[world.ObjectID]crashObj

	down       wire.NodeID // the node down, 0 if none
	partedTill time.Duration

	rep *Report
}

// Run runs the fault experiment of cfg and returns its report. progress,
// if not nil, is called with the seconds of game time done and the total
// after every second.
func Run(cfg Config, progress func(done, total int)) (*Report, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	ac, err := cfg.arena().Validate()
	if err != nil {
		return nil, err
	}
	g, game, err := harness.ArenaGame(ac)
	if err != nil {
		return nil, err
	}
	w, err := harness.New(ac.Config, g)
	if err != nil {
		return nil, err
	}
	bot, _ := game.Registry().Kind(game.Bot)
	r := &runner{cfg: cfg, w: w, game: game, bot: bot, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6661756c74)), // "fault"
		led: newLedger(), nodes: w.Nodes(), player: cfg.Nodes,
		holders: map[world.ObjectID][]holderRec{}, kind: map[world.ObjectID]world.Kind{},
		limbo: map[world.ObjectID]limboRec{}, lost: map[world.ObjectID]bool{}, unprot: map[world.ObjectID]bool{}, deleted: map[world.ObjectID]bool{},
		dups: map[dupKey]bool{}, opened: map[migKey]migOpen{}, crashed: map[world.ObjectID]crashObj{},
		rep: newReport(cfg)}
	r.up = make([]bool, len(r.nodes))
	r.prims = make([][]primRec, len(r.nodes))
	r.left = make([][]world.ObjectID, len(r.nodes))
	for i := range r.nodes {
		r.up[i] = true
		r.scan(wire.NodeID(i+1), 0)
	}
	w.SetOnEvent(r.event)
	w.SetCheck(r.after)
	if err := r.plan(); err != nil {
		return nil, err
	}
	var prog func(harness.Progress)
	if progress != nil {
		total := int(cfg.Duration / time.Second)
		prog = func(p harness.Progress) { progress(int(p.Virtual/time.Second), total) }
	}
	if err := w.Run(prog); err != nil {
		return nil, err
	}
	r.finish(w.Result())
	return r.rep, nil
}

// plan schedules the migrations, writes, crashes and partitions.
func (r *runner) plan() error {
	span := r.cfg.Duration - faultStart - settleTail
	at := func(i, n int, u float64) time.Duration {
		return faultStart + time.Duration((float64(i)+u)*float64(span)/float64(n))
	}
	type job struct {
		at time.Duration
		fn func(*harness.World) error
	}
	var jobs []job
	for i := range r.cfg.Migrations {
		jobs = append(jobs, job{at(i, r.cfg.Migrations, r.rng.Float64()), r.migrate})
	}
	if writes := int(math.Round(r.cfg.WriteRate * span.Seconds())); writes > 0 {
		for i := range writes {
			jobs = append(jobs, job{at(i, writes, r.rng.Float64()), r.write})
		}
	}
	for i := range r.cfg.Crashes {
		t, until := at(i, r.cfg.Crashes, 0.25+0.5*r.rng.Float64()), at(i+1, r.cfg.Crashes, 0)
		jobs = append(jobs, job{t, r.tryCrash(until)})
	}
	for i := range r.cfg.Partitions {
		t, until := at(i, r.cfg.Partitions, 0.25+0.5*r.rng.Float64()), at(i+1, r.cfg.Partitions, 0)
		jobs = append(jobs, job{t, r.tryPartition(until)})
	}
	slices.SortStableFunc(jobs, func(a, b job) int { return int(a.at - b.at) })
	for _, j := range jobs {
		if err := r.w.Schedule(j.at, j.fn); err != nil {
			return err
		}
	}
	return nil
}

func (r *runner) now() time.Duration { return r.w.Sim().Now() }

// livePlayers returns the player nodes that are up, in ID order.
func (r *runner) livePlayers() []wire.NodeID {
	var out []wire.NodeID
	for i := range r.player {
		if r.up[i] {
			out = append(out, wire.NodeID(i+1))
		}
	}
	return out
}

// migrate moves a random primary of a random live node to a random other
// live player node.
func (r *runner) migrate(w *harness.World) error {
	var from []wire.NodeID
	for i := range r.nodes {
		if r.up[i] && len(r.prims[i]) > 0 {
			from = append(from, wire.NodeID(i+1))
		}
	}
	live := r.livePlayers()
	if len(from) == 0 || len(live) < 2 {
		r.rep.MigrationsRefused++
		return nil
	}
	a := from[r.rng.IntN(len(from))]
	ps := r.prims[a-1]
	id := ps[r.rng.IntN(len(ps))].id
	to := live[r.rng.IntN(len(live))]
	for to == a {
		to = live[r.rng.IntN(len(live))]
	}
	if _, err := r.nodes[a-1].Migrate(r.now(), id, to); err != nil {
		r.rep.MigrationsRefused++
		return nil
	}
	r.rep.Migrations++
	return w.Sim().Flush(a)
}

// write sends one write by ID from a random live player node to a random
// bot whose primary is on another live node.
func (r *runner) write(w *harness.World) error {
	live := r.livePlayers()
	if len(live) == 0 {
		return nil
	}
	n := live[r.rng.IntN(len(live))]
	var bots []world.ObjectID
	for i := range r.nodes {
		if !r.up[i] || wire.NodeID(i+1) == n {
			continue
		}
		for _, p := range r.prims[i] {
			if r.kind[p.id] == r.bot {
				bots = append(bots, p.id)
			}
		}
	}
	if len(bots) == 0 {
		return nil
	}
	slices.Sort(bots)
	id := bots[r.rng.IntN(len(bots))]
	if _, primary, _ := r.nodes[n-1].Lookup(id); primary {
		return nil // a write to a local primary is applied at once
	}
	err := r.nodes[n-1].WriteTo(id, r.game.Bot, func(st *world.State) { st.SetInt(arena.BotDeaths, 1) })
	if err != nil {
		r.rep.WritesRefused++
		return nil
	}
	r.rep.Writes++
	return w.Sim().Flush(n)
}

// settled reports whether the cluster is ready for another crash: no
// node down, no partition on, every object with a primary on a live node
// and, with failover, every primary with a backup.
func (r *runner) settled() bool {
	if r.down != 0 || r.now() < r.partedTill || len(r.limbo) > 0 {
		return false
	}
	if r.cfg.NoFailover {
		return true
	}
	for i, n := range r.nodes {
		if !r.up[i] {
			continue
		}
		for _, p := range r.prims[i] {
			if _, ok := n.BackupOf(p.id); !ok {
				return false
			}
		}
	}
	return true
}

// tryCrash returns a job that crashes a random live player node once the
// cluster has settled, trying again every retryEvery until until.
func (r *runner) tryCrash(until time.Duration) func(*harness.World) error {
	var try func(w *harness.World) error
	try = func(w *harness.World) error {
		now := r.now()
		if !r.settled() {
			if next := now + retryEvery; next < until {
				return w.Schedule(next, try)
			}
			r.rep.CrashesSkipped++
			return nil
		}
		live := r.livePlayers()
		id := live[r.rng.IntN(len(live))]
		return r.crash(w, id)
	}
	return try
}

// crash crashes node id now and schedules its restart.
func (r *runner) crash(w *harness.World, id wire.NodeID) error {
	now := r.now()
	i := int(id) - 1
	// The objects no live node keeps a copy of cannot be failed over.
	copies := map[world.ObjectID]bool{}
	for j, n := range r.nodes {
		if r.up[j] && j != i {
			for _, x := range n.BackedUp(nil) {
				copies[x] = true
			}
		}
	}
	if err := w.Crash(id); err != nil {
		return err
	}
	r.up[i], r.down = false, id
	c := CrashRecord{Node: id, AtMs: msOf(now), Primaries: len(r.prims[i])}
	for k, l := range r.limbo {
		l.crash = true
		r.limbo[k] = l
		r.crashed[k] = crashObj{now, id}
		if !copies[k] {
			r.unprot[k] = true
		}
	}
	for _, p := range r.prims[i] {
		if !copies[p.id] {
			c.Unprotected++
			r.unprot[p.id] = true
		}
		r.release(p.id, id, now, fmt.Sprintf("crash of node %d at %v", id, now))
		if _, ok := r.limbo[p.id]; ok {
			r.crashed[p.id] = crashObj{now, id}
		}
	}
	r.prims[i] = r.prims[i][:0]
	r.left[i] = r.left[i][:0]
	r.rep.Crashes++
	r.rep.CrashList = append(r.rep.CrashList, c)
	if at := now + r.cfg.RestartAfter; at < r.cfg.Duration {
		return w.Schedule(at, func(w *harness.World) error {
			if err := w.Restart(id); err != nil {
				return err
			}
			r.nodes = w.Nodes()
			r.up[i], r.down = true, 0
			r.rep.Restarts++
			return nil
		})
	}
	return nil
}

// tryPartition returns a job that cuts the player nodes into two random
// sides for 0.5 to 2 s, when no node is down and no partition is on,
// trying again every retryEvery until until.
func (r *runner) tryPartition(until time.Duration) func(*harness.World) error {
	var try func(w *harness.World) error
	try = func(w *harness.World) error {
		now := r.now()
		if r.down != 0 || now < r.partedTill {
			if next := now + retryEvery; next < until {
				return w.Schedule(next, try)
			}
			r.rep.PartitionsSkipped++
			return nil
		}
		perm := r.rng.Perm(r.player)
		k := 1 + r.rng.IntN(r.player-1)
		var a, b []wire.NodeID
		for j, p := range perm {
			if j < k {
				a = append(a, wire.NodeID(p+1))
			} else {
				b = append(b, wire.NodeID(p+1))
			}
		}
		slices.Sort(a)
		slices.Sort(b)
		dur := time.Duration(500+r.rng.IntN(1500)) * time.Millisecond
		if _, err := w.Partition(now+dur, a, b); err != nil {
			return err
		}
		r.partedTill = now + dur
		r.rep.Partitions++
		return nil
	}
	return try
}

// event receives every node's authority events, in the run's order.
func (r *runner) event(ev node.AuthorityEvent) {
	r.led.event(ev)
	i := int(ev.Self) - 1
	switch ev.Kind {
	case node.EvMigrated:
		r.left[i] = append(r.left[i], ev.ID)
		r.opened[migKey{ev.ID, ev.Epoch}] = migOpen{at: ev.At, from: ev.Self, to: ev.Node}
		r.rep.Handoffs++
	case node.EvSteppedDown:
		r.left[i] = append(r.left[i], ev.ID)
		r.rep.StepDowns++
	case node.EvInstalled:
		k := migKey{ev.ID, ev.Epoch}
		if m, ok := r.opened[k]; ok {
			delete(r.opened, k)
			pause := ev.At - m.at
			rtt := r.w.Delay(m.from, m.to) + r.w.Delay(m.to, m.from)
			r.rep.pauses = append(r.rep.pauses, MigrationRecord{ID: uint64(ev.ID), From: m.from, To: m.to, AtMs: msOf(m.at),
				PauseMs: msOf(pause), RTTMs: msOf(rtt), WithinFrameRTT: pause <= world.DefaultFrame+rtt})
		}
	case node.EvPromoted:
		r.rep.Promotions++
		if int(ev.Node) <= len(r.up) && ev.Node > 0 && r.up[ev.Node-1] {
			r.rep.PromotionsOfLiveNodes++
		}
		c, ok := r.crashed[ev.ID]
		if !ok {
			r.rep.PromotionsWithoutCrash++
			return
		}
		delete(r.crashed, ev.ID)
		r.rep.failovers = append(r.rep.failovers, FailoverRecord{ID: uint64(ev.ID), Dead: c.node, By: ev.Self,
			CrashMs: msOf(c.at), LatencyMs: msOf(ev.At - c.at)})
	case replica.EvMigrateAborted: // (node does not re-export this kind)
		r.rep.MigrationsAborted++
	case node.EvWriteAcked:
		r.rep.WritesAcked++
	case node.EvWriteAbandoned:
		r.rep.WritesAbandoned++
	}
}

// after checks the invariants after every simulated event: it rescans the
// primaries of the node the event ran on (of every node after a
// scheduled function or a heal), and the objects without a primary.
func (r *runner) after(ev sim.Event) {
	switch ev.Kind {
	case sim.EventTick, sim.EventDeliver:
		r.scan(ev.Node, ev.At)
	case sim.EventFunc, sim.EventHeal:
		for i := range r.nodes {
			r.scan(wire.NodeID(i+1), ev.At)
		}
	}
	for id, l := range r.limbo {
		if ev.At-l.since > r.cfg.FailoverBudget {
			delete(r.limbo, id)
			switch {
			case l.crash && r.unprot[id]:
				delete(r.crashed, id)
				r.lost[id] = true
				r.rep.ObjectsLostUnprotected++
			case l.crash:
				delete(r.crashed, id)
				r.lost[id] = true
				r.rep.ObjectsLost++
				r.violate("object %v has had no primary on a live node since %v (%s)", id, l.since, l.cause)
			default:
				r.rep.ObjectsStalled++
			}
		}
	}
}

// scan compares node id's primaries with what it held after the previous
// event, and updates the index.
func (r *runner) scan(id wire.NodeID, now time.Duration) {
	i := int(id) - 1
	if i < 0 || i >= len(r.nodes) || !r.up[i] {
		return
	}
	n := r.nodes[i]
	r.buf = n.Primaries(r.buf[:0])
	cur := r.scratch[:0]
	for k := range r.buf {
		x := r.buf[k].ID
		e, _ := n.Epoch(x)
		cur = append(cur, primRec{x, e})
		if _, ok := r.kind[x]; !ok {
			r.kind[x] = r.buf[k].Kind
		}
	}
	r.scratch = cur
	old := r.prims[i]
	if slices.Equal(old, cur) {
		r.left[i] = r.left[i][:0]
		return
	}
	// Merge the two ID-ordered lists.
	a, b := 0, 0
	for a < len(old) || b < len(cur) {
		switch {
		case b == len(cur) || a < len(old) && old[a].id < cur[b].id:
			x := old[a].id
			if slices.Contains(r.left[i], x) {
				r.release(x, id, now, fmt.Sprintf("handed over or stepped down by node %d at %v", id, now))
			} else {
				r.deleted[x] = true // the game deleted it
				r.release(x, id, now, "")
			}
			a++
		case a == len(old) || cur[b].id < old[a].id:
			r.hold(cur[b], id)
			b++
		default:
			if old[a].epoch != cur[b].epoch {
				r.hold(cur[b], id)
			}
			a++
			b++
		}
	}
	r.prims[i] = append(r.prims[i][:0], cur...)
	r.left[i] = r.left[i][:0]
}

// hold records node n holding the primary of p.id at p.epoch.
func (r *runner) hold(p primRec, n wire.NodeID) {
	hs := r.holders[p.id]
	k := slices.IndexFunc(hs, func(h holderRec) bool { return h.node == n })
	if k < 0 {
		hs = append(hs, holderRec{n, p.epoch})
	} else {
		hs[k].epoch = p.epoch
	}
	r.holders[p.id] = hs
	delete(r.limbo, p.id)
	delete(r.crashed, p.id) // back without a promotion (a migration installed)
	delete(r.unprot, p.id)
	if r.deleted[p.id] {
		delete(r.deleted, p.id)
		r.rep.ObjectsResurrected++
	}
	for _, h := range hs {
		if h.node != n && h.epoch == p.epoch && !r.dups[dupKey{p.id, p.epoch}] {
			r.dups[dupKey{p.id, p.epoch}] = true
			r.rep.DuplicatePrimaries++
			r.violate("object %v: nodes %d and %d both hold its primary at epoch %#x at %v", p.id, h.node, n, p.epoch, r.now())
		}
	}
}

// release records node n no longer holding the primary of id (cause:
// why, for the report, "" for a deletion).
func (r *runner) release(id world.ObjectID, n wire.NodeID, now time.Duration, cause string) {
	hs := r.holders[id]
	if k := slices.IndexFunc(hs, func(h holderRec) bool { return h.node == n }); k >= 0 {
		hs = slices.Delete(hs, k, k+1)
	}
	if len(hs) > 0 {
		r.holders[id] = hs
		return
	}
	delete(r.holders, id)
	if r.deleted[id] || r.lost[id] {
		return
	}
	if _, ok := r.limbo[id]; !ok {
		r.limbo[id] = limboRec{since: now, crash: r.down == n, cause: cause}
	}
}

func (r *runner) violate(format string, args ...any) {
	if len(r.rep.Violations) < maxViolations {
		r.rep.Violations = append(r.rep.Violations, fmt.Sprintf(format, args...))
	}
}

// finish checks the writes and fills the report from the run's result.
func (r *runner) finish(res *harness.Result) {
	// The lineage each object's live primary holds at the end (of two
	// primaries of one object, after a partition, the newer epoch's).
	final := map[world.ObjectID]uint32{}
	for i, n := range r.w.Nodes() {
		if !r.up[i] {
			continue
		}
		for _, in := range n.Primaries(nil) {
			if ep, ok := n.Epoch(in.ID); ok && (final[in.ID] == 0 || ep > final[in.ID]) {
				final[in.ID] = ep
			}
		}
	}
	twice, ackedLost := r.led.check(final)
	r.rep.WritesAppliedTwice, r.rep.AckedWritesLost = len(twice), len(ackedLost)
	for _, s := range twice {
		r.violate("write applied twice: %s", s)
	}
	for _, s := range ackedLost {
		r.violate("acknowledged write lost: %s", s)
	}
	r.rep.HandoffsUninstalled = len(r.opened)
	r.rep.fill(res)
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
