package ring_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/ring"
	"github.com/overworld/overworld/wire"
)

func TestConfigValidate(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	good := ring.DefaultConfig(1, r)
	if _, err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := ring.LANConfig(1, r).Validate(); err != nil {
		t.Fatal(err)
	}
	v, err := (ring.Config{ID: 3, Rand: r}).Validate()
	if err != nil || v.Succs != 4 || v.Links != 4 || v.LoadWindow != 30*time.Second || v.BalanceCooldown != time.Minute {
		t.Fatalf("zero config: %+v, %v", v, err)
	}
	bad := map[string]func(*ring.Config){
		"no rand":            func(c *ring.Config) { c.Rand = nil },
		"negative probe":     func(c *ring.Config) { c.Probe = -time.Second },
		"fail before probe":  func(c *ring.Config) { c.FailAfter = c.Probe },
		"succs 33":           func(c *ring.Config) { c.Succs = 33 },
		"succs negative":     func(c *ring.Config) { c.Succs = -1 },
		"links 65":           func(c *ring.Config) { c.Links = 65 },
		"cache 5000":         func(c *ring.Config) { c.CacheSize = 5000 },
		"light 1":            func(c *ring.Config) { c.Light = 1 },
		"heavy 1":            func(c *ring.Config) { c.Heavy = 0.9 },
		"min load negative":  func(c *ring.Config) { c.MinLoad = -1 },
		"window under 1s":    func(c *ring.Config) { c.LoadWindow = time.Millisecond },
		"max hops negative":  func(c *ring.Config) { c.MaxHops = -1 },
		"negative cache ttl": func(c *ring.Config) { c.CacheTTL = -1 },
	}
	for name, f := range bad {
		c := good
		f(&c)
		if _, err := c.Validate(); !errors.Is(err, ring.ErrConfig) {
			t.Errorf("%s: error %v, want ErrConfig", name, err)
		}
		if _, err := ring.New(c); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}

func TestAPIErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n, err := ring.New(ring.DefaultConfig(1, r))
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Route(0, 5, wire.ClassDiscovery, nil); !errors.Is(err, ring.ErrNotMember) {
		t.Errorf("route on an idle node: %v", err)
	}
	if err := n.Leave(0); !errors.Is(err, ring.ErrState) {
		t.Errorf("leave on an idle node: %v", err)
	}
	if err := n.Join(0, 1, 5); !errors.Is(err, ring.ErrState) {
		t.Errorf("join through itself: %v", err)
	}
	if err := n.Create(0, 42); err != nil {
		t.Fatal(err)
	}
	if err := n.Create(0, 43); !errors.Is(err, ring.ErrState) {
		t.Errorf("second create: %v", err)
	}
	if err := n.Join(0, 2, 43); !errors.Is(err, ring.ErrState) {
		t.Errorf("join on a member: %v", err)
	}
	if err := n.Route(0, 5, wire.Class(9), nil); !errors.Is(err, ring.ErrPayload) {
		t.Errorf("bad class: %v", err)
	}
	if err := n.Route(0, 5, wire.ClassDiscovery, make([]byte, 5000)); !errors.Is(err, ring.ErrPayload) {
		t.Errorf("huge payload: %v", err)
	}
	if st := n.Stats(); st.Routed != 0 {
		t.Errorf("rejected routes counted: %+v", st)
	}
	// Alone, the node owns everything and delivers to itself in 0 hops.
	if err := n.RouteRange(0, 10, 5, wire.ClassMatching, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	ev := n.Events(nil)
	if len(ev) != 2 || ev[0].Kind != ring.EventJoined || ev[1].Kind != ring.EventDelivered || ev[1].Hops != 0 ||
		string(ev[1].Data) != "hi" || ev[1].Class != wire.ClassMatching || ev[1].Range != (ring.Range{Lo: 10, Hi: 5}) {
		t.Errorf("events %+v", ev)
	}
	if got := n.Drain(nil); len(got) != 0 {
		t.Errorf("a lone node sent %v", got)
	}
}

// snapshot is everything observable about a node's ring state.
type snapshot struct {
	Member, Joining bool
	Key             uint64
	Pred            ring.Peer
	HasPred         bool
	Range           ring.Range
	Succs, Links    []ring.Peer
	Cache           int
}

func snap(n *ring.Node) snapshot {
	p, ok := n.Pred()
	r, _ := n.Range()
	return snapshot{n.Member(), n.Joining(), n.Key(), p, ok, r, n.Succs(nil), n.Links(nil), n.CacheLen()}
}

// TestBadMessages feeds a member of a stable ring arbitrary bytes for every
// ring message type and valid messages that do not fit its state: each is
// dropped and counted, changes nothing and sends nothing.
func TestBadMessages(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.grow(8, 30*time.Millisecond, 5*time.Second)
	if _, err := c.settle(4, time.Minute); err != nil {
		t.Fatal(err)
	}
	n := c.members()[0]
	c.flush(n.ID())
	before := snap(n)
	st := n.Stats()
	r := rand.New(rand.NewPCG(9, 9))
	malformed := 0
	for typ := wire.TypeRingRoute; typ <= wire.TypeRingSplitReply; typ++ {
		for range 300 {
			body := make([]byte, r.IntN(24))
			for i := range body {
				body[i] = byte(r.Uint32())
			}
			if err := n.Check(typ, body); err == nil {
				continue // valid by chance: not a malformed input
			}
			if err := n.Step(c.now, 5, typ, body); !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("%v %x: error %v, want ErrMalformed", typ, body, err)
			}
			malformed++
		}
	}
	if err := n.Step(c.now, 5, wire.TypeUpdates, []byte{0}); !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("non-ring frame: %v", err)
	}
	malformed++
	other := c.members()[3]
	unexpected := []struct {
		from wire.NodeID
		typ  wire.Type
		body []byte
	}{
		{other.ID(), wire.TypeRingJoinReply, wire.AppendRingJoinReply(nil, &wire.RingJoinReply{Accepted: true, Key: 7})},
		{other.ID(), wire.TypeRingStabilizeReply, wire.AppendRingNeighbours(nil, wire.TypeRingStabilizeReply, &wire.RingNeighbours{Key: other.Key()})},
		{other.ID(), wire.TypeRingSplitReply, wire.AppendRingSplit(nil, wire.TypeRingSplitReply, &wire.RingSplit{OK: true, Key: 1})},
		{other.ID(), wire.TypeRingOwner, wire.AppendRingOwner(nil, &wire.RingOwner{Tag: 1<<32 - 2 /* a density sample */, Key: 5, Owner: ring.Peer{ID: 7, Key: 100}, Lo: 50})},
		{other.ID(), wire.TypeRingOwner, wire.AppendRingOwner(nil, &wire.RingOwner{Owner: ring.Peer{ID: n.ID(), Key: 100}, Lo: 50})},
		{other.ID(), wire.TypeRingOwner, wire.AppendRingOwner(nil, &wire.RingOwner{Tag: 3, Key: 5, Owner: ring.Peer{ID: 7, Key: 100}, Lo: 2})},
		{other.ID(), wire.TypeRingOwner, wire.AppendRingOwner(nil, &wire.RingOwner{Tag: 99, Key: 5, Owner: ring.Peer{ID: 7, Key: 100}, Lo: 2})},
		{999, wire.TypeRingPong, wire.AppendRingProbe(nil, wire.TypeRingPong, &wire.RingProbe{Key: 3})},
		{n.ID(), wire.TypeRingStabilize, wire.AppendRingStabilize(nil, &wire.RingStabilize{Key: 3})},
		{other.ID(), wire.TypeRingStabilize, wire.AppendRingStabilize(nil, &wire.RingStabilize{Key: n.Key()})},
	}
	for _, u := range unexpected {
		fr, err := wire.OpenFrames(append([]byte{wire.Version}, u.body...))
		if err != nil {
			t.Fatal(err)
		}
		typ, body, _ := fr.Next()
		if err := n.Step(c.now, u.from, typ, body); err != nil {
			t.Fatalf("%v: %v", typ, err)
		}
	}
	after := n.Stats()
	if got := after.Malformed - st.Malformed; got != uint64(malformed) {
		t.Errorf("Malformed counted %d, want %d", got, malformed)
	}
	if got := after.Unexpected - st.Unexpected; got != uint64(len(unexpected)) {
		t.Errorf("Unexpected counted %d, want %d", got, len(unexpected))
	}
	if !reflect.DeepEqual(snap(n), before) {
		t.Errorf("state changed:\n%+v\nwant\n%+v", snap(n), before)
	}
	if out := n.Drain(nil); len(out) != 0 {
		t.Errorf("sent %d packets in answer to bad input", len(out))
	}
	// An idle node drops everything.
	idle, _ := ring.New(ring.DefaultConfig(77, r))
	if err := idle.Step(0, 1, wire.TypeRingStabilize, make([]byte, 8)); err != nil || idle.Stats().Unexpected != 1 {
		t.Errorf("idle node: %v %+v", err, idle.Stats())
	}
}

