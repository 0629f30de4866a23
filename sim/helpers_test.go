package sim

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// rx is one packet a test core received.
type rx struct {
	at   time.Duration
	from wire.NodeID
	cls  wire.Class
	size int
}

// testCore is a small synthetic core: it sends what the test queues, can
// echo what it receives, and records its ticks and receipts.
type testCore struct {
	id    wire.NodeID
	out   []wire.Packet
	got   []rx
	ticks []time.Duration
	echo  bool                                 // reply to every packet with a maintenance packet of the same size
	tick  func(c *testCore, now time.Duration) // optional per-frame behaviour
}

func (c *testCore) Step(now time.Duration, p wire.Packet) {
	c.got = append(c.got, rx{at: now, from: p.From, cls: p.Class, size: len(p.Payload)})
	if c.echo && p.Class != wire.ClassMaintenance {
		c.send(p.From, wire.ClassMaintenance, len(p.Payload))
	}
}

func (c *testCore) Tick(now time.Duration) {
	c.ticks = append(c.ticks, now)
	if c.tick != nil {
		c.tick(c, now)
	}
}

func (c *testCore) Drain(dst []wire.Packet) []wire.Packet {
	dst = append(dst, c.out...)
	clear(c.out)
	c.out = c.out[:0]
	return dst
}

func (c *testCore) send(to wire.NodeID, cls wire.Class, size int) {
	c.out = append(c.out, wire.Packet{From: c.id, To: to, Class: cls, Payload: make([]byte, size)})
}

// square builds sites from names and a full RTT matrix in ms.
func square(t *testing.T, names []string, rtt [][]float64) *geo.Sites {
	t.Helper()
	s, err := geo.NewSites(names, rtt)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// threeSites: a–b 80 ms, b–c 40 ms, a–c 100 ms RTT.
func threeSites(t *testing.T) *geo.Sites {
	return square(t, []string{"a", "b", "c"}, [][]float64{
		{0, 80, 100},
		{80, 0, 40},
		{100, 40, 0},
	})
}

func newSim(t *testing.T, cfg Config, sites *geo.Sites) *Sim {
	t.Helper()
	s, err := New(cfg, sites)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func addCore(t *testing.T, s *Sim, id wire.NodeID, site string) *testCore {
	t.Helper()
	c := &testCore{id: id}
	if err := s.AddNode(id, site, c); err != nil {
		t.Fatal(err)
	}
	return c
}

// sendAt schedules core c to emit one packet at time at and flushes it.
func sendAt(t *testing.T, s *Sim, c *testCore, at time.Duration, to wire.NodeID, cls wire.Class, size int) {
	t.Helper()
	if err := s.Schedule(at, func(time.Duration) {
		c.send(to, cls, size)
		if err := s.Flush(c.id); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// checkConservation asserts sent + duplicated = delivered + dropped + in
// flight, in messages and bytes, globally and against the per-node sums.
func checkConservation(t *testing.T, s *Sim, seed uint64) {
	t.Helper()
	tot := s.Totals()
	lhs := tot.Sent.Plus(tot.Duplicated)
	rhs := tot.Delivered.Plus(tot.DroppedTotal()).Plus(tot.InFlight)
	if lhs != rhs {
		t.Fatalf("seed %d: sent %+v + duplicated %+v = %+v, but delivered %+v + dropped %+v + in flight %+v = %+v",
			seed, tot.Sent, tot.Duplicated, lhs, tot.Delivered, tot.DroppedTotal(), tot.InFlight, rhs)
	}
	var in, out Counts
	for _, id := range s.Nodes() {
		nt, err := s.Traffic(id)
		if err != nil {
			t.Fatal(err)
		}
		in, out = in.Plus(nt.TotalIn()), out.Plus(nt.TotalOut())
	}
	if in != tot.Delivered || out != tot.Sent {
		t.Fatalf("seed %d: per-node in %+v out %+v, network delivered %+v sent %+v", seed, in, out, tot.Delivered, tot.Sent)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestBaseDelay checks BaseDelay against the site table and the same-site
// delay, and its refusal of an unknown node.
func TestBaseDelay(t *testing.T) {
	cfg := DefaultConfig()
	s := newSim(t, cfg, threeSites(t))
	addCore(t, s, 1, "a")
	addCore(t, s, 2, "c")
	addCore(t, s, 3, "a")
	for _, c := range []struct {
		a, b wire.NodeID
		want time.Duration
	}{{1, 2, 50 * time.Millisecond}, {2, 1, 50 * time.Millisecond}, {1, 3, cfg.SameSite}, {2, 2, cfg.SameSite}} {
		if got, err := s.BaseDelay(c.a, c.b); err != nil || got != c.want {
			t.Errorf("BaseDelay(%d, %d) = %v, %v; want %v", c.a, c.b, got, err, c.want)
		}
	}
	if _, err := s.BaseDelay(1, 9); !errors.Is(err, ErrUnknownNode) {
		t.Errorf("unknown node: %v", err)
	}
}
