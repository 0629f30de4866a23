package node

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// ledger follows every write through the authority events: which writes
// each object's surviving lineage applied (a failover drops what the old
// primary applied after the version its backup held, and whatever a
// stale primary applies after a newer epoch began), and which writes
// their writers were told are safe.
type ledger struct {
	applied map[world.ObjectID][]applied
	epoch   map[world.ObjectID]uint32
	acked   map[writeKey]world.ObjectID
	events  []AuthorityEvent
}

type writeKey struct {
	writer wire.NodeID
	inc    uint16
	seq    uint32
}

type applied struct {
	writeKey
	epoch uint32
	ver   uint64
}

func newLedger() *ledger {
	return &ledger{applied: map[world.ObjectID][]applied{}, epoch: map[world.ObjectID]uint32{}, acked: map[writeKey]world.ObjectID{}}
}

func (l *ledger) event(ev AuthorityEvent) {
	l.events = append(l.events, ev)
	switch ev.Kind {
	case EvWriteApplied:
		if ev.Epoch < l.epoch[ev.ID] {
			return // a stale primary's: not in the lineage
		}
		l.applied[ev.ID] = append(l.applied[ev.ID], applied{writeKey{ev.Writer, ev.Inc, ev.Seq}, ev.Epoch, ev.Version})
	case EvPromoted:
		l.epoch[ev.ID] = max(l.epoch[ev.ID], ev.Epoch)
		kept := l.applied[ev.ID][:0]
		for _, a := range l.applied[ev.ID] {
			if a.epoch != ev.Prev || a.ver <= ev.Base {
				kept = append(kept, a)
			}
		}
		l.applied[ev.ID] = kept
	case EvInstalled:
		l.epoch[ev.ID] = max(l.epoch[ev.ID], ev.Epoch)
	case EvWriteAcked:
		l.acked[writeKey{ev.Writer, ev.Inc, ev.Seq}] = ev.ID
	}
}

// check returns the writes applied twice in a lineage and the
// acknowledged writes missing from theirs (objects in lost excepted).
func (l *ledger) check(lost map[world.ObjectID]bool) (twice, ackedLost []string) {
	for id, as := range l.applied {
		seen := map[writeKey]bool{}
		for _, a := range as {
			if seen[a.writeKey] {
				twice = append(twice, fmt.Sprintf("%v: write %d/%d#%d", id, a.writer, a.inc, a.seq))
			}
			seen[a.writeKey] = true
		}
	}
	for k, id := range l.acked {
		if lost[id] {
			continue
		}
		if !slices.ContainsFunc(l.applied[id], func(a applied) bool { return a.writeKey == k }) {
			ackedLost = append(ackedLost, fmt.Sprintf("%v: write %d/%d#%d", id, k.writer, k.inc, k.seq))
		}
	}
	slices.Sort(twice)
	slices.Sort(ackedLost)
	return twice, ackedLost
}

// TestAuthorityRandom runs seeded random sequences of migrations, crashes,
// restarts, partitions, writes by ID and deletions over 3 to 8 nodes with
// 5% loss, 1% duplication and jitter, with the cluster's invariants
// checked after every event (one primary per object and epoch, no object
// without a primary for longer than the failover budget unless its node
// crashed with no backup, every replica a past state of its primary),
// and at the end: no write applied twice in an object's lineage, no
// acknowledged write lost.
func TestAuthorityRandom(t *testing.T) {
	seeds := 24
	if testing.Short() {
		seeds = 6
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runAuthority(t, seed) })
	}
}

// TestAuthorityRandomLarge is TestAuthorityRandom over 10 and 16 nodes.
func TestAuthorityRandomLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("16-node sequences take about 15 s; run without -short")
	}
	for i, n := range []int{10, 16} {
		seed := uint64(1000 + i)
		t.Run(fmt.Sprint(n), func(t *testing.T) { runAuthorityN(t, seed, n) })
	}
}

func runAuthority(t *testing.T, seed uint64) { runAuthorityN(t, seed, 0) }