// TestLeaveAndJoinHandoff checks the events of a graceful leave (the leaver
// hands its range to its successor, which grows) and of a join (the owner
// hands the joiner its part), and that the ring is right at once.
func TestLeaveAndJoinHandoff(t *testing.T) {
	c := newCluster(t, 4, nil)
	c.grow(16, 30*time.Millisecond, 5*time.Second)
	if _, err := c.settle(4, time.Minute); err != nil {
		t.Fatal(err)
	}
	tr := c.truth()
	i := 5
	leaver, succ := c.nodes[tr.ids[i]], c.nodes[tr.ids[i+1]]
	rg, _ := leaver.Range()
	c.log = nil
	if err := leaver.Leave(c.now); err != nil {
		t.Fatal(err)
	}
	c.flush(leaver.ID())
	c.run(c.now + 2500*time.Millisecond) // r stabilisation rounds carry the news down the successor lists
	want := []string{
		fmt.Sprintf("%d handoff %v to %d", leaver.ID(), rg, succ.ID()),
		fmt.Sprintf("%d left", leaver.ID()),
		fmt.Sprintf("%d range %v", succ.ID(), ring.Range{Lo: rg.Lo, Hi: succ.Key()}),
	}
	if got := describe(c.log); !reflect.DeepEqual(got, want) {
		t.Errorf("leave events:\n%q\nwant\n%q", got, want)
	}
	if err := c.checkRing(4); err != nil {
		t.Fatalf("just after the leave: %v", err)
	}
	// A join at a key in succ's range: succ hands over (pred, key].
	c.log = nil
	j := c.add()
	key := rg.Lo + (succ.Key()-rg.Lo)/2
	if err := c.nodes[j].Join(c.now, tr.ids[0], key); err != nil {
		t.Fatal(err)
	}
	c.flush(j)
	c.run(c.now + 3*time.Second)
	want = []string{
		fmt.Sprintf("%d handoff %v to %d", succ.ID(), ring.Range{Lo: rg.Lo, Hi: key}, j),
		fmt.Sprintf("%d range %v", succ.ID(), ring.Range{Lo: key + 1, Hi: succ.Key()}),
		fmt.Sprintf("%d joined %v", j, ring.Range{Lo: rg.Lo, Hi: key}),
	}
	if got := describe(c.log); !reflect.DeepEqual(got, want) {
		t.Errorf("join events:\n%q\nwant\n%q", got, want)
	}
	if err := c.checkRing(4); err != nil {
		t.Fatalf("after the join: %v", err)
	}
	if _, err := c.routeCheck(200, func(int) uint64 { return c.rng.Uint64() }, time.Second); err != nil {
		t.Fatal(err)
	}
}

