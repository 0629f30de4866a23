package node

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// cluster is a small deterministic in-memory driver for tests (the real
// simulator lives in package sim): nodes tick every period (node i offset by
// i ms), packets are delivered from a heap ordered by (time, sequence) after
// a fixed per-pair one-way latency plus uniform jitter, and lost with a
// fixed probability, all drawn from one seeded source.
type cluster struct {
	tb      testing.TB
	g       *game
	arch    string
	nodes   []*Node // index = NodeID - 1
	now     time.Duration
	period  time.Duration
	latency [][]time.Duration
	loss    float64
	jitter  time.Duration
	rng     *rand.Rand
	q       deliveries
	seq     int64
	nextT   []time.Duration
	trace   io.Writer
	traffic [][wire.NumClasses]int64 // bytes out per node and class
	pkts    [][wire.NumClasses]int64
	buf     []wire.Packet
	// sendHook, when set, sees every packet sent (before loss).
	sendHook func(wire.Packet)
	// Faults: crashed nodes (never ticked, stepped or drained), the
	// partition side of each node (packets between different non-zero
	// sides are dropped), and the chance a packet is delivered twice.
	down map[wire.NodeID]bool
	side map[wire.NodeID]int
	dup  float64
	// stalled holds, for a node whose frame loop is paused (a process
	// starved of CPU, a long pause), when it runs again: until then it
	// runs no frame, and the packets sent to it wait for it.
	stalled map[wire.NodeID]time.Duration

	// invariant bookkeeping
	check bool
	// hist: every primary state seen, by object, version and the node that
	// held the primary (two lineages of a failover may share versions).
	hist    map[world.ObjectID]history
	live    map[world.ObjectID]bool
	deleted map[world.ObjectID]time.Duration
	events  int
	seenRep int // replica observations (a check that the run replicated anything)
	// limbo: objects with no primary on an up node but a backup copy
	// somewhere (a migration in flight, a failover to come), since when;
	// lost: objects whose primary's node crashed with no backup.
	limbo  map[world.ObjectID]time.Duration
	lost   map[world.ObjectID]bool
	gone   map[world.ObjectID]bool   // deleted by the test
	goneEp map[world.ObjectID]uint32 // at this epoch
	// healed is when the last partition healed (see heal).
	healed time.Duration
	// budget is how long an object may stay in limbo.
	budget time.Duration
	// mk builds node id's incarnation inc; onEvent, if set before the
	// nodes are built, receives their authority events.
	mk      func(id wire.NodeID, inc uint16) *Node
	onEvent func(AuthorityEvent)
}

type delivery struct {
	at  time.Duration
	seq int64
	p   wire.Packet
}

type deliveries []delivery

func (d deliveries) Len() int { return len(d) }
func (d deliveries) Less(i, j int) bool {
	return d[i].at < d[j].at || d[i].at == d[j].at && d[i].seq < d[j].seq
}
func (d deliveries) Swap(i, j int) { d[i], d[j] = d[j], d[i] }
func (d *deliveries) Push(x any)   { *d = append(*d, x.(delivery)) }
func (d *deliveries) Pop() any {
	old := *d
	x := old[len(old)-1]
	*d = old[:len(old)-1]
	return x
}

type clusterOpts struct {
	nodes      int
	arch       string // directory | broadcast | client-server
	latency    time.Duration
	spread     time.Duration // per-pair latency drawn in [latency, latency+spread)
	loss       float64
	jitter     time.Duration
	seed       uint64
	margin     float64
	prefetch   float64 // Config.Prefetch in x and y
	far        float64 // Config.FarMargin in x and y
	push       bool    // Config.PushMutual
	rendezvous wire.NodeID
	idle       time.Duration // the directory's IdleEvery
	replica    replica.Config
	dup        float64
	failover   bool // warm backups, with every other node a peer
	// blind leaves the failure detector without delay estimates
	// (replica.Config.Delay nil), as a live daemon runs without emulated
	// latency: its probes wait the whole ProbeTimeout.
	blind   bool
	onEvent func(AuthorityEvent)
}

