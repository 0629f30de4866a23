package ring_test

import (
	"container/heap"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

// cluster is a small deterministic discrete-event network for ring nodes:
// packets wait in a priority queue for a per-pair latency drawn from the
// seed, every live node ticks every tickEvery, and crashed nodes neither
// tick nor receive. Everything is a function of the seed.
type cluster struct {
	t         testing.TB
	seed      uint64
	rng       *rand.Rand
	now       time.Duration
	tickEvery time.Duration
	nextTick  time.Duration
	cfg       func(id wire.NodeID, r *rand.Rand) ring.Config

	nodes []*ring.Node
	alive []bool
	lat   map[[2]wire.NodeID]time.Duration
	loss  float64 // probability that a packet is lost
	lost  uint64
	rtt   *geo.Matrix // if set, latencies are PlanetLab RTT/2 between hosts
	host  []int

	// routeCheck's last measurements: each route's delivery latency and
	// the one-way latency straight from its origin to its owner.
	lastLat, lastDirect []time.Duration

	q   pq
	seq uint64

	pkts   []wire.Packet
	events []ring.Event

	// delivered[msg] lists the nodes a routed payload (8-byte id) reached.
	delivered map[uint64][]deliv
	onDeliver func(n *ring.Node, e ring.Event)
	log       []logged // membership events (not deliveries)
	isolated  []wire.NodeID
	debug     func()

	contactEvery, nextContacts time.Duration // AddContact duty; 0: off
	sent                       uint64        // packets sent
	bytes                      [wire.NumClasses]uint64
	malformed                  int
}

type logged struct {
	node wire.NodeID
	at   time.Duration
	e    ring.Event
}

type deliv struct {
	node wire.NodeID
	hops int
	walk bool
	at   time.Duration
}

type item struct {
	at  time.Duration
	seq uint64
	p   wire.Packet
}

type pq []item

func (q pq) Len() int { return len(q) }
func (q pq) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q pq) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *pq) Push(x any)   { *q = append(*q, x.(item)) }
func (q *pq) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func testConfig(id wire.NodeID, r *rand.Rand) ring.Config { return ring.DefaultConfig(id, r) }

func newCluster(t testing.TB, seed uint64, cfg func(wire.NodeID, *rand.Rand) ring.Config) *cluster {
	if cfg == nil {
		cfg = testConfig
	}
	return &cluster{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0x72696e67)), tickEvery: 50 * time.Millisecond,
		contactEvery: 10 * time.Second,
		cfg:          cfg, lat: map[[2]wire.NodeID]time.Duration{}, delivered: map[uint64][]deliv{}}
}

// add creates a node (not yet in the ring) and returns its ID.
func (c *cluster) add() wire.NodeID {
	id := wire.NodeID(len(c.nodes))
	n, err := ring.New(c.cfg(id, rand.New(rand.NewPCG(c.seed, uint64(id)+1))))
	if err != nil {
		c.t.Fatalf("seed %d: %v", c.seed, err)
	}
	c.nodes = append(c.nodes, n)
	c.alive = append(c.alive, true)
	return id
}

// usePlanetLab places node i at a distinct random host of a PlanetLab
// slice (hosts are reused past 490 nodes): a packet takes half the
// measured RTT.
func (c *cluster) usePlanetLab(m *geo.Matrix) {
	c.rtt = m
	c.host = c.rng.Perm(m.Rows())
}

func (c *cluster) latency(a, b wire.NodeID) time.Duration {
	if a > b {
		a, b = b, a
	}
	if c.rtt != nil {
		ha, hb := c.host[int(a)%len(c.host)], c.host[int(b)%len(c.host)]
		if ha == hb {
			return 500 * time.Microsecond
		}
		return time.Duration(c.rtt.At(ha, hb) / 2 * float64(time.Millisecond))
	}
	k := [2]wire.NodeID{a, b}
	d, ok := c.lat[k]
	if !ok {
		d = time.Duration(5+c.rng.IntN(145)) * time.Millisecond
		c.lat[k] = d
	}
	return d
}