func describe(log []logged) []string {
	var s []string
	for _, l := range log {
		switch l.e.Kind {
		case ring.EventHandoff:
			s = append(s, fmt.Sprintf("%d handoff %v to %d", l.node, l.e.Range, l.e.Peer.ID))
		case ring.EventLeft:
			s = append(s, fmt.Sprintf("%d left", l.node))
		case ring.EventPeerFailed:
			s = append(s, fmt.Sprintf("%d failed %d", l.node, l.e.Peer.ID))
		default:
			s = append(s, fmt.Sprintf("%d %v %v", l.node, l.e.Kind, l.e.Range))
		}
	}
	return s
}

// TestDeterminism runs the same seeded scenario (growth, churn, routes)
// twice and gets identical deliveries, hop counts and final ring states.
func TestDeterminism(t *testing.T) {
	run := func(seed uint64) (map[uint64][]deliv, []snapshot, uint64) {
		c := newCluster(t, seed, nil)
		c.grow(30, 30*time.Millisecond, 3*time.Second)
		c.churn(20*time.Second, 300*time.Millisecond, 10)
		var ss []snapshot
		for _, n := range c.nodes {
			ss = append(ss, snap(n))
		}
		return c.delivered, ss, c.sent
	}
	d1, s1, n1 := run(11)
	d2, s2, n2 := run(11)
	if !reflect.DeepEqual(d1, d2) || !reflect.DeepEqual(s1, s2) || n1 != n2 {
		t.Fatal("same seed, different runs")
	}
	_, s3, _ := run(12)
	if reflect.DeepEqual(s1, s3) {
		t.Fatal("different seeds, same run")
	}
}

