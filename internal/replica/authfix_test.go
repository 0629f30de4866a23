package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestUnknownRegistrationIsNoDeletion: a registration for an object this
// node does not know (its migration here may be on its way, or this node
// restarted) drops the holder, who asks again; only an ID this node
// deleted is answered with a deletion, which the holder tombstones.
func TestUnknownRegistrationIsNoDeletion(t *testing.T) {
	s := newStore(t, 1, nil)
	unknown, gone := world.MakeObjectID(2, 1), world.MakeObjectID(1, 1)
	if err := s.AddPrimary(0, &obj{schema.NewState(gone)}, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(time.Millisecond, gone); err != nil {
		t.Fatal(err)
	}
	s.idq = s.idq[:0]
	s.ids1(2*time.Millisecond, 3, wire.TypeRegister, unknown)
	s.ids1(2*time.Millisecond, 3, wire.TypeRegister, gone)
	want := []idMsg{{to: 3, typ: wire.TypeDrop, id: unknown}, {to: 3, typ: wire.TypeDelete, id: gone}}
	if len(s.idq) != 2 || s.idq[0] != want[0] || s.idq[1] != want[1] {
		t.Fatalf("answers %+v, want %+v", s.idq, want)
	}
}

// TestAliveIsNotHearsay: a witness's "alive" about a suspect clears this
// node's suspicion, but this node has not heard from the suspect itself:
// another node's probe of the suspect gets no "alive" from it on that
// word alone (else one stale "alive" spreads from witness to witness and
// no majority ever finds a crashed node dead).
func TestAliveIsNotHearsay(t *testing.T) {
	peers := []wire.NodeID{1, 2, 3, 4, 5}
	s := newStore(t, 1, func(c *Config) {
		c.Failover = true
		c.Peers = func() []wire.NodeID { return peers }
	})
	h := &s.au.health
	h.watch(3, 0)
	p := h.get(3)
	p.heard = 100 * time.Millisecond
	now := 700 * time.Millisecond
	p.probing, p.probeAt = true, now
	s.probeIn(now, 2, wire.TypeProbeReply, wire.Liveness{Node: 3, Alive: true})
	if p.probing || p.heard != 100*time.Millisecond {
		t.Fatalf("after a witness's alive: probing %v, heard %v; want false and the last packet's time", p.probing, p.heard)
	}
	h.probeq = h.probeq[:0]
	s.probeIn(now+50*time.Millisecond, 4, wire.TypeProbe, wire.Liveness{Node: 3})
	for _, m := range h.probeq {
		if m.to == 4 && m.reply && m.l.Alive {
			t.Fatalf("node 1 told node 4 that node 3 is alive, on node 2's word: %+v", h.probeq)
		}
	}
	// Its own silence count starts again: no new probe before SuspectAfter.
	s.flushHealth(now + s.cfg.SuspectAfter - time.Millisecond)
	if p.probing {
		t.Fatal("probing again before SuspectAfter passed since the alive")
	}
}

// TestRestartAnnounced: a node started under an incarnation heartbeats
// every peer for its first announceFor, so that a peer that knew an
// earlier incarnation declares it dead before it deals with the new
// process; the announcement is not answered (every pair would go on
// exchanging heartbeats), a heartbeat of a node up for a second or more
// is.
func TestRestartAnnounced(t *testing.T) {
	peers := []wire.NodeID{1, 2, 3, 4}
	s := newStore(t, 2, func(c *Config) {
		c.Failover, c.Inc = true, 3
		c.Peers = func() []wire.NodeID { return peers }
	})
	h := &s.au.health
	start := 5 * time.Second // restarted then
	s.flushHealth(start)
	if want := []wire.NodeID{1, 3, 4}; !slices.Equal(h.hbq, want) {
		t.Fatalf("heartbeats at start to %v, want every peer %v", h.hbq, want)
	}
	h.hbq = h.hbq[:0]
	s.flushHealth(start + announceFor)
	if len(h.hbq) != 0 {
		t.Fatalf("heartbeats to unwatched peers after the announcement: %v", h.hbq)
	}
	// A peer that knew incarnation 1 of node 5 hears incarnation 2.
	o := newStore(t, 1, func(c *Config) { c.Failover = true })
	o.heartbeatIn(time.Second, 5, wire.Heartbeat{Inc: 1, Uptime: time.Hour})
	o.heartbeatIn(2*time.Second, 5, wire.Heartbeat{Inc: 2})
	if o.stats.Deaths != 1 || o.au.health.isDead(5) {
		t.Fatalf("a higher incarnation: %d deaths declared, node 5 dead now %v; want the earlier one declared dead, the new one alive",
			o.stats.Deaths, o.au.health.isDead(5))
	}
	if o.au.health.get(5).answer {
		t.Fatal("a just-started node's announcement is answered")
	}
	o.heartbeatIn(3*time.Second, 5, wire.Heartbeat{Inc: 2, Uptime: time.Second})
	if !o.au.health.get(5).answer {
		t.Fatal("a heartbeat of a node up for a second is not answered")
	}
}

// TestMigrateAgainWithoutFailover: without failover, a primary that came
// by migration has no backup, so migrating it on goes at once (no fence
// waiting for a release that no backup state will ever make due).
func TestMigrateAgainWithoutFailover(t *testing.T) {
	s := newStore(t, 2, nil)
	id := world.MakeObjectID(1, 1)
	st := schema.NewState(id)
	m := &wire.Migration{ID: id, Kind: 1, Epoch: nextEpoch(0, 2, false), Version: 5, Data: world.AppendDelta(nil, nil, st)}
	if err := s.migrateIn(time.Second, 1, m, true); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.BackupOf(id); ok {
		t.Fatal("without failover, the old primary is this primary's backup")
	}
	s.au.pendMig = s.au.pendMig[:0]
	if _, err := s.Migrate(2*time.Second, id, 3); err != nil {
		t.Fatal(err)
	}
	if len(s.au.fences) != 0 || len(s.au.pendMig) != 1 || s.au.pendMig[0].to != 3 {
		t.Fatalf("fences %v, migrations %+v: want the migration to node 3 sent at once", s.au.fences, s.au.pendMig)
	}
}

// TestNeverSuspectsItself: a rendezvous's locator lists the rendezvous
// itself among the nodes it depends on (SetWatch); the failure detector
// must not watch, probe or declare its own node, whatever the silence.
func TestNeverSuspectsItself(t *testing.T) {
	for _, peers := range [][]wire.NodeID{nil, {2}, {2, 3, 4}} {
		s := newStore(t, 1, func(c *Config) {
			c.Failover = true
			c.Peers = func() []wire.NodeID { return peers }
		})
		var deaths []wire.NodeID
		s.cfg.OnEvent = func(ev Event) {
			if ev.Kind == EvDead {
				deaths = append(deaths, ev.Node)
			}
		}
		s.SetWatch([]wire.NodeID{1})
		h := &s.au.health
		for now := time.Duration(0); now < 30*time.Second; now += 50 * time.Millisecond {
			s.flushHealth(now)
			for _, m := range h.probeq {
				if m.l.Node == 1 || m.to == 1 {
					t.Fatalf("peers %v: at %v node 1 probes itself: %+v", peers, now, m)
				}
			}
			h.probeq = h.probeq[:0]
			if slices.Contains(h.hbq, 1) {
				t.Fatalf("peers %v: at %v node 1 heartbeats itself", peers, now)
			}
			h.hbq = h.hbq[:0]
		}
		if len(deaths) != 0 || len(s.Dead(nil)) != 0 {
			t.Fatalf("peers %v: node 1 declared %v dead (dead list %v)", peers, deaths, s.Dead(nil))
		}
	}
}