func newCluster(tb testing.TB, g *game, o clusterOpts) *cluster {
	tb.Helper()
	c := &cluster{tb: tb, g: g, arch: o.arch, period: 100 * time.Millisecond, loss: o.loss, jitter: o.jitter,
		rng: rand.New(rand.NewPCG(o.seed, 99)), hist: map[world.ObjectID]history{},
		live: map[world.ObjectID]bool{}, deleted: map[world.ObjectID]time.Duration{},
		down: map[wire.NodeID]bool{}, stalled: map[wire.NodeID]time.Duration{}, side: map[wire.NodeID]int{}, dup: o.dup,
		limbo: map[world.ObjectID]time.Duration{}, lost: map[world.ObjectID]bool{}, gone: map[world.ObjectID]bool{}, goneEp: map[world.ObjectID]uint32{}, budget: 2 * time.Second,
		onEvent: o.onEvent}
	if o.rendezvous == 0 {
		o.rendezvous = 1
	}
	members := make([]wire.NodeID, o.nodes)
	for i := range members {
		members[i] = wire.NodeID(i + 1)
	}
	c.latency = make([][]time.Duration, o.nodes)
	for i := range c.latency {
		c.latency[i] = make([]time.Duration, o.nodes)
	}
	for i := range o.nodes {
		for j := i + 1; j < o.nodes; j++ {
			l := o.latency
			if o.spread > 0 {
				l += time.Duration(c.rng.Int64N(int64(o.spread)))
			}
			c.latency[i][j], c.latency[j][i] = l, l
		}
	}
	c.mk = func(id wire.NodeID, inc uint16) *Node {
		var d Discovery
		switch o.arch {
		case "directory":
			cfg := locate.DefaultDirectoryConfig(o.rendezvous)
			cfg.Margin = world.Point{o.margin, o.margin}
			cfg.IdleEvery = o.idle
			dir, err := locate.NewDirectory(id, cfg)
			if err != nil {
				tb.Fatal(err)
			}
			d = dir
		case "broadcast":
			b, err := locate.NewBroadcast(id, members)
			if err != nil {
				tb.Fatal(err)
			}
			d = b
		case "client-server":
			d = locate.NewClientServer(id, o.rendezvous)
		default:
			tb.Fatalf("unknown architecture %q", o.arch)
		}
		rc := o.replica
		if o.failover {
			rc.Failover = true
			rc.Peers = func() []wire.NodeID { return members }
			if !o.blind {
				lat := c.latency
				rc.Delay = func(a, b wire.NodeID) time.Duration { return lat[a-1][b-1] }
			}
		}
		if c.onEvent != nil {
			rc.OnEvent = c.onEvent
		}
		n, err := New(Config{ID: id, Registry: g.registry, Discovery: d, Incarnation: inc,
			Rand: rand.New(rand.NewPCG(o.seed, uint64(id)|uint64(inc)<<32)), Replica: rc,
			Prefetch: world.Point{o.prefetch, o.prefetch}, FarMargin: world.Point{o.far, o.far}, PushMutual: o.push})
		if err != nil {
			tb.Fatal(err)
		}
		return n
	}
	for _, id := range members {
		c.nodes = append(c.nodes, c.mk(id, 0))
		c.nextT = append(c.nextT, time.Duration(id-1)*time.Millisecond)
	}
	c.traffic = make([][wire.NumClasses]int64, o.nodes)
	c.pkts = make([][wire.NumClasses]int64, o.nodes)
	return c
}

func (c *cluster) node(id wire.NodeID) *Node { return c.nodes[id-1] }

// cut reports whether a partition separates a and b.
func (c *cluster) cut(a, b wire.NodeID) bool {
	sa, sb := c.side[a], c.side[b]
	return sa != 0 && sb != 0 && sa != sb
}

// up returns the nodes not crashed.
func (c *cluster) up() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if !c.down[n.ID()] {
			out = append(out, n)
		}
	}
	return out
}

// send queues the packets a node drained.
func (c *cluster) send(ps []wire.Packet) {
	for _, p := range ps {
		for cl, n := range p.ClassSizes(0) {
			if n > 0 {
				c.traffic[p.From-1][cl] += int64(n)
				c.pkts[p.From-1][cl]++
			}
		}
		if c.sendHook != nil {
			c.sendHook(p)
		}
		if c.loss > 0 && c.rng.Float64() < c.loss {
			continue
		}
		copies := 1
		if c.dup > 0 && c.rng.Float64() < c.dup {
			copies = 2
		}
		for range copies {
			at := c.now + c.latency[p.From-1][p.To-1]
			if c.jitter > 0 {
				at += time.Duration(c.rng.Int64N(int64(c.jitter)))
			}
			c.seq++
			q := p
			if copies > 1 {
				q.Payload = slices.Clone(p.Payload)
			}
			heap.Push(&c.q, delivery{at: at, seq: c.seq, p: q})
		}
	}
}