// TestJoinPicked checks that a joiner that lets the seed pick its key gets
// the middle of the seed's range when the seed measured no load, and the
// load-weighted median of its sampled keys when it did; and that a joiner
// whose key is taken is given one by the seed instead.
func TestJoinPicked(t *testing.T) {
	c := newCluster(t, 5, nil)
	c.grow(8, 30*time.Millisecond, 5*time.Second)
	if _, err := c.settle(4, time.Minute); err != nil {
		t.Fatal(err)
	}
	seed := c.members()[2]
	rg, _ := seed.Range()
	j := c.add()
	if err := c.nodes[j].JoinPicked(c.now, seed.ID()); err != nil {
		t.Fatal(err)
	}
	c.flush(j)
	c.run(c.now + 3*time.Second)
	if want := rg.Lo - 1 + (rg.Hi-(rg.Lo-1))/2; c.nodes[j].Key() != want || !c.nodes[j].Member() {
		t.Fatalf("picked key %#x member %v, want %#x", c.nodes[j].Key(), c.nodes[j].Member(), want)
	}
	// Load reported on the upper quarter of the seed's (now smaller) range.
	rg, _ = seed.Range()
	q := rg.Lo + (rg.Hi-rg.Lo)/4*3
	for i := range 100 {
		seed.AddLoad(c.now, q+uint64(i), 1)
	}
	j2 := c.add()
	if err := c.nodes[j2].JoinPicked(c.now, seed.ID()); err != nil {
		t.Fatal(err)
	}
	c.flush(j2)
	c.run(c.now + 3*time.Second)
	if k := c.nodes[j2].Key(); k < q || k > q+100 {
		t.Fatalf("picked key %#x, want the load median near %#x", k, q)
	}
	// A taken key: the owner refuses, and the joiner asks the seed to pick.
	j3 := c.add()
	if err := c.nodes[j3].Join(c.now, seed.ID(), c.members()[5].Key()); err != nil {
		t.Fatal(err)
	}
	c.flush(j3)
	c.run(c.now + 3*time.Second)
	if !c.nodes[j3].Member() {
		t.Fatal("joiner with a taken key did not get in")
	}
	if err := c.checkRing(4); err != nil {
		t.Fatal(err)
	}
}

// TestTrafficClasses checks that routed frames travel under their payload's
// class (so routing and matching traffic are accounted apart) and ring
// upkeep under ClassMaintenance.
func TestTrafficClasses(t *testing.T) {
	c := newCluster(t, 6, nil)
	c.grow(16, 30*time.Millisecond, 5*time.Second)
	if _, err := c.settle(4, time.Minute); err != nil {
		t.Fatal(err)
	}
	if c.bytes[wire.ClassMatching] != 0 || c.bytes[wire.ClassDiscovery] != 0 || c.bytes[wire.ClassMaintenance] == 0 {
		t.Fatalf("idle ring traffic by class %v", c.bytes)
	}
	before := c.bytes
	for range 100 {
		n := c.members()[c.rng.IntN(16)]
		if err := n.Route(c.now, c.rng.Uint64(), wire.ClassMatching, make([]byte, 50)); err != nil {
			t.Fatal(err)
		}
		c.flush(n.ID())
	}
	c.run(c.now + 5*time.Second)
	if c.bytes[wire.ClassMatching]-before[wire.ClassMatching] < 100*50 || c.bytes[wire.ClassDiscovery] != 0 ||
		c.bytes[wire.ClassUpdate] != 0 || c.bytes[wire.ClassControl] != 0 {
		t.Fatalf("traffic by class %v after 100 matching routes (before %v)", c.bytes, before)
	}
}