// flush takes node id's packets and events.
func (c *cluster) flush(id wire.NodeID) {
	n := c.nodes[id]
	c.pkts = n.Drain(c.pkts[:0])
	for _, p := range c.pkts {
		if c.loss > 0 && c.rng.Float64() < c.loss {
			c.lost++
			continue
		}
		c.sent++
		c.bytes[p.Class] += uint64(len(p.Payload))
		c.seq++
		heap.Push(&c.q, item{at: c.now + c.latency(p.From, p.To), seq: c.seq, p: p})
	}
	c.events = n.Events(c.events[:0])
	for _, e := range c.events {
		if e.Kind == ring.EventDelivered && len(e.Data) == 8 {
			id := binary.BigEndian.Uint64(e.Data)
			c.delivered[id] = append(c.delivered[id], deliv{node: n.ID(), hops: e.Hops, walk: e.Walk, at: c.now})
		}
		if c.onDeliver != nil && e.Kind == ring.EventDelivered {
			c.onDeliver(n, e)
		}
		if e.Kind != ring.EventDelivered {
			c.log = append(c.log, logged{n.ID(), c.now, e})
		}
		if e.Kind == ring.EventIsolated {
			c.isolated = append(c.isolated, n.ID())
		}
	}
}

// run advances the simulation to time until.
func (c *cluster) run(until time.Duration) {
	for {
		next := c.nextTick
		if c.q.Len() > 0 && c.q[0].at < next {
			next = c.q[0].at
		}
		if next > until {
			c.now = until
			return
		}
		c.now = next
		if c.q.Len() > 0 && c.q[0].at == next {
			it := heap.Pop(&c.q).(item)
			to := it.p.To
			if int(to) >= len(c.nodes) || !c.alive[to] {
				continue
			}
			fr, err := wire.OpenFrames(it.p.Payload)
			if err != nil {
				c.t.Fatalf("seed %d: bad payload: %v", c.seed, err)
			}
			for {
				typ, body, ok := fr.Next()
				if !ok {
					break
				}
				if err := c.nodes[to].Step(c.now, it.p.From, typ, body); err != nil {
					c.malformed++
				}
			}
			c.flush(to)
			c.rejoinIsolated()
			continue
		}
		for i, n := range c.nodes {
			if c.alive[i] {
				n.Tick(c.now)
				c.flush(wire.NodeID(i))
			}
		}
		c.nextTick += c.tickEvery
		c.rejoinIsolated()
		if c.contactEvery > 0 && c.now >= c.nextContacts {
			// The driver's duty: now and then, each member hears of a
			// random other member (AddContact).
			c.nextContacts = c.now + c.contactEvery
			ms := c.members()
			for _, m := range ms {
				o := ms[c.rng.IntN(len(ms))]
				m.AddContact(ring.Peer{ID: o.ID(), Key: o.Key()})
			}
		}
	}
}

// rejoinIsolated does the driver's duty for EventIsolated: the node leaves
// its one-node ring and joins again through a member of the big one.
func (c *cluster) rejoinIsolated() {
	for len(c.isolated) > 0 {
		id := c.isolated[0]
		c.isolated = c.isolated[1:]
		n := c.nodes[id]
		var seeds []wire.NodeID
		for _, m := range c.members() {
			if m.ID() != id {
				seeds = append(seeds, m.ID())
			}
		}
		if !c.alive[id] || !n.Member() || len(seeds) == 0 {
			continue
		}
		if err := n.Leave(c.now); err != nil {
			c.t.Fatalf("seed %d: %v", c.seed, err)
		}
		if err := n.Join(c.now, seeds[c.rng.IntN(len(seeds))], n.Key()); err != nil {
			c.t.Fatalf("seed %d: %v", c.seed, err)
		}
		c.flush(id)
	}
}

func (c *cluster) members() []*ring.Node {
	var ms []*ring.Node
	for i, n := range c.nodes {
		if c.alive[i] && n.Member() {
			ms = append(ms, n)
		}
	}
	return ms
}

// grow creates the ring with node 0 and joins n-1 more, one every gap,
// each through a random member, then runs settle more.
func (c *cluster) grow(n int, gap, settle time.Duration) {
	first := c.add()
	if err := c.nodes[first].Create(c.now, c.rng.Uint64()); err != nil {
		c.t.Fatal(err)
	}
	c.flush(first)
	for range n - 1 {
		c.joinOne()
		c.run(c.now + gap)
	}
	c.run(c.now + settle)
}