// run advances virtual time to until, processing ticks and deliveries in
// time order (ties: deliveries first, then nodes by ID).
func (c *cluster) run(until time.Duration) {
	for {
		ni := -1
		for i, t := range c.nextT {
			if ni < 0 || t < c.nextT[ni] {
				ni = i
			}
		}
		tick := c.nextT[ni]
		if len(c.q) > 0 && c.q[0].at <= tick {
			d := heap.Pop(&c.q).(delivery)
			if d.at > until {
				heap.Push(&c.q, d)
				break
			}
			c.now = d.at
			n := c.node(d.p.To)
			if c.down[d.p.To] || c.cut(d.p.From, d.p.To) {
				continue
			}
			if until := c.stalled[d.p.To]; until > c.now {
				// Waits in the node's inbox, in order, until it runs.
				c.seq++
				heap.Push(&c.q, delivery{at: until, seq: c.seq, p: d.p})
				continue
			}
			n.Step(c.now, d.p)
			if c.trace != nil {
				fmt.Fprintf(c.trace, "t=%v %d→%d %s %s\n", fmtDur(c.now), d.p.From, d.p.To, classes(&d.p), describe(d.p.Payload))
			}
			c.buf = n.Drain(c.buf[:0])
			c.send(c.buf)
		} else {
			if tick > until {
				break
			}
			c.now = tick
			n := c.nodes[ni]
			c.nextT[ni] += c.period
			if c.down[n.ID()] || c.stalled[n.ID()] > c.now {
				continue
			}
			n.Tick(c.now)
			c.buf = n.Drain(c.buf[:0])
			c.send(c.buf)
		}
		c.events++
		if c.check {
			for _, n := range c.nodes {
				if err := checkIndex(n); err != nil {
					c.fail("%v", err)
				}
			}
			c.record()
			c.checkInvariants()
		}
	}
	c.now = until
}