// runAuthorityN runs one sequence over nodes nodes (0: 3 to 8, drawn).
func runAuthorityN(t *testing.T, seed uint64, nodes int) {
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0xa07))
	g := newGame(100)
	l := newLedger()
	if n := 3 + rng.IntN(6); nodes == 0 {
		nodes = n
	}
	c := newCluster(t, g, clusterOpts{nodes: nodes, arch: "broadcast", latency: 20 * time.Millisecond, spread: 60 * time.Millisecond,
		loss: 0.05, dup: 0.01, jitter: 20 * time.Millisecond, seed: seed, failover: true, onEvent: l.event})
	c.check = true
	flush := func(n *Node) {
		c.buf = n.Drain(c.buf[:0])
		c.send(c.buf)
	}
	for _, n := range c.nodes {
		for range 2 {
			if _, err := n.Spawn(c.now, g.walker, func(st *world.State) {
				st.SetFloat(wX, rng.Float64()*100)
				st.SetFloat(wY, rng.Float64()*100)
				st.SetInt(wHP, 1000)
				st.SetFloat(wRange, 0)
			}); err != nil {
				t.Fatal(err)
			}
			flush(n)
		}
	}
	c.run(c.now + time.Second)
	var lastCrash time.Duration = -time.Hour
	healAt := time.Duration(-1)
	var migrations, crashes, writes int
	type madeKey struct {
		node wire.NodeID
		inc  uint16
		id   world.ObjectID
	}
	made := map[madeKey]int{}
	for range 80 {
		up := c.up()
		switch op := rng.IntN(12); {
		case op < 4: // migrate
			n := up[rng.IntN(len(up))]
			ps := n.Primaries(nil)
			if len(ps) == 0 {
				break
			}
			to := up[rng.IntN(len(up))].ID()
			if to == n.ID() {
				break
			}
			id := ps[rng.IntN(len(ps))].ID
			if _, err := n.Migrate(c.now, id, to); err == nil {
				migrations++
				t.Logf("%v: migrate %v from %d to %d", c.now, id, n.ID(), to)
			}
			flush(n)
		case op < 8: // write by ID
			n := up[rng.IntN(len(up))]
			ids := c.liveIDs()
			if len(ids) == 0 {
				break
			}
			id := ids[rng.IntN(len(ids))]
			if _, primary, _ := n.Lookup(id); primary {
				break // a write to a local primary is applied at once
			}
			if err := n.WriteTo(id, g.walker, func(st *world.State) { st.SetInt(wHP, st.Int(wHP)-1) }); err == nil {
				writes++
				made[madeKey{n.ID(), n.Incarnation(), id}]++
			}
			flush(n)
		case op < 9: // crash one node at a time, when the last failover is over
			down := len(c.nodes) - len(up)
			if down > 0 || len(up) < 3 || c.now-lastCrash < 4*time.Second || healAt >= 0 {
				break
			}
			n := up[rng.IntN(len(up))]
			c.crash(n.ID())
			t.Logf("%v: crash %d", c.now, n.ID())
			lastCrash = c.now
			crashes++
		case op < 10: // restart
			for _, n := range c.nodes {
				if c.down[n.ID()] && c.now-lastCrash > 2*time.Second {
					c.restart(n.ID())
					t.Logf("%v: restart %d", c.now, n.ID())
					break
				}
			}
		case op < 11: // a partition that heals within a second or two
			if healAt >= 0 || len(c.nodes)-len(up) > 0 {
				break
			}
			k := 1 + rng.IntN(len(c.nodes)-1)
			perm := rng.Perm(len(c.nodes))
			for i, p := range perm {
				side := 1
				if i >= k {
					side = 2
				}
				c.side[wire.NodeID(p+1)] = side
			}
			healAt = c.now + time.Duration(500+rng.IntN(1500))*time.Millisecond
			t.Logf("%v: partition %v until %v", c.now, c.side, healAt)
			lastCrash = c.now
		default: // delete
			n := up[rng.IntN(len(up))]
			if ps := n.Primaries(nil); len(ps) > 2 {
				id := ps[rng.IntN(len(ps))].ID
				_ = c.del(n, id)
				t.Logf("%v: delete %v on %d", c.now, id, n.ID())
				flush(n)
				c.record()
			}
		}
		c.run(c.now + time.Duration(50+rng.IntN(350))*time.Millisecond)
		if healAt >= 0 && c.now >= healAt {
			c.heal()
			healAt = -1
		}
	}
	c.heal()
	for _, n := range c.nodes {
		if c.down[n.ID()] {
			c.restart(n.ID())
		}
	}
	c.run(c.now + 10*time.Second)
	twice, lost := l.check(c.lost)
	if len(twice) > 0 || len(lost) > 0 {
		t.Fatalf("seed %d: writes applied twice %v; acknowledged writes lost %v", seed, twice, lost)
	}
	// Every write whose writer is still running (the same incarnation)
	// to an object that still exists is acknowledged by now.
	live := map[world.ObjectID]bool{}
	for _, id := range c.liveIDs() {
		live[id] = true
	}
	lostObjs := 0
	for id := range c.lost {
		if !live[id] && !c.gone[id] {
			lostObjs++
			t.Logf("lost %v", id)
		}
	}
	ackedBy := map[madeKey]int{}
	for k, id := range l.acked {
		ackedBy[madeKey{k.writer, k.inc, id}]++
	}
	// A write given up because a primary deleted its object (one a newer
	// epoch may since have replaced) is not acknowledged.
	for _, ev := range l.events {
		if ev.Kind == EvWriteAbandoned {
			ackedBy[madeKey{ev.Self, c.node(ev.Self).Incarnation(), ev.ID}]++
		}
	}
	acked := len(l.acked)
	for k, m := range made {
		if k.inc == c.node(k.node).Incarnation() && live[k.id] && ackedBy[k] != m {
			t.Errorf("seed %d: node %d made %d writes to %v, %d acknowledged", seed, k.node, m, k.id, ackedBy[k])
		}
	}
	t.Logf("seed %d: %d nodes, %d migrations, %d crashes, %d writes (%d acknowledged)", seed, nodes, migrations, crashes, writes, acked)
	if lostObjs > 0 {
		t.Errorf("seed %d: %d objects lost", seed, lostObjs)
	}
}

// liveIDs returns the objects with a primary on an up node, in order.
func (c *cluster) liveIDs() []world.ObjectID {
	var ids []world.ObjectID
	for _, n := range c.up() {
		for _, in := range n.Primaries(nil) {
			ids = append(ids, in.ID)
		}
	}
	slices.Sort(ids)
	return ids
}