func (c *cluster) joinOne() wire.NodeID {
	ms := c.members()
	seed := ms[c.rng.IntN(len(ms))].ID()
	id := c.add()
	if err := c.nodes[id].Join(c.now, seed, c.rng.Uint64()); err != nil {
		c.t.Fatalf("seed %d: %v", c.seed, err)
	}
	c.flush(id)
	return id
}

// truth is the sorted list of live members' keys, and the owner of a key.
type truth struct {
	keys []uint64
	ids  []wire.NodeID
}

func (c *cluster) truth() truth {
	ms := c.members()
	slices.SortFunc(ms, func(a, b *ring.Node) int {
		if a.Key() < b.Key() {
			return -1
		}
		if a.Key() > b.Key() {
			return 1
		}
		return 0
	})
	var tr truth
	for _, m := range ms {
		tr.keys = append(tr.keys, m.Key())
		tr.ids = append(tr.ids, m.ID())
	}
	return tr
}

// owner returns the index of the member owning k: the first key >= k,
// wrapping to the smallest.
func (tr truth) owner(k uint64) int {
	i, _ := slices.BinarySearch(tr.keys, k)
	if i == len(tr.keys) {
		i = 0
	}
	return i
}

// checkRing verifies that every live member knows its true predecessor
// (so the ranges partition the key space: every key owned by exactly one
// live node) and its true successor list.
func (c *cluster) checkRing(r int) error {
	tr := c.truth()
	m := len(tr.keys)
	for i := range m {
		n := c.nodes[tr.ids[i]]
		p, ok := n.Pred()
		want := tr.ids[(i-1+m)%m]
		if !ok || p.ID != want || p.Key != tr.keys[(i-1+m)%m] {
			return fmt.Errorf("node %d (key %#x): predecessor %+v known %v, want %d", n.ID(), n.Key(), p, ok, want)
		}
		succs := n.Succs(nil)
		wantLen := min(r, m-1)
		if len(succs) != wantLen {
			return fmt.Errorf("node %d: %d successors %v, want %d", n.ID(), len(succs), succs, wantLen)
		}
		for j, s := range succs {
			w := (i + 1 + j) % m
			if s.ID != tr.ids[w] || s.Key != tr.keys[w] {
				return fmt.Errorf("node %d: successor %d is %+v, want %d", n.ID(), j, s, tr.ids[w])
			}
		}
	}
	// Ranges partition the ring: each key owned by exactly one member.
	for range 200 {
		k := c.rng.Uint64()
		owners := 0
		for _, id := range tr.ids {
			if c.nodes[id].Owns(k) {
				owners++
				if id != tr.ids[tr.owner(k)] {
					return fmt.Errorf("key %#x owned by %d, want %d", k, id, tr.ids[tr.owner(k)])
				}
			}
		}
		if owners != 1 {
			return fmt.Errorf("key %#x has %d owners", k, owners)
		}
	}
	return nil
}