// describe summarises a payload's frames: type(entries) ....
func describe(p []byte) string {
	fr, err := wire.OpenFrames(p)
	if err != nil {
		return "malformed: " + err.Error()
	}
	var parts []string
	for {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		var ids []string
		switch t {
		case wire.TypeUpdates:
			var m wire.Updates
			_ = m.Decode(body)
			for _, u := range m.Entries {
				switch {
				case u.Base == 0:
					ids = append(ids, fmt.Sprintf("%v@%d full", u.ID, u.Version))
				case u.Base == u.Version:
					ids = append(ids, fmt.Sprintf("%v@%d keepalive", u.ID, u.Version))
				default:
					ids = append(ids, fmt.Sprintf("%v@%d/%d", u.ID, u.Version, u.Base))
				}
			}
		case wire.TypeAcks:
			var m wire.Acks
			_ = m.Decode(body)
			for _, a := range m.Entries {
				ids = append(ids, fmt.Sprintf("%v@%d", a.ID, a.Version))
			}
		case wire.TypeWrites:
			var m wire.Writes
			_ = m.Decode(body)
			for _, w := range m.Entries {
				ids = append(ids, fmt.Sprintf("%v#%d", w.ID, w.Seq))
			}
			if m.Hops > 0 {
				ids = append(ids, fmt.Sprintf("by %d hop %d", m.Writer, m.Hops))
			}
		case wire.TypeWriteAcks:
			var m wire.WriteAcks
			_ = m.Decode(body)
			for _, a := range m.Entries {
				ids = append(ids, fmt.Sprintf("%v#%d", a.ID, a.Seq))
			}
		case wire.TypeMigrate:
			var m wire.Migrate
			_ = m.Decode(body)
			for _, e := range m.Entries {
				ids = append(ids, fmt.Sprintf("%v@e%s/v%d holders%d", e.ID, fmtEpoch(e.Epoch), e.Version, len(e.Holders)))
			}
		case wire.TypeMigrateAck, wire.TypeRelease:
			var m wire.Epochs
			_ = m.Decode(body)
			for _, e := range m.Entries {
				ids = append(ids, fmt.Sprintf("%v@e%s", e.ID, fmtEpoch(e.Epoch)))
			}
		case wire.TypeWhere:
			var m wire.Where
			_ = m.Decode(body)
			for _, l := range m.Entries {
				if l.Gone {
					ids = append(ids, fmt.Sprintf("%v gone", l.ID))
				} else {
					ids = append(ids, fmt.Sprintf("%v@e%s→%d", l.ID, fmtEpoch(l.Epoch), l.Node))
				}
			}
		case wire.TypeBackup:
			var m wire.Backup
			_ = m.Decode(body)
			for _, b := range m.Entries {
				f := ""
				if b.Fence != 0 {
					f = fmt.Sprintf(" fence %d", b.Fence)
				}
				ids = append(ids, fmt.Sprintf("%v@e%s/v%d%s", b.ID, fmtEpoch(b.Epoch), b.Version, f))
			}
		case wire.TypeClaim:
			var m wire.Claims
			_ = m.Decode(body)
			for _, c := range m.Entries {
				ids = append(ids, fmt.Sprintf("%v@e%s/v%d %s", c.ID, fmtEpoch(c.Epoch), c.Version, [...]string{"ask", "granted", "refused"}[c.Answer]))
			}
		case wire.TypeBackupAck:
			var m wire.BackupAcks
			_ = m.Decode(body)
			for _, a := range m.Entries {
				ids = append(ids, fmt.Sprintf("%v@e%s/v%d", a.ID, fmtEpoch(a.Epoch), a.Version))
			}
		case wire.TypeProbe, wire.TypeProbeReply:
			var m wire.Probe
			_ = m.Decode(body)
			for _, l := range m.Entries {
				ids = append(ids, fmt.Sprintf("%d:%v", l.Node, l.Alive))
			}
		case wire.TypeRegister, wire.TypeDrop, wire.TypeDelete, wire.TypeDormant:
			var m wire.IDs
			_ = m.Decode(body)
			for _, id := range m.IDs {
				ids = append(ids, id.String())
			}
		case wire.TypeHandoff:
			var m wire.Handoffs
			_ = m.Decode(body)
			for _, h := range m.Entries {
				ids = append(ids, h.ID.String())
			}
		case wire.TypePublish, wire.TypeMatch:
			var m wire.Pubs
			_ = m.Decode(body)
			for _, pb := range m.Pubs {
				s := fmt.Sprintf("%v@%d(%g,%g)", pb.ID, pb.Node, pb.Loc[0], pb.Loc[1])
				if len(pb.Skip) > 0 {
					s += fmt.Sprintf("-skip%v", pb.Skip)
				}
				ids = append(ids, s)
			}
		case wire.TypeSubscribe:
			var m wire.Subscribe
			_ = m.Decode(body)
			for _, b := range m.Boxes {
				ids = append(ids, fmt.Sprintf("[%g,%g]x[%g,%g]", b.Min[0], b.Max[0], b.Min[1], b.Max[1]))
			}
		}
		parts = append(parts, fmt.Sprintf("%v[%s]", t, strings.Join(ids, " ")))
	}
	return fmt.Sprintf("%s %dB", strings.Join(parts, " "), len(p))
}

// fmtEpoch prints an epoch as counter.node (the node that began it).
func fmtEpoch(e uint32) string { return fmt.Sprintf("%d.%d", e>>16, e&0xffff) }

