package replica

import (
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestClaimRule: the answers of a fence's former backup (node 1 here) to
// a claim from the migration's target (node 3) for an object whose
// primary (node 2) died, and what the target does with each. Of the two
// copies, at most one may take the object over.
func TestClaimRule(t *testing.T) {
	id := world.MakeObjectID(2, 1)
	const epoch = 0x10002
	copyAt := func(v uint64, fence wire.NodeID) *bcopy {
		return &bcopy{primary: 2, epoch: epoch, version: v, kind: 1, st: schema.NewState(id), fence: fence}
	}
	ask := wire.Claim{ID: id, Epoch: epoch, Version: 10}
	answer := func(s *Store) wire.Claim {
		t.Helper()
		if len(s.au.claimq) != 1 || s.au.claimq[0].to != 3 {
			t.Fatalf("answers %+v, want one to node 3", s.au.claimq)
		}
		return s.au.claimq[0].c
	}
	now := 5 * time.Second

	t.Run("older copy: granted, and given up", func(t *testing.T) {
		s := newStore(t, 1, nil)
		s.au.bk[id] = copyAt(9, 0)
		s.claimIn(now, 3, ask)
		if a := answer(s); a.Answer != wire.ClaimGranted || a.Epoch != epoch || a.Version != 10 {
			t.Fatalf("answer %+v, want granted", a)
		}
		if s.au.bk[id] != nil {
			t.Fatal("the former backup kept a copy that could take the object over")
		}
		// Its primary's states still on their way from before the fence
		// make no copy again; a newer one (the primary backing the object
		// up here again) does.
		full := func(v uint64) *wire.BackupState {
			return &wire.BackupState{ID: id, Kind: 1, Epoch: epoch, Version: v, Data: world.AppendDelta(nil, nil, schema.NewState(id))}
		}
		if err := s.backupIn(now+time.Millisecond, 2, full(10), true); err != nil || s.au.bk[id] != nil {
			t.Fatalf("a stale backup state from the given-up primary made a copy again (%v)", err)
		}
		if err := s.backupIn(now+time.Millisecond, 2, full(11), true); err != nil || s.au.bk[id] == nil {
			t.Fatalf("a newer backup state from the primary made no copy (%v)", err)
		}
	})
	t.Run("equal copy: granted", func(t *testing.T) {
		s := newStore(t, 1, nil)
		s.au.bk[id] = copyAt(10, 0)
		s.claimIn(now, 3, ask)
		if a := answer(s); a.Answer != wire.ClaimGranted || s.au.bk[id] != nil {
			t.Fatalf("answer %+v, copy %v; want granted and no copy", a, s.au.bk[id])
		}
	})
	t.Run("no copy: granted", func(t *testing.T) {
		s := newStore(t, 1, nil)
		s.claimIn(now, 3, ask)
		if a := answer(s); a.Answer != wire.ClaimGranted {
			t.Fatalf("answer %+v, want granted", a)
		}
	})
	t.Run("newer copy: refused, and it must take over", func(t *testing.T) {
		s := newStore(t, 1, nil)
		s.au.bk[id] = copyAt(12, 0)
		s.claimIn(now, 3, ask)
		b := s.au.bk[id]
		if a := answer(s); a.Answer != wire.ClaimRefused || b == nil || !b.refused {
			t.Fatalf("answer %+v, copy %+v; want refused, the copy kept and marked", a, b)
		}
	})
	t.Run("taken over already: refused", func(t *testing.T) {
		s := newStore(t, 1, nil)
		s.au.bk[id] = copyAt(9, 0)
		s.promote(now, id, s.au.bk[id], 2)
		s.au.claimq = s.au.claimq[:0]
		s.claimIn(now, 3, ask)
		if a := answer(s); a.Answer != wire.ClaimRefused {
			t.Fatalf("answer %+v, want refused", a)
		}
	})

	// The target's side.
	target := func() (*Store, *bcopy) {
		s := newStore(t, 3, func(c *Config) { c.Failover = true })
		b := copyAt(10, 1)
		s.au.bk[id] = b
		s.startClaim(now, id, b, 2)
		if len(s.au.claimq) != 1 || s.au.claimq[0].to != 1 || s.au.claimq[0].c != ask {
			t.Fatalf("claim sent %+v, want %+v to node 1", s.au.claimq, ask)
		}
		s.au.claimq = s.au.claimq[:0]
		return s, b
	}
	t.Run("target granted: takes over", func(t *testing.T) {
		s, _ := target()
		s.claimIn(now+50*time.Millisecond, 4, wire.Claim{ID: id, Epoch: epoch, Version: 10, Answer: wire.ClaimGranted})
		if e := s.objs.Get(id); e != nil && e.primary {
			t.Fatal("a grant from a node other than the fence's was taken")
		}
		s.claimIn(now+50*time.Millisecond, 1, wire.Claim{ID: id, Epoch: epoch, Version: 10, Answer: wire.ClaimGranted})
		if e := s.objs.Get(id); e == nil || !e.primary || e.epoch <= epoch {
			t.Fatal("granted, the target did not take the object over")
		}
	})
	t.Run("target refused: drops its copy", func(t *testing.T) {
		s, _ := target()
		s.claimIn(now+50*time.Millisecond, 1, wire.Claim{ID: id, Epoch: epoch, Version: 10, Answer: wire.ClaimRefused})
		if e := s.objs.Get(id); (e != nil && e.primary) || s.au.bk[id] != nil {
			t.Fatal("refused, the target kept its copy or took the object over")
		}
	})
	t.Run("target resends, and takes over when the former backup dies", func(t *testing.T) {
		s, b := target()
		s.askFence(now+s.cfg.WriteRetry/2, id, b)
		if len(s.au.claimq) != 0 {
			t.Fatal("claim resent before WriteRetry")
		}
		s.askFence(now+s.cfg.WriteRetry, id, b)
		if len(s.au.claimq) != 1 {
			t.Fatal("claim not resent after WriteRetry")
		}
		s.fenceDead(now+time.Second, 1)
		if e := s.objs.Get(id); e == nil || !e.primary {
			t.Fatal("its former backup dead, the target did not take the object over")
		}
	})
	t.Run("granted before the primary dies: takes over at once", func(t *testing.T) {
		s := newStore(t, 3, func(c *Config) { c.Failover = true })
		err := s.backupIn(now, 2, &wire.BackupState{ID: id, Kind: 1, Epoch: epoch, Version: 10, Fence: 1,
			Data: world.AppendDelta(nil, nil, schema.NewState(id))}, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.au.claimq) != 1 || s.au.claimq[0].to != 1 || s.au.claimq[0].c != ask {
			t.Fatalf("a fenced copy asked %+v, want %+v to node 1", s.au.claimq, ask)
		}
		s.claimIn(now+50*time.Millisecond, 1, wire.Claim{ID: id, Epoch: epoch, Version: 10, Answer: wire.ClaimGranted})
		if e := s.objs.Get(id); e != nil && e.primary {
			t.Fatal("granted while its primary lives, the target took the object over")
		}
		s.au.claimq = s.au.claimq[:0]
		s.au.health.get(2).heard = now
		s.failover(now+time.Second, 2)
		if e := s.objs.Get(id); e == nil || !e.primary || len(s.au.claimq) != 0 {
			t.Fatalf("granted and fresh, the target did not take over at once (claims %+v)", s.au.claimq)
		}
	})
	t.Run("granted but stale: asks again", func(t *testing.T) {
		s := newStore(t, 3, func(c *Config) { c.Failover = true })
		b := copyAt(10, 1)
		b.granted, b.heard = true, now
		s.au.bk[id] = b
		s.au.health.get(2).heard = now + time.Second // refreshes stopped: a fence given up since
		s.failover(now+2*time.Second, 2)
		if e := s.objs.Get(id); (e != nil && e.primary) || b.claimFor == 0 || len(s.au.claimq) != 1 {
			t.Fatalf("a stale granted copy took over without asking (claims %+v)", s.au.claimq)
		}
	})
}