// routeCheck routes count payloads from random members to keys drawn by
// key, runs until they arrive, and checks each reached exactly its true
// owner. It returns the hop counts.
func (c *cluster) routeCheck(count int, key func(from int) uint64, spread time.Duration) ([]int, error) {
	tr := c.truth()
	type want struct {
		owner wire.NodeID
		key   uint64
		from  wire.NodeID
		at    time.Duration
	}
	wants := map[uint64]want{}
	base := uint64(len(c.delivered)) + 1<<40
	step := spread / time.Duration(max(count, 1))
	for i := range count {
		o := c.rng.IntN(len(tr.ids))
		k := key(o)
		id := base + uint64(i)
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], id)
		from := tr.ids[o]
		if err := c.nodes[from].Route(c.now, k, wire.ClassDiscovery, b[:]); err != nil {
			return nil, err
		}
		c.flush(from)
		wants[id] = want{tr.ids[tr.owner(k)], k, from, c.now}
		if step > 0 {
			c.run(c.now + step)
		}
	}
	for deadline := c.now + time.Minute; c.now < deadline; {
		c.run(c.now + time.Second)
		done := true
		for id := range wants {
			if len(c.delivered[id]) == 0 {
				done = false
				break
			}
		}
		if done {
			break
		}
	}
	c.run(c.now + time.Second) // room for duplicates to show
	hops := make([]int, 0, count)
	c.lastLat, c.lastDirect = c.lastLat[:0], c.lastDirect[:0]
	for i := range count {
		id := base + uint64(i)
		w := wants[id]
		d := c.delivered[id]
		if len(d) != 1 || d[0].node != w.owner {
			return nil, fmt.Errorf("message %d from %d to key %#x: delivered %+v, want once at %d", i, w.from, w.key, d, w.owner)
		}
		hops = append(hops, d[0].hops)
		c.lastLat = append(c.lastLat, d[0].at-w.at)
		if w.from != w.owner {
			c.lastDirect = append(c.lastDirect, c.latency(w.from, w.owner))
		} else {
			c.lastDirect = append(c.lastDirect, 0)
		}
	}
	return hops, nil
}

func hopStats(h []int) (mean float64, p99 int) {
	if len(h) == 0 {
		return 0, 0
	}
	s := slices.Clone(h)
	slices.Sort(s)
	sum := 0
	for _, x := range s {
		sum += x
	}
	return float64(sum) / float64(len(s)), s[min(len(s)-1, len(s)*99/100)]
}

// settle runs the cluster in steps of a second until no node is joining
// and checkRing passes, for at most limit; it returns how long it took.
func (c *cluster) settle(r int, limit time.Duration) (time.Duration, error) {
	start := c.now
	for {
		joining := 0
		for i, n := range c.nodes {
			if c.alive[i] && n.Joining() {
				joining++
			}
		}
		err := c.checkRing(r)
		if joining == 0 && err == nil {
			return c.now - start, nil
		}
		if c.now-start >= limit {
			if err == nil {
				err = fmt.Errorf("%d nodes still joining", joining)
			}
			return c.now - start, fmt.Errorf("not stable after %v: %w", limit, err)
		}
		c.run(c.now + time.Second)
	}
}

// rangeCheck routes a range message from a random member over [lo, hi] and
// checks that exactly the members whose ranges intersect it got it, once.
func (c *cluster) rangeCheck(lo, hi uint64) error {
	tr := c.truth()
	id := uint64(len(c.delivered)) + 1<<41
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], id)
	from := tr.ids[c.rng.IntN(len(tr.ids))]
	if err := c.nodes[from].RouteRange(c.now, lo, hi, wire.ClassDiscovery, b[:]); err != nil {
		return err
	}
	c.flush(from)
	c.run(c.now + 10*time.Second)
	want := map[wire.NodeID]bool{}
	q := ring.Range{Lo: lo, Hi: hi}
	m := len(tr.keys)
	for i := range m {
		r := ring.Range{Lo: tr.keys[(i-1+m)%m] + 1, Hi: tr.keys[i]}
		if m == 1 || r.Contains(q.Lo) || q.Contains(r.Lo) {
			want[tr.ids[i]] = true
		}
	}
	got := map[wire.NodeID]int{}
	for _, d := range c.delivered[id] {
		got[d.node]++
	}
	for n := range want {
		if got[n] != 1 {
			return fmt.Errorf("range %v from %d: node %d got it %d times, want once (%d of %d nodes want it)", q, from, n, got[n], len(want), m)
		}
	}
	for n, k := range got {
		if !want[n] {
			return fmt.Errorf("range %v from %d: node %d got it %d times, want none", q, from, n, k)
		}
	}
	return nil
}

// settleRing is settle without waiting for joiners: the members' ring is
// consistent.
func (c *cluster) settleRing(r int, limit time.Duration) (time.Duration, error) {
	start := c.now
	for {
		err := c.checkRing(r)
		if err == nil {
			return c.now - start, nil
		}
		if c.now-start >= limit {
			return c.now - start, fmt.Errorf("not stable after %v: %w", limit, err)
		}
		c.run(c.now + time.Second)
	}
}

// quantile returns the q-quantile of ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