func fmtDur(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// record remembers every primary state by version, notes new objects and
// detects deletions (a known object with no primary anywhere).
func (c *cluster) record() {
	seen := map[world.ObjectID]bool{}
	backed := map[world.ObjectID]bool{}
	for _, n := range c.up() {
		for _, id := range n.BackedUp(nil) {
			backed[id] = true
		}
		infos := n.Objects(nil)
		var prims []replica.Info
		for _, in := range infos {
			if in.Primary {
				prims = append(prims, in)
			}
		}
		if got := n.Primaries(nil); !slices.Equal(got, prims) {
			c.fail("node %d: Primaries %v, Objects' primaries %v", n.ID(), got, prims)
		}
		for _, in := range infos {
			if !in.Primary {
				c.seenRep++
				continue
			}
			seen[in.ID] = true
			c.live[in.ID] = true
			delete(c.limbo, in.ID)
			// A deletion by a primary a newer epoch had replaced did not
			// take: the object lives on.
			if ep, _ := n.Epoch(in.ID); !c.gone[in.ID] || ep > c.goneEp[in.ID] {
				// (Or a migration in flight that lost its only copy to a
				// crash, delivered: it was not gone either.)
				delete(c.deleted, in.ID)
				delete(c.gone, in.ID)
			}
			h := c.hist[in.ID]
			if h == nil {
				h = history{}
				c.hist[in.ID] = h
			}
			ep, _ := n.Epoch(in.ID)
			if k := (verAt{in.Version, n.ID(), ep}); h[k] == nil {
				h[k] = in.Synced.Clone()
			}
		}
	}
	for id := range c.live {
		if seen[id] {
			continue
		}
		if backed[id] && !c.gone[id] {
			if _, ok := c.limbo[id]; !ok {
				c.limbo[id] = c.now
			}
			continue
		}
		delete(c.live, id)
		if c.lost[id] {
			continue // its node crashed with it
		}
		c.deleted[id] = c.now
	}
}

// restart brings crashed node id back as its next incarnation, empty.
func (c *cluster) restart(id wire.NodeID) {
	old := c.node(id)
	c.nodes[id-1] = c.mk(id, old.Incarnation()+1)
	c.down[id] = false
}

// del deletes primary id on node n, as the test's own deletion.
func (c *cluster) del(n *Node, id world.ObjectID) error {
	c.gone[id] = true
	c.goneEp[id], _ = n.Epoch(id)
	return n.Delete(c.now, id)
}

// heal ends the partition.
func (c *cluster) heal() {
	clear(c.side)
	c.healed = c.now
}

// crash stops node id: the objects it held the primaries of are lost
// unless a backup takes them over.
func (c *cluster) crash(id wire.NodeID) {
	for _, in := range c.node(id).Primaries(nil) {
		c.lost[in.ID] = true
	}
	c.down[id] = true
}

// epochAt returns the epoch of the primary of id on node at (0: none).
func (c *cluster) epochAt(id world.ObjectID, at wire.NodeID) uint32 {
	if at < 1 || int(at) > len(c.nodes) || c.down[at] {
		return 0
	}
	n := c.node(at)
	if _, primary, ok := n.Lookup(id); !ok || !primary {
		return 0
	}
	ep, _ := n.Epoch(id)
	return ep
}

// verAt is a version of an object as the primary on node at made it at
// an epoch (a node may hold the primary of two lineages in turn: cut off,
// then given the object back; their versions may coincide).
type verAt struct {
	v     uint64
	at    wire.NodeID
	epoch uint32
}

type history map[verAt]*world.State

// find returns node at's state of version v: the one equal to want if
// several epochs of at made a version v.
func (h history) find(v uint64, at wire.NodeID, want *world.State) (*world.State, bool) {
	var found *world.State
	for k, st := range h {
		if k.v == v && k.at == at {
			if st.Equal(want) {
				return st, true
			}
			found = st
		}
	}
	return found, found != nil
}

// maxLatency is the longest a packet can take.
func (c *cluster) maxLatency() time.Duration {
	var m time.Duration
	for _, r := range c.latency {
		for _, l := range r {
			m = max(m, l)
		}
	}
	return m + c.jitter
}

// checkInvariants checks, at the current event: exactly one primary per
// live object; every replica's synced state is a past state of its
// primary; no replica outlives its object by more than the replica timeout
// plus one frame and the longest delivery.
func (c *cluster) checkInvariants() {
	c.tb.Helper()
	type key struct {
		id    world.ObjectID
		epoch uint32
	}
	primaries := map[key]wire.NodeID{}
	for _, n := range c.up() {
		for _, in := range n.Primaries(nil) {
			ep, _ := n.Epoch(in.ID)
			k := key{in.ID, ep}
			if other, dup := primaries[k]; dup {
				c.fail("object %v has primaries at epoch %d on nodes %d and %d", in.ID, ep, other, n.ID())
			}
			primaries[k] = n.ID()
		}
	}
	for id, since := range c.limbo {
		// A partition may hold a migration up, or keep a majority from
		// agreeing on a death: the budget runs from the heal.
		if len(c.side) > 0 {
			continue
		}
		if c.now-max(since, c.healed) > c.budget {
			c.fail("object %v has had no primary since %v", id, since)
		}
	}
	for _, n := range c.up() {
		rc := n.Config().Replica
		for _, in := range n.Objects(nil) {
			if in.Primary || in.Version == 0 {
				continue
			}
			st, ok := c.hist[in.ID].find(in.Version, in.From, in.Synced)
			if _, moving := c.limbo[in.ID]; !ok && moving {
				continue // a version made as the primary left, not yet installed
			}
			if ep, _ := n.Epoch(in.ID); !ok && ep != c.epochAt(in.ID, in.From) {
				// A lineage in.From does not hold: its primary is on its way
				// there (in.From may still hold an older epoch's, cut off
				// and not yet replaced), or in.From took the object over at
				// another epoch meanwhile and refuses it (the replica then
				// takes in.From's first state whole).
				continue
			}
			if !ok {
				ep, _ := n.Epoch(in.ID)
				c.fail("node %d: replica %v (epoch %s) at version %d from node %d (epoch %s there), which its primary never had", n.ID(), in.ID, fmtEpoch(ep), in.Version, in.From, fmtEpoch(c.epochAt(in.ID, in.From)))
			} else if !st.Equal(in.Synced) {
				c.fail("node %d: replica %v version %d differs from the primary's state of that version", n.ID(), in.ID, in.Version)
			}
			if d, dead := c.deleted[in.ID]; dead && c.now > d+rc.ReplicaTimeout+c.period+c.maxLatency() {
				c.fail("node %d: replica %v outlived its object (deleted at %v) until %v", n.ID(), in.ID, d, c.now)
			}
		}
	}
}

func (c *cluster) fail(format string, args ...any) {
	c.tb.Helper()
	c.tb.Fatalf("t=%v event %d: %s", c.now, c.events, fmt.Sprintf(format, args...))
}

// checkConverged checks that every replica has its primary's newest
// version and state.
func (c *cluster) checkConverged() {
	c.tb.Helper()
	prim := map[world.ObjectID]replica.Info{}
	for _, n := range c.nodes {
		for _, in := range n.Objects(nil) {
			if in.Primary {
				prim[in.ID] = in
			}
		}
	}
	for _, n := range c.nodes {
		for _, in := range n.Objects(nil) {
			if in.Primary {
				continue
			}
			p, ok := prim[in.ID]
			if !ok {
				c.fail("node %d holds replica %v of a deleted object after the quiet period", n.ID(), in.ID)
			}
			if in.Version != p.Version || !in.State.Equal(p.State) {
				c.fail("node %d: replica %v at version %d, primary at %d (states equal: %v)", n.ID(), in.ID, in.Version, p.Version, in.State.Equal(p.State))
			}
		}
	}
}

// dump writes every node's objects, sorted, one per line.
func (c *cluster) dump(w io.Writer) {
	for _, n := range c.nodes {
		fmt.Fprintf(w, "node %d:", n.ID())
		infos := n.Objects(nil)
		if len(infos) == 0 {
			fmt.Fprint(w, " (empty)")
		}
		fmt.Fprintln(w)
		for _, in := range infos {
			role := "primary"
			if !in.Primary {
				role = fmt.Sprintf("replica of node %d", in.From)
			}
			fmt.Fprintf(w, "  %v %s %s v%d produced %s: %s\n", in.ID, in.State.Schema().Name(), role, in.Version,
				fmtDur(in.Produced), fmtState(in.State))
		}
	}
}

func fmtState(st *world.State) string {
	s := st.Schema()
	var parts []string
	for i := range s.NumFields() {
		f := s.FieldAt(i)
		switch f.Type {
		case world.Float:
			parts = append(parts, fmt.Sprintf("%s=%g", f.Name, st.Float(i)))
		case world.Ref:
			parts = append(parts, fmt.Sprintf("%s=%v", f.Name, st.Ref(i)))
		default:
			parts = append(parts, fmt.Sprintf("%s=%d", f.Name, st.Int(i)))
		}
	}
	return strings.Join(parts, " ")
}

func (c *cluster) stats(w io.Writer) {
	names := make([]string, wire.NumClasses)
	for i := range names {
		names[i] = wire.Class(i).String()
	}
	for i, n := range c.nodes {
		var parts []string
		for cl := range wire.NumClasses {
			if c.pkts[i][cl] > 0 {
				parts = append(parts, fmt.Sprintf("%s %d pkts %d B", names[cl], c.pkts[i][cl], c.traffic[i][cl]))
			}
		}
		sort.Strings(parts)
		st := n.Stats()
		fmt.Fprintf(w, "node %d out: %s; malformed in %d\n", n.ID(), strings.Join(parts, ", "), st.Malformed)
	}
}

// classes names a packet's traffic classes: "update", or for a packet of
// several (wire.Packet.Parts) "update+discovery".
func classes(p *wire.Packet) string {
	if p.Parts == nil {
		return p.Class.String()
	}
	var names []string
	for c, n := range p.ClassSizes(0) {
		if n > 0 {
			names = append(names, wire.Class(c).String())
		}
	}
	return strings.Join(names, "+")
}