// TestBootstrap builds rings from a full member list (no joins): the ring
// is exact at once and routes correctly; bad lists are rejected with no
// change.
func TestBootstrap(t *testing.T) {
	for _, n := range []int{1, 2, 7, 200} {
		c := newCluster(t, uint64(n), nil)
		var members []ring.Peer
		for range n {
			members = append(members, ring.Peer{ID: c.add(), Key: c.rng.Uint64()})
		}
		for _, m := range members {
			if err := c.nodes[m.ID].Bootstrap(c.now, members); err != nil {
				t.Fatal(err)
			}
			c.flush(m.ID)
		}
		if err := c.checkRing(4); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		c.run(c.now + 3*time.Second) // long links looked up
		if _, err := c.routeCheck(300, func(int) uint64 { return c.rng.Uint64() }, time.Second); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	node, _ := ring.New(ring.DefaultConfig(1, r))
	for name, list := range map[string][]ring.Peer{
		"missing self":  {{ID: 2, Key: 5}, {ID: 3, Key: 6}},
		"duplicate id":  {{ID: 1, Key: 5}, {ID: 3, Key: 6}, {ID: 3, Key: 7}},
		"duplicate key": {{ID: 1, Key: 5}, {ID: 2, Key: 6}, {ID: 3, Key: 6}},
		"empty":         nil,
	} {
		if err := node.Bootstrap(0, list); !errors.Is(err, ring.ErrMembers) || node.Member() {
			t.Errorf("%s: %v, member %v", name, err, node.Member())
		}
	}
}

// TestSharedOutbox checks that a node given an outbox commits its frames
// there (for a node core to pack them with its own) and Drain returns none.
func TestSharedOutbox(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var o wire.Outbox
	cfg := ring.DefaultConfig(1, r)
	cfg.Outbox = &o
	n, err := ring.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Bootstrap(0, []ring.Peer{{ID: 1, Key: 10}, {ID: 2, Key: 20}}); err != nil {
		t.Fatal(err)
	}
	if err := n.Route(0, 15, wire.ClassDiscovery, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if got := n.Drain(nil); len(got) != 0 {
		t.Fatalf("Drain returned %d packets", len(got))
	}
	ps := o.Packets(1, nil)
	if len(ps) == 0 || ps[0].To != 2 {
		t.Fatalf("outbox packets %+v", ps)
	}
}

// TestStepPacket checks whole-packet delivery: a packet with any bad or
// non-ring frame, or for another node, is dropped whole and counted once.
func TestStepPacket(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	n, _ := ring.New(ring.DefaultConfig(1, r))
	if err := n.Bootstrap(0, []ring.Peer{{ID: 1, Key: 10}, {ID: 2, Key: 20}}); err != nil {
		t.Fatal(err)
	}
	n.Events(nil)
	stab := wire.AppendRingStabilize(wire.AppendHeader(nil), &wire.RingStabilize{Key: 15})
	good := wire.AppendRingProbe(append([]byte(nil), stab...), wire.TypeRingPing, &wire.RingProbe{Seq: 1, Key: 20})
	before := snap(n)
	for name, p := range map[string]wire.Packet{
		"other node":     {From: 2, To: 3, Payload: good},
		"bad version":    {From: 2, To: 1, Payload: append([]byte{9}, good[1:]...)},
		"truncated":      {From: 2, To: 1, Payload: good[:len(good)-1]},
		"non-ring frame": {From: 2, To: 1, Payload: wire.AppendAcks(append([]byte(nil), stab...), &wire.Acks{})},
	} {
		st := n.Stats().Malformed
		if err := n.StepPacket(0, p); err == nil || n.Stats().Malformed != st+1 {
			t.Errorf("%s: error %v, malformed %d → %d", name, err, st, n.Stats().Malformed)
		}
	}
	if !reflect.DeepEqual(snap(n), before) || len(n.Drain(nil)) != 0 {
		t.Fatal("a dropped packet changed the node or made it send")
	}
	ring.PacketCore{Node: n}.Step(0, wire.Packet{From: 2, To: 1, Payload: good})
	if p, _ := n.Pred(); p.Key != 15 || len(n.Drain(nil)) == 0 {
		t.Fatalf("good packet: predecessor %v", p)
	}
}
